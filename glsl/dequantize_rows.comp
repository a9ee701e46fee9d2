#version 450
// Quantized rows gathered and dequantized (VKDML_OPERATOR_GATHER_QUANTIZED_ROWS; lib/operator.h:
// Pass::Kind::Dequantize): an invocation per group of 4 values of an output row. Q8_0 (ggml's
// block of 34 bytes: a float16 scale d, 32 int8 q) or Q4_0 (18 bytes: d, then 16 bytes whose low
// nibbles are values 0-15 and high nibbles 16-31, each q - 8): value d * q in float32, one
// rounding, then to float16 in integer arithmetic where kOutputSize is 2. The table is read and
// the output written in 32-bit words (bases in bytes: Kernel::unit 1), so no device needs 8- or
// 16-bit storage; blocks start on any byte and are read across word boundaries.
// FORMAT: 8 (Q8_0) or 4 (Q4_0). INDEX64 selects 64-bit index loads.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "half.glsl"
#include "index.glsl"

layout(local_size_x_id = VKDML_SPEC_GROUP_SIZE) in;  // Capabilities::groupSize
layout(constant_id = VKDML_SPEC_OUTPUT_SIZE) const uint kOutputSize = 4;

const uint kBlockBytes = FORMAT == 8 ? 34u : 18u;

layout(std430, set = 0, binding = VKDML_BIND_SOURCE) restrict readonly buffer Table {
  uint tableWords[];  // InputTensor
};
layout(std430, set = 0, binding = VKDML_BIND_OUTPUT) restrict writeonly buffer Output {
  uint outputWords[];
};

// The 4 table bytes from byte b, little-endian. The word after b's is read only when b is not on
// a word; it then holds byte b + 3, which is the tensor's (its size rounds up to a word).
uint tableBytes4(uint b) {
  const uint word = b >> 2, shift = (b & 3u) * 8u;
  const uint low = tableWords[word];
  return shift == 0u ? low : (low >> shift) | (tableWords[word + 1u] << (32u - shift));
}

void main() {
  const uint p = pc.plan;
  const uint count = loopCount(p);
  const uint quads = VKDML_AT(plans[p].sizes, kRank - 1u);  // groups of 4 values in a row
  const uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < count;) {
    const uvec4 at = loopOffsets(p, kRank, i);
    const uint row = indexedOffset(p, at);  // the row's first byte, VKDML_NOT_OWNED if dropped
    uvec4 bits;
    if (kDrop && row == VKDML_NOT_OWNED) {
      bits = fillBytes;  // VKDML_OUT_OF_RANGE_MODE_FILL: the value's bytes repeat
    } else {
      const uint q = kRank > 1u ? i - divideBySize(p, kRank - 1u, i) * quads : i;
      const uint block = pc.srcBase + row + (q >> 3) * kBlockBytes;
      const float d = halfToFloat(tableBytes4(block) & 0xFFFFu);
#if FORMAT == 8
      const uint packed = tableBytes4(block + 2u + (q & 7u) * 4u);
      for (uint k = 0u; k < 4u; ++k)
        bits[k] = floatBitsToUint(d * float(bitfieldExtract(int(packed), int(8u * k), 8)));
#else
      const uint packed = tableBytes4(block + 2u + (q & 3u) * 4u) >> ((q & 4u) != 0u ? 4u : 0u);
      for (uint k = 0u; k < 4u; ++k)
        bits[k] = floatBitsToUint(d * float(int((packed >> (8u * k)) & 15u) - 8));
#endif
      if (kOutputSize == 2u)
        bits.xy = uvec2(floatToHalf(bits.x) | (floatToHalf(bits.y) << 16),
                        floatToHalf(bits.z) | (floatToHalf(bits.w) << 16));
    }
    const uint word = (pc.dstBase >> 2) + (kOutputSize == 4u ? at.x : at.x >> 1);  // at.x: elements
    if (kOutputSize == 4u) {
      outputWords[word] = bits.x;
      outputWords[word + 1u] = bits.y;
      outputWords[word + 2u] = bits.z;
      outputWords[word + 3u] = bits.w;
    } else {
      outputWords[word] = bits.x;
      outputWords[word + 1u] = bits.y;
    }
    if (count - i <= step) break;
    i += step;
  }
}
