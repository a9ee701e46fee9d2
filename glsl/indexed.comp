#version 450
// The indexed copy every operator lowers to (lib/plan.h): gather when SCATTER is 0, scatter
// when 1; MARK sets a bit per element's indexed offset instead of copying (ScatterND's mask of
// slices it overwrites, which its copy pass then skips). ELEM is the element size in bytes (1,
// 2, 4, 8, or 16 for widened plans): the kernel moves bytes and never looks at data types.
// INDEX64 selects 64-bit index loads.
#extension GL_GOOGLE_include_directive : require
#include "elem.glsl"

#ifndef MARK
#define MARK 0
#endif

#include "common.glsl"
#include "index.glsl"

layout(local_size_x = VKDML_GROUP_SIZE) in;

layout(std430, set = 0, binding = VKDML_BIND_INPUT) restrict readonly buffer Input {
  T inputData[];
};
layout(std430, set = 0, binding = VKDML_BIND_UPDATES) restrict readonly buffer Updates {
  T updatesData[];
};
layout(std430, set = 0, binding = VKDML_BIND_OUTPUT) restrict writeonly buffer Output {
  T outputData[];
};
layout(std430, set = 0, binding = VKDML_BIND_MASK) restrict buffer Mask { uint maskWords[]; };

// Offsets of loop element i on the direct and the indexed side, and in IndicesTensor (or, for
// a plan without index components, its slot in the mask).
uvec3 locate(uint p, uint i) {
  uvec4 at = loopOffsets(p, kRank, i);
  for (uint j = 0u; j < kTuple; ++j)
    at.y += clampIndex(readIndex(at.z + j * plans[p].componentStride),
                       VKDML_AT(plans[p].tupleSize, j), at.w + j) *
            VKDML_AT(plans[p].tupleStride, j);
  return at.xyz;
}

bool masked(uint slot) {
  return kMaskSkip && (maskWords[slot >> 5] & (1u << (slot & 31u))) != 0u;
}

void main() {
  const uint p = pc.plan;
  const uint count = plans[p].count;
  // Each workgroup copies tiles of kUnroll * VKDML_GROUP_SIZE consecutive elements (thread t
  // takes t, t + VKDML_GROUP_SIZE, ...), then strides over the grid: neighbouring elements stay
  // in one workgroup.
  const uint tile = kUnroll * gl_WorkGroupSize.x;
  const uint step = gl_NumWorkGroups.x * tile;
  uint base = gl_WorkGroupID.x * tile;
  while (base < count) {
    uint i = base + gl_LocalInvocationID.x;
    const uint inc = gl_WorkGroupSize.x;
    uvec3 at[kUnroll];
    uint n = 0u;
    for (uint u = 0u; u < kUnroll; ++u) {
      if (i < count) {
        at[u] = locate(p, i);
        n = u + 1u;
      }
      i = count - i <= inc ? count : i + inc;  // no wrap-around past 2^32
    }
#if MARK
    for (uint u = 0u; u < kUnroll; ++u)
      if (u < n) atomicOr(maskWords[at[u].y >> 5], 1u << (at[u].y & 31u));
#else
    bool skip[kUnroll];
    for (uint u = 0u; u < kUnroll; ++u) skip[u] = u >= n || masked(at[u].z);
    V v[kUnroll];
    for (uint u = 0u; u < kUnroll; ++u)  // every load before any store: loads overlap
      if (!skip[u]) {
#if SCATTER
        v[u] = V(updatesData[pc.srcBase + at[u].x]);
#else
        v[u] = V(inputData[pc.srcBase + at[u].y]);
#endif
      }
    for (uint u = 0u; u < kUnroll; ++u)
      if (!skip[u]) {
#if SCATTER
        outputData[pc.dstBase + at[u].y] = T(v[u]);
#else
        outputData[pc.dstBase + at[u].x] = T(v[u]);
#endif
      }
#endif
    if (count - base <= step) break;
    base += step;
  }
}
