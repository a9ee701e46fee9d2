#version 450
// A paged KV cache (VKDML_OPERATOR_PAGED_CACHE_WRITE and _GATHER; lib/operators/paged_cache.cpp
// says what each plan holds). Index components 0 and 1 of a plan are the cache's geometry, which
// the kernel applies itself: (blocks, a block's stride) and (block_size, a token row's stride),
// in bytes; token slot s is block s / block_size, row s % block_size. Stages:
// CLAIM    an invocation per token: the slot's claim word (the scratch's tally) becomes the
//          greatest token naming it, plus 1; a slot past the cache is recorded (checked mode);
// WRITE    an invocation per group of kUnit values (FORMAT 0: 16 bytes, or 8 of float16 ones) or
//          block of 32 (FORMAT 8: Q8_0, 4: Q4_0; glsl/quantize_block.glsl) of a token's head,
//          stored where its token holds the claim; a negative slot, or one past the cache, is
//          skipped;
// STARTS   an invocation per entry of SequenceStartsTensor (params.y 0) into the scratch's
//          bounds, clamped into [0, params.x], or of TokenOffsetsTensor (params.y 1) into its
//          weights (a negative or 2^31 or more: 2^31, past every sequence's blocks); with
//          params.y 2 one workgroup sums SequenceLengthsTensor into the bounds (sumLengths);
// ROWS     an invocation per output token: its sequence by bisection of the bounds (params.y
//          sequences), its position plus the sequence's token offset (params.x bit 1), its block
//          from BlockTableTensor (components 2: max_blocks and a sequence's entries' stride, 3:
//          the sequences and their rows' stride), its cache row into the scratch (TOKEN_ROW). A
//          block out of range is clamped or (kDrop: VKDML_OUT_OF_RANGE_MODE_FILL) marked for the
//          fill value, and recorded (checked mode);
// GATHER   an invocation per group of kUnit output values (4, or 8 float16 ones: 16 bytes),
//          from its token's row: copied or dequantized (glsl/quantized.glsl).
// STARTS with params.z 1 (checked mode) also sets the status words (no fill before the run).
// FUSED WRITE (kernel_paged.cpp says when) is CLAIM and WRITE in one dispatch: a workgroup's
// chunk of loop elements at a time; its tokens write where no later token names their slot (each
// invocation compares its share of the tokens with the chunk's, in shared memory); the first
// chunk writes the status words whole (no fill, no report).
// FUSED GATHER (kernel_paged.cpp says when) is ROWS and GATHER in one dispatch: a workgroup's
// chunk of kUnroll loop elements an invocation at a time; the chunk's tokens' rows are found
// first, a token an invocation, into shared memory, then each invocation loads its kUnroll
// groups before it stores them. With params.z 1 the workgroup first copies the bounds (and the
// token offsets) into shared memory, where the rows' bisections read them.
// Tensors are read and written in 32-bit words, as uvec4 and uvec2 where aligned (no 8/16-bit
// storage needed); bases are bytes (Kernel::unit 1). kValueSize: the values' element size (the
// write's UpdatesTensor, the gather's OutputTensor). INDEX64 selects 64-bit index loads.
#extension GL_GOOGLE_include_directive : require
#define ELEM 4  // divide.glsl: float32
#include "common.glsl"
#include "divide.glsl"
#include "float32.glsl"
#include "half.glsl"
#include "index.glsl"

#ifndef CLAIM
#define CLAIM 0
#endif
#ifndef WRITE
#define WRITE 0
#endif
#ifndef STARTS
#define STARTS 0
#endif
#ifndef ROWS
#define ROWS 0
#endif
#ifndef FUSED
#define FUSED 0  // CLAIM and WRITE, or ROWS and GATHER, as one dispatch (below)
#endif
#ifndef FORMAT
#define FORMAT 0
#endif
#define GATHER (!CLAIM && !WRITE && !STARTS && !ROWS)
#define FIND_ROWS (ROWS || (GATHER && FUSED))  // tokenRow

layout(local_size_x_id = VKDML_SPEC_GROUP_SIZE) in;  // Capabilities::groupSize
layout(constant_id = VKDML_SPEC_OUTPUT_SIZE) const uint kValueSize = 4;
// WRITE and GATHER: the values an invocation moves (4, 8 float16 ones, or a quantized block's 32).
const uint kGroupWords = kValueSize * kUnit / 4u;  // FORMAT 0's group in words: 4 or 2

layout(std430, set = 0, binding = VKDML_BIND_SOURCE) restrict readonly buffer Source {
  uint tableWords[];  // the write's updates, the gather's cache, STARTS' list
};
layout(std430, set = 0, binding = VKDML_BIND_SOURCE) restrict readonly buffer SourcePairs {
  uvec2 sourcePairs[];
};
layout(std430, set = 0, binding = VKDML_BIND_SOURCE) restrict readonly buffer SourceQuads {
  uvec4 sourceQuads[];
};
layout(std430, set = 0, binding = VKDML_BIND_OUTPUT) buffer Output {
  uint outputWords[];
};
layout(std430, set = 0, binding = VKDML_BIND_OUTPUT) buffer OutputPairs {
  uvec2 outputPairs[];
};
layout(std430, set = 0, binding = VKDML_BIND_OUTPUT) buffer OutputQuads {
  uvec4 outputQuads[];
};

// The gather's token rows (ROWS, the scratch's rows region): each output token's row in the
// cache (its first byte from the binding's base, before the head's offset), or one of these.
#define TOKEN_ROW(t) scratch[scratchAt.rows + (t)]
const uint kUnwritten = 0xFFFFFFFEu;  // outside every sequence: not written
const uint kFilled = 0xFFFFFFFFu;     // out of range with kDrop: FILL's value

// Loop element i of a plan of rank 3 ((tokens, heads, groups)) as coordinates.
uvec3 coordinates(uint p, uint i) {
  const uint th = divideBySize(p, 2u, i);
  const uint t = divideBySize(p, 1u, th);
  return uvec3(t, th - t * VKDML_AT(plans[p].sizes, 1), i - th * VKDML_AT(plans[p].sizes, 2));
}

// A slot (or block) index: whether it is negative, and whether it is in [0, n).
bool negativeIndex(uvec2 v) {
  return kSignedIndex && int(v.y) < 0;
}
bool indexBelow(uvec2 v, uint n) {
  return !negativeIndex(v) && v.y == 0u && v.x < n;
}

// A group from word w of the source: 4 words (16 bytes) or 2 (kGroupWords).
uvec4 sourceGroup(uint w) {
  if (kGroupWords == 4u)
    return (w & 3u) == 0u
               ? sourceQuads[w >> 2]
               : uvec4(tableWords[w], tableWords[w + 1u], tableWords[w + 2u], tableWords[w + 3u]);
  return uvec4((w & 1u) == 0u ? sourcePairs[w >> 1] : uvec2(tableWords[w], tableWords[w + 1u]),
               0u, 0u);
}

// The same to the output at word w: `words` words, 4 or 2.
void storeGroup(uint w, uvec4 bits, uint words) {
  if (words == 4u && (w & 3u) == 0u) {
    outputQuads[w >> 2] = bits;
  } else if (words == 2u && (w & 1u) == 0u) {
    outputPairs[w >> 1] = bits.xy;
  } else {
    outputWords[w] = bits.x;
    outputWords[w + 1u] = bits.y;
    if (words == 4u) {
      outputWords[w + 2u] = bits.z;
      outputWords[w + 3u] = bits.w;
    }
  }
}

#if GATHER && FUSED
const uint kMaxUnroll = 8u;  // kUnroll's bound (kernel_paged.cpp)
shared uint chunkRows[VKDML_GROUP_SIZE * kMaxUnroll];  // the chunk's tokens' rows (tokenRow)
// params.z 1: the bounds, then the token offsets (WEIGHT), copied (main) for tokenRow to bisect.
shared uint sharedBounds[VKDML_GROUP_SIZE];
#define BOUNDS_SHARED (plans[p].params.z != 0u)
#define SEQ_BOUND(n) (BOUNDS_SHARED ? sharedBounds[n] : BOUND(n))
#define SEQ_OFFSET(b) (BOUNDS_SHARED ? sharedBounds[plans[p].params.y + 1u + (b)] : WEIGHT(b))
#else
#define SEQ_BOUND(n) BOUND(n)
#define SEQ_OFFSET(b) WEIGHT(b)
#endif

#if FIND_ROWS
// Output token i's cache row (ROWS says how), or kUnwritten, or kFilled.
uint tokenRow(uint p, uint i) {
  const uint blocks = VKDML_AT(plans[p].tupleSize, 0), blockSize = VKDML_AT(plans[p].tupleSize, 1);
  const uint sequences = plans[p].params.y;
  uint n = 0u, len = sequences + 1u;  // the bounds at or before the token
  while (len > 0u) {
    const uint mid = len >> 1;
    if (SEQ_BOUND(n + mid) <= i) {
      n += mid + 1u;
      len -= mid + 1u;
    } else {
      len = mid;
    }
  }
  if (n == 0u || n > sequences) return kUnwritten;
  const uint b = n - 1u;
  const uint offset = (plans[p].params.x & 1u) != 0u ? SEQ_OFFSET(b) : 0u;
  const uint position = i - SEQ_BOUND(b) + offset;
  const uint entry = position / blockSize, row = position - entry * blockSize;
  const uint maxBlocks = VKDML_AT(plans[p].tupleSize, 2);
  const uint j = min(entry, maxBlocks - 1u);
  const uvec2 v =
      readIndex(b * VKDML_AT(plans[p].tupleStride, 3) + j * VKDML_AT(plans[p].tupleStride, 2));
  const bool inRange = entry < maxBlocks && indexBelow(v, blocks);
  if (kChecked && !inRange) atomicMin(STATUS(VKDML_STATUS_POSITION), b * maxBlocks + j);
  const uint block = negativeIndex(v) ? 0u : indexBelow(v, blocks) ? v.x : blocks - 1u;
  const uint at =
      block * VKDML_AT(plans[p].tupleStride, 0) + row * VKDML_AT(plans[p].tupleStride, 1);
  return kDrop && !inRange ? kFilled : at;
}
#endif

#if WRITE && FORMAT != 0
// Value e of UpdatesTensor (from its binding) as float32 bits: FLOAT16 converted exactly.
uint updateBits(uint e) {
  if (kValueSize == 4u) return tableWords[(pc.srcBase >> 2) + e];
  const uint h16 = (tableWords[(pc.srcBase >> 2) + (e >> 1)] >> ((e & 1u) * 16u)) & 0xFFFFu;
  return floatBitsToUint(halfToFloat(h16));
}
uint blockFrom;  // the block's first value
#define VKDML_BLOCK_VALUE(j) updateBits(blockFrom + (j))
#include "quantize_block.glsl"
#endif
#if !WRITE && FORMAT != 0
#include "quantized.glsl"
#endif

#if WRITE
// Loop element c (token, head, group) of the write: its first value in UpdatesTensor's elements,
// its target in bytes at slot s (in range).
uint groupFrom(uint p, uvec3 c) {
  return c.x * VKDML_AT(plans[p].direct, 0) + c.y * VKDML_AT(plans[p].direct, 1) +
         c.z * VKDML_AT(plans[p].direct, 2);
}
uint groupTarget(uint p, uvec3 c, uint s) {
  const uint blockSize = VKDML_AT(plans[p].tupleSize, 1);
  const uint block = s / blockSize, row = s - block * blockSize;
  return pc.dstBase + block * VKDML_AT(plans[p].tupleStride, 0) +
         row * VKDML_AT(plans[p].tupleStride, 1) + c.y * VKDML_AT(plans[p].indexed, 1) +
         c.z * VKDML_AT(plans[p].indexed, 2);
}
#if FORMAT == 0
// FORMAT 0: the group's values (the write's source words).
uvec4 groupBits(uint p, uvec3 c) {
  const uint from = groupFrom(p, c);
  return sourceGroup((pc.srcBase >> 2) + (kValueSize == 4u ? from : from >> 1));
}
#endif
// Loop element c stored at slot s.
void writeGroup(uint p, uvec3 c, uint s) {
#if FORMAT == 0
  storeGroup(groupTarget(p, c, s) >> 2, groupBits(p, c), kGroupWords);
#else
  blockFrom = groupFrom(p, c);
  quantizeBlock(groupTarget(p, c, s));
#endif
}
#endif

#if GATHER
// The values of loop element c (token, head, group) from its token's cache row `source` (ROWS:
// not kUnwritten): copied, dequantized, or FILL's value.
uvec4 gatherBits(uint p, uvec3 c, uint source) {
  if (source == kFilled) return fillBytes;  // VKDML_OUT_OF_RANGE_MODE_FILL: its bytes repeat
  const uint from = pc.srcBase + source + c.y * VKDML_AT(plans[p].indexed, 1);
#if FORMAT == 0
  return sourceGroup((from >> 2) + c.z * kGroupWords);
#else
  const uint quad = c.z * (kUnit / 4u);  // (kUnit 8: float16 out, two quads)
  uvec4 bits = dequantizeQuad(from, quad);
  if (kValueSize == 2u) {
    bits.xy = uvec2(floatToHalf(bits.x) | (floatToHalf(bits.y) << 16),
                    floatToHalf(bits.z) | (floatToHalf(bits.w) << 16));
    if (kUnit == 8u) {
      const uvec4 next = dequantizeQuad(from, quad + 1u);
      bits.zw = uvec2(floatToHalf(next.x) | (floatToHalf(next.y) << 16),
                      floatToHalf(next.z) | (floatToHalf(next.w) << 16));
    }
  }
  return bits;
#endif
}

// Where loop element c's values go: OutputTensor's word.
uint gatherTarget(uint p, uvec3 c) {
  const uint at = c.x * VKDML_AT(plans[p].direct, 0) + c.y * VKDML_AT(plans[p].direct, 1) +
                  kUnit * c.z;
  return (pc.dstBase >> 2) + (kValueSize == 4u ? at : at >> 1);
}
#endif

#if FUSED
// Loop element e's token (plans of rank 3: tokens, heads, groups): a fused chunk's first and last.
uint tokenOf(uint p, uint e) {
  return divideBySize(p, 1u, divideBySize(p, 2u, e));
}
#endif

#if GATHER && FUSED
// A workgroup's chunk of kUnroll loop elements an invocation at a time.
void main() {
  const uint p = pc.plan;
  const uint count = loopCount(p);
  const uint lid = gl_LocalInvocationID.x, size = gl_WorkGroupSize.x;
  if (BOUNDS_SHARED) {  // the bounds and offsets fit the workgroup: a word each
    const uint sequences = plans[p].params.y;
    const uint words = sequences + 1u + ((plans[p].params.x & 1u) != 0u ? sequences : 0u);
    if (lid < words)
      sharedBounds[lid] = lid <= sequences ? BOUND(lid) : WEIGHT(lid - sequences - 1u);
    barrier();
  }
  const uint perChunk = size * kUnroll;
  const uint chunks = count / perChunk + (count % perChunk != 0u ? 1u : 0u);
  for (uint chunk = gl_WorkGroupID.x; chunk < chunks; chunk += gl_NumWorkGroups.x) {
    const uint base = chunk * perChunk, n = min(count - base, perChunk);
    const uint first = tokenOf(p, base), rows = tokenOf(p, base + n - 1u) - first + 1u;
    for (uint r = lid; r < rows; r += size) chunkRows[r] = tokenRow(p, first + r);
    barrier();
    uvec4 bits[kMaxUnroll];
    uint target[kMaxUnroll];
    for (uint j = 0u; j < kUnroll; ++j) {  // every load before the stores
      const uint e = base + j * size + lid;
      const uvec3 c = coordinates(p, min(e, count - 1u));
      const uint source = chunkRows[c.x - first];
      target[j] = e < count && source != kUnwritten ? gatherTarget(p, c) : ~0u;
      bits[j] = target[j] != ~0u ? gatherBits(p, c, source) : uvec4(0u);
    }
    for (uint j = 0u; j < kUnroll; ++j)
      if (target[j] != ~0u) storeGroup(target[j], bits[j], kGroupWords);
    barrier();
  }
}
#else
#if FUSED
const uint kNoSlot = 0xFFFFFFFFu;  // the token writes nothing
shared uint chunkSlot[VKDML_GROUP_SIZE];   // the chunk's tokens' slots, or kNoSlot
shared uint chunkLater[VKDML_GROUP_SIZE];  // nonzero: a later token names the same slot
shared uint chunkFirst;                    // the first token whose slot is past the cache

// A workgroup's chunk of loop elements, an invocation each, at a time.
void main() {
  const uint p = pc.plan;
  const uint count = loopCount(p);
  const uint lid = gl_LocalInvocationID.x, size = gl_WorkGroupSize.x;
  const uint chunks = count / size + (count % size != 0u ? 1u : 0u);
  for (uint chunk = gl_WorkGroupID.x; chunk < chunks; chunk += gl_NumWorkGroups.x) {
    const uint base = chunk * size;
    const uint first = tokenOf(p, base);
    const uint rows = tokenOf(p, base + min(count - base, size) - 1u) - first + 1u;
    // The chunk's tokens write iff no later token names the same slot (the last token wins):
    // each invocation compares its share of the later tokens with the chunk's. The first chunk
    // sees every token: it finds the first slot past the cache and writes the status words.
    // Float caches load the element's values first, with the slots (neither waits on the other).
    const uint tokens = VKDML_AT(plans[p].sizes, 0);
    const uint slots = VKDML_AT(plans[p].tupleSize, 0) * VKDML_AT(plans[p].tupleSize, 1);
    const uint indexStride = VKDML_AT(plans[p].indices, 0);
    const uint e = base + lid;
    uvec3 c = uvec3(0u);
#if FORMAT == 0
    uvec4 bits = uvec4(0u);
#endif
    if (e < count) {
      c = coordinates(p, e);
#if FORMAT == 0
      bits = groupBits(p, c);
#endif
    }
    const uvec2 mine = first + lid < tokens ? readIndex((first + lid) * indexStride) : uvec2(0u);
    if (lid < rows) {
      chunkSlot[lid] = indexBelow(mine, slots) ? mine.x : kNoSlot;
      chunkLater[lid] = 0u;
    }
    if (lid == 0u) chunkFirst = VKDML_NO_POSITION;
    barrier();
    for (uint t = first + lid; t < tokens; t += size) {
      const uvec2 s = t == first + lid ? mine : readIndex(t * indexStride);
      if (indexBelow(s, slots)) {
        const uint earlier = min(rows, t - first);
        for (uint k = 0u; k < earlier; ++k)
          if (chunkSlot[k] == s.x) atomicOr(chunkLater[k], 1u);
      } else if (kChecked && chunk == 0u && !negativeIndex(s)) {
        atomicMin(chunkFirst, t);
      }
    }
    barrier();
    if (kChecked && chunk == 0u && lid == 0u) {  // in place of a fill and the report
      const uint at = chunkFirst;
      const uvec2 v = at != VKDML_NO_POSITION ? readIndex(at * indexStride) : uvec2(~0u);
      STATUS(VKDML_STATUS_POSITION) = at;
      STATUS(VKDML_STATUS_LO) = v.x;
      STATUS(VKDML_STATUS_HI) = v.y;
      STATUS(3) = ~0u;
    }
    if (e < count) {
      const uint k = c.x - first;
      const uint slot = chunkSlot[k];
      if (slot != kNoSlot && chunkLater[k] == 0u) {
#if FORMAT == 0
        storeGroup(groupTarget(p, c, slot) >> 2, bits, kGroupWords);
#else
        writeGroup(p, c, slot);
#endif
      }
    }
    barrier();
  }
}
#else
#if STARTS
// Entry i of the list bound as the source (SequenceStartsTensor, TokenOffsetsTensor or
// SequenceLengthsTensor), sign- or zero-extended: (low, high) words.
uvec2 listEntry(uint p, uint i) {
  const uint e = (pc.srcBase >> 2) + i * VKDML_AT(plans[p].indices, 0) * (INDEX64 != 0 ? 2u : 1u);
  const uint lo = tableWords[e];
  return uvec2(lo, INDEX64 != 0 ? tableWords[e + 1u] : kSignedIndex && int(lo) < 0 ? ~0u : 0u);
}

// An entry clamped into [0, total].
uint clampedEntry(uvec2 v, uint total) {
  return kSignedIndex && int(v.y) < 0 ? 0u : v.y != 0u ? total : min(v.x, total);
}

// Checked mode's status words, in place of a fill.
void setStatusWords() {
  STATUS(VKDML_STATUS_POSITION) = STATUS(VKDML_STATUS_LO) = STATUS(VKDML_STATUS_HI) = STATUS(3) =
      VKDML_NO_POSITION;
}

shared uint lengthSums[VKDML_GROUP_SIZE];

// params.y 2 (one workgroup): bounds 1 to count the sums of the `count` lengths, each length and
// each sum clamped into [0, total] (total_tokens, below 2^31: no sum of two wraps), bound 0 zero;
// a chunk of the workgroup's size at a time, scanned in shared memory.
void sumLengths(uint p, uint count, uint total) {
  const uint t = gl_LocalInvocationID.x, n = gl_WorkGroupSize.x;
  if (t == 0u) BOUND(0) = 0u;
  uint carry = 0u;
  for (uint first = 0u; first < count; first += n) {  // (uniform: every barrier met by all)
    lengthSums[t] = first + t < count ? clampedEntry(listEntry(p, first + t), total) : 0u;
    barrier();
    for (uint d = 1u; d < n; d <<= 1) {  // inclusive scan
      const uint add = t >= d ? lengthSums[t - d] : 0u;
      barrier();
      lengthSums[t] = min(lengthSums[t] + add, total);
      barrier();
    }
    if (first + t < count) BOUND(first + t + 1u) = min(carry + lengthSums[t], total);
    carry = min(carry + lengthSums[n - 1u], total);
    barrier();
  }
}
#endif

void main() {
  const uint p = pc.plan;
  const uint count = loopCount(p);
  const uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
#if STARTS
  if (plans[p].params.y == 2u) {  // SequenceLengthsTensor: one workgroup sums them
    if (plans[p].params.z != 0u && gl_LocalInvocationID.x == 0u) setStatusWords();
    sumLengths(p, count, plans[p].params.x);
    return;
  }
#endif
  const uint blocks = VKDML_AT(plans[p].tupleSize, 0), blockSize = VKDML_AT(plans[p].tupleSize, 1);
  const uint blockStride = VKDML_AT(plans[p].tupleStride, 0);
  const uint rowStride = VKDML_AT(plans[p].tupleStride, 1);
  for (uint i = gl_GlobalInvocationID.x; i < count;) {
#if CLAIM
    const uvec2 s = readIndex(i * VKDML_AT(plans[p].indices, 0));
    if (indexBelow(s, blocks * blockSize))
      atomicMax(TALLY(s.x), i + 1u);
    else if (kChecked && !negativeIndex(s))
      atomicMin(STATUS(VKDML_STATUS_POSITION), i);
#elif WRITE
    const uvec3 c = coordinates(p, i);
    const uvec2 s = readIndex(c.x * VKDML_AT(plans[p].indices, 0));
    if (indexBelow(s, blocks * blockSize) && TALLY(s.x) == c.x + 1u) writeGroup(p, c, s.x);
#elif STARTS
    const uvec2 v = listEntry(p, i);
    const uint lo = v.x, hi = v.y;
    const bool negative = kSignedIndex && int(hi) < 0;
    if (plans[p].params.z != 0u && i == 0u) setStatusWords();
    if (plans[p].params.y == 0u) {
      BOUND(i) = clampedEntry(v, plans[p].params.x);
    } else {
      WEIGHT(i) = negative || hi != 0u || lo >= 0x80000000u ? 0x80000000u : lo;
    }
#elif ROWS
    TOKEN_ROW(i) = tokenRow(p, i);
#else  // GATHER
    const uvec3 c = coordinates(p, i);
    const uint source = TOKEN_ROW(c.x);
    if (source != kUnwritten) storeGroup(gatherTarget(p, c), gatherBits(p, c, source), kGroupWords);
#endif
    if (count - i <= step) break;
    i += step;
  }
}
#endif
#endif
