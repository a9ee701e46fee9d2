// The scatters' reduce functions (dml.h: VKDML_REDUCE_FUNCTION) on an element's bits: up to 4
// bytes in the low bits of a uint, 8 bytes as uvec2 (low, high word). Each step is computed in
// the element's own type: integers wrap modulo 2^bits, floats round to nearest even, and MAX and
// MIN are NumPy's maximum and minimum (f(x, u) = x if x is NaN or x >= u (x <= u), else u; so a
// NaN propagates, and of two equal values the accumulated one stays). float16 is computed in
// float32 and rounded once: exact, since float32 carries more than 2 * 11 + 2 significand bits.
// Needs ELEM, kReduce and kKind; FLOAT64 for 8-byte floats in float64 (shaderFloat64), or
// SOFT_FLOAT64 in 32-bit integer arithmetic (glsl/soft_float64.glsl). Float denormals are
// kept, as a sequential CPU computation keeps them, by one of: DENORM_PRESERVE (32 or 64) asks
// the device for it (SPIR-V's DenormPreserve, shaderDenormPreserveFloat32/64); WIDE_FLOAT32
// computes float32 in float64, converting in integer code (float32's denormals are normal
// float64s; the float64 sum or product of two float32s rounds to float32 as directly, since
// float64 carries more than 2 * 24 + 2 significand bits), for devices that flush float32
// denormals but not float64's (NVIDIA). Without either, a device may flush them.

#if DENORM_PRESERVE
#extension GL_EXT_spirv_intrinsics : require
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"], capabilities = [4464], 4459,
                     DENORM_PRESERVE);  // capability DenormPreserve, execution mode DenormPreserve
#endif

#if ELEM <= 4
const uint kWidthMask = ELEM == 4 ? 0xFFFFFFFFu : (1u << (8u * ELEM)) - 1u;

int toSigned(uint v) {
  const uint unused = 32u - 8u * ELEM;
  return int(v << unused) >> unused;
}

bool isNanBits(uint v) {
  return ELEM == 2 ? (v & 0x7FFFu) > 0x7C00u : (v & 0x7FFFFFFFu) > 0x7F800000u;
}

#include "half.glsl"  // halfToFloat, floatToHalf

#if WIDE_FLOAT32
// float32 bits to float64, exactly, in integer code (no device conversion that may flush).
double doubleFromFloatBits(uint f) {
  const uint sign = f & 0x80000000u, exponent = (f >> 23) & 0xFFu, mantissa = f & 0x7FFFFFu;
  uvec2 d;  // (low, high) words
  if (exponent == 0xFFu) {
    d = uvec2(mantissa << 29, sign | 0x7FF00000u | (mantissa >> 3));
  } else if (exponent != 0u) {
    d = uvec2(mantissa << 29, sign | ((exponent + 896u) << 20) | (mantissa >> 3));
  } else if (mantissa == 0u) {
    d = uvec2(0u, sign);
  } else {  // a denormal, mantissa * 2^-149: normalized, its leading bit at `top`
    const int top = findMSB(mantissa);
    const uint fraction = mantissa & ((1u << top) - 1u), shift = 52u - uint(top);  // 30..52
    d.x = shift < 32u ? fraction << shift : 0u;
    d.y = sign | (uint(top + 874) << 20) |
          (shift < 32u ? fraction >> (32u - shift) : fraction << (shift - 32u));
  }
  return packDouble2x32(d);
}

// float64 to float32 bits, rounded to nearest even in integer code, denormals included.
uint floatBitsFromDouble(double value) {
  const uvec2 d = unpackDouble2x32(value);
  const uint sign = d.y & 0x80000000u, exponent = (d.y >> 20) & 0x7FFu;
  const uint high = d.y & 0xFFFFFu;  // the significand's top 20 bits, below them d.x
  if (exponent == 0x7FFu) {  // infinity, or a NaN with its top payload bits
    const uint payload = (high << 3) | (d.x >> 29);
    return sign | 0x7F800000u | ((high | d.x) != 0u ? max(payload, 1u) : 0u);
  }
  if (exponent >= 1151u) return sign | 0x7F800000u;  // 2^128 and above
  if (exponent >= 897u) {  // a normal float32 (or rounds up to the next binade, or infinity)
    const uint t = ((exponent - 896u) << 23) | (high << 3) | (d.x >> 29);
    const uint rest = d.x & 0x1FFFFFFFu, halfway = 0x10000000u;
    return sign | (t + (rest > halfway || (rest == halfway && (t & 1u) != 0u) ? 1u : 0u));
  }
  // A denormal or zero: the significand (with its leading 1) over 2^shift, shift 30..53 for
  // float64 exponents 896 down to 873; below that the value is under half the smallest denormal.
  if (exponent < 873u) return sign;
  const uint shift = 926u - exponent;
  const uvec2 significand = uvec2(d.x, high | 0x100000u);
  uint q, restHigh, restLow, halfHigh, halfLow;  // q = significand >> shift, rest below it
  if (shift < 32u) {
    q = (significand.y << (32u - shift)) | (significand.x >> shift);
    restHigh = 0u;
    restLow = significand.x & ((1u << shift) - 1u);
    halfHigh = 0u;
    halfLow = 1u << (shift - 1u);
  } else {
    q = significand.y >> (shift - 32u);
    restHigh = shift == 32u ? 0u : significand.y & ((1u << (shift - 32u)) - 1u);
    restLow = significand.x;
    halfHigh = shift == 32u ? 0u : 1u << (shift - 33u);
    halfLow = shift == 32u ? 0x80000000u : 0u;
  }
  const bool above = restHigh > halfHigh || (restHigh == halfHigh && restLow > halfLow);
  const bool tie = restHigh == halfHigh && restLow == halfLow;
  return sign | (q + (above || (tie && (q & 1u) != 0u) ? 1u : 0u));
}
#endif

float toFloat(uint v) {
  return ELEM == 2 ? halfToFloat(v) : uintBitsToFloat(v);
}
uint fromFloat(float f) {
  return ELEM == 2 ? floatToHalf(floatBitsToUint(f)) : floatBitsToUint(f);
}

// Float MAX and MIN on the bits, neither a NaN: whether x stays (x >= u, x <= u for MIN), with
// -0 == +0, exactly, whatever the device does with denormals.
bool floatKeeps(uint x, uint u) {
  const uint sign = (kWidthMask >> 1) + 1u;
  if (((x | u) & (sign - 1u)) == 0u) return true;  // two zeros
  // Ordered as unsigned integers: negative values inverted, positive ones above them.
  const uint a = (x & sign) != 0u ? ~x & kWidthMask : x | sign;
  const uint b = (u & sign) != 0u ? ~u & kWidthMask : u | sign;
  return kReduce == VKDML_REDUCE_MAX ? a >= b : a <= b;
}

// Float x + u (add) or x * u, rounded once: `precise`, so no device fuses a product with a later
// sum (glsl/embedding_bag.comp adds weighted rows). WIDE_FLOAT32: in float32 where neither
// operand nor the result is a denormal, since a device's flushing then changes nothing;
// otherwise through float64.
uint floatArith(uint x, uint u, bool add) {
#if WIDE_FLOAT32
  if (ELEM == 4) {
    const bool denormal = ((x & 0x7F800000u) == 0u && (x & 0x7FFFFFu) != 0u) ||
                          ((u & 0x7F800000u) == 0u && (u & 0x7FFFFFu) != 0u);
    if (!denormal) {
      precise const float f = add ? uintBitsToFloat(x) + uintBitsToFloat(u)
                                  : uintBitsToFloat(x) * uintBitsToFloat(u);
      const uint r = floatBitsToUint(f);
      const bool zero = add ? (x ^ u) == 0x80000000u || ((x | u) & 0x7FFFFFFFu) == 0u
                            : (x & 0x7FFFFFFFu) == 0u || (u & 0x7FFFFFFFu) == 0u;
      if ((r & 0x7F800000u) != 0u || zero) return r;  // normal, infinite, NaN, or exactly 0
    }
    const double a = doubleFromFloatBits(x), b = doubleFromFloatBits(u);
    return floatBitsFromDouble(add ? a + b : a * b);
  }
#endif
  precise const float f = add ? toFloat(x) + toFloat(u) : toFloat(x) * toFloat(u);
  return fromFloat(f);
}

// Float ADD and MULTIPLY (kReduce).
uint floatCombine(uint x, uint u) {
  return floatArith(x, u, kReduce == VKDML_REDUCE_ADD);
}

uint reduceBits(uint x, uint u) {
  if (kReduce == VKDML_REDUCE_NONE) return u;
  if (kKind == VKDML_KIND_FLOAT) {
    if (kReduce == VKDML_REDUCE_ADD || kReduce == VKDML_REDUCE_MULTIPLY) return floatCombine(x, u);
    if (isNanBits(x)) return x;
    if (isNanBits(u)) return u;
    return floatKeeps(x, u) ? x : u;
  }
  if (kReduce == VKDML_REDUCE_ADD) return (x + u) & kWidthMask;
  if (kReduce == VKDML_REDUCE_MULTIPLY) return (x * u) & kWidthMask;
  const bool keep = kKind == VKDML_KIND_SIGNED
                        ? (kReduce == VKDML_REDUCE_MAX ? toSigned(x) >= toSigned(u)
                                                       : toSigned(x) <= toSigned(u))
                        : (kReduce == VKDML_REDUCE_MAX ? x >= u : x <= u);
  return keep ? x : u;
}

#else  // ELEM == 8

uvec2 add64(uvec2 a, uvec2 b) {
  const uint low = a.x + b.x;
  return uvec2(low, a.y + b.y + (low < a.x ? 1u : 0u));
}

uvec2 multiply64(uvec2 a, uvec2 b) {  // the low 64 bits, the same for signed and unsigned
  uint high, low;
  umulExtended(a.x, b.x, high, low);
  return uvec2(low, high + a.x * b.y + a.y * b.x);
}

bool greater64(uvec2 a, uvec2 b) {
  if (a.y != b.y) return kKind == VKDML_KIND_SIGNED ? int(a.y) > int(b.y) : a.y > b.y;
  return a.x > b.x;
}

bool isNanBits(uvec2 v) {
  return (v.y & 0x7FFFFFFFu) > 0x7FF00000u || ((v.y & 0x7FFFFFFFu) == 0x7FF00000u && v.x != 0u);
}

#if SOFT_FLOAT64
#include "soft_float64.glsl"
#endif

uvec2 reduceBits(uvec2 x, uvec2 u) {
  if (kReduce == VKDML_REDUCE_NONE) return u;
  if (kKind == VKDML_KIND_FLOAT) {
#if FLOAT64
    const double a = packDouble2x32(x), b = packDouble2x32(u);
    if (kReduce == VKDML_REDUCE_ADD) return unpackDouble2x32(a + b);
    if (kReduce == VKDML_REDUCE_MULTIPLY) return unpackDouble2x32(a * b);
    if (isNanBits(x)) return x;
    if (isNanBits(u)) return u;
    return (kReduce == VKDML_REDUCE_MAX ? a >= b : a <= b) ? x : u;
#elif SOFT_FLOAT64
    if (kReduce == VKDML_REDUCE_ADD) return softAdd64(x, u);
    if (kReduce == VKDML_REDUCE_MULTIPLY) return softMultiply64(x, u);
    if (isNanBits(x)) return x;
    if (isNanBits(u)) return u;
    return softKeeps64(x, u, kReduce == VKDML_REDUCE_MAX) ? x : u;
#else
    return x;  // not reached: 8-byte floats take the FLOAT64 or SOFT_FLOAT64 modules
#endif
  }
  if (kReduce == VKDML_REDUCE_ADD) return add64(x, u);
  if (kReduce == VKDML_REDUCE_MULTIPLY) return multiply64(x, u);
  if (x == u) return x;
  return (kReduce == VKDML_REDUCE_MAX ? greater64(x, u) : greater64(u, x)) ? x : u;
}
#endif
