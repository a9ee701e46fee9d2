#version 450
// A scatter mean's division (dml.h: VKDML_REDUCE_FUNCTION_MEAN), after its sum (the ADD
// reduction's kernels) and its count per target slot (glsl/indexed.comp, TALLY_PASS): over every
// OutputTensor element (the plan's direct offsets, its slot the indices offset), each that
// updates reached is divided by their number, plus one where its input value is in the mean
// (kSelf), as glsl/divide.glsl divides. ELEM 1, 2 (WORDS where packed), 4 or 8; kKind says
// float, signed or unsigned. LARGE (lib/kernels/kernel_mean.cpp): over a chunk of the scatter's
// own loop instead, through one window of OutputTensor, the counts those of a piece of it; the
// first update element to take its target's count divides the target, leaving 0 for the next
// piece.
#extension GL_GOOGLE_include_directive : require
#include "elem.glsl"

#include "common.glsl"
#include "divide.glsl"
#if LARGE
#include "index.glsl"
#endif

layout(local_size_x_id = VKDML_SPEC_GROUP_SIZE) in;  // Capabilities::groupSize

layout(std430, set = 0, binding = VKDML_BIND_OUTPUT) restrict buffer Output { T outputData[]; };

void main() {
  const uint p = pc.plan, count = loopCount(p), step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < count; i = count - i <= step ? count : i + step) {
#if LARGE
    const uvec4 at = locate(p, i);  // y: its target, where this dispatch owns it
    if (at.y == VKDML_NOT_OWNED) continue;
    const uint updates = atomicExchange(TALLY(tallyWord(at.y)), 0u);
    const uint target = pc.dstBase + at.y;
#else
    const uvec4 at = loopOffsets(p, kRank, i);  // x: the element, z: its slot
    const uint updates = TALLY(at.z);
    const uint target = pc.dstBase + at.x;
#endif
    if (updates == 0u) continue;  // no update (LARGE: or another update's thread divides)
    STORE(outputData, target, MEAN(LOAD(outputData, target), updates));
  }
}
