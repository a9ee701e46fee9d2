// What the command-line tool's commands share: exit statuses, host tensors, device selection
// and running one operator (cli.cpp), and each command's entry point.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vkdml/vkdml.h"

namespace cli {

// Exit statuses: bad input (usage, files, shapes, indices) and device failures.
constexpr int kExitBadInput = 2;
constexpr int kExitDevice = 1;

// A DirectML buffer tensor in host memory, in the form Device::Run takes.
class HostTensor {
 public:
  vkdml::DML_TENSOR_DATA_TYPE type = vkdml::DML_TENSOR_DATA_TYPE_FLOAT32;
  std::vector<vkdml::UINT> sizes;
  std::vector<vkdml::UINT> strides;  // elements; empty: packed
  std::vector<uint8_t> bytes;        // padded to TotalTensorSizeInBytes by Desc()

  // Fills and returns the tensor's desc (valid while this object lives and is not changed).
  const vkdml::DML_TENSOR_DESC* Desc();

 private:
  vkdml::DML_BUFFER_TENSOR_DESC buffer_{};
  vkdml::DML_TENSOR_DESC desc_{};
};

// --device N: Ok for -1 (the default) or the index of a Vulkan device, else
// Status::InvalidArgument naming the valid range.
vkdml::Result CheckDeviceIndex(int index);
// Creates device `index` (-1: the first discrete GPU, else the first device), checked as above.
vkdml::Result OpenDevice(int index, std::unique_ptr<vkdml::Device>* out);

// CreateOperator, CompileOperator(flags) and Device::Run: inputs in binding order, one output.
vkdml::Result Execute(vkdml::Device& device, const vkdml::DML_OPERATOR_DESC& desc,
                      vkdml::UINT flags, const std::vector<HostTensor*>& inputs,
                      HostTensor* output);

// kExitBadInput for InvalidArgument and IndexOutOfRange, kExitDevice for the rest.
int ExitStatus(const vkdml::Result& r);

// Parses "--device N"-style integers; false if text is not a whole decimal integer.
bool ParseInt(const std::string& text, int64_t* out);

// The commands: argv[0] is the command's name, the return value the exit status.
// `vkdml run ...`, in run.cpp: an ONNX operator on .npy arrays, mapped onto DirectML.
int RunMain(int argc, char** argv);
// `vkdml demo ...`, in demo.cpp: the operator pages' examples.
int DemoMain(int argc, char** argv);

}  // namespace cli
