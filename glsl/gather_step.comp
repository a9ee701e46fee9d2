#version 450
// GPUs' gathers with an index per element along a contiguous last dimension (GatherElements
// along its last axis, or off it in the striped walk: lib/kernels/kernel_copy.cpp, StepPlan): an
// invocation moves a step of kStep elements, 16 bytes of OutputTensor. The plan's last dimension
// counts steps (its strides are a step's). A step's offsets are computed once, its indices read
// as uvec4s and its output stored as one uvec4; only the indexed side goes an element at a time.
// Where indexed.comp spends a loop offset, an index load and a store on each element, this
// spends them on 16 bytes. kUnroll steps an invocation, every load before any store. kDrop: an
// element whose index is out of range takes the fill value. Off the large path only.
// ELEM is 2 or 4 (WORDS: 2-byte elements in 32-bit words); INDEX64 selects 64-bit indices.
#extension GL_GOOGLE_include_directive : require
#include "elem.glsl"
#include "common.glsl"
#include "index.glsl"

layout(local_size_x_id = VKDML_SPEC_GROUP_SIZE) in;  // Capabilities::groupSize

const uint kStep = 16u / ELEM;  // elements a step
const uint kPerQuad = INDEX64 != 0 ? 2u : 4u;  // indices in a uvec4
const uint kIndexQuads = kStep / kPerQuad;      // a step's indices in uvec4s

layout(std430, set = 0, binding = VKDML_BIND_SOURCE) restrict readonly buffer Source {
  T sourceData[];  // InputTensor
};
layout(std430, set = 0, binding = VKDML_BIND_OUTPUT) restrict writeonly buffer Output {
  uvec4 outputQuads[];
};
layout(std430, set = 0, binding = VKDML_BIND_INDICES) restrict readonly buffer IndexQuads {
  uvec4 indexQuads[];
};

// Index k of a step whose indices are q, as (lo, hi), sign- or zero-extended from 32 bits.
uvec2 stepIndex(uvec4 q[kIndexQuads], uint k) {
#if INDEX64
  const uvec4 v = q[k >> 1];
  return (k & 1u) == 0u ? v.xy : v.zw;
#else
  const uint lo = q[k >> 2][k & 3u];
  return uvec2(lo, kSignedIndex && int(lo) < 0 ? 0xFFFFFFFFu : 0u);
#endif
}

void main() {
  const uint p = pc.plan;
  const uint count = loopCount(p);  // steps
  const uint last = kRank - 1u;
  // An element's strides along the last dimension on the indexed side and in checked mode's
  // positions (its direct side and IndicesTensor: 1).
  const uint along = VKDML_AT(plans[p].indexed, last) / kStep;
  const uint positionAlong = VKDML_AT(plans[p].position, last) / kStep;
  const uint n = VKDML_AT(plans[p].tupleSize, 0), stride = VKDML_AT(plans[p].tupleStride, 0);
  // Each workgroup of G threads takes tiles of kUnroll * G consecutive steps (thread t takes t,
  // t + G, ...), then strides over the grid.
  const uint tile = kUnroll * gl_WorkGroupSize.x;
  const uint gridStep = gl_NumWorkGroups.x * tile;
  for (uint base = gl_WorkGroupID.x * tile; base < count; base += gridStep) {
    uvec4 at[kUnroll];
    uvec4 q[kUnroll][kIndexQuads];
    bool live[kUnroll];
    for (uint u = 0u; u < kUnroll; ++u) {
      const uint i = base + gl_LocalInvocationID.x + u * gl_WorkGroupSize.x;
      live[u] = i < count;  // (base + tile stays below 2^32: count < 2^32 / kStep)
      if (!live[u]) continue;
      at[u] = loopOffsets(p, kRank, i);
      const uint quad = (pc.indexBase + at[u].z) / kPerQuad;
      for (uint j = 0u; j < kIndexQuads; ++j) q[u][j] = indexQuads[quad + j];
    }
    V v[kUnroll][kStep];
    for (uint u = 0u; u < kUnroll; ++u) {
      if (!live[u]) continue;
      for (uint k = 0u; k < kStep; ++k) {
        const uint row = clampIndex(stepIndex(q[u], k), n, at[u].w + k * positionAlong);
        v[u][k] = kDrop && row == VKDML_DROPPED
                      ? fillElement()
                      : LOAD(sourceData, pc.srcBase + at[u].y + k * along + row * stride);
      }
    }
    for (uint u = 0u; u < kUnroll; ++u) {
      if (!live[u]) continue;
      uvec4 word = uvec4(0u);
#if ELEM == 4
      for (uint k = 0u; k < 4u; ++k) word[k] = v[u][k];
#else
      for (uint k = 0u; k < kStep; ++k) word[k >> 1] |= (v[u][k] & 0xFFFFu) << ((k & 1u) * 16u);
#endif
      outputQuads[(pc.dstBase + at[u].x) / kStep] = word;
    }
    if (count - base <= gridStep) break;
  }
}
