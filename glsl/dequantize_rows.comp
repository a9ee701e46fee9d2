#version 450
// Quantized rows gathered and dequantized (VKDML_OPERATOR_GATHER_QUANTIZED_ROWS;
// lib/operators/operator.h: Pass::Kind::Dequantize): an invocation per two groups of 4 values of
// an output row (loop elements 2j and 2j + 1: 8 values of one block, one index lookup and scale),
// or on the large path per group. Q8_0 (ggml's block of 34 bytes: a float16 scale d, 32 int8 q) or
// Q4_0 (18 bytes: d, then 16 bytes whose low nibbles are values 0-15 and high nibbles 16-31, each
// q - 8): value d * q in float32, one rounding, then to float16 in integer arithmetic where
// kOutputSize is 2. The table is read and the output written in 32-bit words (bases in bytes:
// Kernel::unit 1), so no device needs 8- or 16-bit storage; blocks start on any byte and are read
// across word boundaries.
// On the large path (LARGE=1; lib/kernels/kernel_large.cpp) a dispatch takes the rows whose first
// byte lies in its window of the table, which reaches a row past the window's end.
// FORMAT: 8 (Q8_0) or 4 (Q4_0). INDEX64 selects 64-bit index loads.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "half.glsl"
#include "index.glsl"

layout(local_size_x_id = VKDML_SPEC_GROUP_SIZE) in;  // Capabilities::groupSize
layout(constant_id = VKDML_SPEC_OUTPUT_SIZE) const uint kOutputSize = 4;

layout(std430, set = 0, binding = VKDML_BIND_SOURCE) restrict readonly buffer Table {
  uint tableWords[];  // InputTensor
};
// The output in words, and the same as 8- and 16-byte vectors: a group's values go out in one
// store where they start on one (every group does where rows start on 4 values and the binding
// on 16 bytes), in words elsewhere.
layout(std430, set = 0, binding = VKDML_BIND_OUTPUT) writeonly buffer Output {
  uint outputWords[];
};
layout(std430, set = 0, binding = VKDML_BIND_OUTPUT) writeonly buffer OutputPairs {
  uvec2 outputPairs[];
};
layout(std430, set = 0, binding = VKDML_BIND_OUTPUT) writeonly buffer OutputQuads {
  uvec4 outputQuads[];
};

#include "quantized.glsl"

void main() {
  const uint p = pc.plan;
  const uint count = loopCount(p);
  const uint quads = VKDML_AT(plans[p].sizes, kRank - 1u);  // groups of 4 values in a row
  const uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
#if LARGE  // the dispatch of the table's first window fills the dropped rows' values
  const bool fills = lpc.indexedOwn[0] == 0u && lpc.indexedOwn[1] == 0u;
  const uint firstQuad = VKDML_AT(lpc.start, kRank - 1u);  // the chunk's (a row's groups, or all)
#else
  const bool fills = true;
  const uint firstQuad = 0u;
#endif
#if !LARGE
  // Pairs of groups: rows hold whole blocks (8 groups each), so 2j and 2j + 1 share a row and a
  // block, their values and outputs consecutive.
  for (uint j = gl_GlobalInvocationID.x; j < count / 2u;) {
    const uint i = 2u * j;
    const uvec4 at = locate(p, i);  // as below
    uvec4 lo = fillBytes, hi = fillBytes;  // dropped: VKDML_OUT_OF_RANGE_MODE_FILL's bytes
    if (at.w == 0u) {
      const uint q = kRank > 1u ? i - divideBySize(p, kRank - 1u, i) * quads : i;
      dequantizeOctet(pc.srcBase + at.y, q, lo, hi);
      if (kOutputSize == 2u)
        lo = uvec4(floatToHalf(lo.x) | (floatToHalf(lo.y) << 16),
                   floatToHalf(lo.z) | (floatToHalf(lo.w) << 16),
                   floatToHalf(hi.x) | (floatToHalf(hi.y) << 16),
                   floatToHalf(hi.z) | (floatToHalf(hi.w) << 16));
    }
    const uint word = (pc.dstBase >> 2) + (kOutputSize == 4u ? at.x : at.x >> 1);
    if ((word & 3u) == 0u) {
      outputQuads[word >> 2] = lo;
      if (kOutputSize == 4u) outputQuads[(word >> 2) + 1u] = hi;
    } else if (kOutputSize == 2u) {
      outputWords[word] = lo.x;
      outputWords[word + 1u] = lo.y;
      outputWords[word + 2u] = lo.z;
      outputWords[word + 3u] = lo.w;
    } else {
      for (uint k = 0u; k < 4u; ++k) {
        outputWords[word + k] = lo[k];
        outputWords[word + 4u + k] = hi[k];
      }
    }
    if (count / 2u - j <= step) break;
    j += step;
  }
#else
  for (uint i = gl_GlobalInvocationID.x; i < count;) {
    // at.x: the output element; at.y: the row's first byte, VKDML_NOT_OWNED if dropped or (LARGE)
    // in another dispatch's window of the table; at.w: 1 if dropped.
    const uvec4 at = locate(p, i);
    if (at.y != VKDML_NOT_OWNED || (fills && at.w != 0u)) {
      uvec4 bits;
      if (at.w != 0u) {
        bits = fillBytes;  // VKDML_OUT_OF_RANGE_MODE_FILL: the value's bytes repeat
      } else {
        const uint q = firstQuad + (kRank > 1u ? i - divideBySize(p, kRank - 1u, i) * quads : i);
        bits = dequantizeQuad(pc.srcBase + at.y, q);
        if (kOutputSize == 2u)
          bits.xy = uvec2(floatToHalf(bits.x) | (floatToHalf(bits.y) << 16),
                          floatToHalf(bits.z) | (floatToHalf(bits.w) << 16));
      }
      const uint word = (pc.dstBase >> 2) + (kOutputSize == 4u ? at.x : at.x >> 1);
      if (kOutputSize == 4u && (word & 3u) == 0u) {
        outputQuads[word >> 2] = bits;
      } else if (kOutputSize == 2u && (word & 1u) == 0u) {
        outputPairs[word >> 1] = bits.xy;
      } else if (kOutputSize == 4u) {
        outputWords[word] = bits.x;
        outputWords[word + 1u] = bits.y;
        outputWords[word + 2u] = bits.z;
        outputWords[word + 3u] = bits.w;
      } else {
        outputWords[word] = bits.x;
        outputWords[word + 1u] = bits.y;
      }
    }
    if (count - i <= step) break;
    i += step;
  }
#endif
}
