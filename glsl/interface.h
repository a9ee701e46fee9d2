// The interface between the library and its kernels, included by both: by lib/ as C++ and by
// glsl/ as GLSL. Every binding, specialization constant, plan field and push constant is written
// here once. The structs are written in the subset both languages read: uint scalars and uvec4
// arrays, scalars first and padded to 16 bytes, so C++'s layout is GLSL's std140 (plans) and
// std430 (push constants) layout.
#ifndef VKDML_INTERFACE_H
#define VKDML_INTERFACE_H

#ifdef __cplusplus
#include <cstdint>
namespace vkdml::detail::shader {
typedef uint32_t uint;
struct uvec4 {
  uint v[4];
  uint& operator[](uint i) { return v[i]; }
  uint operator[](uint i) const { return v[i]; }
};
#endif

// Descriptor set 0: one uniform buffer and four storage buffers, Vulkan's minimum per stage
// (maxPerStageDescriptorStorageBuffers), whatever the kernel. A pass's source is InputTensor (a
// gather, a scatter's copy) or UpdatesTensor (a scatter); the scratch holds vkdml's own 32-bit
// words: checked mode's status, then the regions ScratchLayout places.
#define VKDML_BIND_PLANS 0    // uniform Plans: the compiled operator's plans and ScratchLayout
#define VKDML_BIND_SOURCE 1   // the pass's source
#define VKDML_BIND_INDICES 2  // IndicesTensor
#define VKDML_BIND_OUTPUT 3   // OutputTensor
#define VKDML_BIND_SCRATCH 4  // vkdml's scratch
#define VKDML_BINDING_COUNT 5

// Specialization constants. The index type reaches a kernel as its module variant (INDEX64,
// 32- or 64-bit loads) plus VKDML_SPEC_SIGNED_INDEX, and nothing else.
#define VKDML_SPEC_CHECKED 0       // bool: record the first out-of-range index
#define VKDML_SPEC_RANK 1          // loop dimensions of the plan
#define VKDML_SPEC_TUPLE 2         // index components per loop element
#define VKDML_SPEC_SIGNED_INDEX 3  // bool: INT32 / INT64 indices
#define VKDML_SPEC_UNROLL \
  4                                // elements in flight per thread (scatter_lines_ordered.comp:
                                   // its sort's size)
#define VKDML_SPEC_MASK_SKIP 5     // bool: skip elements whose mask bit is set
#define VKDML_SPEC_LINE_LENGTH 6   // scatter_lines.comp: elements in a line
#define VKDML_SPEC_GROUP_SIZE 7    // threads in a workgroup (all but report.comp)
#define VKDML_SPEC_REDUCE 8        // a scatter's VKDML_REDUCE_FUNCTION
#define VKDML_SPEC_ELEMENT_KIND 9  // what the element's bits are, for arithmetic: below
#define VKDML_SPEC_UNIT \
  10  // scatter_ordered.comp: loop elements per update unit;
      // scatter_lines_ordered.comp: updates per line; dequantize_blocks.comp: 8 where an
      // invocation takes eight values of a block, 2 where it writes a 32-bit word of two
      // float16 outputs (else 1: each alone, atomically)
#define VKDML_SPEC_ITEMS \
  11                       // scatter_lines_ordered.comp: a line's updates per thread;
                           // scatter_ordered.comp: a unit's elements per thread
#define VKDML_SPEC_RUN 12  // indexed_runs.comp: elements in a run (an invocation's loop)
#define VKDML_SPEC_RUN_INDEXED \
  13  // indexed_runs.comp: bool, each element of a run has its own index (or mask bit)
#define VKDML_SPEC_RUN_LINES 14  // indexed_runs.comp: whole lines (runs) an invocation moves
#define VKDML_SPEC_SEQUENTIAL \
  15  // scatter_ordered.comp (LARGE): bool, one invocation folds the chunk [begin, end) of the
      // loop in its order, unsorted (a chunk too small for the sort to pay)
#define VKDML_SPEC_DROP \
  16  // bool: an element with an index component out of range is dropped (a scatter skips it, a
      // gather writes the fill value: VKDML_OUT_OF_RANGE_MODE_FILL and _DROP), not clamped
#define VKDML_SPEC_CONSTANT \
  17  // indexed.comp (SCATTER): bool, every update is the uniform's fill value (ExcludeSelf's
      // reset of the targets to the reduction's identity)
#define VKDML_SPEC_SELF \
  18  // mean.comp, scatter_ordered.comp (VKDML_SPEC_MEAN): bool, each element's input value
      // is one of the values averaged (a mean without ExcludeSelf)
#define VKDML_SPEC_OUTPUT_SIZE \
  19  // dequantize_rows.comp, embedding_bag.comp: OutputTensor's element size (4: float32, 2:
      // float16); embedding_bag.comp (WEIGHTS): PerSampleWeightsTensor's
#define VKDML_SPEC_MEAN \
  20  // scatter_ordered.comp: bool, a scatter mean: each run's sum divided by its updates (plus
      // one with VKDML_SPEC_SELF) as glsl/mean.comp divides, where the run ends
#define VKDML_SPEC_COUNT 21

// An embedding bag's options (PackedPlan::params.x): a plan's values, not specialization
// constants, so that its pipelines serve every padding row, width and option.
#define VKDML_BAG_MEAN 1u         // divide each sum by its bag's rows
#define VKDML_BAG_WEIGHTED 2u     // multiply each row by its weight (the scratch's WEIGHT)
#define VKDML_BAG_FILL 4u         // an entry whose index is out of range is a row of the fill value
#define VKDML_BAG_LAST_OFFSET 8u  // OffsetsTensor's last entry is the last bag's end
#define VKDML_NO_PADDING 0xFFFFFFFFu
#define VKDML_BAG_PARTIAL_WORDS 5u
// An embedding bag's span on the large path (the scratch's spans): the first group of 4 values of
// the bags with entries in a chunk, and their groups; whether any bound is below the one before
// it (then every bag is in every chunk's span).
#define VKDML_BAG_SPAN_BASE 0
#define VKDML_BAG_SPAN_COUNT 1
#define VKDML_BAG_SPAN_DISORDER 2
#define VKDML_BAG_SPAN_WORDS 3
// The scratch's dispatches region: the longest bag in a chunk, then the VkDispatchIndirectCommand
// of each part k of a chunk's fold (Kernel::indirect k + 1) at word VKDML_BAG_COMMAND(k).
#define VKDML_BAG_LONGEST 0
#define VKDML_BAG_COMMAND(k) (1u + 3u * (k))

// glsl/segment_reduce.comp (VKDML_OPERATOR_SEGMENT_REDUCE): PackedPlan::params.z's bits. The
// fill value (after ScratchLayout in the uniform) is an empty segment's value, or with
// VKDML_SEGMENT_INITIAL every fold's start.
#define VKDML_SEGMENT_COO 1u       // IndicesTensor holds a sorted segment id per row (else offsets)
#define VKDML_SEGMENT_MEAN 2u      // the sum divided by the segment's rows
#define VKDML_SEGMENT_ARG 4u       // OutputTensor gets the row of MIN's or MAX's value
#define VKDML_SEGMENT_ARG64 8u     // ... as an 8-byte integer (else 4)
#define VKDML_SEGMENT_INITIAL 16u  // each fold starts from the fill value
#define VKDML_SEGMENT_HALF 32u     // FLOAT16 values, folded in float32
// Where loops are bounded, a fold carried from one dispatch to the next: its value (2 words), its
// arg and its rows, a word each, per output element.
#define VKDML_SEGMENT_PARTIAL_WORDS 4u
// The long path (lib/kernels/kernel_segment.cpp), for segments past VKDML_SEGMENT_LONG_ROWS: for
// the reductions whose result does not depend on how rows are grouped (MIN, MAX and their args,
// integer SUM, MEAN and PROD), chunks folded at once, then combined. Push::begin is the
// stage. The fold (VKDML_SEGMENT_STAGE_FOLD) lists each output element whose segment is longer
// than VKDML_SEGMENT_LONG_ROWS (Push::end entries at most: past them it folds them itself) and
// sets the indirect command; the chunks' stage folds each listed segment in up to
// VKDML_SEGMENT_LONG_CHUNKS chunks at once (workgroup y: the chunk); the invocation whose chunk
// arrives last in its group of VKDML_SEGMENT_COMBINE_GROUP folds the group's results in order
// (into the group's first chunk's), and the last group's folds the groups' in order and stores
// (VKDML_SEGMENT_ARRIVALS: VKDML_SEGMENT_ARRIVAL_WORDS counts an entry, the entry's, then each
// group's). The partials region: Push::end entries of VKDML_SEGMENT_LIST_WORDS (the loop
// element, its segment's first row, its rows, a chunk's rows), then each entry's chunks' results
// (VKDML_SEGMENT_PARTIAL_WORDS a column); the dispatches region: the entries listed
// (VKDML_SEGMENT_LONG_COUNT), then VKDML_BAG_COMMAND(0) (chunks), then the arrivals, all zeroed
// before each run. Float SUM, MEAN and PROD (their row order is their bits) stream each listed
// segment in the chunks' stage instead (a workgroup an entry, glsl/segment_reduce.comp's
// stream()): the count and command 0 only.
#define VKDML_SEGMENT_STAGE_FOLD 0u
#define VKDML_SEGMENT_STAGE_CHUNKS 1u
#define VKDML_SEGMENT_LONG_ROWS 256u
#define VKDML_SEGMENT_LONG_CHUNKS 256u
#define VKDML_SEGMENT_LIST_WORDS 4u
#define VKDML_SEGMENT_LONG_COUNT 0
#define VKDML_SEGMENT_ARRIVALS VKDML_BAG_COMMAND(1)
#define VKDML_SEGMENT_COMBINE_GROUP 16u
#define VKDML_SEGMENT_ARRIVAL_WORDS (1u + VKDML_SEGMENT_LONG_CHUNKS / VKDML_SEGMENT_COMBINE_GROUP)

#define VKDML_KIND_UNSIGNED 0
#define VKDML_KIND_SIGNED 1
#define VKDML_KIND_FLOAT 2
// VKDML_REDUCE_FUNCTION's values (dml.h; lib/kernels/kernels.cpp checks that they agree).
#define VKDML_REDUCE_NONE 0
#define VKDML_REDUCE_ADD 1
#define VKDML_REDUCE_MULTIPLY 2
#define VKDML_REDUCE_MAX 3
#define VKDML_REDUCE_MIN 4
#define VKDML_REDUCE_MEAN 5  // runs as ADD, then a division (mean.comp or scatter_ordered.comp)

// Threads in a workgroup of indexed.comp, scatter_reduce.comp, scatter_ordered.comp,
// scatter_ties.comp and radix_sort.comp: VKDML_GROUP_SIZE, or on a device that allows fewer,
// Vulkan's minimum maxComputeWorkGroupInvocations (lib/kernels/capabilities.h: groupSize).
#define VKDML_GROUP_SIZE 256
#define VKDML_MIN_GROUP_SIZE 128

#define VKDML_VECTOR_BYTES 16  // a widened plan's element: uvec4 (ELEM=16 modules)

// glsl/scatter_lines_ordered.comp: at most VKDML_LINES_MAX_GROUP threads; a target's bucket of
// at most VKDML_ORDERED_SHORT_BUCKET updates is sorted in registers. Its shared memory, in 32-bit
// words, for a line of `length` targets and `perLine` updates (lib/kernels/kernel_lines.cpp keeps
// it within the device's limit): the counts (a word per target), then the entries (two update
// numbers a word; at least the scan's scratch and the long-bucket flag, in word
// VKDML_ORDERED_LONG_WORD), or, for a line sorted whole, its keys (sortSize words).
#define VKDML_LINES_MAX_GROUP 1024u
#define VKDML_ORDERED_SHORT_BUCKET 16u
#define VKDML_ORDERED_LONG_WORD (VKDML_LINES_MAX_GROUP + 32u)
#define VKDML_ORDERED_ENTRY_WORDS(perLine)                                      \
  (((perLine) + 1u) / 2u > VKDML_ORDERED_LONG_WORD + 1u ? ((perLine) + 1u) / 2u \
                                                        : VKDML_ORDERED_LONG_WORD + 1u)
#define VKDML_ORDERED_SHARED_WORDS(length, perLine, sortSize) \
  ((length) + VKDML_ORDERED_ENTRY_WORDS(perLine) > (sortSize) \
       ? (length) + VKDML_ORDERED_ENTRY_WORDS(perLine)        \
       : (sortSize))

// The uniform buffer holds VKDML_PLAN_SLOTS plans: each pass's plan, plain and (where it
// widens) widened, and checked mode's report in the last slot; then the ScratchLayout.
#define VKDML_MAX_DIMS 8
#define VKDML_MAX_PASSES 4  // ScatterND, deterministic: mark, copy, keys, ordered scatter
#define VKDML_PLAN_SLOTS (2 * VKDML_MAX_PASSES + 1)
#define VKDML_REPORT_SLOT (2 * VKDML_MAX_PASSES)

// A uvec4 array holding one value per dimension, and its element d.
#define VKDML_DIM_VECS (VKDML_MAX_DIMS / 4)
#define VKDML_AT(array, d) array[(d) >> 2][(d) % 4u]

// lib/operators/plan.h's Plan as the kernels read it. For loop element i with coordinates c
// (dimension 0 outermost): direct offset sum c[d] * direct[d], indexed offset sum c[d] * indexed[d]
// plus each clamped index component j times tupleStride[j], index element sum c[d] * indices[d] + j
// * componentStride, row-major position in IndicesTensor sum c[d] * position[d].
struct PackedPlan {
  uint count;            // loop elements
  uint componentStride;  // IndicesTensor stride between an index tuple's components
  uint sortedBase;       // scatter_ordered.comp: where the sorted keys and values start
  uint lineLength;       // indexed_runs.comp: elements in the last dimension (sizes: its runs)
  uvec4 sizes[VKDML_DIM_VECS];  // loop dimension sizes
  uvec4 magic[VKDML_DIM_VECS];  // each size as a multiply-shift divisor (lib/kernels/kernels.cpp)
  uvec4 shift[VKDML_DIM_VECS];
  uvec4 direct[VKDML_DIM_VECS];       // gather: OutputTensor strides; scatter: UpdatesTensor's
  uvec4 indexed[VKDML_DIM_VECS];      // gather: InputTensor strides; scatter: OutputTensor's
  uvec4 indices[VKDML_DIM_VECS];      // IndicesTensor strides
  uvec4 position[VKDML_DIM_VECS];     // row-major position in IndicesTensor (checked mode)
  uvec4 tupleSize[VKDML_DIM_VECS];    // size of the dimension index component j addresses
  uvec4 tupleStride[VKDML_DIM_VECS];  // indexed-side stride of that dimension
  // A kernel's own values. embedding_bag.comp: VKDML_BAG_* bits, the row whose entries are
  // skipped (VKDML_NO_PADDING: none), the values in a row, and (FETCHED) a row slot's words;
  // (FETCH) a row's bytes and a slot's words. dequantize_blocks.comp: the
  // values after the quantize axis (inner), along it, its blocks and the block size; (SCALES)
  // 0, 0, 0 and the type's zero point.
  uvec4 params;
};

// Push constants of every dispatch. Bases are in the kernel's elements (ELEM bytes) from the
// start of each binding's descriptor range, which vkdml aligns down to the device's
// minStorageBufferOffsetAlignment.
struct Push {
  uint plan;       // which plan slot this dispatch runs
  uint srcBase;    // the source binding (gather: InputTensor, scatter: UpdatesTensor)
  uint indexBase;  // IndicesTensor, in index elements
  uint dstBase;    // OutputTensor
  uint begin;      // scatter_ordered.comp: the sorted positions this dispatch folds, [begin, end);
  uint end;        // indexed_runs.comp: begin is the dispatch's first run; scatter_ties.comp
                   // (WRITE): end is OutputTensor's span in elements; embedding_bag.comp: the
                   // entries [begin, end) of all bags (FETCH: those fetched)
  uint from;       // embedding_bag.comp: of a bag's entries in [begin, end), those this dispatch
  uint to;         // folds, [from, to) past its first there (where loops are bounded)
};

// Push constants of the large path's dispatches (modules built with LARGE=1, for tensors past
// the binding range or loops of 2^32 or more elements; lib/kernels/kernels.h: LargeDispatch). Each
// dispatch walks a chunk of its plan's loop, from coordinates `start`, and sees each tensor
// through a window: the loop-walked ones (gather: OutputTensor, scatter: UpdatesTensor, and
// IndicesTensor) at element offsets modulo 2^32 from their window's start; the indexed one
// (gather: InputTensor, scatter: OutputTensor; a copy's source) at 64-bit element offsets, of
// which this dispatch takes only those in [indexedOwn, indexedEnd). 64-bit values are (low, high).
struct LargePush {
  uvec4 start[VKDML_DIM_VECS];  // the chunk's first loop coordinates
  Push base;                    // its plan (the bases are 0; begin and end as Push's)
  uint count;                   // loop elements of this dispatch's chunk
  uint directStart;             // the direct side's window start, in its elements, modulo 2^32
  uint indicesStart;            // IndicesTensor's
  uint unused;
  uint indexedStart[2];  // the indexed side's window start, in its elements
  uint indexedOwn[2];    // the indexed elements this dispatch owns: [indexedOwn, indexedEnd)
  uint indexedEnd[2];
};
#define VKDML_NOT_OWNED 0xFFFFFFFFu  // locate(): an indexed element another dispatch takes

// Push constants of the sort's dispatches (glsl/radix_sort.comp), in place of Push. Offsets and
// counts are in 32-bit words.
struct SortPush {
  uint count;   // keys to sort; for a scan step: entries of this level
  uint blocks;  // workgroups of VKDML_SORT_BLOCK keys (the count and scatter steps)
  uint shift;   // the digit: (key >> shift) & (VKDML_SORT_RADIX - 1)
  uint from;    // the half sorted from (0 or 1); the other is written
  uint level;   // scan steps: this level's offset in the counts buffer
  uint next;    // scan steps: the next level's offset (its block sums)
  uint unused0;
  uint unused1;
};
#define VKDML_SORT_RADIX 256
#define VKDML_SORT_BLOCK 2048  // keys per workgroup of the count and scatter steps
#define VKDML_SCAN_BLOCK 2048  // entries per workgroup of a scan step

// The scratch binding's words. First checked mode's status: the row-major position in
// IndicesTensor of the first out-of-range index (VKDML_NO_POSITION when none), then that index's
// raw value as two words.
#define VKDML_STATUS_POSITION 0
#define VKDML_STATUS_LO 1
#define VKDML_STATUS_HI 2
#define VKDML_STATUS_WORDS 4
#define VKDML_NO_POSITION 0xFFFFFFFFu
// Then the regions an operator needs, each starting at the word ScratchLayout (in the uniform,
// after the plans; lib/kernels/kernels.h: PlaceScratch) says:
// - mask: ScatterND's bit per slice its scatter overwrites, zeroed before each run;
// - keys and values: a deterministic scatter's sort (glsl/radix_sort.comp), two halves of U words
//   each (U update units), the keys (target slots) and values (update units) sorted from one
//   half into the other;
// - counts: the sort's digit counts with the scan's levels;
// - tally: a scatter mean's count of update units per target slot, zeroed before each run;
// - bounds and weights: an embedding bag's bag bounds (bags + 1 words, clamped) and its weights
//   as float32 (a word per entry), written by its first passes; partials: where loops are
//   bounded, its folds carried from one dispatch to the next (VKDML_BAG_PARTIAL_WORDS a group
//   of 4 values: the 4 partial results, then the rows folded);
// - dispatches: an embedding bag's longest bag in a chunk of entries (zeroed before each run and
//   each chunk, set by the chunk's first Bag dispatch where loops are bounded), then a
//   VkDispatchIndirectCommand for each Bag dispatch of the chunk (the first's from its span, on
//   the large path);
// - spans: on the large path, an embedding bag's span of a chunk (VKDML_BAG_SPAN_*: zeroed
//   before each run, then set by its bounds and, each chunk, by bag_spans);
// - rows: on the large path, an embedding bag's rows of a chunk of entries (an entry a slot of
//   params.w words: embedding_bag.comp, FETCH), fetched from the table's windows;
// - blocks: a block-quantized gather's scale (float32 bits) and zero point (an int) of each block,
//   two words a block in ScaleTensor's row-major order, written by its first passes.
// A deterministic float MAX or MIN (glsl/ties.glsl) takes the sort's regions instead: a tie
// position per OutputTensor element in keys, and the tie marks in counts: word VKDML_TIES_ANY
// (whether any target is marked), then a bit per OutputTensor element, zeroed before each run.
struct ScratchLayout {
  uint mask;
  uint keys;
  uint values;
  uint counts;
  uint tally;
  uint bounds;
  uint weights;
  uint partials;
  uint blocks;
  uint rows;
  uint dispatches;
  uint spans;
};
// After ScratchLayout in the uniform: VKDML_OUT_OF_RANGE_MODE_FILL's value (a scatter's: its
// reduction's identity, for ExcludeSelf), its element's bytes repeated over the 16
// (lib/operators/operator.h: OperatorImpl::fill).
#define VKDML_TIES_ANY 0
#define VKDML_TIES_BITS 1

#ifdef __cplusplus
static_assert(sizeof(PackedPlan) % 16 == 0 && sizeof(PackedPlan) == 16 + 9 * 32 + 16,
              "PackedPlan must keep std140's layout");
static_assert(sizeof(ScratchLayout) == 48, "ScratchLayout must keep std140's layout");
// Within Vulkan 1.1's minimum limits, on any device: the uniform buffer's range (16 KiB), and the
// sort's shared memory (16 KiB), its offsets and masks at the largest workgroup.
static_assert(VKDML_PLAN_SLOTS * sizeof(PackedPlan) + sizeof(ScratchLayout) + sizeof(uvec4) <=
                  16384,
              "the plans must fit Vulkan's minimum maxUniformBufferRange");
static_assert((VKDML_SORT_RADIX + VKDML_SORT_RADIX * VKDML_GROUP_SIZE / 32) * 4 <= 16384,
              "radix_sort.comp must fit Vulkan's minimum maxComputeSharedMemorySize");
static_assert(sizeof(Push) == 32, "Push must keep std430's layout");
static_assert(sizeof(SortPush) == 32, "SortPush must keep std430's layout");
static_assert(sizeof(LargePush) == 104 && sizeof(LargePush) <= 128,
              "LargePush must keep std430's layout, within Vulkan's 128 bytes of push constants");
}  // namespace vkdml::detail::shader
#endif

#endif  // VKDML_INTERFACE_H
