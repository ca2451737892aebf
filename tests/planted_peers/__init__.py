"""Planted-bug peers: poolcheck's own engine behind the plugin signatures, with one bug each.

Each module is a user plugin (``poolcheck fuzz --peers tests/planted_peers/<name>.py``) that
defines ``max_pool`` and ``avg_pool`` with the signatures of :func:`poolcheck.max_pool` /
:func:`poolcheck.avg_pool`, passes everything through to poolcheck's reference engine, and gets
exactly one thing wrong (stated in the module docstring and marked ``# the bug``). The fuzzer
must find each bug, shrink it and name it (``tests/slow/test_fuzz_planted.py``). One bug lies in an
ONNX-only attribute the plugin signatures cannot carry (``storage_order``): that one is a Peer
class (:mod:`planted_peers.storage_order_ignored`). Two more peers crash or hang on purpose.
"""
