#version 450
// GPUs' gathers with an index per element along a contiguous last dimension (GatherElements
// along its last axis, or off it in the striped walk: lib/kernels/kernel_copy.cpp, StepPlan): an
// invocation moves a step of STEP elements, whose indices are one uvec4 (2 int64 or 4 int32
// ones). The plan's last dimension counts steps (its strides are a step's). A step's offsets are
// computed once, its indices read in one 16-byte load and its output stored in one (of STEP *
// ELEM bytes: 4, 8 or 16), both contiguous across a warp's lanes; only the indexed side goes an
// element at a time. Where indexed.comp spends a loop offset, an index load and a store on each
// element, this spends them on a step. kUnroll steps an invocation (thread t of a workgroup of G
// takes steps t, t + G, ...), every load before any store. kDrop: an element whose index is out
// of range takes the fill value. Off the large path only.
// ELEM is 2 or 4 (WORDS: 2-byte elements in 32-bit words); INDEX64 selects 64-bit indices.
#extension GL_GOOGLE_include_directive : require
#include "elem.glsl"
#include "common.glsl"
#include "index.glsl"

layout(local_size_x_id = VKDML_SPEC_GROUP_SIZE) in;  // Capabilities::groupSize

#if INDEX64
#define STEP 2
#else
#define STEP 4
#endif
#if STEP * ELEM == 16
#define OUT uvec4
#elif STEP * ELEM == 8
#define OUT uvec2
#else
#define OUT uint
#endif

layout(std430, set = 0, binding = VKDML_BIND_SOURCE) restrict readonly buffer Source {
  T sourceData[];  // InputTensor
};
layout(std430, set = 0, binding = VKDML_BIND_OUTPUT) restrict writeonly buffer Output {
  OUT outputSteps[];
};
layout(std430, set = 0, binding = VKDML_BIND_INDICES) restrict readonly buffer IndexQuads {
  uvec4 indexQuads[];
};

// Index k of a step whose indices are q, as (lo, hi), sign- or zero-extended from 32 bits.
uvec2 stepIndex(uvec4 q, uint k) {
#if INDEX64
  return k == 0u ? q.xy : q.zw;
#else
  return uvec2(q[k], kSignedIndex && int(q[k]) < 0 ? 0xFFFFFFFFu : 0u);
#endif
}

void main() {
  const uint p = pc.plan;
  const uint count = loopCount(p);  // steps
  const uint last = kRank - 1u;
  // An element's strides along the last dimension on the indexed side and in checked mode's
  // positions (its direct side and IndicesTensor: 1).
  const uint along = VKDML_AT(plans[p].indexed, last) / STEP;
  const uint positionAlong = VKDML_AT(plans[p].position, last) / STEP;
  const uint n = VKDML_AT(plans[p].tupleSize, 0), stride = VKDML_AT(plans[p].tupleStride, 0);
  // Each workgroup takes tiles of kUnroll * G consecutive steps, then strides over the grid.
  const uint tile = kUnroll * gl_WorkGroupSize.x;
  const uint gridStep = gl_NumWorkGroups.x * tile;
  for (uint base = gl_WorkGroupID.x * tile; base < count; base += gridStep) {
    uvec4 at[kUnroll], q[kUnroll];
    bool live[kUnroll];
    for (uint u = 0u; u < kUnroll; ++u) {
      const uint i = base + gl_LocalInvocationID.x + u * gl_WorkGroupSize.x;
      live[u] = i < count;  // (no wrap: count is below 2^32 / STEP, and tile is small)
      if (!live[u]) continue;
      at[u] = loopOffsets(p, kRank, i);
      q[u] = indexQuads[(pc.indexBase + at[u].z) / STEP];
    }
    V v[kUnroll][STEP];
    for (uint u = 0u; u < kUnroll; ++u) {
      if (!live[u]) continue;
      for (uint k = 0u; k < STEP; ++k) {
        const uint row = clampIndex(stepIndex(q[u], k), n, at[u].w + k * positionAlong);
        v[u][k] = kDrop && row == VKDML_DROPPED
                      ? fillElement()
                      : LOAD(sourceData, pc.srcBase + at[u].y + k * along + row * stride);
      }
    }
    for (uint u = 0u; u < kUnroll; ++u) {
      if (!live[u]) continue;
      uvec4 word = uvec4(0u);  // the step's bytes, in words
#if ELEM == 4
      for (uint k = 0u; k < STEP; ++k) word[k] = v[u][k];
#else
      for (uint k = 0u; k < STEP; ++k) word[k >> 1] |= (v[u][k] & 0xFFFFu) << ((k & 1u) * 16u);
#endif
#if STEP * ELEM == 16
      outputSteps[(pc.dstBase + at[u].x) / STEP] = word;
#elif STEP * ELEM == 8
      outputSteps[(pc.dstBase + at[u].x) / STEP] = word.xy;
#else
      outputSteps[(pc.dstBase + at[u].x) / STEP] = word.x;
#endif
    }
    if (count - base <= gridStep) break;
  }
}
