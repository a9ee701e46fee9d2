// Paged KV caches (VKDML_OPERATOR_PAGED_CACHE_WRITE and _GATHER): glsl/paged.comp's stages, a
// module per cache format and index size; the values' element size (the write's UpdatesTensor,
// the gather's OutputTensor) is VKDML_SPEC_OUTPUT_SIZE. The write's copy of the cache (not in
// place) is the indexed copy's (kernel_copy.cpp). The kernels read and write their tensors in
// 32-bit words on every device (KernelSet::wordBindings), bases in bytes (Kernel::unit 1). No
// large path: each tensor fits one descriptor. Where ChooseFused allows, the write is one
// dispatch (no claims: a bench write of 256 tokens was five steps of latency), its kernel
// writing the status words whole (KernelSet::statusInKernel, reportInKernel); the gather's
// starts' pass sets them (statusInKernel: no fill), and with SequenceLengthsTensor it is one
// workgroup summing the lengths (glsl/paged.comp: sumLengths). On GPU kernels the gather then
// finds its tokens' rows where it copies them (ChooseFusedGather: no ROWS pass).
#include "kernels/kernel_choice.h"

namespace vkdml::detail {

namespace {

// "f", "q8_0" or "q4_0": the cache's rows.
const char* CacheToken(VKDML_QUANTIZED_FORMAT format) {
  return format == VKDML_QUANTIZED_FORMAT_Q8_0   ? "q8_0"
         : format == VKDML_QUANTIZED_FORMAT_Q4_0 ? "q4_0"
                                                 : "f";
}

// "paged_claim_i32", "paged_starts_i64", "paged_write_q8_0_i64", "paged_gather_f_i32"; the
// fused write and gather: "paged_write_fused_q4_0_i32", "paged_gather_fused_f_i64".
std::string PagedModule(Pass::Kind kind, VKDML_QUANTIZED_FORMAT format, UINT indexSize,
                        bool fused = false) {
  if (fused)
    return Str(kind == Pass::Kind::PagedWrite ? "paged_write_fused_" : "paged_gather_fused_",
               CacheToken(format), IndexSuffix(indexSize));
  switch (kind) {
    case Pass::Kind::PagedClaim:
      return "paged_claim" + IndexSuffix(indexSize);
    case Pass::Kind::PagedStarts:
    case Pass::Kind::PagedOffsets:
      return "paged_starts" + IndexSuffix(indexSize);
    case Pass::Kind::PagedRows:
      return "paged_rows" + IndexSuffix(indexSize);
    case Pass::Kind::PagedWrite:
      return Str("paged_write_", CacheToken(format), IndexSuffix(indexSize));
    default:
      return Str("paged_gather_", CacheToken(format), IndexSuffix(indexSize));
  }
}

// The fused write (paged.comp: FUSED), over its plan of rank 3 (tokens, a token's heads, a
// head's groups), a workgroup's chunk of loop elements at a time.
constexpr UINT kFusedTokens = 4096;  // tokens each workgroup compares
struct Fused {
  bool on = false;
  UINT groups = 0;
};

// The operator's pass of `kind` (its values' pass: PagedWrite or PagedGather), or null.
const Pass* ValuesPass(const OperatorImpl& op, Pass::Kind kind) {
  for (const Pass& pass : op.passes)
    if (pass.kind == kind) return &pass;
  return nullptr;
}

// Whether the write takes one dispatch (the claims in each workgroup's shared memory: every
// token's slot compared with the chunk's), within the loop bound of CPU devices
// (Capabilities::maxLoop).
Fused ChooseFused(const Choice& c) {
  Fused f;
  const Pass* values = ValuesPass(c.op, Pass::Kind::PagedWrite);
  if (c.large || !values || values->plan.count == 0 || values->plan.rank != 3) return f;
  const Plan& plan = values->plan;
  const UINT64 size = c.caps.groupSize, tokens = plan.sizes[0];
  const UINT64 rowGroups = UINT64(plan.sizes[1]) * plan.sizes[2];
  if (tokens > kFusedTokens) return f;
  // An invocation's loop iterations for each of its chunks: it compares its share of the tokens
  // with the chunk's (at most a token an invocation).
  const UINT64 rows = std::min<UINT64>(size, (size - 1) / rowGroups + 2);
  const UINT64 work = (tokens + size - 1) / size * (rows + 1) + 4;
  if (work > 1024) return f;  // short rows: the claims' pass is cheaper
  const UINT64 chunks = (plan.count + size - 1) / size;
  const UINT groups = c.Groups(chunks);
  if (c.caps.maxLoop != UINT64(-1) && (chunks + groups - 1) / groups * work > c.caps.maxLoop)
    return f;
  f.on = true;
  f.groups = groups;
  return f;
}

// The fused gather (paged.comp: FUSED GATHER) on GPU kernels: kUnroll loop elements an
// invocation, its workgroup's chunk's token rows found first (a chunk's at most
// kGatherUnroll * groupSize tokens, in shared memory), within the loop bound (Capabilities::
// maxLoop) of a CPU device taking GPU kernels. Where the bounds and token offsets fit a word an
// invocation, each workgroup first copies them into shared memory (bisected there, not in the
// scratch) and takes 4 elements an invocation; else 8. CPU kernels keep ROWS: a run an
// invocation. (examples/bench/PERF_NOTES.md, v46 and v47: on an H200, 8 elements 5% faster than
// ROWS and GATHER, the shared bounds with 4 elements 2.5% faster again (5 the same); 2, 3 or 16
// elements, fewer workgroups walking more chunks, workgroups of 128 or 512, or each invocation
// finding its own elements' rows, slower.)
constexpr UINT kGatherUnroll = 8;  // paged.comp: kMaxUnroll
constexpr UINT kSharedBoundsUnroll = 4;
struct FusedGather : Fused {
  UINT unroll = kGatherUnroll;
  bool sharedBounds = false;
};
FusedGather ChooseFusedGather(const Choice& c) {
  FusedGather f;
  const Pass* values = ValuesPass(c.op, Pass::Kind::PagedGather);
  if (c.large || !values || values->plan.count == 0 || c.caps.kernels != Capabilities::Kernels::Gpu)
    return f;
  const UINT64 sequences = values->plan.tupleSize[3];
  const bool offsets = c.op.inputs.size() > 3;
  f.sharedBounds = sequences + 1 + (offsets ? sequences : 0) <= c.caps.groupSize;
  if (f.sharedBounds) f.unroll = kSharedBoundsUnroll;
  const UINT64 perChunk = UINT64(c.caps.groupSize) * f.unroll;
  const UINT64 chunks = (values->plan.count + perChunk - 1) / perChunk;
  f.groups = c.Groups(chunks);
  f.on = c.caps.maxLoop == UINT64(-1) || (chunks + f.groups - 1) / f.groups <= c.caps.maxLoop;
  return f;
}

}  // namespace

Result ChoosePaged(Choice& c, const Pass& pass) {
  const OperatorImpl& op = c.op;
  if (c.large)
    for (const auto* tensors : {&op.inputs, &op.outputs})
      for (const Tensor& t : *tensors)
        if (Windowed(c.caps, t))
          return Fail(Status::Unsupported, op.name, ": ", t.field, " takes ", t.totalBytes,
                      " bytes, past this device's maxStorageBufferRange (", c.caps.maxRange,
                      " bytes) less its offset alignment (", c.caps.rangeAlign,
                      "): a paged cache's tensors each fit one descriptor");
  if (c.large)
    return Fail(Status::Unsupported, op.name, ": 2^32 or more loop elements are not supported");
  if (pass.kind == Pass::Kind::Gather) return ChooseCopy(c, pass);  // the write's cache copy
  const Fused fused = ChooseFused(c);
  if (fused.on && pass.kind == Pass::Kind::PagedClaim) return {};  // no claims
  const bool fusedWrite = fused.on && pass.kind == Pass::Kind::PagedWrite;
  const FusedGather fusedGather = ChooseFusedGather(c);
  if (fusedGather.on && pass.kind == Pass::Kind::PagedRows) return {};  // the gather finds them
  const bool fusedRows = fusedGather.on && pass.kind == Pass::Kind::PagedGather;
  const Plan& plan = pass.plan;
  UINT slot = 0;
  VKDML_TRY(c.Slot(plan, &slot));
  Step step;
  step.kind = pass.kind;
  Kernel& k = step.plain;
  k = c.Elementwise(PagedModule(pass.kind, op.format, c.indexSize, fusedWrite || fusedRows), plan,
                    slot, 1);
  if (fusedWrite) {
    k.spec[VKDML_SPEC_UNROLL] = 1;
    k.groups = fused.groups;
  }
  if (fusedRows) {
    k.spec[VKDML_SPEC_UNROLL] = fusedGather.unroll;
    k.groups = fusedGather.groups;
  }
  const bool write = op.IsScatter();
  k.spec[VKDML_SPEC_OUTPUT_SIZE] = write ? op.inputs[2].elemSize : op.outputs[0].elemSize;
  // The values an invocation of PagedWrite or PagedGather moves (paged.comp: kUnit), its
  // innermost direct stride: 4, 8 (FLOAT16) or a quantized block's 32.
  if (pass.kind == Pass::Kind::PagedWrite || pass.kind == Pass::Kind::PagedGather)
    k.spec[VKDML_SPEC_UNIT] = pass.plan.direct[2];
  shader::uvec4& params = c.set.plans[slot].params;
  switch (pass.kind) {
    case Pass::Kind::PagedClaim:
      c.set.tallyWords = op.slots;  // a claim per token slot
      break;
    case Pass::Kind::PagedStarts:  // clamped into [0, total_tokens]; z: the status words too
      // (y 2: lengths, summed by one workgroup: the bounds are one more)
      params = {{op.outputs[0].sizes[0], op.sequenceLengths ? 2u : 0u, c.set.checked ? 1u : 0u, 0}};
      c.set.statusInKernel = c.set.checked;
      c.set.boundsWords = pass.plan.count + (op.sequenceLengths ? 1 : 0);
      if (op.sequenceLengths) {
        k.groups = 1;
        // Its chunks' scans (log2 of the workgroup's size steps each) within a CPU device's
        // loop bound (Capabilities::maxLoop).
        const UINT64 chunks = (pass.plan.count + c.caps.groupSize - 1) / c.caps.groupSize;
        if (c.caps.maxLoop != UINT64(-1) && chunks * 10 > c.caps.maxLoop)
          return Fail(Status::Unsupported, op.name, ": SequenceLengthsTensor holds ",
                      pass.plan.count, " lengths, more than this device sums in one kernel (",
                      c.caps.maxLoop / 10 * c.caps.groupSize,
                      "): give SequenceStartsTensor, the cumulative lengths");
      }
      break;
    case Pass::Kind::PagedOffsets:
      params = {{0, 1, 0, 0}};
      c.set.weightWords = pass.plan.count;
      break;
    case Pass::Kind::PagedRows:    // x: TokenOffsetsTensor given (1); y: the sequences
    case Pass::Kind::PagedGather:  // (fused: ROWS' params, z: the bounds in shared memory)
      if (pass.kind == Pass::Kind::PagedRows || fusedRows)
        params = {{op.inputs.size() > 3 ? 1u : 0u, pass.plan.tupleSize[3],
                   fusedRows && fusedGather.sharedBounds ? 1u : 0u, 0}};
      if (pass.kind == Pass::Kind::PagedRows) c.set.rowWords = pass.plan.count;  // a token's row
      break;
    case Pass::Kind::PagedWrite:  // fused: the status words and the report in the kernel
      c.set.statusInKernel = c.set.reportInKernel = c.set.checked && fused.on;
      break;
    default:
      break;
  }
  c.set.steps.push_back(step);
  c.set.wordBindings = true;
  return {};
}

void ListPagedModules(const ModuleSink& sink) {
  for (UINT index : {4u, 8u}) {
    sink(PagedModule(Pass::Kind::PagedClaim, VKDML_QUANTIZED_FORMAT(0), index));
    sink(PagedModule(Pass::Kind::PagedStarts, VKDML_QUANTIZED_FORMAT(0), index));
    sink(PagedModule(Pass::Kind::PagedRows, VKDML_QUANTIZED_FORMAT(0), index));
    for (auto format :
         {VKDML_QUANTIZED_FORMAT(0), VKDML_QUANTIZED_FORMAT_Q8_0, VKDML_QUANTIZED_FORMAT_Q4_0})
      for (Pass::Kind kind : {Pass::Kind::PagedWrite, Pass::Kind::PagedGather})
        sink(PagedModule(kind, format, index));
    for (auto format :
         {VKDML_QUANTIZED_FORMAT(0), VKDML_QUANTIZED_FORMAT_Q8_0, VKDML_QUANTIZED_FORMAT_Q4_0})
      for (Pass::Kind kind : {Pass::Kind::PagedWrite, Pass::Kind::PagedGather})
        sink(PagedModule(kind, format, index, true));
  }
}

}  // namespace vkdml::detail
