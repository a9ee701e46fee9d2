// A scatter mean (VKDML_REDUCE_FUNCTION_MEAN) after its sum, which the ADD reduction's kernels
// compute: glsl/indexed.comp (TALLY_PASS) counts the update units of each target slot in the
// scratch, over the operator's keys (a ScatterND slice is one unit: one count for all its
// elements), then glsl/mean.comp divides each OutputTensor element whose slot has any. Not
// where the sum's own kernel divides (Choice::meanInFold: the ordered fold and the line
// kernels, kernel_reduce.cpp and kernel_lines.cpp), nor on the large path (CheckLargePath
// refuses it).
#include "kernels/kernel_choice.h"

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

Result ChooseMean(Choice& c) {
  Plan keys = c.op.keys, walk = c.op.slotWalk;
  keys.Simplify();
  walk.Simplify();
  const bool self = !c.op.excludeSelf;
  if (self && keys.count >= 0xFFFFFFFFu)  // a slot's count, plus the input, must fit 32 bits
    return Fail(Status::Unsupported, c.op.name,
                ": VKDML_REDUCE_FUNCTION_MEAN over 2^32 - 1 or more update units is not "
                "supported");
  Step step;
  step.kind = Pass::Kind::Scatter;  // bound as the scatter is
  UINT slot = 0;
  VKDML_TRY(c.Slot(keys, &slot));
  step.plain = c.Elementwise(TallyModule(c.indexSize), keys, slot, c.elemSize);
  c.set.steps.push_back(step);
  VKDML_TRY(c.Slot(walk, &slot));
  step.plain = c.Elementwise(MeanModule(c.Elem(c.elemSize)), walk, slot, c.elemSize);
  step.plain.spec[VKDML_SPEC_SELF] = self;
  c.set.steps.push_back(step);
  c.set.tallyWords = c.op.slots;
  return {};
}

void ListMeanModules(const ModuleSink& sink) {
  for (UINT index : {4u, 8u}) sink(TallyModule(index));
  for (const std::string& elem : ElemTokens({1, 2, 4, 8})) sink(MeanModule(elem));
}

}  // namespace vkdml::detail
