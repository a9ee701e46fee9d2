// Paged KV caches (VKDML_OPERATOR_PAGED_CACHE_WRITE and _GATHER): glsl/paged.comp's stages, a
// module per cache format and index size; the values' element size (the write's UpdatesTensor,
// the gather's OutputTensor) is VKDML_SPEC_OUTPUT_SIZE. The write's copy of the cache (not in
// place) is the indexed copy's (kernel_copy.cpp). The kernels read and write their tensors in
// 32-bit words on every device (KernelSet::wordBindings), bases in bytes (Kernel::unit 1). No
// large path: each tensor fits one descriptor.
#include "kernels/kernel_choice.h"

namespace vkdml::detail {

namespace {

// "f", "q8_0" or "q4_0": the cache's rows.
const char* CacheToken(VKDML_QUANTIZED_FORMAT format) {
  return format == VKDML_QUANTIZED_FORMAT_Q8_0   ? "q8_0"
         : format == VKDML_QUANTIZED_FORMAT_Q4_0 ? "q4_0"
                                                 : "f";
}

// "paged_claim_i32", "paged_starts_i64", "paged_write_q8_0_i64", "paged_gather_f_i32".
std::string PagedModule(Pass::Kind kind, VKDML_QUANTIZED_FORMAT format, UINT indexSize) {
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
  UINT slot = 0;
  VKDML_TRY(c.Slot(pass.plan, &slot));
  Step step;
  step.kind = pass.kind;
  Kernel& k = step.plain;
  k = c.Elementwise(PagedModule(pass.kind, op.format, c.indexSize), pass.plan, slot, 1);
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
    case Pass::Kind::PagedStarts:  // clamped into [0, total_tokens]
      params = {{op.outputs[0].sizes[0], 0, 0, 0}};
      c.set.boundsWords = pass.plan.count;
      break;
    case Pass::Kind::PagedOffsets:
      params = {{0, 1, 0, 0}};
      c.set.weightWords = pass.plan.count;
      break;
    case Pass::Kind::PagedRows:  // x: TokenOffsetsTensor given (1); y: the sequences
      params = {{op.inputs.size() > 3 ? 1u : 0u, pass.plan.tupleSize[3], 0, 0}};
      c.set.rowWords = pass.plan.count;  // a token's row
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
  }
}

}  // namespace vkdml::detail
