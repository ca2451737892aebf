"""Build hook for the optional C engine ``poolcheck.engines._cpool``.

The extension is optional, as in markupsafe and msgpack: without a working C compiler (or with
``POOLCHECK_PURE_PYTHON=1`` set at build time) the build skips it, prints a loud warning, and
the install still succeeds; ``engine="c"`` then raises EngineUnavailableError and
``engine="auto"`` uses the NumPy engine.

The sources are in ``poolcheck/engines/_cpool_src/`` (module.c describes each file); their
translation units compile in parallel, one compiler process per CPU.

Flags: ``-O2 -ftree-vectorize`` (O3_SOURCES: none now); ``-ffp-contract=off`` so no multiply-add
is ever fused (averages must round exactly as the NumPy engine's float64 additions and division
do); ``-fno-math-errno``;
``-std=c11``; ``-fvisibility=hidden`` (only ``PyInit__cpool`` is exported). No
``-march=native``: one build runs on every CPU of its architecture. The kernels are compiled
once per instruction-set path, as NumPy compiles its dispatched sources: ``isa_portable.c``
for the baseline, and on x86-64 ``isa_avx2.c`` with ``-mavx2 -mfma`` and ``isa_avx512.c``
with AVX-512 F/BW/VL/DQ (ISA_FLAGS); the extension picks the fastest path the CPU runs at
import (``POOLCHECK_ISA`` forces one). The three path files are the whole compile time (GCC 12
on an AMD EPYC with AVX2, no AVX-512: about 13.5, 10.5 and 7.5 s of CPU; module.c, geometry.c and
family.c under 1.5 s together), so on 2 cores the build takes about as long as its largest file
plus what the other core cannot take: ``time python setup.py build_ext --inplace --force`` took
13-21 s of wall time (median 16 s, ten builds on a noisy VM) and 25-36 s of CPU there, 19-28 s
and 36-50 s before the templates' border helpers (mw_brow, aw_brow) became real functions rather than a
copy inlined at both borders of every specialised row loop, and 33 s and 55 s before the avx2
path left its 8- to 32-bit integer kernels to the portable one (isa_avx2.c).
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CCompilerError, CompileError, ExecError, LinkError, PlatformError  # setuptools >= 59

BUILD_ERRORS = (CCompilerError, CompileError, ExecError, LinkError, PlatformError, OSError, ValueError)

UNIX_FLAGS = ["-O2", "-ftree-vectorize", "-fvect-cost-model=dynamic", "-ffp-contract=off", "-fno-math-errno", "-std=c11", "-fvisibility=hidden", "-Wall",
              "-Wno-unknown-pragmas"]
SOURCE_DIR = Path("poolcheck", "engines", "_cpool_src")
SOURCES = sorted(str(p) for p in SOURCE_DIR.glob("*.c"))
HEADERS = sorted(str(p) for p in SOURCE_DIR.glob("*.h"))
#: Extra flags of the per-path sources, on x86-64 with a GCC-compatible compiler.
ISA_FLAGS = {
    "isa_avx2.c": ["-mavx2", "-mfma"],
    "isa_avx512.c": ["-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mavx2", "-mfma"],
}
#: Sources compiled at -O3 instead of UNIX_FLAGS' -O2 (with the vectoriser on). None since the
#: fused kernels (fused_f32.h) serve the portable path too: its -O3 cost 37 s of CPU against
#: 13 s at -O2 (the largest translation unit), for the staged kernels' speed on SSE2 only.
O3_SOURCES: tuple[str, ...] = ()
#: Compile the costliest sources first, so that the cores finish together.
COST_ORDER = ("isa_portable.c", "isa_avx2.c", "isa_avx512.c")
X86_64 = platform.machine().lower() in ("x86_64", "amd64")


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
        _compile_per_source(self.compiler, unix=self.compiler.compiler_type == "unix")
        started = time.monotonic()
        super().build_extensions()
        for ext in self.extensions:
            _record_build(Path(self.get_ext_fullpath(ext.name)), time.monotonic() - started)

    def copy_extensions_to_source(self) -> None:
        # --inplace (and editable installs) build in build/ and copy the extension back: its
        # build record goes with it.
        super().copy_extensions_to_source()
        build_py = self.get_finalized_command("build_py")
        for ext in self.extensions:
            inplace, regular = (Path(p) for p in self._get_inplace_equivalent(build_py, ext))
            if _record_path(regular).exists() and inplace.exists():
                self.copy_file(str(_record_path(regular)), str(_record_path(inplace)), level=self.verbose)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except BUILD_ERRORS as exc:
            _warn(f"{type(exc).__name__}: {exc}")


#: Written beside the built extension: the wall time of its compile and link, which
#: ``poolcheck bench`` reports (``poolcheck.engines.c_engine.build_record``).
BUILD_RECORD_SUFFIX = ".build.json"


def _record_build(extension: Path, seconds: float) -> None:
    """Record how long the build of ``extension`` took, on how many CPUs (only when it was built:
    a failed build warns instead and leaves no record)."""
    if not extension.exists():
        return
    record = {"seconds": round(seconds, 1), "cpus": os.cpu_count(), "machine": platform.machine(),
              "recorded": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    _record_path(extension).write_text(json.dumps(record) + "\n", encoding="utf-8")


def _record_path(extension: Path) -> Path:
    """The build record beside ``extension`` (``_cpool.cpython-311-x86_64-linux-gnu.so`` ->
    ``_cpool.build.json``)."""
    return extension.with_name(extension.name.split(".")[0] + BUILD_RECORD_SUFFIX)


def _compile_per_source(compiler, unix: bool) -> None:  # type: ignore[no-untyped-def]
    """Compile an extension's sources concurrently (distutils compiles them one by one), each
    with its own flags (ISA_FLAGS on x86-64, O3_SOURCES) under a GCC-compatible compiler; the
    linker still runs once, after all of them."""
    workers = os.cpu_count() or 1

    def compile_all(sources, output_dir=None, macros=None, include_dirs=None, debug=0,  # type: ignore[no-untyped-def]
                    extra_preargs=None, extra_postargs=None, depends=None):
        macros, objects, extra_postargs, pp_opts, build = compiler._setup_compile(
            output_dir, macros, include_dirs, sources, depends, extra_postargs)
        cc_args = compiler._get_cc_args(pp_opts, debug, extra_preargs)

        def one(obj: str) -> None:
            src, ext = build[obj]
            name = Path(src).name
            extra = ISA_FLAGS.get(name, []) if unix and X86_64 else []
            if unix and name in O3_SOURCES:
                extra = extra + ["-O3"]
            compiler._compile(obj, src, ext, cc_args, list(extra_postargs or []) + extra, pp_opts)

        def cost(obj: str) -> int:
            name = Path(build[obj][0]).name
            return COST_ORDER.index(name) if name in COST_ORDER else len(COST_ORDER)

        with ThreadPoolExecutor(max_workers=min(workers, len(build))) as pool:
            list(pool.map(one, sorted(build, key=cost)))
        return objects

    compiler.compile = compile_all


setup(
    ext_modules=[Extension("poolcheck.engines._cpool", sources=SOURCES, depends=HEADERS, optional=True)],
    cmdclass={"build_ext": OptionalBuildExt},
)
