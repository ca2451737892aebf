"""Reference engines. ``get_engine("numpy" | "c" | "auto")`` returns a module-like object with
``max_pool(x, geom, layout, policy)`` and ``avg_pool(x, geom, exclude_pad, policy)``;
``get_family_engine`` the same engine's kernels for the rest of the family (``lp_sums``,
``adaptive_avg``, ``adaptive_max``, ``max_unpool``)."""

from __future__ import annotations

from types import ModuleType

from poolcheck.engines import c_engine, family_c, family_numpy, numpy_engine
from poolcheck.errors import AttributeValueError, EngineUnavailableError

ENGINE_NAMES = ("numpy", "c", "auto")


def c_engine_status() -> tuple[ModuleType | None, str]:
    """The C engine module, or None and the reason it cannot be used."""
    if c_engine.AVAILABLE:
        return c_engine, ""
    return None, c_engine.UNAVAILABLE_REASON


def get_engine(name: str) -> ModuleType:
    if name == "numpy":
        return numpy_engine
    if name in ("c", "auto"):
        module, reason = c_engine_status()
        if module is not None:
            return module
        if name == "auto" and not c_engine.ISA_REFUSED:  # POOLCHECK_ISA asked for the C engine
            return numpy_engine
        raise EngineUnavailableError(f"engine 'c' is not available: {reason}")
    raise AttributeValueError("engine", f"expected one of {', '.join(map(repr, ENGINE_NAMES))}, got {name!r}")


def available_engines() -> list[str]:
    """Concrete engines usable here, numpy first."""
    names = ["numpy"]
    if c_engine_status()[0] is not None:
        names.append("c")
    return names


def get_family_engine(name: str) -> ModuleType:
    """The family kernels of engine ``name`` (``family_numpy`` or ``family_c``)."""
    return family_c if get_engine(name) is c_engine else family_numpy
