"""The spec sentences: each quoted word for word from the place it names, and cited by id only.

tests/data/seeds holds verbatim copies of the seed documents poolcheck quotes (the project's
shared source documents: the OpenVINO shape-rules page, the OpenVINO MaxPool-8 page, ONNX
AveragePool-19); the ONNX schemas and the OpenVINO docstrings are read from the installed
packages.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support import DATA, ROOT

from poolcheck.spec import sources
from poolcheck.spec.sources import DOCUMENTS, SENTENCES, cited, quote, sentence

SEEDS = DATA / "seeds"


def _fold(text: str) -> str:
    return " ".join(text.split())


def _location_text(location: str) -> str:
    kind, _, rest = location.partition(":") if not location.startswith("seeds/") else ("seeds", "", location)
    if kind == "seeds":
        return (SEEDS / Path(rest).name).read_text(encoding="utf-8")
    if kind == "onnx":
        defs = pytest.importorskip("onnx.defs")
        op_version, _, field = rest.partition(":")
        op, version = op_version.rsplit("-", 1)
        schema = defs.get_schema(op, int(version))
        assert schema.since_version == int(version), f"{location}: the installed onnx has no {op_version}"
        if not field:
            return str(schema.doc)
        if field in schema.attributes:
            return str(schema.attributes[field].description)
        for o in schema.outputs:
            if o.name == field:
                return str(o.description)
        for t in schema.type_constraints:
            if t.type_param_str == field:
                return str(t.description)
        raise AssertionError(f"{location}: no attribute, output or type {field!r} in {op_version}")
    if kind == "catalogue":  # a text no installed package holds, quoted by its catalogue row
        from poolcheck.spec.operators import OPERATORS
        return OPERATORS[rest].source
    if kind == "openvino":
        opset = pytest.importorskip("openvino.opset14")
        return str(getattr(opset, rest.split(".", 1)[1]).__doc__)
    raise AssertionError(f"unknown location kind in {location!r}")


@pytest.mark.parametrize("sid", sorted(SENTENCES))
def test_every_sentence_is_verbatim_in_each_place_it_names(sid: str) -> None:
    s = SENTENCES[sid]
    assert s.document in DOCUMENTS
    assert s.locations
    for location in s.locations:
        assert _fold(s.text) in _fold(_location_text(location)), f"{sid} not found verbatim in {location}"


def test_a_changed_sentence_is_caught() -> None:
    """The check above can fail: one word changed is not in the document."""
    text = _fold(_location_text("seeds/001_59f5ff4d74cea6aa.txt"))
    assert _fold(SENTENCES["OV-PAD-NEG-INF"].text) in text
    assert _fold(SENTENCES["OV-PAD-NEG-INF"].text.replace("negative", "positive")) not in text


def test_quote_and_lookup() -> None:
    assert quote("ONNX-DIVISOR").startswith("\u201cThe output of each pooling window is divided")
    assert "ONNX AveragePool, version 19" in quote("ONNX-DIVISOR")
    with pytest.raises(KeyError, match="NOPE"):
        sentence("OV-NOPE")


def test_cited_finds_whole_ids_only() -> None:
    assert cited("see [ONNX-SHAPE-VALID-CEIL] and ONNX-SHAPE-VALID, OV-NOPE") == [
        "ONNX-SHAPE-VALID-CEIL", "ONNX-SHAPE-VALID"]


#: Sentences long enough to be recognised when quoted instead of cited (a formula or a few words
#: are shared by many texts; these are prose).
_PROSE = [s for s in SENTENCES.values() if len(s.text) >= 40 and not s.locations[0].startswith("catalogue:")
          and not s.text.startswith(("H_out", "output_", "VALID",
                                                                                      "SAME", "pad_shape", "y:"))]


def _source_files() -> list[Path]:
    files = [p for p in (ROOT / "poolcheck").rglob("*") if p.suffix in (".py", ".c", ".h")]
    return [p for p in files if p.name != "sources.py"]


def test_no_sentence_is_quoted_outside_sources() -> None:
    """The spec is quoted once: code cites the id. A quote is found by its first eight words."""
    offenders = []
    for path in _source_files():
        text = _fold(re.sub(r"(#|//|/\*|\*/|\\\n|^\s*\*)", " ", path.read_text(encoding="utf-8"), flags=re.M))
        for s in _PROSE:
            head = " ".join(s.text.split()[:8])
            if head in text:
                offenders.append(f"{path.relative_to(ROOT)} quotes {s.id}: {head!r}")
    assert not offenders, "\n".join(offenders)


def test_cited_ids_exist() -> None:
    """Every id-shaped citation in the code names a sentence that exists."""
    pattern = re.compile(r"\[((?:OV|OV14|ONNX)(?:-[A-Z0-9]+)+)\]")
    bad = []
    for path in _source_files():
        for m in pattern.finditer(path.read_text(encoding="utf-8")):
            if m.group(1) not in SENTENCES:
                bad.append(f"{path.relative_to(ROOT)}: [{m.group(1)}]")
    assert not bad, bad
    assert sources.cited("[OV-PAD-NEG-INF]") == ["OV-PAD-NEG-INF"]
