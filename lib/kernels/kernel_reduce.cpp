// Scatters with a reduction, and deterministic ones: atomics (glsl/scatter_reduce.comp) or each
// update unit's target slot (keys), a stable radix sort of the units by slot
// (glsl/radix_sort.comp) and each slot's updates applied in order (glsl/scatter_ordered.comp).
// A line at a time where the shape allows: kernel_lines.cpp; float MAX and MIN in the
// deterministic mode: kernel_ties.cpp.
#include <algorithm>

#include "kernels/kernel_choice.h"

namespace vkdml::detail {

namespace {

// An update unit (ScatterND: a slice) of at least kWideUnit elements is wide: sorting the units
// by target costs little beside moving them, and glsl/scatter_ordered.comp folds
// kOrderedPerThread of a unit's elements a thread.
constexpr UINT kWideUnit = 128, kOrderedPerThread = 4;
// On the large path, a chunk of at most this many update elements is folded in order by one
// invocation per window, unsorted: cheaper than the keys and the sort's dispatches.
constexpr UINT kSequentialChunk = 64;
constexpr const char* kSortSteps[] = {"count", "scan", "scan_add", "scatter"};

std::string OrderedModule(const std::string& elem, UINT indexSize, const std::string& floatSuffix) {
  return Str("ordered_", elem, IndexSuffix(indexSize), floatSuffix);
}
std::string KeysModule(UINT indexSize) {
  return Str("keys", IndexSuffix(indexSize));
}

// The digit counts' words, with the scan's levels, of a sort of `units` keys: offset[level] and
// size[level] (the digit counts, then each level's workgroup totals, up to one workgroup's worth).
UINT64 CountLevels(UINT64 units, std::vector<UINT64>* offset, std::vector<UINT64>* size) {
  const UINT64 blocks = (units + VKDML_SORT_BLOCK - 1) / VKDML_SORT_BLOCK;
  *offset = {0};
  *size = {UINT64(VKDML_SORT_RADIX) * blocks};
  while (size->back() > VKDML_SCAN_BLOCK) {
    offset->push_back(offset->back() + size->back());
    size->push_back((size->back() + VKDML_SCAN_BLOCK - 1) / VKDML_SCAN_BLOCK);
  }
  return offset->back() + size->back();
}

}  // namespace

// glsl/radix_sort.comp's steps for `digits` passes over `units` keys, from the first half of
// the keys and values; the counts region grows to what they need.
void Sort(Choice& c, UINT units, UINT digits) {
  const UINT blocks = UINT((UINT64(units) + VKDML_SORT_BLOCK - 1) / VKDML_SORT_BLOCK);
  std::vector<UINT64> offset, size;
  c.set.countWords = std::max(c.set.countWords, CountLevels(units, &offset, &size));
  auto add = [&](UINT stepIndex, UINT64 groups, shader::SortPush push) {
    Step step;
    step.kind = Pass::Kind::Sort;
    step.plain.module = Str("sort_", kSortSteps[stepIndex]);
    step.plain.groups = c.Groups(groups);
    step.plain.spec[VKDML_SPEC_GROUP_SIZE] = c.caps.groupSize;
    step.plain.sortStep = true;
    step.plain.sort = push;
    c.set.steps.push_back(step);
  };
  for (UINT d = 0; d < digits; ++d) {
    shader::SortPush pass = {};
    pass.count = units;
    pass.blocks = blocks;
    pass.shift = 8 * d;
    pass.from = d % 2;
    add(0, blocks, pass);
    const size_t top = size.size() - 1;
    for (size_t level = 0; level <= top; ++level) {
      shader::SortPush scan = {};
      scan.count = UINT(size[level]);
      scan.level = UINT(offset[level]);
      scan.next = level < top ? UINT(offset[level + 1]) : 0xFFFFFFFFu;
      add(1, (size[level] + VKDML_SCAN_BLOCK - 1) / VKDML_SCAN_BLOCK, scan);
    }
    for (size_t level = top; level-- > 0;) {
      shader::SortPush back = {};
      back.count = UINT(size[level]);
      back.level = UINT(offset[level]);
      back.next = UINT(offset[level + 1]);
      add(2, (size[level] + c.caps.groupSize - 1) / c.caps.groupSize, back);
    }
    add(3, blocks, pass);
  }
}

namespace {

// The ordered fold's dispatches over sorted positions [0, units) of kernel k (its slot and
// specialization set): where loops are bounded, at most maxLoop positions each, each dispatch
// continuing the runs the last left. On the large path each carries `large` (one chunk of the
// loop and window of OutputTensor).
void AddOrdered(Choice& c, Kernel k, UINT units, UINT threadsPerUnit, const LargeDispatch* large) {
  const UINT64 chunk = std::min<UINT64>(units, c.caps.maxLoop);
  for (UINT64 begin = 0; begin < units; begin += chunk) {
    k.begin = UINT(begin);
    k.end = UINT(std::min<UINT64>(units, begin + chunk));
    const UINT64 threads = UINT64(k.end - k.begin) * threadsPerUnit;
    k.groups = c.Groups((threads + c.caps.groupSize - 1) / c.caps.groupSize);
    if (large) {
      k.large = {*large};
      k.large[0].groups = k.groups;
    }
    Step step;
    step.kind = Pass::Kind::Ordered;
    step.plain = k;
    c.set.steps.push_back(step);
  }
}

// Deterministic: each update unit's target slot (keys), a stable sort of the units by slot, then
// each slot's updates applied in order.
Result Ordered(Choice& c, const Plan& scatter) {
  Plan keys = c.op.keys;
  keys.Simplify();
  UINT slot = 0;
  VKDML_TRY(c.Slot(keys, &slot));
  Step step;
  step.kind = Pass::Kind::Keys;
  step.plain = c.Elementwise(KeysModule(c.indexSize), keys, slot, 4);
  step.plain.end = UINT(c.op.slots);  // a dropped unit's key (glsl/indexed.comp)
  c.set.steps.push_back(step);

  const UINT units = UINT(keys.count);  // a deterministic scatter is not on the large path
  UINT digits = 0;  // sort passes: the keys' significant bits, VKDML_SORT_RADIX at a time
  for (UINT64 top = c.op.slots - (c.drop ? 0 : 1); top; top >>= 8) ++digits;
  Sort(c, units, digits);

  Kernel k;
  k.module = OrderedModule(c.Elem(c.elemSize), c.indexSize, FloatSuffix(c));
  k.spec = c.Spec(scatter);
  k.spec[VKDML_SPEC_UNIT] = c.op.unit;
  // Wide units (ScatterND's rows) take kOrderedPerThread elements a thread, so a run's loads
  // overlap and more units are in flight (examples/bench/PERF_NOTES.md, v23).
  const UINT per = c.op.unit >= kWideUnit ? kOrderedPerThread : 1;
  k.spec[VKDML_SPEC_ITEMS] = per;
  c.FoldMean(k, c.op.mean);  // each run's sum divided where it ends: its length is the count
  const UINT threadsPerUnit = (c.op.unit + per - 1) / per;
  k.unit = c.elemSize;
  VKDML_TRY(c.Slot(scatter, &k.slot));
  c.set.plans[k.slot].sortedBase = digits % 2 ? units : 0;
  AddOrdered(c, k, units, threadsPerUnit, nullptr);
  c.set.sortWords = 2 * UINT64(units);
  return {};
}

// The update elements one chunk of a sort on the large path may take: its keys and values
// twice each and its digit counts, after the status words, within the scratch range, or half of
// it for a mean, whose counts take the rest (kernel_mean.cpp; 0: none).
UINT64 LargeSortChunk(const Capabilities& caps, bool mean) {
  const UINT64 words = std::min<UINT64>(caps.scratchRange / (mean ? 2 : 1), UINT64(1) << 36) / 4;
  if (words <= VKDML_STATUS_WORDS + 4) return 0;
  const UINT64 most = (words - VKDML_STATUS_WORDS) / 4;  // no room for counts: an upper bound
  std::vector<UINT64> offset, size;
  const UINT64 counts = CountLevels(most, &offset, &size);  // at least what fewer keys need
  if (VKDML_STATUS_WORDS + counts >= words) return 0;
  return std::min<UINT64>(0xFFFFFFFFu, (words - VKDML_STATUS_WORDS - counts) / 4);
}

// Deterministic on the large path (or without the atomics an 8-byte reduction needs there): the
// scatter's loop in chunks of at most LargeSortChunk elements (kernel_large.cpp), taken in
// order. For each chunk and each key range (OutputTensor's windows, as many as hold fewer than
// 2^31 elements: every window of a tensor of fewer), every update element's target within the
// range, or the range's element count where it lies outside, is its key (keys_..._large); a
// stable sort of the chunk's elements by key; then, once per window of the range, the ordered
// fold of each run of one target there, from what the chunks before left. An element is a unit
// here: the sort costs a key per element, not per ScatterND slice. The sort runs an even number
// of digit passes, so its result is in the first half (sortedBase 0). A chunk of at most
// kSequentialChunk elements skips the keys and the sort: one invocation per window folds it in
// order.
Result OrderedLarge(Choice& c, const Plan& scatter) {
  const UINT64 chunk = LargeSortChunk(c.caps, c.op.mean);
  if (chunk == 0)
    return Fail(Status::Unsupported, c.op.name, ": this device's maxStorageBufferRange (",
                c.caps.scratchRange, " bytes) leaves no room for a deterministic sort's scratch");
  Kernel keys = c.Elementwise(KeysModule(c.indexSize) + "_large", scatter, 0, c.elemSize);
  VKDML_TRY(ChooseLargeDispatches(c, scatter, Pass::Kind::Reduce, &keys, chunk));
  VKDML_TRY(c.Slot(scatter, &keys.slot));
  std::vector<LargeDispatch> dispatches = std::move(keys.large);  // a chunk's windows in turn
  const std::vector<Span> windows = scatter.tuple > 0 ? Windows(c.caps, c.op.outputs[0])
                                                      : std::vector<Span>{dispatches[0].indexed};
  const UINT64 windowBytes = windows[0].end - windows[0].begin;
  const size_t perRange = size_t(
      std::max<UINT64>(1, (UINT64(1) << 31) / std::max<UINT64>(1, windowBytes / c.elemSize)));

  Kernel ordered;
  ordered.module = OrderedModule(c.Elem(c.elemSize), c.indexSize, FloatSuffix(c)) + "_large";
  ordered.spec = c.Spec(scatter);
  ordered.spec[VKDML_SPEC_UNIT] = 1;
  ordered.spec[VKDML_SPEC_ITEMS] = 1;
  ordered.unit = ordered.indexedUnit = c.elemSize;
  ordered.slot = keys.slot;
  ordered.directTensor = keys.directTensor;
  ordered.indexedTensor = keys.indexedTensor;
  keys.indexedTensor = Role::None;  // it reads no target: its range is only compared
  UINT64 most = 0;
  for (size_t first = 0; first < dispatches.size(); first += windows.size()) {
    const LargeDispatch& d = dispatches[first];
    if (d.count <= kSequentialChunk) {  // one invocation per window folds it in order
      Kernel sequential = ordered;
      sequential.spec[VKDML_SPEC_SEQUENTIAL] = 1;
      sequential.end = d.count;
      sequential.groups = 1;
      for (size_t w = 0; w < windows.size(); ++w) {
        Step step;
        step.kind = Pass::Kind::Ordered;
        step.plain = sequential;
        step.plain.large = {dispatches[first + w]};
        step.plain.large[0].groups = 1;
        c.set.steps.push_back(step);
      }
      continue;
    }
    for (size_t range = 0; range < windows.size(); range += perRange) {
      const size_t end = std::min(windows.size(), range + perRange);
      Step step;
      step.kind = Pass::Kind::Keys;
      step.plain = keys;
      step.plain.large = {d};
      step.plain.large[0].indexed = {windows[range].begin, windows[end - 1].end};
      c.set.steps.push_back(step);
      UINT digits = 0;  // for keys up to the range's element count, rounded up to even
      const UINT64 bytes = windows[end - 1].end - windows[range].begin;
      for (UINT64 top = (bytes + c.elemSize - 1) / c.elemSize; top; top >>= 8) ++digits;
      Sort(c, d.count, digits + digits % 2);
      for (size_t w = range; w < end; ++w)
        AddOrdered(c, ordered, d.count, 1, &dispatches[first + w]);
    }
    most = std::max<UINT64>(most, d.count);
  }
  c.set.sortWords = 2 * most;
  return {};
}

}  // namespace

bool DeterministicScratchFits(const OperatorImpl& op, const Capabilities& caps) {
  if (!op.IsScatter()) return true;
  std::vector<UINT64> offset, size;
  const UINT64 units = op.keys.count;
  const UINT64 sort = 4 * units + CountLevels(units, &offset, &size);
  const bool maxOrMin =
      op.reduce == VKDML_REDUCE_FUNCTION_MAX || op.reduce == VKDML_REDUCE_FUNCTION_MIN;
  const UINT64 targets = op.outputs[0].Span();  // kernel_ties.cpp's scratch, where it may apply
  const UINT64 ties = maxOrMin && Kind(op.inputs[0].type) == VKDML_KIND_FLOAT
                          ? targets + VKDML_TIES_BITS + (targets + 31) / 32
                          : 0;
  return 4 * (VKDML_STATUS_WORDS + op.maskWords + std::max(sort, ties)) <= caps.scratchRange;
}

// 8-byte floats compute in float64 (_f64, shaderFloat64) or, without it, in 32-bit integer
// arithmetic (_sf64: glsl/soft_float64.glsl); float32 and float64 keep denormals
// where the device promises to when asked (_dp: SPIR-V's DenormPreserve), else float32 is
// computed in float64 where the device has it (_w: NVIDIA flushes float32 denormals, not
// float64's). float16 is computed in float32, where its denormals are normal numbers. float32
// MAX and MIN compare bits as integers (glsl/arith.glsl: floatKeeps): no float arithmetic, no
// suffix.
std::string FloatSuffix(UINT reduce, UINT kind, UINT elemSize, const Capabilities& caps) {
  if (!reduce || kind != VKDML_KIND_FLOAT) return "";
  if (elemSize == 8)
    return !caps.float64Elements ? "_sf64" : caps.denormPreserve64 ? "_f64_dp" : "_f64";
  const bool arithmetic =
      reduce == VKDML_REDUCE_FUNCTION_ADD || reduce == VKDML_REDUCE_FUNCTION_MULTIPLY;
  if (elemSize != 4 || !arithmetic) return "";
  return caps.denormPreserve32 ? "_dp" : caps.float64 ? "_w" : "";
}

std::string FloatSuffix(const Choice& c) {
  return FloatSuffix(c.op.reduce, c.base[VKDML_SPEC_ELEMENT_KIND], c.elemSize, c.caps);
}

// 32-bit atomics and compare-and-swap for elements of up to 4 bytes (every device); 64-bit atomics
// (_a64) for 8-byte ones, or two 32-bit adds with the carry for integer ADD.
bool AtomicModule(UINT elemSize, UINT indexSize, UINT kind, UINT reduce, const Capabilities& caps,
                  std::string* module) {
  const bool isFloat = kind == VKDML_KIND_FLOAT;
  const std::string name = Str("reduce_", ElemToken(elemSize, caps), IndexSuffix(indexSize));
  const std::string suffix = FloatSuffix(reduce, kind, elemSize, caps);
  if (elemSize <= 4) {
    // The float atomic add only where denormals cannot be kept anyway: NVIDIA's flushes them.
    const bool fadd = elemSize == 4 && isFloat && reduce == VKDML_REDUCE_FUNCTION_ADD &&
                      caps.float32AtomicAdd && suffix.empty();
    *module = name + (fadd ? "_fadd" : suffix);
    return true;
  }
  if (caps.int64Atomics) {
    *module = name + "_a64" + suffix;
    return true;
  }
  *module = name;
  return !isFloat && reduce == VKDML_REDUCE_FUNCTION_ADD;
}

bool AtomicModule(const Choice& c, std::string* module) {
  return AtomicModule(c.elemSize, c.indexSize, c.base[VKDML_SPEC_ELEMENT_KIND], c.op.reduce, c.caps,
                      module);
}

// A deterministic float MAX or MIN takes the default mode's atomics and then resolves ties in
// order (kernel_ties.cpp), wherever the default mode takes atomics. Otherwise, where the shape
// allows (ScatterElements along its innermost axis) a line at a time: in order when
// deterministic, else through shared memory. Otherwise atomics where the device has what the
// element type needs and the order is free, unless the units are wide and the device a GPU,
// where sorting them costs less than an atomic per element (examples/bench/PERF_NOTES.md, v23);
// else sorted by target and applied in order.
Result ChooseReduction(Choice& c, const Pass& pass) {
  Plan plan = pass.plan;
  plan.Simplify();
  const bool sortPays =
      c.caps.type != VK_PHYSICAL_DEVICE_TYPE_CPU && c.op.unit >= kWideUnit && !c.large;
  Result ties;
  if (c.deterministic && !sortPays && ChooseTies(c, plan, &ties)) return ties;
  if (pass.lines && !c.large &&
      (c.deterministic ? !c.drop && ChooseOrderedLines(c, plan) : ChooseSharedLines(c, plan)))
    return {};
  std::string module;
  if (!c.deterministic && !sortPays && AtomicModule(c, &module)) {
    UINT slot = 0;
    VKDML_TRY(c.Slot(plan, &slot));
    Step step;
    step.kind = Pass::Kind::Reduce;
    step.plain = c.Elementwise(module + c.LargeSuffix(), plan, slot, c.elemSize);
    VKDML_TRY(ChooseLargeDispatches(c, plan, Pass::Kind::Reduce, &step.plain));
    c.set.steps.push_back(step);
    c.set.wordAtomics = c.elemSize < 4;
    return {};
  }
  return c.large ? OrderedLarge(c, plan) : Ordered(c, plan);
}

void ListReduceModules(const ModuleSink& sink) {
  ForEachCapabilities([&](const Capabilities& caps) {
    for (UINT index : {4u, 8u})
      for (UINT elem : {1u, 2u, 4u, 8u})
        for (UINT reduce : kReduceFunctions)
          for (UINT kind : kElementKinds) {
            std::string atomic;
            if (reduce != VKDML_REDUCE_FUNCTION_NONE &&
                AtomicModule(elem, index, kind, reduce, caps, &atomic)) {
              sink(atomic);
              sink(atomic + LargeSuffix(true));
            }
            const std::string ordered =
                OrderedModule(ElemToken(elem, caps), index, FloatSuffix(reduce, kind, elem, caps));
            sink(ordered);
            sink(ordered + LargeSuffix(true));
          }
  });
  for (UINT index : {4u, 8u}) {
    sink(KeysModule(index));
    sink(KeysModule(index) + LargeSuffix(true));
  }
  for (const char* step : kSortSteps) sink(Str("sort_", step));
}

}  // namespace vkdml::detail
