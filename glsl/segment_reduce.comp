#version 450
// Segment reductions (VKDML_OPERATOR_SEGMENT_REDUCE; lib/operators/segment_reduce.cpp:
// Pass::Kind::Segment and SegmentCheck). Every tensor is read and written in 32-bit words (bases
// in bytes: Kernel::unit 1), so no device needs 8- or 16-bit storage.
// Segment: an invocation per OutputTensor element (adjacent ones adjacent columns, so a row's
//   loads coalesce; VEC: 4 neighbouring columns of 4-byte values, in 16-byte loads and stores),
//   folding its segment's rows in row order, the sequential reference's, so every device gives
//   the same bits: glsl/arith.glsl's reduceBits in the element's type,
//   ELEM 4 for values of 1, 2 and 4 bytes (integers sign- or zero-extended, FLOAT16 as float32)
//   and ELEM 8 for 8-byte ones. Plan: direct OutputTensor's byte, indexed InputTensor's byte of
//   row 0, indices the segment's first offset (or the batch's first id), position the segment;
//   params (interface.h): rows, InputTensor's stride along Axis in bytes, VKDML_SEGMENT_* bits,
//   IndicesTensor's stride along Axis. The fill value: an empty segment's (x, y), the fold's
//   start (z, w). Where loops are bounded a dispatch folds rows [from, to) of each segment past
//   its first, carrying the fold in the scratch (PARTIAL), the first recording the longest
//   segment for bag_dispatches (lib/kernels/kernel_segment.cpp). The long path (Push::begin the
//   stage, interface.h): the fold lists the segments longer than VKDML_SEGMENT_LONG_ROWS, whose
//   chunks are then folded at once (an invocation per listed element and chunk, adjacent ones
//   adjacent columns), their results folded in chunk order by the invocations whose chunks
//   arrive last (in each group of 16, then of the groups: one dispatch past the fold): for the
//   reductions whose results do not depend on how the rows are grouped, the same bits. Float
//   sums and products stream each listed segment instead (a workgroup each, stream() below).
//   The stage past the fold builds as modules of its own (LONG=1: "_long"), so the fold's
//   registers stay its own.
// CHECK: checked mode's pass over IndicesTensor (row-major), recording the first offset that is
//   negative, past params.x (the rows) or below the one before it, or (VKDML_SEGMENT_COO) the
//   first id outside [0, params.x) or below the one before it; params.y is IndicesTensor's size
//   along Axis.
// Offsets are clamped into [0, rows] and ids found by bisection within the rows (a segment's end
// never before its start), so no access leaves the tensors, whatever IndicesTensor holds.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "index.glsl"

layout(local_size_x_id = VKDML_SPEC_GROUP_SIZE) in;
// InputTensor's element size (OutputTensor's too, but for ARGMIN and ARGMAX).
layout(constant_id = VKDML_SPEC_OUTPUT_SIZE) const uint kSize = 4;

#define kStep (gl_NumWorkGroups.x * gl_WorkGroupSize.x)

// IndicesTensor element e (sign- or zero-extended) compared with the id s: whether it is below.
bool idBelow(uint e, uint s) {
  const uvec2 v = readIndex(e);
  if (kSignedIndex && int(v.y) < 0) return true;
  return v.y == 0u && v.x < s;
}

#ifdef CHECK
// Whether index value a is below b, as IndicesTensor's type orders them.
bool valueBelow(uvec2 a, uvec2 b) {
  if (a.y != b.y) return kSignedIndex ? int(a.y) < int(b.y) : a.y < b.y;
  return a.x < b.x;
}

void main() {
  const uint p = pc.plan;
  const uvec4 g = plans[p].params;
  const bool coo = (g.z & VKDML_SEGMENT_COO) != 0u;
  for (uint i = gl_GlobalInvocationID.x; i < loopCount(p); i += kStep) {
    const uvec4 at = loopOffsets(p, kRank, i);
    const uvec2 v = readIndex(at.z);
    const bool negative = kSignedIndex && int(v.y) < 0;
    bool bad = negative || v.y != 0u || (coo ? v.x >= g.x : v.x > g.x);
    if (i % g.y != 0u) bad = bad || valueBelow(v, readIndex(at.z - g.w));
    if (bad) atomicMin(STATUS(VKDML_STATUS_POSITION), at.w);
  }
}
#else
#include "arith.glsl"
#include "divide.glsl"

#ifndef VEC
#define VEC 0
#endif
#if VEC  // 4 columns of 4-byte values an invocation, in 16-byte loads and stores
#define LANES 4u
layout(std430, set = 0, binding = VKDML_BIND_SOURCE) restrict readonly buffer Source {
  uvec4 sourceVecs[];
};
layout(std430, set = 0, binding = VKDML_BIND_OUTPUT) restrict buffer Output { uvec4 outputVecs[]; };
#else
#define LANES 1u
layout(std430, set = 0, binding = VKDML_BIND_SOURCE) restrict readonly buffer Source {
  uint sourceWords[];
};
layout(std430, set = 0, binding = VKDML_BIND_OUTPUT) restrict buffer Output { uint outputWords[]; };
#endif

#if VEC
#define VALUE uint
VALUE startValue() {
  return fillBytes.z;
}
VALUE emptyValue() {
  return fillBytes.x;
}
VALUE divideMean(VALUE v, uint n) {
  return meanOf(uvec2(v, 0u), n).x;
}
#elif ELEM == 8
#define VALUE uvec2
VALUE loadValue(uint b) {
  return uvec2(sourceWords[b >> 2], sourceWords[(b >> 2) + 1u]);
}
VALUE startValue() {
  return fillBytes.zw;
}
VALUE emptyValue() {
  return fillBytes.xy;
}
VALUE divideMean(VALUE v, uint n) {
  return meanOf(v, n);
}
void storeValue(uint b, VALUE v) {
  outputWords[b >> 2] = v.x;
  outputWords[(b >> 2) + 1u] = v.y;
}
#else
#define VALUE uint
// The value at byte b as the fold takes it: widened to 32 bits, FLOAT16 as float32.
VALUE loadValue(uint b) {
  const uint w = sourceWords[b >> 2];
  if (kSize == 4u) return w;
  const int shift = int((b & 3u) * 8u), bits = int(kSize * 8u);
  if (kKind == VKDML_KIND_FLOAT) return floatBitsToUint(halfToFloat(bitfieldExtract(w, shift, 16)));
  if (kKind == VKDML_KIND_SIGNED) return uint(bitfieldExtract(int(w), shift, bits));
  return bitfieldExtract(w, shift, bits);
}
VALUE startValue() {
  return fillBytes.z;
}
VALUE emptyValue() {
  return fillBytes.x;
}
// A mean: the sum wrapped to the element's type (integers of 1 and 2 bytes), divided.
VALUE divideMean(VALUE v, uint n) {
  if (kKind != VKDML_KIND_FLOAT && kSize < 4u)
    v = kKind == VKDML_KIND_SIGNED ? uint(bitfieldExtract(int(v), 0, int(kSize * 8u)))
                                   : bitfieldExtract(v, 0, int(kSize * 8u));
  return meanOf(uvec2(v, 0u), n).x;
}
// Stores `bytes` (1, 2 or 4) bytes of v at byte b: a part of a word atomically, bits of its own
// only, since neighbouring columns' invocations store the word's other bytes.
void storeBytes(uint b, uint v, uint bytes) {
  if (bytes == 4u) {
    outputWords[b >> 2] = v;
    return;
  }
  const uint shift = (b & 3u) * 8u, mask = ((1u << (bytes * 8u)) - 1u) << shift;
  atomicAnd(outputWords[b >> 2], ~mask);
  atomicOr(outputWords[b >> 2], (v << shift) & mask);
}
void storeValue(uint b, VALUE v) {
  if (kKind == VKDML_KIND_FLOAT && kSize == 2u) v = floatToHalf(v);
  storeBytes(b, v, kSize);
}
#endif

// Rows whose loads one invocation has in flight at once.
const uint kBatch = 8u;

// The first row r in [0, rows) of the batch whose ids start at IndicesTensor element `first`
// (stride `stride`) with an id not below s: rows where every id is below s.
uint lowerBound(uint first, uint stride, uint rows, uint s) {
  uint lo = 0u, hi = rows;
  while (lo < hi) {
    const uint mid = (lo + hi) >> 1;
    if (idBelow(first + mid * stride, s))
      lo = mid + 1u;
    else
      hi = mid;
  }
  return lo;
}

// The first row r in [start, rows) with an id not below s + 1 (rows where every id is), for a
// segment s starting at `start`: galloping from start (rows start, start + 1, + 3, + 7, ...),
// then bisection within the last step, so a short segment's end is found among the ids that its
// start's bisection has just read (cached) rather than by a bisection over all the rows.
uint endFrom(uint first, uint stride, uint rows, uint s, uint start) {
  uint lo = start, hi = start, step = 1u;
  while (hi < rows && idBelow(first + hi * stride, s + 1u)) {
    lo = hi + 1u;
    hi = rows - hi > step ? hi + step : rows;  // (no wrap past 2^32)
    step <<= 1;
  }
  while (lo < hi) {
    const uint mid = (lo + hi) >> 1;
    if (idBelow(first + mid * stride, s + 1u))
      lo = mid + 1u;
    else
      hi = mid;
  }
  return lo;
}

// An offset clamped into [0, rows].
uint clampOffset(uint e, uint rows) {
  const uvec2 v = readIndex(e);
  if (kSignedIndex && int(v.y) < 0) return 0u;
  return v.y != 0u ? rows : min(v.x, rows);
}

// Lane k's value of the row whose first byte is b (VEC: column k of the 4).
#if VEC
#define LOAD_LANES(v, b) \
  {                      \
    const uvec4 q_ = sourceVecs[(b) >> 4]; \
    for (uint k_ = 0u; k_ < 4u; ++k_) v[k_] = q_[k_]; \
  }
#else
#define LOAD_LANES(v, b) v[0] = loadValue(b)
#endif

const bool kPick = kReduce == VKDML_REDUCE_MAX || kReduce == VKDML_REDUCE_MIN;

// Folds the value v of row r into (acc, where), or with `take` starts the fold from it (MIN's
// or MAX's first row without an initial value; a chunk's first row on the long path).
void foldValue(inout VALUE acc, inout uint where, VALUE v, uint r, bool take) {
  if (kPick) {
    if (take) {
      acc = v;
      where = r;
    } else {
      const VALUE next = reduceBits(acc, v);
      if (next != acc) where = r;
      acc = next;
    }
  } else {
    acc = take ? v : reduceBits(acc, v);
  }
}

// Folds rows [r, last) from byte b (row r's), `stride` bytes apart, in row order; with
// `takeFirst` the row `first`'s value is taken (foldValue). kBatch rows' loads in flight
// together, then folded.
void foldRows(inout VALUE acc[LANES], inout uint where[LANES], uint r, uint last, uint b,
              uint stride, uint first, bool takeFirst) {
  for (; r < last; r += kBatch, b += kBatch * stride) {
    VALUE v[kBatch][LANES];
    for (uint j = 0u; j < kBatch; ++j)
      if (r + j < last) LOAD_LANES(v[j], b + j * stride);
    for (uint j = 0u; j < kBatch; ++j) {
      if (r + j >= last) break;
      for (uint k = 0u; k < LANES; ++k)
        foldValue(acc[k], where[k], v[j][k], r + j, takeFirst && r + j == first);
    }
  }
}

// (bits << 1) - 2 of a float32 (a zero of either sign: 0xFFFFFFFE): at least kAddFloor where it
// is 0 or of magnitude 2^-102 (0x0C800000) or more, the condition for a sum of such values to be
// exact on a device that flushes denormals (foldVec, streamTile).
const uint kAddFloor = 0x18FFFFFEu;
uint lowest(uint v) {
  return v * 2u - 2u;
}
uint lowest(uvec4 v) {
  return min(min(lowest(v.x), lowest(v.y)), min(lowest(v.z), lowest(v.w)));
}

#if VEC
// The fold's rows and the long path's chunks', 4 columns an invocation (foldVec): 4 rows' 16-byte
// loads held in registers (no arrays, which a compiler may put in memory), the next 4 rows' loads
// issued before these are folded, so a segment's loads stay in flight while it folds. Float32 SUM
// (where the device may flush denormals: WIDE_FLOAT32) and float MIN and MAX fold in the device's
// float arithmetic, recording what could make that differ from the exact fold (reduceBits); where
// anything could, the rows are folded again exactly. SUM: x + u is exact on a device that flushes
// denormals when x is no denormal and u is 0 or of magnitude 2^-102 or more (a sum of such values
// that is not 0 is a multiple of 2^-125 or at least 2^-103: a normal, so nothing is flushed, and
// so by induction every partial sum is normal or 0). MIN, MAX: a device's max (min) is the exact
// one where no value is a NaN or a denormal and the result is not a zero (whose sign is the first
// zero's).
uvec4 loadRow(uint b) {
  return sourceVecs[b >> 4];
}

uvec4 foldExact(uvec4 acc, uvec4 v, bool take) {
  if (take) return v;
  return uvec4(reduceBits(acc.x, v.x), reduceBits(acc.y, v.y), reduceBits(acc.z, v.z),
               reduceBits(acc.w, v.w));
}

#if WIDE_FLOAT32
const bool kFastAdd = kKind == VKDML_KIND_FLOAT && kReduce == VKDML_REDUCE_ADD;
#else
const bool kFastAdd = false;
#endif
const bool kFastPick = kKind == VKDML_KIND_FLOAT && kPick;
// (With lowest() above: at least kNormalFloor where no value is a denormal. The highest of bits
// << 1: above kNanCeiling where one is a NaN.)
const uint kNormalFloor = 0x00FFFFFEu, kNanCeiling = 0xFF000000u;

uint highest(uvec4 v) {
  const uvec4 t = v * 2u;
  return max(max(t.x, t.y), max(t.z, t.w));
}

// Rows [r, last) from byte b (row r's), `stride` bytes apart, folded into acc in row order; with
// `take` row r's value taken (MIN's or MAX's first row without an initial value).
uvec4 foldVec(uvec4 acc, uint r, uint last, uint b, uint stride, bool take) {
  const uint n = last - r, first = b;
  precise vec4 f = uintBitsToFloat(acc);  // the fast folds' value
  uint low = take ? 0xFFFFFFFFu : lowest(acc), high = take ? 0u : highest(acc);
  uvec4 q0, q1, q2, q3;
  if (n > 0u) q0 = loadRow(b);
  if (n > 1u) q1 = loadRow(b + stride);
  if (n > 2u) q2 = loadRow(b + 2u * stride);
  if (n > 3u) q3 = loadRow(b + 3u * stride);
#define FOLD_ROW(q, takeIt)                                             \
  if (kFastAdd) {                                                       \
    f += uintBitsToFloat(q);                                            \
    low = min(low, lowest(q));                                          \
  } else if (kFastPick) {                                               \
    const vec4 u_ = uintBitsToFloat(q);                                 \
    f = (takeIt) ? u_ : kReduce == VKDML_REDUCE_MAX ? max(f, u_) : min(f, u_); \
    low = min(low, lowest(q));                                          \
    high = max(high, highest(q));                                       \
  } else {                                                              \
    acc = foldExact(acc, q, takeIt);                                    \
  }
  for (uint i = 0u; i < n; i += 4u) {
    uvec4 p0, p1, p2, p3;  // the next 4 rows' loads, before these 4 rows' fold
    b += 4u * stride;
    if (i + 4u < n) p0 = loadRow(b);
    if (i + 5u < n) p1 = loadRow(b + stride);
    if (i + 6u < n) p2 = loadRow(b + 2u * stride);
    if (i + 7u < n) p3 = loadRow(b + 3u * stride);
    FOLD_ROW(q0, take && i == 0u)
    if (i + 1u < n) {
      FOLD_ROW(q1, false)
    }
    if (i + 2u < n) {
      FOLD_ROW(q2, false)
    }
    if (i + 3u < n) {
      FOLD_ROW(q3, false)
    }
    q0 = p0;
    q1 = p1;
    q2 = p2;
    q3 = p3;
  }
#undef FOLD_ROW
  if (!kFastAdd && !kFastPick) return acc;
  const uvec4 result = floatBitsToUint(f);
  const bool exact =
      kFastAdd ? low >= kAddFloor
               : low >= kNormalFloor && high <= kNanCeiling &&
                     all(notEqual(result & 0x7FFFFFFFu, uvec4(0u)));
  if (exact) return n == 0u ? acc : result;
  for (uint i = 0u; i < n; ++i) acc = foldExact(acc, loadRow(first + i * stride), take && i == 0u);
  return acc;
}
#endif

// Stores output element (at.x) of a segment of `length` rows: the fold (acc, where), the empty
// value, the mean, or the row.
void finish(uvec4 at, VALUE acc[LANES], uint where[LANES], uint length, uint flags) {
  const bool mean = (flags & VKDML_SEGMENT_MEAN) != 0u;
  const uint o = pc.dstBase + at.x;
#if VEC  // (never ARGMIN or ARGMAX)
  for (uint k = 0u; k < LANES; ++k)
    acc[k] = length == 0u ? emptyValue() : mean ? divideMean(acc[k], length) : acc[k];
  outputVecs[o >> 4] = uvec4(acc[0], acc[1], acc[2], acc[3]);
#else
  if ((flags & VKDML_SEGMENT_ARG) != 0u) {
    outputWords[o >> 2] = where[0];  // rows for an empty segment
    if ((flags & VKDML_SEGMENT_ARG64) != 0u) outputWords[(o >> 2) + 1u] = 0u;
    return;
  }
  VALUE result = acc[0];
  if (length == 0u)
    result = emptyValue();
  else if (mean)
    result = divideMean(result, length);
  storeValue(o, result);
#endif
}

// The long path's list entry `slot` (interface.h): word `w` of it, and where its chunk c's column
// k's result starts.
#define LIST(slot, w) PARTIAL((slot) * VKDML_SEGMENT_LIST_WORDS + (w))
uint chunkWord(uint slot, uint c, uint k) {
  return pc.end * VKDML_SEGMENT_LIST_WORDS +
         ((slot * VKDML_SEGMENT_LONG_CHUNKS + c) * LANES + k) * VKDML_SEGMENT_PARTIAL_WORDS;
}

// Whether the reduction's result is the same however the rows are grouped (the long path's
// chunks); else (float SUM, MEAN's sum and PROD) the long path streams each listed segment.
const bool kRegroup = kPick || kKind != VKDML_KIND_FLOAT;

#ifndef LONG
#define LONG 0
#endif
#if LONG  // the long path's stages past the fold (their own modules: the fold stays lean)

// The long path's chunk c results of listed entry `slot` (each column's fold and row), through
// atomics (the device's memory: the invocation that combines them may run anywhere).
void storeChunk(uint slot, uint c, VALUE acc[LANES], uint where[LANES]) {
  for (uint k = 0u; k < LANES; ++k) {
    const uint w = chunkWord(slot, c, k);
#if ELEM == 8
    atomicExchange(PARTIAL(w), acc[k].x);
    atomicExchange(PARTIAL(w + 1u), acc[k].y);
#else
    atomicExchange(PARTIAL(w), acc[k]);
#endif
    atomicExchange(PARTIAL(w + 2u), where[k]);
  }
}

// Folds the chunk results of `slot` at chunks from, from + step, ... (below to) into (acc,
// where) in order, kBatch chunks' loads at once; with `take` the first's taken.
void combineChunks(uint slot, uint from, uint to, uint step, inout VALUE acc[LANES],
                   inout uint where[LANES], bool take) {
  for (uint c = from; c < to; c += kBatch * step) {
    VALUE v[kBatch][LANES];
    uint vw[kBatch][LANES];
    for (uint j = 0u; j < kBatch; ++j)
      if (c + j * step < to)
        for (uint k = 0u; k < LANES; ++k) {
          const uint w = chunkWord(slot, c + j * step, k);
#if ELEM == 8
          v[j][k] = uvec2(atomicOr(PARTIAL(w), 0u), atomicOr(PARTIAL(w + 1u), 0u));
#else
          v[j][k] = atomicOr(PARTIAL(w), 0u);
#endif
          vw[j][k] = atomicOr(PARTIAL(w + 2u), 0u);
        }
    for (uint j = 0u; j < kBatch; ++j) {
      if (c + j * step >= to) break;
      for (uint k = 0u; k < LANES; ++k)
        foldValue(acc[k], where[k], v[j][k], vw[j][k], take && c + j * step == from);
    }
  }
}

// The stream (float sums and products of listed segments): a workgroup per listed element, its
// invocations loading kTile rows at a time into shared memory two tiles ahead of the fold, an
// invocation per column (of the 4) folding each tile's rows in row order: the chain waits on the
// arithmetic, not on each load.
const uint kTile = VKDML_GROUP_SIZE;
const uint kTileShare = kTile / VKDML_MIN_GROUP_SIZE;  // rows an invocation loads, at most
#if VEC
// Column k's rows of buffer h, 16-byte slots of 4 rows, columns kTile / 4 + 1 slots apart: the
// loaders' stores and the 4 folding invocations' 16-byte reads fall in different banks.
shared uvec4 tileVecs[2][LANES][kTile / 4u + 1u];
void tileStore(uint h, uint j, uint k, VALUE v) {
  tileVecs[h][k][j >> 2][j & 3u] = v;
}
VALUE tileLoad(uint h, uint j, uint k) {
  return tileVecs[h][k][j >> 2][j & 3u];
}
#else
shared VALUE tileValues[2][kTile][LANES];
void tileStore(uint h, uint j, uint k, VALUE v) {
  tileValues[h][j][k] = v;
}
VALUE tileLoad(uint h, uint j, uint k) {
  return tileValues[h][j][k];
}
#endif

// Rows of a tile that a folding invocation reads from shared memory before adding them: reduceBits'
// fold, the device's additions (kStreamFast).
const uint kStreamBatch = 16u, kFastBatch = 64u;

// Float32 sums where the device may flush denormals (WIDE_FLOAT32, whose reduceBits checks each
// addition): each tile folded in the device's additions (foldVec's rule: exact where every value
// and the start is 0 or of magnitude 2^-102 or more), else folded again with reduceBits.
#if WIDE_FLOAT32
const bool kStreamFast = kKind == VKDML_KIND_FLOAT && kReduce == VKDML_REDUCE_ADD;
#else
const bool kStreamFast = false;
#endif

// Tile s of the stream (buffer h, s % 2): this invocation's rows of it from `held` into shared
// memory, tile s + 2's loads into `held` in their place, then invocations 0 to LANES - 1 fold
// tile s's column (of the 4) of their own into `a`, in row order.
void streamTile(uint s, uint h, inout VALUE held[kTileShare][LANES], inout VALUE a, uint base,
                uint stride, uint length) {
  const uint t = gl_LocalInvocationID.x;
  barrier();  // the fold of tile s - 2 (the same buffer) is done
  for (uint q = 0u; q < kTileShare; ++q) {
    const uint j = t + q * gl_WorkGroupSize.x, r = s * kTile + j;
    if (j < kTile && r < length)
      for (uint k = 0u; k < LANES; ++k) tileStore(h, j, k, held[q][k]);
    if (j < kTile && r + 2u * kTile < length)  // tile s + 2's, into the registers just freed
      LOAD_LANES(held[q], base + (r + 2u * kTile) * stride);
  }
  barrier();
  if (t < LANES) {  // kStreamBatch rows' shared loads at once, then their additions in order
    const uint n = min(kTile, length - s * kTile);
    uint j = 0u;
#if ELEM == 4
    if (kStreamFast) {  // the device's additions, the tile folded again exactly where they may err
      precise float f = uintBitsToFloat(a);
      uint low = lowest(a);
      // kFastBatch rows' shared reads at once, then their additions (H200: 64 rows, 0.55 ms on the
      // powerlaw sum against 0.62 ms for 32 rows, 0.57 ms for 128 and 0.74 ms for 16 rows with
      // the next batch's reads issued before these rows' additions)
#if VEC
      for (; j + kFastBatch <= n; j += kFastBatch) {
        uvec4 v[kFastBatch / 4u];  // column t's rows j to j + kFastBatch - 1, 4 a read
        for (uint b = 0u; b < kFastBatch / 4u; ++b) v[b] = tileVecs[h][t][j / 4u + b];
        for (uint b = 0u; b < kFastBatch / 4u; ++b) {
          f += uintBitsToFloat(v[b].x);
          f += uintBitsToFloat(v[b].y);
          f += uintBitsToFloat(v[b].z);
          f += uintBitsToFloat(v[b].w);
          low = min(low, lowest(v[b]));
        }
      }
#else
      for (; j + kFastBatch <= n; j += kFastBatch) {
        uint v[kFastBatch];
        for (uint b = 0u; b < kFastBatch; ++b) v[b] = tileLoad(h, j + b, t);
        for (uint b = 0u; b < kFastBatch; ++b) {
          f += uintBitsToFloat(v[b]);
          low = min(low, lowest(v[b]));
        }
      }
#endif
      for (; j < n; ++j) {
        const uint v = tileLoad(h, j, t);
        f += uintBitsToFloat(v);
        low = min(low, lowest(v));
      }
      if (low >= kAddFloor) {
        a = floatBitsToUint(f);
        return;
      }
      j = 0u;
    }
#endif
    for (; j + kStreamBatch <= n; j += kStreamBatch) {
      VALUE v[kStreamBatch];
      for (uint b = 0u; b < kStreamBatch; ++b) v[b] = tileLoad(h, j + b, t);
      for (uint b = 0u; b < kStreamBatch; ++b) a = reduceBits(a, v[b]);
    }
    for (; j < n; ++j) a = reduceBits(a, tileLoad(h, j, t));
  }
}

void stream(uint p, uint slot, uint rows, uint rowStride, uint flags) {
  const uint i = LIST(slot, 0u), start = LIST(slot, 1u), length = LIST(slot, 2u);
  const uvec4 at = loopOffsets(p, kRank, i);
  const uint tiles = (length + kTile - 1u) / kTile, t = gl_LocalInvocationID.x;
  const uint base = pc.srcBase + at.y + start * rowStride;
  // Tile s's rows that this invocation loads: s * kTile + t + q * gl_WorkGroupSize.x, tiles 0
  // and 2 (and so on) held in held0, 1 and 3 in held1.
  VALUE held0[kTileShare][LANES], held1[kTileShare][LANES];
  for (uint q = 0u; q < kTileShare; ++q) {
    const uint j = t + q * gl_WorkGroupSize.x;
    if (j < kTile && j < length) LOAD_LANES(held0[q], base + j * rowStride);
    if (j < kTile && kTile + j < length) LOAD_LANES(held1[q], base + (kTile + j) * rowStride);
  }
  VALUE a = startValue();  // invocation t < LANES: column t's fold
  for (uint s = 0u; s < tiles; s += 2u) {  // (tiles uniform: every invocation meets each barrier)
    streamTile(s, 0u, held0, a, base, rowStride, length);
    if (s + 1u < tiles) streamTile(s + 1u, 1u, held1, a, base, rowStride, length);
  }
  barrier();  // every fold of the last tiles is done: their columns' results to invocation 0
  if (t < LANES) tileStore(0u, 0u, t, a);
  barrier();
  if (t == 0u) {
    VALUE acc[LANES];
    uint where[LANES];
    for (uint k = 0u; k < LANES; ++k) {
      acc[k] = tileLoad(0u, 0u, k);
      where[k] = rows;
    }
    finish(at, acc, where, length, flags);
  }
}

void main() {
  const uint p = pc.plan;
  const uvec4 g = plans[p].params;  // uniform: the same branches in every invocation
  const uint rows = g.x, rowStride = g.y, flags = g.z, indexStride = g.w;
  const bool coo = (flags & VKDML_SEGMENT_COO) != 0u;
  const bool initial = (flags & VKDML_SEGMENT_INITIAL) != 0u;
  if (!kRegroup && pc.begin != VKDML_SEGMENT_STAGE_FOLD) {  // the stream (its chunks' stage)
    const uint slot = gl_WorkGroupID.x;
    if (slot < min(DISPATCH(VKDML_SEGMENT_LONG_COUNT), pc.end))
      stream(p, slot, rows, rowStride, flags);
    return;
  }
  if (pc.begin != VKDML_SEGMENT_STAGE_FOLD) {
    // The long path's chunks (a chunk of a listed segment an invocation), then the combine by
    // the invocation whose chunk arrives last.
    const uint slot = gl_GlobalInvocationID.x;
    if (slot >= min(DISPATCH(VKDML_SEGMENT_LONG_COUNT), pc.end)) return;
    const uint i = LIST(slot, 0u), start = LIST(slot, 1u), length = LIST(slot, 2u);
    const uint part = LIST(slot, 3u), chunks = (length + part - 1u) / part;
    const uvec4 at = loopOffsets(p, kRank, i);
    VALUE acc[LANES];
    uint where[LANES];
    for (uint k = 0u; k < LANES; ++k) {
      acc[k] = startValue();
      where[k] = rows;
    }
    const uint c = gl_WorkGroupID.y;
    if (c >= chunks) return;
    const uint r = start + c * part, last = min(r + part, start + length);
#if VEC  // (never ARGMIN or ARGMAX: `where` unused)
    const uvec4 folded = foldVec(uvec4(acc[0], acc[1], acc[2], acc[3]), r, last,
                                 pc.srcBase + at.y + r * rowStride, rowStride, true);
    for (uint k = 0u; k < LANES; ++k) {
      acc[k] = folded[k];
      where[k] = r;
    }
#else
    foldRows(acc, where, r, last, pc.srcBase + at.y + r * rowStride, rowStride, r, true);
#endif
    // The chunk's results through the device's memory (atomics: no cache of this invocation's
    // holds them), then its arrival; the last to arrive in its group sees the group's chunks',
    // folds them in order into the group's first chunk's, and arrives for the segment; the last
    // group to arrive folds the groups' results in order: a tail of a few loads' latency.
    storeChunk(slot, c, acc, where);
    const uint first = c / VKDML_SEGMENT_COMBINE_GROUP * VKDML_SEGMENT_COMBINE_GROUP;
    const uint arrivals = VKDML_SEGMENT_ARRIVALS + slot * VKDML_SEGMENT_ARRIVAL_WORDS;
    memoryBarrierBuffer();
    if (atomicAdd(DISPATCH(arrivals + 1u + c / VKDML_SEGMENT_COMBINE_GROUP), 1u) !=
        min(VKDML_SEGMENT_COMBINE_GROUP, chunks - first) - 1u)
      return;
    memoryBarrierBuffer();
    combineChunks(slot, first, min(first + VKDML_SEGMENT_COMBINE_GROUP, chunks), 1u, acc, where,
                  true);
    storeChunk(slot, first, acc, where);
    memoryBarrierBuffer();
    const uint groups = (chunks + VKDML_SEGMENT_COMBINE_GROUP - 1u) / VKDML_SEGMENT_COMBINE_GROUP;
    if (atomicAdd(DISPATCH(arrivals), 1u) != groups - 1u) return;
    memoryBarrierBuffer();
    for (uint k = 0u; k < LANES; ++k) {
      acc[k] = startValue();
      where[k] = rows;
    }
    combineChunks(slot, 0u, chunks, VKDML_SEGMENT_COMBINE_GROUP, acc, where,
                  kPick && !initial);
    finish(at, acc, where, length, flags);
    return;
  }
}
#else  // the fold
void main() {
  const uint p = pc.plan;
  const uvec4 g = plans[p].params;  // uniform: the same branches in every invocation
  const uint rows = g.x, rowStride = g.y, flags = g.z, indexStride = g.w;
  const bool coo = (flags & VKDML_SEGMENT_COO) != 0u;
  const bool initial = (flags & VKDML_SEGMENT_INITIAL) != 0u;
  for (uint i = gl_GlobalInvocationID.x; i < loopCount(p); i += kStep) {
    const uvec4 at = loopOffsets(p, kRank, i);  // x: output byte, y: row 0's byte, z: index, w: s
    uint start, end;
    if (coo) {
      start = lowerBound(at.z, indexStride, rows, at.w);
      end = endFrom(at.z, indexStride, rows, at.w, start);
    } else {
      start = clampOffset(at.z, rows);
      end = max(clampOffset(at.z + indexStride, rows), start);
    }
    const uint length = end - start;
    if (pc.end != 0u && length > VKDML_SEGMENT_LONG_ROWS) {  // the long path: listed
      const uint slot = atomicAdd(DISPATCH(VKDML_SEGMENT_LONG_COUNT), 1u);
      if (slot < pc.end) {
        uint chunks = min((length + VKDML_SEGMENT_LONG_ROWS - 1u) / VKDML_SEGMENT_LONG_ROWS,
                          VKDML_SEGMENT_LONG_CHUNKS);
        const uint part = (length + chunks - 1u) / chunks;
        chunks = (length + part - 1u) / part;  // none empty
        LIST(slot, 0u) = i;
        LIST(slot, 1u) = start;
        LIST(slot, 2u) = length;
        LIST(slot, 3u) = part;
        if (!kRegroup) {  // the stream: a workgroup per listed element
          atomicMax(DISPATCH(VKDML_BAG_COMMAND(0)), slot + 1u);
          atomicMax(DISPATCH(VKDML_BAG_COMMAND(0) + 1u), 1u);
          atomicMax(DISPATCH(VKDML_BAG_COMMAND(0) + 2u), 1u);
          continue;
        }
        const uint groups = slot / gl_WorkGroupSize.x + 1u;
        atomicMax(DISPATCH(VKDML_BAG_COMMAND(0)), groups);
        atomicMax(DISPATCH(VKDML_BAG_COMMAND(0) + 1u), chunks);
        atomicMax(DISPATCH(VKDML_BAG_COMMAND(0) + 2u), 1u);
        continue;
      }
    }
    if (pc.from == 0u && pc.to != 0xFFFFFFFFu) atomicMax(DISPATCH(VKDML_BAG_LONGEST), length);
    if (pc.from > 0u && pc.from >= length) continue;  // an earlier dispatch finished it
    VALUE acc[LANES];
    uint where[LANES];  // the row of MIN's or MAX's value
    for (uint k = 0u; k < LANES; ++k) {
      acc[k] = startValue();
      where[k] = rows;
    }
    if (pc.from > 0u) {
      for (uint k = 0u; k < LANES; ++k) {
        const uint w = (i * LANES + k) * VKDML_SEGMENT_PARTIAL_WORDS;
#if ELEM == 8
        acc[k] = uvec2(PARTIAL(w), PARTIAL(w + 1u));
#else
        acc[k] = PARTIAL(w);
#endif
        where[k] = PARTIAL(w + 2u);
      }
    }
    const uint to = min(length, pc.to), r = start + pc.from;
#if VEC
    const uvec4 folded = foldVec(uvec4(acc[0], acc[1], acc[2], acc[3]), r, start + to,
                                 pc.srcBase + at.y + r * rowStride, rowStride,
                                 kPick && !initial && pc.from == 0u);
    for (uint k = 0u; k < LANES; ++k) acc[k] = folded[k];
#else
    foldRows(acc, where, r, start + to, pc.srcBase + at.y + r * rowStride, rowStride, start,
             kPick && !initial);
#endif
    if (to < length) {  // a later dispatch goes on
      for (uint k = 0u; k < LANES; ++k) {
        const uint w = (i * LANES + k) * VKDML_SEGMENT_PARTIAL_WORDS;
#if ELEM == 8
        PARTIAL(w) = acc[k].x;
        PARTIAL(w + 1u) = acc[k].y;
#else
        PARTIAL(w) = acc[k];
#endif
        PARTIAL(w + 2u) = where[k];
      }
      continue;
    }
    finish(at, acc, where, length, flags);
  }
}
#endif
#endif
