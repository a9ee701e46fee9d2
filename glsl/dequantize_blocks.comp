#version 450
// A block-quantized gather (VKDML_OPERATOR_GATHER_BLOCK_QUANTIZED; lib/operators/operator.h:
// Pass::Kind::Scales, ZeroPoints and Blocks). Every tensor is read and written in 32-bit words
// (bases in bytes: Kernel::unit 1), so no device needs 8- or 16-bit storage.
// SCALES: ScaleTensor's element into the scratch's BLOCK as float32 bits (kOutputSize: its
//   element size), with the type's zero point (the plan's params.w).
// ZERO_POINTS: ZeroPointTensor's value into its block's zero point word.
// Otherwise (Blocks): an invocation per output value (or pair, or eight: kUnit, octet() below),
//   DML_OPERATOR_GATHER's walk over the values of InputTensor (the indexed offset: a value's
//   row-major number), each (value - zero point) * scale in float32, rounded once (a denormal
//   scale through glsl/float32.glsl: no device flushing), then to float16 where kOutputSize is 2.
//   On the large path (LARGE=1; lib/kernels/kernel_blocks.cpp) a dispatch per chunk of the output
//   and window of InputTensor takes the values in its window (whose offsets count values), each
//   float16 stored alone.
// BITS: 4 (two values a byte, the first in the low nibble) or 8; kKind VKDML_KIND_SIGNED for
// INT4. INDEX64 selects 64-bit index loads.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "half.glsl"
#include "index.glsl"
#include "wide.glsl"
#include "float32.glsl"

layout(local_size_x_id = VKDML_SPEC_GROUP_SIZE) in;  // Capabilities::groupSize
layout(constant_id = VKDML_SPEC_OUTPUT_SIZE) const uint kOutputSize = 4;

layout(std430, set = 0, binding = VKDML_BIND_SOURCE) restrict readonly buffer Source {
  uint sourceWords[];  // the pass's source: InputTensor, ScaleTensor or ZeroPointTensor
};
layout(std430, set = 0, binding = VKDML_BIND_OUTPUT) restrict buffer Output { uint outputWords[]; };
#if !defined(SCALES) && !defined(ZERO_POINTS) && !LARGE
// The same, 16 bytes at a time: octet()'s values where their first byte is on 16.
layout(std430, set = 0, binding = VKDML_BIND_OUTPUT) writeonly buffer OutputQuads {
  uvec4 outputQuads[];
};
#endif

// Each loop's stride: every invocation's (at most 65535 * 1024, below 2^26).
#define kStep (gl_NumWorkGroups.x * gl_WorkGroupSize.x)

// Value n of the source (from byte pc.srcBase), sign-extended for INT4.
int sourceValue(uint n) {
#if BITS == 4
  const uint b = pc.srcBase + (n >> 1);
  const uint v = (sourceWords[b >> 2] >> ((b & 3u) * 8u + (n & 1u) * 4u)) & 15u;
  return kKind == VKDML_KIND_SIGNED ? int(v ^ 8u) - 8 : int(v);
#else
  const uint b = pc.srcBase + n;
  return int((sourceWords[b >> 2] >> ((b & 3u) * 8u)) & 255u);
#endif
}

#ifdef SCALES
void main() {
  const uint p = pc.plan, count = loopCount(p), zeroPoint = plans[p].params.w;
  for (uint i = gl_GlobalInvocationID.x; i < count; i += kStep) {
    const uvec4 at = loopOffsets(p, kRank, i);  // x: the block, y: its ScaleTensor element
    const uint b = pc.srcBase + at.y * kOutputSize;
    const uint word = sourceWords[b >> 2];
    BLOCK(2u * at.x) =
        kOutputSize == 4u ? word : floatBitsToUint(halfToFloat((word >> ((b & 2u) * 8u)) & 0xFFFFu));
    BLOCK(2u * at.x + 1u) = zeroPoint;
  }
}
#elif defined(ZERO_POINTS)
void main() {
  const uint p = pc.plan, count = loopCount(p);
  for (uint i = gl_GlobalInvocationID.x; i < count; i += kStep) {
    const uvec4 at = loopOffsets(p, kRank, i);  // x: the block, y: its zero point's number
    BLOCK(2u * at.x + 1u) = uint(sourceValue(at.y));
  }
}
#else
// Stores float16 h at byte b (even) of the output, leaving the word's other half, which another
// invocation may be storing, or which is not the tensor's: atomically, bits of its own only.
void storeHalf(uint b, uint h) {
  const uint w = b >> 2, shift = (b & 2u) * 8u;
  atomicAnd(outputWords[w], ~(0xFFFFu << shift));
  atomicOr(outputWords[w], h << shift);
}

// VKDML_OUT_OF_RANGE_MODE_FILL's value, as an output's bits (a float16's in the low half).
uint fillBits() {
  return kOutputSize == 4u ? fillBytes.x : fillBytes.x & 0xFFFFu;
}

// The block of InputTensor's value number n (row-major).
uint blockOf(uint p, uint n) {
  // The values after the quantize axis, along it, its blocks, and the block size.
  const uvec4 g = plans[p].params;
  // The quantize axis innermost and whole blocks along it: block n / size, size a power of 2.
  if (g.x == 1u && g.z * g.w == g.y) return n >> uint(findLSB(g.w));
  const uint outer = n / (g.y * g.x), rest = n - outer * g.y * g.x;
  const uint along = rest / g.x;
  return (outer * g.z + along / g.w) * g.x + (rest - along * g.x);
}

// The output bits of (value - zero point) * scale.
uint scaled(int value, int zeroPoint, uint scale) {
  const float v = float(value - zeroPoint);  // an integer, |v| <= 255: exact
  // Vulkan's float multiply rounds correctly but may flush denormals: it serves where none
  // can arise, a normal (or infinite or NaN) scale times an integer; a denormal scale
  // takes the integer multiply.
  uint bits;
  if ((scale & 0x7F800000u) != 0u) {
    precise const float product = v * uintBitsToFloat(scale);
    bits = floatBitsToUint(product);
  } else {
    bits = multiplyFloat32(floatBitsToUint(v), scale);
  }
  return kOutputSize == 2u ? floatToHalf(bits) : bits;
}

// The output bits of InputTensor's value number n (row-major), the source's value `local`.
uint dequantized(uint p, uint n, uint local) {
  const uint block = blockOf(p, n);
  return scaled(sourceValue(local), int(BLOCK(2u * block + 1u)), BLOCK(2u * block));
}

// Stores an output value's bits at its element of OutputTensor (float16: alone, atomically).
void store(uint element, uint bits) {
  if (kOutputSize == 4u)
    outputWords[(pc.dstBase >> 2) + element] = bits;
  else
    storeHalf(pc.dstBase + 2u * element, bits);
}

#if LARGE
void main() {
  const uint p = pc.plan, count = loopCount(p);
  // The dispatches of InputTensor's first window also fill the dropped values.
  const bool fills = lpc.indexedOwn[0] == 0u && lpc.indexedOwn[1] == 0u;
  for (uint i = gl_GlobalInvocationID.x; i < count;) {
    // x: the output element; y: the value from the window's start, VKDML_NOT_OWNED if dropped
    // or another dispatch's; w: 1 if dropped.
    const uvec4 at = locate(p, i);
    if (at.y != VKDML_NOT_OWNED)  // its number: below 2^32 (lib/operators/block_quantized.cpp)
      store(at.x, dequantized(p, at.y + lpc.indexedStart[0], at.y));
    else if (fills && at.w != 0u)
      store(at.x, fillBits());
    if (count - i <= kStep) break;
    i += kStep;
  }
}
#else
// Output value i of plans[p]: its bits (a float16's in the low half), and its OutputTensor
// element.
uint outputValue(uint p, uint i, out uint element) {
  const uvec4 at = loopOffsets(p, kRank, i);
  element = at.x;
  const uint n = indexedOffset(p, at);  // the value's number, VKDML_NOT_OWNED if dropped
  return kDrop && n == VKDML_NOT_OWNED ? fillBits() : dequantized(p, n, n);
}

// kUnit 8: loop elements 8i to 8i + 7, consecutive values of one block along the innermost
// dimension, written to consecutive output elements (lib/kernels/kernel_blocks.cpp: Octets). One
// index lookup, block, scale and zero point serve the eight; where the first value's number is a
// multiple of 8 and its byte on a word, their bits come in one word (BITS 4) or two; where the
// first output element's byte is on a word, they go out in whole words (on 16 bytes, in 16-byte
// stores). Elsewhere value by value, as kUnit 1.
void octet(uint p, uint i) {
  const uvec4 at = loopOffsets(p, kRank, 8u * i);
  const uint n = indexedOffset(p, at);  // VKDML_NOT_OWNED if dropped
  uint bits[8];
  if (kDrop && n == VKDML_NOT_OWNED) {
    [[unroll]] for (uint k = 0u; k < 8u; ++k) bits[k] = fillBits();
  } else {
    const uint b = pc.srcBase + (BITS == 4 ? n >> 1 : n);  // the first value's byte
    if ((n & 7u) == 0u && (b & 3u) == 0u) {
      const uint block = blockOf(p, n), scale = BLOCK(2u * block);
      const int zeroPoint = int(BLOCK(2u * block + 1u));
      const uint w = b >> 2;
      const uvec2 words = uvec2(sourceWords[w], BITS == 8 ? sourceWords[w + 1u] : 0u);
      [[unroll]] for (uint k = 0u; k < 8u; ++k) {
#if BITS == 4
        const uint v = (words.x >> (4u * k)) & 15u;
        const int value = kKind == VKDML_KIND_SIGNED ? int(v ^ 8u) - 8 : int(v);
#else
        const int value = int((words[k >> 2] >> (8u * (k & 3u))) & 255u);
#endif
        bits[k] = scaled(value, zeroPoint, scale);
      }
    } else {  // the eight may straddle two blocks
      [[unroll]] for (uint k = 0u; k < 8u; ++k) bits[k] = dequantized(p, n + k, n + k);
    }
  }
  const uint first = pc.dstBase + kOutputSize * at.x;  // the first value's byte
  if (kOutputSize == 4u && (first & 15u) == 0u) {
    outputQuads[first >> 4] = uvec4(bits[0], bits[1], bits[2], bits[3]);
    outputQuads[(first >> 4) + 1u] = uvec4(bits[4], bits[5], bits[6], bits[7]);
  } else if (kOutputSize == 4u) {
    [[unroll]] for (uint k = 0u; k < 8u; ++k) outputWords[(first >> 2) + k] = bits[k];
  } else if ((first & 15u) == 0u) {
    outputQuads[first >> 4] = uvec4(bits[0] | (bits[1] << 16), bits[2] | (bits[3] << 16),
                                    bits[4] | (bits[5] << 16), bits[6] | (bits[7] << 16));
  } else if ((first & 3u) == 0u) {
    const uint w = first >> 2;
    [[unroll]] for (uint k = 0u; k < 4u; ++k)
      outputWords[w + k] = bits[2u * k] | (bits[2u * k + 1u] << 16);
  } else {
    [[unroll]] for (uint k = 0u; k < 8u; ++k) storeHalf(pc.dstBase + 2u * (at.x + k), bits[k]);
  }
}

void main() {
  const uint p = pc.plan, count = loopCount(p) / kUnit;  // kUnit 2: pairs of float16 outputs
  for (uint i = gl_GlobalInvocationID.x; i < count;) {
    uint element, second;
    if (kUnit == 8u) {
      octet(p, i);
    } else if (kUnit == 2u) {  // elements 2i and 2i + 1: a word's halves (kernel_blocks.cpp)
      const uint low = outputValue(p, 2u * i, element);
      const uint high = outputValue(p, 2u * i + 1u, second);
      outputWords[(pc.dstBase >> 2) + (element >> 1)] = low | (high << 16);
    } else {
      const uint bits = outputValue(p, i, element);
      store(element, bits);
    }
    if (count - i <= kStep) break;
    i += kStep;
  }
}
#endif  // LARGE
#endif
