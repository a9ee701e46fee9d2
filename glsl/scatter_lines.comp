#version 450
// A scatter done one output line at a time in shared memory (lib/operators/plan.h: Plan::Lines):
// for ScatterElements whose Axis is the innermost dimension of its plan. A workgroup reads a line
// of OutputTensor (InputTensor's values: in place, or after the copy pass), writes the line's
// updates into it in shared memory, and writes the whole line back with coalesced stores. The
// plain scatter writes each update to a random address instead, one memory request per element.
// The plan's last dimension walks a line's updates; the dimensions before it name the lines.
// Duplicate targets within a line: one of the updates wins (unspecified which), as elsewhere.
// REDUCE combines each update with its target instead (dml.h: VKDML_REDUCE_FUNCTION), by
// compare-and-swap on the target's 32-bit slot in shared memory, in any order (elements of up to
// 4 bytes). kMean (REDUCE; ADD's sum of a scatter mean): each target's updates counted too, in
// 16 bits of shared memory (lib/kernels/kernel_lines.cpp: a line's updates below 2^16), and each
// sum divided by its count (plus one where kSelf) as glsl/mean.comp divides, before the line goes
// back. kDrop: an update whose index is out of range is skipped.
#extension GL_GOOGLE_include_directive : require
#include "elem.glsl"

#ifndef REDUCE
#define REDUCE 0
#endif

#include "common.glsl"
#include "index.glsl"
#if REDUCE
#include "arith.glsl"
#include "divide.glsl"
#endif

// A workgroup holds a whole line in shared memory (kLineLength elements), so few fit on a
// multiprocessor: each brings many threads (VKDML_SPEC_GROUP_SIZE, up to 1024) to keep enough
// memory requests in flight. Its plan has one index component (kTuple is 1).
layout(local_size_x_id = VKDML_SPEC_GROUP_SIZE) in;

layout(std430, set = 0, binding = VKDML_BIND_SOURCE) restrict readonly buffer Updates {
  T updatesData[];
};
layout(std430, set = 0, binding = VKDML_BIND_OUTPUT) restrict buffer Output { T outputData[]; };

shared V line[kLineLength];
#if REDUCE
shared uint lineCounts[kMean ? (kLineLength + 1u) / 2u : 1u];  // two 16-bit counts a word
#endif

void main() {
  const uint p = pc.plan;
  const uint last = kRank - 1u;
  const uint perLine = VKDML_AT(plans[p].sizes, last);  // updates per line
  const uint lines = plans[p].count / perLine;
  const uint along = VKDML_AT(plans[p].tupleStride, 0);  // OutputTensor stride along the line
  const uint tid = gl_LocalInvocationID.x, group = gl_WorkGroupSize.x;
  for (uint l = gl_WorkGroupID.x; l < lines; l += gl_NumWorkGroups.x) {
    // The line's offsets: updates (direct), output (indexed), indices, and checked position.
    const uvec4 at = loopOffsets(p, last, l);
    const uint out0 = pc.dstBase + at.y;

    for (uint j = tid; j < kLineLength; j += kUnroll * group) {
      V v[kUnroll];
      for (uint u = 0u; u < kUnroll; ++u)
        if (j + u * group < kLineLength) v[u] = LOAD(outputData, out0 + (j + u * group) * along);
      for (uint u = 0u; u < kUnroll; ++u)
        if (j + u * group < kLineLength) line[j + u * group] = v[u];
    }
#if REDUCE
    if (kMean)
      for (uint j = tid; j < (kLineLength + 1u) / 2u; j += group) lineCounts[j] = 0u;
#endif
    barrier();
    for (uint k = tid; k < perLine; k += kUnroll * group) {
      uint target[kUnroll];
      V v[kUnroll];
      for (uint u = 0u; u < kUnroll; ++u) {
        uint e = k + u * group;
        if (e < perLine) {
          const uint index = at.z + e * VKDML_AT(plans[p].indices, last);
          target[u] = clampIndex(readIndex(index), kLineLength,
                                 at.w + e * VKDML_AT(plans[p].position, last));
          v[u] = LOAD(updatesData, pc.srcBase + at.x + e * VKDML_AT(plans[p].direct, last));
        }
      }
      for (uint u = 0u; u < kUnroll; ++u)
        if (k + u * group < perLine && (!kDrop || target[u] != VKDML_DROPPED)) {
#if REDUCE
          uint old = line[target[u]];
          for (;;) {
            const uint next = reduceBits(old, v[u]);
            if (next == old) break;
            const uint seen = atomicCompSwap(line[target[u]], old, next);
            if (seen == old) break;
            old = seen;
          }
          if (kMean) atomicAdd(lineCounts[target[u] >> 1], 1u << ((target[u] & 1u) * 16u));
#else
          line[target[u]] = v[u];
#endif
        }
    }
    barrier();
    for (uint j = tid; j < kLineLength; j += group) {
      V v = line[j];
#if REDUCE
      const uint n = kMean ? (lineCounts[j >> 1] >> ((j & 1u) * 16u)) & 0xFFFFu : 0u;
      if (n != 0u) v = MEAN(v, n);  // a target no update reached keeps its value
#endif
      STORE(outputData, out0 + j * along, v);
    }
    barrier();  // the next line reuses `line`
  }
}
