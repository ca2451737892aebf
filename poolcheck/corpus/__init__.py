"""The case corpus that ships with poolcheck, found from any working directory.

- ``seeds/``: every documented example of the specs, transcribed (with errata recorded);
- ``edge/``: edge cases worked out by hand;
- ``known/``: the known-divergence registry (one case per runtime divergence class).

The repository's top-level ``cases`` is a link to this folder, so ``poolcheck run cases/`` in a
checkout and ``poolcheck run`` (no path) anywhere run the same files.
"""

from __future__ import annotations

from pathlib import Path

#: The folder holding seeds/, edge/ and known/.
CORPUS_DIR: Path = Path(__file__).resolve().parent
SEEDS_DIR: Path = CORPUS_DIR / "seeds"
EDGE_DIR: Path = CORPUS_DIR / "edge"
KNOWN_DIR: Path = CORPUS_DIR / "known"
