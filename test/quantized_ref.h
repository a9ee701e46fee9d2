// CPU references of the quantized layouts, their quantizers and float16, shared by the quantized
// rows' and the embedding bags' tests and the fuzz target: written from the definitions (dml.h:
// VKDML_QUANTIZED_FORMAT, VKDML_SCATTER_QUANTIZED_ROWS_OPERATOR_DESC), not from vkdml's kernels.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "op_spec.h"  // UINT, Bytes (no Catch: test/fuzz includes this too)

namespace vt {

inline UINT BlockBytes(VKDML_QUANTIZED_FORMAT f) {
  return f == VKDML_QUANTIZED_FORMAT_Q8_0 ? 34 : 18;
}

// float16 bits to float, through the definition: (-1)^s * 2^(e - 15) * 1.m, or 2^-14 * 0.m.
inline float HalfValue(uint16_t h) {
  const int e = (h >> 10) & 31, m = h & 1023;
  const double sign = (h & 0x8000) ? -1 : 1;
  if (e == 31) return float(m ? NAN : sign * INFINITY);
  return float(sign * (e ? std::ldexp(1024 + m, e - 25) : std::ldexp(m, -24)));
}

// The float16 nearest to f, ties to the even one: a binary search over the finite positive
// float16s, whose bits order as their values do. 65520 and above round to infinity.
inline uint16_t NearestHalf(float f) {
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double a = std::fabs(double(f));
  if (a >= 65520.0) return sign | 0x7C00;
  uint32_t lo = 0, hi = 0x7BFF;  // the largest bits whose value is <= a
  while (lo < hi) {
    const uint32_t mid = (lo + hi + 1) / 2;
    if (double(HalfValue(uint16_t(mid))) <= a)
      lo = mid;
    else
      hi = mid - 1;
  }
  if (lo == 0x7BFF) return uint16_t(sign | lo);  // 65504 to 65520: below the midpoint
  const double below = a - HalfValue(uint16_t(lo)), above = HalfValue(uint16_t(lo + 1)) - a;
  const bool up = above < below || (above == below && (lo & 1));
  return uint16_t(sign | (up ? lo + 1 : lo));
}

// Value v (0-31) of a block, in float32: d * q, one rounding.
inline float BlockValue(VKDML_QUANTIZED_FORMAT f, const uint8_t* block, UINT v) {
  const float d = HalfValue(uint16_t(block[0] | block[1] << 8));
  int q;
  if (f == VKDML_QUANTIZED_FORMAT_Q8_0)
    q = int8_t(block[2 + v]);
  else
    q = (v < 16 ? block[2 + v] & 15 : block[2 + v - 16] >> 4) - 8;
  return d * float(q);
}

// A block's float16 scale made finite (an infinite or NaN one gives NaN bits the operators leave
// unspecified): exponent 31 becomes 15.
inline void MakeScaleFinite(uint8_t* scale) {
  if ((scale[1] & 0x7C) == 0x7C) scale[1] &= 0xBF;
}

// ggml's reference quantizers (quantize_row_q8_0_ref, quantize_row_q4_0_ref), in C++ float32:
// each statement one rounding; where 1 / d overflows (d below about 2^-128), q = 0 (Q4_0: 8),
// as dml.h says (C's conversion of the infinite product is undefined). x must be finite.
inline void QuantizeBlock(VKDML_QUANTIZED_FORMAT f, const float* x, uint8_t* out) {
  float d;
  if (f == VKDML_QUANTIZED_FORMAT_Q8_0) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    d = amax / 127;
  } else {
    float amax = 0, max = 0;
    for (int j = 0; j < 32; ++j)
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    d = max / -8;
  }
  const float id = d != 0 ? 1.0f / d : 0.0f;
  const bool overflow = std::isinf(id);
  const uint16_t h = NearestHalf(d);
  out[0] = uint8_t(h);
  out[1] = uint8_t(h >> 8);
  for (int j = 0; j < 32; ++j) {
    const float v = x[j] * id;
    if (f == VKDML_QUANTIZED_FORMAT_Q8_0) {
      // std::round: halves away from zero
      out[2 + j] = overflow ? 0 : uint8_t(int8_t(std::round(v)));
    } else {
      const float w = v + 8.5f;
      const int nibble = overflow ? 8 : std::min(15, int(int8_t(w)));
      if (j < 16)
        out[2 + j] = uint8_t(nibble);
      else
        out[2 + j - 16] = uint8_t(out[2 + j - 16] | nibble << 4);
    }
  }
}

// Random table bytes with finite scales (test_util.h's Rng).
template <typename Random>
Bytes RandomTable(Random& rng, VKDML_QUANTIZED_FORMAT f, UINT rows, UINT blocks, UINT rowStride,
                  UINT64 total) {
  Bytes t(total);
  for (auto& b : t) b = uint8_t(rng.U(0, 255));
  for (UINT r = 0; r < rows; ++r)
    for (UINT k = 0; k < blocks; ++k) {
      uint8_t* scale = &t[UINT64(r) * rowStride + k * BlockBytes(f)];
      MakeScaleFinite(scale);
      if (rng.P(0.05)) scale[0] = scale[1] = 0;  // d = 0: every value +0 or -0
    }
  return t;
}

}  // namespace vt
