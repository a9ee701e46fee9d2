// float64 ADD and MULTIPLY in 32-bit integer arithmetic, for devices without shaderFloat64 (and
// without shaderInt64): IEEE 754 binary64 rounded to nearest even, denormals in and out, and
// infinities as IEEE gives them. A NaN operand gives itself made quiet (the first one where both
// are: IEEE 754 leaves that choice open, and a CPU's follows its compiler's operand order), and
// an invalid operation (inf - inf, 0 * inf) x86-64's default NaN, 0xFFF8000000000000: the bits a
// sequential computation on an x86-64 CPU (NumPy's) gives. A value is a uvec2 of its
// bits (low word, high word). Significands are worked on as uvec2 too, with their leading bit at
// bit 62 and 10 bits below the 52 kept ones for rounding (the lowest one sticky). Included by
// glsl/arith.glsl, after its isNanBits.

#include "wide.glsl"

const uvec2 kDefaultNan64 = uvec2(0u, 0xFFF80000u);

bool isInf64(uvec2 v) {
  return (v.y & 0x7FFFFFFFu) == 0x7FF00000u && v.x == 0u;
}
bool isZero64(uvec2 v) {
  return (v.y & 0x7FFFFFFFu) == 0u && v.x == 0u;
}

// The value sign * sig * 2^(e - 1085) (sig's leading bit at 62, or lower only where e is 1)
// rounded to nearest even and packed; e below 1 makes a denormal or zero, past 2046 infinity.
uvec2 roundPack64(uint sign, int e, uvec2 sig) {
  if (e < 1) {
    sig = shiftRightJam2x32(sig, uint(min(1 - e, 64)));
    e = 1;
  }
  const uint rest = sig.x & 0x3FFu;  // the 10 bits below the kept ones; 0x200 is half
  sig = uvec2((sig.x >> 10) | (sig.y << 22), sig.y >> 10);  // the (up to) 53 kept bits
  if (rest > 0x200u || (rest == 0x200u && (sig.x & 1u) != 0u)) sig = add2x32(sig, uvec2(1u, 0u));
  if (sig.y >= 0x200000u) {  // rounded up to 2^53: one more binade
    sig = uvec2(0u, 0x100000u);
    ++e;
  }
  if (e >= 0x7FF) return uvec2(0u, sign | 0x7FF00000u);
  // The leading bit (bit 52) adds 1 to the exponent field: e - 1 + 1 for a normal number, 0 + 0
  // for a denormal (e is 1, bit 52 clear).
  return uvec2(sig.x, sign | ((uint(e - 1) << 20) + sig.y));
}

// A finite nonzero operand's significand (leading bit at 62) and exponent; denormals normalized.
uvec2 unpack64(uvec2 v, out int e) {
  const uint field = (v.y >> 20) & 0x7FFu;
  uvec2 sig = uvec2(v.x, v.y & 0xFFFFFu);
  if (field != 0u) {
    e = int(field);
    sig.y |= 0x100000u;
  } else {  // a denormal: sig * 2^-1074 = (sig << s) * 2^(1 - s - 1074)
    const uint s = leadingZeros2x32(sig) - 11u;
    sig = shiftLeft2x32(sig, s);
    e = 1 - int(s);
  }
  return shiftLeft2x32(sig, 10u);
}

uvec2 quiet64(uvec2 v) {
  return uvec2(v.x, v.y | 0x80000u);
}

uvec2 softAdd64(uvec2 a, uvec2 b) {
  if (isNanBits(a)) return quiet64(a);
  if (isNanBits(b)) return quiet64(b);
  if (isInf64(a)) return isInf64(b) && (a.y ^ b.y) >= 0x80000000u ? kDefaultNan64 : a;
  if (isInf64(b)) return b;
  const bool aZero = isZero64(a), bZero = isZero64(b);
  if (aZero || bZero) {
    if (!aZero) return a;
    if (!bZero) return b;
    return uvec2(0u, a.y & b.y);  // -0 only for -0 + -0
  }
  // |a| >= |b|: swap on the magnitudes' bits.
  if (less2x32(uvec2(a.x, a.y & 0x7FFFFFFFu), uvec2(b.x, b.y & 0x7FFFFFFFu))) {
    const uvec2 t = a;
    a = b;
    b = t;
  }
  const uint sign = a.y & 0x80000000u;
  int ea, eb;
  uvec2 sa = unpack64(a, ea), sb = unpack64(b, eb);
  sb = shiftRightJam2x32(sb, uint(min(ea - eb, 64)));
  if ((a.y ^ b.y) < 0x80000000u) {  // same signs: the sum may carry to bit 63
    uvec2 s = add2x32(sa, sb);
    if (s.y >= 0x80000000u) {
      s = shiftRightJam2x32(s, 1u);
      ++ea;
    }
    return roundPack64(sign, ea, s);
  }
  uvec2 d = sub2x32(sa, sb);
  if (d.x == 0u && d.y == 0u) return uvec2(0u);  // x - x is +0
  // Renormalize, not below e = 1 (a denormal result keeps its leading bit lower).
  const uint s = min(leadingZeros2x32(d) - 1u, uint(max(ea - 1, 0)));
  return roundPack64(sign, ea - int(s), shiftLeft2x32(d, s));
}

uvec2 softMultiply64(uvec2 a, uvec2 b) {
  if (isNanBits(a)) return quiet64(a);
  if (isNanBits(b)) return quiet64(b);
  const uint sign = (a.y ^ b.y) & 0x80000000u;
  if (isInf64(a) || isInf64(b))
    return isZero64(a) || isZero64(b) ? kDefaultNan64 : uvec2(0u, sign | 0x7FF00000u);
  if (isZero64(a) || isZero64(b)) return uvec2(0u, sign);
  int ea, eb;
  // The 53-bit significands (leading bit at 52) and their 106-bit product in four words.
  const uvec2 sa = shiftRightJam2x32(unpack64(a, ea), 10u);
  const uvec2 sb = shiftRightJam2x32(unpack64(b, eb), 10u);
  uint ll1, ll0, lh1, lh0, hl1, hl0, hh1, hh0;
  umulExtended(sa.x, sb.x, ll1, ll0);
  umulExtended(sa.x, sb.y, lh1, lh0);
  umulExtended(sa.y, sb.x, hl1, hl0);
  umulExtended(sa.y, sb.y, hh1, hh0);
  uint c1, c2, c3, c4;
  uint w1 = uaddCarry(ll1, lh0, c1);
  w1 = uaddCarry(w1, hl0, c2);
  uint w2 = uaddCarry(lh1, hl1, c3);
  w2 = uaddCarry(w2, hh0, c4);
  uint c5;
  w2 = uaddCarry(w2, c1 + c2, c5);
  const uint w3 = hh1 + c3 + c4 + c5;
  // The product's leading bit is bit 104 or 105: bits 42 and up, with its leading bit at 62
  // (then 63, shifted once more), the rest sticky.
  uvec2 sig = uvec2((w1 >> 10) | (w2 << 22), (w2 >> 10) | (w3 << 22));
  sig.x |= ll0 != 0u || (w1 & 0x3FFu) != 0u ? 1u : 0u;
  int e = ea + eb - 1023;
  if (sig.y >= 0x80000000u) {
    sig = shiftRightJam2x32(sig, 1u);
    ++e;
  }
  return roundPack64(sign, e, sig);
}

// Float MAX and MIN on the bits, neither a NaN: whether x stays (x >= u, x <= u for MIN), with
// -0 == +0.
bool softKeeps64(uvec2 x, uvec2 u, bool max) {
  if (isZero64(x) && isZero64(u)) return true;
  // Ordered as unsigned integers: negative values inverted, positive ones above them.
  const uvec2 a = x.y >= 0x80000000u ? ~x : uvec2(x.x, x.y | 0x80000000u);
  const uvec2 b = u.y >= 0x80000000u ? ~u : uvec2(u.x, u.y | 0x80000000u);
  return max ? !less2x32(a, b) : !less2x32(b, a);
}
