// The Device's entry points, the library's top floor: each checks what the device can run and
// hands the work to the file that owns it (lib/README.md: the floors).
#include "device/binding_table.h"
#include "device/compiled.h"
#include "device/device.h"
#include "device/host_run.h"
#include "device/instance.h"
#include "kernels/kernels.h"
#include "operators/error.h"
#include "operators/operator.h"

namespace vkdml::detail {

namespace {

// A query's and its answer's sizes, as the feature's structs have them.
template <class Query, class Data>
Result CheckSizes(const char* feature, UINT querySize, const void* query, UINT supportSize,
                  const void* support) {
  if (!query || querySize != sizeof(Query))
    return Fail(Status::InvalidArgument, "CheckFeatureSupport(", feature, "): query is ",
                query ? Str(querySize, " bytes") : std::string("null"), ", expected ",
                sizeof(Query), " bytes");
  if (!support || supportSize != sizeof(Data))
    return Fail(Status::InvalidArgument, "CheckFeatureSupport(", feature, "): support is ",
                support ? Str(supportSize, " bytes") : std::string("null"), ", expected ",
                sizeof(Data), " bytes");
  return {};
}

Result CheckDataType(const char* feature, DML_TENSOR_DATA_TYPE type) {
  if (DataTypeSize(type) == 0)
    return Fail(Status::InvalidArgument, "CheckFeatureSupport(", feature, "): DataType is ",
                UINT(type), ", expected a DML_TENSOR_DATA_TYPE from FLOAT32 (1) to INT64 (11)");
  return {};
}

}  // namespace

Result DeviceImpl::CheckFeatureSupport(DML_FEATURE feature, UINT querySize, const void* query,
                                       UINT supportSize, void* support) const {
  switch (feature) {
    case DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT: {
      const char* name = "DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT";
      VKDML_TRY((CheckSizes<DML_FEATURE_QUERY_TENSOR_DATA_TYPE_SUPPORT,
                            DML_FEATURE_DATA_TENSOR_DATA_TYPE_SUPPORT>(name, querySize, query,
                                                                       supportSize, support)));
      const auto& q = *static_cast<const DML_FEATURE_QUERY_TENSOR_DATA_TYPE_SUPPORT*>(query);
      VKDML_TRY(CheckDataType(name, q.DataType));
      static_cast<DML_FEATURE_DATA_TENSOR_DATA_TYPE_SUPPORT*>(support)->IsSupported = 1;
      return {};
    }
    case VKDML_FEATURE_REDUCTION_SUPPORT: {
      const char* name = "VKDML_FEATURE_REDUCTION_SUPPORT";
      VKDML_TRY(
          (CheckSizes<VKDML_FEATURE_QUERY_REDUCTION_SUPPORT, VKDML_FEATURE_DATA_REDUCTION_SUPPORT>(
              name, querySize, query, supportSize, support)));
      const auto& q = *static_cast<const VKDML_FEATURE_QUERY_REDUCTION_SUPPORT*>(query);
      VKDML_TRY(CheckDataType(name, q.DataType));
      if (q.ReduceFunction > VKDML_REDUCE_FUNCTION_MEAN)
        return Fail(Status::InvalidArgument, "CheckFeatureSupport(", name, "): ReduceFunction is ",
                    UINT(q.ReduceFunction), ", expected a VKDML_REDUCE_FUNCTION (0 to 5)");
      // Every one: FLOAT64 arithmetic without shaderFloat64 in integer arithmetic.
      static_cast<VKDML_FEATURE_DATA_REDUCTION_SUPPORT*>(support)->IsSupported = 1;
      return {};
    }
    case VKDML_FEATURE_BINDING_ALIGNMENT: {
      const char* name = "VKDML_FEATURE_BINDING_ALIGNMENT";
      VKDML_TRY(
          (CheckSizes<VKDML_FEATURE_QUERY_BINDING_ALIGNMENT, VKDML_FEATURE_DATA_BINDING_ALIGNMENT>(
              name, querySize, query, supportSize, support)));
      const auto& q = *static_cast<const VKDML_FEATURE_QUERY_BINDING_ALIGNMENT*>(query);
      VKDML_TRY(CheckDataType(name, q.DataType));
      const UINT size = DataTypeSize(q.DataType);
      static_cast<VKDML_FEATURE_DATA_BINDING_ALIGNMENT*>(support)->OffsetAlignment =
          Caps().Packed(size) ? 4 : size;
      return {};
    }
    case VKDML_FEATURE_TENSOR_SIZE: {
      const char* name = "VKDML_FEATURE_TENSOR_SIZE";
      VKDML_TRY((CheckSizes<VKDML_FEATURE_QUERY_TENSOR_SIZE, VKDML_FEATURE_DATA_TENSOR_SIZE>(
          name, querySize, query, supportSize, support)));
      const DML_OPERATOR_TYPE type =
          static_cast<const VKDML_FEATURE_QUERY_TENSOR_SIZE*>(query)->OperatorType;
      if (type == VKDML_OPERATOR_OUT_OF_RANGE)
        return Fail(
            Status::InvalidArgument, "CheckFeatureSupport(", name,
            "): OperatorType is VKDML_OPERATOR_OUT_OF_RANGE; ask for the operator it wraps");
      if (!KnownOperatorType(type))
        return Fail(Status::InvalidArgument, "CheckFeatureSupport(", name, "): OperatorType is ",
                    UINT(type), ", expected ", OperatorTypeList());
      static_cast<VKDML_FEATURE_DATA_TENSOR_SIZE*>(support)->MaxTensorBytes =
          MaxTensorBytes(type, Caps());
      return {};
    }
  }
  return Fail(Status::InvalidArgument, "CheckFeatureSupport: feature is ", UINT(feature),
              ", expected DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT (0), "
              "VKDML_FEATURE_REDUCTION_SUPPORT (0x10001), VKDML_FEATURE_BINDING_ALIGNMENT "
              "(0x10002) or VKDML_FEATURE_TENSOR_SIZE (0x10003)");
}

Result DeviceImpl::CreateOperator(const DML_OPERATOR_DESC& desc, std::unique_ptr<Operator>* out) {
  VKDML_TRY(CheckNotLost());
  if (!out) return Fail(Status::InvalidArgument, "CreateOperator: out is null");
  auto op = std::make_unique<OperatorImpl>();
  VKDML_TRY(BuildOperator(desc, op.get()));
  // Every device runs every operator on every data type (kernels.h: 1- and 2-byte elements
  // without 8/16-bit storage move in 32-bit words; FLOAT64 arithmetic without shaderFloat64 is
  // integer arithmetic).
  *out = std::move(op);
  return {};
}

Result DeviceImpl::CompileOperator(const Operator& op, UINT flags,
                                   std::unique_ptr<CompiledOperator>* out) {
  VKDML_TRY(CheckNotLost());
  return detail::CompileOperator(*this, op, flags, out);
}

// The binding table's own functions check that the device is not lost: Run calls them too.
Result DeviceImpl::CreateBindingTable(const CompiledOperator& op,
                                      std::unique_ptr<BindingTable>* out) {
  return detail::CreateBindingTable(*this, op, out);
}

Result DeviceImpl::RecordDispatch(VkCommandBuffer cmd, BindingTable& table) {
  return static_cast<BindingTableImpl&>(table).Record(cmd);
}

Result DeviceImpl::Run(const CompiledOperator& op, const std::vector<const void*>& inputs,
                       const std::vector<void*>& outputs) {
  VKDML_TRY(CheckNotLost());
  return runner_->Run(op, inputs, outputs);
}

Result DeviceImpl::CreateBuffer(UINT64 size, Buffer::Memory memory, std::unique_ptr<Buffer>* out) {
  VKDML_TRY(CheckNotLost());
  if (!out) return Fail(Status::InvalidArgument, "CreateBuffer: out is null");
  if (size == 0)
    return Fail(Status::InvalidArgument, "CreateBuffer: size is 0, expected at least 1");
  std::unique_ptr<BufferImpl> b;
  VKDML_TRY(BufferImpl::Create(this, size,
                               VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                   VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                   VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                               memory, &b));
  *out = std::move(b);
  return {};
}

}  // namespace vkdml::detail

namespace vkdml {

Result CreateDevice(const DeviceDesc& desc, std::unique_ptr<Device>* out) {
  if (!out) return detail::Fail(Status::InvalidArgument, "CreateDevice: out is null");
  auto device = std::make_unique<detail::DeviceImpl>();
  std::lock_guard<std::mutex> lock(detail::VolkMutex());
  VKDML_TRY(device->Init(desc));
  auto runner = std::make_unique<detail::HostRunner>(device.get());
  VKDML_TRY(runner->Init());
  device->SetRunner(std::move(runner));
  *out = std::move(device);
  return {};
}

}  // namespace vkdml
