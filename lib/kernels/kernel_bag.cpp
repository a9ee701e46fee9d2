// Embedding bags (VKDML_OPERATOR_EMBEDDING_BAG): glsl/embedding_bag.comp's stages, a module per
// stage, table layout, index size and float arithmetic; MAX (or the sum's ADD) and the output
// size are specialization constants, the options, padding row and width the plan's
// (PackedPlan::params), so one pipeline serves bags of any shape. Like the quantized rows' kernels
// they read and write 32-bit words on every device, so every binding starts on a word
// (KernelSet::wordBindings), and their bases are bytes (Kernel::unit 1).
// On the large path (the table past the binding range) the Bag pass takes the entries in chunks:
// each chunk's rows fetched from the table's windows into the scratch, then folded from there
// in entry order by the bags with entries in the chunk, each bag's fold carried from chunk to
// chunk. The other tensors must each fit one descriptor: every pass but the fetch is dispatched
// as off the large path (Kernel::whole).
#include <algorithm>

#include "kernels/kernel_choice.h"

namespace vkdml::detail {

constexpr char kDispatchesModule[] = "bag_dispatches";

UINT64 FoldPart(const Choice& c, UINT64 count, UINT64 floor, UINT64 share, Kernel* k) {
  const UINT64 group = c.caps.groupSize;
  k->groups = c.Groups((count + group - 1) / group);
  const UINT64 perInvocation =
      (count + UINT64(k->groups) * group - 1) / (UINT64(k->groups) * group);
  k->end = k->to = 0xFFFFFFFFu;
  if (c.caps.maxLoop == UINT64(-1)) return 0xFFFFFFFFu;
  return std::max<UINT64>(floor, c.caps.maxLoop / perInvocation / share);
}

// Where loops are bounded (`part` entries of a bag a dispatch) and a chunk of at most `chunk`
// entries may take more than one dispatch: the step (bag_dispatches) setting each later
// dispatch's workgroups from the longest bag the first recorded (as many as the first's on the
// large path), and the scratch it needs.
Result ChooseBagDispatches(Choice& c, const Pass& pass, const Step& fold, UINT64 chunk, UINT64 part,
                           Step* out) {
  if (chunk <= part) return {};
  const UINT64 later = (chunk - 1) / part;
  Plan plan;  // the later dispatches
  plan.AddDim(UINT(later), 0, 0, 0, 0);
  UINT slot = 0;
  VKDML_TRY(c.Slot(plan, &slot));
  c.set.plans[slot].params = {{UINT(later), UINT(part), fold.plain.groups, c.large ? 1u : 0u}};
  out->kind = Pass::Kind::Bag;
  out->plain = c.Elementwise(kDispatchesModule, plan, slot, 1);
  out->plain.whole = c.large;
  c.set.dispatchWords = VKDML_BAG_COMMAND(UINT64(1) + later);  // commands 0 to later
  c.set.partialWords = pass.plan.count * VKDML_BAG_PARTIAL_WORDS;
  return {};
}

// The Bag pass's dispatches over the entries [begin, end) (`fold` as chosen, its `to` 2^32 - 1):
// one, or where a bag may take more (ChooseBagDispatches), a first recording the longest bag there,
// `dispatches`, then the later ones, indirect (part k from command k: interface.h, dispatches):
// they run only where a bag reaches their part, so bags of a few entries among many cost one
// dispatch.
void AddBagFolds(Choice& c, Step fold, const Step& dispatches, UINT64 begin, UINT64 end,
                 UINT64 part) {
  // (A segment reduction's fold may have a wide kernel: each part's fields on both.)
  auto set = [&fold](auto field, UINT value) {
    fold.plain.*field = value;
    fold.wide.*field = value;
  };
  set(&Kernel::begin, UINT(begin));
  if (end - begin <= part) {
    c.set.steps.push_back(fold);
    return;
  }
  set(&Kernel::to, UINT(part));
  c.set.steps.push_back(fold);
  c.set.steps.push_back(dispatches);
  for (UINT64 k = 1; k * part < end - begin; ++k) {
    set(&Kernel::from, UINT(k * part));
    set(&Kernel::to, UINT((k + 1) * part));
    set(&Kernel::indirect, UINT(k + 1));
    c.set.steps.push_back(fold);
  }
}

namespace {

// The fewest entries a dispatch folds where loops are bounded: its loop iterations beside the
// entries' (the mean's division, the grid-stride loop) are few.
constexpr UINT64 kBagChunkFloor = 64;

// The most scratch a chunk's fetched rows take on the large path (less where windows are
// smaller: half a window).
constexpr UINT64 kFetchBytes = UINT64(32) << 20;

// The most dispatches of the fetch (chunks times windows of the table).
constexpr UINT64 kMaxFetches = 1 << 16;

// The table's token: "f32", "f16", "q8_0" or "q4_0".
std::string TableToken(VKDML_QUANTIZED_FORMAT format, UINT elemSize) {
  if (format) return format == VKDML_QUANTIZED_FORMAT_Q8_0 ? "q8_0" : "q4_0";
  return elemSize == 2 ? "f16" : "f32";
}

// The float arithmetic a bag's sums and products need (glsl/arith.glsl, as a float32 ADD
// reduction's): "_dp" or "_w" where the device would flush float32 denormals, "" for MAX (it
// only compares) and FLOAT16 tables (whose values and weighted values are multiples of 2^-48:
// no sum or product of them is a float32 denormal).
std::string ArithSuffix(VKDML_EMBEDDING_BAG_MODE mode, const std::string& table,
                        const Capabilities& caps) {
  if (mode == VKDML_EMBEDDING_BAG_MODE_MAX || table == "f16") return "";
  return FloatSuffix(VKDML_REDUCE_FUNCTION_ADD, VKDML_KIND_FLOAT, 4, caps);
}

// "bag_bounds_i32", "bag_weights", "embedding_bag_q4_0_i64_w".
std::string BagModule(Pass::Kind kind, const std::string& table, UINT indexSize,
                      const std::string& arith, bool fetched = false) {
  if (kind == Pass::Kind::Bounds) return "bag_bounds" + IndexSuffix(indexSize);
  if (kind == Pass::Kind::Weights) return "bag_weights";
  return "embedding_bag_" + table + IndexSuffix(indexSize) + arith + (fetched ? "_fetched" : "");
}
constexpr char kSpansModule[] = "bag_spans";
std::string FetchModule(UINT indexSize) {
  return "bag_fetch" + IndexSuffix(indexSize) + "_large";
}

// On the large path only the table may pass the binding range, and the loops stay below 2^32.
Result CheckLargeBag(const Choice& c) {
  const OperatorImpl& op = c.op;
  for (const auto* tensors : {&op.inputs, &op.outputs})
    for (const Tensor& t : *tensors)
      if (&t != &op.inputs[0]) VKDML_TRY(CheckWithinRange(c, t, "InputTensor, the table,"));
  for (const Pass& pass : op.passes)
    if (pass.plan.count > 0xFFFFFFFFu)
      return Fail(Status::Unsupported, op.name, ": 2^32 or more ",
                  pass.kind == Pass::Kind::Bag ? "groups of 4 output values" : "bags",
                  " are not supported");
  return {};
}

// The large path's Bag pass (`fold` as chosen off it, over `slot`'s plan): chunks of the entries,
// each a fetch dispatched per window of the table, bag_spans finding the bags with entries in it
// (all where the bounds are out of order), then the folds of their entries in the chunk
// (glsl/embedding_bag.comp: FETCH, SPANS, FETCHED), `part` a dispatch (AddBagFolds), the first
// with the span's workgroups: a chunk costs its bags, not all of them.
Result ChooseLargeBag(Choice& c, const Pass& pass, Step fold, UINT64 part) {
  const OperatorImpl& op = c.op;
  const Tensor& table = op.inputs[0];
  const UINT64 rowBytes = UINT64(table.sizes[table.dims - 1]) * table.elemSize;
  // A row's words from the word it starts in (on any of its bytes: a quantized table's rows may
  // start on any); the fetch reads them, up to the word holding the row's last byte, which lies
  // up to `reach` bytes past the (word-aligned) end of the window holding its first.
  const UINT64 slot = (rowBytes + 3 + 3) / 4, reach = (rowBytes + 2) / 4 * 4;
  const std::vector<Span> windows = Windows(c.caps, table, reach);
  if (windows.empty())
    return Fail(Status::Unsupported, op.name, ": a row of InputTensor takes ", rowBytes,
                " bytes, which leaves no window of it in this device's binding range (",
                c.caps.maxRange, " bytes)");
  const UINT64 budget = std::min(kFetchBytes, c.caps.maxRange / 2) / (slot * 4);
  const UINT64 chunk = std::max<UINT64>(1, std::min<UINT64>(budget, op.entries));
  const UINT64 chunks = std::max<UINT64>(1, (op.entries + chunk - 1) / chunk);
  if (chunks * windows.size() > kMaxFetches)
    return Fail(Status::Unsupported, op.name, ": its ", op.entries, " entries would take ",
                chunks * windows.size(), " fetches of ", rowBytes,
                "-byte rows through windows of this device's binding range (", c.caps.maxRange,
                " bytes); at most ", kMaxFetches);
  Plan fetchPlan;  // a chunk's entries, a row's slot each, in groups of 4 words
  const UINT64 quads = (slot + 3) / 4;
  fetchPlan.AddDim(UINT(chunk), 0, 0, 0, 0);
  fetchPlan.AddDim(UINT(quads), 0, 0, 0, 0);
  fetchPlan.AddComponent(pass.plan.tupleSize[0], pass.plan.tupleStride[0]);
  fetchPlan.componentStride = pass.plan.componentStride;
  UINT fetchSlot = 0;
  VKDML_TRY(c.Slot(fetchPlan, &fetchSlot));
  c.set.plans[fetchSlot].params = {{UINT(rowBytes), UINT(slot), 0, 0}};
  c.set.plans[fold.plain.slot].params[3] = UINT(slot);
  Step fetch;
  fetch.kind = Pass::Kind::Bag;  // its source is the table
  Kernel& k = fetch.plain;
  k.module = FetchModule(c.indexSize);
  k.spec = c.Spec(fetchPlan);
  k.spec[VKDML_SPEC_CHECKED] = false;  // the fold reports
  k.spec[VKDML_SPEC_UNROLL] = 1;
  k.slot = fetchSlot;
  k.unit = k.indexedUnit = 1;
  k.indexedTensor = Role::Input;
  k.indexedReach = reach;
  fold.plain.module += "_fetched";
  fold.plain.whole = true;
  fold.plain.indirect = 1;
  Step dispatches;
  VKDML_TRY(ChooseBagDispatches(c, pass, fold, chunk, part, &dispatches));
  c.set.dispatchWords = std::max<UINT64>(c.set.dispatchWords, VKDML_BAG_COMMAND(1));
  c.set.spanWords = VKDML_BAG_SPAN_WORDS;
  Plan spanPlan;  // one invocation
  spanPlan.AddDim(1, 0, 0, 0, 0);
  UINT spanSlot = 0;
  VKDML_TRY(c.Slot(spanPlan, &spanSlot));
  const UINT groupsPerBag = (op.width + 3) / 4;
  c.set.plans[spanSlot].params = {
      {UINT(pass.plan.count / groupsPerBag), groupsPerBag, fold.plain.groups, 0}};
  Step spans;
  spans.kind = Pass::Kind::Bag;
  spans.plain = c.Elementwise(kSpansModule, spanPlan, spanSlot, 1);
  spans.plain.whole = true;
  for (UINT64 begin = 0; begin < chunks * chunk; begin += chunk) {
    const UINT64 end = std::min(begin + chunk, UINT64(op.entries));
    k.begin = UINT(begin);
    k.end = UINT(end);
    fold.plain.end = begin + chunk < op.entries ? UINT(end) : 0xFFFFFFFFu;  // the last: any start
    LargeDispatch d;
    d.count = UINT((end - begin) * quads);
    d.groups = c.Groups((d.count + c.caps.groupSize - 1) / c.caps.groupSize);
    d.indices = {0, op.Indices().totalBytes};
    k.large = PerWindow(windows, d);
    if (end > begin) c.set.steps.push_back(fetch);
    spans.plain.begin = UINT(begin);
    spans.plain.end = fold.plain.end;
    c.set.steps.push_back(spans);
    AddBagFolds(c, fold, dispatches, begin, end, part);
  }
  c.set.rowWords = chunk * slot;
  if (chunks > 1) c.set.partialWords = pass.plan.count * VKDML_BAG_PARTIAL_WORDS;
  return {};
}

}  // namespace

Result ChooseBag(Choice& c, const Pass& pass) {
  const OperatorImpl& op = c.op;
  if (c.large && pass.kind == Pass::Kind::Bounds) VKDML_TRY(CheckLargeBag(c));
  const std::string table = TableToken(op.format, op.inputs[0].elemSize);
  UINT slot = 0;
  VKDML_TRY(c.Slot(pass.plan, &slot));
  Step step;
  step.kind = pass.kind;
  step.plain = c.Elementwise(
      BagModule(pass.kind, table, c.indexSize, ArithSuffix(op.bagMode, table, c.caps)), pass.plan,
      slot, 1);
  Specialization& spec = step.plain.spec;
  if (pass.kind == Pass::Kind::Weights) spec[VKDML_SPEC_OUTPUT_SIZE] = op.inputs[3].elemSize;
  if (pass.kind == Pass::Kind::Bag) {  // the bounds' pass is the same for every mode
    spec[VKDML_SPEC_OUTPUT_SIZE] = op.outputs[0].elemSize;
    spec[VKDML_SPEC_REDUCE] =
        op.bagMode == VKDML_EMBEDDING_BAG_MODE_MAX ? VKDML_REDUCE_MAX : VKDML_REDUCE_ADD;
    spec[VKDML_SPEC_ELEMENT_KIND] = VKDML_KIND_FLOAT;
  }
  c.set.plans[slot].params = {
      {op.bagFlags | (op.outOfRange == VKDML_OUT_OF_RANGE_MODE_FILL ? VKDML_BAG_FILL : 0),
       op.padding, op.width, c.large && pass.kind == Pass::Kind::Bounds}};  // (w: SPANS' order)
  c.set.wordBindings = true;
  step.plain.whole = c.large;
  if (pass.kind == Pass::Kind::Bounds) c.set.boundsWords = pass.plan.count;
  if (pass.kind == Pass::Kind::Weights) c.set.weightWords = pass.plan.count;
  if (pass.kind != Pass::Kind::Bag) {
    c.set.steps.push_back(step);
    return {};
  }
  // A group of 4 values an invocation where the device allows. Where loops are bounded
  // (Capabilities::maxLoop, summed over an invocation's loops), a dispatch folds `part` entries
  // of each bag, carrying each fold in the scratch: a bag may hold every entry.
  const UINT64 part = FoldPart(c, pass.plan.count, kBagChunkFloor, 2, &step.plain);
  if (c.large) return ChooseLargeBag(c, pass, step, part);
  Step dispatches;
  VKDML_TRY(ChooseBagDispatches(c, pass, step, op.entries, part, &dispatches));
  AddBagFolds(c, step, dispatches, 0, op.entries, part);
  return {};
}

void ListBagModules(const ModuleSink& sink) {
  for (UINT index : {4u, 8u}) {
    sink(BagModule(Pass::Kind::Bounds, "", index, ""));
    for (const char* table : {"f32", "f16", "q8_0", "q4_0"})
      for (auto mode : {VKDML_EMBEDDING_BAG_MODE_SUM, VKDML_EMBEDDING_BAG_MODE_MAX})
        ForEachCapabilities([&](const Capabilities& caps) {
          for (bool fetched : {false, true})
            sink(BagModule(Pass::Kind::Bag, table, index, ArithSuffix(mode, table, caps), fetched));
        });
    sink(FetchModule(index));
  }
  sink(BagModule(Pass::Kind::Weights, "", 4, ""));
  sink(kDispatchesModule);
  sink(kSpansModule);
}

}  // namespace vkdml::detail
