// Embedding bags (VKDML_OPERATOR_EMBEDDING_BAG): glsl/embedding_bag.comp's stages, a module per
// stage, table layout, index size and float arithmetic; MAX (or the sum's ADD) and the output
// size are specialization constants, the options, padding row and width the plan's
// (PackedPlan::params), so one pipeline serves bags of any shape. Like the quantized rows' kernels
// they read and write 32-bit words on every device, so every binding starts on a word
// (KernelSet::wordBindings), and their bases are bytes (Kernel::unit 1).
#include <algorithm>

#include "kernel_choice.h"

namespace vkdml::detail {

namespace {

// The fewest entries a dispatch folds where loops are bounded: its loop iterations beside the
// entries' (the mean's division, the grid-stride loop) are few.
constexpr UINT64 kBagChunkFloor = 64;

// The table's token: "f32", "f16", "q8_0" or "q4_0".
std::string TableToken(VKDML_QUANTIZED_FORMAT format, UINT elemSize) {
  if (format) return format == VKDML_QUANTIZED_FORMAT_Q8_0 ? "q8_0" : "q4_0";
  return elemSize == 2 ? "f16" : "f32";
}

// The float arithmetic a bag's sums and products need (glsl/arith.glsl, as a float32 ADD
// reduction's): "_dp" or "_w" where the device would flush float32 denormals, "" for MAX (it
// only compares) and FLOAT16 tables (whose values and weighted values are multiples of 2^-48:
// no sum or product of them is a float32 denormal).
std::string ArithSuffix(VKDML_EMBEDDING_BAG_MODE mode, const std::string& table,
                        const Capabilities& caps) {
  if (mode == VKDML_EMBEDDING_BAG_MODE_MAX || table == "f16") return "";
  return FloatSuffix(VKDML_REDUCE_FUNCTION_ADD, VKDML_KIND_FLOAT, 4, caps);
}

// "bag_bounds_i32", "bag_weights", "embedding_bag_q4_0_i64_w".
std::string BagModule(Pass::Kind kind, const std::string& table, UINT indexSize,
                      const std::string& arith) {
  if (kind == Pass::Kind::Bounds) return "bag_bounds" + IndexSuffix(indexSize);
  if (kind == Pass::Kind::Weights) return "bag_weights";
  return "embedding_bag_" + table + IndexSuffix(indexSize) + arith;
}

}  // namespace

Result ChooseBag(Choice& c, const Pass& pass) {
  const OperatorImpl& op = c.op;
  const std::string table = TableToken(op.format, op.inputs[0].elemSize);
  UINT slot = 0;
  VKDML_TRY(c.Slot(pass.plan, &slot));
  Step step;
  step.kind = pass.kind;
  step.plain = c.Elementwise(
      BagModule(pass.kind, table, c.indexSize, ArithSuffix(op.bagMode, table, c.caps)), pass.plan,
      slot, 1);
  Specialization& spec = step.plain.spec;
  if (pass.kind == Pass::Kind::Weights) spec[VKDML_SPEC_OUTPUT_SIZE] = op.inputs[3].elemSize;
  if (pass.kind == Pass::Kind::Bag) {  // the bounds' pass is the same for every mode
    spec[VKDML_SPEC_OUTPUT_SIZE] = op.outputs[0].elemSize;
    spec[VKDML_SPEC_REDUCE] =
        op.bagMode == VKDML_EMBEDDING_BAG_MODE_MAX ? VKDML_REDUCE_MAX : VKDML_REDUCE_ADD;
    spec[VKDML_SPEC_ELEMENT_KIND] = VKDML_KIND_FLOAT;
  }
  c.set.plans[slot].params = {
      {op.bagFlags | (op.outOfRange == VKDML_OUT_OF_RANGE_MODE_FILL ? VKDML_BAG_FILL : 0),
       op.padding, op.width, 0}};
  c.set.wordBindings = true;
  if (pass.kind == Pass::Kind::Bounds) c.set.boundsWords = pass.plan.count;
  if (pass.kind == Pass::Kind::Weights) c.set.weightWords = pass.plan.count;
  if (pass.kind != Pass::Kind::Bag) {
    c.set.steps.push_back(step);
    return {};
  }
  // A group of 4 values an invocation where the device allows. Where loops are bounded
  // (Capabilities::maxLoop, summed over an invocation's loops), a bag's entries are folded
  // `chunk` at a time, a dispatch each, carrying each fold in the scratch: a bag may hold every
  // entry.
  const UINT64 count = pass.plan.count, group = c.caps.groupSize;
  step.plain.groups = c.Groups((count + group - 1) / group);
  const UINT64 perInvocation =
      (count + UINT64(step.plain.groups) * group - 1) / (UINT64(step.plain.groups) * group);
  const UINT64 chunk = std::max<UINT64>(kBagChunkFloor, c.caps.maxLoop / perInvocation / 2);
  step.plain.begin = 0;
  step.plain.end = 0xFFFFFFFFu;
  if (c.caps.maxLoop == UINT64(-1) || op.entries <= chunk) {
    c.set.steps.push_back(step);
    return {};
  }
  for (UINT64 begin = 0; begin < op.entries; begin += chunk) {
    step.plain.begin = UINT(begin);
    step.plain.end = UINT(std::min<UINT64>(begin + chunk, op.entries));
    c.set.steps.push_back(step);
  }
  c.set.partialWords = count * VKDML_BAG_PARTIAL_WORDS;
  return {};
}

void ListBagModules(const ModuleSink& sink) {
  for (UINT index : {4u, 8u}) {
    sink(BagModule(Pass::Kind::Bounds, "", index, ""));
    for (const char* table : {"f32", "f16", "q8_0", "q4_0"})
      for (auto mode : {VKDML_EMBEDDING_BAG_MODE_SUM, VKDML_EMBEDDING_BAG_MODE_MAX})
        ForEachCapabilities([&](const Capabilities& caps) {
          sink(BagModule(Pass::Kind::Bag, table, index, ArithSuffix(mode, table, caps)));
        });
  }
  sink(BagModule(Pass::Kind::Weights, "", 4, ""));
}

}  // namespace vkdml::detail
