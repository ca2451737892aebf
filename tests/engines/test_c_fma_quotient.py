"""The average strips' division by multiply-adds (simd.h vd_quot_fma, fused_f32.h).

On the paths with FMA (avx2, avx512) the float32 average strips divide the float64 sums of
their whole windows without a division: r = RN(1/d), q0 = RN(s r), e = q0 d - s (exact, one
FMA), q = RN(q0 - e r) (one FMA). The claim: q is RN(s / d) for every finite s that is 0 or a
sum of float32 values and every integer divisor 1 <= d < 2^51, signed zeros included; an
infinite s gives NaN through an invalid operation, which the kernel watches for (MXCSR) and
answers by running the staged kernels.

Two checks, each against an independent oracle (exact rational arithmetic, correctly rounded):
the arithmetic itself on adversarial sums (random bit patterns, quotients next to float64 and
float32 rounding midpoints, zeros, the extremes of float32 sums), and the C engine on every
instruction-set path on inputs whose window sums are built to be those adversarial sums, plus
infinities, NaN and signalling NaN. A quotient one float64 ULP off changes the float32 result
of the sums built next to float32 midpoints, so a multiply by the reciprocal alone fails here.
"""

from __future__ import annotations

import math
import struct
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_c_engine import assert_same_bits, isa  # noqa: F401  (isa: the per-path fixture, usefixtures)

from poolcheck import spec as S
from poolcheck.engines import c_engine, numpy_engine

pytestmark = pytest.mark.skipif(not c_engine.AVAILABLE, reason=f"C engine: {c_engine.UNAVAILABLE_REASON}")

F32_TINY = 2.0 ** -149  # every sum of float32 values is a multiple of it
F32_MAX = float(np.finfo(np.float32).max)


def rn(x: Fraction) -> float:
    """x rounded to the nearest float64, ties to even (int / int is correctly rounded)."""
    return x.numerator / x.denominator


def fma(a: float, b: float, c: float) -> float:
    """a b + c with one rounding (math.fma is Python 3.13+)."""
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:  # the sign of an exact zero: +0 unless both the product and c are -0
        prod_neg = math.copysign(1.0, a) * math.copysign(1.0, b) < 0
        return -0.0 if prod_neg and math.copysign(1.0, c) < 0 else 0.0
    return rn(exact)


def fma_quotient(s: float, d: int) -> float:
    """The kernel's quotient, operation for operation (vd_quot_fma: fmsub, then fnmadd)."""
    r = 1.0 / d
    q0 = s * r
    e = fma(q0, float(d), -s)  # q0 d - s
    assert Fraction(e) == Fraction(q0) * d - Fraction(s), "the remainder must be exact"
    return fma(-e, r, q0)  # c - a b as (-a) b + c: the same exact value, the same rounding


def true_quotient(s: float, d: int) -> float:
    if s == 0:
        return math.copysign(0.0, s)
    return rn(Fraction(s) / d)


def bits64(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def f32_midpoint(a: np.float32) -> Fraction:
    """The midpoint between float32 a > 0 and the next float32 up."""
    return (Fraction(float(a)) + Fraction(float(np.nextafter(a, np.float32(np.inf))))) / 2


DIVISORS = st.one_of(st.sampled_from([1, 2, 3, 4, 6, 9]), st.integers(1, 2**20), st.integers(2**50, 2**51 - 1))


@st.composite
def adversarial_sums(draw: st.DrawFn) -> tuple[float, int]:
    """(s, d): s a finite float64 that is 0 or a multiple of 2^-149 below 2^132."""
    d = draw(DIVISORS)
    kind = draw(st.sampled_from(["bits", "f32-midpoint", "f64-midpoint", "zero", "extreme"]))
    sign = draw(st.sampled_from([1, -1]))
    if kind == "zero":
        return sign * 0.0, d
    if kind == "extreme":  # the smallest float32 sums, and the largest give or take a few ULPs
        if draw(st.booleans()):
            return sign * draw(st.integers(1, 9)) * F32_TINY, d
        s = draw(st.sampled_from([9 * F32_MAX, F32_MAX, 2.0 ** 131]))
        for _ in range(draw(st.integers(0, 3))):
            s = math.nextafter(s, 0.0)
        return sign * s, d
    if kind == "bits":  # a random significand and exponent in range
        m = draw(st.integers(1, 2**53 - 1))
        k = draw(st.integers(-149, 131 - m.bit_length()))
        return sign * math.ldexp(m, k), d
    top = 130 - d.bit_length()  # s / d below 2^top, so s below 2^131
    if kind == "f32-midpoint":  # s / d next to a float32 rounding midpoint
        a = np.float32(math.ldexp(draw(st.integers(2**23, 2**24 - 1)), draw(st.integers(-120, min(100, top - 24)))))
        target = f32_midpoint(a) * d
    else:  # s / d next to a float64 rounding midpoint
        a64 = math.ldexp(draw(st.integers(2**52, 2**53 - 1)), draw(st.integers(-170, top - 53)))
        target = (Fraction(a64) + Fraction(math.nextafter(a64, math.inf))) / 2 * d
    s = rn(target)
    for _ in range(abs(step := draw(st.integers(-3, 3)))):
        s = math.nextafter(s, math.inf if step > 0 else -math.inf)
    s = round(s / F32_TINY) * F32_TINY  # a multiple of 2^-149 (s is one already unless tiny)
    return sign * s, d


@settings(max_examples=max(settings().max_examples, 2000))
@given(adversarial_sums())
def test_fma_quotient_is_the_correctly_rounded_quotient(case: tuple[float, int]) -> None:
    s, d = case
    assert bits64(fma_quotient(s, d)) == bits64(true_quotient(s, d)), f"s={s!r} d={d}"


def test_fma_quotient_needs_its_correction() -> None:
    """The correction step is what makes the quotient exact: a plain multiply by the reciprocal
    misses sums one ULP above d times a float32 midpoint, which the strategy above draws, in
    float64 and (some) after the rounding to float32, so the property would catch a kernel
    without it; the quotient with it is exact on all of them."""
    rng = np.random.default_rng(5)
    sums = [math.nextafter(rn(f32_midpoint(np.float32(math.ldexp(float(m), -23))) * 9), math.inf)
            for m in rng.integers(2**23, 2**24, 400)]
    misses = [s for s in sums if s * (1.0 / 9) != true_quotient(s, 9)]
    f32_misses = [s for s in misses if np.float32(s * (1.0 / 9)) != np.float32(true_quotient(s, 9))]
    assert f32_misses and all(bits64(fma_quotient(s, 9)) == bits64(true_quotient(s, 9)) for s in sums)


# --------------------------------------------------------------------------- through the engine


def three_float32(target: float) -> tuple[float, float, float]:
    """float32 t1, t2, t3 with (t1 + t2) + t3 == target exactly in float64 (each partial sum
    exact): target's 53 bits in three float32 pieces."""
    t1 = float(np.float32(target))
    t2 = float(np.float32(target - t1))
    t3 = target - t1 - t2
    assert float(np.float32(t3)) == t3 and (t1 + t2) + t3 == target and (t1 + t2) == target - t3
    return t1, t2, t3


def built_windows(rng: np.random.Generator, kh: int, kw: int, n: int) -> tuple[np.ndarray, list[float]]:
    """One plane (kh rows, kw n columns) under a kh x kw window without padding: the window at
    column kw i holds t1, t2, t3 (three_float32 of target i) in its first taps in row-major
    order and zeros elsewhere, so its float64 sum is target i exactly. The targets put s / d on
    a float32 midpoint (a tie), next to one (s one ULP above or below), next to a float64
    midpoint, and at signed zeros."""
    d = kh * kw
    targets: list[float] = []
    for i in range(n):
        kind = i % 5
        sign = 1.0 if rng.random() < 0.5 else -1.0
        if kind == 4:
            targets.append(sign * 0.0)
            continue
        if kind == 3:
            a64 = math.ldexp(float(rng.integers(2**52, 2**53)), int(rng.integers(-110, 40)))
            t = rn((Fraction(a64) + Fraction(math.nextafter(a64, math.inf))) / 2 * d)
        else:  # d times a float32 midpoint (an exact tie after the division), one ULP above, below
            a = np.float32(math.ldexp(float(rng.integers(2**23, 2**24)), int(rng.integers(-90, 40))))
            t = rn(f32_midpoint(a) * d)
            t = t if kind == 0 else math.nextafter(t, math.inf if kind == 1 else -math.inf)
        targets.append(sign * t)
    x = np.zeros((kh, kw * n), np.float32)
    for i, t in enumerate(targets):
        if t == 0:
            x[:, kw * i: kw * i + kw] = np.float32(t)  # all taps zeros of t's sign
            continue
        for slot, piece in enumerate(three_float32(t)):
            x[slot // kw, kw * i + slot % kw] = piece
    return x, targets


@pytest.mark.usefixtures("isa")
@pytest.mark.parametrize(("kh", "kw"), [(3, 3), (2, 3), (1, 3), (3, 2), (2, 2)])
def test_strips_divide_built_sums_exactly(kh: int, kw: int) -> None:
    """Windows whose sums are the adversarial sums: the C engine's averages are the correctly
    rounded float64 quotient rounded once to float32 (an oracle in exact arithmetic), and the
    NumPy engine's bits, on each path."""
    rng = np.random.default_rng(kh * 10 + kw)
    planes = [built_windows(rng, kh, kw, 48) for _ in range(6)]
    x = np.stack([p[0] for p in planes])[None]
    spec = S.PoolSpec("avg", (kh, kw), (1, 1), (0, 0), (0, 0), (1, 1), "floor", "explicit", exclude_pad=True)
    geom = S.resolve(spec, x.shape)
    c = c_engine.avg_pool(x, geom, True)
    assert_same_bits(c, numpy_engine.avg_pool(x, geom, True), "averages")
    d = kh * kw
    for p, (_, targets) in enumerate(planes):
        for i, t in enumerate(targets):
            # an axis of one tap sums from +0.0 (the NumPy engine's rule, zinit): -0.0 becomes +0.0
            want = np.float32(true_quotient(t + 0.0 if kh == 1 else t, d))
            got = c[0, p, 0, kw * i]
            assert got.view(np.uint32) == want.view(np.uint32), f"plane {p} window {i}: {got!r} != {want!r} (s={t!r})"


@pytest.mark.usefixtures("isa")
@pytest.mark.parametrize("pad", [0, 1])
def test_strips_with_infinities_and_nan(pad: int) -> None:
    """An infinite sum (inf, -inf, both: NaN) or a NaN or signalling NaN tap anywhere: the
    NumPy engine's bits (NaN where NaN), on each path; and the planes before and after it
    (divided by multiply-adds where no plane has one) are unchanged by it."""
    rng = np.random.default_rng(pad)
    x = (rng.standard_normal((2, 5, 12, 21)) * np.exp2(rng.integers(-30, 30, (2, 5, 12, 21)))).astype(np.float32)
    x[0, 0, 3, 4] = np.inf
    x[0, 1, 5, 7], x[0, 1, 5, 8] = np.inf, -np.inf
    x[0, 2, 0, 0] = -np.inf
    x[0, 3, 11, 20] = np.nan
    x[0, 4].reshape(-1).view(np.uint32)[17] = 0x7F800001  # a signalling NaN
    x[1, 0] = np.float32(F32_MAX) * rng.choice(np.array([-1, 1], np.float32), (12, 21))  # finite float64 sums
    spec = S.PoolSpec("avg", (3, 3), (1, 1), (pad, pad), (pad, pad), (1, 1), "floor", "explicit", exclude_pad=True)
    geom = S.resolve(spec, x.shape)
    c = c_engine.avg_pool(x, geom, True)
    assert_same_bits(c, numpy_engine.avg_pool(x, geom, True), "averages", any_nan=True)
    finite = x[1:].copy()
    geom1 = S.resolve(spec, finite.shape)
    assert_same_bits(c_engine.avg_pool(finite, geom1, True), c[1:], "the finite batch alone")
