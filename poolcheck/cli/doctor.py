"""``poolcheck doctor``: which engines and peers can run here, their versions, and why not."""

from __future__ import annotations

import json
import platform
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

import poolcheck
from poolcheck.cli.common import console
from poolcheck.engines import c_engine_status
from poolcheck.peers.isolation import describe_in_process
from poolcheck.peers.registry import all_peers, peer_kind, peer_options


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)


def environment_report() -> dict[str, Any]:
    """Engines and peers with availability, version and reason (no printing)."""
    import numpy as np


    engines: list[dict[str, Any]] = [
        {"name": "numpy", "available": True, "version": np.__version__, "reason": ""},
    ]
    c_module, c_reason = c_engine_status()
    engines.append({
        "name": "c",
        "available": c_module is not None,
        "version": (getattr(c_module, "__version__", None) or poolcheck.__version__) if c_module is not None else None,
        "reason": c_reason,
    })
    peers: list[dict[str, Any]] = []
    for peer in all_peers():
        facts = describe_in_process(peer)  # this environment, as the command checks it
        peers.append({"name": peer.name, "kind": peer_kind(peer), "available": facts.available,
                      "version": facts.version, "reason": facts.why,
                      "options": [o.describe() for o in peer_options(peer)]})
    return {
        "poolcheck": poolcheck.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "engines": engines,
        "peers": peers,
    }


def doctor(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """List engines and peers (ONNX Runtime, OpenVINO, PyTorch, onnx.reference, installed
    plugins) with their versions, and why any of them cannot run here."""
    report = environment_report()
    if as_json:
        typer.echo(json.dumps(report, indent=2))
        return
    console.print(Text.assemble(("poolcheck ", "bold"), report["poolcheck"],
                                f"  (Python {report['python']}, {report['platform']})"))
    table = Table(show_lines=False)
    table.add_column("kind", no_wrap=True)
    table.add_column("name", overflow="fold", min_width=13, ratio=1)
    table.add_column("status", no_wrap=True, min_width=11)
    table.add_column("version", overflow="fold", max_width=12)
    table.add_column("options / note", overflow="fold", ratio=2)
    for kind, rows in (("engine", report["engines"]), ("peer", report["peers"])):
        for row in rows:
            status = Text("available", "green") if row["available"] else Text("unavailable", "bold red")
            label = kind if kind == "engine" else ("peer" if row["kind"] == "built-in" else row["kind"])
            options = row.get("options") or []
            note = "\n".join(([str(o).replace("|", " | ") for o in options] if kind == "peer" else [])
                             + ([row["reason"]] if row["reason"] else []))
            table.add_row(Text(label), Text(row["name"]), status, Text(row["version"] or "-"), Text(note))
    console.print(table)
