// libFuzzer target: operator descriptors. Each input is decoded (Decoder below) into one small
// operator of any of vkdml's eight types, with tensors of any data and index type, rank 1-4,
// sizes 1-4, packed, padded or broadcast strides, spare bytes, raw fields that may be invalid,
// out-of-range indices, checked and deterministic executions, and data from the input. It is
// created, compiled and run through Device::Run on the device the tests use (lavapipe, with the
// validation layer), and every byte of the output, padding included, is compared with the CPU
// reference (test/reference.cpp); a checked run's status with the reference's first
// out-of-range index. A descriptor vkdml refuses must be refused with InvalidArgument or
// Unsupported and a message. Any difference, validation message or sanitizer report is a crash.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "reference.h"
#include "vkdml/vkdml.h"

using namespace vkdml;

namespace {

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "fuzz_operator: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

Device& Dev() {
  static std::unique_ptr<Device> device;
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

// Bytes of the input, read in order; past the end, zeros.
struct Decoder {
  const uint8_t* p;
  size_t n, at = 0;
  uint8_t Byte() { return at < n ? p[at++] : 0; }
  UINT In(UINT lo, UINT hi) { return lo + Byte() % (hi - lo + 1); }  // inclusive, small ranges
  UINT Raw32() {
    UINT v = 0;
    for (int i = 0; i < 4; ++i) v = v << 8 | Byte();
    return v;
  }
};

const DML_TENSOR_DATA_TYPE kData[] = {
    DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_FLOAT16, DML_TENSOR_DATA_TYPE_UINT32,
    DML_TENSOR_DATA_TYPE_UINT16,  DML_TENSOR_DATA_TYPE_UINT8,   DML_TENSOR_DATA_TYPE_INT32,
    DML_TENSOR_DATA_TYPE_INT16,   DML_TENSOR_DATA_TYPE_INT8,    DML_TENSOR_DATA_TYPE_FLOAT64,
    DML_TENSOR_DATA_TYPE_UINT64,  DML_TENSOR_DATA_TYPE_INT64};
const DML_TENSOR_DATA_TYPE kIndex[] = {DML_TENSOR_DATA_TYPE_INT32, DML_TENSOR_DATA_TYPE_UINT32,
                                       DML_TENSOR_DATA_TYPE_INT64, DML_TENSOR_DATA_TYPE_UINT64};
const DML_OPERATOR_TYPE kOps[] = {DML_OPERATOR_GATHER_ND,
                                  DML_OPERATOR_GATHER_ND1,
                                  DML_OPERATOR_GATHER,
                                  DML_OPERATOR_GATHER_ELEMENTS,
                                  DML_OPERATOR_SCATTER_ND,
                                  DML_OPERATOR_SCATTER_ELEMENTS,
                                  VKDML_OPERATOR_SCATTER_ND_REDUCE,
                                  VKDML_OPERATOR_SCATTER_ELEMENTS_REDUCE};

// A tensor whose desc owns its arrays.
struct T {
  std::vector<UINT> sizes, strides;  // strides empty: packed
  DML_BUFFER_TENSOR_DESC buf{};
  DML_TENSOR_DESC desc{};
  ref::Tensor Ref() const { return ref::Tensor(buf.DataType, sizes, strides); }
  const DML_TENSOR_DESC* Fix() {
    buf.DimensionCount = UINT(sizes.size());
    buf.Sizes = sizes.data();
    buf.Strides = strides.empty() ? nullptr : strides.data();
    desc.Desc = &buf;
    return &desc;
  }
};

// Sizes, strides and TotalTensorSizeInBytes of a tensor from the decoder: packed, padded, or
// (inputs) broadcast along some dimensions; plus a few spare bytes.
void Layout(Decoder& d, T* t, DML_TENSOR_DATA_TYPE type, bool output) {
  t->buf.DataType = type;
  t->buf.Flags = DML_TENSOR_FLAG_NONE;
  t->desc.Type = DML_TENSOR_TYPE_BUFFER;
  const UINT form = d.In(0, output ? 1 : 2);
  if (form > 0) {
    t->strides.assign(t->sizes.size(), 0);
    uint64_t step = 1;
    for (size_t i = t->sizes.size(); i-- > 0;) {
      const bool broadcast = form == 2 && (d.Byte() & 1);
      t->strides[i] = broadcast ? 0 : UINT(step);
      if (!broadcast) step *= uint64_t(t->sizes[i]) + (form == 1 ? d.In(0, 2) : 0);
    }
  }
  t->Fix();
  const uint64_t required = t->Ref().RequiredBytes();
  t->buf.TotalTensorSizeInBytes = required + 4 * d.In(0, 2);
  t->buf.GuaranteedBaseOffsetAlignment = d.Byte() < 32 ? 16 : 0;
}

struct Case {
  DML_OPERATOR_TYPE type;
  std::vector<T> tensors;  // binding order: input, indices[, updates], output
  UINT r = 0, q = 0, b = 0, axis = 0, m = 0;
  VKDML_REDUCE_FUNCTION reduce = VKDML_REDUCE_FUNCTION_NONE;
  UINT flags = 0;
  bool scatter = false;

  DML_GATHER_ND_OPERATOR_DESC gnd{};
  DML_GATHER_ND1_OPERATOR_DESC gnd1{};
  DML_GATHER_OPERATOR_DESC g{};
  DML_GATHER_ELEMENTS_OPERATOR_DESC ge{};
  DML_SCATTER_ND_OPERATOR_DESC snd{};
  DML_SCATTER_OPERATOR_DESC se{};
  VKDML_SCATTER_ND_REDUCE_OPERATOR_DESC sndr{};
  VKDML_SCATTER_ELEMENTS_REDUCE_OPERATOR_DESC ser{};

  DML_OPERATOR_DESC Desc() {
    std::vector<const DML_TENSOR_DESC*> p;
    for (T& t : tensors) p.push_back(t.Fix());
    switch (type) {
      case DML_OPERATOR_GATHER_ND:
        gnd = {p[0], p[1], p[2], r, q};
        return {type, &gnd};
      case DML_OPERATOR_GATHER_ND1:
        gnd1 = {p[0], p[1], p[2], r, q, b};
        return {type, &gnd1};
      case DML_OPERATOR_GATHER:
        g = {p[0], p[1], p[2], axis, m};
        return {type, &g};
      case DML_OPERATOR_GATHER_ELEMENTS:
        ge = {p[0], p[1], p[2], axis};
        return {type, &ge};
      case DML_OPERATOR_SCATTER_ND:
        snd = {p[0], p[1], p[2], p[3], r, q};
        return {type, &snd};
      case DML_OPERATOR_SCATTER_ELEMENTS:
        se = {p[0], p[1], p[2], p[3], axis};
        return {type, &se};
      case VKDML_OPERATOR_SCATTER_ND_REDUCE:
        sndr = {p[0], p[1], p[2], p[3], r, q, reduce};
        return {type, &sndr};
      default:
        ser = {p[0], p[1], p[2], p[3], axis, reduce};
        return {type, &ser};
    }
  }

  // The reference on the input images; out holds the output's initial image.
  ref::IndexError Reference(const std::vector<std::vector<uint8_t>>& in, uint8_t* out) const {
    const ref::Tensor a = tensors[0].Ref(), i = tensors[1].Ref(), o = tensors.back().Ref();
    switch (type) {
      case DML_OPERATOR_GATHER_ND:
        return ref::GatherND(a, in[0].data(), i, in[1].data(), o, out, r, q, 0);
      case DML_OPERATOR_GATHER_ND1:
        return ref::GatherND(a, in[0].data(), i, in[1].data(), o, out, r, q, b);
      case DML_OPERATOR_GATHER:
        return ref::Gather(a, in[0].data(), i, in[1].data(), o, out, axis, m);
      case DML_OPERATOR_GATHER_ELEMENTS:
        return ref::GatherElements(a, in[0].data(), i, in[1].data(), o, out, axis);
      case DML_OPERATOR_SCATTER_ND:
      case VKDML_OPERATOR_SCATTER_ND_REDUCE:
        return ref::ScatterND(a, in[0].data(), i, in[1].data(), tensors[2].Ref(), in[2].data(), o,
                              out, r, q, reduce);
      default:
        return ref::ScatterElements(a, in[0].data(), i, in[1].data(), tensors[2].Ref(),
                                    in[2].data(), o, out, axis, reduce);
    }
  }
  std::vector<ref::ScatterWrite> Writes(const uint8_t* idx) const {
    const ref::Tensor a = tensors[0].Ref(), i = tensors[1].Ref(), u = tensors[2].Ref(),
                      o = tensors[3].Ref();
    if (type == DML_OPERATOR_SCATTER_ND || type == VKDML_OPERATOR_SCATTER_ND_REDUCE)
      return ref::ScatterNDWrites(a, i, idx, u, o, r, q);
    return ref::ScatterElementsWrites(a, i, idx, u, o, axis);
  }
};

std::vector<UINT> Sizes(Decoder& d, UINT dims) {
  std::vector<UINT> s(dims);
  for (UINT& v : s) v = d.In(1, 4);
  return s;
}

// Decodes a case whose shapes follow the operator's formulas (most of them valid), or, with
// `raw`, whose fields and sizes come straight from the input (most of them invalid).
Case Decode(Decoder& d) {
  Case c;
  c.type = kOps[d.Byte() % 8];
  const uint8_t mode = d.Byte();
  const bool raw = mode & 0x80;
  c.flags = (mode & 1 ? VKDML_EXECUTION_FLAG_CHECK_INDICES : 0) |
            (mode & 2 ? VKDML_EXECUTION_FLAG_DETERMINISTIC : 0);
  const DML_TENSOR_DATA_TYPE dt = kData[d.Byte() % 11], it = kIndex[d.Byte() % 4];
  const UINT D = d.In(1, 4);
  c.scatter = c.type == DML_OPERATOR_SCATTER_ND || c.type == DML_OPERATOR_SCATTER_ELEMENTS ||
              c.type == VKDML_OPERATOR_SCATTER_ND_REDUCE ||
              c.type == VKDML_OPERATOR_SCATTER_ELEMENTS_REDUCE;
  if (c.type == VKDML_OPERATOR_SCATTER_ND_REDUCE ||
      c.type == VKDML_OPERATOR_SCATTER_ELEMENTS_REDUCE)
    c.reduce = static_cast<VKDML_REDUCE_FUNCTION>(raw ? d.Raw32() % 6 : d.In(0, 4));
  c.tensors.resize(c.scatter ? 4 : 3);
  T &in = c.tensors[0], &idx = c.tensors[1], &out = c.tensors.back();
  in.sizes = Sizes(d, D);
  if (raw) {  // anything: the descriptor's own fields, unchecked
    c.r = d.In(0, 5);
    c.q = d.In(0, 5);
    c.b = d.In(0, 3);
    c.axis = d.In(0, 5);
    c.m = d.In(0, 5);
    for (size_t i = 1; i < c.tensors.size(); ++i) c.tensors[i].sizes = Sizes(d, d.In(1, 5));
  } else {
    switch (c.type) {
      case DML_OPERATOR_GATHER_ELEMENTS:
      case DML_OPERATOR_SCATTER_ELEMENTS:
      case VKDML_OPERATOR_SCATTER_ELEMENTS_REDUCE: {
        c.axis = d.In(0, D - 1);
        idx.sizes = in.sizes;
        idx.sizes[c.axis] = d.In(1, 4);
        if (c.scatter) {
          c.tensors[2].sizes = idx.sizes;
          out.sizes = in.sizes;
        } else {
          out.sizes = idx.sizes;
        }
        break;
      }
      case DML_OPERATOR_GATHER: {
        c.axis = d.In(0, D - 1);
        c.m = d.In(1, D);
        idx.sizes.assign(D, 1);
        for (UINT i = D - c.m; i < D; ++i) idx.sizes[i] = d.In(1, 4);
        out.sizes = ref::GatherOutputSizes(in.sizes, idx.sizes, c.axis, c.m);
        break;
      }
      default: {  // GatherND, GatherND1, ScatterND
        c.r = d.In(1, D);
        c.q = d.In(1, D);
        c.b = c.type == DML_OPERATOR_GATHER_ND1 ? d.In(0, std::min(c.q, c.r) - 1) : 0;
        for (UINT i = 0; i < D - c.r; ++i) in.sizes[i] = 1;
        idx.sizes.assign(D, 1);
        for (UINT i = D - c.q; i + 1 < D; ++i) idx.sizes[i] = d.In(1, 4);
        for (UINT j = 0; j < c.b; ++j) idx.sizes[D - c.q + j] = in.sizes[D - c.r + j];
        idx.sizes[D - 1] = d.In(1, c.r - c.b);
        std::vector<UINT> slices = ref::GatherNDOutputSizes(in.sizes, idx.sizes, c.r, c.q, c.b);
        if (c.scatter) {
          c.tensors[2].sizes = slices;
          out.sizes = in.sizes;
        } else {
          out.sizes = slices;
        }
        break;
      }
    }
    if (out.sizes.empty()) out.sizes = Sizes(d, D);  // no valid output: an invalid one
  }
  Layout(d, &in, dt, false);
  Layout(d, &idx, it, false);
  if (c.scatter) Layout(d, &c.tensors[2], dt, false);
  Layout(d, &out, dt, true);
  if (raw && (d.Byte() & 3) == 0) {  // a raw field or two of any value
    c.tensors[d.Byte() % c.tensors.size()].buf.DataType =
        static_cast<DML_TENSOR_DATA_TYPE>(d.Raw32());
    c.tensors[d.Byte() % c.tensors.size()].desc.Type = static_cast<DML_TENSOR_TYPE>(d.Byte() % 3);
  }
  return c;
}

// An input image: its bytes from the decoder (repeated), indices as values near their range.
std::vector<uint8_t> Image(Decoder& d, const T& t, bool indices, UINT bound) {
  std::vector<uint8_t> b(t.buf.TotalTensorSizeInBytes);
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

// How far the inputs got, printed at exit (.ci/fuzz.sh reports it).
struct Stats {
  uint64_t inputs = 0, refused = 0, ran = 0, checkedOutOfRange = 0;
  ~Stats() {
    std::fprintf(stderr,
                 "fuzz_operator: %llu inputs: %llu refused by validation, %llu run and compared "
                 "(%llu of them checked runs that met an out-of-range index)\n",
                 (unsigned long long)inputs, (unsigned long long)refused, (unsigned long long)ran,
                 (unsigned long long)checkedOutOfRange);
  }
} gStats;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ++gStats.inputs;
  Decoder d{data, size};
  Case c = Decode(d);
  const DML_OPERATOR_DESC desc = c.Desc();
  std::unique_ptr<Operator> op;
  Result r = Dev().CreateOperator(desc, &op);
  if (!r) {
    if (r.status != Status::InvalidArgument && r.status != Status::Unsupported)
      Die("CreateOperator: unexpected status: " + r.message);
    if (r.message.empty() || r.message.find('\n') != std::string::npos)
      Die("CreateOperator: a refusal must be one line: '" + r.message + "'");
    ++gStats.refused;
    return 0;
  }
  std::unique_ptr<CompiledOperator> compiled;
  r = Dev().CompileOperator(*op, c.flags, &compiled);
  if (!r) {
    if (r.status != Status::Unsupported) Die("CompileOperator: " + r.message);
    ++gStats.refused;
    return 0;
  }

  // Inputs: data from the input, indices around their dimension's size (clamped if beyond).
  UINT bound = 1;
  for (UINT s : c.tensors[0].sizes) bound = std::max(bound, s);
  std::vector<std::vector<uint8_t>> images;
  for (size_t i = 0; i + 1 < c.tensors.size(); ++i)
    images.push_back(Image(d, c.tensors[i], i == 1, bound));
  const T& outT = c.tensors.back();
  std::vector<uint8_t> got(outT.buf.TotalTensorSizeInBytes, 0xA5), expected = got;
  std::vector<const void*> inputs;
  for (const auto& img : images) inputs.push_back(img.data());
  r = Dev().Run(*compiled, inputs, {got.data()});
  const ref::IndexError err = c.Reference(images, expected.data());

  const bool checked = c.flags & VKDML_EXECUTION_FLAG_CHECK_INDICES;
  if (checked && err.found) {
    if (r.status != Status::IndexOutOfRange || r.message.find(err.message) == std::string::npos)
      Die("checked run: '" + r.message + "', the reference says '" + err.message + "'");
  } else if (!r) {
    Die("Run: " + r.message);
  }

  // Scatters whose updates collide may write them in any order, unless deterministic: a
  // colliding element holds one of its updates (without a reduction; 8-byte elements as two
  // halves, each of one), or, for float sums and products, is not compared.
  if (c.scatter && !(c.flags & VKDML_EXECUTION_FLAG_DETERMINISTIC)) {
    const DML_TENSOR_DATA_TYPE dt = outT.buf.DataType;
    const bool floats = dt == DML_TENSOR_DATA_TYPE_FLOAT16 || dt == DML_TENSOR_DATA_TYPE_FLOAT32 ||
                        dt == DML_TENSOR_DATA_TYPE_FLOAT64;
    const bool orderFree = c.reduce == VKDML_REDUCE_FUNCTION_MAX ||
                           c.reduce == VKDML_REDUCE_FUNCTION_MIN ||
                           (c.reduce != VKDML_REDUCE_FUNCTION_NONE && !floats);
    std::map<uint64_t, std::vector<uint64_t>> writers;
    for (const ref::ScatterWrite& w : c.Writes(images[1].data()))
      writers[w.outOffset].push_back(w.updOffset);
    const uint32_t es = ref::ElementSize(dt);
    for (const auto& kv : writers) {
      if (kv.second.size() < 2 || orderFree) continue;
      if (c.reduce == VKDML_REDUCE_FUNCTION_NONE) {
        for (uint32_t half = 0; half < es; half += std::min<uint32_t>(es, 4)) {
          const uint32_t n = std::min<uint32_t>(es, 4);
          bool any = false;
          for (uint64_t u : kv.second)
            any = any || std::memcmp(&got[kv.first + half], &images[2][u + half], n) == 0;
          if (!any) Die("a colliding element holds none of its updates");
        }
      }
      std::memcpy(&expected[kv.first], &got[kv.first], es);
    }
  }
  ++gStats.ran;
  gStats.checkedOutOfRange += checked && err.found;
  if (got != expected) {
    size_t at = 0;
    while (got[at] == expected[at]) ++at;
    Die("output byte " + std::to_string(at) + " is " + std::to_string(got[at]) + ", expected " +
        std::to_string(expected[at]) + " (operator type " + std::to_string(UINT(c.type)) + ")");
  }
  return 0;
}
