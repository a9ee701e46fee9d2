#version 450
// A deterministic float MAX or MIN's ties (glsl/ties.glsl), after the atomic kernel. Without
// WRITE: over the scatter's plan again, each update that is a zero or a NaN, aimed at a marked
// target holding the same kind, lowers the target's tie position to its own loop index (the plan
// walks IndicesTensor in row-major order, so its loop order is the updates' order). WRITE: over
// OutputTensor's span (pc.end elements), each marked element with a tie position takes that
// update. Nothing to do, and each workgroup returns at once, where the atomic kernel marked no
// target. ELEM 2 (float16, packed in words where WORDS), 4 or 8; not on the large path.
#extension GL_GOOGLE_include_directive : require
#include "elem.glsl"

#include "common.glsl"
#include "index.glsl"
#include "arith.glsl"
#include "ties.glsl"

layout(local_size_x_id = VKDML_SPEC_GROUP_SIZE) in;  // Capabilities::groupSize

layout(std430, set = 0, binding = VKDML_BIND_SOURCE) restrict readonly buffer Updates {
  T updatesData[];
};
layout(std430, set = 0, binding = VKDML_BIND_OUTPUT) restrict buffer Output { T outputData[]; };

void main() {
  if (TIE_MARK(VKDML_TIES_ANY) == 0u) return;
  const uint p = pc.plan, count = WRITE != 0 ? pc.end : loopCount(p);
  const uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < count;) {
#if WRITE  // i: an OutputTensor element
    if (tieMarked(i)) {
      const uint first = TIE_POSITION(i);
      if (first != kNoPosition)
        STORE(outputData, pc.dstBase + i,
              LOAD(updatesData, pc.srcBase + loopOffsets(p, kRank, first).x));
    }
#else  // i: a loop element, an update
    const uvec4 at = loopOffsets(p, kRank, i);
    const uint kind = tieKind(LOAD(updatesData, pc.srcBase + at.x));
    if (kind != kNoTie) {  // only then are its indices read
      const uint target = indexedOffset(p, at);  // VKDML_NOT_OWNED: dropped (kDrop)
      if (target != VKDML_NOT_OWNED && tieMarked(target) && tieKind(LOAD(outputData, pc.dstBase + target)) == kind &&
          TIE_POSITION(target) > i)  // most often an earlier update's is there already
        atomicMin(TIE_POSITION(target), i);
    }
#endif
    if (count - i <= step) break;  // no wrap-around past 2^32
    i += step;
  }
}
