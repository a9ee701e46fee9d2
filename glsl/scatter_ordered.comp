#version 450
// A deterministic scatter's last step: the updates, sorted by target (radix_sort.comp), applied
// to each target in the row-major order of IndicesTensor. An update unit is kUnit consecutive
// loop elements of the scatter's plan (ScatterND: an index tuple's slice; ScatterElements: one
// element), so loop element i = unit * kUnit + s. The threads of sorted position q work only
// where q starts a run of equal keys within [pc.begin, pc.end): each folds the run's updates of
// its kPer elements into their targets in order (without a reduction, the last one wins). A
// dispatch that begins inside a run carries on from what the previous one left in the target.
// kMean (a scatter mean, not LARGE): where a run ends in this dispatch, its sum is divided by
// the run's length (plus one where kSelf), its start found in the sorted keys where it began in
// an earlier dispatch: the count and division of glsl/mean.comp, without their passes.
// FLOAT64 computes 8-byte floats (shaderFloat64). LARGE: the large path (interface.h:
// LargePush), one chunk of the loop and one window of OutputTensor per dispatch, a unit one
// element, folding only the runs of targets in its window; or (kSequential) one invocation
// folding a small chunk in order, unsorted.
#extension GL_GOOGLE_include_directive : require
#include "elem.glsl"

#include "common.glsl"
#include "index.glsl"
#include "arith.glsl"
#if !LARGE
#include "divide.glsl"
#endif

layout(local_size_x_id = VKDML_SPEC_GROUP_SIZE) in;  // Capabilities::groupSize

layout(std430, set = 0, binding = VKDML_BIND_SOURCE) restrict readonly buffer Updates {
  T updatesData[];
};
layout(std430, set = 0, binding = VKDML_BIND_OUTPUT) restrict buffer Output { T outputData[]; };

layout(constant_id = VKDML_SPEC_ITEMS) const uint kPer = 1;  // a unit's elements per thread
const uint kThreadsPerUnit = (kUnit + kPer - 1u) / kPer;

// Thread t of the sorted unit at q takes elements t, t + kThreadsPerUnit, ... of it: a run's
// loads of each step are independent, and neighbouring threads touch neighbouring elements.
#if !LARGE
// The first sorted position of the run of `key` that holds position q (q's key).
uint runStart(uint sorted, uint key, uint q) {
  uint low = 0u, high = q;  // the start is in [low, high]
  while (low < high) {
    const uint middle = low + (high - low) / 2u;
    if (SORT_KEY(sorted + middle) == key)
      high = middle;
    else
      low = middle + 1u;
  }
  return low;
}
#endif

void applyRun(uint p, uint q, uint t, uint end) {
  const uint sorted = plans[p].sortedBase, key = SORT_KEY(sorted + q);
  const uint first = q;
  if (q > pc.begin && SORT_KEY(sorted + q - 1u) == key) return;  // not the first of its run
  uint target[kPer];
  uvec4 at[kPer];
  for (uint j = 0u; j < kPer; ++j)
    if (t + j * kThreadsPerUnit < kUnit) {
      at[j] = locate(p, SORT_VALUE(sorted + q) * kUnit + t + j * kThreadsPerUnit);
      target[j] = pc.dstBase + at[j].y;
    }
  // LARGE: a unit is one element (kUnit 1); its target in another window: the run is not ours.
  // kDrop: a run of dropped units (their key is past every slot, lib/kernels/kernel_reduce.cpp).
  if ((LARGE != 0 || kDrop) && at[0].y == VKDML_NOT_OWNED) return;
  if (kReduce == VKDML_REDUCE_NONE) {  // the run's last update wins
    if (q + 1u < end && SORT_KEY(sorted + q + 1u) == key) {
      while (q + 1u < end && SORT_KEY(sorted + q + 1u) == key) ++q;
      for (uint j = 0u; j < kPer; ++j)
        if (t + j * kThreadsPerUnit < kUnit)
          at[j] = locate(p, SORT_VALUE(sorted + q) * kUnit + t + j * kThreadsPerUnit);
    }
    for (uint j = 0u; j < kPer; ++j)
      if (t + j * kThreadsPerUnit < kUnit)
        COPY(outputData, target[j], updatesData, pc.srcBase + at[j].x);
    return;
  }
  V value[kPer];
  for (uint j = 0u; j < kPer; ++j)
    if (t + j * kThreadsPerUnit < kUnit) value[j] = LOAD(outputData, target[j]);
  // A loop with its exit at the top: lavapipe (Mesa 22.3) miscompiled the same steps written as
  // for (;;) with a break between the loads and the next locate() calls.
  bool more = true;
  while (more) {
    V update[kPer];  // every load of the step before any arithmetic: the loads overlap
    for (uint j = 0u; j < kPer; ++j)
      if (t + j * kThreadsPerUnit < kUnit) update[j] = LOAD(updatesData, pc.srcBase + at[j].x);
    for (uint j = 0u; j < kPer; ++j)
      if (t + j * kThreadsPerUnit < kUnit) value[j] = reduceBits(value[j], update[j]);
    ++q;
    more = q < end && SORT_KEY(sorted + q) == key;
    if (more)
      for (uint j = 0u; j < kPer; ++j)
        if (t + j * kThreadsPerUnit < kUnit)
          at[j] = locate(p, SORT_VALUE(sorted + q) * kUnit + t + j * kThreadsPerUnit);
  }
#if !LARGE
  // A mean's run that ends here (not continued by the next dispatch): its sum divided.
  const uint units = loopCount(p) / kUnit;
  if (kMean && (q >= units || SORT_KEY(sorted + q) != key)) {
    const bool earlier = first == pc.begin && first > 0u && SORT_KEY(sorted + first - 1u) == key;
    const uint n = q - (earlier ? runStart(sorted, key, first) : first);
    for (uint j = 0u; j < kPer; ++j)
      if (t + j * kThreadsPerUnit < kUnit) value[j] = MEAN(value[j], n);
  }
#endif
  for (uint j = 0u; j < kPer; ++j)
    if (t + j * kThreadsPerUnit < kUnit) STORE(outputData, target[j], value[j]);
}

#if LARGE
// kSequential: the chunk's loop elements [pc.begin, pc.end) in order, each folded into its
// target where this dispatch owns it: the sequential order itself, for chunks of a few elements.
void foldInOrder(uint p) {
  for (uint i = pc.begin; i < pc.end; ++i) {
    const uvec4 at = locate(p, i);
    if (at.y == VKDML_NOT_OWNED) continue;  // another window's, or dropped
    if (kReduce == VKDML_REDUCE_NONE) {
      COPY(outputData, pc.dstBase + at.y, updatesData, pc.srcBase + at.x);
    } else {
      const V value = reduceBits(LOAD(outputData, pc.dstBase + at.y),
                                 LOAD(updatesData, pc.srcBase + at.x));
      STORE(outputData, pc.dstBase + at.y, value);
    }
  }
}
#endif

void main() {
  const uint p = pc.plan;
#if LARGE
  if (kSequential) {
    if (gl_GlobalInvocationID.x == 0u) foldInOrder(p);
    return;
  }
#endif
  const uint count = (pc.end - pc.begin) * kThreadsPerUnit;
  const uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < count;) {
    const uint q = i / kThreadsPerUnit;
    applyRun(p, pc.begin + q, i - q * kThreadsPerUnit, pc.end);
    if (count - i <= step) break;  // no wrap-around past 2^32
    i += step;
  }
}
