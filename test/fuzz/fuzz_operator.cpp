// libFuzzer target: operator descriptors. Each input is decoded (Decoder below) into one small
// operator of DirectML's six gathers and scatters or vkdml's two scatter reductions, with tensors
// of any data and index type, rank 1-4, sizes 1-4, packed, padded or broadcast strides, spare
// bytes, raw fields that may be invalid, out-of-range indices, checked and deterministic
// executions, and data from the input. It is created, compiled and run through Device::Run on the
// device the tests use (lavapipe, with the validation layer), and every byte of the output, padding
// included, is compared with the CPU reference (test/reference.cpp); a checked run's status with
// the reference's first out-of-range index. A descriptor vkdml refuses must be refused with
// InvalidArgument or Unsupported and a message. Any difference, validation message or sanitizer
// report is a crash. An input whose first byte is 0xE0 or more (one in eight) is vkdml's
// quantized-row gather instead (VKDML_OPERATOR_GATHER_QUANTIZED_ROWS, RunQuantizedRows below): Q8_0
// and Q4_0 tables, float32 and float16 outputs; or, with its mode's bit 0x40, the quantizing
// scatter (VKDML_OPERATOR_SCATTER_QUANTIZED_ROWS, RunQuantizingScatter); both against
// test/quantized_ref.h's definitions, by the same rules.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "op_spec.h"
#include "quantized_ref.h"
#include "vkdml/vkdml.h"

using namespace vkdml;

namespace {

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "fuzz_operator: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

// The Device keeps every pipeline it has made (one per module and specialization), and lavapipe
// holds each one's compiled code: thousands of inputs would pass libFuzzer's 2 GiB limit, so a
// fresh Device every kFreshDevice inputs.
constexpr uint64_t kFreshDevice = 500;
std::unique_ptr<Device> device;

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

// A tensor's strides and TotalTensorSizeInBytes from the decoder: packed, padded, or (inputs)
// broadcast along some dimensions; plus a few spare bytes and perhaps an alignment.
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

std::vector<UINT> Sizes(Decoder& d, UINT dims) {
  std::vector<UINT> s(dims);
  for (UINT& v : s) v = d.In(1, 4);
  return s;
}

struct Case {
  vt::OpSpec spec;
  UINT flags = 0;
  bool scatter = false;
};

// Decodes a case whose shapes follow the operator's formulas (most of them valid), or, in raw
// mode, whose fields and sizes come straight from the input (most of them invalid).
Case Decode(Decoder& d) {
  Case c;
  vt::OpSpec& s = c.spec;
  s.type = kOps[d.Byte() % 8];
  const uint8_t mode = d.Byte();
  const bool raw = mode & 0x80;
  c.flags = (mode & 1 ? VKDML_EXECUTION_FLAG_CHECK_INDICES : 0) |
            (mode & 2 ? VKDML_EXECUTION_FLAG_DETERMINISTIC : 0);
  const DML_TENSOR_DATA_TYPE dt = kData[d.Byte() % 11], it = kIndex[d.Byte() % 4];
  const UINT D = d.In(1, 4);
  const bool reduce = s.type == VKDML_OPERATOR_SCATTER_ND_REDUCE ||
                      s.type == VKDML_OPERATOR_SCATTER_ELEMENTS_REDUCE;
  c.scatter =
      reduce || s.type == DML_OPERATOR_SCATTER_ND || s.type == DML_OPERATOR_SCATTER_ELEMENTS;
  if (reduce) s.reduce = static_cast<VKDML_REDUCE_FUNCTION>(raw ? d.Raw32() % 7 : d.In(0, 5));
  // A float MEAN whose updates collide divides a sum that depends on their order: it runs
  // deterministic, so that the sequential reference decides it.
  const bool floats = dt == DML_TENSOR_DATA_TYPE_FLOAT16 || dt == DML_TENSOR_DATA_TYPE_FLOAT32 ||
                      dt == DML_TENSOR_DATA_TYPE_FLOAT64;
  if (reduce && s.reduce == VKDML_REDUCE_FUNCTION_MEAN && floats)
    c.flags |= VKDML_EXECUTION_FLAG_DETERMINISTIC;
  // ExcludeSelf: with a reduction now and then; raw, any value.
  if (reduce) s.excludeSelf = raw ? BOOL(d.Raw32() % 3) : BOOL(s.reduce && (d.Byte() & 3) == 0);
  std::vector<UINT> in = Sizes(d, D), idx, upd, out;
  if (raw) {  // anything: the descriptor's own fields, unchecked
    s.r = d.In(0, 5);
    s.q = d.In(0, 5);
    s.b = d.In(0, 3);
    s.axis = d.In(0, 5);
    s.indexDims = d.In(0, 5);
    idx = Sizes(d, d.In(1, 5));
    upd = Sizes(d, d.In(1, 5));
    out = Sizes(d, d.In(1, 5));
  } else {
    switch (s.type) {
      case DML_OPERATOR_GATHER_ELEMENTS:
      case DML_OPERATOR_SCATTER_ELEMENTS:
      case VKDML_OPERATOR_SCATTER_ELEMENTS_REDUCE:
        s.axis = d.In(0, D - 1);
        idx = in;
        idx[s.axis] = d.In(1, 4);
        upd = idx;
        out = c.scatter ? in : idx;
        break;
      case DML_OPERATOR_GATHER:
        s.axis = d.In(0, D - 1);
        s.indexDims = d.In(1, D);
        idx.assign(D, 1);
        for (UINT i = D - s.indexDims; i < D; ++i) idx[i] = d.In(1, 4);
        out = ref::GatherOutputSizes(in, idx, s.axis, s.indexDims);
        break;
      default:  // GatherND, GatherND1, ScatterND
        s.r = d.In(1, D);
        s.q = d.In(1, D);
        s.b = s.type == DML_OPERATOR_GATHER_ND1 ? d.In(0, std::min(s.q, s.r) - 1) : 0;
        for (UINT i = 0; i < D - s.r; ++i) in[i] = 1;
        idx.assign(D, 1);
        for (UINT i = D - s.q; i + 1 < D; ++i) idx[i] = d.In(1, 4);
        for (UINT j = 0; j < s.b; ++j) idx[D - s.q + j] = in[D - s.r + j];
        idx[D - 1] = d.In(1, s.r - s.b);
        upd = ref::GatherNDOutputSizes(in, idx, s.r, s.q, s.b);
        out = c.scatter ? in : upd;
        break;
    }
    if (out.empty()) out = Sizes(d, D);  // no valid output: an invalid one
  }
  s.tensors.push_back(Layout(d, dt, in, false));
  s.tensors.push_back(Layout(d, it, idx, false));
  if (c.scatter) s.tensors.push_back(Layout(d, dt, upd, false));
  s.tensors.push_back(Layout(d, dt, out, true));
  if (raw && (d.Byte() & 3) == 0) {  // a raw field or two of any value
    s.tensors[d.Byte() % s.tensors.size()].buf.DataType =
        static_cast<DML_TENSOR_DATA_TYPE>(d.Raw32());
    s.tensors[d.Byte() % s.tensors.size()].desc.Type = static_cast<DML_TENSOR_TYPE>(d.Byte() % 3);
  }
  // Mode bits 2-3: wrapped in VKDML_OPERATOR_OUT_OF_RANGE, FILL (a gather, a value from the
  // input) or DROP (a scatter), ERROR, or CLAMP; raw: any mode and FillValue bytes.
  const UINT wrap = (mode >> 2) & 3;
  if (wrap) {
    DML_SCALAR_UNION fill{};
    VKDML_OUT_OF_RANGE_MODE m = wrap == 2   ? VKDML_OUT_OF_RANGE_MODE_ERROR
                                : wrap == 3 ? VKDML_OUT_OF_RANGE_MODE_CLAMP
                                : c.scatter ? VKDML_OUT_OF_RANGE_MODE_DROP
                                            : VKDML_OUT_OF_RANGE_MODE_FILL;
    const UINT bytes = raw ? 8 : m == VKDML_OUT_OF_RANGE_MODE_FILL ? ref::ElementSize(dt) : 0;
    for (UINT b = 0; b < bytes; ++b) fill.Bytes[b] = d.Byte();
    if (raw) m = static_cast<VKDML_OUT_OF_RANGE_MODE>(d.Raw32() % 5);
    s.WithOutOfRange(m, fill);
  }
  return c;
}

// An input image: its bytes from the decoder (repeated), indices as values near their range.
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

// ----- Colliding float sums and products (the default mode applies them in any order) -----

long double FloatValue(DML_TENSOR_DATA_TYPE t, const uint8_t* b) {
  if (t == DML_TENSOR_DATA_TYPE_FLOAT32) {
    float f;
    std::memcpy(&f, b, 4);
    return f;
  }
  if (t == DML_TENSOR_DATA_TYPE_FLOAT64) {
    double f;
    std::memcpy(&f, b, 8);
    return f;
  }
  const uint16_t h = uint16_t(b[0] | b[1] << 8);  // FLOAT16
  const int e = h >> 10 & 31, m = h & 1023;
  const long double v = e == 0    ? std::ldexp((long double)m, -24)
                        : e == 31 ? (m ? NAN : INFINITY)
                                  : std::ldexp((long double)(m | 1024), e - 25);
  return h & 0x8000 ? -v : v;
}

enum class Fold { Possible, Impossible, OrderDecides };

// Whether `got` is what applying ADD or MULTIPLY to `terms` (the target's first value, then its
// updates) in some order, each step rounded to the type, can give: within (k + 1) roundings of
// the exact value where no order can overflow or underflow; NaN or an infinity where every order
// gives it. Where the order decides an overflow, an underflow or a NaN, it says so (not checked).
Fold PossibleFold(DML_TENSOR_DATA_TYPE t, VKDML_REDUCE_FUNCTION f,
                  const std::vector<long double>& terms, long double got) {
  const int digits = t == DML_TENSOR_DATA_TYPE_FLOAT16   ? 11
                     : t == DML_TENSOR_DATA_TYPE_FLOAT32 ? 24
                                                         : 53;
  const int minExp = t == DML_TENSOR_DATA_TYPE_FLOAT16   ? -14
                     : t == DML_TENSOR_DATA_TYPE_FLOAT32 ? -126
                                                         : -1022;
  const long double maxFinite =
      std::ldexp(2.0L - std::ldexp(1.0L, 1 - digits), t == DML_TENSOR_DATA_TYPE_FLOAT16   ? 15
                                                      : t == DML_TENSOR_DATA_TYPE_FLOAT32 ? 127
                                                                                          : 1023);
  const long double eps = std::ldexp(1.0L, -digits);
  const long double rounds = (long double)(terms.size() + 1) * eps * 1.01L;
  const auto is = [&](bool ok) { return ok ? Fold::Possible : Fold::Impossible; };
  bool nan = false, posInf = false, negInf = false, zero = false;
  bool negative = false;  // of a product's sign
  long double absSum = 0, sum = 0, product = 1, logUp = 0, logDown = 0;
  for (long double v : terms) {
    nan = nan || std::isnan(v);
    posInf = posInf || (std::isinf(v) && v > 0);
    negInf = negInf || (std::isinf(v) && v < 0);
    zero = zero || v == 0;
    negative = negative != std::signbit(v);
    if (std::isnan(v) || std::isinf(v)) continue;
    absSum += std::fabs(v);
    sum += v;
    product *= v;
    if (v != 0) (std::log2(std::fabs(v)) > 0 ? logUp : logDown) += std::log2(std::fabs(v));
  }
  if (nan) return is(std::isnan(got));
  if (f == VKDML_REDUCE_FUNCTION_ADD) {
    if (posInf && negInf) return is(std::isnan(got));
    if (absSum > maxFinite) return Fold::OrderDecides;  // some order may overflow
    if (posInf || negInf) return is(std::isinf(got) && (got > 0) == posInf);
    return is(std::isfinite(got) && std::fabs(got - sum) <= rounds * absSum);
  }
  // MULTIPLY: partial products reach at most 2^logUp and at least 2^logDown in magnitude.
  const bool mayOverflow = logUp >= std::log2(maxFinite);
  const bool mayUnderflow = logDown < minExp;
  if (zero && (posInf || negInf)) return is(std::isnan(got));
  if (zero) {
    if (mayOverflow) return Fold::OrderDecides;  // an overflow to infinity, then times 0: NaN
    return is(got == 0 && std::signbit(got) == negative);
  }
  if (posInf || negInf) {
    if (mayUnderflow) return Fold::OrderDecides;  // an underflow to 0, then times infinity: NaN
    return is(std::isinf(got) && std::signbit(got) == negative);
  }
  if (mayOverflow || mayUnderflow) return Fold::OrderDecides;
  return is(std::isfinite(got) && std::fabs(got - product) <= rounds * std::fabs(product));
}

// How far the inputs got, printed at exit (.ci/fuzz.sh reports it).
struct Stats {
  uint64_t inputs = 0, refused = 0, ran = 0, checkedOutOfRange = 0, folds = 0, orderDecides = 0;
  uint64_t quantizedRows = 0, quantizingScatters = 0;  // of `ran`
  ~Stats() {
    std::fprintf(stderr,
                 "fuzz_operator: %llu inputs: %llu refused by validation, %llu run and compared "
                 "(%llu of them checked runs that met an out-of-range index); %llu colliding "
                 "float sums and products checked, %llu left where the order decides; %llu "
                 "quantized-row gathers and %llu quantizing scatters run and compared\n",
                 (unsigned long long)inputs, (unsigned long long)refused, (unsigned long long)ran,
                 (unsigned long long)checkedOutOfRange, (unsigned long long)folds,
                 (unsigned long long)orderDecides, (unsigned long long)quantizedRows,
                 (unsigned long long)quantizingScatters);
  }
} gStats;

// Creates and compiles `desc`: false (counted) where vkdml refuses it as it must, with
// InvalidArgument or Unsupported and a message of one line.
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

// A checked run must report the reference's first out-of-range index; any other run succeeds.
void CheckStatus(const Result& r, bool checked, const ref::IndexError& err) {
  if (checked && err.found) {
    if (r.status != Status::IndexOutOfRange || r.message.find(err.message) == std::string::npos)
      Die("checked run: '" + r.message + "', the reference says '" + err.message + "'");
  } else if (!r) {
    Die("Run: " + r.message);
  }
}

// Every output byte, padding included, as the reference has it: else a crash naming the first
// that differs and `what` ran.
void CheckOutput(const vt::Bytes& got, const vt::Bytes& expected, const std::string& what) {
  if (got == expected) return;
  size_t at = 0;
  while (got[at] == expected[at]) ++at;
  Die("output byte " + std::to_string(at) + " is " + std::to_string(got[at]) + ", expected " +
      std::to_string(expected[at]) + ": " + what);
}

// ----- vkdml's quantized-row gather (VKDML_OPERATOR_GATHER_QUANTIZED_ROWS, dml.h) -----

// A table {1, ..., 1, rows, blocks * block bytes} of `format`, indices {n0, ..., 1}, an output
// {n0, ..., 32 * blocks} of FLOAT32 or FLOAT16, laid out as Layout does; raw: one size and the
// format or output type from the input (most of them invalid). Mode bits as Decode's: checked;
// bits 2-3 wrap it in FILL, ERROR or CLAMP (raw: DROP, which a gather refuses, for CLAMP).
int RunQuantizingScatter(Decoder& d, uint8_t mode);

int RunQuantizedRows(Decoder& d) {
  d.Byte();  // the byte that chose this operator
  const uint8_t mode = d.Byte();
  if (mode & 0x40) return RunQuantizingScatter(d, mode);
  const bool raw = mode & 0x80;
  const UINT flags = mode & 1 ? VKDML_EXECUTION_FLAG_CHECK_INDICES : 0;
  const auto format = static_cast<VKDML_QUANTIZED_FORMAT>(raw ? d.Byte() % 4 : 1 + d.Byte() % 2);
  const DML_TENSOR_DATA_TYPE outType =
      raw ? kData[d.Byte() % 11]
          : (d.Byte() & 1 ? DML_TENSOR_DATA_TYPE_FLOAT16 : DML_TENSOR_DATA_TYPE_FLOAT32);
  const DML_TENSOR_DATA_TYPE it = kIndex[d.Byte() % 4];
  const UINT D = d.In(2, 4), bb = vt::BlockBytes(format);
  std::vector<UINT> tableSizes(D, 1), idxSizes(D, 1), outSizes;
  tableSizes[D - 2] = d.In(1, 6);
  tableSizes[D - 1] = d.In(1, 2) * bb;
  for (UINT i = 0; i + 1 < D; ++i) idxSizes[i] = d.In(1, 3);
  outSizes = idxSizes;
  outSizes[D - 1] = tableSizes[D - 1] / bb * 32;
  if (raw) {
    std::vector<UINT>* all[] = {&tableSizes, &idxSizes, &outSizes};
    (*all[d.Byte() % 3])[d.Byte() % D] = d.In(0, 70);
  }
  vt::TensorDesc table = Layout(d, DML_TENSOR_DATA_TYPE_UINT8, tableSizes, false);
  vt::TensorDesc indices = Layout(d, it, idxSizes, false);
  vt::TensorDesc output = Layout(d, outType, outSizes, true);
  for (vt::TensorDesc* t : {&table, &indices, &output}) t->Fix();
  VKDML_GATHER_QUANTIZED_ROWS_OPERATOR_DESC rows{table.Desc(), indices.Desc(), output.Desc(),
                                                 format};
  DML_OPERATOR_DESC gather{VKDML_OPERATOR_GATHER_QUANTIZED_ROWS, &rows};
  const UINT wrap = (mode >> 2) & 3;
  VKDML_OUT_OF_RANGE_MODE m = wrap == 1   ? VKDML_OUT_OF_RANGE_MODE_FILL
                              : wrap == 2 ? VKDML_OUT_OF_RANGE_MODE_ERROR
                              : raw       ? VKDML_OUT_OF_RANGE_MODE_DROP
                                          : VKDML_OUT_OF_RANGE_MODE_CLAMP;
  DML_SCALAR_UNION fill{};
  const UINT es = ref::ElementSize(outType);
  if (m == VKDML_OUT_OF_RANGE_MODE_FILL)
    for (UINT b = 0; b < es; ++b) fill.Bytes[b] = d.Byte();
  VKDML_OUT_OF_RANGE_OPERATOR_DESC wrapped{&gather, m, fill};
  const DML_OPERATOR_DESC outer{VKDML_OPERATOR_OUT_OF_RANGE, &wrapped};
  std::unique_ptr<CompiledOperator> compiled;
  if (!Prepare(wrap ? outer : gather, flags, &compiled)) return 0;

  // Accepted: the sizes are dml.h's. The table's bytes from the input, each scale finite;
  // indices around the row count.
  const UINT nRows = table.sizes[D - 2], blocks = table.sizes[D - 1] / bb;
  const ref::Tensor t = table.Ref(), x = indices.Ref(), o = output.Ref();
  vt::Bytes tableImage = Image(d, table, false, 0);
  ref::Coord at(D, 0);
  for (UINT r = 0; r < nRows; ++r)
    for (UINT k = 0; k < blocks; ++k) {
      at[D - 2] = r;
      at[D - 1] = k * bb;
      vt::MakeScaleFinite(&tableImage[t.ByteOffset(at)]);
    }
  const vt::Bytes indexImage = Image(d, indices, true, nRows);
  vt::Bytes got(output.Total(), 0xA5), expected = got;
  const Result r = Dev().Run(*compiled, {tableImage.data(), indexImage.data()}, {got.data()});

  ref::Coord ic(D), tc(D, 0);
  ref::ForEachCoord(o.sizes, [&](const ref::Coord& c) {
    ic = c;
    ic[D - 1] = 0;
    const ref::IndexValue v = ref::ReadIndex(x, indexImage.data(), ic);
    uint8_t* e = &expected[o.ByteOffset(c)];
    if (m == VKDML_OUT_OF_RANGE_MODE_FILL && !ref::IndexInRange(v, nRows)) {
      std::memcpy(e, fill.Bytes, es);
      return;
    }
    tc[D - 2] = ref::ClampIndex(v, nRows);
    tc[D - 1] = c[D - 1] / 32 * bb;
    const float value = vt::BlockValue(format, &tableImage[t.ByteOffset(tc)], c[D - 1] % 32);
    const uint16_t half = vt::NearestHalf(value);
    std::memcpy(e, es == 4 ? static_cast<const void*>(&value) : &half, es);
  });
  const ref::IndexError err =
      ref::FirstError(x, indexImage.data(), [&](const ref::Coord&) { return nRows; });
  const bool checked = flags || m == VKDML_OUT_OF_RANGE_MODE_ERROR;
  CheckStatus(r, checked, err);
  ++gStats.ran;
  ++gStats.quantizedRows;
  gStats.checkedOutOfRange += checked && err.found;
  CheckOutput(got, expected,
              "quantized rows: table " + table.ToString() + ", indices " + indices.ToString() +
                  ", output " + output.ToString());
  return 0;
}

// The quantizing scatter (VKDML_OPERATOR_SCATTER_QUANTIZED_ROWS), chosen by mode bit 0x40: as
// the gather, with UpdatesTensor's rows from the input (each value made finite, as dml.h asks)
// quantized by test/quantized_ref.h's QuantizeBlock into a copy of the table, the later of two
// indices of a row winning; wraps DROP and ERROR (FILL, a gather's, must be refused).
int RunQuantizingScatter(Decoder& d, uint8_t mode) {
  const bool raw = mode & 0x80;
  const UINT flags = mode & 1 ? VKDML_EXECUTION_FLAG_CHECK_INDICES : 0;
  const auto format = static_cast<VKDML_QUANTIZED_FORMAT>(raw ? d.Byte() % 4 : 1 + d.Byte() % 2);
  const DML_TENSOR_DATA_TYPE updType = raw ? kData[d.Byte() % 11] : DML_TENSOR_DATA_TYPE_FLOAT32;
  const DML_TENSOR_DATA_TYPE it = kIndex[d.Byte() % 4];
  const UINT D = d.In(2, 4), bb = vt::BlockBytes(format);
  std::vector<UINT> tableSizes(D, 1), idxSizes(D, 1), updSizes;
  tableSizes[D - 2] = d.In(1, 6);
  tableSizes[D - 1] = d.In(1, 2) * bb;
  for (UINT i = 0; i + 1 < D; ++i) idxSizes[i] = d.In(1, 3);
  updSizes = idxSizes;
  updSizes[D - 1] = tableSizes[D - 1] / bb * 32;
  if (raw) {
    std::vector<UINT>* all[] = {&tableSizes, &idxSizes, &updSizes};
    (*all[d.Byte() % 3])[d.Byte() % D] = d.In(0, 70);
  }
  vt::TensorDesc table = Layout(d, DML_TENSOR_DATA_TYPE_UINT8, tableSizes, false);
  vt::TensorDesc indices = Layout(d, it, idxSizes, false);
  vt::TensorDesc updates = Layout(d, updType, updSizes, false);
  vt::TensorDesc output = Layout(d, DML_TENSOR_DATA_TYPE_UINT8, tableSizes, true);
  for (vt::TensorDesc* t : {&table, &indices, &updates, &output}) t->Fix();
  VKDML_SCATTER_QUANTIZED_ROWS_OPERATOR_DESC rows{table.Desc(), indices.Desc(), updates.Desc(),
                                                  output.Desc(), format};
  DML_OPERATOR_DESC scatter{VKDML_OPERATOR_SCATTER_QUANTIZED_ROWS, &rows};
  const UINT wrap = (mode >> 2) & 3;
  const VKDML_OUT_OF_RANGE_MODE m = wrap == 1   ? VKDML_OUT_OF_RANGE_MODE_DROP
                                    : wrap == 2 ? VKDML_OUT_OF_RANGE_MODE_ERROR
                                    : raw       ? VKDML_OUT_OF_RANGE_MODE_FILL
                                                : VKDML_OUT_OF_RANGE_MODE_CLAMP;
  VKDML_OUT_OF_RANGE_OPERATOR_DESC wrapped{&scatter, m, {}};
  const DML_OPERATOR_DESC outer{VKDML_OPERATOR_OUT_OF_RANGE, &wrapped};
  std::unique_ptr<CompiledOperator> compiled;
  if (!Prepare(wrap || raw ? outer : scatter, flags, &compiled)) return 0;
  if (m == VKDML_OUT_OF_RANGE_MODE_FILL) Die("a quantizing scatter accepted FILL");

  // Accepted: the sizes are dml.h's. The table's and the updates' bytes from the input, each
  // update finite (a non-finite one's exponent loses its top bit); indices around the row count.
  const UINT nRows = table.sizes[D - 2], blocks = table.sizes[D - 1] / bb;
  const ref::Tensor t = table.Ref(), x = indices.Ref(), u = updates.Ref(), o = output.Ref();
  const vt::Bytes tableImage = Image(d, table, false, 0);
  vt::Bytes updateImage = Image(d, updates, false, 0);
  for (size_t b = 0; b + 4 <= updateImage.size(); b += 4)
    if ((updateImage[b + 3] & 0x7F) == 0x7F && (updateImage[b + 2] & 0x80))
      updateImage[b + 3] &= 0xBF;
  const vt::Bytes indexImage = Image(d, indices, true, nRows);
  vt::Bytes got(output.Total(), 0xA5), expected = got;
  const Result r = Dev().Run(*compiled, {tableImage.data(), indexImage.data(), updateImage.data()},
                             {got.data()});

  ref::ForEachCoord(o.sizes, [&](const ref::Coord& c) {  // the copy
    expected[o.ByteOffset(c)] = tableImage[t.ByteOffset(c)];
  });
  ref::Coord ic(D, 0), uc(D, 0), oc(D, 0);
  std::vector<UINT> batch = idxSizes;
  batch[D - 1] = 1;
  ref::ForEachCoord(batch, [&](const ref::Coord& c) {  // row-major: the later index wins
    const ref::IndexValue v = ref::ReadIndex(x, indexImage.data(), c);
    if (m == VKDML_OUT_OF_RANGE_MODE_DROP && !ref::IndexInRange(v, nRows)) return;
    oc[D - 2] = ref::ClampIndex(v, nRows);
    uc = c;
    for (UINT k = 0; k < blocks; ++k) {
      float values[32];
      for (UINT j = 0; j < 32; ++j) {
        uc[D - 1] = k * 32 + j;
        std::memcpy(&values[j], &updateImage[u.ByteOffset(uc)], 4);
      }
      oc[D - 1] = k * bb;
      vt::QuantizeBlock(format, values, &expected[o.ByteOffset(oc)]);  // its bytes consecutive
    }
  });
  const ref::IndexError err =
      ref::FirstError(x, indexImage.data(), [&](const ref::Coord&) { return nRows; });
  const bool checked = flags || m == VKDML_OUT_OF_RANGE_MODE_ERROR;
  CheckStatus(r, checked, err);
  ++gStats.ran;
  ++gStats.quantizingScatters;
  gStats.checkedOutOfRange += checked && err.found;
  CheckOutput(got, expected,
              "quantizing scatter: table " + table.ToString() + ", indices " + indices.ToString() +
                  ", updates " + updates.ToString() + ", output " + output.ToString());
  return 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (++gStats.inputs % kFreshDevice == 0) device.reset();
  Decoder d{data, size};
  if (size > 0 && data[0] >= 0xE0) return RunQuantizedRows(d);
  Case c = Decode(d);
  vt::OpSpec& spec = c.spec;
  std::unique_ptr<CompiledOperator> compiled;
  if (!Prepare(spec.Desc(), c.flags, &compiled)) return 0;

  // Inputs: data from the input, indices around their dimension's size (clamped if beyond).
  UINT bound = 1;
  for (UINT v : spec.tensors[0].sizes) bound = std::max(bound, v);
  std::vector<vt::Bytes> images;
  for (size_t i = 0; i < spec.InputCount(); ++i)
    images.push_back(Image(d, spec.tensors[i], i == 1, bound));
  vt::Bytes got(spec.Output().Total(), 0xA5), expected = got;
  std::vector<const void*> inputs;
  for (const auto& img : images) inputs.push_back(img.data());
  const Result r = Dev().Run(*compiled, inputs, {got.data()});
  const ref::IndexError err = spec.Reference(images, &expected);

  const bool checked = (c.flags & VKDML_EXECUTION_FLAG_CHECK_INDICES) ||
                       (spec.wrapped && spec.outOfRange == VKDML_OUT_OF_RANGE_MODE_ERROR);
  const bool drop = spec.wrapped && spec.outOfRange == VKDML_OUT_OF_RANGE_MODE_DROP;
  CheckStatus(r, checked, err);

  // Scatters whose updates collide may write them in any order, unless deterministic: a
  // colliding element holds one of its updates (without a reduction; 8-byte elements as two
  // halves, each of one), or, for float sums and products, what some order gives (PossibleFold).
  if (c.scatter && !(c.flags & VKDML_EXECUTION_FLAG_DETERMINISTIC)) {
    const DML_TENSOR_DATA_TYPE dt = spec.Output().Type();
    const bool floats = dt == DML_TENSOR_DATA_TYPE_FLOAT16 || dt == DML_TENSOR_DATA_TYPE_FLOAT32 ||
                        dt == DML_TENSOR_DATA_TYPE_FLOAT64;
    const bool orderFree = spec.reduce == VKDML_REDUCE_FUNCTION_MAX ||
                           spec.reduce == VKDML_REDUCE_FUNCTION_MIN ||
                           (spec.reduce != VKDML_REDUCE_FUNCTION_NONE && !floats);
    std::map<uint64_t, std::vector<uint64_t>> writers;
    for (const ref::ScatterWrite& w : spec.Writes(images[1]))
      if (w.inRange || !drop) writers[w.outOffset].push_back(w.updOffset);
    const uint32_t es = ref::ElementSize(dt);
    // An output byte offset's element in InputTensor (the same coordinates): a target's first
    // value.
    std::map<uint64_t, uint64_t> inputOffset;
    const ref::Tensor out = spec.Output().Ref(), in = spec.tensors[0].Ref();
    if (!orderFree && spec.reduce != VKDML_REDUCE_FUNCTION_NONE)
      ref::ForEachCoord(out.sizes, [&](const ref::Coord& co) {
        inputOffset[out.ByteOffset(co)] = in.ByteOffset(co);
      });
    const auto inputAt = [&](uint64_t outAt) { return inputOffset.at(outAt); };
    for (const auto& kv : writers) {
      if (kv.second.size() < 2 || orderFree) continue;
      if (spec.reduce == VKDML_REDUCE_FUNCTION_NONE) {
        for (uint32_t half = 0; half < es; half += std::min<uint32_t>(es, 4)) {
          const uint32_t n = std::min<uint32_t>(es, 4);
          bool any = false;
          for (uint64_t u : kv.second)
            any = any || std::memcmp(&got[kv.first + half], &images[2][u + half], n) == 0;
          if (!any) Die("a colliding element holds none of its updates");
        }
      } else {  // a float ADD or MULTIPLY: the target's first value, then its updates
        // (ExcludeSelf: the first value is the identity, +0 or 1).
        const long double first = spec.excludeSelf
                                      ? (spec.reduce == VKDML_REDUCE_FUNCTION_ADD ? 0.0L : 1.0L)
                                      : FloatValue(dt, &images[0][inputAt(kv.first)]);
        std::vector<long double> terms = {first};
        for (uint64_t u : kv.second) terms.push_back(FloatValue(dt, &images[2][u]));
        const long double value = FloatValue(dt, &got[kv.first]);
        const Fold fold = PossibleFold(dt, spec.reduce, terms, value);
        if (fold == Fold::Impossible)
          Die("a colliding element holds " + std::to_string((double)value) +
              ", which no order of its " + std::to_string(kv.second.size()) +
              " updates gives: " + spec.ToString());
        ++(fold == Fold::Possible ? gStats.folds : gStats.orderDecides);
      }
      std::memcpy(&expected[kv.first], &got[kv.first], es);
    }
  }
  ++gStats.ran;
  gStats.checkedOutOfRange += checked && err.found;
  CheckOutput(got, expected, spec.ToString());
  return 0;
}
