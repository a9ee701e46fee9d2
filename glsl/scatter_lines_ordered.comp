#version 450
// A deterministic scatter (any reduction) done one output line at a time, for ScatterElements
// whose Axis is the innermost dimension of its plan (lib/operators/plan.h: Plan::LineShaped): the
// updates of one line only ever target that line, so one workgroup can put them in order.
// It counts the line's updates per target, scans the counts into bucket offsets and places each
// update's number (16 bits) in its target's bucket, in any order. Where every bucket holds at
// most kShortBucket updates, the target's thread sorts its bucket in registers and folds it in
// increasing update order. A line with a longer bucket is sorted whole instead (a bitonic sort of
// (target, update number) keys in shared memory) and the first thread of each target's run folds
// the run. Either way the result is the sequential one, bit for bit, and no thread loops more
// than a line's updates (lavapipe ends a shader's loops after 65535 iterations).
// kStaged (a line's update values fit where its counts were, each thread owning at most
// kOwnedMost targets and holding at most kOwnedMost updates): every load of a line is issued
// first, coalesced (its indices, its update values, its targets' values); each update finds its
// rank in its bucket (the bucket's updates numbered below it) and puts its value there, in
// shared memory over the counts, so each bucket holds its values in update order, and each
// target's thread folds its bucket from there, holding its targets' values in registers: no
// load waits on another.
// kMean: a scatter mean, each target's sum divided by its updates (plus one where kSelf) as
// glsl/mean.comp divides, in the same fold. FLOAT64 computes 8-byte floats (shaderFloat64).
#extension GL_GOOGLE_include_directive : require
#include "elem.glsl"

#include "common.glsl"
#include "index.glsl"
#include "arith.glsl"
#include "divide.glsl"

layout(local_size_x_id = VKDML_SPEC_GROUP_SIZE) in;
layout(constant_id = VKDML_SPEC_ITEMS) const uint kItems = 1;  // updates a thread holds
#define kPerLine kUnit     // updates per line (the plan's last size)
#define kSortSize kUnroll  // the power of two at or above kPerLine

layout(std430, set = 0, binding = VKDML_BIND_SOURCE) restrict readonly buffer Updates {
  T updatesData[];
};
layout(std430, set = 0, binding = VKDML_BIND_OUTPUT) restrict buffer Output { T outputData[]; };

const uint kShortBucket = VKDML_ORDERED_SHORT_BUCKET;
// Shared memory, one array and nothing else (interface.h: VKDML_ORDERED_SHARED_WORDS): counts
// (kLineLength words: per target its updates, then its bucket's offset, then its end) and
// entries (the scan's thread totals and, in VKDML_ORDERED_LONG_WORD, whether a bucket is long;
// then the bucket entries, two per word); or, for a line sorted whole, its keys
// (target << 16 | update number).
const uint kEntryWords = VKDML_ORDERED_ENTRY_WORDS(kPerLine);
shared uint lineShared[VKDML_ORDERED_SHARED_WORDS(kLineLength, kPerLine, kSortSize)];
#define counts(t) lineShared[t]
#define entries(w) lineShared[kLineLength + (w)]
#define keys(i) lineShared[i]

// The staged path's bounds: the update values' words fit in the counts' (kLineLength words),
// and each thread holds at most kOwnedMost of a line's updates and of its targets.
const uint kValueWords = ELEM == 8 ? 2u : 1u;
const uint kOwnedMost = 16u;
const uint kOwned = (kLineLength + gl_WorkGroupSize.x - 1u) / gl_WorkGroupSize.x;
const bool kStaged =
    kPerLine * kValueWords <= kLineLength && kItems <= kOwnedMost && kOwned <= kOwnedMost;

void stageValue(uint e, V v) {
#if ELEM == 8
  lineShared[2u * e] = v.x;
  lineShared[2u * e + 1u] = v.y;
#else
  lineShared[e] = v;
#endif
}

V stagedValue(uint e) {
#if ELEM == 8
  return uvec2(lineShared[2u * e], lineShared[2u * e + 1u]);
#else
  return lineShared[e];
#endif
}

uint entry(uint position) {
  return (entries(position >> 1) >> ((position & 1u) * 16u)) & 0xFFFFu;
}

V updateValue(uvec4 at, uint e) {
  return LOAD(updatesData, pc.srcBase + at.x + e * VKDML_AT(plans[pc.plan].direct, kRank - 1u));
}

uint outputAt(uvec4 at, uint t) {
  return pc.dstBase + at.y + t * VKDML_AT(plans[pc.plan].tupleStride, 0);
}

void main() {
  const uint p = pc.plan;
  const uint last = kRank - 1u;
  const uint lines = plans[p].count / kPerLine;
  const uint indexStep = VKDML_AT(plans[p].indices, last);
  const uint positionStep = VKDML_AT(plans[p].position, last);
  const uint tid = gl_LocalInvocationID.x, group = gl_WorkGroupSize.x;
  const uint chunk = (kLineLength + group - 1u) / group;  // counts each thread scans
  const uint lanes = min(group, 32u), share = (group + lanes - 1u) / lanes;  // scan of totals
  // A line's loads, all independent: this thread's updates tid, tid + group, ... (their targets
  // and, staged, their values) and, staged, its targets' values. Staged, each line's are issued
  // while the line before it is folded: its updates once that line's are staged, its targets'
  // values once that line's are stored (the first line's before the loop).
  uint targets[kItems];
  V values[kItems];
  V owned[kOwnedMost];
#define LOAD_UPDATES(at_)                                                                  \
  for (uint k = 0u; k < kItems; ++k) {                                                     \
    const uint e = tid + k * group;                                                        \
    if (e < kPerLine) {                                                                    \
      targets[k] = clampIndex(readIndex((at_).z + e * indexStep), kLineLength,             \
                              (at_).w + e * positionStep);                                 \
      if (kStaged) values[k] = updateValue(at_, e);                                        \
    }                                                                                      \
  }
#define LOAD_OWNED(at_)                                                                    \
  if (kStaged)                                                                             \
    for (uint k = 0u; k < kOwned; ++k)                                                     \
      if (tid + k * group < kLineLength)                                                   \
        owned[k] = LOAD(outputData, outputAt(at_, tid + k * group));
  uvec4 at = uvec4(0u);
  if (kStaged && gl_WorkGroupID.x < lines) {
    at = loopOffsets(p, last, gl_WorkGroupID.x);
    LOAD_UPDATES(at)
    LOAD_OWNED(at)
  }
  for (uint l = gl_WorkGroupID.x; l < lines; l += gl_NumWorkGroups.x) {
    // Staged: the next line this workgroup takes, whose loads go out during this one's fold.
    const bool ahead = kStaged && lines - l > gl_NumWorkGroups.x;
    const uvec4 following = ahead ? loopOffsets(p, last, l + gl_NumWorkGroups.x) : at;
    if (!kStaged) {
      at = loopOffsets(p, last, l);
      LOAD_UPDATES(at)
    }
    for (uint t = tid; t < kLineLength; t += group) counts(t) = 0u;
    if (tid == 0u) entries(VKDML_ORDERED_LONG_WORD) = 0u;
    barrier();
    for (uint k = 0u; k < kItems; ++k)
      if (tid + k * group < kPerLine) atomicAdd(counts(targets[k]), 1u);
    barrier();
    bool longLine;
    uint bucket[kOwnedMost];  // staged: each owned target's bucket, its start << 16 | its length
    if (kStaged) {
      // Exclusive scan of the counts, the buckets laid out by owning thread (its targets tid,
      // tid + group, ... in turn), the threads column by column (tid % 32, then tid / 32): every
      // shared access is to consecutive words or one word for all. Each thread sums its targets'
      // counts; the first 32 threads sum a column each, each scans the columns before its own
      // and then its column's threads. A bucket of more than kShortBucket updates makes the
      // line long.
      uint total = 0u;
      bool longBucket = false;
      for (uint k = 0u; k < kOwned; ++k)
        if (tid + k * group < kLineLength) {
          bucket[k] = counts(tid + k * group);
          total += bucket[k];
          longBucket = longBucket || bucket[k] > kShortBucket;
        }
      entries(tid) = total;
      if (longBucket) entries(VKDML_ORDERED_LONG_WORD) = 1u;
      barrier();
      const uint rows = (group + 31u) / 32u;
      if (tid < 32u) {
        uint column = 0u;
        for (uint j = 0u; j < rows; ++j)
          if (j * 32u + tid < group) column += entries(j * 32u + tid);
        entries(group + tid) = column;
      }
      barrier();
      if (tid < 32u) {
        uint running = 0u;
        for (uint i = 0u; i < tid; ++i) running += entries(group + i);
        for (uint j = 0u; j < rows; ++j)
          if (j * 32u + tid < group) {
            const uint c = entries(j * 32u + tid);
            entries(j * 32u + tid) = running;
            running += c;
          }
      }
      barrier();
      longLine = entries(VKDML_ORDERED_LONG_WORD) != 0u;
      uint running = entries(tid);
      for (uint k = 0u; k < kOwned; ++k)
        if (tid + k * group < kLineLength) {
          counts(tid + k * group) = running;
          const uint c = bucket[k];
          bucket[k] = running << 16 | c;  // both below 2^16
          running += c;
        }
      barrier();
    } else {
      // Exclusive scan of the counts: each thread sums a chunk; the first `lanes` threads scan
      // the chunk totals, `share` each, and thread 0 their sums. A bucket of more than
      // kShortBucket updates makes the line long.
      uint total = 0u;
      bool longBucket = false;
      for (uint k = 0u; k < chunk; ++k)
        if (tid * chunk + k < kLineLength) {
          const uint c = counts(tid * chunk + k);
          total += c;
          longBucket = longBucket || c > kShortBucket;
        }
      entries(tid) = total;
      if (longBucket) entries(VKDML_ORDERED_LONG_WORD) = 1u;
      barrier();
      longLine = entries(VKDML_ORDERED_LONG_WORD) != 0u;
      uint laneTotal = 0u;
      if (tid < lanes)
        for (uint k = 0u; k < share; ++k)
          if (tid * share + k < group) laneTotal += entries(tid * share + k);
      barrier();
      if (tid < lanes) entries(group + tid) = laneTotal;
      barrier();
      if (tid == 0u) {
        uint running = 0u;
        for (uint k = 0u; k < lanes; ++k) {
          const uint c = entries(group + k);
          entries(group + k) = running;
          running += c;
        }
      }
      barrier();
      if (tid < lanes) {
        uint running = entries(group + tid);
        for (uint k = 0u; k < share; ++k)
          if (tid * share + k < group) {
            const uint c = entries(tid * share + k);
            entries(tid * share + k) = running;
            running += c;
          }
      }
      barrier();
      uint running = entries(tid);
      for (uint k = 0u; k < chunk; ++k)
        if (tid * chunk + k < kLineLength) {
          const uint c = counts(tid * chunk + k);
          counts(tid * chunk + k) = running;
          running += c;
        }
      barrier();
    }
    // Staged: each update's bucket start beside its target (both below 2^16).
    if (kStaged)
      for (uint k = 0u; k < kItems; ++k)
        if (tid + k * group < kPerLine) targets[k] |= counts(targets[k]) << 16;
    for (uint w = tid; w < kEntryWords; w += group) entries(w) = 0u;
    barrier();
    // Each update's number into its target's bucket; counts(t) ends as bucket t's end.
    for (uint k = 0u; k < kItems; ++k) {
      const uint e = tid + k * group;
      if (e < kPerLine) {
        const uint position = atomicAdd(counts(targets[k] & 0xFFFFu), 1u);
        atomicOr(entries(position >> 1), e << ((position & 1u) * 16u));
      }
    }
    barrier();
    if (!longLine && kStaged) {
      // Each update's rank in its bucket (its target's updates before it), then its value at
      // the bucket's start plus its rank, over the counts (read no more: each owned bucket is
      // in `bucket`); then each target folds its bucket in order.
      for (uint k = 0u; k < kItems; ++k) {
        const uint e = tid + k * group;
        if (e < kPerLine) {
          const uint begin = targets[k] >> 16, end = counts(targets[k] & 0xFFFFu);
          uint rank = 0u;
          for (uint i = begin; i < end; ++i) rank += entry(i) < e ? 1u : 0u;
          targets[k] = begin + rank;
        }
      }
      barrier();
      for (uint k = 0u; k < kItems; ++k)
        if (tid + k * group < kPerLine) stageValue(targets[k], values[k]);
      barrier();
      if (ahead) LOAD_UPDATES(following)
      for (uint k = 0u; k < kOwned; ++k) {
        const uint t = tid + k * group;
        if (t >= kLineLength) break;
        const uint begin = bucket[k] >> 16, n = bucket[k] & 0xFFFFu;
        if (n == 0u) continue;
        const uint target = outputAt(at, t);
        if (kReduce == VKDML_REDUCE_NONE) {  // the last update wins
          STORE(outputData, target, stagedValue(begin + n - 1u));
          continue;
        }
        V value = owned[k];
        for (uint i = 0u; i < n; ++i) value = reduceBits(value, stagedValue(begin + i));
        STORE(outputData, target, kMean ? MEAN(value, n) : value);
      }
      if (ahead) LOAD_OWNED(following)
    } else if (!longLine) {
      // Each target's thread sorts its bucket (insertion, in registers) and folds it.
      for (uint t = tid; t < kLineLength; t += group) {
        const uint begin = t > 0u ? counts(t - 1u) : 0u, n = counts(t) - begin;
        if (n == 0u) continue;
        uint order[kShortBucket];
        for (uint i = 0u; i < n; ++i) {
          const uint e = entry(begin + i);
          uint j = i;
          for (; j > 0u && order[j - 1u] > e; --j) order[j] = order[j - 1u];
          order[j] = e;
        }
        const uint target = outputAt(at, t);
        if (kReduce == VKDML_REDUCE_NONE) {  // the last update wins
          STORE(outputData, target, updateValue(at, order[n - 1u]));
          continue;
        }
        V value = LOAD(outputData, target);
        for (uint i = 0u; i < n; ++i) value = reduceBits(value, updateValue(at, order[i]));
        STORE(outputData, target, kMean ? MEAN(value, n) : value);
      }
    } else {
      // The whole line's keys, sorted in shared memory; each run folded by its first thread.
      barrier();  // the counts and entries are read no more
      for (uint k = 0u; k < kItems; ++k) {
        const uint e = tid + k * group;
        if (e < kPerLine) keys(e) = (targets[k] & 0xFFFFu) << 16 | e;
      }
      if (ahead) {  // this line's loads are used no more
        LOAD_UPDATES(following)
        LOAD_OWNED(following)
      }
      for (uint e = kPerLine + tid; e < kSortSize; e += group) keys(e) = 0xFFFFFFFFu;
      barrier();
      for (uint size = 2u; size <= kSortSize; size <<= 1)
        for (uint stride = size >> 1; stride > 0u; stride >>= 1) {
          for (uint pair = tid; pair < kSortSize / 2u; pair += group) {
            const uint a = ((pair & ~(stride - 1u)) << 1) | (pair & (stride - 1u));
            const uint b = a + stride, x = keys(a), y = keys(b);
            if ((x > y) == ((a & size) == 0u)) {
              keys(a) = y;
              keys(b) = x;
            }
          }
          barrier();
        }
      for (uint q = tid; q < kPerLine; q += group) {
        const uint t = keys(q) >> 16;
        if (q > 0u && keys(q - 1u) >> 16 == t) continue;  // not the first of its run
        const uint target = outputAt(at, t);
        uint r = q;
        if (kReduce == VKDML_REDUCE_NONE) {  // the run's last update wins
          while (r + 1u < kPerLine && keys(r + 1u) >> 16 == t) ++r;
          STORE(outputData, target, updateValue(at, keys(r) & 0xFFFFu));
          continue;
        }
        V value = LOAD(outputData, target);
        for (; r < kPerLine && keys(r) >> 16 == t; ++r)
          value = reduceBits(value, updateValue(at, keys(r) & 0xFFFFu));
        STORE(outputData, target, kMean ? MEAN(value, r - q) : value);
      }
    }
    at = following;
    barrier();  // the next line reuses the shared memory
  }
}
