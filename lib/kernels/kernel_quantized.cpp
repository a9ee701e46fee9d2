// Quantized rows (VKDML_OPERATOR_GATHER_QUANTIZED_ROWS and _SCATTER_): glsl/dequantize_rows.comp
// for the gather, glsl/quantize_rows.comp (CLAIM, then the format's quantizer) for the
// scatter's passes after its copy; a module per format and index size, the gather's output
// element size a specialization constant. They read and write their tensors in 32-bit words on
// every device, so every binding starts on a word (KernelSet::wordBindings), and their bases are
// bytes (Kernel::unit 1). Off the large path the gather takes 8 values an invocation, and the
// quantizer's workgroups a block per invocation together (glsl/quantize_rows.comp:
// cooperative). Both run on the large path: a dispatch per chunk of rows and window of the table,
// taking the rows (the gather) or blocks (the scatter) that start in its window.
#include "kernels/kernel_choice.h"

namespace vkdml::detail {

namespace {

const char* FormatToken(VKDML_QUANTIZED_FORMAT format) {
  return format == VKDML_QUANTIZED_FORMAT_Q8_0 ? "q8_0" : "q4_0";
}

// "dequantize_q8_0_i32", "dequantize_q4_0_i64_large", "quantize_q4_0_i64", "claim_i32".
std::string QuantizedModule(Pass::Kind kind, VKDML_QUANTIZED_FORMAT format, UINT indexSize,
                            bool large) {
  const std::string name = kind == Pass::Kind::Dequantize ? Str("dequantize_", FormatToken(format))
                           : kind == Pass::Kind::Quantize ? Str("quantize_", FormatToken(format))
                                                          : std::string("claim");
  return name + IndexSuffix(indexSize) + LargeSuffix(large);
}

}  // namespace

Result ChooseQuantized(Choice& c, const Pass& pass) {
  UINT slot = 0;
  VKDML_TRY(c.Slot(pass.plan, &slot));
  Step step;
  step.kind = pass.kind;
  Kernel& k = step.plain;
  k = c.Elementwise(QuantizedModule(pass.kind, c.op.format, c.indexSize, c.large), pass.plan, slot,
                    1);
  k.spec[VKDML_SPEC_OUTPUT_SIZE] = c.op.outputs[0].elemSize;
  // Off the large path, as many workgroups as take the work at once (each invocation's loads
  // issued together, not one loop element after another): the quantizer's a block per
  // invocation (a workgroup's blocks together: every invocation a block's scale, and quads of
  // the group's values), the gather's two loop elements (8 values of a block).
  const UINT64 perInvocation = pass.kind == Pass::Kind::Dequantize ? 2 : 1;
  if (pass.kind != Pass::Kind::Claim && !c.large)
    k.groups =
        c.Groups((pass.plan.count / perInvocation + c.caps.groupSize - 1) / c.caps.groupSize);
  // On the large path: the rows (the gather's output, the scatter's updates) in their elements,
  // a loop element taking 4 values (the gather) or 32 (the quantizer); the table in bytes, a
  // loop element reading a row (the gather) or writing a block (the quantizer) from an offset
  // that one window owns, in words: from a row starting on the window's last byte to the word
  // holding its last, up to (bytes + 2) past the window's end, rounded up to a word. The claims
  // are the scratch's.
  const Tensor& table = c.op.inputs[0];
  const bool gather = pass.kind == Pass::Kind::Dequantize;
  k.directUnit = gather ? c.op.outputs[0].elemSize : 4;
  k.directReach = UINT64(gather ? 3 : 31) * k.directUnit;
  k.indexedUnit = 1;
  const UINT64 reached =
      gather ? table.sizes[table.dims - 1] : QuantizedBlockBytes(c.op.format);  // bytes
  k.indexedReach = (reached + 2 + 3) / 4 * 4;
  VKDML_TRY(ChooseLargeDispatches(c, pass.plan, gather ? Pass::Kind::Gather : pass.kind, &k));
  c.set.steps.push_back(step);
  c.set.wordBindings = true;
  if (pass.kind == Pass::Kind::Claim) c.set.tallyWords = c.op.slots;  // a claim per table row
  return {};
}

void ListQuantizedModules(const ModuleSink& sink) {
  for (UINT index : {4u, 8u}) {
    for (auto format : {VKDML_QUANTIZED_FORMAT_Q8_0, VKDML_QUANTIZED_FORMAT_Q4_0})
      for (Pass::Kind kind : {Pass::Kind::Dequantize, Pass::Kind::Quantize})
        for (bool large : {false, true}) sink(QuantizedModule(kind, format, index, large));
    for (bool large : {false, true})
      sink(QuantizedModule(Pass::Kind::Claim, VKDML_QUANTIZED_FORMAT_Q8_0, index, large));
  }
}

}  // namespace vkdml::detail
