// A scatter mean (VKDML_REDUCE_FUNCTION_MEAN) after its sum, which the ADD reduction's kernels
// compute: glsl/indexed.comp (TALLY_PASS) counts each OutputTensor element's updates in the
// scratch, then glsl/mean.comp divides each element that has any. Not on the large path
// (CheckLargePath refuses it).
#include "kernel_choice.h"

namespace vkdml::detail {

namespace {

std::string TallyModule(UINT indexSize) {
  return Str("tally", IndexSuffix(indexSize));
}
// elem: the element token (ElemToken: 1- and 2-byte elements may be packed in words).
std::string MeanModule(const std::string& elem) {
  return Str("mean_", elem);
}

}  // namespace

Result ChooseMean(Choice& c, const Pass& pass) {
  Plan plan = pass.plan;
  plan.Simplify();
  const bool self = !c.op.excludeSelf;
  if (self && plan.count >= 0xFFFFFFFFu)  // a target's count, plus its input, must fit 32 bits
    return Fail(Status::Unsupported, c.op.name,
                ": VKDML_REDUCE_FUNCTION_MEAN over 2^32 - 1 or more update elements is not "
                "supported");
  UINT slot = 0;
  VKDML_TRY(c.Slot(plan, &slot));
  Step step;
  step.kind = Pass::Kind::Scatter;  // bound as the scatter is
  step.plain = c.Elementwise(TallyModule(c.indexSize), plan, slot, c.elemSize);
  c.set.steps.push_back(step);
  const UINT64 targets = c.op.outputs[0].Span();  // fewer than 2^32 off the large path
  step.plain = c.Elementwise(MeanModule(c.Elem(c.elemSize)), plan, slot, c.elemSize);
  step.plain.spec[VKDML_SPEC_SELF] = self;
  step.plain.end = UINT(targets);
  step.plain.groups = c.Groups(targets / c.caps.groupSize + 1);
  c.set.steps.push_back(step);
  c.set.tallyWords = targets;
  return {};
}

void ListMeanModules(const ModuleSink& sink) {
  for (UINT index : {4u, 8u}) sink(TallyModule(index));
  for (const std::string& elem : ElemTokens({1, 2, 4, 8})) sink(MeanModule(elem));
}

}  // namespace vkdml::detail
