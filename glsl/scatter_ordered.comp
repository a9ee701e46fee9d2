#version 450
// A deterministic scatter's last step: the updates, sorted by target (radix_sort.comp), applied
// to each target in the row-major order of IndicesTensor. An update unit is kUnit consecutive
// loop elements of the scatter's plan (ScatterND: an index tuple's slice; ScatterElements: one
// element), so loop element i = unit * kUnit + s. Thread (sorted position q, s) works only where
// q starts a run of equal keys within [pc.begin, pc.end): it folds the run's updates there into
// the target in order (without a reduction, the last one wins). A dispatch that begins inside a
// run carries on from what the previous one left in the target. FLOAT64 computes 8-byte floats
// (shaderFloat64).
#extension GL_GOOGLE_include_directive : require
#include "elem.glsl"

#include "common.glsl"
#include "index.glsl"
#include "arith.glsl"

layout(local_size_x = VKDML_GROUP_SIZE) in;

layout(std430, set = 0, binding = VKDML_BIND_UPDATES) restrict readonly buffer Updates {
  T updatesData[];
};
layout(std430, set = 0, binding = VKDML_BIND_OUTPUT) restrict buffer Output { T outputData[]; };
layout(std430, set = 0, binding = VKDML_BIND_SORT_KEYS) restrict readonly buffer Keys {
  uint sortKeys[];
};
layout(std430, set = 0, binding = VKDML_BIND_SORT_VALUES) restrict readonly buffer Values {
  uint sortValues[];
};

void applyRun(uint p, uint q, uint s, uint end) {
  const uint sorted = plans[p].sortedBase, key = sortKeys[sorted + q];
  if (q > pc.begin && sortKeys[sorted + q - 1u] == key) return;  // not the first of its run
  uvec3 at = locate(p, sortValues[sorted + q] * kUnit + s);
  const uint target = pc.dstBase + at.y;
  if (kReduce == VKDML_REDUCE_NONE) {  // the run's last update wins
    while (q + 1u < end && sortKeys[sorted + q + 1u] == key) ++q;
    at = locate(p, sortValues[sorted + q] * kUnit + s);
    outputData[target] = updatesData[pc.srcBase + at.x];
    return;
  }
  V value = V(outputData[target]);
  for (;;) {
    value = reduceBits(value, V(updatesData[pc.srcBase + at.x]));
    if (++q == end || sortKeys[sorted + q] != key) break;
    at = locate(p, sortValues[sorted + q] * kUnit + s);
  }
  outputData[target] = T(value);
}

void main() {
  const uint p = pc.plan;
  const uint count = (pc.end - pc.begin) * kUnit;
  const uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < count;) {
    const uint q = i / kUnit;
    applyRun(p, pc.begin + q, i - q * kUnit, pc.end);
    if (count - i <= step) break;  // no wrap-around past 2^32
    i += step;
  }
}
