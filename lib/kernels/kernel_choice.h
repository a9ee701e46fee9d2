// What kernel choice's families share (kernels.cpp reads them top to bottom): the operator, the
// device's capabilities and the KernelSet being built, with the helpers every family uses. Each
// family's file owns its module names, specialization constants and dispatch sizes:
//   kernel_copy.cpp     the indexed copy (glsl/indexed.comp): copies, marks, plain scatters
//   kernel_runs.cpp     CPU devices' indexed copy (glsl/indexed_runs.comp)
//   kernel_lines.cpp    a workgroup per output line (glsl/scatter_lines*.comp)
//   kernel_reduce.cpp   scatters with a reduction: atomics, and the sort with its ordered fold
//   kernel_ties.cpp     deterministic float MAX and MIN: atomics, then the ties' passes
//   kernel_mean.cpp     a mean's count and division, after its sum (the ADD reduction's)
//   kernel_quantized.cpp  quantized rows (glsl/dequantize_rows.comp, quantize_rows.comp)
//   kernel_bag.cpp      embedding bags (glsl/embedding_bag.comp)
//   kernel_blocks.cpp   block-quantized gathers (glsl/dequantize_blocks.comp)
//   kernel_moe.cpp      MoE permute and unpermute (glsl/moe.comp, glsl/radix_sort.comp)
//   kernel_paged.cpp    paged KV caches' writes and gathers (glsl/paged.comp)
//   kernel_segment.cpp  segment reductions (glsl/segment_reduce.comp)
//   kernel_large.cpp    the large path: dispatches through windows of the binding range
// Each also lists every module name it can ask for (its ListModules), which the build checks
// against the modules it makes (kernels.h: MissingModules).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kernels/capabilities.h"
#include "kernels/kernels.h"

namespace vkdml::detail {

// Receives a module name a family can ask for.
using ModuleSink = std::function<void(const std::string&)>;

// The index suffix of module names: "_i32" or "_i64" for 4- or 8-byte indices.
inline std::string IndexSuffix(UINT indexSize) {
  return Str("_i", indexSize * 8);
}
inline std::string LargeSuffix(bool large) {
  return large ? "_large" : "";
}
// A module name's element: "e4", or "e1p" and "e2p" for 1- and 2-byte elements packed in 32-bit
// words on a device without 8/16-bit storage (Capabilities::Packed; glsl/elem.glsl: WORDS).
inline std::string ElemToken(UINT elemSize, const Capabilities& caps) {
  return Str("e", elemSize, caps.Packed(elemSize) ? "p" : "");
}
// For the ListModules: the tokens of each size, packed and not.
std::vector<std::string> ElemTokens(std::initializer_list<UINT> sizes);
// Every reduction function, NONE (a deterministic scatter's) included: for the ListModules.
inline constexpr UINT kReduceFunctions[] = {VKDML_REDUCE_FUNCTION_NONE, VKDML_REDUCE_FUNCTION_ADD,
                                            VKDML_REDUCE_FUNCTION_MULTIPLY,
                                            VKDML_REDUCE_FUNCTION_MAX, VKDML_REDUCE_FUNCTION_MIN};
inline constexpr UINT kElementKinds[] = {VKDML_KIND_FLOAT, VKDML_KIND_SIGNED, VKDML_KIND_UNSIGNED};
// Workgroups for `work`, at least 1, at most maxGroups.
UINT Groups(UINT64 work, UINT maxGroups);
// The element kind (interface.h: VKDML_KIND_*) of a data type.
UINT Kind(DML_TENSOR_DATA_TYPE type);
// A plan as the kernels read it (interface.h: shader::PackedPlan).
shader::PackedPlan Pack(const Plan& plan);

class Choice {
 public:
  Choice(const OperatorImpl& op, UINT flags, const Capabilities& caps);

  const OperatorImpl& op;
  const Capabilities& caps;
  const UINT elemSize, indexSize;
  // A deterministic execution that the default mode's kernels do not already give (kernels.cpp).
  bool deterministic = false;
  bool large = false;  // the large path (kernel_large.cpp)
  // A scatter mean whose sum's kernel divides each target's sum itself (FoldMean): no count and
  // division passes after it (kernel_mean.cpp).
  bool meanInFold = false;
  // FILL or DROP (OperatorImpl::Drops): every family's kernels skip or fill dropped elements
  // (VKDML_SPEC_DROP) but the ordered line kernel's (glsl/scatter_lines_ordered.comp), which
  // clamps: a deterministic ScatterElements then takes the sort.
  bool drop = false;
  Specialization base = {};
  KernelSet set;

  // Where `mean`, k (the ordered fold, a line kernel) divides each target's sum by its count
  // (VKDML_SPEC_MEAN; the input in it unless ExcludeSelf), and meanInFold says so.
  void FoldMean(Kernel& k, bool mean) {
    k.spec[VKDML_SPEC_MEAN] = mean;
    k.spec[VKDML_SPEC_SELF] = mean && !op.excludeSelf;
    meanInFold = mean;
  }
  // Packs plan into the next plan slot.
  Result Slot(const Plan& plan, UINT* slot);
  // base with plan's rank and index tuple.
  Specialization Spec(const Plan& plan) const;
  // A kernel over plan (packed into `slot`) with a thread per loop element, VKDML_SPEC_UNROLL of
  // them at a time.
  Kernel Elementwise(std::string module, const Plan& plan, UINT slot, UINT unit) const;
  UINT Groups(UINT64 work) const { return detail::Groups(work, caps.maxGroups); }
  std::string IndexSuffix() const { return detail::IndexSuffix(indexSize); }
  std::string LargeSuffix() const { return detail::LargeSuffix(large); }
  std::string Elem(UINT size) const { return ElemToken(size, caps); }

 private:
  UINT next_ = 0;
};

// kernels.cpp: the scratch regions' offsets in set.scratchAt, one after another after checked
// mode's status words, as far as the set's sizes go so far; the words they take.
UINT64 LayScratch(KernelSet& set);

// kernel_copy.cpp: a copy, a mark or a scatter without a reduction.
Result ChooseCopy(Choice& c, const Pass& pass);
// The plan glsl/gather_step.comp walks, where a gather (before its widening) of 2- or 4-byte
// elements has an index per element along a contiguous last dimension of whole steps (a uvec4
// of indices: StepElements): that dimension in steps.
UINT StepElements(UINT indexSize);
bool StepPlan(const Plan& plan, UINT elemSize, UINT indexSize, Plan* out);
Result ChooseReport(Choice& c);  // checked mode's last dispatch
// ExcludeSelf: before a reduction's pass, each target it reaches set to the reduction's identity
// (the uniform's fill value) by the scatter's own walk, with VKDML_SPEC_CONSTANT.
Result ChooseReset(Choice& c, const Pass& pass);
void ListCopyModules(const ModuleSink& sink);

// kernel_runs.cpp: CPU devices' copy and plain scatter (plan simplified).
Result ChooseRuns(Choice& c, const Pass& pass, Plan plan);
void ListRunsModules(const ModuleSink& sink);

// kernel_lines.cpp: whether a pass (its plan simplified) goes to glsl/scatter_lines.comp; the
// line kernels' common setup; a reduction a line at a time, through shared memory or in order
// (false where they do not apply: the caller chooses another family).
bool LinesFit(const Choice& c, const Pass& pass, const Plan& plan);
Kernel LinesCopy(const Choice& c, const Plan& plan, UINT slot);
bool ChooseSharedLines(Choice& c, const Plan& plan);
bool ChooseOrderedLines(Choice& c, const Plan& plan);
void ListLinesModules(const ModuleSink& sink);

// kernel_reduce.cpp: a scatter with a reduction, or a deterministic one.
Result ChooseReduction(Choice& c, const Pass& pass);
// Whether a deterministic execution's scratch (its sort of every update unit at once, or the
// ties' positions and marks) fits one descriptor; if not, it takes the large path, which sorts
// in chunks.
bool DeterministicScratchFits(const OperatorImpl& op, const Capabilities& caps);
// The module suffix a reduction's float arithmetic needs (glsl/arith.glsl).
std::string FloatSuffix(const Choice& c);
std::string FloatSuffix(UINT reduce, UINT kind, UINT elemSize, const Capabilities& caps);
// The atomic kernel of a reduction on this device, where one can do it.
bool AtomicModule(const Choice& c, std::string* module);
bool AtomicModule(UINT elemSize, UINT indexSize, UINT kind, UINT reduce, const Capabilities& caps,
                  std::string* module);
void ListReduceModules(const ModuleSink& sink);

// glsl/radix_sort.comp's steps: a stable sort of `units` keys with their values by `digits`
// bytes of the key, from the first half of the scratch's keys and values (the result in the
// second half when digits is odd); the counts region grows to what they need.
void Sort(Choice& c, UINT units, UINT digits);

// kernel_ties.cpp: a deterministic float MAX or MIN through atomics and then the ties' passes,
// where that applies (false: the caller chooses another family).
bool ChooseTies(Choice& c, const Plan& plan, Result* result);
void ListTiesModules(const ModuleSink& sink);

// kernel_mean.cpp: a scatter mean's count of update units per target slot and its division,
// after the scatter pass's sum.
Result ChooseMean(Choice& c, const Pass& pass);
void ListMeanModules(const ModuleSink& sink);

// kernel_quantized.cpp: a Dequantize, Claim or Quantize pass (VKDML_OPERATOR_*_QUANTIZED_ROWS).
Result ChooseQuantized(Choice& c, const Pass& pass);
void ListQuantizedModules(const ModuleSink& sink);

// kernel_bag.cpp: an embedding bag's Bounds, Weights or Bag pass (VKDML_OPERATOR_EMBEDDING_BAG).
Result ChooseBag(Choice& c, const Pass& pass);
void ListBagModules(const ModuleSink& sink);
// A fold of `count` output invocations (an embedding bag's or a segment's): k's workgroups, and
// how many of each fold's entries one dispatch takes where loops are bounded
// (Capabilities::maxLoop summed over an invocation's loops, 1/share of it for the entries; at
// least `floor`; 2^32 - 1 where unbounded). k's end and to say "to the fold's end".
UINT64 FoldPart(const Choice& c, UINT64 count, UINT64 floor, UINT64 share, Kernel* k);
// Shared with segment reductions: where loops are bounded (`part` rows of a bag or segment a
// dispatch, of at most `chunk`), the step setting the later dispatches' workgroups from the
// longest the first recorded; and the fold's dispatches over [begin, end), `part` each.
Result ChooseBagDispatches(Choice& c, const Pass& pass, const Step& fold, UINT64 chunk, UINT64 part,
                           Step* out);
void AddBagFolds(Choice& c, Step fold, const Step& dispatches, UINT64 begin, UINT64 end,
                 UINT64 part);

// kernel_segment.cpp: a segment reduction's Segment or SegmentCheck pass
// (VKDML_OPERATOR_SEGMENT_REDUCE).
Result ChooseSegment(Choice& c, const Pass& pass);
void ListSegmentModules(const ModuleSink& sink);

// kernel_blocks.cpp: a block-quantized gather's Scales, ZeroPoints or Blocks pass
// (VKDML_OPERATOR_GATHER_BLOCK_QUANTIZED).
Result ChooseBlocks(Choice& c, const Pass& pass);
void ListBlocksModules(const ModuleSink& sink);

// kernel_moe.cpp: a MoE permute's or unpermute's pass (VKDML_OPERATOR_MOE_PERMUTE, _UNPERMUTE).
Result ChooseMoe(Choice& c, const Pass& pass);
void ListMoeModules(const ModuleSink& sink);
// kernel_paged.cpp: a paged cache's pass (VKDML_OPERATOR_PAGED_CACHE_WRITE and _GATHER), the
// write's copy of the cache included.
Result ChoosePaged(Choice& c, const Pass& pass);
void ListPagedModules(const ModuleSink& sink);

// kernel_large.cpp: what the large path cannot run (refused before any family is asked, or by
// a family: CheckWithinRange);
// whether a tensor may not fit one descriptor; its windows (none if `reach` bytes past one leave
// no room); a kernel's dispatches on the large path (nothing off it), in chunks of at most
// maxCount loop elements; `each` once per window (its indexed span the window), for a kernel
// whose loop is the same in every window.
Result CheckLargePath(const Choice& c);
// A tensor that kernels read whole on the large path (Kernel::whole) must fit one descriptor;
// refused, naming it and the `others` that may pass the range, if not.
Result CheckWithinRange(const Choice& c, const Tensor& t, const char* others);
bool Windowed(const Capabilities& caps, const Tensor& t);
std::vector<Span> Windows(const Capabilities& caps, const Tensor& t, UINT64 reach = 0);
std::vector<LargeDispatch> PerWindow(const std::vector<Span>& windows, LargeDispatch each);
Result ChooseLargeDispatches(const Choice& c, const Plan& plan, Pass::Kind kind, Kernel* k,
                             UINT64 maxCount = 0xFFFFFFFFu);

// For the ListModules: every combination of the capabilities that change a module's name (the
// atomics, float64, denormal preservation, shaderInt64, 8/16-bit storage), each on and off.
void ForEachCapabilities(const std::function<void(const Capabilities&)>& f);

}  // namespace vkdml::detail
