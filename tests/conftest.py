"""Shared pytest configuration: hypothesis profiles, the engine fixture, the data folder, and the
folders the suite is grouped in.

The tests are grouped by the floor they exercise (docs/architecture.md):

- ``engines/``: spec, engines, judgement, results, the ground floor (and the floors test);
- ``peers/``: the runtime adapters, plugins, isolation, the registry;
- ``fuzz/``: strategies, oracles, diagnosis, sessions and campaigns;
- ``cli/``: case files, reports and the commands, in-process and as real commands;
- ``slow/``: long end-to-end runs (fuzz campaigns against planted bugs, clusters, browsers,
  ONNX's test data), marked ``slow`` as a whole.

``make test-fast`` runs everything not marked ``slow`` (the inner loop); ``make test`` runs all.
What several files share lives in ``support.py`` (paths, the real command, a peer or a skip).
"""

from __future__ import annotations

# --- hypothesis settings profiles (owner: engine oracle tests) -------------------------------
# Select with POOLCHECK_HYPOTHESIS_PROFILE=dev|ci|nightly (default: dev). The profile decides how
# many examples a property test runs when the test sets no max_examples of its own. These set
# their own (a floor that follows the profile when it asks for more, or a fixed count):
#   follow the profile above a floor: engines/test_c_engine.py (fixtureless properties: 300),
#     engines/test_spec_operators.py (60 per catalogue row);
#   fixed: engines/test_judgement.py (60), engines/test_family_engines.py (60),
#     engines/test_bfloat16.py (60; the cast property 400), engines/test_family_bfloat16.py (60),
#     fuzz/test_hypothesis_compat.py (50: a seeded test that must find its failure),
#     cli/test_cases_yaml.py (200), fuzz/test_fuzz_coverage.py (300 and 200),
#     fuzz/test_fuzz_strategies.py (30), fuzz/test_fuzz_family.py (150),
#     fuzz/test_fuzz_generation.py (300, seeded: the draws themselves are compared),
#     fuzz/test_fuzz_batching.py (seeded draws of 40 and 60; a find within 500),
#     slow/test_extreme_attributes.py (its subprocess's count, given on the command line);
#   reach tests (support.drawn: fuzz/test_fuzz_coverage.py, fuzz/test_fuzz_strategies.py): up to
#     3000 draws until one meets the condition, without shrinking.
# FuzzOptions(max_examples=...) in the fuzz tests is the size of a fuzz campaign under test, not
# a hypothesis setting of the test.
import os

from hypothesis import settings

settings.register_profile("dev", max_examples=40, deadline=None)
settings.register_profile("ci", max_examples=40, deadline=None, derandomize=True, print_blob=True)
settings.register_profile("nightly", max_examples=1000, deadline=None)
settings.load_profile(os.environ.get("POOLCHECK_HYPOTHESIS_PROFILE", "dev"))
# --- end hypothesis settings profiles ---------------------------------------------------------

# --- engine fixture (owner: C engine) ----------------------------------------------------------
# ``engine`` yields every concrete engine name: "numpy", and "c" (skipped, with the loader's
# reason, when the C extension is not available). Use it to run a test against both engines.
import pytest  # noqa: E402  (kept inside this fixture's section)


@pytest.fixture(params=["numpy", "c"])
def engine(request: pytest.FixtureRequest) -> str:
    """The engine under test, as a name for ``engine=`` / :func:`poolcheck.engines.get_engine`."""
    if request.param == "c":
        from poolcheck.engines import c_engine_status

        module, reason = c_engine_status()
        if module is None:
            pytest.skip(f"C engine not available: {reason}")
    return str(request.param)
# --- end engine fixture -------------------------------------------------------------------------

# --- bytecode of the tests and the commands they start (owner: tests) ---------------------------
# Where PYTHONDONTWRITEBYTECODE is set (as in many container images), every pytest process (each
# xdist worker) compiled poolcheck's sources and re-rewrote every test module's asserts again (a
# third of collection's CPU), and every real command in a subprocess compiled poolcheck again.
# Instead all of them share one bytecode cache outside the working tree: this process from here on
# (the test modules and poolcheck are imported after this file), the subprocesses through the
# environment they inherit.
import sys  # noqa: E402
import tempfile  # noqa: E402

if os.environ.get("PYTHONDONTWRITEBYTECODE") and not os.environ.get("PYTHONPYCACHEPREFIX"):
    del os.environ["PYTHONDONTWRITEBYTECODE"]
    os.environ["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), f"poolcheck-test-pycache-{os.getuid()}")
if sys.dont_write_bytecode and os.environ.get("PYTHONPYCACHEPREFIX"):
    sys.pycache_prefix = os.environ["PYTHONPYCACHEPREFIX"]
    sys.dont_write_bytecode = False
# --- end bytecode of the commands the tests start ------------------------------------------------

# --- per-user data folder (owner: fuzz) ---------------------------------------------------------
# Commands write finds and the example database to the per-user data folder by default; tests
# (and the subprocesses they start, which inherit the environment) use a throw-away one instead.

os.environ.setdefault("POOLCHECK_DATA_DIR", tempfile.mkdtemp(prefix="poolcheck-test-data-"))


@pytest.fixture(autouse=True)
def _own_data_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test its own data folder: no example database or find leaks from one test to another."""
    monkeypatch.setenv("POOLCHECK_DATA_DIR", str(tmp_path_factory.mktemp("poolcheck-data")))
# --- end per-user data folder --------------------------------------------------------------------

# --- slow tests (owner: tests) --------------------------------------------------------------------
# ``make test-fast`` (-m "not slow") is the inner loop: it must stay under a minute on two cores.
# Marked slow: everything under tests/slow/, and below, by file or file::test, the tests of the
# other folders that start many real commands or campaigns (measured with --durations=0: these
# took 60 % of the non-slow folders' time).
SLOW_FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "slow")
SLOW_TESTS = frozenset({
    "test_run_robust.py", "test_audit.py", "test_peers_hostile.py", "test_report_merge.py", "test_fuzz_cli.py",
    "test_report_hostile.py", "test_shape_cli.py",
    "test_audit_family.py", "test_shape_family.py",
    "test_cases_files.py::test_run_cases_exits_0", "test_cases_files.py::test_every_documented_example_has_its_recorded_verdict",
    "test_peers_new.py::test_doctor_lists_the_new_peers", "test_peers_options.py::test_doctor_lists_options",
    "test_peers_new.py::test_new_peer_agrees_with_the_engine_where_it_runs",
    "test_bench.py::test_real_command_reports_the_ratios",
    "test_cli_80_columns.py", "test_hostile_options.py",
    # real commands from other folders, a fuzz campaign through the CLI, modules that kill their worker
    "test_fuzz_replay_paths.py", "test_fuzz_dtypes_cli.py", "test_bfloat16.py::test_fuzz_campaign_on_bfloat16_through_the_cli",
    "test_peers_onnx_backend.py::test_a_module_that_exits_crashes_or_hangs_at_import_is_contained",
    "test_peers_onnx_backend.py::test_a_planted_backend_bug_is_a_failure_through_run",
    # the longest of the rest (make test's --durations, 2 workers): every family entry's script run
    # on its runtime, the family peers and the frontend step through the real command, module
    # loading errors through the real command
    "test_family_repro.py::test_a_family_script_exits_0_where_the_runtime_agrees",
    "test_family_peers.py::test_run_judges_family_cases_on_peers_through_the_cli",
    "test_peers_new.py::test_run_names_the_frontend_step_in_the_verdict",
    "test_peers_options.py::test_run_reports_the_canonical_name",
    "test_peers_onnx_backend.py::test_a_module_that_is_no_backend_is_a_usage_error",
    # the fast set's longest after the family grew (test-fast --durations=0, 2 workers, quiet: these
    # took a third of its time): the family on real runtimes and the chains, family campaigns,
    # isolated workers that time out or are killed
    "test_torch_onnx_family.py", "test_family_versions.py", "test_family_versions_cli.py",
    "test_plugin_family.py::test_a_planted_family_kernel_is_found_by_a_family_campaign",
    "test_plugin_family.py::test_a_faithful_family_plugin_stays_silent_in_a_family_campaign",
    "test_fuzz_family.py::test_each_planted_family_bug_is_found_first_and_named",
    "test_fuzz_family.py::test_a_faithful_family_peer_stays_silent",
    "test_peers_isolation.py::test_submitted_batch_runs_while_the_caller_works_and_pins_failures",
    "test_peers_isolation.py::test_batch_pins_each_failure_on_its_item",
    "test_peers_isolation.py::test_submitted_timeout_counts_from_the_submission",
    "test_peers_isolation.py::test_hanging_peer_times_out",
    "test_peers_onnx_backend.py::test_onnxruntime_backend_isolated_and_named_by_its_module",
})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark ``slow`` every test under tests/slow/ and every one :data:`SLOW_TESTS` names; then run
    the files that are slow as a whole first (each file's tests stay together, in their order)."""
    slow_files = set()
    for item in items:
        name = getattr(item, "originalname", item.name)
        whole = str(item.path).startswith(SLOW_FOLDER + os.sep) or item.path.name in SLOW_TESTS
        if whole or f"{item.path.name}::{name}" in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
        if whole:
            slow_files.add(item.path)
    # pytest-xdist (--dist loadfile, the Makefile) hands out whole files in this order as workers
    # come free: a file of tens of seconds handed out last (tests/slow/ comes last in folder
    # order) would hold the run's end while the other worker idles.
    items.sort(key=lambda item: item.path not in slow_files)
# --- end slow tests -------------------------------------------------------------------------------
