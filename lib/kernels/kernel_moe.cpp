// MoE permute and unpermute (VKDML_OPERATOR_MOE_PERMUTE, _UNPERMUTE; operators/moe.cpp):
// glsl/moe.comp's stages, with glsl/radix_sort.comp's stable sort between a permute's keys and
// its outputs. Each stage reads its own values from its plan (interface.h: PackedPlan, the MoE
// fields), so one pipeline serves every shape. Every tensor is read and written in 32-bit words
// (KernelSet::wordBindings), the permuted rows and an unpermute's rows in uvec4s where both row
// layouts and bindings are on 16 bytes (Step::wide), and a thread per output word where float16
// rows do not all start on a word (UseHalves). Not on the large path: every tensor fits one
// descriptor.
#include "kernels/kernel_choice.h"

namespace vkdml::detail {

namespace {

constexpr char kRows[] = "moe_rows", kRowsWide[] = "moe_rows_v4", kRowsHalves[] = "moe_rows_h";
constexpr char kWide[] = "_v4", kHalves[] = "_h";

std::string KeysModule(UINT indexSize) {
  return "moe_keys" + IndexSuffix(indexSize);
}
std::string UnpermuteModule(UINT elemSize, UINT indexSize, const std::string& arith) {
  return Str("moe_unpermute_f", elemSize * 8, IndexSuffix(indexSize), arith);
}
const char* Module(Pass::Kind kind) {
  switch (kind) {
    case Pass::Kind::MoeOffsets:
      return "moe_offsets";
    case Pass::Kind::MoePermutation:
      return "moe_permutation";
    case Pass::Kind::MoeInverse:
      return "moe_inverse";
    default:
      return "moe_weights";
  }
}

// The strides of a {a, b} tensor's last two dimensions, in its elements.
void LastStrides(const Tensor& t, UINT* a, UINT* b) {
  *a = t.strides[t.dims - 2];
  *b = t.strides[t.dims - 1];
}

// Threads along a row of `units` (a power of 2, at most a workgroup's): the rest of a workgroup
// takes the next rows, so short rows leave no thread idle.
UINT Lanes(UINT64 units, UINT groupSize) {
  UINT lanes = 1;
  while (lanes < units && lanes < groupSize) lanes *= 2;
  return lanes;
}

// A row's stride, in `unit`-byte units.
UINT RowStride(const Tensor& t, UINT unit) {
  return UINT(UINT64(t.strides[t.dims - 2]) * t.elemSize / unit);
}

// A {rows, width} tensor's row stride in its elements (width for a single row, whose stride
// may be anything), and whether its rows need the halves' kernels: FLOAT16 with an odd width or
// an odd row stride (in values), so its rows do not all start on 32-bit words.
UINT ElementStride(const Tensor& t, UINT width) {
  return t.sizes[t.dims - 2] == 1 ? width : t.strides[t.dims - 2];
}
bool OddHalves(const Tensor& t, UINT width) {
  return t.elemSize == 2 && (width % 2 != 0 || ElementStride(t, width) % 2 != 0);
}

// The halves' kernels: a thread per 32-bit word of `out`'s span of `rows` rows, `perWord`
// elements a word.
void UseHalves(Choice& c, Step& step, shader::PackedPlan& plan, UINT64 rows, UINT width,
               UINT outStride, UINT perWord) {
  const UINT64 words = ((rows - 1) * outStride + width + perWord - 1) / perWord;
  plan.count = UINT(words);
  step.plain.groups = c.Groups((words + c.caps.groupSize - 1) / c.caps.groupSize);
}

// The step's wide kernel (uvec4s where both bindings are on 16 bytes): the plain one's, with its
// own module, plan slot and workgroups.
void UseWide(Step& step, const std::string& module, UINT slot, UINT groups) {
  step.hasWide = true;
  step.wide = step.plain;
  step.wide.module = module;
  step.wide.slot = slot;
  step.wide.unit = step.wide.align = 16;
  step.wide.groups = groups;
}

}  // namespace

Result ChooseMoe(Choice& c, const Pass& pass) {
  const OperatorImpl& op = c.op;
  if (c.large)
    return Fail(Status::Unsupported, op.name,
                ": a tensor is past this device's maxStorageBufferRange (", c.caps.maxRange,
                " bytes); every tensor must fit one descriptor");
  c.set.wordBindings = true;
  c.set.checked = false;  // ids out of range are defined (dropped): nothing to report
  c.base[VKDML_SPEC_CHECKED] = false;
  UINT slot = 0;
  VKDML_TRY(c.Slot(pass.plan, &slot));
  shader::PackedPlan& plan = c.set.plans[slot];
  const UINT n = op.entries, k = op.topk, experts = op.experts;
  // Where the sorted keys and values end up: the sort alternates halves, a digit a pass.
  UINT digits = 0;
  for (UINT top = experts; top; top >>= 8) ++digits;
  plan.sortedBase = digits % 2 ? n : 0;
  Step step;
  step.kind = pass.kind;
  step.output = pass.output;
  step.plain = c.Elementwise(Module(pass.kind), pass.plan, slot, 4);
  step.plain.spec[VKDML_SPEC_UNROLL] = 1;
  step.plain.groups = c.Groups((pass.plan.count + c.caps.groupSize - 1) / c.caps.groupSize);
  const Tensor& ids = op.Indices();
  switch (pass.kind) {
    case Pass::Kind::MoeKeys: {
      UINT s0, s1;
      LastStrides(ids, &s0, &s1);
      plan.params = {{experts, k, s0, s1}};
      step.plain.module = KeysModule(c.indexSize);
      c.set.steps.push_back(step);
      Sort(c, n, digits);
      c.set.sortWords = 2 * UINT64(n);
      return {};
    }
    case Pass::Kind::MoeRows: {  // Lanes threads a row (a workgroup for long rows)
      const Tensor &x = op.inputs[0], &rows = op.outputs[0];
      const UINT rowBytes = op.width * x.elemSize, group = c.caps.groupSize;
      UINT lanes = Lanes(rowBytes / 4, group);
      plan.params = {{experts, k, rowBytes / 4, lanes}};
      VKDML_AT(plan.direct, 0) = RowStride(x, 4);
      VKDML_AT(plan.direct, 1) = RowStride(rows, 4);
      step.plain.module = kRows;
      step.plain.groups = c.Groups((UINT64(n) * lanes + group - 1) / group);
      if (OddHalves(x, op.width) || OddHalves(rows, op.width)) {
        plan.params = {{experts, k, op.width, n}};
        VKDML_AT(plan.direct, 0) = ElementStride(x, op.width);
        VKDML_AT(plan.direct, 1) = ElementStride(rows, op.width);
        step.plain.module = kRowsHalves;
        UseHalves(c, step, plan, n, op.width, ElementStride(rows, op.width), 2);
        break;
      }
      if (rowBytes % 16 == 0 && UINT64(x.strides[x.dims - 2]) * x.elemSize % 16 == 0 &&
          UINT64(rows.strides[rows.dims - 2]) * rows.elemSize % 16 == 0) {
        UINT wideSlot = 0;
        VKDML_TRY(c.Slot(pass.plan, &wideSlot));
        shader::PackedPlan& wide = c.set.plans[wideSlot];
        wide = c.set.plans[slot];
        lanes = Lanes(rowBytes / 16, group);
        wide.params[2] = rowBytes / 16;
        wide.params[3] = lanes;
        VKDML_AT(wide.direct, 0) = RowStride(x, 16);
        VKDML_AT(wide.direct, 1) = RowStride(rows, 16);
        UseWide(step, kRowsWide, wideSlot, c.Groups((UINT64(n) * lanes + group - 1) / group));
      }
      break;
    }
    case Pass::Kind::MoeOffsets:
      plan.params = {{experts, n, op.outputs[1].strides[op.outputs[1].dims - 1], 0}};
      step.plain.spec[VKDML_SPEC_OUTPUT_SIZE] = op.outputs[1].elemSize;
      break;
    case Pass::Kind::MoePermutation:
      plan.params = {{experts, op.outputs[2].strides[op.outputs[2].dims - 1], 0, 0}};
      step.plain.spec[VKDML_SPEC_OUTPUT_SIZE] = op.outputs[2].elemSize;
      break;
    case Pass::Kind::MoeInverse: {
      UINT s0, s1;
      LastStrides(op.outputs[3], &s0, &s1);
      plan.params = {{experts, k, s0, s1}};
      step.plain.spec[VKDML_SPEC_OUTPUT_SIZE] = op.outputs[3].elemSize;
      break;
    }
    case Pass::Kind::MoeWeights: {
      const Tensor& w = op.inputs[2];
      UINT s0, s1;
      LastStrides(w, &s0, &s1);
      plan.params = {{k, s0, s1, 0}};
      step.plain.spec[VKDML_SPEC_OUTPUT_SIZE] = w.elemSize;  // the weights'
      c.set.weightWords = n;
      break;
    }
    case Pass::Kind::MoeUnpermute: {  // Lanes threads a token, a group of 4 values a thread
      const Tensor &y = op.inputs[0], &out = op.outputs[0];
      UINT s0, s1;
      LastStrides(ids, &s0, &s1);
      const UINT group = c.caps.groupSize, lanes = Lanes((op.width + 3) / 4, group);
      plan.params = {{k, y.sizes[y.dims - 2], op.width, lanes}};
      VKDML_AT(plan.direct, 0) = s0;
      VKDML_AT(plan.direct, 1) = s1;
      VKDML_AT(plan.direct, 2) = RowStride(y, 4);
      VKDML_AT(plan.direct, 3) = RowStride(out, 4);
      const std::string module =
          UnpermuteModule(y.elemSize, c.indexSize,
                          FloatSuffix(VKDML_REDUCE_FUNCTION_ADD, VKDML_KIND_FLOAT, 4, c.caps));
      step.plain.module = module;
      step.plain.spec[VKDML_SPEC_OUTPUT_SIZE] = out.elemSize;
      step.plain.groups = c.Groups((UINT64(op.tokens) * lanes + group - 1) / group);
      if (OddHalves(y, op.width) || OddHalves(out, op.width)) {
        plan.params[3] = op.tokens;
        VKDML_AT(plan.direct, 2) = ElementStride(y, op.width);
        VKDML_AT(plan.direct, 3) = ElementStride(out, op.width);
        step.plain.module = module + kHalves;
        UseHalves(c, step, plan, op.tokens, op.width, ElementStride(out, op.width),
                  out.elemSize == 2 ? 2 : 1);
        break;
      }
      // A uvec4 of each entry's row a thread where OutputTensor has InputTensor's type and both
      // row layouts (and, when recorded, both bindings) are on 16 bytes.
      const UINT rowBytes = op.width * y.elemSize;
      if (out.elemSize == y.elemSize && rowBytes % 16 == 0 &&
          UINT64(y.strides[y.dims - 2]) * y.elemSize % 16 == 0 &&
          UINT64(out.strides[out.dims - 2]) * out.elemSize % 16 == 0) {
        UINT wideSlot = 0;
        VKDML_TRY(c.Slot(pass.plan, &wideSlot));
        shader::PackedPlan& wide = c.set.plans[wideSlot];
        wide = c.set.plans[slot];
        const UINT wideLanes = Lanes(rowBytes / 16, group);
        wide.params[2] = rowBytes / 16;
        wide.params[3] = wideLanes;
        VKDML_AT(wide.direct, 2) = RowStride(y, 16);
        VKDML_AT(wide.direct, 3) = RowStride(out, 16);
        UseWide(step, module + kWide, wideSlot,
                c.Groups((UINT64(op.tokens) * wideLanes + group - 1) / group));
      }
      break;
    }
    default:
      return Fail(Status::Internal, "internal: ", op.name, " has a pass of another operator");
  }
  c.set.steps.push_back(step);
  return {};
}

void ListMoeModules(const ModuleSink& sink) {
  for (UINT index : {4u, 8u}) {
    sink(KeysModule(index));
    for (UINT elem : {4u, 2u})
      ForEachCapabilities([&](const Capabilities& caps) {
        for (const char* wide : {"", kWide, kHalves})
          sink(UnpermuteModule(elem, index,
                               FloatSuffix(VKDML_REDUCE_FUNCTION_ADD, VKDML_KIND_FLOAT, 4, caps)) +
               wide);
      });
  }
  for (auto kind : {Pass::Kind::MoeOffsets, Pass::Kind::MoePermutation, Pass::Kind::MoeInverse,
                    Pass::Kind::MoeWeights})
    sink(Module(kind));
  sink(kRows);
  sink(kRowsWide);
  sink(kRowsHalves);
}

}  // namespace vkdml::detail
