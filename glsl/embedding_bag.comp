#version 450
// Embedding bags (VKDML_OPERATOR_EMBEDDING_BAG; lib/operators/operator.h: Pass::Kind::Bounds,
// Weights and Bag). Every tensor is read and written in 32-bit words (bases in bytes:
// Kernel::unit 1), so no device needs 8- or 16-bit storage.
// BOUNDS: bound b of the bags (b <= bags) into the scratch, OffsetsTensor's entry b clamped into
//   [0, entries], or (the last, without VKDML_BAG_LAST_OFFSET) entries; on the large path, noting
//   a bound below the one before it (SPAN: VKDML_BAG_SPAN_DISORDER).
// WEIGHTS: PerSampleWeightsTensor's entry e into the scratch as float32.
// Otherwise (Bag): an invocation per group of 4 output values of a bag, folding its entries' rows
//   in entry order, each step rounded once in float32 (glsl/arith.glsl, as a float32 reduction's,
//   denormals kept by _dp and _w), then rounded to OutputTensor's type. TABLE: 32 (FLOAT32
//   values), 16 (FLOAT16), 8 (Q8_0 blocks) or 4 (Q4_0).
// On the large path (InputTensor past the binding range; lib/kernels/kernel_bag.cpp), the bag's
// entries go in chunks, each fetched and then folded:
// FETCH (LARGE=1): the rows of the chunk's entries [begin, end) whose first byte lies in this
//   dispatch's window of the table, each to its slot in the scratch (ROW_SLOT), copied in whole
//   words, so a row keeps its byte within its first word; it also starts the chunk's longest bag
//   at 0.
// SPANS: then, one invocation, the bags with entries in the chunk (by bisection, where the bounds
//   are in order; else all) as a span of the Bag stage's groups of 4 values, and the workgroups
//   of its first dispatch.
// FETCHED: the Bag stage reading those slots for the table, over the span.
// Each Bag dispatch folds, of each bag's entries within [begin, end), those [from, to) past its
// first there, carrying a fold begun before them in the scratch. Where loops are bounded, a
// chunk of entries (all of them off the large path) takes dispatches of a part each, the first
// recording the longest bag in the chunk;
// DISPATCHES then sets the later ones' workgroups: all where a bag reaches their part, else none.
// INDEX64: 64-bit indices and offsets.
#extension GL_GOOGLE_include_directive : require
#define ELEM 4  // arith.glsl and divide.glsl on float32 bits
#ifndef FETCHED
#define FETCHED 0
#endif
#include "common.glsl"
#include "index.glsl"
#include "arith.glsl"
#include "divide.glsl"

layout(local_size_x_id = VKDML_SPEC_GROUP_SIZE) in;  // Capabilities::groupSize
layout(constant_id = VKDML_SPEC_OUTPUT_SIZE) const uint kOutputSize = 4;

layout(std430, set = 0, binding = VKDML_BIND_SOURCE) restrict readonly buffer Source {
#if FETCHED
  uint sourceWords[];  // the table, not read: its rows are the scratch's slots
#else
  uint tableWords[];  // the pass's source: the table, OffsetsTensor or PerSampleWeightsTensor
#endif
};
#if FETCHED
#define tableWords scratch  // rowValues (and quantized.glsl) read a row from its slot
#endif
#define ROW_SLOT(w) scratch[scratchAt.rows + (w)]
layout(std430, set = 0, binding = VKDML_BIND_OUTPUT) restrict buffer Output { uint outputWords[]; };

// Each loop's stride: every invocation's (at most 65535 * 1024, below 2^26). A loop counts at
// most a tensor's bytes over 2 within one descriptor (below 2^31), so `+= kStep` cannot wrap.
#define kStep (gl_NumWorkGroups.x * gl_WorkGroupSize.x)

// The float16 at byte b (even) of the source, as float32 bits.
uint sourceHalf(uint b) {
  return floatBitsToUint(halfToFloat((tableWords[b >> 2] >> ((b & 2u) * 8u)) & 0xFFFFu));
}

#if TABLE == 8 || TABLE == 4
#define FORMAT TABLE
#include "quantized.glsl"
#endif

#ifdef BOUNDS
// Bound b (< count, the bags plus 1) of the bags: OffsetsTensor's entry b clamped into
// [0, entries], or past its `offsets` entries, entries.
uint bagBound(uint p, uint b, uint entries, uint offsets) {
  if (b >= offsets) return entries;
  const uint e = (pc.srcBase >> 2) + loopOffsets(p, kRank, b).z * (INDEX64 != 0 ? 2u : 1u);
  const uint lo = tableWords[e];
  const uint hi = INDEX64 != 0 ? tableWords[e + 1u] : kSignedIndex && int(lo) < 0 ? ~0u : 0u;
  const bool negative = kSignedIndex && int(hi) < 0;
  return negative ? 0u : hi != 0u ? entries : min(lo, entries);
}

void main() {
  const uint p = pc.plan;
  const uint count = loopCount(p);  // the bags, plus 1
  const bool lastOffset = (plans[p].params.x & VKDML_BAG_LAST_OFFSET) != 0u;
  const bool order = plans[p].params.w != 0u;  // the large path's spans need to know
  const uint entries = VKDML_AT(plans[p].tupleSize, 0), offsets = lastOffset ? count : count - 1u;
  for (uint b = gl_GlobalInvocationID.x; b < count; b += kStep) {
    const uint bound = bagBound(p, b, entries, offsets);
    BOUND(b) = bound;
    if (order && b > 0u && bound < bagBound(p, b - 1u, entries, offsets))
      SPAN(VKDML_BAG_SPAN_DISORDER) = 1u;
  }
}
#elif defined(DISPATCHES)
void main() {
  const uint p = pc.plan;
  const uvec4 g = plans[p].params;  // the later dispatches, the entries each, their workgroups
  const uint longest = DISPATCH(VKDML_BAG_LONGEST);
  const uint groups =  // (w: as many as the first, from SPANS)
      g.w != 0u ? DISPATCH(VKDML_BAG_COMMAND(0)) : g.z;
  for (uint k = gl_GlobalInvocationID.x + 1u; k <= g.x; k += kStep) {  // dispatch k
    setBagCommand(k, longest > k * g.y ? groups : 0u);
  }
}
#elif defined(SPANS)
// The first bag b < bags for which `test` holds (it holds for every bag after), or bags.
#define FIRST_BAG(result, test)      \
  {                                  \
    uint lo = 0u, hi = bags;         \
    while (lo < hi) {                \
      const uint b = (lo + hi) >> 1; \
      if (test)                      \
        hi = b;                      \
      else                           \
        lo = b + 1u;                 \
    }                                \
    result = lo;                     \
  }

void main() {
  if (gl_GlobalInvocationID.x != 0u) return;
  const uvec4 g = plans[pc.plan].params;  // the bags, a bag's groups of 4 values, most workgroups
  const uint bags = g.x;
  uint first = 0u, end = bags;
  if (SPAN(VKDML_BAG_SPAN_DISORDER) == 0u) {
    // Bounds in order: the bags with entries in [begin, end) (or none, starting there) are those
    // from the first ending past begin or starting at it, to the last starting before end.
    FIRST_BAG(first, BOUND(b + 1u) > pc.begin || BOUND(b) >= pc.begin);
    if (pc.end != 0xFFFFFFFFu) FIRST_BAG(end, BOUND(b) >= pc.end);
  }
  const uint values = (max(end, first) - first) * g.y, group = gl_WorkGroupSize.x;
  SPAN(VKDML_BAG_SPAN_BASE) = first * g.y;
  SPAN(VKDML_BAG_SPAN_COUNT) = values;
  setBagCommand(0u, min(values / group + (values % group != 0u ? 1u : 0u), g.z));
}
#elif defined(FETCH)
void main() {
  const uint p = pc.plan;
  const uint count = loopCount(p);  // the chunk's entries times a slot's groups of 4 words
  const uint quads = VKDML_AT(plans[p].sizes, 1);
  const uint rows = VKDML_AT(plans[p].tupleSize, 0), rowStride = VKDML_AT(plans[p].tupleStride, 0);
  const uint rowBytes = plans[p].params.x, slot = plans[p].params.y;  // slot: words
  if (gl_GlobalInvocationID.x == 0u) DISPATCH(VKDML_BAG_LONGEST) = 0u;  // the chunk's
  for (uint i = gl_GlobalInvocationID.x; i < count; i += kStep) {
    const uint t = divideBySize(p, 1u, i), q = i - t * quads;  // the entry's slot, its quad
    const uint e = pc.begin + t;
    const uint row =
        clampIndex(readIndex(e * plans[p].componentStride - lpc.indicesStart), rows, e);
    if (kDrop && row == VKDML_DROPPED) continue;
    const uint at = ownedOffset(product2x32(row, rowStride));  // bytes, its window's start on 4
    if (at == VKDML_NOT_OWNED) continue;
    const uint words = ((at & 3u) + rowBytes + 3u) >> 2;  // the words holding the row's bytes
    for (uint w = 4u * q; w < min(4u * q + 4u, words); ++w)
      ROW_SLOT(t * slot + w) = tableWords[(at >> 2) + w];
  }
}
#elif defined(WEIGHTS)
void main() {
  const uint p = pc.plan;
  const uint count = loopCount(p);
  for (uint e = gl_GlobalInvocationID.x; e < count; e += kStep) {
    const uint at = loopOffsets(p, kRank, e).z;  // the weight's element
    WEIGHT(e) =
        kOutputSize == 4u ? tableWords[(pc.srcBase >> 2) + at] : sourceHalf(pc.srcBase + 2u * at);
  }
}
#else
// Values c to c + 3 of the table row whose first byte is `row`, as float32 bits (0 past the row's
// `width` values).
uvec4 rowValues(uint row, uint c, uint width) {
  uvec4 v = uvec4(0u);
#if TABLE == 32
  for (uint k = 0u; k < 4u; ++k)
    if (c + k < width) v[k] = tableWords[(row >> 2) + c + k];
#elif TABLE == 16
  for (uint k = 0u; k < 4u; ++k)
    if (c + k < width) v[k] = sourceHalf(row + 2u * (c + k));
#else
  v = dequantizeQuad(row, c >> 2);  // a row is whole blocks: c + 3 < width
#endif
  return v;
}

// Stores float16 h at byte b (even) of the output, leaving the word's other half, which another
// invocation may be storing, or which is not the tensor's: atomically, bits of its own only.
void storeHalf(uint b, uint h) {
  const uint w = b >> 2, shift = (b & 2u) * 8u;
  atomicAnd(outputWords[w], ~(0xFFFFu << shift));
  atomicOr(outputWords[w], h << shift);
}

// Entries fetched at once: their index and row loads in flight together, then folded in order.
const uint kBatch = 4u;

void main() {
  const uint p = pc.plan;
  const uint rows = VKDML_AT(plans[p].tupleSize, 0), rowStride = VKDML_AT(plans[p].tupleStride, 0);
  const uvec4 options = plans[p].params;  // uniform: the same branches in every invocation
  const bool mean = (options.x & VKDML_BAG_MEAN) != 0u;
  const bool weighted = (options.x & VKDML_BAG_WEIGHTED) != 0u;
  const bool fillDropped = (options.x & VKDML_BAG_FILL) != 0u;
  const uint padding = options.y, width = options.z;
  const uint fill =  // FILL's value (an OutputTensor element) as float32 bits
      kOutputSize == 4u ? fillBytes.x : floatBitsToUint(halfToFloat(fillBytes.x & 0xFFFFu));
#if FETCHED  // the groups of the bags with entries in this chunk (SPANS)
  const uint base = SPAN(VKDML_BAG_SPAN_BASE), stop = base + SPAN(VKDML_BAG_SPAN_COUNT);
#else
  const uint base = 0u, stop = loopCount(p);
#endif
  for (uint i = base + gl_GlobalInvocationID.x; i < stop; i += kStep) {
    const uvec4 at = loopOffsets(p, kRank, i);  // x: the output's byte, y: the first value, w: bag
    const uint start = BOUND(at.w), length = max(BOUND(at.w + 1u), start) - start;
    // A bag starting after [begin, end) is a later chunk's, one ending before it an earlier
    // one's (the last chunk's end: 2^32 - 1, for bags starting at the last entry or past it).
    if (start >= pc.end || (start < pc.begin && start + length <= pc.begin)) continue;
    const uint first = max(start, pc.begin), here = min(start + length, pc.end) - first;
    if (pc.from == 0u && pc.to != 0xFFFFFFFFu) atomicMax(DISPATCH(VKDML_BAG_LONGEST), here);
    if (pc.from > 0u && pc.from >= here) continue;  // an earlier dispatch finished the bag
    const bool carried = start < pc.begin || pc.from > 0u;
    const uint from = first + pc.from, to = first + min(here, pc.to);
    uvec4 acc = uvec4(0u);  // +0
    uint n = 0u;            // the rows folded
    if (carried) {
      for (uint k = 0u; k < 4u; ++k) acc[k] = PARTIAL(i * VKDML_BAG_PARTIAL_WORDS + k);
      n = PARTIAL(i * VKDML_BAG_PARTIAL_WORDS + 4u);
    }
    for (uint e = from; e < to; e += kBatch) {
      uvec4 v[kBatch];
      bool used[kBatch];
      for (uint j = 0u; j < kBatch; ++j) {
        used[j] = e + j < to;
        if (!used[j]) continue;
        const uint row = clampIndex(readIndex((e + j) * plans[p].componentStride), rows, e + j);
        if (kDrop && row == VKDML_DROPPED) {
          used[j] = fillDropped;  // FILL: a row of its value; DROP: skipped
          v[j] = uvec4(fill);
        } else {
          used[j] = row != padding;
#if FETCHED  // the row's slot, from the byte of its first word the row starts on
          const uint first = (scratchAt.rows + (e + j - pc.begin) * options.w) * 4u;
          if (used[j]) v[j] = rowValues(first + ((row * rowStride) & 3u), at.y, width);
#else
          if (used[j]) v[j] = rowValues(pc.srcBase + row * rowStride, at.y, width);
#endif
        }
      }
      for (uint j = 0u; j < kBatch; ++j) {  // folded in entry order
        if (!used[j]) continue;
        if (weighted) {
          const uint w = WEIGHT(e + j);
          for (uint k = 0u; k < 4u; ++k) v[j][k] = floatArith(v[j][k], w, false);
        }
        for (uint k = 0u; k < 4u; ++k)
          acc[k] = kReduce == VKDML_REDUCE_MAX ? (n == 0u ? v[j][k] : reduceBits(acc[k], v[j][k]))
                                               : floatArith(acc[k], v[j][k], true);
        ++n;
      }
    }
    if (to < start + length) {  // a later dispatch goes on
      for (uint k = 0u; k < 4u; ++k) PARTIAL(i * VKDML_BAG_PARTIAL_WORDS + k) = acc[k];
      PARTIAL(i * VKDML_BAG_PARTIAL_WORDS + 4u) = n;
      continue;
    }
    if (mean && n > 0u)
      for (uint k = 0u; k < 4u; ++k) acc[k] = divideFloat(uvec2(acc[k], 0u), n).x;
    if (kOutputSize == 4u) {
      const uint word = (pc.dstBase + at.x) >> 2;
      for (uint k = 0u; k < 4u; ++k)
        if (at.y + k < width) outputWords[word + k] = acc[k];
    } else {  // a word where both its halves are this group's, else the half alone
      const uint values = min(4u, width - at.y), first = pc.dstBase + at.x;
      for (uint k = 0u; k < values; ++k) {
        const uint b = first + 2u * k, h = floatToHalf(acc[k]);
        if ((b & 2u) == 0u && k + 1u < values) {
          outputWords[b >> 2] = h | (floatToHalf(acc[k + 1u]) << 16);
          ++k;
        } else {
          storeHalf(b, h);
        }
      }
    }
  }
}
#endif
