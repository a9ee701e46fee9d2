#version 450
// A quantizing scatter of rows (VKDML_OPERATOR_SCATTER_QUANTIZED_ROWS; lib/operator.h:
// Pass::Kind::Claim and Quantize), after the table's copy. CLAIM: an invocation per update row
// sets its target row's claim word (the scratch's tally) to the greatest row-major position
// that names it, plus 1; then FORMAT 8 (Q8_0) or 4 (Q4_0): an invocation per block of an update
// row quantizes its 32 values as ggml's reference quantizer does (dml.h), in integer float32
// arithmetic (glsl/float32.glsl, divide.glsl) where a device's may differ, if its row holds the
// claim, and stores the block's bytes. Bases are bytes (Kernel::unit 1); the table is written in
// 32-bit words, those a neighbouring block shares only through atomics on this block's bytes.
// On the large path (LARGE=1; lib/kernel_large.cpp) a dispatch takes the blocks whose first byte
// lies in its window of the table, which reaches a block past the window's end; the claims are
// the scratch's, bound whole. INDEX64 selects 64-bit index loads.
#extension GL_GOOGLE_include_directive : require
#define ELEM 4  // divide.glsl: float32
#include "common.glsl"
#include "divide.glsl"
#include "float32.glsl"
#include "half.glsl"
#include "index.glsl"

layout(local_size_x_id = VKDML_SPEC_GROUP_SIZE) in;  // Capabilities::groupSize

layout(std430, set = 0, binding = VKDML_BIND_SOURCE) restrict readonly buffer Updates {
  uint updateWords[];  // float32 bits
};
layout(std430, set = 0, binding = VKDML_BIND_OUTPUT) restrict buffer Output {
  uint outputWords[];  // the table's bytes
};

#if !CLAIM
const uint kBlockBytes = FORMAT == 8 ? 34u : 18u;
const uint kBlockWords = (kBlockBytes + 3u) / 4u;

// The block's bytes from byte o of the output, taken from words[] (byte j in word j / 4, bits
// 8 * (j % 4)): a word wholly the block's is stored, a shared one changed in its bytes alone.
void storeBlock(uint o, uint words[kBlockWords]) {
  const uint lead = o & 3u, s = lead * 8u, first = o >> 2;
  const uint count = (lead + kBlockBytes + 3u) >> 2;
  for (uint k = 0u; k <= kBlockWords; ++k) {
    if (k >= count) break;
    const uint here = k < kBlockWords ? words[k] : 0u;
    const uint v = s == 0u ? here : (here << s) | (k > 0u ? words[k - 1u] >> (32u - s) : 0u);
    const uint from = k == 0u ? lead : 0u, to = min(4u, lead + kBlockBytes - 4u * k);
    const uint mask = (to == 4u ? 0xFFFFFFFFu : (1u << (8u * to)) - 1u) & ~((1u << (8u * from)) - 1u);
    if (mask == 0xFFFFFFFFu) {
      outputWords[first + k] = v;
    } else {
      atomicAnd(outputWords[first + k], ~mask);
      atomicOr(outputWords[first + k], v & mask);
    }
  }
}

void putByte(inout uint words[kBlockWords], uint j, uint b) {
  words[j >> 2] |= (b & 0xFFu) << ((j & 3u) * 8u);
}

// roundf(v) for |v| below 2^31, from its bits (halves away from zero).
int roundAway(uint v) {
  const uint a = v & 0x7FFFFFFFu;
  if (a < 0x3F000000u) return 0;  // below 0.5
  const uint e = (a >> 23) - 127u + 1u;  // 0 for 0.5 to 1
  const uint m = (a & 0x7FFFFFu) | 0x800000u;
  const int r = int((m + (1u << (23u - e))) >> (24u - e));
  return (v & 0x80000000u) != 0u ? -r : r;
}
#endif

void main() {
  const uint p = pc.plan;
  const uint count = loopCount(p);
  const uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < count;) {
    // at.x: the block's first value in UpdatesTensor; at.y (not LARGE): the block's first byte
    // in its row; at.z: the index; at.w: the row-major position.
#if LARGE  // offsets from this dispatch's windows; the block's byte in the table's, 64-bit
    uvec2 block;
    const uvec3 chunk = chunkOffsets(p, i, block);
    const uvec4 at = uvec4(chunk.x, 0u, chunk.yz);
#else
    const uvec4 at = loopOffsets(p, kRank, i);
#endif
    const uint row = clampIndex(readIndex(at.z), VKDML_AT(plans[p].tupleSize, 0), at.w);
#if CLAIM
    if (!kDrop || row != VKDML_DROPPED) atomicMax(TALLY(row), at.w + 1u);
#else
#if LARGE  // the block's first byte, where it lies in this dispatch's window of the table
    const uvec2 first = add2x32(block, product2x32(row, VKDML_AT(plans[p].tupleStride, 0)));
    const uint target = row == VKDML_DROPPED ? VKDML_NOT_OWNED : ownedOffset(first);
#else
    const uint target = pc.dstBase + row * VKDML_AT(plans[p].tupleStride, 0) + at.y;
#endif
    if ((!kDrop || row != VKDML_DROPPED) && (LARGE == 0 || target != VKDML_NOT_OWNED) &&
        TALLY(row) == at.w + 1u) {
      const uint from = (pc.srcBase >> 2) + at.x;
      uint x[32];
      uint amax = 0u, extreme = 0u;  // largest magnitude's bits, and (Q4_0) that value's
      for (uint j = 0u; j < 32u; ++j) {
        x[j] = updateWords[from + j];
        if ((x[j] & 0x7FFFFFFFu) > amax) {  // the first of equal magnitudes stays
          amax = x[j] & 0x7FFFFFFFu;
          extreme = x[j];
        }
      }
#if FORMAT == 8
      const uint d = divideFloat(uvec2(amax, 0u), 127u).x;
#else
      const uint d = divideFloat(uvec2(extreme, 0u), 8u).x ^ 0x80000000u;  // max / -8
#endif
      const bool zero = (d & 0x7FFFFFFFu) == 0u;
      const uint id = zero ? 0u : reciprocalFloat32(d);
      const bool overflow = (id & 0x7FFFFFFFu) == 0x7F800000u;  // 1 / d overflows: q 0 (dml.h)
      uint words[kBlockWords];
      for (uint k = 0u; k < kBlockWords; ++k) words[k] = 0u;
      const uint h = floatToHalf(d);
      putByte(words, 0u, h);
      putByte(words, 1u, h >> 8);
      for (uint j = 0u; j < 32u; ++j) {
        const uint v = multiplyFloat32(x[j], id);
#if FORMAT == 8
        putByte(words, 2u + j, overflow ? 0u : uint(roundAway(v)));
#else
        // min(15, (int8_t)(x * id + 8.5f)): the sum rounded once, as the device's float add is
        // (correctly rounded; a denormal x * id, flushed or not, leaves 8.5 as it is).
        precise const float w = uintBitsToFloat(v) + 8.5;
        const uint nibble = overflow ? 8u : uint(min(15, int(w)));
        putByte(words, 2u + (j & 15u), nibble << (j < 16u ? 0u : 4u));
#endif
      }
      storeBlock(target, words);
    }
#endif
    if (count - i <= step) break;
    i += step;
  }
}
