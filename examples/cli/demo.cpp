// `vkdml demo`: runs the examples of the operator pages (spec_examples.h) and prints them in the
// pages' layout, each marked as matching the page or not.
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "cli.h"
#include "spec_examples.h"

namespace cli {
namespace {

using namespace vkdml;

using spec_examples::PageTensor;

// The example's values as a tensor of `type`: FLOAT32 for data, UINT32 for indices.
template <typename T>
HostTensor ToHost(const PageTensor<T>& t, DML_TENSOR_DATA_TYPE type) {
  HostTensor h;
  h.type = type;
  h.sizes = t.sizes;
  for (T v : t.values) {
    uint8_t bytes[4];
    if (type == DML_TENSOR_DATA_TYPE_FLOAT32) {
      float f = static_cast<float>(v);
      std::memcpy(bytes, &f, 4);
    } else {
      uint32_t u = static_cast<uint32_t>(v);
      std::memcpy(bytes, &u, 4);
    }
    h.bytes.insert(h.bytes.end(), bytes, bytes + 4);
  }
  return h;
}

std::vector<float> Values(const HostTensor& h, size_t count) {
  std::vector<float> out(count);
  for (size_t i = 0; i < count; ++i) std::memcpy(&out[i], &h.bytes[4 * i], 4);
  return out;
}

// Nested brackets, row-major: [[0,1],[2,3]].
template <typename T>
std::string Nested(const std::vector<UINT>& sizes, const std::vector<T>& values, size_t dim,
                   size_t* next) {
  if (dim == sizes.size()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", static_cast<double>(values[(*next)++]));
    return buf;
  }
  std::string s = "[";
  for (UINT i = 0; i < sizes[dim]; ++i) s += (i ? "," : "") + Nested(sizes, values, dim + 1, next);
  return s + "]";
}

template <typename T>
void Print(const char* name, const std::vector<UINT>& sizes, const std::vector<T>& values,
           DML_TENSOR_DATA_TYPE type) {
  std::string text;
  for (UINT s : sizes) text += (text.empty() ? "" : ",") + std::to_string(s);
  size_t next = 0;
  std::printf("%s: (Sizes:{%s}, DataType:%s)\n    %s\n", name, text.c_str(), DataTypeName(type),
              Nested(sizes, values, 0, &next).c_str());
}

const char kDemoUsage[] =
    "usage: vkdml demo [--device N]\n"
    "\n"
    "Runs every example of the operator pages (GatherND 1 and 2, GatherND1 1 and 2,\n"
    "GatherElements, ScatterND) on a Vulkan device, prints each in the pages' layout and\n"
    "says whether the output matches the page. Exit status 1 if any does not.\n"
    "  --device N   device index from `vkdml devices` (default: the first discrete GPU,\n"
    "               else the first device)\n";

}  // namespace

int DemoMain(int argc, char** argv) {
  int64_t index = -1;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kDemoUsage, stdout);
      return 0;
    }
    if (arg.rfind("--device=", 0) == 0) {
      arg = arg.substr(9);
    } else if (arg == "--device" && i + 1 < argc) {
      arg = argv[++i];
    } else {
      std::fprintf(stderr, "vkdml demo: unexpected argument '%s' (see --help)\n", argv[i]);
      return kExitBadInput;
    }
    if (!ParseInt(arg, &index) || index < 0 || index > 1000000) {
      std::fprintf(stderr,
                   "vkdml demo: --device is '%s', expected a device index from `vkdml devices`\n",
                   arg.c_str());
      return kExitBadInput;
    }
  }
  std::unique_ptr<Device> device;
  Result r = OpenDevice(static_cast<int>(index), &device);
  if (!r) {
    std::fprintf(stderr, "vkdml demo: %s\n", r.message.c_str());
    return ExitStatus(r);
  }
  std::printf("Device: %s\n", device->Info().name.c_str());

  int mismatches = 0;
  for (const spec_examples::Example* example : spec_examples::kAll) {
    const spec_examples::Example& ex = *example;
    HostTensor input = ToHost(ex.input, DML_TENSOR_DATA_TYPE_FLOAT32);
    HostTensor indices = ToHost(ex.indices, DML_TENSOR_DATA_TYPE_UINT32);
    HostTensor updates = ToHost(ex.updates, DML_TENSOR_DATA_TYPE_FLOAT32);
    HostTensor output;
    output.sizes = ex.output.sizes;
    std::vector<HostTensor*> inputs = {&input, &indices};
    const DML_TENSOR_DESC *in = input.Desc(), *idx = indices.Desc(), *out = output.Desc();

    std::printf("\n== %s (DML_OPERATOR_%s)\n", ex.title,
                ex.type == DML_OPERATOR_GATHER_ND         ? "GATHER_ND"
                : ex.type == DML_OPERATOR_GATHER_ND1      ? "GATHER_ND1"
                : ex.type == DML_OPERATOR_GATHER_ELEMENTS ? "GATHER_ELEMENTS"
                                                          : "SCATTER_ND");
    DML_GATHER_ND_OPERATOR_DESC gatherNd{in, idx, out, ex.inputDims, ex.indicesDims};
    DML_GATHER_ND1_OPERATOR_DESC gatherNd1{in,          idx, out, ex.inputDims, ex.indicesDims,
                                           ex.batchDims};
    DML_GATHER_ELEMENTS_OPERATOR_DESC gatherElements{in, idx, out, ex.axis};
    DML_SCATTER_ND_OPERATOR_DESC scatterNd{in, idx, nullptr, out, ex.inputDims, ex.indicesDims};
    DML_OPERATOR_DESC desc{ex.type, nullptr};
    if (ex.type == DML_OPERATOR_GATHER_ELEMENTS) {
      std::printf("Axis = %u\n\n", ex.axis);
      desc.Desc = &gatherElements;
    } else {
      std::printf("InputDimensionCount: %u\nIndicesDimensionCount: %u\n", ex.inputDims,
                  ex.indicesDims);
      if (ex.type == DML_OPERATOR_GATHER_ND1)
        std::printf("BatchDimensionCount: %u\n", ex.batchDims);
      std::printf("\n");
      desc.Desc = ex.type == DML_OPERATOR_GATHER_ND    ? static_cast<const void*>(&gatherNd)
                  : ex.type == DML_OPERATOR_GATHER_ND1 ? static_cast<const void*>(&gatherNd1)
                                                       : static_cast<const void*>(&scatterNd);
    }
    Print("InputTensor", ex.input.sizes, ex.input.values, DML_TENSOR_DATA_TYPE_FLOAT32);
    Print("IndicesTensor", ex.indices.sizes, ex.indices.values, DML_TENSOR_DATA_TYPE_UINT32);
    if (ex.type == DML_OPERATOR_SCATTER_ND) {
      scatterNd.UpdatesTensor = updates.Desc();
      inputs.push_back(&updates);
      Print("UpdatesTensor", ex.updates.sizes, ex.updates.values, DML_TENSOR_DATA_TYPE_FLOAT32);
    }

    r = Execute(*device, desc, 0, inputs, &output);
    if (!r) {
      std::printf("-> FAILED: %s\n", r.message.c_str());
      std::fprintf(stderr, "vkdml demo: %s: %s\n", ex.title, r.message.c_str());
      return 1;
    }
    std::vector<float> got = Values(output, ex.output.values.size());
    Print("OutputTensor", ex.output.sizes, got, DML_TENSOR_DATA_TYPE_FLOAT32);
    if (got == ex.output.values) {
      std::printf("-> matches the page\n");
    } else {
      size_t next = 0;
      std::printf("-> DOES NOT match the page, which gives %s\n",
                  Nested(ex.output.sizes, ex.output.values, 0, &next).c_str());
      ++mismatches;
    }
  }
  std::printf("\n%zu examples, %d match the pages, %d do not\n", std::size(spec_examples::kAll),
              int(std::size(spec_examples::kAll)) - mismatches, mismatches);
  return mismatches ? 1 : 0;
}

}  // namespace cli
