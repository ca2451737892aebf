"""User text is data in every renderer (issue 8): rich markup in an id, a path or a message is
shown as written (no MarkupError), and ESC / C0 / C1 control characters are shown escaped, never
sent to a terminal or written raw into Markdown, JUnit XML, HTML or JSON."""

from __future__ import annotations

import json
import re
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from rich.console import Console
from support import cli

from poolcheck.report import console as console_report
from poolcheck.report.html import to_html
from poolcheck.report.jsonfmt import from_json, to_json
from poolcheck.report.junit import to_junit
from poolcheck.report.markdown import to_markdown
from poolcheck.report.text import safe
from poolcheck.results import CaseResult, Check, Diff, RunResult

#: Markup, an ANSI colour and title sequence, BEL, NUL, a C1 CSI and DEL.
HOSTILE = "x[/red][bold]id\x1b[31m\x1b]0;owned\x07\x00\x9b2J\x7f<script>|*_`"
RAW_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def hostile_result() -> RunResult:
    check = Check("peer[/]\x1b[1m", "peer", "fail", f"message {HOSTILE}", [Diff("values", [0, 0, 1], 1.0, 2.0)], 1,
                  diagnosis=f"diagnosis {HOSTILE}", severity="violation")
    case = CaseResult(case_id=HOSTILE, verdict="fail", title=f"title {HOSTILE}", source="dir[/red]/\x1b[2Jf.yaml:3",
                      op="MaxPool-14", checks=[check], message=f"note {HOSTILE}", replay=f"poolcheck run '{HOSTILE}'",
                      erratum={"says": HOSTILE, "why": HOSTILE, "correct": {}})
    errored = CaseResult(case_id=f"e{HOSTILE}", verdict="error", source="f.yaml:9", message=f"error {HOSTILE}")
    return RunResult(command=f"poolcheck run {HOSTILE}", cases=[case, errored], versions={"peer\x1b": "1\x9b"})


def test_safe_escapes_every_control_character() -> None:
    assert safe("a\x1bb\x9bc\x00d\x7f\ne\tf") == "a\\x1bb\\x9bc\\x00d\\x7f\\x0ae\\x09f"
    assert safe("a\nb\tc\x1b", newlines=True) == "a\nb\tc\\x1b"
    assert safe("x[/red]") == "x[/red]"


def test_console_shows_markup_and_controls_as_text() -> None:
    console = Console(width=100, record=True, force_terminal=True, color_system="truecolor")
    console_report.render(hostile_result(), console)  # no MarkupError
    plain = console.export_text(styles=False)
    styled = console.export_text(styles=True)
    assert "x[/red][bold]id\\x1b[31m\\x1b]0;owned\\x07\\x00\\x9b2J\\x7f" in plain
    assert "dir[/red]/\\x1b[2Jf.yaml" in plain
    # The only escape sequences in the output are rich's own styles (SGR "m" sequences).
    assert not re.search("\x1b(?!\\[[0-9;]*m)", styled)
    assert not re.search("[\x00-\x08\x0b-\x1a\x1c-\x1f\x7f-\x9f]", styled)


def test_markdown_is_inert() -> None:
    md = to_markdown(hostile_result())
    assert not RAW_CONTROLS.search(md)
    outside_code = re.sub(r"(``?).*?\1", "", md)  # code spans show text literally, HTML included
    assert "<script>" not in outside_code and "&lt;script&gt;" in md
    assert "\\x1b[31m" not in md or "\\x1b\\[31m" in md  # shown escaped, brackets escaped for Markdown


def test_junit_is_valid_xml_with_controls_escaped() -> None:
    text = to_junit(hostile_result())
    assert not RAW_CONTROLS.search(text.replace("\n", ""))
    root = ET.fromstring(text.encode("utf-8"))
    names = [tc.get("name") for tc in root.iter("testcase")]
    assert safe(HOSTILE) in names
    failure = next(root.iter("failure"))
    assert failure.get("message").startswith("[violation] message x[/red]")


def test_html_and_json_are_inert_and_round_trip() -> None:
    result = hostile_result()
    page = to_html(result)
    assert not RAW_CONTROLS.search(page.replace("\n", ""))
    assert "<script>|" not in page
    text = to_json(result)
    assert not RAW_CONTROLS.search(text.replace("\n", ""))
    again = from_json(text)
    assert again.cases[0].case_id == HOSTILE  # the data itself is unchanged
    assert again.cases[0].checks[0].severity == "violation"


def _color_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The real command on a colour terminal (what a hostile text must not drive)."""
    return cli(*args, cwd=cwd, columns=120, env={"TERM": "xterm-256color", "FORCE_COLOR": "1"}, plain=False,
               timeout=120)


@pytest.mark.parametrize("fmt", ["console", "md", "junit", "html", "json"])
def test_hostile_case_file_through_the_real_commands(tmp_path: Path, fmt: str) -> None:
    folder = tmp_path / "d[red]"
    folder.mkdir()
    (folder / "c[b].yaml").write_text(
        'schema: poolcheck.case/1\ncases:\n'
        # an id may not hold control characters (a case file refuses it: the error row below); the
        # judged case carries them in its title, which every renderer shows
        '  - id: "x[/red]red"\n    title: "t[/] \\e]0;title\\a x[/red]\\e[31mred\\x9b2J"\n    op: MaxPool-14\n'
        '    attributes: {kernel: [2], strides: [1]}\n    input: [[[1, 2, 3]]]\n    expected: {values: [[[2, 9]]]}\n'
        '  - id: "y\\e[2J"\n    op: [MaxPool-14]\n', encoding="utf-8")
    proc = _color_cli("run", "d[red]", "--report-dir", "out", cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr  # one bad case: exit 2, the other still judged
    assert "MarkupError" not in proc.stderr and "Traceback" not in proc.stderr
    assert "x[/red]\\x1b[31mred\\x9b2J" in proc.stdout
    assert "y\\x1b[2J" in proc.stderr
    verdicts = {c["case_id"]: c["verdict"] for c in json.loads((tmp_path / "out" / "result.json").read_text())["cases"]}
    assert verdicts["x[/red]red"] == "fail"  # judged: its hostile title reaches every renderer below
    for stream in (proc.stdout, proc.stderr):
        assert not re.search("\x1b(?!\\[[0-9;]*m)", stream)
        assert not re.search("[\x00-\x08\x0b-\x1a\x1c-\x1f\x7f-\x9f]", stream)
    rerender = _color_cli("report", "out/result.json", "--format", fmt, cwd=tmp_path)
    assert rerender.returncode == 0, rerender.stderr
    assert not re.search("\x1b(?!\\[[0-9;]*m)", rerender.stdout)
    assert not re.search("[\x00-\x08\x0b-\x1a\x1c-\x1f\x7f-\x9f]", rerender.stdout)


def test_a_case_that_cannot_render_never_loses_the_others() -> None:
    broken = CaseResult(case_id="broken", verdict="fail", checks=[Check("p", "peer", "fail", "m", [None], 1)])  # type: ignore[list-item]
    good = CaseResult(case_id="fine-case", verdict="fail", checks=[Check("p", "peer", "fail", "still here")])
    result = RunResult(command="poolcheck run x", cases=[broken, good])
    md = to_markdown(result)
    assert "cannot render" in md and "still here" in md
    root = ET.fromstring(to_junit(result).encode("utf-8"))
    assert {tc.get("name") for tc in root.iter("testcase")} >= {"broken", "fine-case"}
    console = Console(width=100, record=True)
    console_report.render(result, console)
    text = console.export_text()
    assert "cannot render" in text and "still here" in text


def test_junit_stays_well_formed_with_controls_in_a_runner_name() -> None:
    """A runner name lands in the suite name, the classname and the RUNNER.version property
    (the last was written raw: a NUL or U+FFFE made junit.xml ill-formed)."""
    for name in ("a\x00b", "p\x01\x0b\x1f\x7f\x9f", "x\ufffe\uffff", "s\udcff"):
        check = Check(name, "peer", "fail", "m", version=f"1{name}", severity="violation")
        result = RunResult(command="c", cases=[CaseResult(case_id="i", verdict="fail", checks=[check])],
                           versions={name: name}, extra={"fingerprint": {"id": "f", "host": name, "cpu": name}})
        text = to_junit(result)
        root = ET.fromstring(text.encode("utf-8"))
        props = {p.get("name") for p in root.iter("property")}
        assert f"{safe(name)}.version" in props, props
