"""A third round of hostile inputs, through the real commands: each bad input is one line naming
what is wrong and exit 2 (never a traceback, never a verdict), and text from files and models
stays inert on the terminal."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import CASE_HEAD, GOOD_CASE, cli, invoke, malformed_field_line, one_error_line, run_case_text


def test_a_symlink_loop_is_one_error_line(tmp_path: Path) -> None:
    """A loop of symbolic links as a case file, a report folder or a model (Path.resolve raises
    RuntimeError there on Python 3.11/3.12: it was a traceback)."""
    (tmp_path / "a.yaml").symlink_to(tmp_path / "b.yaml")
    (tmp_path / "b.yaml").symlink_to(tmp_path / "a.yaml")
    (tmp_path / "ok.yaml").write_text(CASE_HEAD + GOOD_CASE)
    loop = str(tmp_path / "a.yaml")
    for args in (["run", "-q", loop], ["run", "-q", loop + "::some-id"],
                 ["run", "-q", str(tmp_path / "ok.yaml"), "--report-dir", loop],
                 ["audit", loop]):
        r = invoke(*args)
        assert r.returncode == 2, (args, r.stdout + r.stderr)
        line = one_error_line(r.stderr)
        assert "a.yaml" in line and "symbolic links" in line, (args, line)


def test_indices_of_an_operator_without_an_indices_output_are_refused(tmp_path: Path) -> None:
    """MaxPool-1 (OpenVINO's and ONNX's) has one output: documented indices for it are a
    malformed case, not something to pass (they were compared with the engine's and passed)."""
    cases = {
        "ov": ("MaxPool-1", "", "{kernel: [2], strides: [1]}", "expected: {values: [[[2, 3]]], indices: [[[1, 2]]]}"),
        "onnx": ("MaxPool-1", "    convention: onnx\n", "{kernel_shape: [2]}",
                 "expected: {values: [[[2, 3]]], indices: [[[1, 2]]]}"),
        "erratum": ("MaxPool-1", "", "{kernel: [2], strides: [1]}",
                    "expected: {values: [[[2, 4]]]}\n    erratum: {says: x, why: y, "
                    "correct: {values: [[[2, 3]]], indices: [[[1, 2]]]}}"),
        "avg-erratum": ("AvgPool-14", "", "{kernel: [2], strides: [1]}",
                        "expected: {values: [[[1.5, 9]]]}\n    erratum: {says: x, why: y, "
                        "correct: {values: [[[1.5, 2.5]]], indices: [[[1, 2]]]}}"),
    }
    for name, (op, convention, attrs, expected) in cases.items():
        code, _, err = run_case_text(tmp_path, f"  - id: {name}\n    op: {op}\n{convention}    attributes: {attrs}\n"
                                               f"    input: [[[1, 2, 3]]]\n    {expected}\n")
        assert code == 2, (name, err)
        line = one_error_line(err)
        assert f"case '{name}'" in line and "indices" in line and "no indices output" in line, line


def test_an_erratum_says_and_why_must_be_text(tmp_path: Path) -> None:
    """A list or mapping as an erratum's `says`/`why` loaded, ran, and went into result.json,
    which `poolcheck report` then refused as malformed: the loader refuses it, naming the field."""
    for field, value in (("says", "[list, {a: b}]"), ("why", "{nested: x}"), ("says", "3")):
        other = "why" if field == "says" else "says"
        code, _, err = run_case_text(tmp_path, "  - id: e\n    op: MaxPool-22\n    attributes: {kernel_shape: [2]}\n"
                                               "    input: [[[1, 2, 3]]]\n    expected: {values: [[[2, 4]]]}\n"
                                               f"    erratum: {{{field}: {value}, {other}: text, "
                                               "correct: {values: [[[2, 3]]]}}\n")
        assert code == 2, (field, value, err)
        line = one_error_line(err)
        assert f"field 'erratum.{field}'" in line and "expected a string" in line, line


def test_an_erratum_with_an_unknown_key_is_a_malformed_case(tmp_path: Path) -> None:
    """`erratum: {says, why, correct, whyy: ...}` loaded with the misspelt reasoning dropped
    without a word; the case keys and recipe keys were already strict."""
    code, _, err = run_case_text(tmp_path, "  - id: e\n    op: MaxPool-22\n    attributes: {kernel_shape: [2]}\n"
                                           "    input: [[[1, 2, 3]]]\n    expected: {values: [[[2, 4]]]}\n"
                                           "    erratum: {says: x, why: y, whyy: the real reasoning, "
                                           "correct: {values: [[[2, 3]]]}}\n")
    assert code == 2, err
    line = one_error_line(err)
    assert "field 'erratum.whyy'" in line and "unknown key (allowed: correct, says, why)" in line, line


def test_a_negative_documented_shape_is_a_malformed_case(tmp_path: Path) -> None:
    """`shape: [1, 1, -2]` was judged: a 'fail' verdict of severity violation, the engine blamed
    for a shape no tensor has."""
    for where, block in (("expected.shape", "expected: {shape: [1, 1, -2]}"),
                         ("erratum.correct", "expected: {shape: [1, 1, 3]}\n    erratum: {says: x, why: y, "
                                             "correct: {shape: [1, -1, 2]}}")):
        line = malformed_field_line(tmp_path, "  - id: s\n    op: MaxPool-22\n    attributes: {kernel_shape: [2]}\n"
                                              f"    input: [[[1, 2, 3]]]\n    {block}\n", where)
        assert ">= 0" in line, line


def test_a_case_that_is_not_a_mapping_names_its_own_line(tmp_path: Path) -> None:
    """A scalar where a case belongs was reported at line 0 (lines count from 1)."""
    code, _, err = run_case_text(tmp_path, "  - 5\n" + GOOD_CASE + "  - just text\n")
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 2 and "Traceback" not in err, err
    assert lines[0].startswith(f"error: {tmp_path / 'c.yaml'}:3: each case must be a mapping, got int"), lines
    assert lines[1].startswith(f"error: {tmp_path / 'c.yaml'}:9: each case must be a mapping, got str"), lines
    (tmp_path / "c.yaml").write_text("cases: [1]\n")
    r = invoke("run", "-q", str(tmp_path / "c.yaml"))
    assert "c.yaml:1: each case must be a mapping" in one_error_line(r.stderr)


def test_an_lp_norm_order_past_the_limit_says_the_limit(tmp_path: Path) -> None:
    """p = 10**11 was refused with "must be >= 1", which it is."""
    code, _, err = run_case_text(tmp_path, "  - id: lp\n    op: LpPool-22\n    attributes: {kernel_shape: [2], p: 100000000000}\n"
                                           "    input: [[[1, 2, 3]]]\n    expected: {shape: [1, 1, 2]}\n")
    assert code == 2
    line = one_error_line(err)
    assert "field 'attributes.p'" in line and "<= 2147483647" in line and ">= 1" not in line, line


HOSTILE_ID = '"k1 [bold red]RED[/]"'
HOSTILE_FILE = "k\x1b[2J.yaml"


def hostile_case(op: str = "MaxPool-22", attrs: str = "{kernel_shape: [2]}", expected: str = "{values: [[[2, 3]]]}") -> str:
    return f"  - id: {HOSTILE_ID}\n    op: {op}\n    attributes: {attrs}\n    input: [[[1, 2, 3]]]\n    expected: {expected}\n"


def assert_inert(text: str) -> None:
    """Markup shown as written, the escape character shown escaped."""
    assert "k1 [bold red]RED[/]" in text and "k\\x1b[2J.yaml" in text, text
    assert "\x1b" not in text


def test_export_shows_case_text_inert(tmp_path: Path) -> None:
    (tmp_path / HOSTILE_FILE).write_text(CASE_HEAD + hostile_case("AdaptiveAvgPool-8", "{output_shape: [1]}",
                                                             "{shape: [1, 1, 1]}"))
    r = invoke("export", str(tmp_path / HOSTILE_FILE), str(tmp_path / "out"))
    assert r.returncode == 0, r.stdout + r.stderr
    words = " ".join(r.stdout.split())  # the in-process console keeps its first width: words, not lines
    assert "not expressible in ONNX" in words
    assert_inert(words)


def test_fuzz_registry_warnings_show_case_text_inert(tmp_path: Path) -> None:
    (tmp_path / "known").mkdir()
    (tmp_path / "known" / HOSTILE_FILE).write_text(CASE_HEAD + hostile_case())
    r = cli("fuzz", "--max-examples", "1", "--peers", "none", "--no-bundled-known", "--known", str(tmp_path / "known"),
            "--no-progress", "--save-cases", str(tmp_path / "finds"), "--database", str(tmp_path / "db"), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "warning: known-divergence registry:" in r.stderr
    assert_inert(r.stderr)


def test_bench_names_the_written_file_inert(tmp_path: Path) -> None:
    out = tmp_path / "b[bold]x[/]" / "o.md"
    r = cli("bench", "-w", "F1", "--reps", "3", "--time-budget", "0.1s", "--write-docs", str(out), timeout=200)
    assert r.returncode == 0, r.stdout + r.stderr
    assert out.is_file()
    assert f"wrote {out}" in r.stderr


def test_audit_names_a_global_pool_on_an_input_of_the_wrong_rank(tmp_path: Path) -> None:
    """GlobalAveragePool on a rank-2 or rank-6 input: exit 2 with no error line at all (the
    engines' error verdicts were never printed); the node is refused up front, like a MaxPool's."""
    import onnx
    from onnx import TensorProto, helper

    for rank in (2, 6):
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1] * (rank - 1) + [5])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
        node = helper.make_node("GlobalAveragePool", ["x"], ["y"], name="gap")
        model = helper.make_model(helper.make_graph([node], "g", [x], [y]), opset_imports=[helper.make_opsetid("", 22)])
        path = tmp_path / f"rank{rank}.onnx"
        onnx.save(model, str(path))
        r = invoke("audit", str(path), "--peers", "onnx_reference", "--engine", "numpy", "-q")
        assert r.returncode == 2, r.stdout + r.stderr
        line = one_error_line(r.stderr)
        assert "node 'gap'" in line and f"rank {rank}" in line, line


def test_a_bogus_isa_is_an_error_for_every_engine_selection(tmp_path: Path) -> None:
    """POOLCHECK_ISA=bogus with the default --engine all ran the NumPy engine alone, saying
    nothing (fuzz and --engine c already refused it)."""
    (tmp_path / "ok.yaml").write_text(CASE_HEAD + GOOD_CASE)
    r = cli("run", "-q", str(tmp_path / "ok.yaml"), env={"POOLCHECK_ISA": "bogus"})
    assert r.returncode == 2, r.stdout + r.stderr
    line = one_error_line(r.stderr)
    assert "POOLCHECK_ISA" in line and "'bogus'" in line, line


def test_the_replay_of_a_case_whose_id_holds_the_separator_reproduces(tmp_path: Path) -> None:
    """FILE::ID was split at the last '::', so the replay of case 'a::b' looked for the file
    'FILE::a' (no such file)."""
    import json
    import shlex

    (tmp_path / "c.yaml").write_text(CASE_HEAD + GOOD_CASE + GOOD_CASE.replace("ok-case", "a::b").replace("[[[2, 3]]]", "[[[2, 4]]]"))
    r = invoke("run", "--json", "--engine", "numpy", str(tmp_path / "c.yaml"))
    assert r.returncode == 1, r.stdout + r.stderr
    replay = next(c["replay"] for c in json.loads(r.stdout)["cases"] if c["case_id"] == "a::b")
    again = invoke(*shlex.split(replay)[1:], "--json")
    assert again.returncode == 1, again.stdout + again.stderr
    assert [(c["case_id"], c["verdict"]) for c in json.loads(again.stdout)["cases"]] == [("a::b", "fail")]


def test_a_case_id_with_control_characters_is_refused(tmp_path: Path) -> None:
    """An id is shown escaped everywhere (inert), so a replay naming it could never select it:
    the loader refuses control characters in ids."""
    for raw in ('"a\\x1b[2Jb"', '"line\\nbreak"', '"tab\\there"', '"rtl\\u202eoverride"', '"iso\\u2066late"'):
        code, _, err = run_case_text(tmp_path, GOOD_CASE.replace("ok-case", raw))
        assert code == 2, (raw, err)
        line = one_error_line(err)
        assert "field 'id'" in line and "control character" in line, line


def test_shape_refuses_an_empty_item_in_a_list() -> None:
    """`--input 1,,1,7` was read as 1,1,7 (the empty item dropped): an answer for a shape the user
    did not give. A trailing comma is still fine."""
    for option, value in (("--input", "1,,1,7"), ("--kernel", "2,,2"), ("--strides", ",1")):
        args = {"--input": "1,1,7,7", "--kernel": "2,2", "--strides": "1,1", option: value}
        r = invoke("shape", *[a for kv in args.items() for a in kv])
        assert r.returncode == 2, (option, r.stdout + r.stderr)
        line = one_error_line(r.stderr)
        assert f"{option}: expected comma-separated integers" in line and repr(value) in line, line
    r = invoke("shape", "--input", "1,1,7,", "--kernel", "2")
    assert r.returncode == 0 and "(1, 1, 6)" in r.stdout, r.stdout + r.stderr


def test_bidirectional_overrides_are_shown_escaped(tmp_path: Path) -> None:
    """U+202E (right-to-left override) and the isolates reorder the rest of a terminal line or a
    Markdown table cell as displayed ("Trojan Source"): text from a file shows them escaped."""
    title = "abc\u202edef\u2066ghi\u2069"
    (tmp_path / "c.yaml").write_text(CASE_HEAD + GOOD_CASE.replace("    op:", f'    title: "{title}"\n    op:')
                                     .replace("[[[2, 3]]]", "[[[2, 4]]]"), encoding="utf-8")
    r = invoke("run", "--engine", "numpy", str(tmp_path / "c.yaml"), "--report-dir", str(tmp_path / "rep"))
    assert r.returncode == 1, r.stdout + r.stderr
    md = (tmp_path / "rep" / "summary.md").read_text(encoding="utf-8")
    assert "abc\\u202edef\\u2066ghi\\u2069" in " ".join(r.stdout.split())
    assert "abc\\\\u202edef\\\\u2066ghi\\\\u2069" in md  # the backslash escaped for Markdown
    for text in (r.stdout, md):
        assert not any(ch in text for ch in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def test_audit_input_shape_refuses_huge_and_repeated_dimensions(tmp_path: Path) -> None:
    """--input-shape x=10**20,... was a traceback (protobuf's 'Value out of range'); the same
    input given twice kept the last shape without a word."""
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 5, 5])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    node = helper.make_node("MaxPool", ["x"], ["y"], name="mp", kernel_shape=[2, 2])
    model = helper.make_model(helper.make_graph([node], "g", [x], [y]), opset_imports=[helper.make_opsetid("", 22)])
    onnx.save(model, str(tmp_path / "dyn.onnx"))
    for shapes, words in ((["x=100000000000000000000,1,5,5"], "<= 2147483647"),
                          (["x=1,1,5,5", "x=2,1,5,5"], "given twice"),
                          (["x=1,,5,5"], "expected NAME=D1,D2,...")):  # the empty item was dropped: (1, 5, 5)
        r = invoke("audit", str(tmp_path / "dyn.onnx"), "--peers", "onnx_reference", "--engine", "numpy", "-q",
                   *[a for s in shapes for a in ("--input-shape", s)])
        assert r.returncode == 2, (shapes, r.stdout + r.stderr)
        line = one_error_line(r.stderr)
        assert "--input-shape" in line and words in line, line


def test_audit_refuses_a_model_file_without_a_graph(tmp_path: Path) -> None:
    """An empty .onnx file (or bytes protobuf reads as a ModelProto without a graph) was audited
    as a model with no pooling node, exit 0."""
    for name, data in (("empty.onnx", b""), ("ir-only.onnx", b"\x08\x07")):
        (tmp_path / name).write_bytes(data)
        r = invoke("audit", str(tmp_path / name), "--peers", "onnx_reference", "--engine", "numpy", "-q")
        assert r.returncode == 2, (name, r.stdout + r.stderr)
        line = one_error_line(r.stderr)
        assert name in line and "no graph" in line, line


def test_columns_zero_still_prints(tmp_path: Path) -> None:
    """COLUMNS=0 made rich's console zero wide: the run printed nothing at all and exited 0."""
    (tmp_path / "ok.yaml").write_text(CASE_HEAD + GOOD_CASE)
    r = cli("run", "-q", "--engine", "numpy", str(tmp_path / "ok.yaml"), columns=0)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ok-case" in r.stdout and "1 pass" in r.stdout, r.stdout


def test_values_beyond_the_case_dtype_are_refused(tmp_path: Path) -> None:
    """A float16 input of 70000 became infinity (a RuntimeWarning on stderr, then judged: the
    case 'passed'); a recipe's values past the type's range wrapped (int8) or became infinity
    (float16), though the case format promises recipe numbers within the dtype's range."""
    cases = {
        "inline": ("float16", "[[[70000, 2, 3]]]", "field 'input'", "70000"),
        "expected": ("float16", "[[[1, 2, 3]]]", "field 'expected.values'", "1000000.0"),
        "constant": ("float16", "{shape: [1, 1, 3], recipe: constant, value: 70000}", "field 'input'", "float16"),
        "arange-int8": ("int8", "{shape: [1, 1, 30], recipe: arange, start: 120}", "field 'input'", "int8"),
        "random-f16": ("float16", "{shape: [1, 1, 30], recipe: random, low: -100000.0, high: 100000.0}",
                       "field 'input'", "float16"),
    }
    for name, (dtype, x, field, words) in cases.items():
        expected = "{values: [[[2, 1000000.0]]]}" if name == "expected" else "{shape: [1, 1, 2]}"
        code, out, err = run_case_text(tmp_path, f"  - id: {name}\n    op: MaxPool-22\n    attributes: {{kernel_shape: [2]}}\n"
                                                 f"    dtype: {dtype}\n    input: {x}\n    expected: {expected}\n")
        assert code == 2, (name, out, err)
        line = one_error_line(err)
        assert field in line and "out of range" in line and words in line, (name, line)
    code, _, err = run_case_text(tmp_path, "  - id: edge\n    op: MaxPool-22\n    attributes: {kernel_shape: [2]}\n"
                                           "    dtype: float16\n    input: [[[65519, 2, 3]]]\n"
                                           "    expected: {values: [[[65504, 3]]]}\n")
    assert code == 0 and not err, err  # rounds to float16's largest finite value: no overflow


def test_an_exponent_yaml_reads_as_text_gets_a_hint(tmp_path: Path) -> None:
    """PyYAML (YAML 1.1) reads 1e-6 and 1.0e6 as strings (a float needs a dot and a signed
    exponent): the refusal says how to write the number."""
    for name, block, written, fixed in (
            ("tol", "expected: {values: [[[2, 3]]]}\n    tolerance: {rtol: 1e-6}", "1e-6", "1.0e-06"),
            ("inline", "expected: {values: [[[2, 1.0e6]]]}", "1.0e6", "1000000.0"),
            ("recipe", "expected: {shape: [1, 1, 2]}", "1e3", "1000.0")):
        x = "{shape: [1, 1, 3], recipe: constant, value: 1e3}" if name == "recipe" else "[[[1, 2, 3]]]"
        code, _, err = run_case_text(tmp_path, f"  - id: {name}\n    op: MaxPool-22\n    attributes: {{kernel_shape: [2]}}\n"
                                               f"    input: {x}\n    {block}\n")
        assert code == 2, (name, err)
        line = one_error_line(err)
        assert f"YAML reads {written} as text; write it as {fixed}" in line, (name, line)


def test_shape_working_shows_the_quotient_a_reader_can_round() -> None:
    """The working printed the quotient with 6 significant digits: 'ceil(7.15828e+08) =
    715827883', from which no one can get 715827883."""
    r = invoke("shape", "--input", "1,1,2147483647", "--kernel", "2", "--strides", "3", "--rounding-type", "ceil")
    assert r.returncode == 0, r.stderr
    # words, not lines: the in-process console keeps the width of the first test that made it
    assert "= ceil(715827882.667) = 715827883" in " ".join(r.stdout.split()), r.stdout
    r = invoke("shape", "--input", "1,1,100000000", "--kernel", "1")
    assert "= floor(100000000) = 100000000" in " ".join(r.stdout.split()), r.stdout
    assert "e+" not in r.stdout


def test_a_replay_repeats_the_peer_timeout_exactly(tmp_path: Path) -> None:
    """--peer-timeout 1234.5678s was replayed as 1234.57s (six significant digits)."""
    import json
    import shlex

    (tmp_path / "c.yaml").write_text(CASE_HEAD + GOOD_CASE.replace("[[[2, 3]]]", "[[[2, 4]]]"))
    r = invoke("run", "--json", "--engine", "numpy", str(tmp_path / "c.yaml"), "--peers", "onnx_reference",
               "--peer-timeout", "1234.5678s")
    replay = shlex.split(json.loads(r.stdout)["cases"][0]["replay"])
    assert replay[replay.index("--peer-timeout") + 1] == "1234.5678s", replay


def test_an_audit_replay_names_plugin_files_and_repeats_the_options(tmp_path: Path) -> None:
    """The audit's replay named a plugin peer by its PEER_NAME (pasted: 'unknown peer') and
    dropped --engine and --peer-timeout."""
    import json
    import shlex

    import onnx
    from onnx import TensorProto, helper
    from support import PLANTED

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 5, 5])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    node = helper.make_node("MaxPool", ["x"], ["y"], name="mp", kernel_shape=[2, 2])
    model = helper.make_model(helper.make_graph([node], "g", [x], [y]), opset_imports=[helper.make_opsetid("", 22)])
    onnx.save(model, str(tmp_path / "m.onnx"))
    plugin = PLANTED / "nan_ignored.py"
    r = invoke("audit", str(tmp_path / "m.onnx"), "--peers", str(plugin), "--engine", "numpy", "--peer-timeout", "77s",
               "-q", "--report-dir", str(tmp_path / "rep"))
    cases = json.loads((tmp_path / "rep" / "result.json").read_text())["cases"]
    replay = shlex.split(cases[0]["replay"])
    assert replay[:2] == ["poolcheck", "audit"], replay
    assert replay[replay.index("--peers") + 1] == str(plugin.resolve()), replay
    assert replay[replay.index("--engine") + 1] == "numpy" and replay[replay.index("--peer-timeout") + 1] == "77s"
    again = invoke(*replay[1:], "-q")
    assert again.returncode == r.returncode, again.stdout + again.stderr


def test_fuzz_replays_reproduce_from_another_folder(tmp_path: Path) -> None:
    """The exploration's replay dropped --conventions and named a relative --database; a saved
    find's replay named the relative --save-cases path; a registry row's replay named a relative
    --known path with -k (a substring)."""
    import json
    import shlex

    from support import CORPUS, PLANTED

    work = tmp_path / "work"
    work.mkdir()
    (work / "known").mkdir()
    (work / "known" / "k.yaml").write_text((CORPUS / "known" / "onnxruntime.yaml").read_text())
    r = cli("fuzz", "--conventions", "onnx", "--peers", str(PLANTED / "pads_swapped.py"), "--ops", "maxpool",
            "--seed", "1", "--exit-first", "--time-budget", "20s", "--no-progress", "--database", "db",
            "--save-cases", "finds", "--report-dir", "rep", "--no-bundled-known", "--known", "known", cwd=work,
            timeout=200)
    assert r.returncode == 1, r.stdout[-2000:] + r.stderr[-2000:]
    doc = json.loads((work / "rep" / "result.json").read_text())
    exploration = shlex.split(doc["fuzz"]["replay"])
    assert exploration[exploration.index("--conventions") + 1] == "onnx", exploration
    assert exploration[exploration.index("--database") + 1] == str(work / "db"), exploration
    new = next(c for c in doc["cases"] if "fuzz" in c["tags"] and "known" not in c["tags"])
    known = next(c for c in doc["cases"] if "known" in c["tags"])
    assert shlex.split(known["replay"])[2].startswith(str(work / "known" / "k.yaml") + "::"), known["replay"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    again = cli(*shlex.split(new["replay"])[1:], cwd=elsewhere)
    assert again.returncode == 1, again.stdout[-2000:] + again.stderr[-2000:]
    again = cli(*shlex.split(known["replay"])[1:], "--json", cwd=elsewhere)
    assert again.returncode != 2 and json.loads(again.stdout)["cases"][0]["case_id"] == known["case_id"], again.stderr


def test_markdown_code_spans_hold_any_run_of_backticks(tmp_path: Path) -> None:
    """A replay or source in the Markdown report is a code span fenced with `` when the text has
    a backtick: a run of two backticks in a case id closed it early, and the HTML after it was
    live (<b>, <img>, links)."""
    from markdown_it import MarkdownIt

    case_id = "x``<b>live</b>``<img src=x> y"
    (tmp_path / "c.yaml").write_text(CASE_HEAD + GOOD_CASE.replace("ok-case", f'"{case_id}"').replace("[[[2, 3]]]", "[[[2, 4]]]"))
    r = invoke("run", "-q", "--engine", "numpy", str(tmp_path / "c.yaml"), "--report-dir", str(tmp_path / "rep"))
    assert r.returncode == 1, r.stdout + r.stderr
    html = MarkdownIt("commonmark").render((tmp_path / "rep" / "summary.md").read_text())
    assert "<b>live" not in html and "<img" not in html, html
    assert "``&lt;b&gt;live&lt;/b&gt;``" in html  # the id, shown as written inside a code span


def test_a_folder_without_case_files_is_an_error(tmp_path: Path) -> None:
    """`poolcheck run typo-folder/` ran 0 cases and exited 0: a CI step pointed at the wrong
    folder passed. A folder with no case file is named in one line, exit 2; the other paths run."""
    (tmp_path / "empty").mkdir()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("not a case file")
    (tmp_path / "ok.yaml").write_text(CASE_HEAD + GOOD_CASE)
    for folder in ("empty", "other"):
        r = invoke("run", "-q", "--engine", "numpy", str(tmp_path / folder), str(tmp_path / "ok.yaml"))
        assert r.returncode == 2, r.stdout + r.stderr
        line = one_error_line(r.stderr)
        assert f"{tmp_path / folder}:" in line and "no case files" in line, line
        assert "ok-case" in r.stdout  # the file given beside it still ran


def test_an_empty_path_argument_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty string (an unset shell variable, `poolcheck run "$CASES"`) became Path("."): run
    judged every case under the current folder, --report-dir and export wrote into it."""
    (tmp_path / "ok.yaml").write_text(CASE_HEAD + GOOD_CASE)
    for args, option in ((["run", "-q", ""], "PATH"), (["run", "-q", "ok.yaml", "--report-dir", ""], "--report-dir"),
                         (["export", "ok.yaml", ""], "CASES... OUT"), (["report", "ok.json", "-o", ""], "--output"),
                         (["repro", "ok.yaml", "-o", ""], "--output"), (["audit", ""], "MODEL"),
                         (["fuzz", "--peers", "none", "--max-examples", "1", "--database", ""], "--database")):
        r = invoke(*args, cwd=tmp_path, monkeypatch=monkeypatch)
        assert r.returncode == 2, (args, r.stdout + r.stderr)
        line = one_error_line(r.stderr)
        assert line.startswith(f"error: {option}: expected ") and "empty string" in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ok.yaml"]  # nothing written beside it


def test_fuzz_refuses_conventions_a_family_operator_does_not_have() -> None:
    """--ops lp --conventions openvino fuzzed ONNX's LpPool without a word (the family operators
    each have one convention; --conventions was ignored for them)."""
    for ops, conventions in (("lp", "openvino"), ("adaptive_avg", "onnx"), ("global_max", "")):
        r = invoke("fuzz", "--ops", ops, "--conventions", conventions, "--peers", "none", "--max-examples", "1",
                   "--no-progress")
        assert r.returncode == 2, (ops, conventions, r.stdout + r.stderr)
        line = one_error_line(r.stderr)
        assert "--conventions" in line, line


def test_usage_errors_the_parser_finds_are_one_line() -> None:
    """An unknown option, a value that is not a number, a missing argument or an unknown command
    were a five-line box (usage, hint, a framed message)."""
    for args, words in ((["fuzz", "--seed", "abc"], "'--seed'"), (["run", "--bogus"], "--bogus"),
                        (["report"], "'file'"), (["bogus"], "'bogus'"), (["bench", "--reps", "2"], "'--reps'")):
        r = cli(*args)
        assert r.returncode == 2, (args, r.stdout + r.stderr)
        line = one_error_line(r.stderr)
        assert line.startswith("error: ") and words in line and "--help" in line, (args, line)


def test_an_empty_peer_list_is_a_usage_error(tmp_path: Path) -> None:
    """`--peers ""` (or ",") ran without peers -- or, for audit, with the default peers -- without
    a word: an unset variable read as a choice."""
    (tmp_path / "ok.yaml").write_text(CASE_HEAD + GOOD_CASE)
    ok = str(tmp_path / "ok.yaml")
    for args in (["run", "-q", ok, "--peers", ""], ["run", "-q", ok, "--peers", ","],
                 ["audit", str(tmp_path / "m.onnx"), "--peers", ""], ["explain", f"{ok}::ok-case", "--peers", " "],
                 ["fuzz", "--max-examples", "1", "--peers", ""], ["fuzz", "--max-examples", "1", "--peers", ","]):
        r = invoke(*args)
        assert r.returncode == 2, (args, r.stdout + r.stderr)
        line = one_error_line(r.stderr)
        assert line.startswith("error: --peers: expected peer names") and "got" in line, (args, line)


def test_explain_at_refuses_an_empty_coordinate(tmp_path: Path) -> None:
    """--at 0,,0,1 was read as 0,0,1 (the empty item dropped): another element than asked for."""
    (tmp_path / "ok.yaml").write_text(CASE_HEAD + GOOD_CASE)
    r = invoke("explain", f"{tmp_path / 'ok.yaml'}::ok-case", "--at", "0,,0,1")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "expected comma-separated integers" in one_error_line(r.stderr)
    assert invoke("explain", f"{tmp_path / 'ok.yaml'}::ok-case", "--at", "(0, 0, 1)").returncode == 0


def test_a_case_file_whose_path_holds_the_separator_runs(tmp_path: Path) -> None:
    """A folder named 'a::b' made every path under it read as FILE::ID ('no such file')."""
    folder = tmp_path / "a::b"
    folder.mkdir()
    (folder / "c.yaml").write_text(CASE_HEAD + GOOD_CASE)
    for target in (folder, folder / "c.yaml", f"{folder / 'c.yaml'}::ok-case"):
        r = invoke("run", "-q", "--engine", "numpy", str(target))
        assert r.returncode == 0 and "ok-case" in r.stdout, (target, r.stdout + r.stderr)


def test_a_file_where_an_output_folder_goes_is_named_as_such(tmp_path: Path) -> None:
    """`report -o file/x.md` said 'cannot write: File exists', and `--report-dir file/sub` said the
    file 'is not writable': both now say it is not a folder."""
    (tmp_path / "c.yaml").write_text(CASE_HEAD + GOOD_CASE)
    (tmp_path / "file").write_text("")
    r = invoke("run", "--engine", "numpy", str(tmp_path / "c.yaml"), "--report-dir", str(tmp_path / "rep"))
    assert r.returncode == 0, r.stdout + r.stderr
    r = invoke("report", str(tmp_path / "rep" / "result.json"), "--format", "md", "-o", str(tmp_path / "file" / "x.md"))
    assert r.returncode == 2 and one_error_line(r.stderr).endswith(f"--output: {str(tmp_path / 'file')!r} exists and "
                                                                    "is not a folder"), r.stderr
    r = invoke("run", "--engine", "numpy", str(tmp_path / "c.yaml"), "--report-dir", str(tmp_path / "file" / "sub"))
    assert r.returncode == 2 and f"({tmp_path / 'file'} is not a folder)" in one_error_line(r.stderr), r.stderr
