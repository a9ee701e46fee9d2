#version 450
// A deterministic scatter (any reduction) done one output line at a time, for ScatterElements
// whose Axis is the innermost dimension of its plan (lib/plan.h: Plan::LineShaped): the updates
// of one line only ever target that line, so one workgroup can put them in order. It sorts the
// line's (target, update number) pairs in shared memory (a bitonic sort of kSortSize keys, the
// power of two at or above the line's kPerLine updates), then the first thread of each target's
// run folds the run's updates into the target in increasing update order: the sequential result,
// bit for bit, without sorting the whole tensor. No thread loops more than a line's updates (CPU
// drivers cut long loops short: lavapipe stops a shader's loops after 65535 iterations).
// FLOAT64 computes 8-byte floats (shaderFloat64).
#extension GL_GOOGLE_include_directive : require
#include "elem.glsl"

#include "common.glsl"
#include "index.glsl"
#include "arith.glsl"

layout(local_size_x_id = VKDML_SPEC_GROUP_SIZE) in;
#define kPerLine kUnit     // updates per line (the plan's last size)
#define kSortSize kUnroll  // the power of two at or above kPerLine

layout(std430, set = 0, binding = VKDML_BIND_UPDATES) restrict readonly buffer Updates {
  T updatesData[];
};
layout(std430, set = 0, binding = VKDML_BIND_OUTPUT) restrict buffer Output { T outputData[]; };

shared uint keys[kSortSize];  // target << 16 | update number; unused slots sort last

void main() {
  const uint p = pc.plan;
  const uint last = kRank - 1u;
  const uint lines = plans[p].count / kPerLine;
  const uint along = VKDML_AT(plans[p].tupleStride, 0);  // OutputTensor stride along the line
  const uint indexStep = VKDML_AT(plans[p].indices, last);
  const uint positionStep = VKDML_AT(plans[p].position, last);
  const uint updateStep = VKDML_AT(plans[p].direct, last);
  const uint tid = gl_LocalInvocationID.x, group = gl_WorkGroupSize.x;
  for (uint l = gl_WorkGroupID.x; l < lines; l += gl_NumWorkGroups.x) {
    const uvec4 at = loopOffsets(p, last, l);
    for (uint e = tid; e < kSortSize; e += group)
      keys[e] = e < kPerLine ? clampIndex(readIndex(at.z + e * indexStep), kLineLength,
                                          at.w + e * positionStep)
                                       << 16 |
                                   e
                             : 0xFFFFFFFFu;
    barrier();
    for (uint size = 2u; size <= kSortSize; size <<= 1)
      for (uint stride = size >> 1; stride > 0u; stride >>= 1) {
        for (uint pair = tid; pair < kSortSize / 2u; pair += group) {
          const uint a = ((pair & ~(stride - 1u)) << 1) | (pair & (stride - 1u)), b = a + stride;
          const uint x = keys[a], y = keys[b];
          if ((x > y) == ((a & size) == 0u)) {
            keys[a] = y;
            keys[b] = x;
          }
        }
        barrier();
      }
    for (uint q = tid; q < kPerLine; q += group) {
      const uint t = keys[q] >> 16;
      if (q > 0u && keys[q - 1u] >> 16 == t) continue;  // not the first of its target's run
      const uint target = pc.dstBase + at.y + t * along;
      uint r = q;
      if (kReduce == VKDML_REDUCE_NONE) {  // the run's last update wins
        while (r + 1u < kPerLine && keys[r + 1u] >> 16 == t) ++r;
        outputData[target] = updatesData[pc.srcBase + at.x + (keys[r] & 0xFFFFu) * updateStep];
        continue;
      }
      V value = V(outputData[target]);
      for (; r < kPerLine && keys[r] >> 16 == t; ++r)
        value = reduceBits(value, V(updatesData[pc.srcBase + at.x + (keys[r] & 0xFFFFu) *
                                                                      updateStep]));
      outputData[target] = T(value);
    }
    barrier();  // the next line reuses keys
  }
}
