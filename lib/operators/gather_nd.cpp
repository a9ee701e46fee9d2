// DML_OPERATOR_GATHER_ND and DML_OPERATOR_GATHER_ND1: validation and lowering.
#include "operators/error.h"
#include "operators/nd_layout.h"
#include "operators/operator.h"

namespace vkdml::detail {

Result BuildGatherND(const DML_GATHER_ND1_OPERATOR_DESC& desc, bool hasBatch, OperatorImpl* op) {
  OperatorTensors t;
  VKDML_TRY(ValidateOperatorTensors(desc.InputTensor, desc.IndicesTensor, false, nullptr,
                                    desc.OutputTensor, &t));
  const Tensor &input = t.input, &indices = t.indices, &output = t.output;

  NdLayout l;
  VKDML_TRY(ValidateNdLayout(input, indices, desc.InputDimensionCount, desc.IndicesDimensionCount,
                             hasBatch ? desc.BatchDimensionCount : 0, &l));
  VKDML_TRY(CheckSizes(output, l.resultRank, l.result, l.resultWhat));

  Pass gather;
  gather.plan = NdPlan(l, input, input, indices, output);
  op->inputs = {input, indices};
  op->outputs = {output};
  op->passes = {gather};
  for (UINT j = 0; j < l.k; ++j) op->componentSizes.push_back(input.ActualSize(l.r, l.b + j));
  return {};
}

}  // namespace vkdml::detail
