// What the fuzz target's decoders share (fuzz_common.h).
#include "fuzz_common.h"

#include <cstdio>
#include <cstdlib>

namespace fz {

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "fuzz_operator: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

namespace {
constexpr uint64_t kFreshDevice = 500;
std::unique_ptr<Device> device;
}  // namespace

Device& Dev() {
  if (!device) {
#ifdef VKDML_TEST_DRIVER_FILES
    if (!std::getenv("VK_DRIVER_FILES") && !std::getenv("VK_ICD_FILENAMES")) {
      setenv("VK_DRIVER_FILES", VKDML_TEST_DRIVER_FILES, 1);
      setenv("VK_ICD_FILENAMES", VKDML_TEST_DRIVER_FILES, 1);
    }
#endif
    unsetenv("VK_LOADER_LAYERS_ENABLE");
    DeviceDesc desc;
    desc.enableValidation = true;
    desc.onValidationMessage = [](const char* m) { Die(std::string("validation: ") + m); };
    Result r = CreateDevice(desc, &device);
    if (!r) Die("CreateDevice: " + r.message);
  }
  return *device;
}

void NextInput() {
  if (++gStats.inputs % kFreshDevice == 0) device.reset();
}

const DML_TENSOR_DATA_TYPE kData[11] = {
    DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_FLOAT16, DML_TENSOR_DATA_TYPE_UINT32,
    DML_TENSOR_DATA_TYPE_UINT16,  DML_TENSOR_DATA_TYPE_UINT8,   DML_TENSOR_DATA_TYPE_INT32,
    DML_TENSOR_DATA_TYPE_INT16,   DML_TENSOR_DATA_TYPE_INT8,    DML_TENSOR_DATA_TYPE_FLOAT64,
    DML_TENSOR_DATA_TYPE_UINT64,  DML_TENSOR_DATA_TYPE_INT64};
const DML_TENSOR_DATA_TYPE kIndex[4] = {DML_TENSOR_DATA_TYPE_INT32, DML_TENSOR_DATA_TYPE_UINT32,
                                        DML_TENSOR_DATA_TYPE_INT64, DML_TENSOR_DATA_TYPE_UINT64};

vt::TensorDesc Layout(Decoder& d, DML_TENSOR_DATA_TYPE type, const std::vector<UINT>& sizes,
                      bool output) {
  std::vector<UINT> strides;
  const UINT form = d.In(0, output ? 1 : 2);
  if (form > 0) {
    strides.assign(sizes.size(), 0);
    uint64_t step = 1;
    for (size_t i = sizes.size(); i-- > 0;) {
      const bool broadcast = form == 2 && (d.Byte() & 1);
      strides[i] = broadcast ? 0 : UINT(step);
      if (!broadcast) step *= uint64_t(sizes[i]) + (form == 1 ? d.In(0, 2) : 0);
    }
  }
  const uint64_t required = ref::Tensor(type, sizes, strides).RequiredBytes();
  const UINT spare = 4 * d.In(0, 2), alignment = d.Byte() < 32 ? 16 : 0;
  return vt::TensorDesc(type, sizes, strides, required + spare, alignment);
}

vt::Bytes Image(Decoder& d, const vt::TensorDesc& t, bool indices, UINT bound) {
  vt::Bytes b(t.Total());
  if (!indices) {
    for (size_t i = 0; i < b.size(); ++i) b[i] = uint8_t(d.Byte() ^ (i * 37));
    return b;
  }
  const ref::Tensor r = t.Ref();
  const bool isSigned = ref::IsSignedIndexType(t.buf.DataType);
  ref::ForEachCoord(t.sizes, [&](const ref::Coord& c) {
    const int64_t span = int64_t(bound) * 2 + 2;
    int64_t v = int64_t(d.Byte() % span) - (isSigned ? int64_t(bound) + 1 : 0);
    if (d.Byte() == 0xFF) v = isSigned ? INT32_MIN : int64_t(UINT32_MAX);
    ref::WriteIndex(t.buf.DataType, b.data() + r.ByteOffset(c), v);
  });
  return b;
}

Stats::~Stats() {
  std::fprintf(stderr,
               "fuzz_operator: %llu inputs: %llu refused by validation, %llu run and compared "
               "(%llu of them checked runs that met an out-of-range index); %llu colliding "
               "float sums and products checked, %llu left where the order decides, %llu "
               "NaN results (any NaN bits); %llu quantized-row gathers, %llu quantizing scatters, "
               "%llu embedding bags, %llu "
               "block-quantized gathers, %llu MoE permutes and unpermutes, %llu segment "
               "reductions and %llu paged cache writes and gathers run and compared\n",
               (unsigned long long)inputs, (unsigned long long)refused, (unsigned long long)ran,
               (unsigned long long)checkedOutOfRange, (unsigned long long)folds,
               (unsigned long long)orderDecides, (unsigned long long)nanResults,
               (unsigned long long)quantizedRows, (unsigned long long)quantizingScatters,
               (unsigned long long)bags, (unsigned long long)blockGathers, (unsigned long long)moe,
               (unsigned long long)segments, (unsigned long long)paged);
}
Stats gStats;

bool Prepare(const DML_OPERATOR_DESC& desc, UINT flags, std::unique_ptr<CompiledOperator>* out) {
  std::unique_ptr<Operator> op;
  Result r = Dev().CreateOperator(desc, &op);
  if (!r) {
    if (r.status != Status::InvalidArgument && r.status != Status::Unsupported)
      Die("CreateOperator: unexpected status: " + r.message);
    if (r.message.empty() || r.message.find('\n') != std::string::npos)
      Die("CreateOperator: a refusal must be one line: '" + r.message + "'");
    ++gStats.refused;
    return false;
  }
  r = Dev().CompileOperator(*op, flags, out);
  if (!r) {
    if (r.status != Status::Unsupported) Die("CompileOperator: " + r.message);
    ++gStats.refused;
    return false;
  }
  return true;
}

void RawSize(Decoder& d, std::initializer_list<vt::TensorDesc*> tensors, UINT most) {
  vt::TensorDesc& t = *tensors.begin()[d.Byte() % tensors.size()];
  t.sizes[d.Byte() % t.sizes.size()] = d.In(0, most);
  t.Fix();
}

void CheckRawRun(const Result& r, const std::string& what) {
  if (!r && r.status != Status::IndexOutOfRange) Die("raw " + what + ": Run: " + r.message);
}

void CheckStatus(const Result& r, bool checked, const ref::IndexError& err) {
  if (checked && err.found) {
    if (r.status != Status::IndexOutOfRange || r.message.find(err.message) == std::string::npos)
      Die("checked run: '" + r.message + "', the reference says '" + err.message + "'");
  } else if (!r) {
    Die("Run: " + r.message);
  }
}

void CheckOutput(const vt::Bytes& got, const vt::Bytes& expected, const std::string& what) {
  if (got == expected) return;
  size_t at = 0;
  while (got[at] == expected[at]) ++at;
  Die("output byte " + std::to_string(at) + " is " + std::to_string(got[at]) + ", expected " +
      std::to_string(expected[at]) + ": " + what);
}

}  // namespace fz
