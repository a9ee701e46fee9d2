// libFuzzer target: operator descriptors. Each input is decoded (fuzz_common.h: Decoder) into one
// small operator of DirectML's six gathers and scatters or vkdml's two scatter reductions, with
// tensors of any data and index type, rank 1-4, sizes 1-4, packed, padded or broadcast strides,
// spare bytes, raw fields that may be invalid, out-of-range indices, checked and deterministic
// executions, and data from the input. It is created, compiled and run through Device::Run on the
// device the tests use (lavapipe, with the validation layer), and every byte of the output, padding
// included, is compared with the CPU reference (test/reference.cpp); a checked run's status with
// the reference's first out-of-range index. A descriptor vkdml refuses must be refused with
// InvalidArgument or Unsupported and a message. Any difference, validation message or sanitizer
// report is a crash. An input whose first byte is 0xE0 or more (one in eight) is vkdml's
// quantized-row gather or quantizing scatter instead (fuzz_quantized.cpp), one from 0xD0 to 0xDF
// its embedding bag (fuzz_bag.cpp), one from 0xC8 to 0xCF its block-quantized gather
// (fuzz_blocks.cpp), one from 0xC4 to 0xC7 its MoE permute or unpermute (fuzz_moe.cpp), one from
// 0xC0 to 0xC3 its paged KV cache write or gather (fuzz_paged.cpp), one from 0xB8 to 0xBF its
// segment reduction (fuzz_segment.cpp), by the same rules.
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "fuzz_common.h"

using namespace fz;

namespace {

const DML_OPERATOR_TYPE kOps[] = {DML_OPERATOR_GATHER_ND,
                                  DML_OPERATOR_GATHER_ND1,
                                  DML_OPERATOR_GATHER,
                                  DML_OPERATOR_GATHER_ELEMENTS,
                                  DML_OPERATOR_SCATTER_ND,
                                  DML_OPERATOR_SCATTER_ELEMENTS,
                                  VKDML_OPERATOR_SCATTER_ND_REDUCE,
                                  VKDML_OPERATOR_SCATTER_ELEMENTS_REDUCE};

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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  NextInput();
  Decoder d{data, size};
  if (size > 0 && data[0] >= 0xE0) return RunQuantizedRows(d);
  if (size > 0 && data[0] >= 0xD0) return RunEmbeddingBag(d);
  if (size > 0 && data[0] >= 0xC8) return RunBlockQuantized(d);
  if (size > 0 && data[0] >= 0xC4) return RunMoe(d);
  if (size > 0 && data[0] >= 0xC0) return RunPaged(d);
  if (size > 0 && data[0] >= 0xB8) return RunSegment(d);
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
  // A float ADD or MULTIPLY whose result is NaN: any NaN (dml.h: IEEE 754 leaves its bits open,
  // and an operand's payload, kept by x86-64, is not by every GPU).
  const DML_TENSOR_DATA_TYPE dt = spec.Output().Type();
  if (c.scatter &&
      (spec.reduce == VKDML_REDUCE_FUNCTION_ADD || spec.reduce == VKDML_REDUCE_FUNCTION_MULTIPLY) &&
      (dt == DML_TENSOR_DATA_TYPE_FLOAT16 || dt == DML_TENSOR_DATA_TYPE_FLOAT32 ||
       dt == DML_TENSOR_DATA_TYPE_FLOAT64))
    for (const ref::ScatterWrite& w : spec.Writes(images[1])) {
      const uint32_t es = ref::ElementSize(dt);
      if ((w.inRange || !drop) && std::isnan(FloatValue(dt, &expected[w.outOffset])) &&
          std::isnan(FloatValue(dt, &got[w.outOffset]))) {
        std::memcpy(&expected[w.outOffset], &got[w.outOffset], es);
        ++gStats.nanResults;
      }
    }
  ++gStats.ran;
  gStats.checkedOutOfRange += checked && err.found;
  CheckOutput(got, expected, spec.ToString());
  return 0;
}
