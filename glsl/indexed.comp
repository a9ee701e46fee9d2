#version 450
// The indexed copy every operator lowers to (lib/operators/plan.h): gather when SCATTER is 0,
// scatter when 1; MARK sets a bit per element's indexed offset instead of copying (ScatterND's mask
// of slices it overwrites, which its copy pass then skips); KEYS writes each element's indexed
// offset (its target slot) and its loop index for the sort of a deterministic scatter (LARGE:
// over the scatter's own plan, the target's element in the window); TALLY_PASS counts, over the
// same keys, the update units of each target slot of a scatter mean (glsl/mean.comp divides;
// LARGE: over the scatter's own plan, the updates of each element of a piece of OutputTensor).
// ELEM is the element size in bytes (1, 2, 4, 8, or 16 for widened plans): the kernel moves
// bytes and never looks at data types.
// INDEX64 selects 64-bit index loads. LARGE: the large path (interface.h: LargePush), where a
// dispatch moves only the elements whose indexed side it owns. kDrop: an element with an index
// out of range is skipped (a scatter, a mark, and a sort key after every target) or, by a gather,
// written with the fill value (on the large path by the dispatch of the first window).
#extension GL_GOOGLE_include_directive : require
#include "elem.glsl"

#ifndef MARK
#define MARK 0
#endif
#ifndef KEYS
#define KEYS 0
#endif
#ifndef TALLY_PASS
#define TALLY_PASS 0
#endif

#include "common.glsl"
#include "index.glsl"

layout(local_size_x_id = VKDML_SPEC_GROUP_SIZE) in;  // Capabilities::groupSize

layout(std430, set = 0, binding = VKDML_BIND_SOURCE) restrict readonly buffer Source {
  T sourceData[];  // gather: InputTensor; scatter: UpdatesTensor
};
layout(std430, set = 0, binding = VKDML_BIND_OUTPUT) restrict OUTPUT_ACCESS buffer Output {
  T outputData[];
};

bool masked(uint slot) {
  return kMaskSkip && (MASK_WORD(slot >> 5) & (1u << (slot & 31u))) != 0u;
}

void main() {
  const uint p = pc.plan;
  const uint count = loopCount(p);
  // Each workgroup of G threads copies tiles of kUnroll * G consecutive elements (thread t takes
  // t, t + G, ...), then strides over the grid: neighbouring elements stay in one workgroup.
  const uint tile = kUnroll * gl_WorkGroupSize.x;
  const uint step = gl_NumWorkGroups.x * tile;
  uint base = gl_WorkGroupID.x * tile;
  while (base < count) {
    uint i = base + gl_LocalInvocationID.x;
    const uint inc = gl_WorkGroupSize.x;
    uvec4 at[kUnroll];
    uint n = 0u;
    for (uint u = 0u; u < kUnroll; ++u) {
      if (i < count) {
        at[u] = locate(p, i);
        n = u + 1u;
      }
      i = count - i <= inc ? count : i + inc;  // no wrap-around past 2^32
    }
#if KEYS
    for (uint u = 0u; u < kUnroll; ++u)
      if (u < n) {
        const uint element = base + gl_LocalInvocationID.x + u * inc;
// a target another window holds sorts after this window's (lib/kernels/kernel_reduce.cpp)
#if LARGE
        const uint past = lpc.indexedEnd[0] - lpc.indexedStart[0];
#else  // a dropped unit sorts after every target slot, pc.end of them
        const uint past = pc.end;
#endif
        SORT_KEY(element) = (LARGE != 0 || kDrop) && at[u].y == VKDML_NOT_OWNED ? past : at[u].y;
        SORT_VALUE(element) = element;
      }
#elif MARK
    for (uint u = 0u; u < kUnroll; ++u)
      if (u < n && at[u].w == 0u) atomicOr(MASK_WORD(at[u].y >> 5), 1u << (at[u].y & 31u));
#elif TALLY_PASS
    for (uint u = 0u; u < kUnroll; ++u)
      if (u < n && at[u].y != VKDML_NOT_OWNED) atomicAdd(TALLY(tallyWord(at[u].y)), 1u);
#else
#if LARGE  // the dispatch of the indexed side's first window fills a gather's dropped elements
    const bool fills = SCATTER == 0 && lpc.indexedOwn[0] == 0u && lpc.indexedOwn[1] == 0u;
#else
    const bool fills = SCATTER == 0;
#endif
    bool skip[kUnroll];
    for (uint u = 0u; u < kUnroll; ++u)
      skip[u] = u >= n || masked(at[u].z) ||
                ((LARGE != 0 || kDrop) && at[u].y == VKDML_NOT_OWNED && !(fills && at[u].w != 0u));
    V v[kUnroll];
    for (uint u = 0u; u < kUnroll; ++u)  // every load before any store: loads overlap
      if (!skip[u]) {
#if SCATTER  // kConstant: the reduction's identity (ExcludeSelf), not an update
        v[u] = kConstant ? fillElement() : LOAD(sourceData, pc.srcBase + at[u].x);
#else
        v[u] = at[u].w != 0u ? fillElement() : LOAD(sourceData, pc.srcBase + at[u].y);
#endif
      }
    for (uint u = 0u; u < kUnroll; ++u)
      if (!skip[u]) {
#if SCATTER
        STORE_SHARED(outputData, pc.dstBase + at[u].y, v[u]);
#else
        STORE(outputData, pc.dstBase + at[u].x, v[u]);
#endif
      }
#endif
    if (count - base <= step) break;
    base += step;
  }
}
