"""The HTML report: static checks, then the page opened in a real headless Chromium.

Chromium is driven over the Chrome DevTools Protocol through ``--remote-debugging-pipe`` (file
descriptors 3 and 4, NUL-separated JSON), so no driver, websocket library or browser download is
needed. ``make test`` installs Debian's chromium first where it can (root with apt-get: the
``browser`` target); elsewhere these tests skip and say why. ``POOLCHECK_CHROMIUM`` names
another Chrome/Chromium binary; ``POOLCHECK_SCREENSHOT`` keeps the screenshot at that path.
"""

from __future__ import annotations

import base64
import json
import os
import re
import select
import shutil
import struct
import subprocess
import tempfile
import time
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from report_sample import DIAGNOSIS, PEER, sample_result
from support import PLANTED, ROOT, built_once, cli

from poolcheck.report.html import embed_json, to_html
from poolcheck.report.jsonfmt import load_result, result_document
from poolcheck.results import VERDICTS, CaseResult, Check, RunResult, machine_label, machines

TIMEOUT = 20.0


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    return sample_result(tmp_path_factory.mktemp("sample"))


@pytest.fixture(scope="module")
def page_path(result: RunResult, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("html") / "report.html"
    path.write_text(to_html(result), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- static


def test_page_is_self_contained(page_path: Path) -> None:
    text = page_path.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)
    assert not re.search(r"url\(\s*['\"]?(https?:)?//", text)
    assert not re.search(r"@import|<link\b|<script\b[^>]*\bsrc=", text)


def test_embedded_json_is_the_result_document(result: RunResult, page_path: Path) -> None:
    text = page_path.read_text()
    m = re.search(r'<script type="application/json" id="poolcheck-result">(.*?)</script>', text, re.S)
    assert m is not None
    assert json.loads(m.group(1)) == result_document(result)


def test_embedding_survives_script_breakers() -> None:
    nasty = "</script><script>alert(1)</script> <!-- & \u2028"
    r = RunResult(nasty, [CaseResult(nasty, "fail", checks=[Check("x", "engine", "fail", nasty)])])
    page = to_html(r)
    body = page.split('id="poolcheck-result">', 1)[1]
    assert body.index("</script>") > body.index("\\u003c/script\\u003e")
    assert json.loads(embed_json({"m": nasty})) == {"m": nasty}


# --------------------------------------------------------------------------- headless Chromium


def chromium_binary() -> str | None:
    override = os.environ.get("POOLCHECK_CHROMIUM")
    if override:
        return override if shutil.which(override) or Path(override).is_file() else None
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


class Browser:
    """A minimal CDP client over Chromium's --remote-debugging-pipe."""

    def __init__(self, binary: str) -> None:
        self.profile = tempfile.mkdtemp(prefix="poolcheck-chromium-")
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def wire_fds() -> None:  # runs in the child: CDP expects to read fd 3 and write fd 4
            r, w = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(r, 3)
            os.dup2(w, 4)

        self.proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-extensions", "--no-first-run", "--no-default-browser-check", "--mute-audio",
             "--hide-scrollbars", f"--user-data-dir={self.profile}", "about:blank"],
            pass_fds=(3, 4), preexec_fn=wire_fds, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buf = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_chrome)
        os.close(self._from_chrome)
        shutil.rmtree(self.profile, ignore_errors=True)

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no answer from chromium")
            ready, _, _ = select.select([self._from_chrome], [], [], left)
            if ready:
                chunk = os.read(self._from_chrome, 1 << 20)
                if not chunk:
                    raise EOFError("chromium closed the pipe")
                self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None,
             timeout: float = TIMEOUT) -> dict[str, Any]:
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_chrome, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def wait_event(self, method: str, timeout: float = TIMEOUT) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        for i, ev in enumerate(self.events):
            if ev["method"] == method:
                return self.events.pop(i)
        while True:
            msg = self._read(deadline)
            if msg.get("method") == method:
                return msg
            if "method" in msg:
                self.events.append(msg)


class Page:
    def __init__(self, browser: Browser, url: str) -> None:
        self.b = browser
        target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.s = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page", "Network"):
            self.cmd(f"{domain}.enable")
        self.cmd("Emulation.setDeviceMetricsOverride", {"width": 1280, "height": 1000, "deviceScaleFactor": 1,
                                                         "mobile": False})
        self.cmd("Page.navigate", {"url": url})
        browser.wait_event("Page.loadEventFired")
        self.wait_for("document.body && document.body.dataset.ready === '1'")

    def cmd(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.b.send(method, params, session=self.s)

    def js(self, expression: str) -> Any:
        reply = self.cmd("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in reply:
            raise AssertionError(f"{expression}: {reply['exceptionDetails']}")
        return reply["result"].get("value")

    def wait_for(self, expression: str, timeout: float = TIMEOUT) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = self.js(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {expression}")
            time.sleep(0.05)

    def click(self, selector: str) -> None:
        """A real mouse click (press + release) at the centre of the element."""
        box = self.js(f"""(() => {{ const e = document.querySelector({json.dumps(selector)});
            if (!e) return null; e.scrollIntoView({{block: 'center'}});
            const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()""")
        assert box is not None, f"no element {selector}"
        for kind in ("mousePressed", "mouseReleased"):
            self.cmd("Input.dispatchMouseEvent", {"type": kind, "x": box[0], "y": box[1], "button": "left",
                                                  "clickCount": 1})

    def type_into(self, selector: str, text: str) -> None:
        self.click(selector)
        self.cmd("Input.insertText", {"text": text})

    def problems(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries seen so far."""
        return problems(self.b.events)

    def requested_urls(self) -> list[str]:
        return [ev["params"]["request"]["url"] for ev in self.b.events if ev["method"] == "Network.requestWillBeSent"]

    def screenshot(self, scale: float = 1.0) -> bytes:
        params: dict[str, Any] = {"format": "png"}
        if scale != 1.0:
            params["clip"] = {"x": 0, "y": 0, "width": 1280, "height": 1000, "scale": scale}
        return base64.b64decode(self.cmd("Page.captureScreenshot", params)["data"])


def problems(events: list[dict[str, Any]]) -> list[str]:
    """Console errors, uncaught exceptions and error log entries among CDP ``events``."""
    out = []
    for ev in events:
        p = ev.get("params", {})
        if ev["method"] == "Runtime.exceptionThrown":
            out.append(json.dumps(p.get("exceptionDetails", {}))[:500])
        elif ev["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert", "warning"):
            out.append(" ".join(str(a.get("value", a.get("description"))) for a in p.get("args", [])))
        elif ev["method"] == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            out.append(p["entry"].get("text", ""))
    return out


def png_pixels(data: bytes) -> np.ndarray:
    """Decode an 8-bit RGB/RGBA PNG (what Chromium writes) into an (H, W, C) array."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    height = depth = ctype = 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, ctype = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    assert depth == 8 and ctype in (2, 6), (depth, ctype)
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    prev = bytearray(stride)
    rows = []
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return np.frombuffer(b"".join(rows), dtype=np.uint8).reshape(height, width, bpp)


@pytest.fixture(scope="module")
def browser() -> Any:
    binary = chromium_binary()
    if binary is None:
        pytest.skip("no Chromium here: `make browser` installs Debian's chromium (needs root and apt-get); "
                    "or set POOLCHECK_CHROMIUM to a Chrome/Chromium binary")
    b = Browser(binary)
    try:
        b.send("Browser.getVersion")
    except (EOFError, TimeoutError) as exc:
        b.close()
        pytest.skip(f"{binary} did not start in headless mode: {exc}")
    yield b
    b.close()


@pytest.fixture()
def page(browser: Browser, page_path: Path) -> Page:
    browser.events.clear()
    return Page(browser, page_path.as_uri())


def _shown(page: Page) -> list[str]:
    return page.js("[...document.querySelectorAll('details.case')].filter(d => !d.hidden).map(d => d.dataset.caseId)")


def test_counts_shown_match_the_result(page: Page, result: RunResult) -> None:
    counts = result.counts()
    shown = page.js("""Object.fromEntries([...document.querySelectorAll('#verdict-chips .chip')]
        .map(b => [b.dataset.verdict, [Number(b.dataset.count), b.querySelector('b').textContent]]))""")
    assert shown == {v: [counts[v], str(counts[v])] for v in VERDICTS}
    assert page.js("document.getElementById('total-count').textContent") == f"{len(result.cases)} case(s):"
    assert page.js("document.getElementById('shown-count').textContent") == \
        f"{len(result.cases)} of {len(result.cases)} case(s) shown"
    table = page.js("""[...document.querySelectorAll('#runner-table td[data-runner]')]
        .map(td => [td.dataset.runner, td.dataset.verdict, td.textContent])""")
    assert table, "runner table is empty"
    for runner, verdict, text in table:
        want = sum(1 for c in result.cases for k in c.checks if k.runner == runner and k.verdict == verdict)
        assert text == str(want), (runner, verdict)
    assert {r for r, _, _ in table} == {"numpy", PEER}
    assert _shown(page) == [c.case_id for c in result.cases]
    assert page.problems() == []


def test_filters_change_what_is_shown(page: Page, result: RunResult) -> None:
    page.click("#count-fail")
    fails = [c.case_id for c in result.cases if c.verdict == "fail"]
    page.wait_for(f"document.getElementById('shown-count').dataset.shown === '{len(fails)}'")
    assert _shown(page) == fails
    page.click("#count-fail")  # a second click clears the filter
    page.wait_for(f"document.getElementById('shown-count').dataset.shown === '{len(result.cases)}'")

    page.click(f"#runner-table td[data-runner='{PEER}'][data-verdict='rejects'] button")
    rejects = [c.case_id for c in result.cases if any(k.runner == PEER and k.verdict == "rejects" for k in c.checks)]
    page.wait_for(f"document.getElementById('shown-count').dataset.shown === '{len(rejects)}'")
    assert _shown(page) == rejects
    assert page.js("document.getElementById('runner-filter').value") == PEER

    page.click("#clear-filters")
    page.type_into("#search", "3d-peer")
    page.wait_for("document.getElementById('shown-count').dataset.shown === '1'")
    assert _shown(page) == ["max3d-peer-crash"]
    page.click("#clear-filters")
    page.type_into("#search", DIAGNOSIS[:30].upper())  # case-insensitive, searches diagnoses too
    page.wait_for("document.getElementById('shown-count').dataset.shown === '1'")
    assert _shown(page) == ["max2d-ceil-peer-fail"]
    assert page.problems() == []


def _slice_differences(check: Check, output: str, n: int, c: int) -> int:
    e = np.asarray(check.expected[output], dtype=object)[n, c]
    a = np.asarray(check.actual[output], dtype=object)[n, c]
    return sum(1 for x, y in zip(e.ravel(), a.ravel()) if not (x == y or (x == "nan" and y == "nan")))


def test_side_by_side_heatmap_and_window(page: Page, result: RunResult) -> None:
    case = next(c for c in result.cases if c.case_id == "max2d-ceil-peer-fail")
    check = next(k for k in case.checks if k.runner == PEER)
    sel = "details.case[data-case-id='max2d-ceil-peer-fail']"
    # The most severe failing case with differing positions is open from the start.
    page.wait_for(f"document.querySelector(\"{sel} .grid-heatmap\") !== null")
    assert page.js(f"document.querySelector(\"{sel} .box.diagnosis\").textContent") == "Diagnosis: " + DIAGNOSIS
    assert page.js(f"document.querySelector(\"{sel} .check-select\").selectedOptions[0].textContent") == f"{PEER} (fail)"
    # Heatmap of slice (n=0, c=0), then c=1 through the selector.
    first = check.diffs[0]
    assert first.position[:2] == [0, 0]
    assert page.js(f"Number(document.querySelector(\"{sel} .grid-heatmap\").dataset.differing)") == \
        _slice_differences(check, "values", 0, 0)
    differing = page.js(f"[...document.querySelectorAll(\"{sel} .grid-actual td.differs\")].map(td => td.dataset.pos)")
    assert ",".join(map(str, first.position)) in differing
    page.js(f"""(() => {{ const s = document.querySelector("{sel} .slice-select[data-axis='c']");
        s.value = '1'; s.dispatchEvent(new Event('change')); }})()""")
    page.wait_for(f"document.querySelector(\"{sel} .grid-actual td[data-pos='0,1,0,0']\") !== null")
    assert page.js(f"Number(document.querySelector(\"{sel} .grid-heatmap\").dataset.differing)") == \
        _slice_differences(check, "values", 0, 1) == 1
    assert page.js(f"document.querySelector(\"{sel} .grid-actual td[data-pos='0,1,0,1']\").textContent") == "NaN"

    # The window of the first differing element: the taps and their kinds are Diff.window's.
    page.click(f"{sel} .diff-row button")
    page.wait_for(f"document.querySelector(\"{sel} .window-svg\") !== null")
    taps = page.js(f"""[...document.querySelectorAll("{sel} .window-svg g.wtap")]
        .map(g => [g.dataset.coords, [...g.classList].find(k => k.startsWith('wcell-')).slice(6)])""")
    assert sorted(taps) == sorted([",".join(map(str, w.coords)), w.kind] for w in first.window)
    assert {k for _, k in taps} == {"input", "pad", "overhang"}
    assert page.js(f"document.querySelector(\"{sel} .window-mismatch\")") is None
    # Padding and overhang are marked over the whole padded input (-1 .. 5 on both axes).
    kinds = Counter(page.js(f"""[...document.querySelectorAll("{sel} .window-svg g.wcell")]
        .map(g => [...g.classList].find(k => k.startsWith('wcell-')).slice(6))"""))
    assert kinds == {"input": 16, "pad": 20, "overhang": 13}

    # Clicking another element (0, 0, 0, 0) of the actual grid: its implied argmax is the tap
    # that holds the runner's value.
    page.click(f"{sel} .grid-actual td[data-pos='0,0,0,0']")
    page.wait_for(f"document.querySelector(\"{sel} .window-svg g.wchosen\") !== null")
    chosen = page.js(f"document.querySelector(\"{sel} .window-svg g.wchosen\").dataset.coords")
    value = check.actual["values"][0][0][0][0]
    ii, jj = (int(v) for v in chosen.split(","))
    assert np.asarray(case.input)[0, 0, ii, jj] == value
    assert page.problems() == []


def test_3d_case_window_has_one_grid_per_depth(page: Page) -> None:
    sel = "details.case[data-case-id='max3d-peer-crash']"
    page.click(f"{sel} > summary")
    page.wait_for(f"document.querySelector(\"{sel} .check-select\") !== null")
    # The crashed peer stored no output: say so, then switch to the engine's check.
    assert "No stored values" in page.js(f"document.querySelector(\"{sel} .tensor-view\").textContent")
    page.js(f"""(() => {{ const s = document.querySelector("{sel} .check-select");
        s.value = '0'; s.dispatchEvent(new Event('change')); }})()""")
    page.wait_for(f"document.querySelector(\"{sel} .grid-actual\") !== null")
    assert page.js(f"[...document.querySelectorAll(\"{sel} .slice-select\")].map(s => s.dataset.axis)") == ["n", "c", "d1"]
    page.js(f"""(() => {{ const s = document.querySelector("{sel} .slice-select[data-axis='d1']");
        s.value = '1'; s.dispatchEvent(new Event('change')); }})()""")
    page.click(f"{sel} .grid-actual td[data-pos='0,0,1,1,1']")
    page.wait_for(f"document.querySelectorAll(\"{sel} .window-svg\").length === 2")
    # Depth taps of output d=1 (kernel 2, stride 2, 3 + pads_end 1): 2 (input) and 3 (pads_end).
    labels = page.js(f"[...document.querySelectorAll(\"{sel} .window-grids h4\")].map(h => h.textContent)")
    assert labels == ["leading coordinate(s) 2 (input)", "leading coordinate(s) 3 (pad)"]
    assert page.problems() == []


def test_screenshot_is_not_blank_and_nothing_is_fetched(page: Page, page_path: Path) -> None:
    full = page.screenshot()
    keep = os.environ.get("POOLCHECK_SCREENSHOT")
    (Path(keep) if keep else page_path.with_suffix(".png")).write_bytes(full)
    px = png_pixels(page.screenshot(scale=0.25))[:, :, :3]
    colours = Counter(map(bytes, px.reshape(-1, 3)))
    _, n_bg = colours.most_common(1)[0]
    assert len(colours) >= 16, "screenshot has almost no colours"
    assert 1 - n_bg / (px.shape[0] * px.shape[1]) > 0.05, "screenshot is almost all one colour"
    assert all(u.startswith(("file:", "data:", "about:")) for u in page.requested_urls()), page.requested_urls()
    assert page.problems() == []


def test_results_without_geometry_still_show_stored_windows(browser: Browser, result: RunResult, tmp_path: Path) -> None:
    """Older poolcheck.result/1 documents have no case geometry or input: windows come from the
    stored differing positions alone."""
    import copy

    old = copy.deepcopy(result)
    for c in old.cases:
        c.geometry = None
        c.input = None
    path = tmp_path / "old.html"
    path.write_text(to_html(old), encoding="utf-8")
    browser.events.clear()
    page = Page(browser, path.as_uri())
    sel = "details.case[data-case-id='max2d-ceil-peer-fail']"
    page.wait_for(f"document.querySelector(\"{sel} .window-svg\") !== null")
    check = next(k for c in old.cases if c.case_id == "max2d-ceil-peer-fail" for k in c.checks if k.runner == PEER)
    taps = page.js(f"[...document.querySelectorAll(\"{sel} .window-svg g.wtap\")].map(g => g.dataset.coords)")
    assert sorted(taps) == sorted(",".join(map(str, w.coords)) for w in check.diffs[0].window)
    page.click(f"{sel} .grid-actual td[data-pos='0,0,0,0']")  # not a stored diff: no window to draw
    page.wait_for(f"document.querySelector(\"{sel} .window-view\").textContent.includes('no geometry')")
    assert page.problems() == []


def test_average_window_shows_the_implied_divisor(page: Page, result: RunResult) -> None:
    case = next(c for c in result.cases if c.case_id == "avg2d-doc-fail")
    check = next(k for k in case.checks if k.runner == "numpy")
    d = check.diffs[0]
    assert d.position == [0, 0, 0, 0]
    taps = [w for w in d.window if w.kind == "input"]
    total = sum(w.value for w in taps)
    sel = "details.case[data-case-id='avg2d-doc-fail']"
    page.click(f"{sel} > summary")
    page.wait_for(f"document.querySelector(\"{sel} .window-view dl\") !== null")
    facts = page.js(f"document.querySelector(\"{sel} .window-view dl\").textContent")
    # Kernel 2x2 with pads_begin 1: the corner window holds one input tap and three padding taps.
    assert f"window taps{len(d.window)} = {len(taps)} input + 3 padding + 0 past pads_end" in facts
    assert f"numpy: {total / d.actual:g}" in facts and "document: 0.11111" in facts
    assert page.problems() == []


# --------------------------------------------------------------------------- every producer's page
# The pages poolcheck itself writes, made by the real commands: run, fuzz on this machine (one
# process and --jobs 2), fuzz on a Dask cluster, audit, and report merge. Each must draw its
# tables with no console error (a fuzz or merged page once stopped at its header:
# ``prints.filter is not a function``).

PRODUCERS = ("run", "fuzz", "fuzz-jobs", "fuzz-cluster", "audit", "merge")


def _poolcheck(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return cli(*args, cwd=cwd, env=env, plain=False)


def _audit_model(path: Path) -> Path:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 5, 5])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("MaxPool", ["x"], ["m"], name="mp", kernel_shape=[3, 3], strides=[3, 3],
                              pads=[1, 1, 1, 1], ceil_mode=1),
             helper.make_node("AveragePool", ["m"], ["y"], name="ap", kernel_shape=[2, 2], pads=[1, 1, 0, 0])]
    model = helper.make_model(helper.make_graph(nodes, "g", [x], [y]), opset_imports=[helper.make_opsetid("", 22)])
    model.ir_version = 10
    onnx.save(model, str(path))
    return path


@pytest.fixture(scope="module")
def produced(browser: Browser, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Report folders written by the real commands, by producer (once per session)."""
    tmp = built_once(tmp_path_factory, "producers", _produce)
    return {name: tmp / name for name in PRODUCERS}


def _produce(tmp: Path) -> None:
    env = {**os.environ, "POOLCHECK_DATA_DIR": str(tmp / "data"), "COLUMNS": "100"}
    peer = str(PLANTED / "pads_swapped.py")
    fuzz = ("fuzz", "--peers", peer, "--ops", "maxpool", "--oracles", "peers", "--exit-first", "--time-budget", "40s",
            "--no-progress")
    commands: dict[str, tuple[tuple[str, ...], tuple[int, ...]]] = {
        "run": (("run", str(ROOT / "cases" / "seeds" / "openvino-maxpool8.yaml"), "--peers", peer,
                 "--report-dir", "run"), (0, 1)),
        "fuzz": ((*fuzz, "--seed", "1", "--report", "fuzz"), (1,)),
        "fuzz-jobs": ((*fuzz, "--seed", "2", "--jobs", "2", "--report", "fuzz-jobs"), (1,)),
        "audit": (("audit", str(_audit_model(tmp / "two.onnx")), "--peers", str(PLANTED / "divisor_counts_padding.py"),
                   "--report-dir", "audit"), (1,)),
    }
    for name, (args, codes) in commands.items():
        out = _poolcheck(*args, cwd=tmp, env=env)
        assert out.returncode in codes, (name, out.stdout[-2000:], out.stderr[-2000:])
    from test_cluster import Cluster  # a dask scheduler and workers on loopback (skips without dask)

    cluster = Cluster(2, tmp)
    try:
        out = _poolcheck(*fuzz, "--seed", "3", "--cluster", cluster.address, "--report", "fuzz-cluster", cwd=tmp,
                         env=env)
    finally:
        cluster.close()
    assert out.returncode == 1, out.stdout[-2000:] + out.stderr[-2000:]
    out = _poolcheck("report", "merge", "run/result.json", "fuzz/result.json", "fuzz-cluster/result.json",
                     "--report-dir", "merge", cwd=tmp, env=env)
    assert out.returncode == 0, out.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("producer", PRODUCERS)
def test_every_producers_page_draws_its_tables(browser: Browser, produced: dict[str, Path], producer: str) -> None:
    document = json.loads((produced[producer] / "result.json").read_text())
    schema = json.loads((ROOT / "docs" / "report-schema.json").read_text())
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator(schema).validate(document)
    result = load_result(produced[producer] / "result.json")
    browser.events.clear()
    try:
        page = Page(browser, (produced[producer] / "report.html").as_uri())
    except AssertionError as exc:
        raise AssertionError(f"{producer}: the page never finished drawing: {problems(browser.events)}") from exc
    assert page.problems() == []
    runners = {k.runner for c in result.cases for k in c.checks}
    drawn = page.js("[...document.querySelectorAll('#runner-table td[data-runner]')].map(td => td.dataset.runner)")
    assert runners and set(drawn) == runners, (producer, drawn)
    assert page.js("document.querySelectorAll('#verdict-chips .chip').length") == len(VERDICTS)
    assert page.js("document.querySelectorAll('details.case').length") == len(result.cases) > 0
    # the machines: one per fingerprint, labelled as the other formats label them
    shown = page.js("[...document.querySelectorAll('.machine')].map(e => e.textContent)")
    assert len(shown) == len(machines(result)) >= 1
    if producer == "merge":  # run, fuzz and cluster results of this one machine: one machine
        assert len(shown) == 1, shown
    assert "; ".join(s.removeprefix("machine ") for s in shown) == machine_label(result)
    # a campaign's hits per spec region: one row per region the options can reach or not
    regions = page.js("[...document.querySelectorAll('#coverage-table tr[data-region]')].map(r => r.dataset.region)")
    fz = result.fuzz
    if fz is not None and fz.coverage_reachable:
        assert regions == [*fz.coverage_reachable, *fz.coverage_unreachable], (producer, regions)
    else:
        assert regions == [], (producer, regions)
    assert page.problems() == []


#: Markup that would run script if any text reached the page as HTML, plus controls and markup
#: of the other formats.
PAYLOAD = '"><img src=x onerror="window.__owned=1"><script>window.__owned=2</script>\x1b[31m[/red]\u2028\u202e\u2066'


def test_hostile_text_stays_text_in_the_browser(browser: Browser, tmp_path: Path) -> None:
    """Every text of a result (ids, titles, sources, messages, runners, diagnoses, versions, tags,
    the erratum, the machine) shown in a real page is text: no element from it, no script run."""
    from poolcheck.results import Diff

    check = Check(f"peer{PAYLOAD}", "peer", "fail", f"message{PAYLOAD}", [Diff("values", [0, 0, 0], 1.0, 2.0)], 1,
                  diagnosis=f"diagnosis{PAYLOAD}", version=f"v{PAYLOAD}", severity="violation")
    case = CaseResult(case_id=f"id{PAYLOAD}", verdict="fail", title=f"title{PAYLOAD}", source=f"s{PAYLOAD}.yaml:3",
                      op=f"MaxPool{PAYLOAD}", convention=f"c{PAYLOAD}", dtype=f"d{PAYLOAD}", tags=[f"tag{PAYLOAD}"],
                      checks=[check], message=f"note{PAYLOAD}", replay=f"poolcheck run '{PAYLOAD}'",
                      spec={"op": PAYLOAD, "kernel": [PAYLOAD]}, input_shape=[1, 1, 2],
                      erratum={"says": f"says{PAYLOAD}", "why": f"why{PAYLOAD}", "correct": {}})
    fp = {"id": "f1", "host": f"host{PAYLOAD}", "cpu": f"cpu{PAYLOAD}", "isa": [f"isa{PAYLOAD}"]}
    result = RunResult(command=f"poolcheck run {PAYLOAD}", cases=[case], versions={f"pkg{PAYLOAD}": f"1{PAYLOAD}"},
                       created=f"now{PAYLOAD}", tool_version=PAYLOAD, extra={"fingerprint": fp})
    path = tmp_path / "hostile.html"
    path.write_text(to_html(result), encoding="utf-8")
    browser.events.clear()
    page = Page(browser, path.as_uri())
    sel = "details.case"
    page.click(f"{sel} > summary")
    page.wait_for(f"document.querySelector('{sel} .check-select, {sel} .box') !== null")
    assert page.js("window.__owned === undefined")
    assert page.js("document.querySelectorAll('img, iframe, object, embed').length") == 0
    assert page.js("document.querySelectorAll('script').length") == 2  # the document and the page's own
    text = page.js("(() => { const b = document.body.cloneNode(true); b.querySelectorAll('script').forEach(s => s.remove()); "
                   "return b.textContent; })()")
    shown = PAYLOAD.replace("\x1b", "\\x1b").replace("\u2028", "\\u2028").replace("\u202e", "\\u202e")
    shown = shown.replace("\u2066", "\\u2066")
    for what in ("id", "title", "message", "diagnosis", "host", "pkg", "says", "why"):
        assert f"{what}{shown}" in text, what
    assert page.problems() == []


def test_a_window_too_large_to_draw_is_described(browser: Browser, result: RunResult, tmp_path: Path) -> None:
    """A geometry whose window has 10^18 taps (a hostile or a huge case) is described in one line
    instead of drawn (drawing it froze the page)."""
    import copy

    big = copy.deepcopy(result)
    case = next(c for c in big.cases if c.case_id == "max2d-ceil-peer-fail")
    for axis in case.geometry or []:
        axis["kernel"] = 10**9
    path = tmp_path / "big.html"
    path.write_text(to_html(big), encoding="utf-8")
    browser.events.clear()
    page = Page(browser, path.as_uri())
    sel = "details.case[data-case-id='max2d-ceil-peer-fail']"
    page.wait_for(f"document.querySelector(\"{sel} .grid-actual td[data-pos='0,0,0,0']\") !== null")
    page.click(f"{sel} .grid-actual td[data-pos='0,0,0,0']")
    page.wait_for(f"document.querySelector(\"{sel} .window-view\").textContent.includes('too many to draw')")
    assert "1000000000x1000000000" in page.js(f"document.querySelector(\"{sel} .window-view\").textContent")
    assert page.problems() == []
