// The Device's entry points, the library's top floor: each checks what the device can run and
// hands the work to the file that owns it (lib/README.md: the floors).
#include "binding_table.h"
#include "compiled.h"
#include "device.h"
#include "error.h"
#include "host_run.h"
#include "instance.h"
#include "operator.h"

namespace vkdml::detail {

Result DeviceImpl::CreateOperator(const DML_OPERATOR_DESC& desc, std::unique_ptr<Operator>* out) {
  VKDML_TRY(CheckNotLost());
  if (!out) return Fail(Status::InvalidArgument, "CreateOperator: out is null");
  auto op = std::make_unique<OperatorImpl>();
  VKDML_TRY(BuildOperator(desc, op.get()));
  // What this device can run: each tensor's storage feature. (Tensors past one descriptor's
  // range take the large path: kernels.h.)
  std::vector<const Tensor*> all;
  for (const Tensor& t : op->inputs) all.push_back(&t);
  for (const Tensor& t : op->outputs) all.push_back(&t);
  for (const Tensor* t : all) {
    bool missing8 = t->elemSize == 1 && !info_.enabled.storageBuffer8BitAccess;
    bool missing16 = t->elemSize == 2 && !info_.enabled.storageBuffer16BitAccess;
    if (missing8 || missing16)
      return Fail(Status::Unsupported, op->name, ": ", t->field, ".DataType is ",
                  DataTypeName(t->type), ", which needs ",
                  missing8 ? "storageBuffer8BitAccess" : "storageBuffer16BitAccess",
                  ", not enabled on device ", info_.name);
  }
  const bool float64Arithmetic = op->reduce != VKDML_REDUCE_FUNCTION_NONE &&
                                 op->inputs[0].type == DML_TENSOR_DATA_TYPE_FLOAT64;
  if (float64Arithmetic && !info_.enabled.shaderFloat64)
    return Fail(Status::Unsupported, op->name,
                ": a reduction on FLOAT64 elements needs shaderFloat64, not enabled on device ",
                info_.name);
  *out = std::move(op);
  return {};
}

Result DeviceImpl::CompileOperator(const Operator& op, UINT flags,
                                   std::unique_ptr<CompiledOperator>* out) {
  VKDML_TRY(CheckNotLost());
  return detail::CompileOperator(*this, op, flags, out);
}

Result DeviceImpl::CreateBindingTable(const CompiledOperator& op,
                                      std::unique_ptr<BindingTable>* out) {
  VKDML_TRY(CheckNotLost());
  return detail::CreateBindingTable(*this, op, out);
}

Result DeviceImpl::RecordDispatch(VkCommandBuffer cmd, BindingTable& table) {
  VKDML_TRY(CheckNotLost());
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
  auto runner = detail::MakeHostRunner(device.get());
  VKDML_TRY(runner->Init());
  device->SetRunner(std::move(runner));
  *out = std::move(device);
  return {};
}

}  // namespace vkdml
