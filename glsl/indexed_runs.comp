#version 450
// The indexed copy of glsl/indexed.comp for CPU devices (lavapipe): each invocation walks a run of
// up to kRun consecutive elements of the plan's last dimension, its offsets computed once and then
// stepped. A CPU driver runs a subgroup as one SIMD loop on one core, and each buffer access as a
// loop over the SIMD lanes: per-invocation index arithmetic and every access cost far more than
// on a GPU, and wide accesses and long loops cost little (examples/bench/PERF_NOTES.md, v30-).
// SCATTER as in indexed.comp. ELEM is the element size in bytes: 1, 2, 4, 8, 16 for plans widened
// to uvec4, 32 for plans widened to u64vec4 (shaderInt64).
//
// VECTOR: the run is GatherElements- or ScatterElements-shaped (one index component per element,
// IndicesTensor and the direct side contiguous along it) and kernel choice has aligned it
// (lib/kernels.cpp): kStep elements at a time, their indices and their direct side moved as
// uvec4s, only the indexed side one element at a time.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "elem.glsl"

#ifndef VECTOR
#define VECTOR 0
#endif

#include "common.glsl"
#include "index.glsl"

layout(local_size_x_id = VKDML_SPEC_GROUP_SIZE) in;

layout(std430, set = 0, binding = VKDML_BIND_INPUT) restrict readonly buffer Input {
  T inputData[];
};
layout(std430, set = 0, binding = VKDML_BIND_UPDATES) restrict readonly buffer Updates {
  T updatesData[];
};
layout(std430, set = 0, binding = VKDML_BIND_OUTPUT) restrict writeonly buffer Output {
  T outputData[];
};
layout(std430, set = 0, binding = VKDML_BIND_MASK) restrict readonly buffer Mask {
  uint maskWords[];
};

bool masked(uint slot) {
  return kMaskSkip && (maskWords[slot >> 5] & (1u << (slot & 31u))) != 0u;
}

// The indexed offset's index components at index element e, checked position `position`.
uint components(uint p, uint e, uint position) {
  uint y = 0u;
  for (uint j = 0u; j < kTuple; ++j)
    y += clampIndex(readIndex(e + j * plans[p].componentStride), VKDML_AT(plans[p].tupleSize, j),
                    position + j) *
         VKDML_AT(plans[p].tupleStride, j);
  return y;
}

void copy(uint direct, uint indexed) {
#if SCATTER
  outputData[pc.dstBase + indexed] = updatesData[pc.srcBase + direct];
#else
  outputData[pc.dstBase + direct] = inputData[pc.srcBase + indexed];
#endif
}

#if VECTOR
// A step: kStep elements, kStep * ELEM bytes of the direct side (kDirect uvec4s) and kStep
// indices (kIndex uvec4s). The plain indices views (index.glsl) and the direct side's T views go
// unused.
const uint kStep = 16u / ELEM > 8u ? 16u / ELEM : 8u;
const uint kDirect = kStep * ELEM / 16u;
const uint kIndex = kStep * (INDEX64 + 1) / 4;
layout(std430, set = 0, binding = VKDML_BIND_INDICES) restrict readonly buffer IndexVectors {
  uvec4 indexVectors[];
};
#if SCATTER
layout(std430, set = 0, binding = VKDML_BIND_UPDATES) restrict readonly buffer DirectVectors {
  uvec4 directVectors[];
};
#else
layout(std430, set = 0, binding = VKDML_BIND_OUTPUT) restrict writeonly buffer DirectVectors {
  uvec4 directVectors[];
};
#endif

// Element c of a step's direct side, held as uvec4s, in registers (V). c is a constant once the
// loops unroll, and so are the array indices.
V getElement(uvec4 d[kDirect], uint c) {
#if ELEM == 8
  return c % 2u == 0u ? d[c / 2u].xy : d[c / 2u].zw;
#elif ELEM == 4
  return d[c / 4u][c % 4u];
#else
  const uint per = 4u / ELEM, bits = 8u * ELEM;
  return bitfieldExtract(d[c / (4u * per)][(c / per) % 4u], int(bits * (c % per)), int(bits));
#endif
}

void setElement(inout uvec4 d[kDirect], uint c, V v) {
#if ELEM == 8
  if (c % 2u == 0u)
    d[c / 2u].xy = v;
  else
    d[c / 2u].zw = v;
#elif ELEM == 4
  d[c / 4u][c % 4u] = v;
#else
  const uint per = 4u / ELEM, bits = 8u * ELEM;
  d[c / (4u * per)][(c / per) % 4u] = bitfieldInsert(d[c / (4u * per)][(c / per) % 4u], v,
                                                     int(bits * (c % per)), int(bits));
#endif
}

// The step at `at` (its first element's offsets; `step` an element's).
void vectorStep(uint p, uvec4 at, uvec4 step) {
  uvec4 words[kIndex];
  const uint first = (pc.indexBase + at.z) / (4 / (INDEX64 + 1));
  [[unroll]] for (uint w = 0u; w < kIndex; ++w) words[w] = indexVectors[first + w];
  uint indexed[kStep];
  [[unroll]] for (uint c = 0u; c < kStep; ++c) {
#if INDEX64
    const uvec2 v = uvec2(words[c / 2u][2u * (c % 2u)], words[c / 2u][2u * (c % 2u) + 1u]);
#else
    const uint lo = words[c / 4u][c % 4u];
    const uvec2 v = uvec2(lo, kSignedIndex && int(lo) < 0 ? 0xFFFFFFFFu : 0u);
#endif
    indexed[c] = at.y + c * step.y +
                 clampIndex(v, VKDML_AT(plans[p].tupleSize, 0), at.w + c * step.w) *
                     VKDML_AT(plans[p].tupleStride, 0);
  }
  uvec4 direct[kDirect];
#if SCATTER
  const uint base = (pc.srcBase + at.x) / (16u / ELEM);
  [[unroll]] for (uint w = 0u; w < kDirect; ++w) direct[w] = directVectors[base + w];
  [[unroll]] for (uint c = 0u; c < kStep; ++c)
    outputData[pc.dstBase + indexed[c]] = T(getElement(direct, c));
#else
  const uint base = (pc.dstBase + at.x) / (16u / ELEM);
  [[unroll]] for (uint c = 0u; c < kStep; ++c)
    setElement(direct, c, V(inputData[pc.srcBase + indexed[c]]));
  [[unroll]] for (uint w = 0u; w < kDirect; ++w) directVectors[base + w] = direct[w];
#endif
}
#endif

// The plan's last dimension counts runs (plans[p].sizes) of kRun elements of a line of
// plans[p].lineLength elements; its strides are an element's. An invocation per run, from the
// dispatch's first run pc.begin: no loop but the run's, which kernel choice keeps within the
// device's loop bound (lib/kernels.h: maxLoop).
void main() {
  const uint p = pc.plan;
  const uint i = pc.begin + gl_GlobalInvocationID.x;
  if (i >= plans[p].count) return;
  const uint last = kRank - 1u;
  const uint line = divideBySize(p, last, i);
  const uint first = (i - line * VKDML_AT(plans[p].sizes, last)) * kRun;
  const uint n = min(kRun, plans[p].lineLength - first);
  const uvec4 step = uvec4(VKDML_AT(plans[p].direct, last), VKDML_AT(plans[p].indexed, last),
                           VKDML_AT(plans[p].indices, last), VKDML_AT(plans[p].position, last));
  uvec4 at = loopOffsets(p, last, line) + first * step;
#if VECTOR
  for (uint k = 0u; k < n; k += kStep) {
    vectorStep(p, at, step);
    at += kStep * step;
  }
#else
  if (kRunIndexed) {  // each element its own index (or mask bit)
    for (uint k = 0u; k < n; ++k) {
      if (!masked(at.z)) copy(at.x, at.y + components(p, at.z, at.w));
      at += step;
    }
  } else if (!masked(at.z)) {  // one index (or mask bit) for the whole run
    at.y += components(p, at.z, at.w);
    for (uint k = 0u; k < n; ++k) {
      copy(at.x, at.y);
      at.xy += step.xy;
    }
  }
#endif
}
