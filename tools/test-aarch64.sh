#!/usr/bin/env bash
# The engine tests (tests/engines/) on AArch64, from this x86-64 machine:  make test-aarch64
#
# Debian's arm64 Python 3.11 runs under qemu-user. It runs setup.py, which builds the C extension
# with Debian's aarch64 cross compiler, as `pip install` would on an ARM machine (the portable
# path: NEON), then pytest. poolcheck's dependencies but ONNX Runtime (see 4.), pytest and
# setuptools come from their aarch64 wheels, at the versions in .venv. Everything lands in
# build/aarch64/ (AARCH64_DIR).
#
# Needs root and apt-get (gcc-aarch64-linux-gnu, qemu-user, Debian's arm64 packages) and
# binfmt_misc, so that the tests which start a Python of their own start the arm64 one.
# It checks correctness only: qemu's timings say nothing about an ARM CPU's speed.
# PYTEST_ARGS passes more pytest arguments (e.g. PYTEST_ARGS="-k float16").
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
work=${AARCH64_DIR:-$here/build/aarch64}
host_py=${PY:-$here/.venv/bin/python}
root=$work/root
# Where Debian's Python looks for packages (qemu finds it under QEMU_LD_PREFIX): a test's own
# subprocess, whatever its PYTHONPATH, imports them too.
site=$root/usr/lib/python3/dist-packages
tree=$work/tree
debs=$work/debs
say() { printf 'test-aarch64: %s\n' "$*" >&2; }

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    say "needs root and apt-get (Debian's cross compiler, qemu-user and arm64 packages)"
    exit 2
fi
[ -x "$host_py" ] || { say "no $host_py: run make install first"; exit 2; }
mkdir -p "$work" "$debs"

# 1. The cross compiler, qemu, and Debian's arm64 package lists.
if ! command -v aarch64-linux-gnu-gcc >/dev/null || ! command -v qemu-aarch64 >/dev/null; then
    say "installing gcc-aarch64-linux-gnu and qemu-user"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc-aarch64-linux-gnu qemu-user >/dev/null
fi
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    dpkg --add-architecture arm64
    apt-get update -qq
fi

# 2. Debian's arm64 Python, its libraries and headers, unpacked into build/aarch64/root.
if [ ! -x "$root/usr/bin/python3.11" ] || [ ! -e "$root/usr/include/python3.11/Python.h" ]; then
    say "unpacking Debian's arm64 Python 3.11 into $root"
    (cd "$debs" && apt-get download -qq -o APT::Sandbox::User=root \
        python3.11-minimal:arm64 libpython3.11-minimal:arm64 libpython3.11-stdlib:arm64 \
        libpython3.11-dev:arm64 python3.11-dev:arm64 libc6:arm64 libgcc-s1:arm64 libstdc++6:arm64 \
        libexpat1:arm64 zlib1g:arm64 libffi8:arm64 libssl3:arm64 libbz2-1.0:arm64 liblzma5:arm64 \
        libsqlite3-0:arm64 libncursesw6:arm64 libtinfo6:arm64 libreadline8:arm64 libuuid1:arm64 \
        libcrypt1:arm64 libnsl2:arm64 libtirpc3:arm64 libdb5.3:arm64 libgssapi-krb5-2:arm64 \
        libkrb5-3:arm64 libk5crypto3:arm64 libkrb5support0:arm64 libcom-err2:arm64 libkeyutils1:arm64)
    for deb in "$debs"/*.deb; do dpkg -x "$deb" "$root"; done
fi

# 3. binfmt_misc: an arm64 program started by another (a test's subprocess) runs under qemu.
binfmt=/proc/sys/fs/binfmt_misc
if [ ! -e "$binfmt/qemu-aarch64" ]; then
    [ -e "$binfmt/register" ] || mount -t binfmt_misc binfmt_misc "$binfmt" 2>/dev/null || true
    if [ -e "$binfmt/register" ] && [ -e /usr/lib/binfmt.d/qemu-aarch64.conf ]; then
        cat /usr/lib/binfmt.d/qemu-aarch64.conf > "$binfmt/register"
    fi
fi
if [ ! -e "$binfmt/qemu-aarch64" ]; then
    say "binfmt_misc cannot run arm64 programs here (no $binfmt/qemu-aarch64)"
    exit 2
fi
export QEMU_LD_PREFIX=$root
arm_py=$root/usr/bin/python3.11

# 4. The aarch64 wheels of poolcheck's dependencies, pytest and setuptools, at .venv's versions;
# not ONNX Runtime, whose aarch64 build crashes on import under qemu-user (it reads the host's
# /proc/cpuinfo): the tests that need it skip.
pins=$(cd "$here" && "$host_py" -c 'import importlib.metadata as m, re, tomllib
deps = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]
names = [re.match(r"[A-Za-z0-9_.-]+", d).group(0) for d in deps] + ["pytest", "setuptools"]
names.remove("onnxruntime")
print(" ".join(f"{n}=={m.version(n)}" for n in names))')
if [ "$(cat "$site/.pins" 2>/dev/null)" != "$pins" ]; then
    say "installing the aarch64 wheels of $pins"
    rm -rf "$site"
    # shellcheck disable=SC2086  # one argument per pin
    "$host_py" -m pip install --quiet --target "$site" --only-binary=:all: --implementation cp \
        --python-version 3.11 --platform manylinux_2_28_aarch64 --platform manylinux_2_17_aarch64 \
        --platform manylinux2014_aarch64 $pins
    printf '%s' "$pins" > "$site/.pins"
fi

# 5. This working tree (committed or not), built by setup.py on the arm64 Python.
rm -rf "$tree"
mkdir -p "$tree"
(cd "$here" && git ls-files -co --exclude-standard | grep -v '\.so$' | tar -cf - -T -) | tar -xf - -C "$tree"
say "building the C extension for aarch64"
(cd "$tree" && CFLAGS="-I$root/usr/include/python3.11 -idirafter $root/usr/include" \
    "$arm_py" setup.py -q build_ext --inplace >"$work/build.log" 2>&1) || { tail -20 "$work/build.log"; exit 1; }
export PYTHONPATH=$tree
(cd "$tree" && "$arm_py" -c 'import platform, sys
from poolcheck.engines import c_engine
if platform.machine() != "aarch64" or not c_engine.AVAILABLE:
    sys.exit(f"no aarch64 C engine: {platform.machine()}, {c_engine.UNAVAILABLE_REASON}")
print(f"test-aarch64: {platform.machine()}, C engine paths {c_engine.available_isas()}", file=sys.stderr)') \
    || { tail -20 "$work/build.log"; exit 1; }

# 6. The engine tests, on the arm64 Python. Left out: the one comparing NumPy's CPU features with
# /proc/cpuinfo, which qemu-user passes through from the x86-64 host.
cd "$tree"
# shellcheck disable=SC2086  # PYTEST_ARGS is split on purpose
exec "$arm_py" -m pytest -q -p no:cacheprovider tests/engines \
    --deselect tests/engines/test_fingerprint.py::test_numpy_fallback_agrees_with_cpuinfo ${PYTEST_ARGS:-}
