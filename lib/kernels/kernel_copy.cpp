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

// "gather_step_e4_i64", "gather_step_e2p_i32" (glsl/gather_step.comp).
std::string StepModule(const std::string& elem, UINT indexSize) {
  return Str("gather_step_", elem, IndexSuffix(indexSize));
}

// Elements an invocation of glsl/gather_step.comp moves, in steps of StepElements.
constexpr UINT kStepUnroll = 8;

}  // namespace

UINT StepElements(UINT indexSize) {
  return VKDML_VECTOR_BYTES / indexSize;
}

bool StepPlan(const Plan& plan, UINT elemSize, UINT indexSize, Plan* out) {
  if ((elemSize != 2 && elemSize != 4) || plan.tuple != 1 || plan.rank == 0) return false;
  const UINT step = StepElements(indexSize), last = plan.rank - 1;
  if (plan.direct[last] != 1 || plan.indices[last] != 1 || plan.sizes[last] % step ||
      UINT64(plan.indexed[last]) * step > 0xFFFFFFFFu ||
      UINT64(plan.position[last]) * step > 0xFFFFFFFFu)
    return false;
  for (UINT d = 0; d < last; ++d)
    if (plan.direct[d] % step || plan.indices[d] % step) return false;
  Plan p = plan;
  p.sizes[last] /= step;
  p.direct[last] = step;
  p.indexed[last] *= step;
  p.indices[last] = step;
  p.position[last] *= step;
  p.count = plan.count / step;
  *out = p;
  return true;
}

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
  } else if (pass.kind == Pass::Kind::Gather && !c.large && !pass.maskSkip &&
             StepPlan(plan, c.elemSize, c.indexSize, &wide)) {
    // Or an index per element along a contiguous last dimension: a step of a uvec4 of indices
    // an invocation (glsl/gather_step.comp), where IndicesTensor starts on 16 bytes and
    // OutputTensor on a step's bytes (and InputTensor: the check is both sides').
    UINT stepSlot = 0;
    VKDML_TRY(c.Slot(wide, &stepSlot));
    step.hasWide = true;
    step.wide =
        c.Elementwise(StepModule(c.Elem(c.elemSize), c.indexSize), wide, stepSlot, c.elemSize);
    // (Small work a step an invocation, as Unroll leaves it: spread over more multiprocessors.)
    const UINT unroll =
        step.wide.spec[VKDML_SPEC_UNROLL] == 1 ? 1 : kStepUnroll / StepElements(c.indexSize);
    step.wide.spec[VKDML_SPEC_UNROLL] = unroll;
    const UINT64 perGroup = UINT64(c.caps.groupSize) * unroll;
    step.wide.groups = c.Groups((wide.count + perGroup - 1) / perGroup);
    step.wide.align = StepElements(c.indexSize) * c.elemSize;
    step.wide.indexAlign = VKDML_VECTOR_BYTES;
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
    for (const std::string& elem : ElemTokens({2, 4})) sink(StepModule(elem, index));
    sink(CopyModule(Pass::Kind::Mark, "", index, false));  // the large path copies everything
  }
}

}  // namespace vkdml::detail
