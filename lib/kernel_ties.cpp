// A deterministic float MAX or MIN: the default mode's atomic kernel, marking the targets it sets
// to a zero or a NaN (glsl/ties.glsl), then glsl/scatter_ties.comp over the updates (each such
// target's first update of that kind) and over OutputTensor (its write); both return at once
// where nothing was marked.
#include <algorithm>

#include "kernel_choice.h"

namespace vkdml::detail {

namespace {

constexpr UINT64 kCpuTieGroups = 16;  // CPU devices: workgroups of a tie pass, at least

std::string TiesFirstModule(UINT elemSize, UINT indexSize) {
  return Str("ties_first_e", elemSize, IndexSuffix(indexSize));
}
std::string TiesWriteModule(UINT elemSize) {
  return Str("ties_write_e", elemSize);
}

// The atomic kernel marking ties: 4-byte elements on every device, 8-byte ones with 64-bit
// atomics; not on the large path.
bool TiesModule(UINT reduce, UINT kind, UINT elemSize, bool large, std::string* atomic) {
  const bool maxOrMin = reduce == VKDML_REDUCE_FUNCTION_MAX || reduce == VKDML_REDUCE_FUNCTION_MIN;
  if (!maxOrMin || kind != VKDML_KIND_FLOAT || elemSize < 4 || large) return false;
  *atomic += "_ties";
  return true;
}

// Workgroups of a tie pass over `items` of up to `cost` loop iterations each: `gpu` on GPUs; on
// CPU devices, where a workgroup costs its start even where it returns at once, few, each
// invocation's loops within the device's bound.
UINT TieGroups(const Choice& c, UINT64 items, UINT64 cost, UINT gpu) {
  if (c.caps.type != VK_PHYSICAL_DEVICE_TYPE_CPU) return gpu;
  const UINT64 perGroup = UINT64(c.caps.groupSize) * std::max<UINT64>(1, c.caps.maxLoop / 2 / cost);
  return c.Groups(std::max(kCpuTieGroups, (items + perGroup - 1) / perGroup));
}

}  // namespace

bool ChooseTies(Choice& c, const Plan& plan, Result* result) {
  std::string atomic;
  if (!AtomicModule(c, &atomic) ||
      !TiesModule(c.op.reduce, c.base[VKDML_SPEC_ELEMENT_KIND], c.elemSize, c.large, &atomic))
    return false;
  *result = [&]() -> Result {
    UINT slot = 0;
    VKDML_TRY(c.Slot(plan, &slot));
    Step step;
    step.kind = Pass::Kind::Reduce;
    step.plain = c.Elementwise(atomic, plan, slot, c.elemSize);
    c.set.steps.push_back(step);
    step.kind = Pass::Kind::Ties;
    step.plain = c.Elementwise(TiesFirstModule(c.elemSize, c.indexSize), plan, slot, c.elemSize);
    step.plain.groups = TieGroups(c, plan.count, 1, step.plain.groups);
    c.set.steps.push_back(step);
    const UINT64 targets = c.op.outputs[0].Span();
    step.plain = c.Elementwise(TiesWriteModule(c.elemSize), plan, slot, c.elemSize);
    step.plain.end = UINT(targets);  // fewer than 2^32 off the large path
    step.plain.groups = TieGroups(c, targets, 1, c.Groups(targets / c.caps.groupSize + 1));
    c.set.steps.push_back(step);
    c.set.tiePositionWords = targets;
    c.set.tieMarkWords = VKDML_TIES_BITS + (targets + 31) / 32;
    return {};
  }();
  return true;
}

void ListTiesModules(const ModuleSink& sink) {
  ForEachCapabilities([&](const Capabilities& caps) {
    for (UINT index : {4u, 8u})
      for (UINT elem : {4u, 8u})
        for (UINT reduce : {VKDML_REDUCE_FUNCTION_MAX, VKDML_REDUCE_FUNCTION_MIN}) {
          std::string atomic;
          if (AtomicModule(elem, index, VKDML_KIND_FLOAT, reduce, caps, &atomic) &&
              TiesModule(reduce, VKDML_KIND_FLOAT, elem, false, &atomic))
            sink(atomic);
          sink(TiesFirstModule(elem, index));
        }
  });
  for (UINT elem : {4u, 8u}) sink(TiesWriteModule(elem));
}

}  // namespace vkdml::detail
