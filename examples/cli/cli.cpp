#include "cli.h"

#include <algorithm>

namespace cli {

using namespace vkdml;

const DML_TENSOR_DESC* HostTensor::Desc() {
  UINT64 total = CalcBufferTensorSize(type, static_cast<UINT>(sizes.size()), sizes.data(),
                                      strides.empty() ? nullptr : strides.data());
  if (bytes.size() < total) bytes.resize(total, 0);
  buffer_ = {type,
             DML_TENSOR_FLAG_NONE,
             static_cast<UINT>(sizes.size()),
             sizes.data(),
             strides.empty() ? nullptr : strides.data(),
             total,
             0};
  desc_ = {DML_TENSOR_TYPE_BUFFER, &buffer_};
  return &desc_;
}

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

Result Execute(Device& device, const DML_OPERATOR_DESC& desc, UINT flags,
               const std::vector<HostTensor*>& inputs, HostTensor* output) {
  std::unique_ptr<Operator> op;
  Result r = device.CreateOperator(desc, &op);
  if (!r) return r;
  std::unique_ptr<CompiledOperator> compiled;
  r = device.CompileOperator(*op, flags, &compiled);
  if (!r) return r;
  std::vector<const void*> in;
  for (HostTensor* t : inputs) in.push_back(t->bytes.data());
  output->bytes.resize(std::max<size_t>(output->bytes.size(), op->OutputSize(0)));
  return device.Run(*compiled, in, {output->bytes.data()});
}

int ExitStatus(const Result& r) {
  return r.status == Status::InvalidArgument || r.status == Status::IndexOutOfRange ? kExitBadInput
                                                                                    : kExitDevice;
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
