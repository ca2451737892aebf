"""The single-pass YAML reader (poolcheck.cases.load.parse_yaml) builds the same data as PyYAML's
safe_load on every valid document it accepts, and refuses the hostile ones before building."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from poolcheck.cases.load import MAX_DEPTH, _YAMLRefused, parse_yaml
from poolcheck.corpus import CORPUS_DIR

SNIPPETS = [
    "a: 1\nb: 012\nc: 0x1f\nd: 1_000\ne: 1:30\nf: .inf\ng: -.inf\nh: .nan\ni: ~\nj: yes\nk: 'quoted 1'\n",
    "base: &b {kernel: [2], strides: [1]}\na:\n  <<: *b\n  strides: [2]\nc:\n  strides: [3]\n  <<: [*b]\n",
    "x: &v [1, 2, [3, 4]]\ny: *v\nz: !!str 5\nw: !!float 3\n",
    "when: 2001-12-14t21:59:43.10-05:00\nbin: !!binary aGVsbG8=\n",
    "- |\n  literal\n  text\n- >\n  folded\n  text\n- \"esc\\e[31m\\x9b\"\n",
    "",
    "# only a comment\n",
]


@pytest.mark.parametrize("text", SNIPPETS)
def test_same_data_as_safe_load(text: str) -> None:
    data, _ = parse_yaml(text)
    assert data == yaml.safe_load(text)


@pytest.mark.parametrize("path", sorted(CORPUS_DIR.rglob("*.yaml")), ids=lambda p: p.name)
def test_same_data_as_safe_load_on_the_corpus(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert parse_yaml(text)[0] == yaml.safe_load(text)


json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=30,
)


@settings(max_examples=200, deadline=None)
@given(json_like, st.booleans())
def test_round_trip_of_any_plain_document(value: object, flow: bool) -> None:
    text = yaml.safe_dump(value, default_flow_style=flow)
    assert parse_yaml(text)[0] == yaml.safe_load(text)


@pytest.mark.parametrize(("text", "message"), [
    ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "nested deeper"),
    ("a: &a [*a]\n", "contains it"),
    ("a: *nope\n", "undefined alias"),
    ("a: 1\na: 2\n", "duplicate key 'a'"),
    ("? [1, 2]\n: x\n", "mapping key must be a scalar"),
    ("a: !!set {x, y}\n", "not supported"),
    ("a: 1\n---\nb: 2\n", "single document"),
])
def test_refusals(text: str, message: str) -> None:
    with pytest.raises(_YAMLRefused, match=message):
        parse_yaml(text)


def test_alias_bomb_is_refused_while_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    import poolcheck.cases.load as load

    monkeypatch.setattr(load, "MAX_NODES", 10_000)
    levels = ["a0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"] + [
        f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 6)]
    with pytest.raises(_YAMLRefused, match="expands to more than") as info:
        parse_yaml("\n".join(levels) + "\n")
    assert info.value.line == 4  # a3 expands to 11,111 nodes: past the cap
