"""Peers: real runtimes and user implementations behind one small interface (``base.Peer``)."""
