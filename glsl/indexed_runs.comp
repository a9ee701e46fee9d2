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
// (lib/kernels/kernel_runs.cpp): kStep elements at a time, their indices and their direct side
// moved as u64vec4s, only the indexed side one element at a time. kDrop: as indexed.comp's, an
// element with an index out of range is skipped by a scatter, filled by a gather.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "elem.glsl"

#ifndef VECTOR
#define VECTOR 0
#endif

#include "common.glsl"
#include "index.glsl"

layout(local_size_x_id = VKDML_SPEC_GROUP_SIZE) in;

layout(std430, set = 0, binding = VKDML_BIND_SOURCE) restrict readonly buffer Source {
  T sourceData[];  // gather: InputTensor; scatter: UpdatesTensor
};
layout(std430, set = 0, binding = VKDML_BIND_OUTPUT) restrict OUTPUT_ACCESS buffer Output {
  T outputData[];
};

bool masked(uint slot) {
  return kMaskSkip && (MASK_WORD(slot >> 5) & (1u << (slot & 31u))) != 0u;
}

// The indexed offset's index components at index element e, checked position `position`; with
// kDrop, VKDML_NOT_OWNED where one is out of range (index.glsl: indexedOffset from offset 0).
uint components(uint p, uint e, uint position) {
  return indexedOffset(p, uvec4(0u, 0u, e, position));
}

// A dropped element (kDrop): a gather writes the fill value at its direct offset, a scatter
// nothing.
void drop(uint direct) {
#if !SCATTER
  STORE(outputData, pc.dstBase + direct, fillElement());
#endif
}

// The element at offsets (direct, indexed): read from the source, written to the destination.
V fetch(uint direct, uint indexed) {
#if SCATTER
  return LOAD(sourceData, pc.srcBase + direct);
#else
  return LOAD(sourceData, pc.srcBase + indexed);
#endif
}

void put(uint direct, uint indexed, V v) {
#if SCATTER
  STORE_SHARED(outputData, pc.dstBase + indexed, v);
#else
  STORE(outputData, pc.dstBase + direct, v);
#endif
}

void copy(uint direct, uint indexed) { put(direct, indexed, fetch(direct, indexed)); }

#if !VECTOR
// kLines whole short lines an invocation, each sharing one index (GatherND's small slices):
// their indices read first, then element by element their reads before their writes, so that the
// lines' reads from memory wait together rather than one after the other.
void lines(uint p) {
  const uint first = pc.begin + gl_GlobalInvocationID.x * kLines, count = plans[p].count;
  if (first >= count) return;
  const uint last = kRank - 1u, n = plans[p].lineLength;
  const uvec2 step = uvec2(VKDML_AT(plans[p].direct, last), VKDML_AT(plans[p].indexed, last));
  uvec2 at[kLines];
  bool skip[kLines], dropped[kLines];
  [[unroll]] for (uint l = 0u; l < kLines; ++l) {
    const uvec4 o = loopOffsets(p, last, min(first + l, count - 1u));
    const uint c = components(p, o.z, o.w);
    skip[l] = first + l >= count || masked(o.z);
    dropped[l] = kDrop && c == VKDML_NOT_OWNED;
    at[l] = uvec2(o.x, o.y + c);
  }
  for (uint k = 0u; k < n; ++k) {
    V v[kLines];
    [[unroll]] for (uint l = 0u; l < kLines; ++l)
      if (!skip[l] && !dropped[l]) v[l] = fetch(at[l].x + k * step.x, at[l].y + k * step.y);
    [[unroll]] for (uint l = 0u; l < kLines; ++l)
      if (!skip[l]) {
        if (dropped[l])
          drop(at[l].x + k * step.x);
        else
          put(at[l].x + k * step.x, at[l].y + k * step.y, v[l]);
      }
  }
}
#endif

#if VECTOR
// A step: kStep elements, whose indices (kIndexWords 32-bit words) and direct side (kDirectWords)
// move as u64vec4s (shaderInt64): 32 bytes an access. The plain views of IndicesTensor
// (index.glsl) and of the direct side go unused.
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
const uint kStep = 32u / ELEM > 8u ? 32u / ELEM : 8u;
const uint kDirectWords = kStep * ELEM / 4u;
const uint kIndexWords = kStep * (INDEX64 + 1);
layout(std430, set = 0, binding = VKDML_BIND_INDICES) restrict readonly buffer IndexVectors {
  u64vec4 indexVectors[];
};
#if SCATTER
layout(std430, set = 0, binding = VKDML_BIND_SOURCE) restrict readonly buffer DirectVectors {
  u64vec4 directVectors[];
};
#else
layout(std430, set = 0, binding = VKDML_BIND_OUTPUT) restrict writeonly buffer DirectVectors {
  u64vec4 directVectors[];
};
#endif

// Word w (of 8) of a vector; the vector of words w, w + 1, ... of an array. Every index is a
// constant once the loops unroll.
uint wordOf(u64vec4 v, uint w) { return unpackUint2x32(v[w / 2u])[w % 2u]; }

// Element c of a step's direct side (as words), in registers (V).
V getElement(uint d[kDirectWords], uint c) {
#if ELEM == 8
  return uvec2(d[2u * c], d[2u * c + 1u]);
#elif ELEM == 4
  return d[c];
#else
  const uint per = 4u / ELEM, bits = 8u * ELEM;
  return bitfieldExtract(d[c / per], int(bits * (c % per)), int(bits));
#endif
}

void setElement(inout uint d[kDirectWords], uint c, V v) {
#if ELEM == 8
  d[2u * c] = v.x;
  d[2u * c + 1u] = v.y;
#elif ELEM == 4
  d[c] = v;
#else
  const uint per = 4u / ELEM, bits = 8u * ELEM;
  d[c / per] = bitfieldInsert(d[c / per], v, int(bits * (c % per)), int(bits));
#endif
}

// The step at `at` (its first element's offsets; `step` an element's).
void vectorStep(uint p, uvec4 at, uvec4 step) {
  uint words[kIndexWords];
  const uint first = (pc.indexBase + at.z) * (INDEX64 + 1) / 8u;
  [[unroll]] for (uint v = 0u; v < kIndexWords / 8u; ++v) {
    const u64vec4 x = indexVectors[first + v];
    [[unroll]] for (uint w = 0u; w < 8u; ++w) words[8u * v + w] = wordOf(x, w);
  }
  uint indexed[kStep];
  bool dropped[kStep];
  [[unroll]] for (uint c = 0u; c < kStep; ++c) {
#if INDEX64
    const uvec2 v = uvec2(words[2u * c], words[2u * c + 1u]);
#else
    const uvec2 v = uvec2(words[c], kSignedIndex && int(words[c]) < 0 ? 0xFFFFFFFFu : 0u);
#endif
    const uint index = clampIndex(v, VKDML_AT(plans[p].tupleSize, 0), at.w + c * step.w);
    dropped[c] = kDrop && index == VKDML_DROPPED;
    // A dropped element's offset is its line's first (index 0): a gather loads it, in bounds,
    // and keeps every load unconditional (a select, not a branch per lane), then fills.
    indexed[c] = at.y + c * step.y + (dropped[c] ? 0u : index) * VKDML_AT(plans[p].tupleStride, 0);
  }
  uint direct[kDirectWords];
#if SCATTER
  const uint base = (pc.srcBase + at.x) / (32u / ELEM);
  [[unroll]] for (uint v = 0u; v < kDirectWords / 8u; ++v) {
    const u64vec4 x = directVectors[base + v];
    [[unroll]] for (uint w = 0u; w < 8u; ++w) direct[8u * v + w] = wordOf(x, w);
  }
  [[unroll]] for (uint c = 0u; c < kStep; ++c)
    if (!dropped[c]) STORE_SHARED(outputData, pc.dstBase + indexed[c], getElement(direct, c));
#else
  const uint base = (pc.dstBase + at.x) / (32u / ELEM);
  [[unroll]] for (uint c = 0u; c < kStep; ++c) {
    const V v = LOAD(sourceData, pc.srcBase + indexed[c]);
    setElement(direct, c, dropped[c] ? fillElement() : v);
  }
  [[unroll]] for (uint v = 0u; v < kDirectWords / 8u; ++v) {
    u64vec4 x;
    [[unroll]] for (uint w = 0u; w < 4u; ++w)
      x[w] = packUint2x32(uvec2(direct[8u * v + 2u * w], direct[8u * v + 2u * w + 1u]));
    directVectors[base + v] = x;
  }
#endif
}
#endif

// The plan's last dimension counts runs (plans[p].sizes) of kRun elements of a line of
// plans[p].lineLength elements; its strides are an element's. An invocation per run (or per
// kLines runs of whole lines), from the dispatch's first run pc.begin: no loop but the run's,
// which kernel choice keeps within the device's loop bound (lib/kernels/kernels.h: maxLoop).
void main() {
  const uint p = pc.plan;
#if !VECTOR
  if (kLines > 1u) {
    lines(p);
    return;
  }
#endif
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
      if (!masked(at.z)) {
        const uint c = components(p, at.z, at.w);
        if (kDrop && c == VKDML_NOT_OWNED)
          drop(at.x);
        else
          copy(at.x, at.y + c);
      }
      at += step;
    }
  } else if (!masked(at.z)) {  // one index (or mask bit) for the whole run
    const uint c = components(p, at.z, at.w);
    if (kDrop && c == VKDML_NOT_OWNED) {
      for (uint k = 0u; k < n; ++k) drop(at.x + k * step.x);
      return;
    }
    at.y += c;
    for (uint k = 0u; k < n; ++k) {
      copy(at.x, at.y);
      at.xy += step.xy;
    }
  }
#endif
}
