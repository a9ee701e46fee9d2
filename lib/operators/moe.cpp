// VKDML_OPERATOR_MOE_PERMUTE and _UNPERMUTE: validation and lowering (dml.h states the shapes and
// values).
//
// A permute is a stable counting sort of the entries by expert: MoeKeys writes each entry's key
// (its expert, or ExpertCount where dropped) and number into the scratch, kernel choice adds
// glsl/radix_sort.comp's passes (stable: an entry's rank among equal keys is its order), and
// each output is then written from the sorted keys: MoeRows, MoeOffsets (a bisection per
// expert), MoePermutation and MoeInverse, one output each (Vulkan's four storage buffers a
// stage: the source, the ids, the output and the scratch). An unpermute converts the weights
// into the scratch first (MoeWeights), so MoeUnpermute reads the rows, the inverse and the
// scratch.
#include "operators/error.h"
#include "operators/operator.h"

namespace vkdml::detail {

namespace {

constexpr UINT kMaxExperts = 1u << 24;

// Rows of values: FLOAT32 or FLOAT16 {rows, width}, a row's values consecutive.
Result CheckRows(const Tensor& t, UINT rows, UINT width, const std::string what[2]) {
  if (t.type != DML_TENSOR_DATA_TYPE_FLOAT32 && t.type != DML_TENSOR_DATA_TYPE_FLOAT16)
    return Fail(Status::InvalidArgument, t.field, ".DataType is ", DataTypeName(t.type),
                ", expected FLOAT32 or FLOAT16");
  const UINT sizes[2] = {rows, width};
  VKDML_TRY(CheckSizes(t, 2, sizes, what));
  return CheckLastStride(t, "a row's values are consecutive");
}

// A free-sized tensor's last two sizes, at least rank 2.
Result LastTwo(const Tensor& t, UINT* a, UINT* b) {
  if (t.dims < 2)
    return Fail(Status::InvalidArgument, t.field, ".DimensionCount is 1, expected 2 to ", kMaxDims,
                " (its last two dimensions are the tokens and k)");
  *a = t.sizes[t.dims - 2];
  *b = t.sizes[t.dims - 1];
  return {};
}

Result CheckIds(const Tensor& t, bool outputIndex) {
  const bool ok = t.type == DML_TENSOR_DATA_TYPE_INT32 || t.type == DML_TENSOR_DATA_TYPE_INT64 ||
                  (!outputIndex && (t.type == DML_TENSOR_DATA_TYPE_UINT32 ||
                                    t.type == DML_TENSOR_DATA_TYPE_UINT64));
  if (!ok)
    return Fail(
        Status::InvalidArgument, t.field, ".DataType is ", DataTypeName(t.type),
        outputIndex ? ", expected INT32 or INT64" : ", expected INT32, INT64, UINT32 or UINT64");
  return {};
}

Pass MoePass(Pass::Kind kind, UINT64 count, UINT output = 0) {
  Pass pass;
  pass.kind = kind;
  pass.plan.AddDim(UINT(count), 0, 0, 0, 0);
  pass.output = output;
  return pass;
}

}  // namespace

Result BuildMoePermute(const VKDML_MOE_PERMUTE_OPERATOR_DESC& desc, OperatorImpl* op) {
  if (desc.ExpertCount == 0 || desc.ExpertCount > kMaxExperts)
    return Fail(Status::InvalidArgument, "ExpertCount is ", desc.ExpertCount, ", expected 1 to ",
                kMaxExperts);
  Tensor input, ids, output, offsets, perm, inverse;
  VKDML_TRY(ValidateTensor(desc.InputTensor, "InputTensor", TensorRole::Data, &input));
  VKDML_TRY(ValidateTensor(desc.TopkIdsTensor, "TopkIdsTensor", TensorRole::Indices, &ids));
  VKDML_TRY(ValidateTensor(desc.OutputTensor, "OutputTensor", TensorRole::Data, &output));
  VKDML_TRY(ValidateTensor(desc.OffsetsTensor, "OffsetsTensor", TensorRole::Indices, &offsets));
  VKDML_TRY(
      ValidateTensor(desc.PermutationTensor, "PermutationTensor", TensorRole::Indices, &perm));
  VKDML_TRY(ValidateTensor(desc.InverseTensor, "InverseTensor", TensorRole::Indices, &inverse));
  VKDML_TRY(CheckIds(ids, false));
  UINT tokens = 0, k = 0;
  VKDML_TRY(LastTwo(ids, &tokens, &k));
  const UINT64 n = UINT64(tokens) * k;
  if (n > 0x7FFFFFFFu)
    return Fail(Status::InvalidArgument, "TopkIdsTensor holds ", n,
                " entries (tokens times k), expected fewer than 2^31");
  if (input.dims < 2)
    return Fail(Status::InvalidArgument, "InputTensor.DimensionCount is 1, expected 2 to ",
                kMaxDims, " (its last two dimensions are the tokens and a row's values)");
  const UINT width = input.sizes[input.dims - 1];
  const std::string inWhat[2] = {"TopkIdsTensor's tokens", "a row's values"};
  VKDML_TRY(CheckRows(input, tokens, width, inWhat));
  VKDML_TRY(CheckSameType(output, input));
  const std::string outWhat[2] = {"TopkIdsTensor's entries, tokens times k",
                                  "InputTensor's values per row"};
  VKDML_TRY(CheckRows(output, UINT(n), width, outWhat));
  for (Tensor* t : {&offsets, &perm, &inverse}) VKDML_TRY(CheckIds(*t, true));
  const UINT offsetCount = desc.ExpertCount + 1, entries = UINT(n);
  const std::string offsetWhat = "ExpertCount + 1";
  VKDML_TRY(CheckSizes(offsets, 1, &offsetCount, &offsetWhat));
  const std::string permWhat = "TopkIdsTensor's entries, tokens times k";
  VKDML_TRY(CheckSizes(perm, 1, &entries, &permWhat));
  const UINT invSizes[2] = {tokens, k};
  const std::string invWhat[2] = {"TopkIdsTensor's tokens", "TopkIdsTensor's k"};
  VKDML_TRY(CheckSizes(inverse, 2, invSizes, invWhat));
  for (Tensor* t : {&output, &offsets, &perm, &inverse}) VKDML_TRY(CheckNoOverlap(*t));

  op->inputs = {input, ids};
  op->outputs = {output, offsets, perm, inverse};
  op->passes = {MoePass(Pass::Kind::MoeKeys, n), MoePass(Pass::Kind::MoeRows, n, 0),
                MoePass(Pass::Kind::MoeOffsets, offsetCount, 1),
                MoePass(Pass::Kind::MoePermutation, n, 2), MoePass(Pass::Kind::MoeInverse, n, 3)};
  op->componentSizes = {desc.ExpertCount};
  op->moe = true;
  op->experts = desc.ExpertCount;
  op->topk = k;
  op->tokens = tokens;
  op->width = width;
  op->entries = entries;
  return {};
}

Result BuildMoeUnpermute(const VKDML_MOE_UNPERMUTE_OPERATOR_DESC& desc, OperatorImpl* op) {
  Tensor input, inverse, weights, output;
  VKDML_TRY(ValidateTensor(desc.InputTensor, "InputTensor", TensorRole::Data, &input));
  VKDML_TRY(ValidateTensor(desc.InverseTensor, "InverseTensor", TensorRole::Indices, &inverse));
  VKDML_TRY(ValidateTensor(desc.WeightsTensor, "WeightsTensor", TensorRole::Data, &weights));
  VKDML_TRY(ValidateTensor(desc.OutputTensor, "OutputTensor", TensorRole::Data, &output));
  VKDML_TRY(CheckIds(inverse, false));
  UINT tokens = 0, k = 0;
  VKDML_TRY(LastTwo(inverse, &tokens, &k));
  if (UINT64(tokens) * k > 0x7FFFFFFFu)
    return Fail(Status::InvalidArgument, "InverseTensor holds ", UINT64(tokens) * k,
                " entries (tokens times k), expected fewer than 2^31");
  if (input.dims < 2)
    return Fail(Status::InvalidArgument, "InputTensor.DimensionCount is 1, expected 2 to ",
                kMaxDims, " (its last two dimensions are the rows and a row's values)");
  const UINT rows = input.sizes[input.dims - 2], width = input.sizes[input.dims - 1];
  const std::string inWhat[2] = {"the rows", "a row's values"};
  VKDML_TRY(CheckRows(input, rows, width, inWhat));
  if (weights.type != DML_TENSOR_DATA_TYPE_FLOAT32 && weights.type != DML_TENSOR_DATA_TYPE_FLOAT16)
    return Fail(Status::InvalidArgument, "WeightsTensor.DataType is ", DataTypeName(weights.type),
                ", expected FLOAT32 or FLOAT16");
  const UINT weightSizes[2] = {tokens, k};
  const std::string weightWhat[2] = {"InverseTensor's tokens", "InverseTensor's k"};
  VKDML_TRY(CheckSizes(weights, 2, weightSizes, weightWhat));
  const std::string outWhat[2] = {"InverseTensor's tokens", "InputTensor's values per row"};
  VKDML_TRY(CheckRows(output, tokens, width, outWhat));
  VKDML_TRY(CheckNoOverlap(output));

  op->inputs = {input, inverse, weights};
  op->outputs = {output};
  const UINT64 n = UINT64(tokens) * k;
  op->passes = {MoePass(Pass::Kind::MoeWeights, n), MoePass(Pass::Kind::MoeUnpermute, tokens)};
  op->componentSizes = {rows};
  op->moe = true;
  op->topk = k;
  op->tokens = tokens;
  op->width = width;
  op->entries = UINT(n);
  return {};
}

}  // namespace vkdml::detail
