// `vkdml run moe-permute` and `vkdml run moe-unpermute`: a mixture-of-experts layer's routing
// (VKDML_OPERATOR_MOE_PERMUTE, _UNPERMUTE) on .npy arrays. RunMain hands them here: their
// outputs (four for a permute) do not fit `run`'s one-output mapping.
#include <chrono>
#include <cstdio>
#include <cstring>

#include "cli.h"
#include "npy.h"

namespace cli {

using namespace vkdml;

namespace {

const char kMoeUsage[] =
    "usage: vkdml run moe-permute --input X.npy --indices IDS.npy --experts N --output ROWS.npy\n"
    "                 [--offsets-output OFF.npy] [--permutation-output PERM.npy]\n"
    "                 [--inverse-output INV.npy] [--index-dtype int64|int32] [--device N] "
    "[--quiet]\n"
    "       vkdml run moe-unpermute --input Y.npy --indices INV.npy --weights W.npy\n"
    "                 --output OUT.npy [--dtype float32|float16] [--device N] [--quiet]\n"
    "\n"
    "vkdml's MoE routing. moe-permute: --indices (tokens, k) integer expert ids (token t's j-th\n"
    "expert is entry t * k + j; ids outside [0, N) are dropped), --input (tokens, width)\n"
    "float32 or float16 rows. The entries sorted by expert, stably\n"
    "(numpy.argsort(kind=\"stable\"), dropped entries last): --output (tokens * k, width) the\n"
    "rows x[perm // k], zeros past the kept entries; --offsets-output (N + 1,) each expert's\n"
    "first row and the kept count; --permutation-output (tokens * k,) each row's entry, -1\n"
    "past the kept ones; --inverse-output (tokens, k) each entry's row, -1 where dropped\n"
    "(--index-dtype, default int64). moe-unpermute: out[t] = sum over j in order of\n"
    "W[t, j] * Y[INV[t, j]] in float32 steps (the same bits on every device), rows outside\n"
    "Y skipped; --dtype of the output (default Y's).\n";

int Fail(const std::string& message, int status = kExitBadInput) {
  std::fprintf(stderr, "vkdml run: %s\n", message.c_str());
  return status;
}

// A row-major tensor desc over an array's shape (rank at least 1).
struct Desc {
  std::vector<UINT> sizes;
  DML_BUFFER_TENSOR_DESC buf{};
  DML_TENSOR_DESC desc{};
  bool Init(npy::DType dtype, const std::vector<uint64_t>& shape, const std::string& name,
            std::string* error) {
    for (uint64_t d : shape) {
      if (d == 0 || d > 0xFFFFFFFFu) {
        *error = name + ": shape " + npy::ShapeString(shape) +
                 ", expected every dimension from 1 to 2^32 - 1";
        return false;
      }
      sizes.push_back(UINT(d));
    }
    if (sizes.empty()) sizes.push_back(1);
    buf.DataType = DataType(dtype);
    buf.DimensionCount = UINT(sizes.size());
    buf.Sizes = sizes.data();
    buf.TotalTensorSizeInBytes =
        CalcBufferTensorSize(buf.DataType, buf.DimensionCount, buf.Sizes, nullptr);
    desc = {DML_TENSOR_TYPE_BUFFER, &buf};
    return true;
  }
};

}  // namespace

int MoeMain(int argc, char** argv) {
  const std::string op = argv[1];
  const bool permute = op == "moe-permute";
  std::string input, indices, weights, outputs[4];
  int64_t device = -1, experts = 0;
  bool quiet = false, haveDType = false;
  npy::DType indexType = npy::DType::Int64, dtype = npy::DType::Float32;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kMoeUsage, stdout);
      return 0;
    }
    if (arg == "--quiet") {
      quiet = true;
      continue;
    }
    if (i + 1 >= argc) return Fail(arg + " needs a value (see --help)");
    const std::string value = argv[++i];
    if (arg == "--input") {
      input = value;
    } else if (arg == "--indices") {
      indices = value;
    } else if (arg == "--weights" && !permute) {
      weights = value;
    } else if (arg == "--output") {
      outputs[0] = value;
    } else if (arg == "--offsets-output" && permute) {
      outputs[1] = value;
    } else if (arg == "--permutation-output" && permute) {
      outputs[2] = value;
    } else if (arg == "--inverse-output" && permute) {
      outputs[3] = value;
    } else if (arg == "--experts" && permute) {
      if (!ParseInt(value, &experts) || experts < 1 || experts > (1 << 24))
        return Fail("--experts is '" + value + "', expected an integer from 1 to 16777216");
    } else if (arg == "--index-dtype" && permute) {
      if (value != "int64" && value != "int32")
        return Fail("--index-dtype is '" + value + "', expected int64 or int32");
      indexType = value == "int32" ? npy::DType::Int32 : npy::DType::Int64;
    } else if (arg == "--dtype" && !permute) {
      if (value != "float32" && value != "float16")
        return Fail("--dtype is '" + value + "', expected float32 or float16");
      dtype = value == "float16" ? npy::DType::Float16 : npy::DType::Float32;
      haveDType = true;
    } else if (arg == "--device") {
      if (!ParseInt(value, &device))
        return Fail("--device is '" + value + "', expected an integer");
    } else {
      return Fail("unknown option " + arg + " for " + op + " (see --help)");
    }
  }
  if (input.empty() || indices.empty() || outputs[0].empty())
    return Fail(op + " needs --input, --indices and --output (see --help)");
  if (permute && experts == 0) return Fail("moe-permute needs --experts N (see --help)");
  if (!permute && weights.empty()) return Fail("moe-unpermute needs --weights (see --help)");
  const auto start = std::chrono::steady_clock::now();

  // The inputs, in row-major order, then the outputs' shapes.
  std::string error;
  const std::string paths[3] = {input, indices, weights};
  npy::Array in[3];
  const int inputs = permute ? 2 : 3;
  for (int i = 0; i < inputs; ++i) {
    if (!npy::Read(paths[i], &in[i], &error)) return Fail(error);
    if (in[i].fortranOrder) in[i] = npy::ToCOrder(in[i]);
    if (in[i].shape.size() != 2)
      return Fail(paths[i] + ": shape " + npy::ShapeString(in[i].shape) +
                  ", expected 2 dimensions");
  }
  const uint64_t tokens = in[1].shape[0], k = in[1].shape[1], width = in[0].shape[1];
  std::vector<std::pair<npy::DType, std::vector<uint64_t>>> out;
  if (permute)
    out = {{in[0].dtype, {tokens * k, width}},
           {indexType, {uint64_t(experts) + 1}},
           {indexType, {tokens * k}},
           {indexType, {tokens, k}}};
  else
    out = {{haveDType ? dtype : in[0].dtype, {tokens, width}}};
  Desc descs[7];
  for (int i = 0; i < inputs; ++i)
    if (!descs[i].Init(in[i].dtype, in[i].shape, paths[i], &error)) return Fail(error);
  for (size_t i = 0; i < out.size(); ++i)
    if (!descs[inputs + i].Init(out[i].first, out[i].second, "the output", &error))
      return Fail(error);
  VKDML_MOE_PERMUTE_OPERATOR_DESC p{&descs[0].desc, &descs[1].desc, &descs[2].desc, &descs[3].desc,
                                    &descs[4].desc, &descs[5].desc, UINT(experts)};
  VKDML_MOE_UNPERMUTE_OPERATOR_DESC u{&descs[0].desc, &descs[1].desc, &descs[2].desc,
                                      &descs[3].desc};
  const DML_OPERATOR_DESC desc = permute ? DML_OPERATOR_DESC{VKDML_OPERATOR_MOE_PERMUTE, &p}
                                         : DML_OPERATOR_DESC{VKDML_OPERATOR_MOE_UNPERMUTE, &u};
  std::unique_ptr<Device> dev;
  Result r = OpenDevice(static_cast<int>(device), &dev);
  if (!r) return Fail(r.message, ExitStatus(r));
  std::unique_ptr<CompiledOperator> compiled;
  r = Prepare(*dev, desc, 0, &compiled);
  if (!r) return Fail(r.message, ExitStatus(r));
  // Outputs in memory of their own, rounded up to TotalTensorSizeInBytes.
  std::vector<std::vector<uint8_t>> bytes(out.size());
  std::vector<void*> outPtrs;
  for (size_t i = 0; i < out.size(); ++i) {
    bytes[i].resize(compiled->Op().OutputSize(UINT(i)));
    outPtrs.push_back(bytes[i].data());
  }
  std::vector<const void*> inPtrs;
  for (int i = 0; i < inputs; ++i) inPtrs.push_back(in[i].data.get());
  r = dev->Run(*compiled, inPtrs, outPtrs);
  if (!r) return Fail(r.message, ExitStatus(r));
  for (size_t i = 0; i < out.size(); ++i) {
    if (outputs[i].empty()) continue;
    npy::Array a;
    a.dtype = out[i].first;
    a.shape = out[i].second;
    std::memcpy(a.Allocate(), bytes[i].data(), a.ByteCount());
    if (!npy::Write(outputs[i], a, &error)) return Fail(error);
  }
  if (!quiet) {
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::printf("vkdml run: %s: input %s %s, indices %s %s -> %s %s on %s in %.1f ms\n", op.c_str(),
                npy::ShapeString(in[0].shape).c_str(), npy::DTypeName(in[0].dtype),
                npy::ShapeString(in[1].shape).c_str(), npy::DTypeName(in[1].dtype),
                outputs[0].c_str(), npy::ShapeString(out[0].second).c_str(),
                dev->Info().name.c_str(), ms);
  }
  return 0;
}

}  // namespace cli
