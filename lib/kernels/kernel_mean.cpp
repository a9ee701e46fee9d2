// A scatter mean (VKDML_REDUCE_FUNCTION_MEAN) after its sum, which the ADD reduction's kernels
// compute: glsl/indexed.comp (TALLY_PASS) counts the update units of each target slot in the
// scratch, over the operator's keys (a ScatterND slice is one unit: one count for all its
// elements), then glsl/mean.comp divides each OutputTensor element whose slot has any. Not
// where the sum's own kernel divides (Choice::meanInFold: the ordered fold and the line
// kernels, kernel_reduce.cpp and kernel_lines.cpp). On the large path, an OutputTensor element is
// a target (as it is a unit for the sort there), counted a piece of OutputTensor at a time:
// MeanLarge.
#include <algorithm>

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
// On the large path the division walks the scatter's loop (its indices), not OutputTensor.
std::string MeanLargeModule(const std::string& elem, UINT indexSize) {
  return Str("mean_", elem, IndexSuffix(indexSize), LargeSuffix(true));
}

// A target's count, plus the input where it is in the mean, must fit 32 bits.
Result CheckCount(const Choice& c, UINT64 units) {
  if (!c.op.excludeSelf && units >= 0xFFFFFFFFu)
    return Fail(Status::Unsupported, c.op.name,
                ": VKDML_REDUCE_FUNCTION_MEAN over 2^32 - 1 or more update units is not "
                "supported");
  return {};
}

// The large path: OutputTensor a piece at a time, each window of it in pieces of as many
// elements as the scratch left after the sum's (kernel_reduce.cpp leaves a deterministic mean
// half of it) holds counts for. For each piece, tally_*_large counts over every chunk of the
// scatter's loop the update elements whose target lies in the piece, a count per element; then
// mean_*_large walks the chunks again through the piece's window, and the first update element
// to take its target's count (an atomic exchange, which leaves 0 for the next piece) divides the
// target. Both dispatches of a chunk own exactly the piece's elements, so every count taken is
// taken back.
Result MeanLarge(Choice& c, const Plan& scatter) {
  VKDML_TRY(CheckCount(c, scatter.count));
  const Tensor& output = c.op.outputs[0];
  const UINT64 used = LayScratch(c.set);
  const UINT64 room = c.caps.scratchRange / 4 > used ? c.caps.scratchRange / 4 - used : 0;
  const UINT64 piece = std::min<UINT64>(room, 0xFFFFFFF0u) / 16 * 16;  // whole 32-bit words
  if (piece == 0)
    return Fail(Status::Unsupported, c.op.name, ": this device's maxStorageBufferRange (",
                c.caps.scratchRange, " bytes) leaves no room for VKDML_REDUCE_FUNCTION_MEAN's ",
                "counts on the large path");
  UINT slot = 0;
  VKDML_TRY(c.Slot(scatter, &slot));
  Kernel tally =
      c.Elementwise(TallyModule(c.indexSize) + LargeSuffix(true), scatter, slot, c.elemSize);
  VKDML_TRY(ChooseLargeDispatches(c, scatter, Pass::Kind::Reduce, &tally));
  tally.indexedTensor = Role::None;  // it reads no target: its piece is only compared
  Kernel divide =
      c.Elementwise(MeanLargeModule(c.Elem(c.elemSize), c.indexSize), scatter, slot, c.elemSize);
  divide.spec[VKDML_SPEC_UNROLL] = 1;  // an update element a thread
  divide.spec[VKDML_SPEC_SELF] = !c.op.excludeSelf;
  VKDML_TRY(ChooseLargeDispatches(c, scatter, Pass::Kind::Reduce, &divide));
  const std::vector<LargeDispatch> counts = std::move(tally.large),
                                   divides = std::move(divide.large);
  const std::vector<Span> windows =
      scatter.tuple > 0 ? Windows(c.caps, output) : std::vector<Span>{divides[0].indexed};
  UINT64 most = 0;  // the longest piece's elements: the counts' words
  for (size_t w = 0; w < windows.size(); ++w) {
    const UINT64 first = windows[w].begin / c.elemSize, last = windows[w].end / c.elemSize;
    for (UINT64 begin = first; begin < last; begin += piece) {
      const UINT64 end = std::min(last, begin + piece);
      const Span bytes = {begin * c.elemSize, end * c.elemSize};
      most = std::max(most, end - begin);
      tally.begin = divide.begin = UINT(begin);  // a count's word: the element less this
      for (size_t chunk = 0; chunk < counts.size(); chunk += windows.size()) {
        tally.large.push_back(counts[chunk]);
        tally.large.back().indexed = bytes;
        divide.large.push_back(divides[chunk + w]);
        divide.large.back().indexed = bytes;
      }
      for (Kernel* k : {&tally, &divide}) {
        Step step;
        step.kind = Pass::Kind::Reduce;  // bound as the scatter's sum is
        step.plain = *k;
        c.set.steps.push_back(step);
        k->large.clear();
      }
    }
  }
  c.set.tallyWords = most;
  return {};
}

}  // namespace

Result ChooseMean(Choice& c, const Pass& pass) {
  if (c.large) {
    Plan scatter = pass.plan;
    scatter.Simplify();
    return MeanLarge(c, scatter);
  }
  Plan keys = c.op.keys, walk = c.op.slotWalk;
  keys.Simplify();
  walk.Simplify();
  VKDML_TRY(CheckCount(c, keys.count));
  Step step;
  step.kind = Pass::Kind::Scatter;  // bound as the scatter is
  UINT slot = 0;
  VKDML_TRY(c.Slot(keys, &slot));
  step.plain = c.Elementwise(TallyModule(c.indexSize), keys, slot, c.elemSize);
  c.set.steps.push_back(step);
  VKDML_TRY(c.Slot(walk, &slot));
  step.plain = c.Elementwise(MeanModule(c.Elem(c.elemSize)), walk, slot, c.elemSize);
  step.plain.spec[VKDML_SPEC_SELF] = !c.op.excludeSelf;
  c.set.steps.push_back(step);
  c.set.tallyWords = c.op.slots;
  return {};
}

void ListMeanModules(const ModuleSink& sink) {
  for (UINT index : {4u, 8u}) {
    sink(TallyModule(index));
    sink(TallyModule(index) + LargeSuffix(true));
    for (const std::string& elem : ElemTokens({1, 2, 4, 8})) sink(MeanLargeModule(elem, index));
  }
  for (const std::string& elem : ElemTokens({1, 2, 4, 8})) sink(MeanModule(elem));
}

}  // namespace vkdml::detail
