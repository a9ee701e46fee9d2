// Quantized rows (VKDML_OPERATOR_GATHER_QUANTIZED_ROWS): glsl/dequantize_rows.comp, a module per
// format and index size, the output's element size a specialization constant. It reads the
// table and writes the output in 32-bit words on every device, so every binding starts on a
// word (KernelSet::wordBindings), and its bases are bytes (Kernel::unit 1).
#include "kernel_choice.h"

namespace vkdml::detail {

namespace {

// "dequantize_q8_0_i32", "dequantize_q4_0_i64".
std::string DequantizeModule(VKDML_QUANTIZED_FORMAT format, UINT indexSize) {
  return Str("dequantize_", format == VKDML_QUANTIZED_FORMAT_Q8_0 ? "q8_0" : "q4_0",
             IndexSuffix(indexSize));
}

}  // namespace

Result ChooseDequantize(Choice& c, const Pass& pass) {
  UINT slot = 0;
  VKDML_TRY(c.Slot(pass.plan, &slot));
  Step step;
  step.kind = Pass::Kind::Dequantize;
  step.plain = c.Elementwise(DequantizeModule(c.op.format, c.indexSize), pass.plan, slot, 1);
  step.plain.spec[VKDML_SPEC_OUTPUT_SIZE] = c.op.outputs[0].elemSize;
  c.set.steps.push_back(step);
  c.set.wordBindings = true;
  return {};
}

void ListQuantizedModules(const ModuleSink& sink) {
  for (UINT index : {4u, 8u})
    for (auto format : {VKDML_QUANTIZED_FORMAT_Q8_0, VKDML_QUANTIZED_FORMAT_Q4_0})
      sink(DequantizeModule(format, index));
}

}  // namespace vkdml::detail
