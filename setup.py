"""Build hook for the optional C engine ``poolcheck.engines._cpool``.

The extension is optional, as in markupsafe and msgpack: without a working C compiler (or with
``POOLCHECK_PURE_PYTHON=1`` set at build time) the build skips it, prints a loud warning, and
the install still succeeds; ``engine="c"`` then raises EngineUnavailableError and
``engine="auto"`` uses the NumPy engine.

Flags: ``-O3``; ``-ffp-contract=off`` so no multiply-add is ever fused (averages must round
exactly as the NumPy engine's float64 additions and division do); ``-fno-math-errno``;
``-std=c11``. No ``-march=native``: the float32 kernels have AVX-512 versions chosen at import
when the CPU has AVX-512, the other loops x86-64-v3 (AVX2) and baseline clones chosen by the
loader (see _cpool.c), so one build runs everywhere.
"""

from __future__ import annotations

import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CCompilerError, CompileError, ExecError, LinkError, PlatformError  # setuptools >= 59

BUILD_ERRORS = (CCompilerError, CompileError, ExecError, LinkError, PlatformError, OSError, ValueError)

UNIX_FLAGS = ["-O3", "-ffp-contract=off", "-fno-math-errno", "-std=c11", "-Wall", "-Wno-unknown-pragmas"]


def _warn(reason: str) -> None:
    bar = "*" * 78
    sys.stderr.write(
        f"\n{bar}\nWARNING: poolcheck's C engine (poolcheck.engines._cpool) was NOT built.\n"
        f"Reason: {reason}\n"
        "poolcheck is installed and works with the pure NumPy engine; engine='c' will raise\n"
        "EngineUnavailableError. Install a C compiler and Python headers, then reinstall.\n"
        f"{bar}\n\n"
    )


class OptionalBuildExt(build_ext):
    """build_ext that never fails the install."""

    def run(self) -> None:
        if os.environ.get("POOLCHECK_PURE_PYTHON", "") not in ("", "0"):
            _warn("POOLCHECK_PURE_PYTHON is set")
            return
        try:
            super().run()
        except BUILD_ERRORS as exc:
            _warn(f"{type(exc).__name__}: {exc}")

    def build_extensions(self) -> None:
        if self.compiler.compiler_type == "unix":
            # Python's own CFLAGS add -g: debug info doubles the compile time of the many
            # specialised kernels and is not needed in the installed module.
            for attr in ("compiler", "compiler_so", "compiler_cxx"):
                cmd = getattr(self.compiler, attr, None)
                if isinstance(cmd, list):
                    setattr(self.compiler, attr, [a for a in cmd if a != "-g"])
            for ext in self.extensions:
                ext.extra_compile_args = UNIX_FLAGS + list(ext.extra_compile_args or [])
        super().build_extensions()

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except BUILD_ERRORS as exc:
            _warn(f"{type(exc).__name__}: {exc}")


setup(
    ext_modules=[Extension("poolcheck.engines._cpool", sources=["poolcheck/engines/_cpool.c"], optional=True)],
    cmdclass={"build_ext": OptionalBuildExt},
)
