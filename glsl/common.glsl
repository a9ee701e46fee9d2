// Shared by every vkdml kernel but the sort's: the interface with the library (interface.h), the
// plans and the scratch (bindings.glsl), the push constants, and the loop arithmetic over a plan.
#extension GL_GOOGLE_include_directive : require
#include "interface.h"

#ifndef LARGE
#define LARGE 0  // 1: the large path's modules (interface.h: LargePush)
#endif

#include "bindings.glsl"
#if LARGE  // interface.h: LargePush; pc is its Push part, as for the other modules
layout(push_constant) uniform PushConstants { LargePush lpc; };
#define pc lpc.base
#else
layout(push_constant) uniform PushConstants { Push pc; };
#endif

// Each pipeline's specialization constants (interface.h says what each is), so loops over the
// plan's dimensions and index components fully unroll.
layout(constant_id = VKDML_SPEC_CHECKED) const bool kChecked = false;
layout(constant_id = VKDML_SPEC_RANK) const uint kRank = 1;
layout(constant_id = VKDML_SPEC_TUPLE) const uint kTuple = 0;
layout(constant_id = VKDML_SPEC_SIGNED_INDEX) const bool kSignedIndex = false;
layout(constant_id = VKDML_SPEC_UNROLL) const uint kUnroll = 4;
layout(constant_id = VKDML_SPEC_MASK_SKIP) const bool kMaskSkip = false;
layout(constant_id = VKDML_SPEC_LINE_LENGTH) const uint kLineLength = 1;
layout(constant_id = VKDML_SPEC_REDUCE) const uint kReduce = VKDML_REDUCE_NONE;
layout(constant_id = VKDML_SPEC_ELEMENT_KIND) const uint kKind = VKDML_KIND_UNSIGNED;
layout(constant_id = VKDML_SPEC_UNIT) const uint kUnit = 1;
layout(constant_id = VKDML_SPEC_RUN) const uint kRun = 1;
layout(constant_id = VKDML_SPEC_RUN_INDEXED) const bool kRunIndexed = false;
layout(constant_id = VKDML_SPEC_RUN_LINES) const uint kLines = 1;
layout(constant_id = VKDML_SPEC_SEQUENTIAL) const bool kSequential = false;
layout(constant_id = VKDML_SPEC_DROP) const bool kDrop = false;
layout(constant_id = VKDML_SPEC_CONSTANT) const bool kConstant = false;
layout(constant_id = VKDML_SPEC_SELF) const bool kSelf = false;
layout(constant_id = VKDML_SPEC_MEAN) const bool kMean = false;

// The loop elements a dispatch of plans[p] walks: the plan's, or (LARGE) its chunk's.
uint loopCount(uint p) {
#if LARGE
  return lpc.count;
#else
  return plans[p].count;
#endif
}

// n / plans[p].sizes[d] as a multiply and shifts (lib/kernels/kernels.cpp: Magic).
uint divideBySize(uint p, uint d, uint n) {
  uint hi, lo;
  umulExtended(n, VKDML_AT(plans[p].magic, d), hi, lo);
  uint l = VKDML_AT(plans[p].shift, d);
  return (hi + ((n - hi) >> min(l, 1u))) >> (max(l, 1u) - 1u);
}

// Offsets of element i of the loop space of plans[p]'s first `rank` dimensions: on the direct
// side, on the indexed side (before index components), in IndicesTensor, and its row-major
// position there (checked mode).
uvec4 loopOffsets(uint p, uint rank, uint i) {
  uint rest = i;
  uvec4 at = uvec4(0u);
  for (int d = int(rank) - 1; d >= 0; --d) {
    uint c = rest;
    if (d > 0) {  // dimension 0 takes the rest
      uint q = divideBySize(p, uint(d), rest);
      c = rest - q * VKDML_AT(plans[p].sizes, d);
      rest = q;
    }
    at += c * uvec4(VKDML_AT(plans[p].direct, d), VKDML_AT(plans[p].indexed, d),
                    VKDML_AT(plans[p].indices, d), VKDML_AT(plans[p].position, d));
  }
  return at;
}
