#version 450
// MoE permute and unpermute (VKDML_OPERATOR_MOE_PERMUTE, _UNPERMUTE; lib/operators/moe.cpp,
// lib/kernels/kernel_moe.cpp). Every tensor is read and written in 32-bit words (bases in words:
// Kernel::unit 4; ROWS with V4 in uvec4s, unit 16), so no device needs 8/16-bit storage. A
// stage's values are its plan's (params, direct); the sorted keys and values of a permute start
// at plans[p].sortedBase in the scratch's keys and values (glsl/radix_sort.comp sorted them).
// KEYS: entry i = t * k + j of TopkIdsTensor: its key (the expert, or E = params.x where the id
//   is outside [0, E): dropped, sorted last) and its number, into the sort's first half.
// ROWS: a row's threads per position p (params.w of them, a workgroup's for long rows), along
//   the row: OutputTensor's row p is InputTensor's row (entry / k), or zeros where the entry is
//   dropped.
// OFFSETS: expert e's first position (its key's lower bound in the sorted keys, by bisection).
// PERMUTATION: position p's entry, or -1 where dropped. INVERSE: entry i's position, or -1.
// WEIGHTS: WeightsTensor's entry i into the scratch as float32.
// UNPERMUTE: a row's threads per token t (as ROWS), a group of 4 values a thread: the weighted
//   rows of its k entries summed in j order in float32 (glsl/arith.glsl's floatArith: each
//   product and sum rounded once, denormals kept by _dp and _w), rows outside [0, rows) skipped.
//   With V4 (_v4: rows of whole uvec4s, one type), a uvec4 of each entry a thread, folded in
//   the device's float32 first and again exactly where a zero exponent, an infinity or a NaN
//   shows that the device's result may differ.
// HALVES (_h: float16 rows or row strides of an odd number of values): ROWS and UNPERMUTE a
//   thread per 32-bit word of OutputTensor's span, each of its halves that is an element
//   computed (so no two threads write one word), the others kept.
// INDEX64: 64-bit ids (KEYS) or rows (UNPERMUTE); VALUE_BITS: UNPERMUTE's InputTensor type.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#define ELEM 4  // arith.glsl on float32 bits
#include "common.glsl"
#include "arith.glsl"

layout(local_size_x_id = VKDML_SPEC_GROUP_SIZE) in;
// PERMUTATION, INVERSE, OFFSETS: the output's element size (4 or 8 bytes); WEIGHTS: the
// weights'; UNPERMUTE: OutputTensor's (4: float32, 2: float16).
layout(constant_id = VKDML_SPEC_OUTPUT_SIZE) const uint kOutputSize = 4;

#if V4
#define WORD uvec4
#else
#define WORD uint
#endif
layout(std430, set = 0, binding = VKDML_BIND_SOURCE) restrict readonly buffer Source {
  WORD sourceWords[];
};
layout(std430, set = 0, binding = VKDML_BIND_INDICES) restrict readonly buffer Ids {
  uint idWords[];
};
#if HALVES  // a word's other half is read and kept
#define OUTPUT_ACCESS
#else
#define OUTPUT_ACCESS writeonly
#endif
layout(std430, set = 0, binding = VKDML_BIND_OUTPUT) restrict OUTPUT_ACCESS buffer Output {
  WORD outputWords[];
};

#define kStep (gl_NumWorkGroups.x * gl_WorkGroupSize.x)

// The id or row at element e of the ids binding (pc.indexBase in its elements), below `limit`,
// else `limit` (negative, past it, or past 2^32).
uint readId(uint e, uint limit) {
  const uint at = pc.indexBase + e;
#if INDEX64
  const uint lo = idWords[2u * at], hi = idWords[2u * at + 1u];
  return hi == 0u && lo < limit ? lo : limit;
#else
  const uint lo = idWords[at];
  return lo < limit ? lo : limit;  // a negative INT32 is past any limit as a uint
#endif
}

#if !V4
// A value at element e of an index output (kOutputSize bytes; -1 sign-extended for 8 bytes).
void storeIndex(uint e, uint value, bool none) {
  const uint v = none ? 0xFFFFFFFFu : value;
  if (kOutputSize == 8u) {
    outputWords[pc.dstBase + 2u * e] = v;
    outputWords[pc.dstBase + 2u * e + 1u] = none ? 0xFFFFFFFFu : 0u;
  } else {
    outputWords[pc.dstBase + e] = v;
  }
}
#endif

#if HALVES
// The float16 at half h of the source binding.
uint sourceHalf(uint h) {
  return (sourceWords[pc.srcBase + h / 2u] >> ((h & 1u) * 16u)) & 0xFFFFu;
}

// Output word w: its halves that hold elements (element) become v's, the others stay.
void storeHalves(uint w, uvec2 v, bvec2 element) {
  if (!any(element)) return;
  uint word = v.x | (v.y << 16);
  if (!all(element)) {
    const uint old = outputWords[pc.dstBase + w];
    word = element.x ? (old & 0xFFFF0000u) | v.x : (old & 0xFFFFu) | (v.y << 16);
  }
  outputWords[pc.dstBase + w] = word;
}
#endif

// ROWS and UNPERMUTE: a row's `lanes` threads (a power of 2, at most the workgroup's), so a
// workgroup takes gl_WorkGroupSize.x / lanes rows at once: this thread's first row and step.
uint firstRow(uint lanes) {
  return gl_WorkGroupID.x * (gl_WorkGroupSize.x / lanes) + gl_LocalInvocationID.x / lanes;
}
uint rowStep(uint lanes) {
  return gl_NumWorkGroups.x * (gl_WorkGroupSize.x / lanes);
}

#if UNPERMUTE && V4
// The float32 bits of 4 float16 values, two a word, exactly (glsl/half.glsl).
uvec4 halvesToFloats(uvec2 words) {
  return uvec4(floatBitsToUint(halfToFloat(words.x & 0xFFFFu)),
               floatBitsToUint(halfToFloat(words.x >> 16)),
               floatBitsToUint(halfToFloat(words.y & 0xFFFFu)),
               floatBitsToUint(halfToFloat(words.y >> 16)));
}

// acc + value * w for 4 float32 values, each product and sum rounded once (floatArith).
uvec4 foldValues(uvec4 acc, uvec4 value, uint w) {
  [[unroll]] for (uint q = 0u; q < 4u; ++q)
    acc[q] = floatArith(acc[q], floatArith(value[q], w, false), true);
  return acc;
}

// The fast fold, in the device's float32 arithmetic, whose products and sums are exact where
// none of them has a zero exponent (a denormal, flushed or not, or a zero): its operands are
// then normal too (float16 values are; the sums are the previous ones or +0), so no device
// flushes anything. `tiny` keeps the least of their bits without the sign: below 2^24, one had
// a zero exponent, and the caller folds again with floatArith.
uvec4 foldFast(uvec4 acc, vec4 value, float w, inout uint tiny) {
  precise const vec4 product = value * w;
  precise const vec4 sum = uintBitsToFloat(acc) + product;
  const uvec4 p = floatBitsToUint(product) << 1, s = floatBitsToUint(sum) << 1;
  tiny = min(tiny, min(min(min(p.x, p.y), min(p.z, p.w)), min(min(s.x, s.y), min(s.z, s.w))));
  return floatBitsToUint(sum);
}

// 4 float16 values (two a word) to float32 by a multiply by 2^112: exact for normal values and
// zeros, and for denormals where the device keeps float32 denormals; a flushed one becomes 0,
// which foldFast's product shows. Infinities and NaNs (exponent 31) set bit 15 or 31 of
// `special` (each half's exponent field plus 1 carries into its top bit) for the exact fold.
vec4 halvesFast(uvec2 x, inout uint special) {
  special |= ((x.x & 0x7C007C00u) + 0x04000400u) | ((x.y & 0x7C007C00u) + 0x04000400u);
  const uvec4 magnitude = uvec4((x.x & 0x7FFFu) << 13, (x.x >> 3) & 0x0FFFE000u,
                                (x.y & 0x7FFFu) << 13, (x.y >> 3) & 0x0FFFE000u);
  const uvec4 sign = uvec4(x.x << 16, x.x, x.y << 16, x.y) & 0x80000000u;
  precise const vec4 f = uintBitsToFloat(magnitude) * 5.192296858534828e33;  // 2^112
  return uintBitsToFloat(floatBitsToUint(f) | sign);
}
#endif

void main() {
  const uint p = pc.plan, count = plans[p].count, base = plans[p].sortedBase;
  const uvec4 params = plans[p].params;
#if KEYS
  for (uint i = gl_GlobalInvocationID.x; i < count; i += kStep) {
    const uint t = i / params.y, j = i - t * params.y;
    SORT_KEY(i) = readId(t * params.z + j * params.w, params.x);
    SORT_VALUE(i) = i;
  }
#elif ROWS && HALVES
  // A thread per 32-bit word of OutputTensor's span (float16 rows or row strides of an odd
  // number of values): each half that is an element gets its entry's value (0 where dropped).
  const uint width = params.z, entries = params.w, inStride = VKDML_AT(plans[p].direct, 0),
             outStride = VKDML_AT(plans[p].direct, 1);
  for (uint w = gl_GlobalInvocationID.x; w < count; w += kStep) {
    uvec2 v = uvec2(0u);
    bvec2 element = bvec2(false);
    for (uint q = 0u; q < 2u; ++q) {
      const uint h = 2u * w + q, row = h / outStride, col = h - row * outStride;
      if (row >= entries || col >= width) continue;  // a stride's padding, past the last row
      element[q] = true;
      if (SORT_KEY(base + row) < params.x)
        v[q] = sourceHalf(SORT_VALUE(base + row) / params.y * inStride + col);
    }
    storeHalves(w, v, element);
  }
#elif ROWS
  const uint width = params.z, inStride = VKDML_AT(plans[p].direct, 0),
             outStride = VKDML_AT(plans[p].direct, 1);
  for (uint row = firstRow(params.w); row < count; row += rowStep(params.w)) {
    const bool kept = SORT_KEY(base + row) < params.x;
    const uint from = pc.srcBase + SORT_VALUE(base + row) / params.y * inStride;
    const uint to = pc.dstBase + row * outStride;
    for (uint w = gl_LocalInvocationID.x % params.w; w < width; w += params.w)
      outputWords[to + w] = kept ? sourceWords[from + w] : WORD(0u);
  }
#elif OFFSETS
  // Expert e's first position: the first sorted key >= e (keys are at most E).
  for (uint e = gl_GlobalInvocationID.x; e < count; e += kStep) {
    uint lo = 0u, hi = params.y;
    while (lo < hi) {
      const uint mid = lo + (hi - lo) / 2u;
      if (SORT_KEY(base + mid) < e)
        lo = mid + 1u;
      else
        hi = mid;
    }
    storeIndex(e * params.z, lo, false);
  }
#elif PERMUTATION
  for (uint i = gl_GlobalInvocationID.x; i < count; i += kStep)
    storeIndex(i * params.y, SORT_VALUE(base + i), SORT_KEY(base + i) >= params.x);
#elif INVERSE
  for (uint i = gl_GlobalInvocationID.x; i < count; i += kStep) {
    const uint entry = SORT_VALUE(base + i), t = entry / params.y, j = entry - t * params.y;
    storeIndex(t * params.z + j * params.w, i, SORT_KEY(base + i) >= params.x);
  }
#elif WEIGHTS
  for (uint i = gl_GlobalInvocationID.x; i < count; i += kStep) {
    const uint t = i / params.x, j = i - t * params.x, e = t * params.y + j * params.z;
    uint w;
    if (kOutputSize == 4u) {
      w = sourceWords[pc.srcBase + e];
    } else {
      const uint word = sourceWords[pc.srcBase + e / 2u];
      w = floatBitsToUint(halfToFloat((e & 1u) != 0u ? word >> 16 : word & 0xFFFFu));
    }
    WEIGHT(i) = w;
  }
#elif UNPERMUTE && V4
  // A uvec4 of each entry's row a thread (8 float16 or 4 float32 values; OutputTensor of the
  // same type, rows on 16 bytes): 4 entries' ids, then their rows' loads, then their folds in j
  // order, so a thread waits on 4 loads at once rather than one; the folds in the device's
  // float32 (foldFast), and again exactly where a value may not be. params.z: uvec4s a row.
  const uint k = params.x, rows = params.y, groups = params.z;
  const uint s0 = VKDML_AT(plans[p].direct, 0), s1 = VKDML_AT(plans[p].direct, 1);
  const uint inStride = VKDML_AT(plans[p].direct, 2), outStride = VKDML_AT(plans[p].direct, 3);
  for (uint t = firstRow(params.w); t < count; t += rowStep(params.w)) {
    for (uint g = gl_LocalInvocationID.x % params.w; g < groups; g += params.w) {
      uvec4 lo = uvec4(0u), hi = uvec4(0u);  // +0: the sums of values 0-3 and 4-7
      uint tiny = 0xFFFFFFFFu, special = 0u;
      for (uint j0 = 0u; j0 < k; j0 += 4u) {
        uint r[4];
        uvec4 v[4];
        [[unroll]] for (uint q = 0u; q < 4u; ++q)
          r[q] = j0 + q < k ? readId(t * s0 + (j0 + q) * s1, rows) : rows;
        [[unroll]] for (uint q = 0u; q < 4u; ++q) {
          v[q] = uvec4(0u);
          if (r[q] < rows) v[q] = sourceWords[pc.srcBase + r[q] * inStride + g];
        }
        [[unroll]] for (uint q = 0u; q < 4u; ++q) {
          if (r[q] == rows) continue;  // a dropped entry (-1), a row past InputTensor, past k
          const float w = uintBitsToFloat(WEIGHT(t * k + j0 + q));
#if VALUE_BITS == 32
          lo = foldFast(lo, uintBitsToFloat(v[q]), w, tiny);
#else
          lo = foldFast(lo, halvesFast(v[q].xy, special), w, tiny);
          hi = foldFast(hi, halvesFast(v[q].zw, special), w, tiny);
#endif
        }
      }
      if (tiny < 0x01000000u || (special & 0x80008000u) != 0u) {
        // A zero exponent, an infinity or a NaN on the way: the exact fold, an entry at a time.
        lo = hi = uvec4(0u);
        for (uint j = 0u; j < k; ++j) {
          const uint row = readId(t * s0 + j * s1, rows);
          if (row == rows) continue;
          const uvec4 v = sourceWords[pc.srcBase + row * inStride + g];
          const uint w = WEIGHT(t * k + j);
#if VALUE_BITS == 32
          lo = foldValues(lo, v, w);
#else
          lo = foldValues(lo, halvesToFloats(v.xy), w);
          hi = foldValues(hi, halvesToFloats(v.zw), w);
#endif
        }
      }
#if VALUE_BITS == 32
      outputWords[pc.dstBase + t * outStride + g] = lo;
#else
      outputWords[pc.dstBase + t * outStride + g] =
          uvec4(floatToHalf(lo.x) | (floatToHalf(lo.y) << 16),
                floatToHalf(lo.z) | (floatToHalf(lo.w) << 16),
                floatToHalf(hi.x) | (floatToHalf(hi.y) << 16),
                floatToHalf(hi.z) | (floatToHalf(hi.w) << 16));
#endif
    }
  }
#elif UNPERMUTE && HALVES
  // A thread per 32-bit word of OutputTensor's span (a float16 tensor's rows or row strides of an
  // odd number of values): each element in it (a float32, or each float16 half) the weighted sum
  // of its token's entries, as below; a half that is no element stays.
  const uint k = params.x, rows = params.y, width = params.z, tokens = params.w;
  const uint s0 = VKDML_AT(plans[p].direct, 0), s1 = VKDML_AT(plans[p].direct, 1);
  const uint inStride = VKDML_AT(plans[p].direct, 2), outStride = VKDML_AT(plans[p].direct, 3);
  const uint per = kOutputSize == 4u ? 1u : 2u;  // elements a word
  for (uint w = gl_GlobalInvocationID.x; w < count; w += kStep) {
    uvec2 v = uvec2(0u);
    bvec2 element = bvec2(false);
    for (uint q = 0u; q < per; ++q) {
      const uint e = per * w + q, t = e / outStride, col = e - t * outStride;
      if (t >= tokens || col >= width) continue;  // a stride's padding, past the last row
      element[q] = true;
      uint acc = 0u;  // +0
      for (uint j = 0u; j < k; ++j) {
        const uint row = readId(t * s0 + j * s1, rows);
        if (row == rows) continue;  // a dropped entry (-1) or a row past InputTensor
#if VALUE_BITS == 32
        const uint x = sourceWords[pc.srcBase + row * inStride + col];
#else
        const uint x = floatBitsToUint(halfToFloat(sourceHalf(row * inStride + col)));
#endif
        acc = floatArith(acc, floatArith(x, WEIGHT(t * k + j), false), true);
      }
      v[q] = kOutputSize == 4u ? acc : floatToHalf(acc);
    }
    if (kOutputSize == 4u) {
      if (element.x) outputWords[pc.dstBase + w] = v.x;
    } else {
      storeHalves(w, v, element);
    }
  }
#elif UNPERMUTE
  const uint k = params.x, rows = params.y, width = params.z;
  const uint s0 = VKDML_AT(plans[p].direct, 0), s1 = VKDML_AT(plans[p].direct, 1);
  const uint inStride = VKDML_AT(plans[p].direct, 2), outStride = VKDML_AT(plans[p].direct, 3);
  const uint groups = (width + 3u) / 4u;
  for (uint t = firstRow(params.w); t < count; t += rowStep(params.w)) {
    for (uint g = gl_LocalInvocationID.x % params.w; g < groups; g += params.w) {
      const uint first = 4u * g, values = min(4u, width - first);
      uvec4 acc = uvec4(0u);  // +0
      for (uint j = 0u; j < k; ++j) {
        const uint row = readId(t * s0 + j * s1, rows);
        if (row == rows) continue;  // a dropped entry (-1) or a row past InputTensor
        const uint w = WEIGHT(t * k + j), at = pc.srcBase + row * inStride;
        uvec4 v;
#if VALUE_BITS == 32
        for (uint q = 0u; q < 4u; ++q) v[q] = q < values ? sourceWords[at + first + q] : 0u;
#else
        const uint lo = sourceWords[at + first / 2u];
        const uint hi = values > 2u ? sourceWords[at + first / 2u + 1u] : 0u;
        v = uvec4(floatBitsToUint(halfToFloat(lo & 0xFFFFu)),
                  floatBitsToUint(halfToFloat(lo >> 16)),
                  floatBitsToUint(halfToFloat(hi & 0xFFFFu)),
                  floatBitsToUint(halfToFloat(hi >> 16)));
#endif
        for (uint q = 0u; q < 4u; ++q)
          acc[q] = floatArith(acc[q], floatArith(v[q], w, false), true);
      }
      const uint to = pc.dstBase + t * outStride;
      if (kOutputSize == 4u) {
        for (uint q = 0u; q < values; ++q) outputWords[to + first + q] = acc[q];
      } else {  // a row's values are even: whole words
        outputWords[to + first / 2u] = floatToHalf(acc.x) | (floatToHalf(acc.y) << 16);
        if (values > 2u)
          outputWords[to + first / 2u + 1u] = floatToHalf(acc.z) | (floatToHalf(acc.w) << 16);
      }
    }
  }
#endif
}
