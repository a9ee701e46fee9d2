// A workgroup per output line (glsl/scatter_lines.comp, glsl/scatter_lines_ordered.comp):
// ScatterElements along its innermost axis, with or without a reduction.
#include <algorithm>

#include "kernels/kernel_choice.h"

namespace vkdml::detail {

namespace {

// Shared memory a line may take (less where the device's limit is): 48 KiB leaves room for
// several workgroups per multiprocessor.
constexpr UINT64 kMaxLineBytes = 48 << 10;
constexpr UINT kLinesUnroll = 4;

UINT64 LineBytes(const Capabilities& caps) {
  return std::min(kMaxLineBytes, caps.maxSharedMemory);
}

// "lines_e4_i32" (a copy), "lines_reduce_e4_i32_dp" (through shared memory),
// "lines_ordered_e8_i64_f64" (in order): floatSuffix as FloatSuffix gives it.
std::string LinesModule(const char* what, const std::string& elem, UINT indexSize,
                        const std::string& floatSuffix) {
  return Str("lines_", what, elem, IndexSuffix(indexSize), floatSuffix);
}

// What the line kernels share.
Kernel LineKernel(const Choice& c, const std::string& module, const Plan& plan, UINT slot) {
  Kernel k;
  k.module = module;
  k.spec = c.Spec(plan);
  k.spec[VKDML_SPEC_LINE_LENGTH] = plan.tupleSize[0];
  k.spec[VKDML_SPEC_GROUP_SIZE] = c.caps.maxLinesGroupSize;
  k.slot = slot;
  k.unit = c.elemSize;
  k.groups = c.Groups(plan.count / plan.sizes[plan.rank - 1]);
  return k;
}

// Whether each invocation's loops stay within the device's bound (Capabilities::maxLoop, summed
// over the invocation): a workgroup takes ceil(lines / groups) lines, and a thread's loops over
// a line are bounded by a few times its updates and targets (its loops, its 16-bit float
// arithmetic's). lavapipe ends them past 65535 (seen as an integrated GPU, one workgroup folding
// 72 lines of 957 updates went wrong there); unbounded on GPUs.
bool WithinLoopBound(const Choice& c, const Plan& plan) {
  if (c.caps.maxLoop == UINT64(-1)) return true;
  const UINT64 perLine = plan.sizes[plan.rank - 1], length = plan.tupleSize[0];
  if (perLine == 0) return true;
  const UINT64 lines = plan.count / perLine;
  const UINT64 groups = c.Groups(lines);
  return (lines + groups - 1) / groups * (4 * (perLine + length) + 64) <= c.caps.maxLoop;
}

}  // namespace

bool LinesFit(const Choice& c, const Pass& pass, const Plan& plan) {
  return pass.lines && !c.large && c.caps.lines != Capabilities::Lines::Never &&
         plan.Lines(c.elemSize, LineBytes(c.caps), c.caps.lines == Capabilities::Lines::Always) &&
         WithinLoopBound(c, plan);
}

Kernel LinesCopy(const Choice& c, const Plan& plan, UINT slot) {
  Kernel k = LineKernel(c, LinesModule("", c.Elem(c.elemSize), c.indexSize, ""), plan, slot);
  k.spec[VKDML_SPEC_UNROLL] = kLinesUnroll;
  return k;
}

// With REDUCE (elements of up to 4 bytes), where the line kernels are chosen: for ADD and
// MULTIPLY, where every update writes; MAX and MIN leave most targets as they are, and the
// plain atomics skip those writes (examples/bench/PERF_NOTES.md, v22).
bool ChooseSharedLines(Choice& c, const Plan& plan) {
  const bool everyUpdateWrites =
      c.op.reduce == VKDML_REDUCE_FUNCTION_ADD || c.op.reduce == VKDML_REDUCE_FUNCTION_MULTIPLY;
  const bool always = c.caps.lines == Capabilities::Lines::Always;
  const bool wanted =
      always || (c.caps.lines == Capabilities::Lines::WhenBetter && everyUpdateWrites);
  if (!wanted || c.elemSize > 4 || !plan.Lines(c.elemSize, LineBytes(c.caps), always) ||
      !WithinLoopBound(c, plan))
    return false;
  // A mean counts each target's updates beside its slot, in 16 bits (a line's updates below
  // 2^16): a line's 4-byte slots then take half as much again; where they don't fit, its
  // count and division are passes of their own (kernel_mean.cpp).
  const bool mean = c.op.mean && plan.sizes[plan.rank - 1] <= 0xFFFF &&
                    plan.Lines(c.elemSize, LineBytes(c.caps) * 2 / 3, always);
  UINT slot = 0;
  if (!c.Slot(plan, &slot).ok()) return false;
  Step step;
  step.kind = Pass::Kind::Reduce;
  step.plain = LineKernel(
      c, LinesModule("reduce_", c.Elem(c.elemSize), c.indexSize, FloatSuffix(c)), plan, slot);
  step.plain.spec[VKDML_SPEC_UNROLL] = kLinesUnroll;
  c.FoldMean(step.plain, mean);
  c.set.steps.push_back(step);
  return true;
}

// When a line's buckets (or its sorted keys) fit in shared memory (deterministic executions; on
// GPUs, where the line kernels are used).
bool ChooseOrderedLines(Choice& c, const Plan& plan) {
  constexpr UINT64 kMaxItems = 64;  // a thread's updates, held in registers
  if (!plan.LineShaped()) return false;
  const UINT length = plan.tupleSize[0], perLine = plan.sizes[plan.rank - 1];
  UINT sortSize = 1;  // keys of a line sorted whole: the power of two at or above perLine
  while (sortSize < perLine) sortSize *= 2;
  const UINT maxGroup = c.caps.maxLinesGroupSize;
  UINT group = 32;  // a thread per target and per pair of keys, up to the device's limit
  while (group < std::max(length, sortSize / 2) && group < maxGroup) group *= 2;
  group = std::min({group, maxGroup, VKDML_LINES_MAX_GROUP});
  const UINT64 items = (UINT64(perLine) + group - 1) / group;
  const UINT64 words = VKDML_ORDERED_SHARED_WORDS(UINT64(length), UINT64(perLine), sortSize);
  // Not on CPU devices, where its barriers cost more than the sort (PERF_NOTES.md, v22).
  if (c.caps.lines == Capabilities::Lines::Never || length > 0x10000 || perLine > 0xFFFF ||
      items > kMaxItems || words * 4 > LineBytes(c.caps) || !WithinLoopBound(c, plan))
    return false;
  UINT slot = 0;
  if (!c.Slot(plan, &slot).ok()) return false;
  Step step;
  step.kind = Pass::Kind::Ordered;
  step.plain = LineKernel(
      c, LinesModule("ordered_", c.Elem(c.elemSize), c.indexSize, FloatSuffix(c)), plan, slot);
  step.plain.spec[VKDML_SPEC_UNIT] = perLine;
  step.plain.spec[VKDML_SPEC_UNROLL] = sortSize;
  step.plain.spec[VKDML_SPEC_GROUP_SIZE] = group;
  step.plain.spec[VKDML_SPEC_ITEMS] = UINT(items);
  c.FoldMean(step.plain, c.op.mean);  // a target's bucket or run is its count
  c.set.steps.push_back(step);
  return true;
}

void ListLinesModules(const ModuleSink& sink) {
  ForEachCapabilities([&](const Capabilities& caps) {
    for (UINT index : {4u, 8u})
      for (UINT elem : {1u, 2u, 4u, 8u}) {
        const std::string token = ElemToken(elem, caps);
        sink(LinesModule("", token, index, ""));
        for (UINT reduce : kReduceFunctions)
          for (UINT kind : kElementKinds) {
            const std::string suffix = FloatSuffix(reduce, kind, elem, caps);
            if (elem <= 4) sink(LinesModule("reduce_", token, index, suffix));
            sink(LinesModule("ordered_", token, index, suffix));
          }
      }
  });
}

}  // namespace vkdml::detail
