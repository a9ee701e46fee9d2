// VKDML_OPERATOR_EMBEDDING_BAG: validation and lowering (dml.h states the shapes and values).
//
// Vulkan guarantees 4 storage buffers a stage, and a bag reads the table, IndicesTensor, its
// bounds and its weights, writes OutputTensor, and checked mode needs the scratch: so a Bounds
// pass first clamps OffsetsTensor's bounds into the scratch, and a Weights pass (with
// PerSampleWeightsTensor) converts the weights there to float32. The Bag pass then reads the
// table, IndicesTensor and the scratch (operator.h: Pass::Kind), an invocation per group of 4
// output values adding its bag's rows in entry order (glsl/embedding_bag.comp).
#include "operators/error.h"
#include "operators/operator.h"

namespace vkdml::detail {

namespace {

Result CheckOptions(const VKDML_EMBEDDING_BAG_OPERATOR_DESC& desc) {
  if (desc.Mode > VKDML_EMBEDDING_BAG_MODE_MAX)
    return Fail(Status::InvalidArgument, "Mode is ", UINT(desc.Mode),
                ", expected VKDML_EMBEDDING_BAG_MODE_SUM (0), _MEAN (1) or _MAX (2)");
  if (desc.Format) VKDML_TRY(CheckQuantizedFormat(desc.Format));
  if (desc.IncludeLastOffset != 0 && desc.IncludeLastOffset != 1)
    return Fail(Status::InvalidArgument, "IncludeLastOffset is ", desc.IncludeLastOffset,
                ", expected 0 or 1");
  if (desc.HasPaddingIndex != 0 && desc.HasPaddingIndex != 1)
    return Fail(Status::InvalidArgument, "HasPaddingIndex is ", desc.HasPaddingIndex,
                ", expected 0 or 1");
  return {};
}

// A table of values: FLOAT32 or FLOAT16 {1, ..., 1, rows, width}, a row's values consecutive.
Result CheckValueTable(const Tensor& input) {
  if (input.dims < 2)
    return Fail(Status::InvalidArgument, "InputTensor.DimensionCount is 1, expected 2 to ",
                kMaxDims, " (its last two dimensions are the table's rows and values per row)");
  if (input.type != DML_TENSOR_DATA_TYPE_FLOAT32 && input.type != DML_TENSOR_DATA_TYPE_FLOAT16)
    return Fail(Status::InvalidArgument, "InputTensor.DataType is ", DataTypeName(input.type),
                ", expected FLOAT32 or FLOAT16 (or UINT8 blocks with a Format)");
  const UINT sizes[2] = {input.sizes[input.dims - 2], input.sizes[input.dims - 1]};
  const std::string what[2] = {"the table's rows", "the table's values per row"};
  VKDML_TRY(CheckSizes(input, 2, sizes, what));
  return CheckLastStride(input, "a row's values are consecutive");
}

// A tensor of sizes {1, ..., 1, n}, n free.
Result CheckList(const Tensor& t, const char* what) {
  const std::string why = what;
  return CheckSizes(t, 1, &t.sizes[t.dims - 1], &why);
}

}  // namespace

Result BuildEmbeddingBag(const VKDML_EMBEDDING_BAG_OPERATOR_DESC& desc, OperatorImpl* op) {
  VKDML_TRY(CheckOptions(desc));
  Tensor input, indices, offsets, weights, output;
  const bool weighted = desc.PerSampleWeightsTensor != nullptr;
  VKDML_TRY(ValidateTensor(desc.InputTensor, "InputTensor", TensorRole::Data, &input));
  VKDML_TRY(ValidateTensor(desc.IndicesTensor, "IndicesTensor", TensorRole::Indices, &indices));
  VKDML_TRY(ValidateTensor(desc.OffsetsTensor, "OffsetsTensor", TensorRole::Indices, &offsets));
  if (weighted)
    VKDML_TRY(ValidateTensor(desc.PerSampleWeightsTensor, "PerSampleWeightsTensor",
                             TensorRole::Data, &weights));
  VKDML_TRY(ValidateTensor(desc.OutputTensor, "OutputTensor", TensorRole::Data, &output));
  VKDML_TRY(CheckSameRank(indices, input));
  VKDML_TRY(CheckSameRank(offsets, input));
  if (weighted) VKDML_TRY(CheckSameRank(weights, input));
  VKDML_TRY(CheckSameRank(output, input));

  if (desc.Format)
    VKDML_TRY(CheckQuantizedTable(input, desc.Format));
  else
    VKDML_TRY(CheckValueTable(input));
  const UINT dims = input.dims, last = dims - 1;
  const UINT rows = input.sizes[dims - 2];
  const UINT width =
      desc.Format ? input.sizes[last] / QuantizedBlockBytes(desc.Format) * 32 : input.sizes[last];

  VKDML_TRY(CheckList(indices, "the entries"));
  const UINT entries = indices.sizes[last];
  VKDML_TRY(CheckList(offsets, desc.IncludeLastOffset ? "the bags' starts and the last's end"
                                                      : "the bags' starts"));
  VKDML_TRY(CheckSameType(offsets, indices));
  const UINT bounds = offsets.sizes[last];
  if (desc.IncludeLastOffset && bounds < 2)
    return Fail(Status::InvalidArgument, "OffsetsTensor.Sizes[", last,
                "] is 1, expected at least 2 with IncludeLastOffset (a bag's start and its end)");
  const UINT bags = bounds - (desc.IncludeLastOffset ? 1 : 0);

  if (desc.Format) {
    if (output.type != DML_TENSOR_DATA_TYPE_FLOAT32 && output.type != DML_TENSOR_DATA_TYPE_FLOAT16)
      return Fail(Status::InvalidArgument, "OutputTensor.DataType is ", DataTypeName(output.type),
                  ", expected FLOAT32 or FLOAT16");
  } else {
    VKDML_TRY(CheckSameType(output, input));
  }
  const UINT outSizes[2] = {bags, width};
  const std::string outWhat[2] = {
      Str("bags: OffsetsTensor's entries", desc.IncludeLastOffset ? ", less 1" : ""),
      "InputTensor's values per row"};
  VKDML_TRY(CheckSizes(output, 2, outSizes, outWhat));
  VKDML_TRY(CheckNoOverlap(output));
  VKDML_TRY(CheckLastStride(output, "a row's values are consecutive"));
  if (weighted) {
    if (desc.Mode != VKDML_EMBEDDING_BAG_MODE_SUM)
      return Fail(Status::InvalidArgument, "PerSampleWeightsTensor is given with Mode ",
                  desc.Mode == VKDML_EMBEDDING_BAG_MODE_MEAN ? "MEAN" : "MAX",
                  ", expected null: weights apply to VKDML_EMBEDDING_BAG_MODE_SUM only");
    VKDML_TRY(CheckSameType(weights, output));
    const std::string what = "IndicesTensor's entries";
    VKDML_TRY(CheckSizes(weights, 1, &entries, &what));
  }
  if (desc.HasPaddingIndex && desc.PaddingIndex >= rows)
    return Fail(Status::InvalidArgument, "PaddingIndex is ", desc.PaddingIndex,
                ", expected a row of InputTensor, below ", rows,
                " (PyTorch's negative padding_idx p is row ", rows, " + p)");

  Pass bound;  // the bags' bounds, and one more: the last bag's end
  bound.kind = Pass::Kind::Bounds;
  bound.plan.AddDim(bags + 1, 0, 0, offsets.strides[last], 0);
  bound.plan.AddComponent(entries, 0);
  Pass weight;
  weight.kind = Pass::Kind::Weights;
  if (weighted) weight.plan.AddDim(entries, 0, 0, weights.strides[last], 0);
  Pass bag;
  bag.kind = Pass::Kind::Bag;
  bag.plan.AddDim(bags, output.strides[dims - 2] * output.elemSize, 0, 0, 1);
  bag.plan.AddDim((width + 3) / 4, 4 * output.elemSize, 4, 0, 0);
  bag.plan.AddComponent(rows, input.strides[dims - 2] * input.elemSize);
  bag.plan.componentStride = indices.strides[last];

  op->inputs = {input, indices, offsets};
  if (weighted) op->inputs.push_back(weights);
  op->outputs = {output};
  op->passes = {bound};
  if (weighted) op->passes.push_back(weight);
  op->passes.push_back(bag);
  op->componentSizes = {rows};
  op->format = desc.Format;
  op->bag = true;
  op->bagMode = desc.Mode;
  op->bagFlags = (desc.Mode == VKDML_EMBEDDING_BAG_MODE_MEAN ? VKDML_BAG_MEAN : 0) |
                 (weighted ? VKDML_BAG_WEIGHTED : 0) |
                 (desc.IncludeLastOffset ? VKDML_BAG_LAST_OFFSET : 0);
  op->padding = desc.HasPaddingIndex ? desc.PaddingIndex : VKDML_NO_PADDING;
  op->width = width;
  op->entries = entries;
  return {};
}

}  // namespace vkdml::detail
