"""benchmarks/fuzz_throughput.py reads what a real campaign prints and counts the distinct
configurations in every fuzzing process, ``--jobs`` workers included."""

from __future__ import annotations

import importlib.util
import sys

from support import ROOT


def _tool():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("fuzz_throughput", ROOT / "benchmarks" / "fuzz_throughput.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_a_campaign_is_read_and_its_distinct_configurations_counted_in_every_job() -> None:
    tool = _tool()
    for jobs in (1, 2):
        run = tool.run_one(ROOT, "none", jobs, 3, 30.0, ["--max-examples", "4"])
        assert run.status == 0, run
        assert run.configs > 0 and run.rate > 0 and run.distinct_rate > 0
        # with --jobs 2 the parent checks nothing: only the workers' counts make this nonzero
        assert 0 < run.distinct <= run.configs, run
    assert "logical CPUs" in tool.cpu_line()
