#include "operator.h"

#include "error.h"

namespace vkdml::detail {

Result BuildOperator(const DML_OPERATOR_DESC& desc, OperatorImpl* op) {
  if (!desc.Desc) return Fail(Status::InvalidArgument, "DML_OPERATOR_DESC.Desc is null");
  Result r;
  op->type = desc.Type;
  switch (desc.Type) {
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
      r = BuildScatterND(*static_cast<const DML_SCATTER_ND_OPERATOR_DESC*>(desc.Desc), op);
      break;
    case DML_OPERATOR_GATHER:
    case DML_OPERATOR_SCATTER_ELEMENTS:
      return Fail(Status::Unsupported, "DML_OPERATOR_DESC.Type is ",
                  desc.Type == DML_OPERATOR_GATHER ? "DML_OPERATOR_GATHER (67)"
                                                   : "DML_OPERATOR_SCATTER_ELEMENTS (94)",
                  ", a DirectML operator vkdml does not provide yet; it provides "
                  "DML_OPERATOR_GATHER_ELEMENTS (107), DML_OPERATOR_GATHER_ND (108), "
                  "DML_OPERATOR_SCATTER_ND (109) and DML_OPERATOR_GATHER_ND1 (140)");
    default:
      return Fail(Status::InvalidArgument, "DML_OPERATOR_DESC.Type is ", int(desc.Type),
                  ", expected an operator vkdml implements: DML_OPERATOR_GATHER_ELEMENTS (107), "
                  "DML_OPERATOR_GATHER_ND (108), DML_OPERATOR_SCATTER_ND (109) or "
                  "DML_OPERATOR_GATHER_ND1 (140)");
  }
  if (!r.ok()) r.message = Str(op->name, ": ", r.message);
  for (Pass& p : op->passes) p.plan.Simplify();
  return r;
}

}  // namespace vkdml::detail
