// The bindings every kernel has: the plans with the scratch's layout (uniform), and vkdml's
// scratch words (interface.h: ScratchLayout), read through the macros below.
layout(std140, set = 0, binding = VKDML_BIND_PLANS) uniform Plans {
  PackedPlan plans[VKDML_PLAN_SLOTS];
  ScratchLayout scratchAt;
  uvec4 fillBytes;  // VKDML_OUT_OF_RANGE_MODE_FILL's value (interface.h)
};
layout(std430, set = 0, binding = VKDML_BIND_SCRATCH) restrict buffer Scratch { uint scratch[]; };

#define STATUS(w) scratch[(w)]
#define MASK_WORD(w) scratch[scratchAt.mask + (w)]
#define SORT_KEY(i) scratch[scratchAt.keys + (i)]
#define SORT_VALUE(i) scratch[scratchAt.values + (i)]
#define SORT_COUNT(i) scratch[scratchAt.counts + (i)]
#define TIE_MARK(w) scratch[scratchAt.counts + (w)]
#define TIE_POSITION(t) scratch[scratchAt.keys + (t)]
#define TALLY(e) scratch[scratchAt.tally + (e)]
#define BOUND(b) scratch[scratchAt.bounds + (b)]
#define WEIGHT(e) scratch[scratchAt.weights + (e)]
#define PARTIAL(w) scratch[scratchAt.partials + (w)]
#define DISPATCH(w) scratch[scratchAt.dispatches + (w)]
#define SPAN(w) scratch[scratchAt.spans + (w)]

// Sets the embedding bag's indirect command for part k of a chunk's fold (interface.h).
void setBagCommand(uint k, uint groups) {
  DISPATCH(VKDML_BAG_COMMAND(k)) = groups;
  DISPATCH(VKDML_BAG_COMMAND(k) + 1u) = 1u;
  DISPATCH(VKDML_BAG_COMMAND(k) + 2u) = 1u;
}
#define BLOCK(w) scratch[scratchAt.blocks + (w)]
