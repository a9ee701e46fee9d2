// Block-quantized gathers (VKDML_OPERATOR_GATHER_BLOCK_QUANTIZED): glsl/dequantize_blocks.comp's
// stages, a module per stage, value width and index size; signedness (INT4) and the scale's and
// output's element size are specialization constants, the block geometry the plan's
// (PackedPlan::params). Like the quantized rows' kernels they read and write 32-bit words on
// every device, so every binding starts on a word (KernelSet::wordBindings), and their bases are
// bytes (Kernel::unit 1).
// On the large path (InputTensor, IndicesTensor or OutputTensor past the binding range) the
// Blocks pass goes through kernel_large.cpp's windows, InputTensor's counting values; the Scales
// and ZeroPoints passes run as off it (Kernel::whole): their tensors, and the scratch of 2 words
// a block, must fit one descriptor.
#include "kernels/kernel_choice.h"

namespace vkdml::detail {

namespace {

// "block_scales", "block_zero_points_b4", "dequantize_blocks_b8_i64".
std::string BlocksModule(Pass::Kind kind, bool fourBit, UINT indexSize, bool large = false) {
  const std::string bits = fourBit ? "_b4" : "_b8";
  if (kind == Pass::Kind::Scales) return "block_scales";
  if (kind == Pass::Kind::ZeroPoints) return "block_zero_points" + bits;
  return "dequantize_blocks" + bits + IndexSuffix(indexSize) + LargeSuffix(large);
}

// Whether a FLOAT16 output goes a 32-bit word per invocation: loop elements 2k and 2k + 1 are a
// word's halves where the innermost dimension is even and contiguous and every other output
// stride even (its binding starts on a word: KernelSet::wordBindings). Else each float16 is
// stored alone, atomically (its word's other half may be another invocation's).
bool Pairs(const OperatorImpl& op, const Plan& plan) {
  const UINT last = plan.rank - 1;
  if (op.outputs[0].elemSize != 2 || plan.rank == 0 || plan.direct[last] != 1 ||
      plan.sizes[last] % 2)
    return false;
  for (UINT d = 0; d < last; ++d)
    if (plan.sizes[d] > 1 && plan.direct[d] % 2) return false;
  return true;
}

// Whether an invocation takes eight loop elements (glsl/dequantize_blocks.comp: octet): where
// the innermost dimension walks the values along the quantize axis (the innermost: params.x 1)
// one by one on both sides, in eights, and the axis and its blocks are whole eights, so that
// eight values that start on an eight of the axis share a block.
bool Octets(const OperatorImpl& op, const Plan& plan) {
  const UINT last = plan.rank - 1;
  const auto& g = op.blockParams.v;  // values after the axis, along it, blocks, block size
  return plan.rank > 0 && plan.sizes[last] % 8 == 0 && plan.direct[last] == 1 &&
         plan.indexed[last] == 1 && plan.indices[last] == 0 && g[0] == 1 && g[1] % 8 == 0 &&
         g[3] % 8 == 0;
}

}  // namespace

Result ChooseBlocks(Choice& c, const Pass& pass) {
  const OperatorImpl& op = c.op;
  const bool blocks = pass.kind == Pass::Kind::Blocks;
  if (c.large && pass.kind == Pass::Kind::Scales)
    for (size_t i = 2; i < op.inputs.size(); ++i)  // ScaleTensor, ZeroPointTensor
      VKDML_TRY(CheckWithinRange(c, op.inputs[i], "InputTensor, IndicesTensor and OutputTensor"));
  UINT slot = 0;
  VKDML_TRY(c.Slot(pass.plan, &slot));
  Step step;
  step.kind = pass.kind;
  step.plain =
      c.Elementwise(BlocksModule(pass.kind, FourBit(op.blockType), c.indexSize, c.large && blocks),
                    pass.plan, slot, 1);
  Specialization& spec = step.plain.spec;
  spec[VKDML_SPEC_OUTPUT_SIZE] = op.outputs[0].elemSize;  // ScaleTensor's too
  const UINT unit = !blocks || c.large      ? 1
                    : Octets(op, pass.plan) ? 8
                    : Pairs(op, pass.plan)  ? 2
                                            : 1;
  if (unit > 1) spec[VKDML_SPEC_UNIT] = unit;
  if (!c.large) {  // an invocation per unit, all at once: their loads in flight together
    const UINT64 perGroup = c.caps.groupSize;
    step.plain.groups = c.Groups((pass.plan.count / unit + perGroup - 1) / perGroup);
  }
  spec[VKDML_SPEC_ELEMENT_KIND] =
      op.blockType == VKDML_BLOCK_QUANTIZED_TYPE_INT4 ? VKDML_KIND_SIGNED : VKDML_KIND_UNSIGNED;
  c.set.plans[slot].params = pass.kind == Pass::Kind::Scales
                                 ? shader::uvec4{{0, 0, 0, BlockZeroPoint(op.blockType)}}
                                 : op.blockParams;
  c.set.wordBindings = true;
  c.set.blockWords = 2 * op.blocks;
  step.plain.whole = c.large && !blocks;
  if (c.large && blocks) {  // a value's number stays below 2^32 (lib/operators/block_quantized.cpp)
    Kernel& k = step.plain;
    k.directUnit = op.outputs[0].elemSize;
    k.directReach = k.directUnit == 2 ? 2 : 0;  // a float16's word, stored atomically
    k.indexedUnit = 1;
    k.indexedNibbles = FourBit(op.blockType);
    VKDML_TRY(ChooseLargeDispatches(c, pass.plan, Pass::Kind::Gather, &k));
  }
  c.set.steps.push_back(step);
  return {};
}

void ListBlocksModules(const ModuleSink& sink) {
  for (bool fourBit : {true, false}) {
    for (UINT index : {4u, 8u})
      for (bool large : {false, true})
        sink(BlocksModule(Pass::Kind::Blocks, fourBit, index, large));
    sink(BlocksModule(Pass::Kind::ZeroPoints, fourBit, 4));
  }
  sink(BlocksModule(Pass::Kind::Scales, true, 4));
}

}  // namespace vkdml::detail
