// A deterministic float MAX or MIN (float16, float32, float64): the default mode's atomic kernel,
// marking the targets it sets to a zero or a NaN (glsl/ties.glsl), then glsl/scatter_ties.comp
// over the updates (each such target's first update of that kind) and over OutputTensor (its
// write); both return at once where nothing was marked.
#include <algorithm>

#include "kernels/kernel_choice.h"

namespace vkdml::detail {

namespace {

constexpr UINT64 kCpuTieGroups = 16;  // CPU devices: workgroups of a tie pass, at least

// elem: the element token (ElemToken: float16 may be packed in words).
std::string TiesFirstModule(const std::string& elem, UINT indexSize) {
  return Str("ties_first_", elem, IndexSuffix(indexSize));
}
std::string TiesWriteModule(const std::string& elem) {
  return Str("ties_write_", elem);
}

// The atomic kernel marking ties: 2- and 4-byte elements (float16 and float32: compare-and-swap
// on the words that hold them) on every device, 8-byte ones with 64-bit atomics; not on the
// large path.
bool TiesModule(UINT reduce, UINT kind, bool large, std::string* atomic) {
  const bool maxOrMin = reduce == VKDML_REDUCE_FUNCTION_MAX || reduce == VKDML_REDUCE_FUNCTION_MIN;
  if (!maxOrMin || kind != VKDML_KIND_FLOAT || large) return false;
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
      !TiesModule(c.op.reduce, c.base[VKDML_SPEC_ELEMENT_KIND], c.large, &atomic))
    return false;
  const std::string elem = c.Elem(c.elemSize);
  *result = [&]() -> Result {
    UINT slot = 0;
    VKDML_TRY(c.Slot(plan, &slot));
    Step step;
    step.kind = Pass::Kind::Reduce;
    step.plain = c.Elementwise(atomic, plan, slot, c.elemSize);
    c.set.steps.push_back(step);
    step.kind = Pass::Kind::Ties;
    step.plain = c.Elementwise(TiesFirstModule(elem, c.indexSize), plan, slot, c.elemSize);
    step.plain.groups = TieGroups(c, plan.count, 1, step.plain.groups);
    c.set.steps.push_back(step);
    const UINT64 targets = c.op.outputs[0].Span();
    step.plain = c.Elementwise(TiesWriteModule(elem), plan, slot, c.elemSize);
    step.plain.end = UINT(targets);  // fewer than 2^32 off the large path
    step.plain.groups = TieGroups(c, targets, 1, c.Groups(targets / c.caps.groupSize + 1));
    c.set.steps.push_back(step);
    c.set.tiePositionWords = targets;
    c.set.wordAtomics = c.elemSize < 4;  // float16's compare-and-swap on 4-byte words
    c.set.tieMarkWords = VKDML_TIES_BITS + (targets + 31) / 32;
    return {};
  }();
  return true;
}

void ListTiesModules(const ModuleSink& sink) {
  ForEachCapabilities([&](const Capabilities& caps) {
    for (UINT index : {4u, 8u})
      for (UINT elem : {2u, 4u, 8u})
        for (UINT reduce : {VKDML_REDUCE_FUNCTION_MAX, VKDML_REDUCE_FUNCTION_MIN}) {
          std::string atomic;
          if (AtomicModule(elem, index, VKDML_KIND_FLOAT, reduce, caps, &atomic) &&
              TiesModule(reduce, VKDML_KIND_FLOAT, false, &atomic))
            sink(atomic);
          sink(TiesFirstModule(ElemToken(elem, caps), index));
          sink(TiesWriteModule(ElemToken(elem, caps)));
        }
  });
}

}  // namespace vkdml::detail
