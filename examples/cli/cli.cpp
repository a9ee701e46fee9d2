#include "cli.h"

#include <algorithm>

namespace cli {

using namespace vkdml;

Result CheckDeviceIndex(int index) {
  if (index < 0) return {};
  std::vector<DeviceInfo> devices;
  Result r = EnumerateDevices(&devices);
  if (!r) return r;
  if (static_cast<size_t>(index) >= devices.size())
    return {Status::InvalidArgument,
            "--device is " + std::to_string(index) + ", expected 0 to " +
                std::to_string(int(devices.size()) - 1) + " (" + std::to_string(devices.size()) +
                (devices.size() == 1 ? " device" : " devices") + "; see `vkdml devices`)"};
  return {};
}

Result OpenDevice(int index, std::unique_ptr<Device>* out) {
  Result r = CheckDeviceIndex(index);
  if (!r) return r;
  DeviceDesc desc;
  desc.physicalDeviceIndex = index;
  return CreateDevice(desc, out);
}

Result Prepare(Device& device, const DML_OPERATOR_DESC& desc, UINT flags,
               std::unique_ptr<CompiledOperator>* out) {
  std::unique_ptr<Operator> op;
  Result r = device.CreateOperator(desc, &op);
  if (!r) return r;
  return device.CompileOperator(*op, flags, out);
}

Result RunPrepared(Device& device, const CompiledOperator& op,
                   const std::vector<HostTensor*>& inputs, void* output) {
  std::vector<const void*> in;
  for (size_t i = 0; i < inputs.size(); ++i) {
    HostTensor& t = *inputs[i];
    const UINT64 size = op.Op().InputSize(static_cast<UINT>(i));
    if (!t.data && t.bytes.size() < size) t.bytes.resize(size, 0);  // rounded up to 4 bytes
    in.push_back(t.Data());
  }
  return device.Run(op, in, {output});
}

Result Execute(Device& device, const DML_OPERATOR_DESC& desc, UINT flags,
               const std::vector<HostTensor*>& inputs, HostTensor* output) {
  std::unique_ptr<CompiledOperator> compiled;
  Result r = Prepare(device, desc, flags, &compiled);
  if (!r) return r;
  output->bytes.resize(std::max<size_t>(output->bytes.size(), compiled->Op().OutputSize(0)));
  return RunPrepared(device, *compiled, inputs, output->bytes.data());
}

int ExitStatus(const Result& r) {
  switch (r.status) {
    case Status::InvalidArgument:
    case Status::IndexOutOfRange:
      return kExitBadInput;
    case Status::OutOfMemory:
      return kExitOutOfMemory;
    default:
      return kExitDevice;
  }
}

bool ParseInt(const std::string& text, int64_t* out) {
  if (text.empty() || text.size() > 18) return false;
  size_t i = text[0] == '-' ? 1 : 0;
  if (i == text.size() || text.find_first_not_of("0123456789", i) != std::string::npos)
    return false;
  *out = std::stoll(text);
  return true;
}

}  // namespace cli
