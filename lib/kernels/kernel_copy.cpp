// The indexed copy (glsl/indexed.comp): a copy, ScatterND's mark, a scatter without a reduction,
// ExcludeSelf's reset of a scatter's targets, and checked mode's report (glsl/report.comp).
#include "kernels/kernel_choice.h"

namespace vkdml::detail {

namespace {

// "gather_e4_i32", "scatter_e16_i64_large", "mark_i32": the pass's kind, its element token
// (ElemToken; not a mark's: it marks 4-byte words), the indices' size and the large path.
std::string CopyModule(Pass::Kind kind, const std::string& elem, UINT indexSize, bool large) {
  const std::string name = kind == Pass::Kind::Mark     ? "mark"
                           : kind == Pass::Kind::Gather ? Str("gather_", elem)
                                                        : Str("scatter_", elem);
  return name + IndexSuffix(indexSize) + LargeSuffix(large);
}

std::string ReportModule(UINT indexSize, bool large) {
  return Str("report", IndexSuffix(indexSize), LargeSuffix(large));
}

}  // namespace

Result ChooseCopy(Choice& c, const Pass& pass) {
  Step step;
  step.kind = pass.kind;
  step.skipInPlace = pass.skipInPlace;
  Plan plan = pass.plan;
  plan.Simplify();
  const bool lines = LinesFit(c, pass, plan);
  if (c.caps.kernels == Capabilities::Kernels::Cpu && pass.kind != Pass::Kind::Mark && !lines &&
      !c.large)
    return ChooseRuns(c, pass, plan);
  Plan striped;
  if (pass.kind == Pass::Kind::Gather && !c.large && plan.Stripe(c.elemSize, &striped))
    plan = striped;
  UINT slot = 0;
  VKDML_TRY(c.Slot(plan, &slot));
  if (lines) {  // a workgroup per output line
    step.plain = LinesCopy(c, plan, slot);
    c.set.steps.push_back(step);
    return {};
  }
  step.plain = c.Elementwise(CopyModule(pass.kind, c.Elem(c.elemSize), c.indexSize, c.large), plan,
                             slot, c.elemSize);
  step.plain.spec[VKDML_SPEC_MASK_SKIP] = pass.maskSkip && !c.large;
  VKDML_TRY(ChooseLargeDispatches(c, plan, pass.kind, &step.plain));
  // The same pass moving uvec4s where the plan widens (usable where the bindings align).
  Plan wide;
  if (pass.kind != Pass::Kind::Mark && plan.Widen(c.elemSize, VKDML_VECTOR_BYTES, &wide)) {
    UINT wideSlot = 0;
    VKDML_TRY(c.Slot(wide, &wideSlot));
    step.hasWide = true;
    step.wide =
        c.Elementwise(CopyModule(pass.kind, c.Elem(VKDML_VECTOR_BYTES), c.indexSize, c.large), wide,
                      wideSlot, VKDML_VECTOR_BYTES);
    step.wide.spec[VKDML_SPEC_MASK_SKIP] = pass.maskSkip && !c.large;
    VKDML_TRY(ChooseLargeDispatches(c, wide, pass.kind, &step.wide));
  }
  c.set.steps.push_back(step);
  return {};
}

Result ChooseReset(Choice& c, const Pass& pass) {
  Plan plan = pass.plan;
  plan.Simplify();
  Step step;
  step.kind = Pass::Kind::Scatter;
  UINT slot = 0;
  VKDML_TRY(c.Slot(plan, &slot));
  step.plain =
      c.Elementwise(CopyModule(Pass::Kind::Scatter, c.Elem(c.elemSize), c.indexSize, c.large), plan,
                    slot, c.elemSize);
  step.plain.spec[VKDML_SPEC_CONSTANT] = 1;
  VKDML_TRY(ChooseLargeDispatches(c, plan, Pass::Kind::Scatter, &step.plain));
  c.set.steps.push_back(step);
  return {};
}

Result ChooseReport(Choice& c) {
  const Tensor& indices = c.op.Indices();
  Plan walk;  // IndicesTensor's elements, row-major
  for (UINT d = 0; d < indices.dims; ++d)
    walk.AddDim(indices.sizes[d], 0, 0, indices.strides[d], 0);
  Kernel& k = c.set.report;
  k.module = ReportModule(c.indexSize, c.large);
  k.spec = c.Spec(walk);
  k.spec[VKDML_SPEC_CHECKED] = false;
  k.slot = VKDML_REPORT_SLOT;
  k.unit = c.elemSize;
  k.groups = 1;
  c.set.plans[VKDML_REPORT_SLOT] = Pack(walk);
  if (!c.large) return {};
  // A dispatch per window of IndicesTensor, the one owning the recorded index reading it.
  k.indexedTensor = Role::Indices;
  k.indexedUnit = c.indexSize;
  LargeDispatch d;
  d.count = d.groups = 1;
  k.large = PerWindow(Windows(c.caps, indices), d);
  return {};
}

void ListCopyModules(const ModuleSink& sink) {
  for (UINT index : {4u, 8u}) {
    for (bool large : {false, true}) {
      for (const std::string& elem : ElemTokens({1, 2, 4, 8, VKDML_VECTOR_BYTES}))
        for (Pass::Kind kind : {Pass::Kind::Gather, Pass::Kind::Scatter})
          sink(CopyModule(kind, elem, index, large));
      sink(ReportModule(index, large));
    }
    sink(CopyModule(Pass::Kind::Mark, "", index, false));  // the large path copies everything
  }
}

}  // namespace vkdml::detail
