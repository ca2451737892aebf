"""Hostile result documents (issue 21): every field of a saved result is checked by the one result
model (poolcheck/results.py, through pydantic), and whatever a document holds, ``poolcheck
report`` and ``poolcheck report merge`` either render it inertly (exit 0) or say in one line which
file and which field is wrong (exit 2) -- never a traceback.

The documents are mutations of real ones: the report fixture's run (real cases through the
runner) and a real ``poolcheck fuzz`` of a planted peer, with the bundled registry. Each mutation
replaces, removes, adds or wraps one node, or damages the JSON text (deep nesting, a 5,000-digit
number, NaN tokens, invalid UTF-8, truncation); the mutants go through the real command.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import random
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from report_sample import sample_result
from support import PLANTED, SCHEMA_PATH
from typer.testing import CliRunner

from poolcheck.cli import app
from poolcheck.report.jsonfmt import ReportError, from_json, read_document, result_document, to_json
from poolcheck.results import RunResult

runner = CliRunner()

#: Markup, ANSI colour and title sequences, BEL, NUL, a C1 CSI, DEL, HTML, a JS line separator,
#: an XML-invalid noncharacter, Markdown.
HOSTILE = "x[/red][bold]\x1b[31m\x1b]0;t\x07\x00\x9b2J\x7f<script>alert(1)</script>&\u2028\ufffe|*_`"
REPLACEMENTS: list[Any] = [None, 0, -1, 1.5, True, "", "bogus", HOSTILE, [], {}, [None], [HOSTILE], {"k": HOSTILE},
                           2**64 + 1, -(2**70), "nan", [[[[[]]]]], 1e308, {"fail": HOSTILE}]
RAW_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
FORMATS = ("console", "md", "junit", "html", "json")


@pytest.fixture(scope="module")
def originals(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("originals")
    docs = {"run": result_document(sample_result(tmp))}
    out = subprocess.run(
        [sys.executable, "-m", "poolcheck", "fuzz", "--peers", str(PLANTED / "pads_swapped.py"), "--ops", "maxpool",
         "--oracles", "peers", "--seed", "1", "--exit-first", "--time-budget", "20s", "--no-progress",
         "--report", str(tmp / "fz"), "--save-cases", str(tmp / "fz" / "cases")],
        capture_output=True, text=True, timeout=180, cwd=tmp,
        env={**os.environ, "POOLCHECK_DATA_DIR": str(tmp / "data")})
    assert out.returncode == 1, out.stdout[-2000:] + out.stderr[-2000:]
    docs["fuzz"] = json.loads((tmp / "fz" / "result.json").read_text())
    assert any("skipped" in c["tags"] for c in docs["fuzz"]["cases"])  # registry rows are part of it
    return docs


# --------------------------------------------------------------------------- the generator


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every node's path; of a long list only the first two items and the last."""
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(node, list):
        picks = sorted({0, 1, len(node) - 1} & set(range(len(node))))
        for i in picks:
            yield from _paths(node[i], (*prefix, i))


def _set(doc: Any, path: tuple[Any, ...], op: str, rng: random.Random) -> Any:
    if not path:
        return rng.choice(REPLACEMENTS)
    parent = doc
    for p in path[:-1]:
        parent = parent[p]
    key = path[-1]
    if op == "delete":
        del parent[key]
    elif op == "wrap":
        parent[key] = [parent[key]]
    elif op == "hostile-text" and isinstance(parent[key], str):
        parent[key] = parent[key] + HOSTILE
    elif op == "add-key" and isinstance(parent[key], dict):
        parent[key][HOSTILE] = rng.choice(REPLACEMENTS)
    elif op == "duplicate" and isinstance(parent[key], list) and parent[key]:
        parent[key].append(copy.deepcopy(parent[key][0]))
    else:
        parent[key] = copy.deepcopy(rng.choice(REPLACEMENTS))
    return doc


def _raw(text: str, rng: random.Random) -> tuple[str, bytes]:
    """A damage to the JSON text itself."""
    kind = rng.choice(["deep", "digits", "nan", "truncate", "utf8", "bom", "empty", "scalar", "dup-key"])
    numbers = [m.start() for m in re.finditer(r"(?<=[\[ :])-?\d+(?=[,\] }])", text)] or [len(text) // 2]
    at = rng.choice(numbers)
    num = re.match(r"-?\d+", text[at:])
    end = at + (num.end() if num else 0)
    if kind == "deep":
        depth = rng.choice([250, 100_000])
        return kind, (text[:at] + "[" * depth + "]" * depth + text[end:]).encode()
    if kind == "digits":
        return kind, (text[:at] + "9" * rng.choice([400, 4300, 5000]) + text[end:]).encode()
    if kind == "nan":
        return kind, (text[:at] + rng.choice(["NaN", "Infinity", "-Infinity"]) + text[end:]).encode()
    if kind == "truncate":
        return kind, text[: rng.randrange(len(text))].encode()
    if kind == "utf8":
        data = text.encode()
        cut = rng.randrange(len(data))
        return kind, data[:cut] + b"\xff\xfe\xc3" + data[cut:]
    if kind == "bom":
        return kind, b"\xef\xbb\xbf" + text.encode()
    if kind == "empty":
        return kind, b""
    if kind == "scalar":
        return kind, rng.choice([b"null", b"[]", b'"poolcheck.result/2"', b"1e999"])
    return kind, text.replace('"command"', '"command": 5, "command"', 1).encode()


OPS = ("replace", "replace", "delete", "wrap", "hostile-text", "add-key", "duplicate")


def mutants(doc: dict[str, Any], seed: int, n: int) -> Iterator[tuple[str, bytes]]:
    """``n`` mutated documents of ``doc`` (label, file contents); one in eight damages the text."""
    rng = random.Random(seed)
    paths = list(_paths(doc))
    text = json.dumps(doc)
    for _ in range(n):
        if rng.random() < 1 / 8:
            kind, data = _raw(text, rng)
            yield f"raw:{kind}", data
            continue
        path = rng.choice(paths)
        op = rng.choice(OPS)
        mutated = _set(copy.deepcopy(doc), path, op, rng)
        yield f"{op}:{'.'.join(map(str, path))}", json.dumps(mutated, allow_nan=True).encode()


# --------------------------------------------------------------------------- the oracle


@functools.cache
def _schema_validator() -> Any:
    jsonschema = pytest.importorskip("jsonschema")
    return jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text()))



def assert_inert(text: str, fmt: str) -> None:
    """Rendered output carries no raw control characters and parses as its format."""
    assert not RAW_CONTROLS.search(text.replace("\n", "").replace("\t", "")), fmt
    if fmt == "junit":
        ET.fromstring(text.encode("utf-8"))
    elif fmt == "json":  # what the model accepts, the published schema accepts too
        from_json(text)
        _schema_validator().validate(json.loads(text))
    elif fmt == "html":
        assert text.count("<script") == 2  # the embedded document and the page's script, nothing else
        embedded = text.split('id="poolcheck-result">', 1)[1].split("</script>", 1)[0]
        json.loads(embedded)
    elif fmt == "md":
        outside_code = re.sub(r"(``?).*?\1", "", text)
        assert "<script>" not in outside_code


def assert_one_line_or_rendered(args: list[str], name: str, fmt: str, label: str) -> int:
    r = runner.invoke(app, args)
    where = f"{label} ({' '.join(args[:2])})"
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        import traceback

        raise AssertionError(f"{where}: traceback\n" + "".join(traceback.format_exception(r.exception)))
    assert r.exit_code in (0, 2), f"{where}: exit {r.exit_code}: {r.stderr[-500:]}"
    if r.exit_code == 2:
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and name in lines[0], (where, r.stderr[-1000:])
        assert not RAW_CONTROLS.search(lines[0]), (where, lines[0])
    else:
        assert_inert(r.stdout, fmt)
    return r.exit_code


@pytest.mark.slow
@pytest.mark.parametrize(("base", "seed", "n"), [("run", 1, 120), ("fuzz", 2, 120)])
def test_mutated_documents_render_or_get_one_line(originals: dict[str, dict[str, Any]], base: str, seed: int, n: int,
                                                 tmp_path: Path) -> None:
    codes = {0: 0, 2: 0}
    for i, (label, data) in enumerate(mutants(originals[base], seed, n)):
        path = tmp_path / f"m{i}.json"
        path.write_bytes(data)
        fmt = FORMATS[i % len(FORMATS)]
        codes[assert_one_line_or_rendered(["report", str(path), "--format", fmt], path.name, fmt, label)] += 1
    # the mix is a real one: both outcomes occur often
    assert codes[0] > n // 10 and codes[2] > n // 10, codes


@pytest.mark.slow
@pytest.mark.parametrize(("base", "other", "seed"), [("run", "fuzz", 3), ("fuzz", "run", 4)])
def test_mutated_documents_merge_or_get_one_line(originals: dict[str, dict[str, Any]], base: str, other: str,
                                                seed: int, tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps(originals[other]))
    codes = {0: 0, 2: 0}
    for i, (label, data) in enumerate(mutants(originals[base], seed, 80)):
        path = tmp_path / f"m{i}.json"
        path.write_bytes(data)
        fmt = FORMATS[i % len(FORMATS)]
        codes[assert_one_line_or_rendered(["report", "merge", str(good), str(path), "--format", fmt], path.name, fmt,
                                          label)] += 1
    assert codes[0] > 8 and codes[2] > 8, codes


# --------------------------------------------------------------------------- named problems


def _doc(originals: dict[str, dict[str, Any]], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(originals["run"])
    parent = doc
    for p in path[:-1]:
        parent = parent[p]
    parent[path[-1]] = value
    return doc


@pytest.mark.parametrize(("path", "value", "field", "says"), [
    (("cases", 1, "verdict"), "bogus", "cases[1].verdict", "Input should be 'error', 'fail'"),
    (("cases", 0, "checks", 0, "runner"), 5, "cases[0].checks[0].runner", "valid string, got 5"),
    (("cases", 0, "case_id"), None, "cases[0].case_id", "valid string, got None"),
    (("cases", 0, "tags"), ["a", ["b"]], "cases[0].tags[1]", "valid string"),
    (("command",), ["poolcheck"], "command", "valid string"),
    (("cases", 0, "input"), [[[[2**70]]]], "cases[0].input", "an integer of 22 digits"),
    (("cases", 0, "checks", 0, "n_diffs"), -3, "cases[0].checks[0].n_diffs", "greater than or equal to 0"),
    (("extra", "fingerprints"), [{"host": "h"}], "extra.fingerprints", "valid dictionary"),
    (("fuzz",), {"new": ["not a signature"]}, "fuzz.new[0]", "not a divergence signature"),
    (("kind",), "audit", "kind", "Input should be 'run' or 'fuzz'"),
])
def test_a_malformed_field_is_named(originals: dict[str, dict[str, Any]], tmp_path: Path, path: tuple[Any, ...],
                                    value: Any, field: str, says: str) -> None:
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(_doc(originals, path, value)))
    r = runner.invoke(app, ["report", str(f)])
    assert r.exit_code == 2, r.output
    line = r.stderr.strip()
    assert "\n" not in line and line.startswith(f"error: {f}: malformed poolcheck.result/2 document: {field}: "), line
    assert says in line, line


def test_the_reader_refuses_what_is_not_a_small_regular_file(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)  # opening it for reading would block until a writer came
    (tmp_path / "zero.json").symlink_to("/dev/zero")  # read until memory runs out
    for path, says in [(fifo, "not a regular file"), (tmp_path / "zero.json", "not a regular file"),
                       (tmp_path, "a folder"), (tmp_path / "missing.json", "No such file")]:
        with pytest.raises(ReportError, match=re.escape(says)):
            read_document(path)
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 2048)
    with pytest.raises(ReportError, match="more than the 1024"):
        read_document(big, limit=1024)


@pytest.mark.slow
def test_real_command_says_one_line_for_damaged_text(originals: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    """Through ``python -m poolcheck`` itself (the parser's limits are the ones that used to
    recurse or convert without end)."""
    text = json.dumps(originals["run"])
    docs = {
        "deep.json": ("[" * 100_000 + "]" * 100_000).encode(),
        "digits.json": text.replace('"n_diffs": 1', '"n_diffs": ' + "9" * 5000, 1).encode(),
        "bytes.json": b"\xff" + text.encode(),
        "verdict.json": text.replace('"verdict": "fail"', '"verdict": "FAIL!"', 1).encode(),
    }
    assert '"n_diffs": 1' in text and '"verdict": "fail"' in text
    for name, data in docs.items():
        (tmp_path / name).write_bytes(data)
    os.mkfifo(tmp_path / "fifo.json")
    (tmp_path / "zero.json").symlink_to("/dev/zero")
    for name in [*docs, "fifo.json", "zero.json"]:
        for args in (["report", name, "--format", "junit"], ["report", "merge", name, name]):
            out = subprocess.run([sys.executable, "-m", "poolcheck", *args], capture_output=True, text=True, timeout=60,
                                 cwd=tmp_path)
            assert out.returncode == 2, (name, out.stderr)
            assert out.stdout == "" and out.stderr.count("\n") == 1 and out.stderr.startswith(f"error: {name}: "), \
                (name, out.stderr)


def test_documents_from_every_producer_read_back_unchanged(originals: dict[str, dict[str, Any]]) -> None:
    for doc in originals.values():
        again = json.loads(to_json(from_json(json.dumps(doc))))
        assert again == doc
        assert isinstance(RunResult.from_dict(doc), RunResult)


def _poisoned(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with HOSTILE appended to every free text: command, versions, ids, titles, sources,
    messages, tags, runners, diagnoses, errata, the fuzz summary's peers, warnings and paths, the
    detail of every signature, the machines."""
    doc = copy.deepcopy(doc)
    h = HOSTILE

    def sig(text: str) -> str:
        return text + h if text.count("|") >= 3 else text

    def tag(t: str) -> str:
        return "signature:" + sig(t[len("signature:"):]) if t.startswith("signature:") else t

    doc["command"] += h
    doc["versions"] = {k + h: v + h for k, v in doc["versions"].items()}
    for fp in [doc["extra"].get("fingerprint"), *doc["extra"].get("fingerprints", {}).values()]:
        if fp:
            fp["host"] += h
            fp["cpu"] += h
    for c in doc["cases"]:
        for key in ("case_id", "title", "source", "message", "replay", "convention", "op", "dtype"):
            c[key] += h
        c["tags"] = [tag(t) for t in c["tags"]] + [h]
        if c.get("erratum"):
            c["erratum"]["says"] += h
            c["erratum"]["why"] += h
        for k in c["checks"]:
            k["runner"] += h
            k["message"] += h
            k["diagnosis"] = (k.get("diagnosis") or "") + h
            k["version"] = (k.get("version") or "") + h
    fz = doc.get("fuzz")
    if fz:
        for key in ("compared", "compared_per_s", "peer_status", "unavailable_peers"):
            fz[key] = {p + h: v for p, v in fz[key].items()}
        fz["unavailable_peers"][h] = h
        fz["warnings"] = [*fz["warnings"], h]
        fz["replay"] += h
        for key in ("divergent_configurations", "known_seen", "detected_at_s", "shrunk_at_s", "saved"):
            fz[key] = {sig(s): v for s, v in fz[key].items()}
        fz["saved"] = {s: p + h for s, p in fz["saved"].items()}
        for key in ("new", "unshrunk", "failing"):
            fz[key] = [sig(s) for s in fz[key]]
    return doc


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("base", ["run", "fuzz"])
def test_hostile_text_in_every_field_is_shown_as_text(originals: dict[str, dict[str, Any]], base: str, fmt: str,
                                                     tmp_path: Path) -> None:
    path = tmp_path / "poisoned.json"
    path.write_text(json.dumps(_poisoned(originals[base])))
    r = runner.invoke(app, ["report", str(path), "--format", fmt], terminal_width=200)
    assert r.exit_code == 0, r.output
    assert_inert(r.stdout, fmt)
    if fmt == "console":  # rich markup in the text is shown, not applied
        assert "x[/red][bold]\\x1b[31m" in r.stdout
    if fmt == "json":
        assert json.loads(r.stdout)["cases"][0]["case_id"].endswith(HOSTILE)
