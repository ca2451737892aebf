"""Shared pytest configuration."""

from __future__ import annotations

# --- hypothesis settings profiles (owner: engine oracle tests) -------------------------------
# Select with POOLCHECK_HYPOTHESIS_PROFILE=dev|ci|nightly (default: dev). Tests set no
# max_examples of their own, so the profile alone decides how hard the properties are pushed.
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

# --- bytecode of the commands the tests start (owner: tests) -----------------------------------
# Much of the suite's time is real commands in subprocesses, each importing poolcheck afresh. Where
# PYTHONDONTWRITEBYTECODE is set (as in many container images) each of them compiled poolcheck's
# sources again; instead they share one bytecode cache outside the working tree.
import tempfile  # noqa: E402

if os.environ.get("PYTHONDONTWRITEBYTECODE") and not os.environ.get("PYTHONPYCACHEPREFIX"):
    del os.environ["PYTHONDONTWRITEBYTECODE"]
    os.environ["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), f"poolcheck-test-pycache-{os.getuid()}")
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
