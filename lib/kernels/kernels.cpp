// ChooseKernels: each of an operator's passes to its kernel family (kernel_choice.h lists them).
#include <algorithm>

#include "kernels/kernel_choice.h"

namespace vkdml::detail {

namespace {

// Elements each thread moves per step (indexed.comp's kUnroll): enough loads in flight to cover
// memory latency; uvec4 elements need fewer (examples/bench/PERF_NOTES.md, v3 and v11). Work of
// up to 256 workgroups' width (of VKDML_GROUP_SIZE threads) goes one element per thread, spread
// over more multiprocessors: a thread's elements are a serial chain of index arithmetic, and
// small work is all latency (v16).
UINT Unroll(UINT elemSize, UINT64 count) {
  if (count <= 256 * VKDML_GROUP_SIZE) return 1;
  return elemSize >= VKDML_VECTOR_BYTES ? 2 : 8;
}

// Unsigned 32-bit division by d as a multiply and shifts (Granlund and Montgomery, 1994):
// with l = ceil(log2 d), magic = floor(2^32 (2^l - d) / d) + 1, t = mulhi(n, magic),
// n / d = (t + ((n - t) >> min(l, 1))) >> (max(l, 1) - 1) for every 32-bit n
// (glsl/common.glsl: divideBySize).
void Magic(UINT d, UINT* magic, UINT* shift) {
  UINT l = 0;
  while ((UINT64(1) << l) < d) ++l;
  *magic = UINT(((UINT64(1) << 32) * ((UINT64(1) << l) - d)) / d + 1);
  *shift = l;
}

static_assert(VKDML_REDUCE_FUNCTION_NONE == VKDML_REDUCE_NONE &&
                  VKDML_REDUCE_FUNCTION_ADD == VKDML_REDUCE_ADD &&
                  VKDML_REDUCE_FUNCTION_MULTIPLY == VKDML_REDUCE_MULTIPLY &&
                  VKDML_REDUCE_FUNCTION_MAX == VKDML_REDUCE_MAX &&
                  VKDML_REDUCE_FUNCTION_MIN == VKDML_REDUCE_MIN &&
                  VKDML_REDUCE_FUNCTION_MEAN == VKDML_REDUCE_MEAN,
              "dml.h and glsl/interface.h disagree on VKDML_REDUCE_FUNCTION");

// What an embedding bag keeps in the scratch (PlaceScratch's refusal).
std::string BagScratch(const KernelSet& set) {
  std::string text = Str("it keeps the bounds of ", set.boundsWords - 1, " bags");
  const std::pair<UINT64, const char*> parts[] = {
      {set.weightWords, " weights"},
      {set.partialWords, " words of partial folds"},
      {set.rowWords, " words of fetched rows"},
      {set.dispatchWords + set.spanWords, " words of dispatches"}};
  for (const auto& [words, what] : parts)
    if (words) text += Str(", ", words, what);
  return text;
}

}  // namespace

UINT64 LayScratch(KernelSet& set) {
  UINT64 at = VKDML_STATUS_WORDS;
  auto place = [&at](UINT64 words) {
    const UINT64 start = at;
    at += words;
    return UINT(start);  // below 2^32: checked below, before use
  };
  set.scratchAt.mask = place(set.maskWords);
  set.scratchAt.keys = place(std::max(set.sortWords, set.tiePositionWords));
  set.scratchAt.values = place(set.sortWords);
  set.scratchAt.counts = place(std::max(set.countWords, set.tieMarkWords));
  set.scratchAt.tally = place(set.tallyWords);
  set.scratchAt.bounds = place(set.boundsWords);
  set.scratchAt.weights = place(set.weightWords);
  set.scratchAt.partials = place(set.partialWords);
  set.scratchAt.blocks = place(set.blockWords);
  set.scratchAt.rows = place(set.rowWords);
  set.scratchAt.dispatches = place(set.dispatchWords);
  set.scratchAt.spans = place(set.spanWords);
  set.scratchWords = at;
  return at;
}

namespace {

// More scratch than one descriptor can see (maxStorageBufferRange) is refused, naming what
// needs it.
Result PlaceScratch(const OperatorImpl& op, const Capabilities& caps, KernelSet& set) {
  const UINT64 at = LayScratch(set);
  if (at * 4 <= caps.scratchRange) return {};
  const std::string what =
      op.moe          ? Str("it sorts ", op.entries, " entries by expert")
      : set.sortWords ? Str("a deterministic execution sorts ", set.sortWords / 2, " update units")
      : set.tieMarkWords
          ? Str("a deterministic execution keeps a tie position per OutputTensor element")
      : set.tallyWords && op.format
          ? Str("it keeps the latest update of each of ", set.tallyWords, " table rows")
      : set.tallyWords ? Str("VKDML_REDUCE_FUNCTION_MEAN counts the updates of each of ",
                             set.tallyWords, " targets")
      : op.bag         ? BagScratch(set)
      : op.blockType   ? Str("it keeps the scale and zero point of each of ", op.blocks, " blocks")
      : op.paged       ? Str("it keeps a word per token slot, sequence or gathered token")
      : op.segment     ? Str("it carries ", set.partialWords, " words of partial folds")
                       : Str("its mask of the slices it overwrites");
  return Fail(Status::Unsupported, op.name, ": ", what, ", which needs ", at * 4,
              " bytes of scratch, more than this device's maxStorageBufferRange ",
              caps.scratchRange);
}

}  // namespace

shader::PackedPlan Pack(const Plan& p) {
  shader::PackedPlan w = {};
  w.count = UINT(p.count);  // below 2^32 off the large path, where dispatches carry their own
  w.componentStride = p.componentStride;
  for (UINT d = 0; d < p.rank; ++d) {
    VKDML_AT(w.sizes, d) = p.sizes[d];
    Magic(p.sizes[d], &VKDML_AT(w.magic, d), &VKDML_AT(w.shift, d));
    VKDML_AT(w.direct, d) = p.direct[d];
    VKDML_AT(w.indexed, d) = p.indexed[d];
    VKDML_AT(w.indices, d) = p.indices[d];
    VKDML_AT(w.position, d) = p.position[d];
  }
  for (UINT j = 0; j < p.tuple; ++j) {
    VKDML_AT(w.tupleSize, j) = p.tupleSize[j];
    VKDML_AT(w.tupleStride, j) = p.tupleStride[j];
  }
  return w;
}

UINT Groups(UINT64 work, UINT maxGroups) {
  return UINT(std::max<UINT64>(1, std::min<UINT64>(work, maxGroups)));
}

UINT Kind(DML_TENSOR_DATA_TYPE type) {
  switch (type) {
    case DML_TENSOR_DATA_TYPE_FLOAT16:
    case DML_TENSOR_DATA_TYPE_FLOAT32:
    case DML_TENSOR_DATA_TYPE_FLOAT64:
      return VKDML_KIND_FLOAT;
    case DML_TENSOR_DATA_TYPE_INT8:
    case DML_TENSOR_DATA_TYPE_INT16:
    case DML_TENSOR_DATA_TYPE_INT32:
    case DML_TENSOR_DATA_TYPE_INT64:
      return VKDML_KIND_SIGNED;
    default:
      return VKDML_KIND_UNSIGNED;
  }
}

Choice::Choice(const OperatorImpl& op_, UINT flags, const Capabilities& caps_)
    : op(op_), caps(caps_), elemSize(op_.ElemSize()), indexSize(op_.Indices().elemSize) {
  set.checked = (flags & VKDML_EXECUTION_FLAG_CHECK_INDICES) != 0 ||
                op.outOfRange == VKDML_OUT_OF_RANGE_MODE_ERROR;
  drop = op.Drops();
  set.fill = op.fill;
  set.plans.assign(VKDML_PLAN_SLOTS, shader::PackedPlan{});
  // Integer reductions give the same bits in any order (ADD and MULTIPLY wrap modulo 2^bits;
  // MAX and MIN keep one of equal values, which have equal bits): deterministic executions of
  // them take the default mode's kernels. Float ones and NONE (the last update wins) do not
  // (float MAX and MIN add passes to them: kernel_ties.cpp), nor 1- and 2-byte elements, whose
  // atomics need the output on 4 bytes and a deterministic execution does not.
  const bool orderFree = op.reduce != VKDML_REDUCE_FUNCTION_NONE &&
                         Kind(op.inputs[0].type) != VKDML_KIND_FLOAT && op.ElemSize() >= 4;
  deterministic = (flags & VKDML_EXECUTION_FLAG_DETERMINISTIC) != 0 && !orderFree;
  base[VKDML_SPEC_CHECKED] = set.checked;
  base[VKDML_SPEC_SIGNED_INDEX] = IsSignedIndexType(op.Indices().type);
  base[VKDML_SPEC_LINE_LENGTH] = 1;
  base[VKDML_SPEC_GROUP_SIZE] = caps.groupSize;
  base[VKDML_SPEC_REDUCE] = op.reduce;
  base[VKDML_SPEC_ELEMENT_KIND] = Kind(op.inputs[0].type);
  base[VKDML_SPEC_UNIT] = 1;
  base[VKDML_SPEC_DROP] = drop;
  // The large path where a tensor may not fit one descriptor, a loop reaches 2^32 elements, or
  // a deterministic execution's scratch, all at once, would not fit one (it sorts in chunks
  // there).
  for (const auto* tensors : {&op.inputs, &op.outputs})
    for (const Tensor& t : *tensors) large = large || Windowed(caps, t);
  for (const Pass& pass : op.passes) large = large || pass.plan.count > 0xFFFFFFFFu;
  large = large || (deterministic && !DeterministicScratchFits(op, caps));
  set.large = large;
  set.packed = caps.Packed(elemSize);
  set.maxRange = caps.maxRange;
  set.rangeAlign = caps.rangeAlign;
}

Result Choice::Slot(const Plan& plan, UINT* slot) {
  if (next_ == VKDML_REPORT_SLOT)
    return Fail(Status::Internal, "internal: more than ", VKDML_REPORT_SLOT, " plans");
  *slot = next_++;
  set.plans[*slot] = Pack(plan);
  return {};
}

Specialization Choice::Spec(const Plan& plan) const {
  Specialization spec = base;
  spec[VKDML_SPEC_RANK] = plan.rank;
  spec[VKDML_SPEC_TUPLE] = plan.tuple;
  return spec;
}

Kernel Choice::Elementwise(std::string module, const Plan& plan, UINT slot, UINT unit) const {
  Kernel k;
  k.module = std::move(module);
  k.spec = Spec(plan);
  k.spec[VKDML_SPEC_UNROLL] = Unroll(unit, plan.count);
  k.slot = slot;
  k.unit = unit;
  const UINT64 perGroup = UINT64(caps.groupSize) * k.spec[VKDML_SPEC_UNROLL];
  k.groups = Groups((plan.count + perGroup - 1) / perGroup);
  return k;
}

UINT64 MaxTensorBytes(DML_OPERATOR_TYPE type, const Capabilities& caps) {
  // Not on the large path: a block-quantized gather's scales and zero points (in the scratch
  // too, whole), an embedding bag's tensors but its table (kernel_bag.cpp, kernel_blocks.cpp).
  // A MoE permute or unpermute: every tensor (kernel_moe.cpp).
  const bool oneDescriptor =
      type == VKDML_OPERATOR_EMBEDDING_BAG || type == VKDML_OPERATOR_GATHER_BLOCK_QUANTIZED ||
      type == VKDML_OPERATOR_MOE_PERMUTE || type == VKDML_OPERATOR_MOE_UNPERMUTE ||
      type == VKDML_OPERATOR_PAGED_CACHE_WRITE || type == VKDML_OPERATOR_PAGED_GATHER ||
      type == VKDML_OPERATOR_SEGMENT_REDUCE;
  return oneDescriptor ? caps.maxRange - caps.rangeAlign : UINT64(-1);
}

Result ChooseKernels(const OperatorImpl& op, UINT flags, const Capabilities& caps, KernelSet* out) {
  Choice c(op, flags, caps);
  if (c.large) VKDML_TRY(CheckLargePath(c));
  for (const Pass& pass : op.passes) {
    if (c.large && pass.kind == Pass::Kind::Mark) continue;  // its copy then copies everything
    if (op.paged) {
      VKDML_TRY(ChoosePaged(c, pass));
      continue;
    }
    if (pass.kind == Pass::Kind::Dequantize || pass.kind == Pass::Kind::Claim ||
        pass.kind == Pass::Kind::Quantize) {
      VKDML_TRY(ChooseQuantized(c, pass));
      continue;
    }
    if (op.bag) {
      VKDML_TRY(ChooseBag(c, pass));
      continue;
    }
    if (op.blockType) {
      VKDML_TRY(ChooseBlocks(c, pass));
      continue;
    }
    if (op.moe) {
      VKDML_TRY(ChooseMoe(c, pass));
      continue;
    }
    if (op.segment) {
      VKDML_TRY(ChooseSegment(c, pass));
      continue;
    }
    if (pass.kind == Pass::Kind::Scatter && op.excludeSelf) VKDML_TRY(ChooseReset(c, pass));
    if (pass.kind == Pass::Kind::Scatter && (op.reduce || c.deterministic))
      VKDML_TRY(ChooseReduction(c, pass));
    else
      VKDML_TRY(ChooseCopy(c, pass));
    if (pass.kind == Pass::Kind::Scatter && op.mean && !c.meanInFold)
      VKDML_TRY(ChooseMean(c, pass));
  }
  if (c.set.checked) VKDML_TRY(ChooseReport(c));
  if (!c.large) c.set.maskWords = op.maskWords;  // the large path copies everything
  VKDML_TRY(PlaceScratch(op, caps, c.set));
  *out = std::move(c.set);
  return {};
}

void ForEachCapabilities(const std::function<void(const Capabilities&)>& f) {
  bool Capabilities::*const bits[] = {
      &Capabilities::float32AtomicAdd, &Capabilities::int64Atomics,
      &Capabilities::float64,          &Capabilities::denormPreserve32,
      &Capabilities::denormPreserve64, &Capabilities::int64,
      &Capabilities::storage8,         &Capabilities::storage16,
      &Capabilities::float64Elements};
  constexpr UINT n = sizeof(bits) / sizeof(bits[0]);
  for (UINT mask = 0; mask < (1u << n); ++mask) {
    Capabilities caps;
    for (UINT i = 0; i < n; ++i) caps.*bits[i] = (mask >> i) & 1;
    f(caps);
  }
}

std::vector<std::string> ElemTokens(std::initializer_list<UINT> sizes) {
  std::vector<std::string> tokens;
  Capabilities packed, plain;
  plain.storage8 = plain.storage16 = true;
  for (UINT size : sizes) {
    tokens.push_back(ElemToken(size, plain));
    if (packed.Packed(size)) tokens.push_back(ElemToken(size, packed));
  }
  return tokens;
}

void ListModules(const std::function<void(const std::string&)>& sink) {
  for (auto list : {ListCopyModules, ListRunsModules, ListLinesModules, ListReduceModules,
                    ListTiesModules, ListMeanModules, ListQuantizedModules, ListBagModules,
                    ListBlocksModules, ListMoeModules, ListPagedModules, ListSegmentModules})
    list(sink);
}

std::vector<std::string> MissingModules(const std::function<bool(const std::string&)>& built) {
  std::vector<std::string> missing;
  ListModules([&](const std::string& name) {
    if (!built(name) && std::find(missing.begin(), missing.end(), name) == missing.end())
      missing.push_back(name);
  });
  return missing;
}

}  // namespace vkdml::detail
