"""The HTML report: one self-contained file (inline CSS, JS and SVG; it loads nothing).

The ``poolcheck.result/2`` document is embedded in a ``<script type="application/json">``
element and drawn by vanilla JavaScript (poolcheck/report/assets/report.js): the summary by
verdict and runner, filters and search, per case the expected and actual outputs side by side
with a heatmap of the differing positions (a 2-D slice of N-d outputs, chosen with selectors),
the receptive window of a chosen output element over the padded input, the erratum record and
the fuzzer's diagnosis. A static summary inside ``<noscript>`` keeps the counts readable without
JavaScript.
"""

from __future__ import annotations

import html
import json
import re
from importlib import resources

from poolcheck.report.jsonfmt import result_document
from poolcheck.report.text import BIDI_CONTROLS, safe
from poolcheck.results import VERDICTS, RunResult


def asset(name: str) -> str:
    """The text of a file in poolcheck/report/assets/."""
    return resources.files("poolcheck.report").joinpath("assets", name).read_text(encoding="utf-8")


def embed_json(data: object) -> str:
    """JSON that can sit inside a ``<script>`` element: ``<``, ``>`` and ``&`` (so no ``</script>``
    or ``<!--``) and the JS line separators are escaped; JSON.parse reads it unchanged."""
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(ch, esc)
    # C1 controls, DEL and the bidirectional overrides (JSON may carry them raw) as escapes too:
    # the page source is inert.
    return re.sub(f"[\x7f-\x9f{BIDI_CONTROLS}]", lambda m: f"\\u{ord(m.group(0)):04x}", text)


def _noscript(result: RunResult) -> str:
    counts = result.counts()
    rows = "".join(f"<tr><td>{v}</td><td>{counts[v]}</td></tr>" for v in VERDICTS if counts.get(v))
    return (f"<noscript><p>{len(result.cases)} case(s). This report draws its views with JavaScript; "
            f"the counts:</p><table>{rows}</table></noscript>")


def to_html(result: RunResult) -> str:
    """Render ``result`` as one self-contained HTML page."""
    title = f"poolcheck {result.kind} report"
    if result.created:
        title += f" ({result.created})"
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="poolcheck {html.escape(safe(result.tool_version))}">
<title>{html.escape(safe(title))}</title>
<style>
{asset("report.css")}
</style>
</head>
<body>
<header id="header"></header>
<main>
{_noscript(result)}
<h2>Verdicts by runner</h2>
<div id="runners"></div>
<h2>Cases</h2>
<div class="controls" id="controls"></div>
<div id="cases"></div>
</main>
<script type="application/json" id="poolcheck-result">{embed_json(result_document(result))}</script>
<script>
{asset("report.js")}
</script>
</body>
</html>
"""
