// A mean's division (glsl/mean.comp, the scatter kernels that fold it, embedding_bag.comp, and
// the quantizer's d): an element's bits divided by a count n >= 1 as a CPU divides, bit for bit
// on every device. Floats (ELEM 2, 4, 8) are rounded to nearest even once, denormals in and out,
// zeros and infinities kept, a NaN made quiet; integers round toward negative infinity
// (PyTorch's floor division). All in 32-bit integer arithmetic: Vulkan's float division is only
// within 2.5 ULP, and 64-bit types are optional. Values are (low, high) words.
#include "wide.glsl"

// floor(m * 2^k / n) and whether a remainder is left, for m of `bits` bits and a quotient of
// fewer than 64: long division of m * 2^k. A count below 2^16 takes 16 of its bits at a time in
// 32-bit division (the remainder times 2^16 plus a digit stays below 2^32); a larger one, one bit
// at a time.
uvec2 longDivide(uvec2 m, uint bits, uint k, uint n, out bool inexact) {
  if (bits + k <= 32u) {  // m * 2^k fits a word: one division
    const uint a = m.x << k;
    inexact = a % n != 0u;
    return uvec2(a / n, 0u);
  }
  uvec2 q = uvec2(0u);
  uint r = 0u;
  if (n <= 0xFFFFu) {
    for (uint at = (bits + k + 15u) & ~15u; at > 0u;) {
      at -= 16u;  // the digit: bits [at, at + 16) of m * 2^k
      const uvec2 part = at >= k ? shiftRight2x32(m, at - k) : shiftLeft2x32(m, k - at);
      const uint current = (r << 16) | (part.x & 0xFFFFu);
      q = shiftLeft2x32(q, 16u);
      q.x |= current / n;
      r = current % n;
    }
  } else {
    for (uint i = bits + k; i-- > 0u;) {
      const uint bit = i < k ? 0u : (i - k >= 32u ? m.y >> (i - k - 32u) : m.x >> (i - k)) & 1u;
      const bool carry = r >= 0x80000000u;  // 2r + 1 carries out of 32 bits: past n
      r = (r << 1) | bit;
      q = shiftLeft2x32(q, 1u);
      if (carry || r >= n) {
        r -= n;
        q.x |= 1u;
      }
    }
  }
  inexact = r != 0u;
  return q;
}

// The float format of ELEM bytes: fraction bits and exponent bias.
const uint kFractionBits = ELEM == 2 ? 10u : ELEM == 4 ? 23u : 52u;
const int kExponentBias = ELEM == 2 ? 15 : ELEM == 4 ? 127 : 1023;

#if ELEM == 4
// float32 x / n for a normal x and n <= 128 where the quotient is normal, the common case, in
// one 32-bit division: m * 2^8 / n has 25 bits or more (the significand's 24 and a rounding
// bit), the remainder the sticky bit. False (result unset) for everything else, which
// divideFloat's general steps take.
bool divideNormalFloat32(uint x, uint n, out uint result) {
  const uint field = (x >> 23) & 0xFFu;
  if (field == 0u || field == 0xFFu || n > 128u) return false;
  const uint a = ((x & 0x7FFFFFu) | 0x800000u) << 8;
  const uint q = a / n, r = a - q * n;
  const uint drop = uint(findMSB(q)) - 23u;  // 1 to 8: q >= 2^31 / 128
  // |x| / n = (q + r / n) * 2^(field - 158): the significand q >> drop has its leading bit at
  // 2^(drop + field - 135), so its exponent field is drop + field - 8.
  const int biased = int(drop + field) - 8;
  if (biased < 1) return false;  // a denormal quotient
  uint s = q >> drop;
  const uint below = q - (s << drop), halfway = 1u << (drop - 1u);
  if (below > halfway || (below == halfway && (r != 0u || (s & 1u) != 0u))) ++s;
  // s's leading bit (or a carry into 2^24) adds 1 to the field.
  result = (x & 0x80000000u) | ((uint(biased - 1) << 23) + s);
  return true;
}
#endif

#if ELEM == 4
// float32 x / n for any x and count n >= 1: the common case as divideNormalFloat32, the rest
// (denormals in or out, n over 128, zeros, infinities, NaNs) in 32-bit words alone, 16 bits of
// the quotient at a time (one for a count of 2^16 or more): few registers beside the kernels'.
uint divideFloat32(uint x, uint n) {
  uint quick;
  if (divideNormalFloat32(x, n, quick)) return quick;
  const uint sign = x & 0x80000000u, field = (x >> 23) & 0xFFu, fraction = x & 0x7FFFFFu;
  if (field == 0xFFu) return fraction == 0u ? x : x | 0x400000u;  // infinity, or a NaN made quiet
  if (field == 0u && fraction == 0u) return x;                     // +-0
  // |x| = m * 2^e with m's leading bit at 2^23.
  uint m = field != 0u ? fraction | 0x800000u : fraction;
  const uint lift = 23u - uint(findMSB(m));
  m <<= lift;
  const int e = int(max(field, 1u)) - 150 - int(lift);
  // q = floor(m * 2^k / n) has 26 or 27 bits (two or more below the significand's 24), r the
  // remainder: long division of the 24 + k bits of m * 2^k, 16 of them at a time for a count
  // below 2^16 (as longDivide), else one at a time.
  const uint k = uint(findMSB(n)) + 3u;
  uint q = 0u, r = 0u;
  if (n <= 0xFFFFu) {
    for (uint at = (24u + k + 15u) & ~15u; at > 0u;) {
      at -= 16u;  // the digit: bits [at, at + 16) of m * 2^k
      const uint current = (r << 16) | ((at >= k ? m >> (at - k) : m << (k - at)) & 0xFFFFu);
      q = (q << 16) | (current / n);
      r = current % n;
    }
  } else {
    for (uint i = 24u + k; i-- > 0u;) {
      const uint bit = i >= k ? (m >> (i - k)) & 1u : 0u;
      const bool carry = r >= 0x80000000u;  // 2r + 1 carries out of 32 bits: past n
      r = (r << 1) | bit;
      q <<= 1;
      if (carry || r >= n) {
        r -= n;
        q |= 1u;
      }
    }
  }
  // |x| / n = (q + r / n) * 2^(e - k): keep the significand's 24 bits, or, below the least
  // normal exponent, the bits down to the least denormal's 2^-149.
  const uint qBits = uint(findMSB(q)) + 1u;
  const int lead = e - int(k) + int(qBits) - 1;
  uint drop = qBits - 24u, exponent = 0u;
  if (lead >= -126) {
    exponent = uint(lead + 126) << 23;  // the field less 1: s's leading bit adds it
  } else {
    const int d = -149 - (e - int(k));
    if (d > int(qBits)) return sign;  // below half the least denormal
    drop = uint(d);
  }
  uint s = q >> drop;
  const uint below = q - (s << drop), halfway = 1u << (drop - 1u);
  if (below > halfway || (below == halfway && (r != 0u || (s & 1u) != 0u))) ++s;
  return sign | (exponent + s);
}
#endif

uvec2 divideFloat(uvec2 x, uint n) {
#if ELEM == 4
  return uvec2(divideFloat32(x.x, n), 0u);
#else
  const uvec2 one = uvec2(1u, 0u);
  const uvec2 signBit = shiftLeft2x32(one, 8u * ELEM - 1u);
  const uvec2 hidden = shiftLeft2x32(one, kFractionBits);
  const uvec2 fractionMask = sub2x32(hidden, one);
  const uvec2 sign = x & signBit, fraction = x & fractionMask;
  const uint field = shiftRight2x32(x & ~signBit, kFractionBits).x;
  const uint maxField = uint(2 * kExponentBias + 1);
  if (field == maxField)  // infinity, or a NaN made quiet
    return fraction == uvec2(0u) ? x : x | shiftRight2x32(hidden, 1u);
  if (field == 0u && fraction == uvec2(0u)) return x;  // +-0
  // |x| = m * 2^e; the quotient q = floor(m * 2^k / n) gets P + 2 or P + 3 bits (P = the
  // significand's, kFractionBits + 1): two or more below the rounding point, the rest sticky.
  const uvec2 m = field != 0u ? fraction | hidden : fraction;
  const int e = int(max(field, 1u)) - kExponentBias - int(kFractionBits);
  const uint bits = bitLength2x32(m), nBits = uint(findMSB(n)) + 1u;
  const uint k = kFractionBits + 3u - bits + nBits;
  bool inexact;
  const uvec2 q = longDivide(m, bits, k, n, inexact);
  const uint qBits = bitLength2x32(q);
  // The result's exponent, and the bits of q below its last kept one: to the significand's
  // width, or, below the least normal exponent, to the denormals' fixed last bit.
  const int lead = e - int(k) + int(qBits) - 1, minExponent = 1 - kExponentBias;
  int biased = lead + kExponentBias;
  uint drop = qBits - kFractionBits - 1u;
  if (lead < minExponent) {
    biased = 0;
    const int d = minExponent - int(kFractionBits) - (e - int(k));
    if (d > int(qBits)) return sign;  // below half the least denormal
    drop = uint(d);
  }
  uvec2 r = shiftRight2x32(q, drop);
  const uvec2 below = sub2x32(q, shiftLeft2x32(r, drop)), halfway = shiftLeft2x32(one, drop - 1u);
  if (less2x32(halfway, below) || (below == halfway && (inexact || (r.x & 1u) != 0u)))
    r = add2x32(r, one);
  // r's leading bit (the hidden one, or a carry into it from a denormal) adds 1 to the field.
  const uvec2 exponent = biased > 0 ? shiftLeft2x32(uvec2(uint(biased - 1), 0u), kFractionBits)
                                    : uvec2(0u);
  return add2x32(exponent, r) | sign;
#endif
}

// x's low 8 * ELEM bits as an integer (kSigned: two's complement) divided by n, rounded toward
// negative infinity, in the same bits.
uvec2 divideInteger(uvec2 x, uint n, bool isSigned) {
  const uint width = 8u * ELEM;
  bool inexact;
  uvec2 q;
  bool negative;
  if (width == 64u) {
    negative = isSigned && int(x.y) < 0;
    q = longDivide(negative ? sub2x32(uvec2(0u), x) : x, 64u, 0u, n, inexact);
  } else {
    const int v = isSigned ? bitfieldExtract(int(x.x), 0, int(width)) : 0;
    negative = v < 0;
    const uint a = negative ? 0u - uint(v) : x.x & (0xFFFFFFFFu >> (32u - width));
    q = uvec2(a / n, 0u);
    inexact = a % n != 0u;
  }
  if (!negative) return q;
  return sub2x32(uvec2(0u), add2x32(q, uvec2(inexact ? 1u : 0u, 0u)));
}

// A scatter mean's value: the sum x divided by its n updates, plus one where the input value is
// in the mean (kSelf); kKind says float, signed or unsigned. MEAN(v, n) takes and gives an
// element as registers hold it (elem.glsl: V).
uvec2 meanOf(uvec2 x, uint n) {
  if (kSelf) ++n;
  return kKind == VKDML_KIND_FLOAT ? divideFloat(x, n)
                                   : divideInteger(x, n, kKind == VKDML_KIND_SIGNED);
}
#if ELEM == 8
#define MEAN(v, n) meanOf(v, n)
#else
#define MEAN(v, n) meanOf(uvec2(v, 0u), n).x
#endif
