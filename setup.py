"""Build hook for the optional C engine ``poolcheck.engines._cpool``.

The extension is optional, as in markupsafe and msgpack: without a working C compiler (or with
``POOLCHECK_PURE_PYTHON=1`` set at build time) the build skips it, prints a loud warning, and
the install still succeeds; ``engine="c"`` then raises EngineUnavailableError and
``engine="auto"`` uses the NumPy engine.

The sources are in ``poolcheck/engines/_cpool_src/`` (module.c describes each file); their
translation units compile in parallel, one compiler process per CPU.

Flags: ``-O3``; ``-ffp-contract=off`` so no multiply-add is ever fused (averages must round
exactly as the NumPy engine's float64 additions and division do); ``-fno-math-errno``;
``-std=c11``; ``-fvisibility=hidden`` (only ``PyInit__cpool`` is exported). No
``-march=native``: the portable kernels have x86-64-v3 (AVX2) and baseline clones chosen by
the loader, and a few float32 max kernels AVX-512 versions chosen at import when the CPU has
AVX-512, so one build runs everywhere.
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CCompilerError, CompileError, ExecError, LinkError, PlatformError  # setuptools >= 59

BUILD_ERRORS = (CCompilerError, CompileError, ExecError, LinkError, PlatformError, OSError, ValueError)

UNIX_FLAGS = ["-O3", "-ffp-contract=off", "-fno-math-errno", "-std=c11", "-fvisibility=hidden", "-Wall",
              "-Wno-unknown-pragmas"]
SOURCE_DIR = Path("poolcheck", "engines", "_cpool_src")
SOURCES = sorted(str(p) for p in SOURCE_DIR.glob("*.c"))
HEADERS = sorted(str(p) for p in SOURCE_DIR.glob("*.h"))


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
        _compile_in_parallel(self.compiler)
        super().build_extensions()

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except BUILD_ERRORS as exc:
            _warn(f"{type(exc).__name__}: {exc}")


def _compile_in_parallel(compiler) -> None:  # type: ignore[no-untyped-def]
    """Compile an extension's sources concurrently (distutils compiles them one by one); the
    linker still runs once, after all of them."""
    workers = os.cpu_count() or 1
    if workers < 2:
        return

    def compile_all(sources, output_dir=None, macros=None, include_dirs=None, debug=0,  # type: ignore[no-untyped-def]
                    extra_preargs=None, extra_postargs=None, depends=None):
        macros, objects, extra_postargs, pp_opts, build = compiler._setup_compile(
            output_dir, macros, include_dirs, sources, depends, extra_postargs)
        cc_args = compiler._get_cc_args(pp_opts, debug, extra_preargs)

        def one(obj: str) -> None:
            src, ext = build[obj]
            compiler._compile(obj, src, ext, cc_args, extra_postargs, pp_opts)

        with ThreadPoolExecutor(max_workers=min(workers, len(build))) as pool:
            list(pool.map(one, list(build)))
        return objects

    compiler.compile = compile_all


setup(
    ext_modules=[Extension("poolcheck.engines._cpool", sources=SOURCES, depends=HEADERS, optional=True)],
    cmdclass={"build_ext": OptionalBuildExt},
)
