#version 450
// A quantizing scatter of rows (VKDML_OPERATOR_SCATTER_QUANTIZED_ROWS; lib/operators/operator.h:
// Pass::Kind::Claim and Quantize), after the table's copy. CLAIM: an invocation per update row
// sets its target row's claim word (the scratch's tally) to the greatest row-major position
// that names it, plus 1; then FORMAT 8 (Q8_0) or 4 (Q4_0): an invocation per block of an update
// row quantizes its 32 values as ggml's reference quantizer does (dml.h), in integer float32
// arithmetic (glsl/float32.glsl, divide.glsl) where a device's may differ (the products: the
// device's multiply where no denormal is involved), if its row holds the claim, and stores the
// block's bytes. Bases are bytes (Kernel::unit 1); the table is written in 32-bit words, those
// a neighbouring block shares only through atomics on this block's bytes.
// On the large path (LARGE=1; lib/kernels/kernel_large.cpp) a dispatch takes the blocks whose first
// byte lies in its window of the table, which reaches a block past the window's end; the claims are
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
layout(std430, set = 0, binding = VKDML_BIND_SOURCE) restrict readonly buffer UpdateQuads {
  uvec4 updateQuads[];  // the same, four at a time (a block's values on 16 bytes: 8 loads)
};

#include "quantize_block.glsl"
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
      uint amax = 0u, extreme = 0u;  // largest magnitude's bits, and (Q4_0) that value's
      for (uint j = 0u; j < 32u; j += 4u) {  // the first of equal magnitudes stays
        const uvec4 x = (from & 3u) == 0u
                            ? updateQuads[(from + j) >> 2]
                            : uvec4(updateWords[from + j], updateWords[from + j + 1u],
                                    updateWords[from + j + 2u], updateWords[from + j + 3u]);
        for (uint c = 0u; c < 4u; ++c) {
          if ((x[c] & 0x7FFFFFFFu) > amax) {
            amax = x[c] & 0x7FFFFFFFu;
            extreme = x[c];
          }
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
      const uint h = floatToHalf(d);
      beginBlock(target);
      putByte(h);
      putByte(h >> 8);
#if FORMAT == 8
      for (uint j = 0u; j < 32u; ++j)  // the values again, from the cache
        putByte(overflow ? 0u : uint(roundAway(multiplyNormalFloat32(updateWords[from + j], id))));
#else
      for (uint j = 0u; j < 16u; ++j) {  // values j and j + 16 in a byte's low and high nibble
        uint byte = 0u;
        for (uint high = 0u; high < 2u; ++high) {
          const uint v = multiplyNormalFloat32(updateWords[from + j + 16u * high], id);
          // min(15, (int8_t)(x * id + 8.5f)): the sum rounded once, as the device's float add
          // is (correctly rounded; a denormal x * id, flushed or not, leaves 8.5 as it is).
          precise const float w = uintBitsToFloat(v) + 8.5;
          byte |= (overflow ? 8u : uint(min(15, int(w)))) << (4u * high);
        }
        putByte(byte);
      }
#endif
      endBlock();
    }
#endif
    if (count - i <= step) break;
    i += step;
  }
}
