// Segment reductions (VKDML_OPERATOR_SEGMENT_REDUCE): glsl/segment_reduce.comp's fold, a module
// per value width (w4: 1 to 4 bytes, folded in 32-bit words; w8), index size and float
// arithmetic; the reduction, the element kind and size are specialization constants, the rows,
// strides and options the plan's (PackedPlan::params). Like the embedding bags' kernels they read
// and write 32-bit words on every device, so every binding starts on a word
// (KernelSet::wordBindings), and their bases are bytes (Kernel::unit 1).
// An invocation folds one output element's segment in row order, the only order that gives the
// sequential result's float bits: segments of many rows keep their parallelism in their columns
// (a workgroup's invocations are neighbouring columns, so each row's loads coalesce). Where loops
// are bounded (Capabilities::maxLoop) a dispatch folds `part` rows of each segment, the later
// dispatches indirect, run only where a segment reaches them (the embedding bags' steps:
// ChooseBagDispatches). Where a segment may be long, the long path (ChooseLongSegments): the
// reductions whose results do not depend on how rows are grouped fold long segments' chunks at
// once, the last chunk to arrive combining them in order; float sums and products stream them
// in row order; both in "_long" modules of their own. The large path is refused: every tensor must
// fit one descriptor.
#include <algorithm>

#include "kernels/kernel_choice.h"

namespace vkdml::detail {

namespace {

// The fewest rows a dispatch folds where loops are bounded.
constexpr UINT64 kSegmentPartFloor = 64;

// The long path's stages past the fold: "segment_w4v_i64_long" beside "segment_w4v_i64".
constexpr char kLongSuffix[] = "_long";

// The most scratch words the long path's list and chunk results take (8 MiB).
constexpr UINT64 kLongWords = UINT64(1) << 21;

// The fold's reduction (interface.h: VKDML_REDUCE_*).
UINT SegmentReduce(VKDML_SEGMENT_REDUCE_FUNCTION f) {
  switch (f) {
    case VKDML_SEGMENT_REDUCE_FUNCTION_PROD:
      return VKDML_REDUCE_MULTIPLY;
    case VKDML_SEGMENT_REDUCE_FUNCTION_MIN:
    case VKDML_SEGMENT_REDUCE_FUNCTION_ARGMIN:
      return VKDML_REDUCE_MIN;
    case VKDML_SEGMENT_REDUCE_FUNCTION_MAX:
    case VKDML_SEGMENT_REDUCE_FUNCTION_ARGMAX:
      return VKDML_REDUCE_MAX;
    default:  // SUM, and MEAN's sum
      return VKDML_REDUCE_ADD;
  }
}

// "segment_w4_i32_dp": FLOAT16 folds in float32, so its arithmetic is float32's; "segment_w4v"
// (vec) folds 4 neighbouring columns of 4-byte values an invocation.
std::string SegmentModule(UINT elemSize, UINT kind, UINT reduce, UINT indexSize,
                          const Capabilities& caps, bool vec = false) {
  const UINT width = elemSize == 8 ? 8 : 4;
  return Str("segment_w", width, vec ? "v" : "", IndexSuffix(indexSize),
             FloatSuffix(reduce, kind, width, caps));
}

// The fold 4 columns an invocation, in 16-byte loads and stores (glsl/segment_reduce.comp, VEC):
// 4-byte values but ARGMIN's and ARGMAX's rows, the innermost dimension columns of both sides,
// contiguous, a multiple of 4 of them, and every other stride (the rows' too) whole 16 bytes.
// The binding table takes it where both bindings start on 16 bytes (Kernel::align).
bool WidenSegment(const OperatorImpl& op, const Plan& plan, Plan* out) {
  const UINT d = plan.rank - 1;
  if (op.inputs[0].elemSize != 4 || op.segmentReduce >= VKDML_SEGMENT_REDUCE_FUNCTION_ARGMIN ||
      plan.position[d] != 0 || plan.sizes[d] % 4 != 0 || plan.direct[d] != 4 ||
      plan.indexed[d] != 4 || op.segmentParams[0][1] % 16 != 0)
    return false;
  Plan wide;
  for (UINT k = 0; k < plan.rank; ++k) {
    if (k < d && (plan.direct[k] % 16 != 0 || plan.indexed[k] % 16 != 0)) return false;
    wide.AddDim(k == d ? plan.sizes[k] / 4 : plan.sizes[k], k == d ? 16 : plan.direct[k],
                k == d ? 16 : plan.indexed[k], plan.indices[k], plan.position[k]);
  }
  *out = wide;
  return true;
}

// The long path's list capacity (interface.h): entries of `lanes` columns within kLongWords.
UINT64 LongCapacity(UINT64 count, UINT64 lanes) {
  const UINT64 perEntry =
      VKDML_SEGMENT_LIST_WORDS + VKDML_SEGMENT_LONG_CHUNKS * lanes * VKDML_SEGMENT_PARTIAL_WORDS;
  return std::min(count, kLongWords / perEntry);
}

// The long path (glsl/segment_reduce.comp, interface.h: VKDML_SEGMENT_STAGE_*) for the reductions
// whose results do not depend on how rows are grouped (MIN, MAX and their args: the first of the
// best values, ties and NaN alike; integers wrap): the fold lists the segments longer than
// VKDML_SEGMENT_LONG_ROWS, their chunks are folded at once and combined in order by the
// invocations whose chunks arrive last (in groups of 16, then the groups: one indirect dispatch),
// so a few long segments cost about what their rows do, and segments that are all short pay one
// empty dispatch past the fold. Where loops are bounded every element must fit the list, and a
// chunk's rows and the chunks of a segment each fit a dispatch's `part`; otherwise the fold's
// dispatches as before.
//
// Float sums and products (their row order is their bits) take the stream instead: the fold lists
// the long segments, then a workgroup per listed element loads its rows into shared memory two
// tiles ahead of one invocation's fold, so the chain waits on the additions rather than on each
// load (glsl/segment_reduce.comp, stream; command 0, the chunks' stage's). Where loops are
// bounded, only where every element fits the list and a segment's rows fit a dispatch's `part`.
bool ChooseLongSegments(Choice& c, const Pass& pass, UINT reduce, UINT kind, UINT64 rows,
                        UINT64 part, const Step& fold) {
  const bool regroup =
      reduce == VKDML_REDUCE_MIN || reduce == VKDML_REDUCE_MAX || kind != VKDML_KIND_FLOAT;
  if (rows <= VKDML_SEGMENT_LONG_ROWS) return false;
  const UINT64 wideCount = std::max<UINT64>(UINT64(pass.plan.count) / 4, 1);  // the wide plan's
  const UINT64 plainCapacity = regroup ? LongCapacity(pass.plan.count, 1)
                                       : std::min<UINT64>(pass.plan.count, c.caps.maxGroups);
  const UINT64 wideCapacity = !fold.hasWide ? 0
                              : regroup     ? LongCapacity(wideCount, 4)
                                            : std::min<UINT64>(wideCount, c.caps.maxGroups);
  if (c.caps.maxLoop != UINT64(-1)) {
    const UINT64 chunkRows = (rows + VKDML_SEGMENT_LONG_CHUNKS - 1) / VKDML_SEGMENT_LONG_CHUNKS;
    if (plainCapacity < pass.plan.count || (fold.hasWide && wideCapacity < wideCount) ||
        part < VKDML_SEGMENT_LONG_ROWS || part < VKDML_SEGMENT_LONG_CHUNKS ||
        part < (regroup ? chunkRows : rows))
      return false;
  }
  Step step = fold;
  auto set = [&step](auto field, UINT value) {
    step.plain.*field = value;
    step.wide.*field = value;
  };
  set(&Kernel::from, 0);
  set(&Kernel::to, 0xFFFFFFFFu);
  set(&Kernel::begin, VKDML_SEGMENT_STAGE_FOLD);
  step.plain.end = UINT(plainCapacity);
  step.wide.end = UINT(wideCapacity);
  c.set.steps.push_back(step);
  set(&Kernel::groups, 1);           // (indirect: the fold sets them)
  step.plain.module += kLongSuffix;  // the stages past the fold: modules of their own
  step.wide.module += kLongSuffix;
  set(&Kernel::begin, VKDML_SEGMENT_STAGE_CHUNKS);
  set(&Kernel::indirect, 1);
  c.set.steps.push_back(step);
  // The count, command 0, then (regroup) the arrivals' counts of each entry.
  c.set.dispatchWords = regroup ? VKDML_SEGMENT_ARRIVALS + std::max(plainCapacity, wideCapacity) *
                                                               VKDML_SEGMENT_ARRIVAL_WORDS
                                : VKDML_BAG_COMMAND(1);
  const auto words = [regroup](UINT64 capacity, UINT64 lanes) {
    return capacity * VKDML_SEGMENT_LIST_WORDS +
           (regroup ? capacity * VKDML_SEGMENT_LONG_CHUNKS * lanes * VKDML_SEGMENT_PARTIAL_WORDS
                    : 0);
  };
  c.set.partialWords = std::max(words(plainCapacity, 1), words(wideCapacity, 4));
  return true;
}

}  // namespace

Result ChooseSegment(Choice& c, const Pass& pass) {
  const OperatorImpl& op = c.op;
  if (c.large)
    return Fail(Status::Unsupported, op.name,
                ": a tensor past this device's binding range (maxStorageBufferRange ",
                c.caps.maxRange,
                " bytes) or 2^32 or more output elements; segment reductions "
                "need every tensor within one descriptor");
  c.set.wordBindings = true;
  const bool check = pass.kind == Pass::Kind::SegmentCheck;
  if (check && !c.set.checked) return {};
  UINT slot = 0;
  VKDML_TRY(c.Slot(pass.plan, &slot));
  c.set.plans[slot].params = op.segmentParams[check ? 1 : 0];
  Step step;
  step.kind = pass.kind;
  if (check) {
    step.plain = c.Elementwise("segment_check" + c.IndexSuffix(), pass.plan, slot, 1);
    step.plain.spec[VKDML_SPEC_UNROLL] = 1;
    c.set.steps.push_back(step);
    return {};
  }
  const Tensor& input = op.inputs[0];
  const UINT kind = Kind(input.type), reduce = SegmentReduce(op.segmentReduce);
  step.plain = c.Elementwise(SegmentModule(input.elemSize, kind, reduce, c.indexSize, c.caps),
                             pass.plan, slot, 1);
  Specialization& spec = step.plain.spec;
  spec[VKDML_SPEC_UNROLL] = 1;
  spec[VKDML_SPEC_OUTPUT_SIZE] = input.elemSize;
  spec[VKDML_SPEC_REDUCE] = reduce;
  spec[VKDML_SPEC_ELEMENT_KIND] = kind;
  // An output element an invocation. Where loops are bounded (Capabilities::maxLoop, summed over
  // an invocation's loops), a dispatch folds `part` rows of each segment, carrying each fold in
  // the scratch.
  const UINT64 part = FoldPart(c, pass.plan.count, kSegmentPartFloor, 4, &step.plain);
  step.plain.end = 0;  // no list (the long path's capacity: ChooseLongSegments)
  Plan widePlan;
  if (WidenSegment(op, pass.plan, &widePlan)) {
    UINT wideSlot = 0;
    VKDML_TRY(c.Slot(widePlan, &wideSlot));
    c.set.plans[wideSlot].params = op.segmentParams[0];
    step.hasWide = true;
    step.wide = step.plain;
    step.wide.module = SegmentModule(input.elemSize, kind, reduce, c.indexSize, c.caps, true);
    step.wide.spec[VKDML_SPEC_RANK] = widePlan.rank;
    step.wide.slot = wideSlot;
    step.wide.align = 16;
    const UINT64 group = c.caps.groupSize;
    step.wide.groups = c.Groups((widePlan.count + group - 1) / group);
  }
  const UINT64 rows = op.segmentParams[0][0];
  if (ChooseLongSegments(c, pass, reduce, kind, rows, part, step)) return {};
  Step dispatches;
  VKDML_TRY(ChooseBagDispatches(c, pass, step, rows, part, &dispatches));
  AddBagFolds(c, step, dispatches, 0, rows, part);
  return {};
}

void ListSegmentModules(const ModuleSink& sink) {
  for (UINT index : {4u, 8u}) {
    sink("segment_check" + IndexSuffix(index));
    for (UINT size : {1u, 2u, 4u, 8u})
      for (UINT kind : kElementKinds)
        for (UINT reduce : kReduceFunctions)
          ForEachCapabilities([&](const Capabilities& caps) {
            for (const char* suffix : {"", kLongSuffix}) {
              sink(SegmentModule(size, kind, reduce, index, caps) + suffix);
              if (size == 4) sink(SegmentModule(size, kind, reduce, index, caps, true) + suffix);
            }
          });
  }
}

}  // namespace vkdml::detail
