"""Doubles to text as Python's ``repr`` writes them, into byte buffers, for whole arrays.

``repr`` writes the shortest decimal that reads back as the same double (of those, the
closest to it); for answers of a hundred examples that was most of an HTTP request's
time (about 0.35 us a double, one Python call each). Here the digits come from Ryu
(Ulf Adams, "Ryū: fast float-to-string conversion", PLDI 2018), which finds the same
shortest, closest decimal with 64-bit integer arithmetic and two tables of powers of 5,
and the layout is ``repr``'s: positional from 1e-4 up to below 1e16 (``0.0001``,
``12.5``, ``3.0``), scientific outside (``1e-05``, ``1.5e+16``), ``-0.0`` for negative
zero. The tests compare both on millions of doubles of every exponent.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from streamlearn._kernels._jit import kernel

#: bytes of the longest text :func:`write_float` writes (``-2.2250738585072014e-308``)
FLOAT_CHARS = 24

_POW5_INV_BITS = 125  # significant bits of the entries of 2^k / 5^q
_POW5_BITS = 125  # and of 5^i
_INV_ENTRIES = 342  # q up to log10(2^(1023 - 52 - 2)) covers every double from 1 up
_POW5_ENTRIES = 326  # i up to 1074 - q covers every double below 1


def _split(value: int) -> tuple[int, int]:
    return value & ((1 << 64) - 1), value >> 64


def _power_tables() -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
    """The 128-bit multipliers of Ryu, (low, high) words: rounded-up 2^k / 5^q with 125
    significant bits, and 5^i cut to its top 125 bits (computed exactly with Python's
    integers, once at import)."""
    inverse = np.empty((_INV_ENTRIES, 2), dtype=np.uint64)
    for q in range(_INV_ENTRIES):
        power = 5**q
        inverse[q] = _split((1 << (power.bit_length() - 1 + _POW5_INV_BITS)) // power + 1)
    powers = np.empty((_POW5_ENTRIES, 2), dtype=np.uint64)
    for i in range(_POW5_ENTRIES):
        power = 5**i
        shift = power.bit_length() - _POW5_BITS
        powers[i] = _split(power >> shift if shift >= 0 else power << -shift)
    return inverse, powers


_POW5_INV_SPLIT, _POW5_SPLIT = _power_tables()

# numba types an int64 mixed with a uint64 as a float: every constant is a uint64
_U0, _U1, _U2, _U5, _U10 = np.uint64(0), np.uint64(1), np.uint64(2), np.uint64(5), np.uint64(10)
_U32, _MASK32 = np.uint64(32), np.uint64(0xFFFFFFFF)
_MANTISSA_MASK = np.uint64((1 << 52) - 1)
_HIDDEN_BIT = np.uint64(1 << 52)
_EXPONENT_MASK = np.uint64(0x7FF)
_U52, _U63 = np.uint64(52), np.uint64(63)
_ZERO, _DOT, _MINUS, _PLUS, _E = 48, 46, 45, 43, 101


@kernel(inline=True)
def _mul_shift(m: np.uint64, low: np.uint64, high: np.uint64, shift: int) -> np.uint64:
    """``(m * (high 2^64 + low)) >> shift`` for 64 < shift < 128, the product being below
    2^(shift + 64) (m has at most 55 bits, the multiplier 125)."""
    m_lo, m_hi = m & _MASK32, m >> _U32
    # m * low: only its high word is needed
    lo_lo, lo_hi = low & _MASK32, low >> _U32
    cross = m_hi * lo_lo + ((m_lo * lo_lo) >> _U32)
    middle = m_lo * lo_hi + (cross & _MASK32)
    low_product_high = m_hi * lo_hi + (cross >> _U32) + (middle >> _U32)
    # m * high: both words
    hi_lo, hi_hi = high & _MASK32, high >> _U32
    bottom = m_lo * hi_lo
    cross = m_hi * hi_lo + (bottom >> _U32)
    middle = m_lo * hi_hi + (cross & _MASK32)
    high_high = m_hi * hi_hi + (cross >> _U32) + (middle >> _U32)
    high_low = (middle << _U32) | (bottom & _MASK32)
    total = low_product_high + high_low
    if total < low_product_high:  # carry into the top word
        high_high += _U1
    distance = np.uint64(shift - 64)
    return (high_high << (np.uint64(64) - distance)) | (total >> distance)


@kernel(inline=True)
def _bits_of_power_of_5(e: int) -> int:
    """Bits of 5^e (1 for e = 0): ceil(e log2(5)), exact for 0 < e < 3529."""
    return ((e * 1217359) >> 19) + 1


@kernel(inline=True)
def _multiple_of_power_of_5(value: np.uint64, p: int) -> bool:
    """Whether 5^p divides ``value``."""
    count = 0
    while value > _U0 and value % _U5 == _U0:
        value //= _U5
        count += 1
    return count >= p


@kernel(inline=True)
def _shortest(bits: np.uint64) -> tuple[np.uint64, int]:
    """(digits, exponent) with digits * 10^exponent the shortest decimal that reads back
    as the positive finite non-zero double of ``bits``, the closest one of those (Ryu)."""
    mantissa = bits & _MANTISSA_MASK
    biased = int((bits >> _U52) & _EXPONENT_MASK)
    if biased == 0:
        e2 = 1 - 1023 - 52 - 2
        m2 = mantissa
    else:
        e2 = biased - 1023 - 52 - 2
        m2 = _HIDDEN_BIT | mantissa
    accept_bounds = (m2 & _U1) == _U0
    mv = np.uint64(4) * m2
    mm_shift = _U1 if (mantissa != _U0 or biased <= 1) else _U0
    vm_trailing_zeros = False
    vr_trailing_zeros = False
    # the value is m2 2^(e2 + 2); mv / 4 and the bounds (mv + 2) / 4, (mv - 1 - mm_shift) / 4
    if e2 >= 0:  # vr, vp, vm: those times 2^e2 / 10^q, q = max(0, floor(e2 log10(2)) - 1)
        q = ((e2 * 78913) >> 18) - (1 if e2 > 3 else 0)
        e10 = q
        shift = -e2 + q + _POW5_INV_BITS + _bits_of_power_of_5(q) - 1
        low, high = _POW5_INV_SPLIT[q, 0], _POW5_INV_SPLIT[q, 1]
        vr = _mul_shift(mv, low, high, shift)
        vp = _mul_shift(mv + _U2, low, high, shift)
        vm = _mul_shift(mv - _U1 - mm_shift, low, high, shift)
        if q <= 21:  # only one of mp, mv and mm can be a multiple of 5, if any
            if mv % _U5 == _U0:
                vr_trailing_zeros = _multiple_of_power_of_5(mv, q)
            elif accept_bounds:
                vm_trailing_zeros = _multiple_of_power_of_5(mv - _U1 - mm_shift, q)
            elif _multiple_of_power_of_5(mv + _U2, q):
                vp -= _U1
    else:  # times 5^(-e2 - q) / 2^q, q = max(0, floor(-e2 log10(5)) - 1)
        q = ((-e2 * 732923) >> 20) - (1 if -e2 > 1 else 0)
        e10 = q + e2
        i = -e2 - q
        shift = q - (_bits_of_power_of_5(i) - _POW5_BITS)
        low, high = _POW5_SPLIT[i, 0], _POW5_SPLIT[i, 1]
        vr = _mul_shift(mv, low, high, shift)
        vp = _mul_shift(mv + _U2, low, high, shift)
        vm = _mul_shift(mv - _U1 - mm_shift, low, high, shift)
        if q <= 1:  # mv = 4 m2 has at least 2 trailing zero bits
            vr_trailing_zeros = True
            if accept_bounds:
                vm_trailing_zeros = mm_shift == _U1
            else:
                vp -= _U1
        elif q < 63:
            vr_trailing_zeros = (mv & ((_U1 << np.uint64(q)) - _U1)) == _U0
    # drop digits while the interval (vm, vp) still holds a shorter decimal
    removed = 0
    last_removed = _U0
    if vm_trailing_zeros or vr_trailing_zeros:  # rare: exact halves and bounds
        while vp // _U10 > vm // _U10:
            vm_trailing_zeros = vm_trailing_zeros and vm % _U10 == _U0
            vr_trailing_zeros = vr_trailing_zeros and last_removed == _U0
            last_removed = vr % _U10
            vr //= _U10
            vp //= _U10
            vm //= _U10
            removed += 1
        if vm_trailing_zeros:
            while vm % _U10 == _U0:
                vr_trailing_zeros = vr_trailing_zeros and last_removed == _U0
                last_removed = vr % _U10
                vr //= _U10
                vp //= _U10
                vm //= _U10
                removed += 1
        if vr_trailing_zeros and last_removed == _U5 and vr % _U2 == _U0:
            last_removed = np.uint64(4)  # exactly half way: to the even digit
        round_up = bool(vr == vm and (not accept_bounds or not vm_trailing_zeros)) or bool(
            last_removed >= _U5
        )
    else:
        round_up = False
        while vp // _U10 > vm // _U10:
            round_up = bool(vr % _U10 >= _U5)
            vr //= _U10
            vp //= _U10
            vm //= _U10
            removed += 1
        round_up = round_up or bool(vr == vm)
    return vr + (_U1 if round_up else _U0), e10 + removed


@kernel(inline=True)
def write_float(out: np.ndarray, pos: int, bits: np.uint64) -> int:
    """Write ``repr`` of the finite double whose IEEE 754 bits are ``bits`` (an element
    of a float64 array viewed as uint64) at ``out[pos:]`` (room for :data:`FLOAT_CHARS`
    bytes); returns the position after it."""
    if bits >> _U63:
        out[pos] = _MINUS
        pos += 1
    if bits & ~(_U1 << _U63) == _U0:
        out[pos], out[pos + 1], out[pos + 2] = _ZERO, _DOT, _ZERO
        return pos + 3
    digits, exponent = _shortest(bits & ~(_U1 << _U63))
    length = 1
    probe = digits
    while probe >= _U10:
        probe //= _U10
        length += 1
    point = exponent + length  # digits 0.d1d2... times 10^point
    if point <= -4 or point > 16:  # repr's scientific range
        end = pos + length + (1 if length > 1 else 0)
        for at in range(end - 1, pos, -1):
            if length > 1 and at == pos + 1:
                out[at] = _DOT
                continue
            out[at] = _ZERO + int(digits % _U10)
            digits //= _U10
        out[pos] = _ZERO + int(digits)
        out[end] = _E
        power = point - 1
        out[end + 1] = _MINUS if power < 0 else _PLUS
        power = abs(power)
        end += 2
        if power >= 100:
            out[end] = _ZERO + power // 100
            end += 1
        out[end], out[end + 1] = _ZERO + (power // 10) % 10, _ZERO + power % 10
        return end + 2
    if point <= 0:  # 0.000ddd
        out[pos], out[pos + 1] = _ZERO, _DOT
        for at in range(pos + 2, pos + 2 - point):
            out[at] = _ZERO
        end = pos + 2 - point + length
        for at in range(end - 1, end - length - 1, -1):
            out[at] = _ZERO + int(digits % _U10)
            digits //= _U10
        return end
    if point >= length:  # ddd000.0
        for at in range(pos + length, pos + point):
            out[at] = _ZERO
        for at in range(pos + length - 1, pos - 1, -1):
            out[at] = _ZERO + int(digits % _U10)
            digits //= _U10
        end = pos + point
        out[end], out[end + 1] = _DOT, _ZERO
        return end + 2
    end = pos + length + 1  # ddd.ddd
    for at in range(end - 1, pos - 1, -1):
        if at == pos + point:
            out[at] = _DOT
            continue
        out[at] = _ZERO + int(digits % _U10)
        digits //= _U10
    return end


@kernel(releases_gil=True)
def float_texts(values: np.ndarray, out: np.ndarray, ends: np.ndarray) -> int:
    """Write ``repr`` of every (finite) float64 of ``values`` one after the other into
    ``out`` (uint8, room for :data:`FLOAT_CHARS` bytes each), ``ends[i]`` where text
    ``i`` ends; returns the bytes written (what the tests compare with ``repr``)."""
    bits = values.view(np.uint64)
    pos = 0
    for i in range(bits.shape[0]):
        pos = write_float(out, pos, bits[i])
        ends[i] = pos
    return pos
