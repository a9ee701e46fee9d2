#include "compiled.h"

#include "device.h"
#include "error.h"

namespace vkdml::detail {

Result CompileOperator(DeviceImpl& device, const Operator& op, UINT flags,
                       std::unique_ptr<CompiledOperator>* out) {
  if (!out) return Fail(Status::InvalidArgument, "CompileOperator: out is null");
  const UINT known = DML_EXECUTION_FLAG_ALLOW_HALF_PRECISION_COMPUTATION |
                     DML_EXECUTION_FLAG_DISABLE_META_COMMANDS |
                     DML_EXECUTION_FLAG_DESCRIPTORS_VOLATILE | VKDML_EXECUTION_FLAG_CHECK_INDICES;
  if (flags & ~known)
    return Fail(Status::InvalidArgument, "CompileOperator: flags has unknown bits 0x", std::hex,
                flags & ~known);
  auto c = std::make_shared<CompiledState>();
  c->op = static_cast<const OperatorImpl&>(op);
  c->flags = flags;
  c->serial = device.NextSerial();
  const bool checked = (flags & VKDML_EXECUTION_FLAG_CHECK_INDICES) != 0;
  VKDML_TRY(ChooseKernels(c->op, checked, device.Traits(), &c->kernels));
  for (PassKernels& pass : c->kernels.passes) {
    VKDML_TRY(device.Pipeline(pass.plain.module, pass.plain.spec, &pass.plain.pipeline));
    if (pass.hasWide)
      VKDML_TRY(device.Pipeline(pass.wide.module, pass.wide.spec, &pass.wide.pipeline));
  }
  Kernel& report = c->kernels.report;
  if (checked) VKDML_TRY(device.Pipeline(report.module, report.spec, &report.pipeline));

  // In device memory: every dispatch reads it first, and a read from host memory crosses the bus.
  const auto& plans = c->kernels.plans;
  const UINT64 planBytes = plans.size() * sizeof(plans[0]);
  VKDML_TRY(device.CreateInternalBuffer(
      planBytes, VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
      Buffer::Memory::DeviceLocal, &c->plans));
  VKDML_TRY(c->plans->Write(0, plans.data(), planBytes));
  auto compiled = std::make_unique<CompiledOperatorImpl>();
  compiled->state = std::move(c);
  *out = std::move(compiled);
  return {};
}

}  // namespace vkdml::detail
