// CPU devices' indexed copy (glsl/indexed_runs.comp): an invocation per run of the plan's last
// dimension.
#include <algorithm>

#include "kernels/kernel_choice.h"

namespace vkdml::detail {

namespace {

// Threads in a workgroup; a run's elements (the widest the plan moves) at most, and at least
// while halving them to reach kMinRuns invocations, so long as each workgroup keeps
// kMinGroupElements elements: waking another CPU thread for less costs more than it saves
// (examples/bench/PERF_NOTES.md, v33).
constexpr UINT kRunsGroup = 64;
constexpr UINT kMaxRun = 256, kMinRun = 8, kMinRuns = 4096;
constexpr UINT64 kMinGroupElements = 8192;
constexpr UINT kRunVectorBytes = 32;  // its VECTOR steps' accesses: u64vec4
// Lines of at most kShortLine (widest) elements that share one index go kRunLines to an
// invocation, their reads from memory waiting together (PERF_NOTES.md, v34).
constexpr UINT kShortLine = 8, kRunLines = 8;

// "runs_gather_e4_i32", "runs_vec_scatter_e2_i64": VECTOR moves a u64vec4 of indices and direct
// side at a time; `elem` is the token (ElemToken) of the elements it moves (e32: u64vec4s).
std::string RunsModule(bool vector, Pass::Kind kind, const std::string& elem, UINT indexSize) {
  return Str(vector ? "runs_vec_" : "runs_", kind == Pass::Kind::Gather ? "gather" : "scatter", "_",
             elem, IndexSuffix(indexSize));
}

// glsl/indexed_runs.comp's VECTOR steps: elements a step moves (its kStep).
UINT VectorStep(UINT elemSize) {
  return std::max(kRunVectorBytes / elemSize, 8u);
}

// Whether the plan's runs can go a step at a time (VECTOR): 64-bit integers on the device, one
// index component per element, IndicesTensor and the direct side contiguous along the last
// dimension, lines of whole steps, and every step's indices and direct side starting on a
// u64vec4 (the bindings' offsets too: Kernel::align, indexAlign).
bool VectorShaped(const Choice& c, const Plan& plan) {
  const UINT last = plan.rank - 1;
  if (!c.caps.int64 || c.elemSize > 8 || plan.tuple != 1 || plan.direct[last] != 1 ||
      plan.indices[last] != 1 || plan.sizes[last] % VectorStep(c.elemSize))
    return false;
  for (UINT d = 0; d < last; ++d)
    if (plan.direct[d] % (kRunVectorBytes / c.elemSize) ||
        plan.indices[d] % (kRunVectorBytes / c.indexSize))
      return false;
  return true;
}

// How a plan is cut into runs.
struct RunShape {
  bool vector = false;  // VectorShaped
  UINT wideBytes = 0;   // the widened plan's element bytes (0: none)
  UINT per = 1;         // elements in a wide element
  UINT length = 0;      // the last dimension, in wide elements
  UINT lines = 0;       // the plan's lines (its other dimensions)
  UINT run = 0;         // a run's wide elements
  UINT64 Runs(UINT r) const { return UINT64(lines) * ((length + r - 1) / r); }
  UINT64 RunGroups(UINT r) const { return (Runs(r) + kRunsGroup - 1) / kRunsGroup; }
};

// Runs long enough to pay for their offsets, short enough to leave many invocations, and within
// the device's loop bound.
RunShape Shape(const Choice& c, const Plan& plan, Plan* wide) {
  RunShape s;
  const UINT last = plan.rank - 1;
  s.vector = VectorShaped(c, plan);
  for (UINT bytes : {c.caps.int64 ? 32u : 0u, UINT(VKDML_VECTOR_BYTES)})
    if (!s.vector && !s.wideBytes && bytes && bytes / c.elemSize <= c.caps.maxLoop &&
        plan.Widen(c.elemSize, bytes, wide))
      s.wideBytes = bytes;
  s.per = s.wideBytes ? s.wideBytes / c.elemSize : 1;
  const UINT step = s.vector ? VectorStep(c.elemSize) : 1;  // a run's elements: a multiple
  // Off the large path the loop has fewer than 2^32 elements.
  s.length = plan.sizes[last] / s.per;
  s.lines = UINT(plan.count / plan.sizes[last]);
  s.run = UINT(std::min<UINT64>({s.length, kMaxRun, std::max<UINT64>(1, c.caps.maxLoop / s.per)}));
  while (s.run / 2 >= std::max(kMinRun, step) && (s.run / 2) % step == 0 &&
         s.Runs(s.run) < kMinRuns && plan.count / s.RunGroups(s.run / 2) >= kMinGroupElements)
    s.run /= 2;
  return s;
}

}  // namespace

// Its wide kernel, where the plan allows: GatherElements- and ScatterElements-shaped runs a
// u64vec4 of indices and direct side at a time (VectorShaped; shaderInt64), else the plan
// widened to u64vec4 (shaderInt64) or uvec4 elements. A dispatch takes at most maxGroups
// workgroups, and the next one goes on from there.
Result ChooseRuns(Choice& c, const Pass& pass, Plan plan) {
  if (plan.rank == 0) plan.AddDim(1, 0, 0, 0, 0);
  Plan striped;
  if (pass.kind == Pass::Kind::Gather && plan.Stripe(c.elemSize, &striped)) plan = striped;
  const UINT last = plan.rank - 1;
  Plan wide;
  const RunShape s = Shape(c, plan, &wide);
  const bool indexed = plan.indices[last] != 0 && (plan.tuple > 0 || pass.maskSkip);
  const UINT perInvocation =  // runs
      !s.vector && !indexed && s.run == s.length && s.length <= kShortLine ? kRunLines : 1;
  const auto make = [&](bool vector, const Plan& p, UINT unit, UINT elements, Kernel* k) -> Result {
    k->module = RunsModule(vector, pass.kind, c.Elem(unit), c.indexSize);
    k->spec = c.Spec(p);
    k->spec[VKDML_SPEC_GROUP_SIZE] = kRunsGroup;
    k->spec[VKDML_SPEC_RUN] = elements;
    k->spec[VKDML_SPEC_RUN_INDEXED] = indexed;
    k->spec[VKDML_SPEC_MASK_SKIP] = pass.maskSkip;
    k->spec[VKDML_SPEC_RUN_LINES] = perInvocation;
    k->unit = unit;
    Plan r = p;  // its last dimension counts runs
    const UINT n = p.sizes[last];
    r.sizes[last] = (n + elements - 1) / elements;
    r.count = p.count / n * r.sizes[last];
    VKDML_TRY(c.Slot(r, &k->slot));
    c.set.plans[k->slot].lineLength = n;
    return {};
  };
  Kernel plain, wider;
  VKDML_TRY(make(false, plan, c.elemSize, s.run * s.per, &plain));
  if (s.vector) {
    VKDML_TRY(make(true, plan, c.elemSize, s.run, &wider));
    wider.align = wider.indexAlign = kRunVectorBytes;
  } else if (s.wideBytes) {
    VKDML_TRY(make(false, wide, s.wideBytes, s.run, &wider));
  }
  const UINT64 runs = s.Runs(s.run);
  const UINT64 perDispatch = UINT64(c.caps.maxGroups) * kRunsGroup * perInvocation;  // runs
  for (UINT64 begin = 0; begin < runs; begin += perDispatch) {
    Step step;
    step.kind = pass.kind;
    step.skipInPlace = pass.skipInPlace;
    step.plain = plain;
    step.hasWide = s.vector || s.wideBytes;
    step.wide = wider;
    step.plain.begin = step.wide.begin = UINT(begin);
    const UINT64 n = std::min<UINT64>(perDispatch, runs - begin);
    const UINT64 group = UINT64(kRunsGroup) * perInvocation;
    step.plain.groups = step.wide.groups = c.Groups((n + group - 1) / group);
    c.set.steps.push_back(step);
  }
  return {};
}

void ListRunsModules(const ModuleSink& sink) {
  for (UINT index : {4u, 8u})
    for (Pass::Kind kind : {Pass::Kind::Gather, Pass::Kind::Scatter}) {
      for (const std::string& elem : ElemTokens({1, 2, 4, 8, VKDML_VECTOR_BYTES, kRunVectorBytes}))
        sink(RunsModule(false, kind, elem, index));
      for (const std::string& elem : ElemTokens({1, 2, 4, 8}))
        sink(RunsModule(true, kind, elem, index));
    }
}

}  // namespace vkdml::detail
