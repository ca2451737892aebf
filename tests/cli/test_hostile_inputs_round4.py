"""A fourth round of hostile inputs, through the real commands: each bad input is one line naming
what is wrong and exit 2 (never a traceback, never a verdict for something the user did not ask)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import CASE_HEAD, GOOD_CASE, invoke, malformed_field_line, one_error_line, run_case_text


def error_lines(stderr: str) -> list[str]:
    assert "Traceback" not in stderr
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def test_a_file_id_target_naming_no_case_is_an_error_beside_other_targets(tmp_path: Path) -> None:
    """`poolcheck run a.yaml::typo b.yaml` ran b.yaml and exited 0: a mistyped replay target was
    dropped without a word as soon as another target selected something (and `a.yaml::typo
    a.yaml::ok-case` judged ok-case alone). Each such target is now an error line naming the file
    and the id, exit 2; the other targets still run."""
    (tmp_path / "a.yaml").write_text(CASE_HEAD + GOOD_CASE)
    (tmp_path / "b.yaml").write_text(CASE_HEAD + GOOD_CASE.replace("ok-case", "b-case"))
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    for targets in ([f"{a}::typo", str(b)], [f"{a}::typo", f"{a}::ok-case"], [f"{a}::", str(b)]):
        r = invoke("run", "-q", "--engine", "numpy", *targets)
        assert r.returncode == 2, (targets, r.stdout + r.stderr)
        [line] = error_lines(r.stderr)
        wanted = targets[0].rpartition("::")[2]
        if wanted:
            assert line.startswith(f"error: {a}: case {wanted!r}: no case has this id"), line
        else:
            assert line.startswith(f"error: {a}: FILE::ID: expected a case id") and "empty string" in line, line
        assert "pass" in r.stdout  # the target beside it still ran
    r = invoke("run", "-q", "--engine", "numpy", f"{a}::typo")
    assert r.returncode == 2 and "no case has this id" in " ".join(error_lines(r.stderr)), r.stderr


@pytest.mark.parametrize("command", ["run", "explain", "repro"])
@pytest.mark.parametrize("value", ["", " ", ","])
def test_an_empty_k_is_a_usage_error(tmp_path: Path, command: str, value: str) -> None:
    """`-k ""` (an unset shell variable) selected every case in `run` and, in `explain`, the one
    case of a file or the first substring match (every id holds ""); `FILE::` (an empty id) in
    `explain` likewise."""
    (tmp_path / "c.yaml").write_text(CASE_HEAD + GOOD_CASE)
    args = [command, str(tmp_path / "c.yaml"), "-k", value]
    if command == "repro":
        args += ["-o", str(tmp_path / "out")]
    r = invoke(*args)
    assert r.returncode == 2, (command, value, r.stdout + r.stderr)
    line = one_error_line(r.stderr)
    assert line.startswith("error: -k: expected a case id") and "empty" in line, line
    assert not (tmp_path / "out").exists()


def test_explain_of_an_empty_case_id_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(CASE_HEAD + GOOD_CASE)
    r = invoke("explain", f"{tmp_path / 'c.yaml'}::")
    assert r.returncode == 2, r.stdout + r.stderr
    line = one_error_line(r.stderr)
    assert "expected a case id" in line and "empty" in line, line


def test_command_line_integers_are_plain_decimal_digits(tmp_path: Path) -> None:
    """Python's int() read `--input 1,1,1_6` as 1,1,16 (underscores group digits), `２` (a
    fullwidth digit) as 2: numbers the user did not type as such. Every comma-separated integer
    option (shape's, explain --at, audit --input-shape) reads ASCII digits with an optional sign."""
    for option, value in (("--input", "1,1,1_6"), ("--kernel", "\uff12"), ("--pads", "0,\u0663")):
        args = {"--input": "1,1,16", "--kernel": "2", option: value}
        r = invoke("shape", *[a for kv in args.items() for a in kv])
        assert r.returncode == 2, (option, value, r.stdout + r.stderr)
        line = one_error_line(r.stderr)
        assert f"{option}: expected comma-separated integers" in line and repr(value) in line, line
    r = invoke("shape", "--input", " 1, 1, 16 ", "--kernel", "+2,", "--pads", "0,0")
    assert r.returncode == 0 and "(1, 1, 15)" in r.stdout, r.stdout + r.stderr

    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 5, 5])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    node = helper.make_node("MaxPool", ["x"], ["y"], name="mp", kernel_shape=[2, 2])
    model = helper.make_model(helper.make_graph([node], "g", [x], [y]), opset_imports=[helper.make_opsetid("", 22)])
    onnx.save(model, str(tmp_path / "dyn.onnx"))
    r = invoke("audit", str(tmp_path / "dyn.onnx"), "--peers", "none", "--engine", "numpy", "-q",
               "--input-shape", "x=1,1,5_0,5")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "--input-shape: expected NAME=D1,D2,..." in one_error_line(r.stderr)


def test_audit_refuses_an_input_of_undefined_element_type(tmp_path: Path) -> None:
    """A model input of element type UNDEFINED (0; no runtime loads such a model) was audited as
    float32: verdicts and divergences for a tensor type the model does not have."""
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.UNDEFINED, [1, 1, 5, 5])
    y = helper.make_tensor_value_info("y", TensorProto.UNDEFINED, None)
    node = helper.make_node("MaxPool", ["x"], ["y"], name="mp", kernel_shape=[2, 2])
    model = helper.make_model(helper.make_graph([node], "g", [x], [y]), opset_imports=[helper.make_opsetid("", 22)])
    onnx.save(model, str(tmp_path / "undef.onnx"))
    r = invoke("audit", str(tmp_path / "undef.onnx"), "--peers", "none", "--engine", "numpy", "-q")
    assert r.returncode == 2, r.stdout + r.stderr
    line = one_error_line(r.stderr)
    assert "node 'mp'" in line and "cannot judge" in line and "onnx type 0" in line, line


PADS_CASE = """\
  - id: p
    op: MaxPool-22
    attributes: {kernel_shape: [2], pads: [0, 1]}
    input: [[[1, 2, 3]]]
    expected: {values: [[[2, 3, 3]]]}
"""


@pytest.mark.parametrize(("peer_name", "words"), [
    ("onnxruntime", "built-in peer"), ("torch", "built-in peer"), ("numpy", "engine"), ("c", "engine"),
    ("", "expected a name"), ("  ", "expected a name"), ("pi|pe", "'|'"),
])
def test_a_plugin_cannot_take_a_name_that_is_not_its_own(tmp_path: Path, peer_name: str, words: str) -> None:
    """A plugin whose PEER_NAME is 'onnxruntime' was reported as 'onnxruntime: fail (violation)'
    (the column 'ORT'): a divergence of ONNX Runtime that ONNX Runtime does not have. 'numpy' or
    'c' made a peer column with an engine's name (runners keyed by name merged), '' a column
    without a name, and 'pi|pe' a signature read back as subject 'pi' (fuzz's table showed peer
    'pi', detail 'pe|pads:swapped'). Such a plugin is refused, naming the file: exit 2."""
    from support import PLANTED

    text = (PLANTED / "pads_swapped.py").read_text()
    assert 'PEER_NAME = "planted-pads-swapped"' in text
    plugin = tmp_path / "plug.py"
    plugin.write_text(text.replace('PEER_NAME = "planted-pads-swapped"', f'PEER_NAME = "{peer_name}"'))
    (tmp_path / "c.yaml").write_text(CASE_HEAD + PADS_CASE)
    for args in (["run", "-q", "--engine", "numpy", str(tmp_path / "c.yaml"), "--peers", str(plugin)],
                 ["fuzz", "--max-examples", "1", "--no-progress", "--peers", str(plugin), "--database",
                  str(tmp_path / "db"), "--save-cases", str(tmp_path / "finds"), "--no-bundled-known"]):
        r = invoke(*args)
        assert r.returncode == 2, (args[0], r.stdout + r.stderr)
        line = one_error_line(r.stderr)
        assert str(plugin) in line and words in line, line


def test_fuzz_cluster_and_ranks_read_what_was_typed(tmp_path: Path) -> None:
    """`--cluster ""` (an unset variable: `--cluster "$SCHEDULER"`) ran the campaign here without
    a word, and `--ranks 0_3` was read as rank 3 (Python's int() takes digit groups)."""
    common = ["fuzz", "--peers", "none", "--max-examples", "1", "--no-progress", "--database", str(tmp_path / "db"),
              "--save-cases", str(tmp_path / "finds"), "--no-bundled-known"]
    for extra, words in ((["--cluster", ""], "--cluster: expected a scheduler address"),
                         (["--cluster", " "], "--cluster: expected a scheduler address"),
                         (["--ranks", "0_3"], "--ranks: expected comma-separated integers")):
        r = invoke(*common, *extra)
        assert r.returncode == 2, (extra, r.stdout + r.stderr)
        line = one_error_line(r.stderr)
        assert words in line, line
    assert not (tmp_path / "db").exists()


def test_documented_outputs_of_different_shapes_are_a_malformed_case(tmp_path: Path) -> None:
    """`expected: {values: [[[1, 2]]], indices: [[[0, 2, 3]]]}` (or a `shape` other than the
    values') was judged: 'numpy: fail (violation) indices.shape=(1, 1, 2), but should be (1, 1,
    3)', the engine blamed for a document that contradicts itself. The loader refuses it."""
    for where, block in (
            ("expected.indices", "expected: {values: [[[1, 2]]], indices: [[[0, 2, 3]]]}"),
            ("expected.shape", "expected: {values: [[[1, 2]]], shape: [1, 1, 3]}"),
            ("erratum.correct", "expected: {values: [[[1, 3]]]}\n    erratum: {says: x, why: y, "
                                "correct: {values: [[[1, 2]]], indices: [[[0]]]}}")):
        line = malformed_field_line(tmp_path, "  - id: s\n    op: MaxPool-22\n    attributes: {kernel_shape: [2]}\n"
                                              f"    input: [[[1, 1, 2]]]\n    {block}\n", where)
        assert "differs from" in line, line
    code, out, err = run_case_text(tmp_path, "  - id: s\n    op: MaxPool-22\n    attributes: {kernel_shape: [2]}\n"
                                             "    input: [[[1, 1, 2]]]\n    expected: {values: [[[1, 2]]], "
                                             "indices: [[[0, 2]]], shape: [1, 1, 2]}\n")
    assert code == 0, out + err


def test_json_output_shows_bidirectional_overrides_escaped(tmp_path: Path) -> None:
    """`poolcheck run --json` (and result.json) wrote a title's U+202E and the isolates raw: `cat`
    on a terminal reordered the rest of the line as displayed. They are \\u escapes now, like the
    C1 controls; the data reads back unchanged."""
    import json

    title = "abc\u202edef\u2066ghi\u2069"
    (tmp_path / "c.yaml").write_text(CASE_HEAD + GOOD_CASE.replace("    op:", f'    title: "{title}"\n    op:'), encoding="utf-8")
    r = invoke("run", "--json", "--engine", "numpy", str(tmp_path / "c.yaml"), "--report-dir", str(tmp_path / "rep"))
    assert r.returncode == 0, r.stdout + r.stderr
    html = (tmp_path / "rep" / "report.html").read_text(encoding="utf-8")
    assert not any(ch in html for ch in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
    for text in (r.stdout, (tmp_path / "rep" / "result.json").read_text(encoding="utf-8")):
        assert not any(ch in text for ch in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"), text
        assert "abc\\u202edef\\u2066ghi\\u2069" in text
        assert json.loads(text)["cases"][0]["title"] == title


def test_report_output_to_a_pipe_or_a_link_writes_into_it(tmp_path: Path) -> None:
    """`poolcheck report R.json -o /dev/null` (or a named pipe) renamed a temporary file over the
    device: run as root it replaced /dev/null with a regular file (measured, then restored with
    mknod). `-o LINK` replaced the symbolic link with a file and left its target unwritten. A pipe
    or character device is now written in place, a link's target is written and the link kept."""
    import os
    import stat

    (tmp_path / "c.yaml").write_text(CASE_HEAD + GOOD_CASE)
    r = invoke("run", "-q", "--engine", "numpy", str(tmp_path / "c.yaml"), "--report-dir", str(tmp_path / "rep"))
    assert r.returncode == 0, r.stdout + r.stderr
    saved = str(tmp_path / "rep" / "result.json")

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader, so the writer's open does not wait
    try:
        r = invoke("report", saved, "-f", "md", "-o", str(fifo))
        assert r.returncode == 0, r.stdout + r.stderr
        assert stat.S_ISFIFO(os.lstat(fifo).st_mode), "the pipe was replaced by a file"
        assert b"poolcheck run: 1 case(s)" in os.read(reader, 1 << 16)
    finally:
        os.close(reader)

    (tmp_path / "real.md").write_text("old")
    (tmp_path / "link.md").symlink_to(tmp_path / "real.md")
    r = invoke("report", saved, "-f", "md", "-o", str(tmp_path / "link.md"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "link.md").is_symlink()
    assert "poolcheck run: 1 case(s)" in (tmp_path / "real.md").read_text()


def test_repro_output_that_cannot_be_a_folder_is_one_line(tmp_path: Path) -> None:
    """`poolcheck repro -o FILE` (a file, a path under a file, a dangling link) was a traceback
    (FileExistsError / NotADirectoryError from mkdir); so was a folder that cannot be made."""
    from support import CORPUS

    registry = str(CORPUS / "known" / "onnxruntime.yaml")
    (tmp_path / "file").write_text("notes")
    (tmp_path / "dangling").symlink_to(tmp_path / "gone")
    for out, words in ((tmp_path / "file", "exists and is not a folder"),
                       (tmp_path / "file" / "sub", "exists and is not a folder"),
                       (tmp_path / "dangling", "which does not exist")):
        r = invoke("repro", registry, "-o", str(out))
        assert r.returncode == 2, (out, r.stdout + r.stderr)
        line = one_error_line(r.stderr)
        assert line.startswith("error: --output: ") and words in line, line
    assert (tmp_path / "file").read_text() == "notes" and not (tmp_path / "gone").exists()


def test_a_file_name_too_long_is_one_line(tmp_path: Path) -> None:
    """A path with a component past the file system's 255 bytes made Path.exists() raise
    (ENAMETOOLONG is not among the errors it answers False for): a traceback from run and audit
    --report-dir, fuzz --database/--save-cases/--report-dir/--known, repro -o, bench --write-docs
    and explain FILE::ID. Every command's error boundary names the path in one line."""
    from support import CORPUS

    (tmp_path / "c.yaml").write_text(CASE_HEAD + GOOD_CASE)
    long = str(tmp_path / ("x" * 300))
    fuzz = ["fuzz", "--peers", "none", "--max-examples", "1", "--no-progress", "--no-bundled-known"]
    for args in (["run", "-q", str(tmp_path / "c.yaml"), "--report-dir", long],
                 [*fuzz, "--database", long], [*fuzz, "--save-cases", long], [*fuzz, "--known", long],
                 ["repro", str(CORPUS / "known" / "onnxruntime.yaml"), "-o", long],
                 ["bench", "-w", "F1", "--write-docs", long + "/b.md"], ["explain", long + "::x"]):
        r = invoke(*args)
        assert r.returncode == 2, (args[:2], r.stdout + r.stderr)
        line = one_error_line(r.stderr)
        assert "xxxxxxxx" in line and "too long" in line, line


def test_a_file_named_twice_is_read_once(tmp_path: Path) -> None:
    """`poolcheck run cases cases/a.yaml` (a folder and a file in it, as a shell glob gives) or
    `export a.yaml ./a.yaml OUT` read the file twice and refused its cases as duplicates of
    themselves: 'duplicate id, also defined at a.yaml:3', exit 2."""
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "a.yaml").write_text(CASE_HEAD + GOOD_CASE)
    folder, file = tmp_path / "cases", tmp_path / "cases" / "a.yaml"
    for args in (["run", "-q", "--engine", "numpy", str(folder), str(file)],
                 ["run", "-q", "--engine", "numpy", str(file), f"{folder}/../cases/a.yaml"],
                 ["export", str(folder), str(file), str(tmp_path / "out")]):
        r = invoke(*args)
        assert r.returncode == 0, (args, r.stdout + r.stderr)
        assert "duplicate" not in r.stderr and "1 " in r.stdout, (args, r.stdout + r.stderr)


def test_shape_of_a_huge_adaptive_output_lists_its_first_bins_only() -> None:
    """`poolcheck shape --op adaptive --input 1,1,1 --output-shape 2147483647` built every bin to
    show the first six: 16 GiB per array (on this machine the process was killed, exit 137). Run
    here with its address space capped at 3 GiB (before the fix: a MemoryError traceback)."""
    import resource
    import subprocess

    from support import PLAIN, ROOT, cli_command

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    import os

    env = {**os.environ, **PLAIN, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([*cli_command(), "shape", "--op", "adaptive", "--input", "1,1,1", "--output-shape",
                        "2147483647"], capture_output=True, text=True, timeout=120, env=env, preexec_fn=cap,
                       check=False)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-2000:]
    words = " ".join(r.stdout.split())
    assert "(1, 1, 2147483647)" in words and "[0, 1) [0, 1)" in words and "(2147483647 bins)" in words, words


def test_audit_of_a_node_with_a_repeated_or_undecodable_attribute_is_one_line(tmp_path: Path) -> None:
    """A string attribute that is not UTF-8 (auto_pad = b'\\xff\\xfe') was a UnicodeDecodeError
    traceback; an attribute given twice (kernel_shape [2, 2] and [3, 3], which the ONNX checker and
    the runtimes refuse) was audited with the last value, exit 0; so was a MaxPool of three outputs."""
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 5, 5])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    for name, attrs, words in (
            ("bytes", [helper.make_attribute("auto_pad", b"\xff\xfe")], "auto_pad: expected one of"),
            ("twice", [helper.make_attribute("kernel_shape", [3, 3])], "attribute 'kernel_shape' is given twice"),
            ("three", [], "at most two outputs, the node has 3")):
        node = helper.make_node("MaxPool", ["x"], ["y", "i", "z"] if name == "three" else ["y"], name="mp",
                                kernel_shape=[2, 2])
        node.attribute.extend(attrs)
        model = helper.make_model(helper.make_graph([node], "g", [x], [y]),
                                  opset_imports=[helper.make_opsetid("", 22)])
        onnx.save(model, str(tmp_path / f"{name}.onnx"))
        r = invoke("audit", str(tmp_path / f"{name}.onnx"), "--peers", "none", "--engine", "numpy", "-q")
        assert r.returncode == 2, (name, r.stdout + r.stderr)
        line = one_error_line(r.stderr)
        assert "node 'mp'" in line and words in line, line


@pytest.mark.parametrize("command", ["run", "audit", "fuzz"])
@pytest.mark.parametrize("value", ["", " ", ","])
def test_an_empty_fail_on_is_a_usage_error(tmp_path: Path, command: str, value: str) -> None:
    """`--fail-on ""` (an unset shell variable) fell back to the default, so a CI job meant to
    fail on every severity passed on an erratum; it is one line and exit 2, as `--peers ""` is."""
    (tmp_path / "c.yaml").write_text(CASE_HEAD + GOOD_CASE)
    target = {"run": [str(tmp_path / "c.yaml"), "--engine", "numpy"], "audit": [str(tmp_path / "m.onnx")],
              "fuzz": ["--max-examples", "1", "--peers", "none"]}[command]
    r = invoke(command, *target, "--fail-on", value)
    assert r.returncode == 2, (command, value, r.stdout + r.stderr)
    line = one_error_line(r.stderr)
    assert "--fail-on" in line and "expected some of" in line, line
