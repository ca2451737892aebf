"""``poolcheck bench``: named pooling workloads timed side by side, single-threaded, for
poolcheck's engines and every installed runtime; every output checked before it is timed.

    from poolcheck.bench import WORKLOADS, run_bench, select
    run = run_bench(select(["W1", "W3"]), reps=100)
"""

from poolcheck.bench.measure import BenchRun, Result, Timing, WorkloadResult, run_bench
from poolcheck.bench.targets import Target, evaluate
from poolcheck.bench.workloads import WORKLOADS, Workload, select

__all__ = [
    "WORKLOADS",
    "BenchRun",
    "Result",
    "Target",
    "Timing",
    "Workload",
    "WorkloadResult",
    "evaluate",
    "run_bench",
    "select",
]
