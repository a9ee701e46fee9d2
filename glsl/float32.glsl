// float32 arithmetic in 32-bit integer code, rounded to nearest even once, denormals in and out:
// a device's float multiply may flush denormals and its division is only within 2.5 ULP, and
// quantizing must match a CPU bit for bit (glsl/quantize_rows.comp). Needs wide.glsl.
#ifndef VKDML_FLOAT32_GLSL
#define VKDML_FLOAT32_GLSL

// The float32 nearest q * 2^x (q < 2^64, nonzero; `sticky`: q was truncated, the value a little
// more), with `sign`; infinity past the largest float.
uint roundFloat32(uint sign, uvec2 q, int x, bool sticky) {
  const uint n = bitLength2x32(q);
  int biased = x + int(n) - 1 + 127;  // of the leading bit
  int drop = int(n) - 24;             // bits below the significand's last
  if (biased < 1) {                   // a denormal: its last bit is 2^-149
    biased = 0;
    drop = -149 - x;
  }
  if (biased >= 255) return sign | 0x7F800000u;
  if (drop > int(n)) return sign;  // below half the least denormal
  uvec2 r;
  if (drop <= 0) {
    r = shiftLeft2x32(q, uint(-drop));
  } else {
    r = shiftRight2x32(q, uint(drop));
    const uvec2 below = sub2x32(q, shiftLeft2x32(r, uint(drop)));
    const uvec2 halfway = shiftLeft2x32(uvec2(1u, 0u), uint(drop - 1));
    if (less2x32(halfway, below) || (below == halfway && (sticky || (r.x & 1u) != 0u))) ++r.x;
  }
  // r's leading bit (the hidden one, or a carry into it) adds 1 to the exponent field.
  return sign | ((biased > 0 ? uint(biased - 1) << 23 : 0u) + r.x);
}

// A finite nonzero float32's significand m and exponent x (its value m * 2^x).
void splitFloat32(uint a, out uint m, out int x) {
  const uint field = (a >> 23) & 0xFFu;
  m = field != 0u ? (a & 0x7FFFFFu) | 0x800000u : a & 0x7FFFFFu;
  x = int(max(field, 1u)) - 150;
}

uint multiplyFloat32(uint a, uint b) {
  const uint sign = (a ^ b) & 0x80000000u, ma = a & 0x7FFFFFFFu, mb = b & 0x7FFFFFFFu;
  if (ma > 0x7F800000u || mb > 0x7F800000u) return 0x7FC00000u;  // NaN
  if (ma == 0x7F800000u || mb == 0x7F800000u)
    return ma == 0u || mb == 0u ? 0x7FC00000u : sign | 0x7F800000u;  // infinity (times 0: NaN)
  if (ma == 0u || mb == 0u) return sign;
  uint sa, sb;
  int xa, xb;
  splitFloat32(ma, sa, xa);
  splitFloat32(mb, sb, xb);
  return roundFloat32(sign, product2x32(sa, sb), xa + xb, false);
}

// multiplyFloat32's product through the device's multiply where both factors and the product
// are normal: Vulkan's float multiply rounds correctly, but may flush denormals (in or out);
// then the integer steps. `precise`: never fused with what a caller adds to it.
uint multiplyNormalFloat32(uint a, uint b) {
  precise const float p = uintBitsToFloat(a) * uintBitsToFloat(b);
  const uint bits = floatBitsToUint(p);
  const uint fa = a & 0x7F800000u, fb = b & 0x7F800000u, fp = bits & 0x7F800000u;
  const bool normal = fa != 0u && fb != 0u && fp != 0u && fa != 0x7F800000u &&
                      fb != 0x7F800000u && fp != 0x7F800000u;
  return normal ? bits : multiplyFloat32(a, b);
}

// 1 / a for a finite nonzero a: 2^50 / m, long division 8 bits at a time (the last digit 2),
// then rounded. r < m < 2^24, so r * 2^8 stays within 32 bits.
uint reciprocalFloat32(uint a) {
  uint m;
  int x;
  splitFloat32(a & 0x7FFFFFFFu, m, x);
  uvec2 q = uvec2(0u);
  uint r = 1u;  // 2^50's one; its 50 zeros come in the digits
  for (uint i = 0u; i < 7u; ++i) {
    const uint bits = i < 6u ? 8u : 2u;
    r <<= bits;
    const uint digit = r / m;
    q = shiftLeft2x32(q, bits);
    q.x |= digit;
    r -= digit * m;
  }
  return roundFloat32(a & 0x80000000u, q, -x - 50, r != 0u);
}

// reciprocalFloat32(a) for a finite nonzero a, most of it in a few steps: where 1 / a is a
// normal float (a's exponent field 1 to 252), q = floor(2^47 / m) for a's significand m is the
// device's float quotient, within a few units (Vulkan: 2.5 ULP), corrected by the remainder
// 2^47 - q * m until it lies in [0, m), then proven exactly (the 64-bit product); the
// significand is q rounded by the remainder (no ties: 2^47 / m is a whole number or has an odd
// divisor). Elsewhere, or if the quotient was further off, the long division.
uint reciprocalNormalFloat32(uint a) {
  const uint field = (a >> 23) & 0xFFu;
  if (field == 0u || field > 252u) return reciprocalFloat32(a);
  const uint m = (a & 0x7FFFFFu) | 0x800000u;
  uint q = uint(min(140737488355328.0 / float(m), 16777216.0));  // 2^47 / m, at most 2^24
  int r = int(0u - q * m);  // 2^47 - q * m, within 2^31 while q is a few units off
  for (uint k = 0u; k < 4u; ++k) {
    if (r < 0) {
      --q;
      r += int(m);
    } else if (r >= int(m)) {
      ++q;
      r -= int(m);
    }
  }
  uint hi, lo;
  umulExtended(q, m, hi, lo);  // 2^47 - q * m in [0, m): hi:lo is 2^47 - r
  const bool exact = r >= 0 && r < int(m) && (r == 0 ? hi == 0x8000u && lo == 0u
                                                        : hi == 0x7FFFu && lo == 0u - uint(r));
  if (!exact) return reciprocalFloat32(a);
  q += 2 * r >= int(m) ? 1u : 0u;  // 2^47 / m rounded to nearest
  // 1 / a = (2^47 / m) * 2^(-47 - x), a = m * 2^x, x = field - 150: q's leading bit 2^23 gives
  // the exponent field 253 - field, one more where q reached 2^24 (m a power of 2, or rounded up).
  const uint f = q >= 0x1000000u ? 254u - field : 253u - field;
  const uint s = q >= 0x1000000u ? q >> 1 : q;
  return (a & 0x80000000u) | (f << 23) | (s & 0x7FFFFFu);
}

#endif  // VKDML_FLOAT32_GLSL
