#version 450
// A scatter done one output line at a time in shared memory (lib/plan.h: Plan::Lines): for
// ScatterElements whose Axis is the innermost dimension of its plan. A workgroup reads a line of
// OutputTensor (InputTensor's values: in place, or after the copy pass), writes the line's
// updates into it in shared memory, and writes the whole line back with coalesced stores. The
// plain scatter writes each update to a random address instead, one memory request per element.
// The plan's last dimension walks a line's updates; the dimensions before it name the lines.
// Duplicate targets within a line: one of the updates wins (unspecified which), as elsewhere.
#extension GL_GOOGLE_include_directive : require
#include "elem.glsl"

layout(local_size_x_id = 7) in;  // as many threads as the device allows, up to 1024
layout(constant_id = 0) const bool kChecked = false;
layout(constant_id = 1) const uint kRank = 1;
layout(constant_id = 2) const uint kTuple = 1;  // always 1 here
layout(constant_id = 3) const uint kFlags = 0;
layout(constant_id = 4) const uint kUnroll = 4;  // elements in flight per thread
layout(constant_id = 5) const bool kMaskSkip = false;  // unused here
layout(constant_id = 6) const uint kLineLength = 1;    // elements in a line (tupleSize[0])
// A workgroup holds a whole line in shared memory, so few fit on a multiprocessor: each brings
// many threads (constant_id 7, the workgroup size) to keep enough memory requests in flight.

#include "common.glsl"
#include "index.glsl"

layout(std430, set = 0, binding = 3) restrict readonly buffer Updates { T updatesData[]; };
layout(std430, set = 0, binding = 4) restrict buffer Output { T outputData[]; };

shared V line[kLineLength];

void main() {
  const uint p = pc.plan;
  const uint last = kRank - 1u;
  const uint perLine = AT(plans[p].sizes, last);  // updates per line
  const uint lines = plans[p].head.w / perLine;
  const uint along = AT(plans[p].tupleStride, 0);  // OutputTensor stride along the line
  const uint tid = gl_LocalInvocationID.x, group = gl_WorkGroupSize.x;
  for (uint l = gl_WorkGroupID.x; l < lines; l += gl_NumWorkGroups.x) {
    // The line's offsets: updates (direct), output (indexed), indices, and checked position.
    const uvec4 at = loopOffsets(p, last, l);
    const uint out0 = pc.dstBase + at.y;

    for (uint j = tid; j < kLineLength; j += kUnroll * group) {
      V v[kUnroll];
      for (uint u = 0u; u < kUnroll; ++u)
        if (j + u * group < kLineLength) v[u] = V(outputData[out0 + (j + u * group) * along]);
      for (uint u = 0u; u < kUnroll; ++u)
        if (j + u * group < kLineLength) line[j + u * group] = v[u];
    }
    barrier();
    for (uint k = tid; k < perLine; k += kUnroll * group) {
      uint target[kUnroll];
      V v[kUnroll];
      for (uint u = 0u; u < kUnroll; ++u) {
        uint e = k + u * group;
        if (e < perLine) {
          target[u] = clampIndex(readIndex(at.z + e * AT(plans[p].indices, last)), kLineLength,
                                 at.w + e * AT(plans[p].position, last));
          v[u] = V(updatesData[pc.srcBase + at.x + e * AT(plans[p].direct, last)]);
        }
      }
      for (uint u = 0u; u < kUnroll; ++u)
        if (k + u * group < perLine) line[target[u]] = v[u];
    }
    barrier();
    for (uint j = tid; j < kLineLength; j += group) outputData[out0 + j * along] = T(line[j]);
    barrier();  // the next line reuses `line`
  }
}
