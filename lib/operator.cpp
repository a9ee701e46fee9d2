#include "operator.h"

#include "error.h"

namespace vkdml::detail {

#define VKDML_OPERATOR_LIST                                                               \
  "DML_OPERATOR_GATHER (67), DML_OPERATOR_SCATTER_ELEMENTS (94), "                        \
  "DML_OPERATOR_GATHER_ELEMENTS (107), "                                                  \
  "DML_OPERATOR_GATHER_ND (108), DML_OPERATOR_SCATTER_ND (109), DML_OPERATOR_GATHER_ND1 " \
  "(140), VKDML_OPERATOR_SCATTER_ND_REDUCE (65537) or "                                   \
  "VKDML_OPERATOR_SCATTER_ELEMENTS_REDUCE (65538)"

Result ValidateOperatorTensors(const DML_TENSOR_DESC* input, const DML_TENSOR_DESC* indices,
                               bool hasUpdates, const DML_TENSOR_DESC* updates,
                               const DML_TENSOR_DESC* output, OperatorTensors* out) {
  OperatorTensors& t = *out;
  VKDML_TRY(ValidateTensor(input, "InputTensor", TensorRole::Data, &t.input));
  VKDML_TRY(ValidateTensor(indices, "IndicesTensor", TensorRole::Indices, &t.indices));
  if (hasUpdates) VKDML_TRY(ValidateTensor(updates, "UpdatesTensor", TensorRole::Data, &t.updates));
  VKDML_TRY(ValidateTensor(output, "OutputTensor", TensorRole::Data, &t.output));
  VKDML_TRY(CheckSameRank(t.indices, t.input));
  if (hasUpdates) VKDML_TRY(CheckSameRank(t.updates, t.input));
  VKDML_TRY(CheckSameRank(t.output, t.input));
  if (hasUpdates) VKDML_TRY(CheckSameType(t.updates, t.input));
  VKDML_TRY(CheckSameType(t.output, t.input));
  return CheckNoOverlap(t.output);
}

namespace {

Result CheckReduceFunction(VKDML_REDUCE_FUNCTION f) {
  if (f > VKDML_REDUCE_FUNCTION_MIN)
    return Fail(Status::InvalidArgument, "ReduceFunction is ", UINT(f),
                ", expected VKDML_REDUCE_FUNCTION_NONE (0), _ADD (1), _MULTIPLY (2), _MAX (3) or "
                "_MIN (4)");
  return {};
}

}  // namespace

Result BuildOperator(const DML_OPERATOR_DESC& desc, OperatorImpl* op) {
  if (!desc.Desc) return Fail(Status::InvalidArgument, "DML_OPERATOR_DESC.Desc is null");
  Result r;
  op->type = desc.Type;
  switch (desc.Type) {
    case DML_OPERATOR_GATHER:
      op->name = "GATHER";
      r = BuildGather(*static_cast<const DML_GATHER_OPERATOR_DESC*>(desc.Desc), op);
      break;
    case DML_OPERATOR_GATHER_ELEMENTS:
      op->name = "GATHER_ELEMENTS";
      r = BuildGatherElements(*static_cast<const DML_GATHER_ELEMENTS_OPERATOR_DESC*>(desc.Desc),
                              op);
      break;
    case DML_OPERATOR_GATHER_ND: {
      op->name = "GATHER_ND";
      const auto& nd = *static_cast<const DML_GATHER_ND_OPERATOR_DESC*>(desc.Desc);
      DML_GATHER_ND1_OPERATOR_DESC nd1{nd.InputTensor,           nd.IndicesTensor,
                                       nd.OutputTensor,          nd.InputDimensionCount,
                                       nd.IndicesDimensionCount, 0};
      r = BuildGatherND(nd1, false, op);
      break;
    }
    case DML_OPERATOR_GATHER_ND1:
      op->name = "GATHER_ND1";
      r = BuildGatherND(*static_cast<const DML_GATHER_ND1_OPERATOR_DESC*>(desc.Desc), true, op);
      break;
    case DML_OPERATOR_SCATTER_ND:
      op->name = "SCATTER_ND";
      r = BuildScatterND(*static_cast<const DML_SCATTER_ND_OPERATOR_DESC*>(desc.Desc),
                         VKDML_REDUCE_FUNCTION_NONE, op);
      break;
    case DML_OPERATOR_SCATTER_ELEMENTS:
      op->name = "SCATTER_ELEMENTS";
      r = BuildScatterElements(*static_cast<const DML_SCATTER_OPERATOR_DESC*>(desc.Desc),
                               VKDML_REDUCE_FUNCTION_NONE, op);
      break;
    case VKDML_OPERATOR_SCATTER_ND_REDUCE: {
      op->name = "SCATTER_ND_REDUCE";
      const auto& d = *static_cast<const VKDML_SCATTER_ND_REDUCE_OPERATOR_DESC*>(desc.Desc);
      const DML_SCATTER_ND_OPERATOR_DESC nd{d.InputTensor,         d.IndicesTensor,
                                            d.UpdatesTensor,       d.OutputTensor,
                                            d.InputDimensionCount, d.IndicesDimensionCount};
      r = CheckReduceFunction(d.ReduceFunction);
      if (r.ok()) r = BuildScatterND(nd, d.ReduceFunction, op);
      break;
    }
    case VKDML_OPERATOR_SCATTER_ELEMENTS_REDUCE: {
      op->name = "SCATTER_ELEMENTS_REDUCE";
      const auto& d = *static_cast<const VKDML_SCATTER_ELEMENTS_REDUCE_OPERATOR_DESC*>(desc.Desc);
      const DML_SCATTER_OPERATOR_DESC se{d.InputTensor, d.IndicesTensor, d.UpdatesTensor,
                                         d.OutputTensor, d.Axis};
      r = CheckReduceFunction(d.ReduceFunction);
      if (r.ok()) r = BuildScatterElements(se, d.ReduceFunction, op);
      break;
    }
    default:
      return Fail(Status::InvalidArgument, "DML_OPERATOR_DESC.Type is ", UINT(desc.Type),
                  ", expected an operator vkdml implements: " VKDML_OPERATOR_LIST);
  }
  if (!r.ok()) r.message = Str(op->name, ": ", r.message);
  return r;
}

}  // namespace vkdml::detail
