// Scatters with a reduction, and deterministic ones: atomics (glsl/scatter_reduce.comp) or each
// update unit's target slot (keys), a stable radix sort of the units by slot
// (glsl/radix_sort.comp) and each slot's updates applied in order (glsl/scatter_ordered.comp).
// A line at a time where the shape allows: kernel_lines.cpp; float MAX and MIN in the
// deterministic mode: kernel_ties.cpp.
#include <algorithm>

#include "kernel_choice.h"

namespace vkdml::detail {

namespace {

// An update unit (ScatterND: a slice) of at least kWideUnit elements is wide: sorting the units
// by target costs little beside moving them, and glsl/scatter_ordered.comp folds
// kOrderedPerThread of a unit's elements a thread.
constexpr UINT kWideUnit = 128, kOrderedPerThread = 4;
constexpr const char* kSortSteps[] = {"count", "scan", "scan_add", "scatter"};

std::string OrderedModule(const std::string& elem, UINT indexSize, const std::string& floatSuffix) {
  return Str("ordered_", elem, IndexSuffix(indexSize), floatSuffix);
}
std::string KeysModule(UINT indexSize) {
  return Str("keys", IndexSuffix(indexSize));
}

// glsl/radix_sort.comp's steps for `digits` passes over `units` keys.
void Sort(Choice& c, UINT units, UINT digits) {
  const UINT blocks = UINT((UINT64(units) + VKDML_SORT_BLOCK - 1) / VKDML_SORT_BLOCK);
  // The scan's levels: the digit counts, then each level's workgroup totals, up to one
  // workgroup's worth.
  std::vector<UINT64> offset = {0}, size = {UINT64(VKDML_SORT_RADIX) * blocks};
  while (size.back() > VKDML_SCAN_BLOCK) {
    offset.push_back(offset.back() + size.back());
    size.push_back((size.back() + VKDML_SCAN_BLOCK - 1) / VKDML_SCAN_BLOCK);
  }
  c.set.countWords = offset.back() + size.back();
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
  c.set.steps.push_back(step);

  const UINT units = UINT(keys.count);  // a deterministic scatter is not on the large path
  UINT digits = 0;  // sort passes: the slots' significant bits, VKDML_SORT_RADIX at a time
  for (UINT64 top = c.op.slots - 1; top; top >>= 8) ++digits;
  Sort(c, units, digits);

  Kernel k;
  k.module = OrderedModule(c.Elem(c.elemSize), c.indexSize, FloatSuffix(c));
  k.spec = c.Spec(scatter);
  k.spec[VKDML_SPEC_UNIT] = c.op.unit;
  // Wide units (ScatterND's rows) take kOrderedPerThread elements a thread, so a run's loads
  // overlap and more units are in flight (examples/bench/PERF_NOTES.md, v23).
  const UINT per = c.op.unit >= kWideUnit ? kOrderedPerThread : 1;
  k.spec[VKDML_SPEC_ITEMS] = per;
  const UINT threadsPerUnit = (c.op.unit + per - 1) / per;
  k.unit = c.elemSize;
  VKDML_TRY(c.Slot(scatter, &k.slot));
  c.set.plans[k.slot].sortedBase = digits % 2 ? units : 0;
  // A run of one target's updates is folded by one invocation: where loops are bounded, in
  // dispatches of at most maxLoop sorted positions, each continuing the runs the last left.
  const UINT64 chunk = std::min<UINT64>(units, c.caps.maxLoop);
  for (UINT64 begin = 0; begin < units; begin += chunk) {
    k.begin = UINT(begin);
    k.end = UINT(std::min<UINT64>(units, begin + chunk));
    const UINT64 threads = UINT64(k.end - k.begin) * threadsPerUnit;
    k.groups = c.Groups((threads + c.caps.groupSize - 1) / c.caps.groupSize);
    step = {};
    step.kind = Pass::Kind::Ordered;
    step.plain = k;
    c.set.steps.push_back(step);
  }
  c.set.sortWords = 2 * UINT64(units);
  return {};
}

}  // namespace

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
      (c.deterministic ? ChooseOrderedLines(c, plan) : ChooseSharedLines(c, plan)))
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
  if (c.large)
    return Fail(Status::Unsupported, c.op.name, ": ", DataTypeName(c.op.inputs[0].type),
                " reductions without 64-bit atomics on tensors past this device's binding "
                "range or of 2^32 or more elements are not supported");
  return Ordered(c, plan);
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
            sink(
                OrderedModule(ElemToken(elem, caps), index, FloatSuffix(reduce, kind, elem, caps)));
          }
  });
  for (UINT index : {4u, 8u}) sink(KeysModule(index));
  for (const char* step : kSortSteps) sink(Str("sort_", step));
}

}  // namespace vkdml::detail
