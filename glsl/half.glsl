// float16 conversions in integer arithmetic, bit for bit on every device (no device rounding
// mode or denormal flushing involved).
#ifndef VKDML_HALF_GLSL
#define VKDML_HALF_GLSL

// float16 bits to float32, exactly (every float16 is a normal float32 or zero).
float halfToFloat(uint h) {
  const uint sign = (h & 0x8000u) << 16, exponent = (h >> 10) & 0x1Fu, mantissa = h & 0x3FFu;
  if (exponent == 0x1Fu) return uintBitsToFloat(sign | 0x7F800000u | (mantissa << 13));
  if (exponent == 0u)  // zero or subnormal: mantissa * 2^-24
    return uintBitsToFloat(sign | floatBitsToUint(float(mantissa) * 5.9604644775390625e-8));
  return uintBitsToFloat(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

// float32 bits to float16, rounded to nearest even in integer arithmetic (no device rounding or
// denormal mode involved). A NaN keeps its sign and top payload bits, as NumPy's conversion.
uint floatToHalf(uint f) {
  const uint sign = (f >> 16) & 0x8000u, a = f & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return sign | 0x7C00u | max((a >> 13) & 0x3FFu, 1u);
  if (a >= 0x477FF000u) return sign | 0x7C00u;  // 65520 and above round to infinity
  if (a >= 0x38800000u)                         // a normal float16: rebias, round at bit 13
    return sign | ((a - 0x38000000u + 0xFFFu + ((a >> 13) & 1u)) >> 13);
  const uint exponent = a >> 23;
  if (exponent < 102u) return sign;  // below 2^-25: rounds to zero
  const uint significand = (a & 0x7FFFFFu) | 0x800000u, shift = 126u - exponent;
  const uint halfway = 1u << (shift - 1u), rest = significand & ((halfway << 1) - 1u);
  uint q = significand >> shift;  // units of 2^-24, the float16 subnormal step
  if (rest > halfway || (rest == halfway && (q & 1u) != 0u)) ++q;
  return sign | q;
}

#endif  // VKDML_HALF_GLSL
