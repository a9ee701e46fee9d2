#include "device/compiled.h"

#include <algorithm>

#include "device/device.h"
#include "operators/error.h"

namespace vkdml::detail {

Result CompileOperator(DeviceImpl& device, const Operator& op, UINT flags,
                       std::unique_ptr<CompiledOperator>* out) {
  if (!out) return Fail(Status::InvalidArgument, "CompileOperator: out is null");
  const UINT known = DML_EXECUTION_FLAG_ALLOW_HALF_PRECISION_COMPUTATION |
                     DML_EXECUTION_FLAG_DISABLE_META_COMMANDS |
                     DML_EXECUTION_FLAG_DESCRIPTORS_VOLATILE | VKDML_EXECUTION_FLAG_CHECK_INDICES |
                     VKDML_EXECUTION_FLAG_DETERMINISTIC;
  if (flags & ~known)
    return Fail(Status::InvalidArgument, "CompileOperator: flags has unknown bits 0x", std::hex,
                flags & ~known);
  auto c = std::make_shared<CompiledState>();
  c->op = static_cast<const OperatorImpl&>(op);
  c->flags = flags;
  c->serial = device.NextSerial();
  VKDML_TRY(ChooseKernels(c->op, flags, device.Caps(), &c->kernels));
  for (Step& step : c->kernels.steps) {
    VKDML_TRY(device.Pipeline(step.plain.module, step.plain.spec, &step.plain.pipeline));
    if (step.hasWide)
      VKDML_TRY(device.Pipeline(step.wide.module, step.wide.spec, &step.wide.pipeline));
  }
  Kernel& report = c->kernels.report;
  if (c->kernels.checked) VKDML_TRY(device.Pipeline(report.module, report.spec, &report.pipeline));

  // The plans, then the scratch's layout and the fill value (glsl/bindings.glsl: Plans). In device
  // memory the host maps (gpuReads): every dispatch reads it first, and a read from host memory
  // crosses the bus (where no such memory is left, host memory it is). Written by the host, not
  // staged: compiling never submits, so it never touches the queue.
  const auto& plans = c->kernels.plans;
  const UINT64 planBytes = plans.size() * sizeof(plans[0]);
  const shader::ScratchLayout& scratchAt = c->kernels.scratchAt;
  const shader::uvec4& fill = c->kernels.fill;
  VKDML_TRY(BufferImpl::Create(&device, planBytes + sizeof scratchAt + sizeof fill,
                               VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT, Buffer::Memory::HostVisible,
                               &c->plans, /*gpuReads=*/true));
  VKDML_TRY(c->plans->Write(0, plans.data(), planBytes));
  VKDML_TRY(c->plans->Write(planBytes, &scratchAt, sizeof scratchAt));
  VKDML_TRY(c->plans->Write(planBytes + sizeof scratchAt, &fill, sizeof fill));
  auto compiled = std::make_unique<CompiledOperatorImpl>();
  compiled->state = std::move(c);
  *out = std::move(compiled);
  return {};
}

}  // namespace vkdml::detail
