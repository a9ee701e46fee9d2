#version 450
// A quantizing scatter of rows (VKDML_OPERATOR_SCATTER_QUANTIZED_ROWS; lib/operators/operator.h:
// Pass::Kind::Claim and Quantize), after the table's copy. CLAIM: an invocation per update row
// sets its target row's claim word (the scratch's tally) to the greatest row-major position
// that names it, plus 1; then FORMAT 8 (Q8_0) or 4 (Q4_0): each block of 32 values of an update
// row is quantized as ggml's reference quantizer does (dml.h), in integer float32 arithmetic
// (glsl/float32.glsl, divide.glsl) where a device's may differ (the products: the device's
// multiply where no denormal is involved), if its row holds the claim, and its bytes stored.
// Bases are bytes (Kernel::unit 1); the table is written in 32-bit words, those a block shares
// with a block stored elsewhere only through atomics on this block's bytes.
// Off the large path a workgroup takes as many blocks as it has invocations (cooperative(): the
// values read in 16-byte quads across the group, each block's maximum and scale in shared memory,
// the bytes assembled there and stored in whole words); on the large path (LARGE=1;
// lib/kernels/kernel_large.cpp) an invocation per block, a dispatch taking the blocks whose first
// byte lies in its window of the table, which reaches a block past the window's end; the claims
// are the scratch's, bound whole. INDEX64 selects 64-bit index loads.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
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

#if CLAIM || LARGE
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
#else
// cooperative(): a workgroup of kGroup invocations takes loop elements (blocks) base to
// base + kGroup - 1 in five steps, a barrier between each:
// 1. invocation t finds block t's source (blockFrom);
// 2. invocation t loads quads t + k * kGroup (k < 8: 16 bytes of one block each, block q / 8),
//    all eight before using one, and keeps them; while they come, it reads block t's index and
//    claim and finds its target (blockTarget; kSkip if the block is not stored); each quad's
//    extreme (its first value of the greatest magnitude) goes to shared memory;
// 3. invocation t takes block t's eight extremes in order (the first of equal magnitudes stays),
//    computes d, 1 / d and d's float16 (one block per invocation: the serial divisions run side
//    by side) and starts the block's bytes in `staging` with d's;
// 4. each invocation quantizes its quads' values into their bytes in `staging`;
// 5. the group's `staging` words go out one per invocation, consecutive ones side by side: whole
//    words stored, a word shared with a neighbouring block stored whole where that block is the
//    group's and its bytes adjoin (the later block stores both), else atomically, own bytes only.
const uint kBlockBytes = FORMAT == 8 ? 34u : 18u;
// staging: a block's words, from the word holding its first byte of the table (up to 3 bytes
// before it); first (step 2 to 3) its quads' eight extremes.
const uint kStage = FORMAT == 8 ? 10u : 8u;
const uint kSkip = 0xFFFFFFFFu;  // blockFrom past the loop; blockTarget of a block not stored
#define kGroup gl_WorkGroupSize.x

shared uint blockFrom[VKDML_GROUP_SIZE];    // its first value's word in UpdatesTensor, or kSkip
shared uint blockTarget[VKDML_GROUP_SIZE];  // its first byte in the table, or kSkip
shared uint blockScale[VKDML_GROUP_SIZE];   // 1 / d's bits; 0 where d is 0 or 1 / d overflows
shared uint staging[VKDML_GROUP_SIZE * kStage];

// round(v) as ggml's roundf (halves away from zero) for a finite v of magnitude below 2^23 (here
// at most 127), the device's float arithmetic exact in each step (a truncation and the
// difference of two floats within a factor 2: no rounding; a denormal flushed still rounds to 0).
int roundHalfAway(uint v) {
  const float a = uintBitsToFloat(v & 0x7FFFFFFFu);
  precise const float whole = trunc(a);
  precise const float part = a - whole;
  const int r = int(whole) + (part >= 0.5 ? 1 : 0);
  return (v & 0x80000000u) != 0u ? -r : r;
}

// q of v = x * id (float32 bits): Q8_0's byte, or Q4_0's nibble.
uint quantizeValue(uint v) {
#if FORMAT == 8
  return uint(roundHalfAway(v)) & 0xFFu;
#else
  // min(15, (int8_t)(x * id + 8.5f)): the sum rounded once, as the device's float add is
  // (correctly rounded; a denormal x * id, flushed or not, leaves 8.5 as it is).
  precise const float w = uintBitsToFloat(v) + 8.5;
  return uint(min(15, int(w)));
#endif
}

// The 4 bytes (Q8_0) or 4 nibbles in the low half of 4 bytes (Q4_0) of quad x, scaled by id
// (1 / d's bits, normal, or 0 where every q is 0 or, Q4_0, 8), for finite values (dml.h) none of
// them denormal: the device's multiply, exact but where the product is a denormal, which it may
// flush; but a product below 2^-126 gives q 0 (Q4_0: 8) either way.
uint quantizeQuad(uvec4 x, uint id) {
  precise const vec4 product = uintBitsToFloat(x) * uintBitsToFloat(id);
  const uvec4 v = floatBitsToUint(product);
  return quantizeValue(v.x) | (quantizeValue(v.y) << 8) | (quantizeValue(v.z) << 16) |
         (quantizeValue(v.w) << 24);
}

// The same for a quad with denormal values (kept out of the unrolled path: one copy of the
// integer multiply), from UpdatesTensor's word w on.
uint quantizeQuadSlowly(uint w, uint id) {
  uint bytes = 0u;
  [[dont_unroll]] for (uint c = 0u; c < 4u; ++c) {
    const uint x = updateWords[w + c];
    precise const float product = uintBitsToFloat(x) * uintBitsToFloat(id);
    const uint v = (x & 0x7F800000u) != 0u || (x & 0x7FFFFFFFu) == 0u ? floatBitsToUint(product)
                                                                       : multiplyFloat32(x, id);
    bytes |= quantizeValue(v) << (8u * c);
  }
  return bytes;
}

// ORs `bits` (up to 4 bytes) into block b's staging from its byte s on (counted from its
// first word's first byte).
void stageBytes(uint b, uint s, uint bits) {
  const uint w = b * kStage + (s >> 2u), r = 8u * (s & 3u);
  atomicOr(staging[w], bits << r);
  if (r != 0u) atomicOr(staging[w + 1u], bits >> (32u - r));
}

// Stages quad q's bytes (or Q4_0's nibbles) into its block's staging.
void stageQuad(uint q, uint b, uint bytes) {
  const uint s = (blockTarget[b] & 3u) + 2u;
#if FORMAT == 8
  stageBytes(b, s + 4u * (q & 7u), bytes);
#else
  stageBytes(b, s + 4u * (q & 3u), (q & 4u) != 0u ? bytes << 4u : bytes);
#endif
}

void cooperative() {
  const uint p = pc.plan, t = gl_LocalInvocationID.x;
  const uint count = loopCount(p), step = gl_NumWorkGroups.x * kGroup;
  for (uint base = gl_WorkGroupID.x * kGroup; base < count;) {
    // 1. Block t's source (its values are read whether or not its row holds the claim).
    // at.x: the block's first value in UpdatesTensor; at.y: its first byte in its row; at.z: the
    // index; at.w: the row-major position.
    const bool inRange = t < count - base;
    const uvec4 at = inRange ? loopOffsets(p, kRank, base + t) : uvec4(0u);
    blockFrom[t] = inRange ? (pc.srcBase >> 2) + at.x : kSkip;
    barrier();
    // 2. Quads t + k * kGroup loaded; while they come, block t's row, claim and target; then
    // each quad's extreme to the staging of its block.
    uvec4 x[8];
    [[unroll]] for (uint k = 0u; k < 8u; ++k) {
      const uint q = t + k * kGroup, f = blockFrom[q >> 3u];
      x[k] = uvec4(0u);
      if (f != kSkip) {
        const uint w = f + 4u * (q & 7u);
        x[k] = (w & 3u) == 0u ? updateQuads[w >> 2u]
                              : uvec4(updateWords[w], updateWords[w + 1u], updateWords[w + 2u],
                                      updateWords[w + 3u]);
      }
    }
    uint target = kSkip;  // kSkip: not stored (past the loop, dropped, or not the claim's row)
    if (inRange) {
      const uint row = clampIndex(readIndex(at.z), VKDML_AT(plans[p].tupleSize, 0), at.w);
      if ((!kDrop || row != VKDML_DROPPED) && TALLY(row) == at.w + 1u)
        target = pc.dstBase + row * VKDML_AT(plans[p].tupleStride, 0) + at.y;
    }
    blockTarget[t] = target;
    [[unroll]] for (uint k = 0u; k < 8u; ++k) {
      const uint q = t + k * kGroup;
      uint extreme = x[k].x;
      [[unroll]] for (uint c = 1u; c < 4u; ++c)
        if ((x[k][c] & 0x7FFFFFFFu) > (extreme & 0x7FFFFFFFu)) extreme = x[k][c];
      staging[(q >> 3u) * kStage + (q & 7u)] = extreme;
    }
    barrier();
    // 3. Block t's d, 1 / d and d's float16 bytes.
    if (target != kSkip) {
      uint amax = 0u, extreme = 0u;  // largest magnitude's bits, and (Q4_0) that value's
      [[unroll]] for (uint j = 0u; j < 8u; ++j) {  // the first of equal magnitudes stays
        const uint e = staging[t * kStage + j];
        if ((e & 0x7FFFFFFFu) > amax) {
          amax = e & 0x7FFFFFFFu;
          extreme = e;
        }
      }
#if FORMAT == 8
      const uint d = divideFloat(uvec2(amax, 0u), 127u).x;
#else
      const uint d = divideFloat(uvec2(extreme, 0u), 8u).x ^ 0x80000000u;  // max / -8
#endif
      const uint id = (d & 0x7FFFFFFFu) == 0u ? 0u : reciprocalNormalFloat32(d);
      // 1 / d overflowing: q 0 (Q4_0: 8; dml.h), as id 0 gives.
      blockScale[t] = (id & 0x7FFFFFFFu) == 0x7F800000u ? 0u : id;
      const uint h = floatToHalf(d), r = 8u * (target & 3u);
      [[unroll]] for (uint j = 0u; j < kStage; ++j) staging[t * kStage + j] = 0u;
      staging[t * kStage] = h << r;
      if (r == 24u) staging[t * kStage + 1u] = h >> 8u;
    }
    barrier();
    // 4. The quads' bytes: quad j of a block at byte 2 + 4j (Q8_0), or, Q4_0, values 0-15 in
    // the low nibbles of bytes 2 to 17 and values 16-31 in their high nibbles.
    // Quads holding a denormal value (rare) are left to one loop after the others.
    uint slow = 0u;
    [[unroll]] for (uint k = 0u; k < 8u; ++k) {
      const uint q = t + k * kGroup, b = q >> 3u;
      if (blockTarget[b] == kSkip) continue;
      if (any(lessThan((x[k] & 0x7FFFFFFFu) - 1u, uvec4(0x7FFFFFu)))) {  // 1 to 0x7FFFFF
        slow |= 1u << k;
        continue;
      }
      stageQuad(q, b, quantizeQuad(x[k], blockScale[b]));
    }
    [[dont_unroll]] while (slow != 0u) {
      const uint k = uint(findLSB(slow)), q = t + k * kGroup, b = q >> 3u;
      slow &= slow - 1u;
      stageQuad(q, b, quantizeQuadSlowly(blockFrom[b] + 4u * (q & 7u), blockScale[b]));
    }
    barrier();
    // 5. The staging words, word j of block b by invocation (b * kStage + j) % kGroup.
    [[unroll]] for (uint k = 0u; k < kStage; ++k) {
      const uint n = t + k * kGroup, b = n / kStage, j = n - b * kStage;
      if (blockTarget[b] == kSkip) continue;
      const uint o = blockTarget[b], first = o & 3u, end = first + kBlockBytes;
      const uint lo = max(first, 4u * j), hi = min(end, 4u * j + 4u);  // its bytes in word j
      if (lo >= hi) continue;
      uint bits = staging[n];
      uint mask = (0xFFFFFFFFu >> (32u - 8u * (hi - lo))) << (8u * (lo - 4u * j));
      if (j == 0u && first != 0u && b > 0u && blockTarget[b - 1u] != kSkip &&
          blockTarget[b - 1u] + kBlockBytes == o) {  // the previous block's last word too
        const uint last = ((blockTarget[b - 1u] & 3u) + kBlockBytes - 1u) >> 2u;
        bits |= staging[(b - 1u) * kStage + last];
        mask = 0xFFFFFFFFu;
      } else if (hi == end && (end & 3u) != 0u && b + 1u < kGroup &&
                 blockTarget[b + 1u] != kSkip && o + kBlockBytes == blockTarget[b + 1u]) {
        continue;  // the next block stores this word
      }
      const uint word = (o >> 2u) + j;
      if (mask == 0xFFFFFFFFu) {
        outputWords[word] = bits;
      } else {
        atomicAnd(outputWords[word], ~mask);
        atomicOr(outputWords[word], bits & mask);
      }
    }
    barrier();  // before the next blocks' step 1 overwrites blockFrom
    if (count - base <= step) break;
    base += step;
  }
}

void main() { cooperative(); }
#endif
