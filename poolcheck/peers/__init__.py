"""Peers: real runtimes (ONNX Runtime, OpenVINO, PyTorch, onnx.reference) and users' own
implementations behind one small interface, called in-process or isolated in a worker.

    peers = resolve_peers(["onnxruntime", "path/to/my_peer.py"])
    result = call_peer(peers[0], spec, x, isolated=False)   # PeerResult(status, output, message)
    results = call_peer_many(peers[0], [(spec, x), ...])   # one result per item, batched
"""

from poolcheck.peers.base import (
    PEER_STATUSES,
    BatchItem,
    BatchPeer,
    Peer,
    PeerDeclined,
    PeerLoadError,
    PeerNotFoundError,
    PeerOutput,
    PeerResult,
    PeerSpecError,
    UnavailablePeer,
)
from poolcheck.peers.isolation import DEFAULT_TIMEOUT, call_peer, call_peer_many, close_workers
from poolcheck.peers.registry import BUILTIN_PEERS, ENTRY_POINT_GROUP, all_peers, resolve_peer, resolve_peers

__all__ = [
    "BUILTIN_PEERS",
    "DEFAULT_TIMEOUT",
    "ENTRY_POINT_GROUP",
    "PEER_STATUSES",
    "BatchItem",
    "BatchPeer",
    "Peer",
    "PeerDeclined",
    "PeerLoadError",
    "PeerNotFoundError",
    "PeerOutput",
    "PeerResult",
    "PeerSpecError",
    "UnavailablePeer",
    "all_peers",
    "call_peer",
    "call_peer_many",
    "close_workers",
    "resolve_peer",
    "resolve_peers",
]
