#include "reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>
#include <type_traits>

namespace ref {

using namespace vkdml;

uint32_t ElementSize(DML_TENSOR_DATA_TYPE type) {
  switch (type) {
    case DML_TENSOR_DATA_TYPE_UINT8:
    case DML_TENSOR_DATA_TYPE_INT8:
      return 1;
    case DML_TENSOR_DATA_TYPE_FLOAT16:
    case DML_TENSOR_DATA_TYPE_UINT16:
    case DML_TENSOR_DATA_TYPE_INT16:
      return 2;
    case DML_TENSOR_DATA_TYPE_FLOAT32:
    case DML_TENSOR_DATA_TYPE_UINT32:
    case DML_TENSOR_DATA_TYPE_INT32:
      return 4;
    case DML_TENSOR_DATA_TYPE_FLOAT64:
    case DML_TENSOR_DATA_TYPE_UINT64:
    case DML_TENSOR_DATA_TYPE_INT64:
      return 8;
    default:
      return 0;
  }
}

bool IsIndexType(DML_TENSOR_DATA_TYPE type) {
  return type == DML_TENSOR_DATA_TYPE_INT32 || type == DML_TENSOR_DATA_TYPE_UINT32 ||
         type == DML_TENSOR_DATA_TYPE_INT64 || type == DML_TENSOR_DATA_TYPE_UINT64;
}

bool IsSignedIndexType(DML_TENSOR_DATA_TYPE type) {
  return type == DML_TENSOR_DATA_TYPE_INT32 || type == DML_TENSOR_DATA_TYPE_INT64;
}

std::vector<uint32_t> PackedStrides(const std::vector<uint32_t>& sizes) {
  std::vector<uint32_t> strides(sizes.size());
  uint64_t s = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = static_cast<uint32_t>(s);
    s *= sizes[i];
  }
  return strides;
}

Tensor::Tensor(DML_TENSOR_DATA_TYPE t, std::vector<uint32_t> s, std::vector<uint32_t> st)
    : type(t), sizes(std::move(s)), strides(std::move(st)) {
  if (strides.empty()) strides = PackedStrides(sizes);
  if (strides.size() != sizes.size()) throw std::invalid_argument("ref::Tensor: strides rank");
}

uint64_t Tensor::ElementCount() const {
  uint64_t n = 1;
  for (uint32_t s : sizes) n *= s;
  return n;
}

uint64_t Tensor::ByteOffset(const Coord& coord) const {
  uint64_t element = 0;
  for (size_t i = 0; i < sizes.size(); ++i) element += uint64_t(coord[i]) * strides[i];
  return element * ElemSize();
}

uint64_t Tensor::RequiredBytes() const {
  uint64_t last = 0;
  for (size_t i = 0; i < sizes.size(); ++i) last += uint64_t(sizes[i] - 1) * strides[i];
  uint64_t bytes = (last + 1) * ElemSize();
  return (bytes + 3) / 4 * 4;
}

void ForEachCoord(const std::vector<uint32_t>& sizes, const std::function<void(const Coord&)>& f) {
  for (uint32_t s : sizes)
    if (s == 0) return;
  Coord c(sizes.size(), 0);
  while (true) {
    f(c);
    size_t d = sizes.size();
    while (d > 0) {
      --d;
      if (++c[d] < sizes[d]) break;
      c[d] = 0;
      if (d == 0) return;
    }
    if (sizes.empty()) return;
  }
}

IndexValue ReadIndex(const Tensor& indices, const uint8_t* bytes, const Coord& coord) {
  const uint8_t* p = bytes + indices.ByteOffset(coord);
  IndexValue v;
  switch (indices.type) {
    case DML_TENSOR_DATA_TYPE_INT32: {
      int32_t x;
      std::memcpy(&x, p, 4);
      v.isSigned = true;
      v.s = x;
      break;
    }
    case DML_TENSOR_DATA_TYPE_UINT32: {
      uint32_t x;
      std::memcpy(&x, p, 4);
      v.u = x;
      break;
    }
    case DML_TENSOR_DATA_TYPE_INT64: {
      int64_t x;
      std::memcpy(&x, p, 8);
      v.isSigned = true;
      v.s = x;
      break;
    }
    case DML_TENSOR_DATA_TYPE_UINT64: {
      uint64_t x;
      std::memcpy(&x, p, 8);
      v.u = x;
      break;
    }
    default:
      throw std::invalid_argument("ref::ReadIndex: not an index type");
  }
  return v;
}

void WriteIndexU(DML_TENSOR_DATA_TYPE type, uint8_t* dst, uint64_t v) {
  if (ElementSize(type) == 4) {
    uint32_t x = static_cast<uint32_t>(v);
    std::memcpy(dst, &x, 4);
  } else {
    std::memcpy(dst, &v, 8);
  }
}

void WriteIndex(DML_TENSOR_DATA_TYPE type, uint8_t* dst, int64_t v) {
  WriteIndexU(type, dst, static_cast<uint64_t>(v));
}

uint32_t ClampIndex(const IndexValue& v, uint32_t n) {
  if (v.isSigned) {
    int64_t x = v.s;
    if (x < -int64_t(n)) x = -int64_t(n);
    if (x > int64_t(n) - 1) x = int64_t(n) - 1;
    if (x < 0) x += n;
    return static_cast<uint32_t>(x);
  }
  uint64_t x = v.u;
  if (x > uint64_t(n) - 1) x = uint64_t(n) - 1;
  return static_cast<uint32_t>(x);
}

bool IndexInRange(const IndexValue& v, uint32_t n) {
  if (v.isSigned) return v.s >= -int64_t(n) && v.s <= int64_t(n) - 1;
  return v.u <= uint64_t(n) - 1;
}

namespace {

std::string Message(const Coord& coord, const IndexValue& v, uint32_t n) {
  std::ostringstream s;
  s << "IndicesTensor[";
  for (size_t i = 0; i < coord.size(); ++i) s << (i ? "," : "") << coord[i];
  s << "] is ";
  if (v.isSigned)
    s << v.s << ", outside the valid range [" << -int64_t(n) << ", " << int64_t(n) - 1 << "]";
  else
    s << v.u << ", outside the valid range [0, " << int64_t(n) - 1 << "]";
  return s.str();
}

}  // namespace

IndexError FirstError(const Tensor& indices, const uint8_t* idx,
                      const std::function<uint32_t(const Coord&)>& rangeOf) {
  IndexError e;
  ForEachCoord(indices.sizes, [&](const Coord& c) {
    if (e.found) return;
    IndexValue v = ReadIndex(indices, idx, c);
    uint32_t n = rangeOf(c);
    if (!IndexInRange(v, n)) {
      e.found = true;
      e.coord = c;
      e.message = Message(c, v, n);
    }
  });
  return e;
}

namespace {

void Copy(const Tensor& dstT, uint8_t* dst, const Coord& dc, const Tensor& srcT, const uint8_t* src,
          const Coord& sc) {
  std::memcpy(dst + dstT.ByteOffset(dc), src + srcT.ByteOffset(sc), srcT.ElemSize());
}

// Input coordinate (all D dims) that ND-style operators read for the "actual" coordinate a of
// the output (GatherND) or updates (ScatterND). a = batch(b) + index-dims(q-1-b) + slice dims.
Coord NDInputCoord(const Tensor& input, const Tensor& indices, const uint8_t* idx, const Coord& a,
                   uint32_t r, uint32_t q, uint32_t b, bool* inRange) {
  const uint32_t D = input.Dims();
  const uint32_t k = indices.sizes[D - 1];
  Coord ic(D, 0);
  for (uint32_t j = 0; j + 1 < q; ++j) ic[D - q + j] = a[j];
  Coord dc(D, 0);
  for (uint32_t j = 0; j < b; ++j) dc[D - r + j] = a[j];
  *inRange = true;
  for (uint32_t t = 0; t < k; ++t) {
    ic[D - 1] = t;
    uint32_t n = input.sizes[D - r + b + t];
    const IndexValue v = ReadIndex(indices, idx, ic);
    *inRange = *inRange && IndexInRange(v, n);
    dc[D - r + b + t] = ClampIndex(v, n);
  }
  for (uint32_t j = 0; j < r - b - k; ++j) dc[D - r + b + k + j] = a[q - 1 + j];
  return dc;
}

Coord Trailing(const Coord& c, uint32_t count) {
  return Coord(c.end() - count, c.end());
}

void CheckND(const Tensor& input, const Tensor& indices, uint32_t r, uint32_t q, uint32_t b) {
  const uint32_t D = input.Dims();
  if (indices.Dims() != D || r < 1 || r > D || q < 1 || q > D || b >= r || b >= q ||
      indices.sizes[D - 1] < 1 || indices.sizes[D - 1] > r - b)
    throw std::invalid_argument("ref: invalid ND arguments");
}

}  // namespace

std::vector<uint32_t> GatherNDOutputSizes(const std::vector<uint32_t>& inputSizes,
                                          const std::vector<uint32_t>& indicesSizes, uint32_t r,
                                          uint32_t q, uint32_t b) {
  const uint32_t D = static_cast<uint32_t>(inputSizes.size());
  const uint32_t k = indicesSizes[D - 1];
  std::vector<uint32_t> actual;
  for (uint32_t j = 0; j + 1 < q; ++j) actual.push_back(indicesSizes[D - q + j]);
  for (uint32_t j = b + k; j < r; ++j) actual.push_back(inputSizes[D - r + j]);
  if (actual.size() > D) return {};
  std::vector<uint32_t> out(D - actual.size(), 1);
  out.insert(out.end(), actual.begin(), actual.end());
  return out;
}

IndexError GatherND(const Tensor& input, const uint8_t* in, const Tensor& indices,
                    const uint8_t* idx, const Tensor& output, uint8_t* out, uint32_t r, uint32_t q,
                    uint32_t b, const uint8_t* fill) {
  CheckND(input, indices, r, q, b);
  const uint32_t D = input.Dims();
  const uint32_t k = indices.sizes[D - 1];
  const uint32_t R = (q - 1) + (r - b - k);  // rank of the output's actual shape
  if (output.sizes != GatherNDOutputSizes(input.sizes, indices.sizes, r, q, b))
    throw std::invalid_argument("ref::GatherND: output sizes");
  ForEachCoord(output.sizes, [&](const Coord& oc) {
    bool inRange = true;
    Coord dc = NDInputCoord(input, indices, idx, Trailing(oc, R), r, q, b, &inRange);
    Copy(output, out, oc, input, in, dc);
    if (fill && !inRange) std::memcpy(out + output.ByteOffset(oc), fill, output.ElemSize());
  });
  return FirstError(indices, idx,
                    [&](const Coord& c) { return input.sizes[D - r + b + c[D - 1]]; });
}

namespace {

// The entries of Gather's size formula before right alignment: for each, whether it is an input
// dimension (else an indices dimension) and which.
struct GatherEntry {
  bool fromInput;
  uint32_t dim;
};

std::vector<GatherEntry> GatherEntries(uint32_t D, uint32_t axis, uint32_t m) {
  std::vector<GatherEntry> e;
  for (uint32_t d = 0; d < axis; ++d) e.push_back({true, d});
  for (uint32_t j = 0; j < m; ++j) e.push_back({false, D - m + j});
  for (uint32_t d = axis + 1; d < D; ++d) e.push_back({true, d});
  return e;
}

}  // namespace

std::vector<uint32_t> GatherOutputSizes(const std::vector<uint32_t>& inputSizes,
                                        const std::vector<uint32_t>& indicesSizes, uint32_t axis,
                                        uint32_t m) {
  const uint32_t D = static_cast<uint32_t>(inputSizes.size());
  std::vector<uint32_t> full;
  for (const GatherEntry& e : GatherEntries(D, axis, m))
    full.push_back(e.fromInput ? inputSizes[e.dim] : indicesSizes[e.dim]);
  if (full.size() <= D) {
    std::vector<uint32_t> out(D - full.size(), 1);
    out.insert(out.end(), full.begin(), full.end());
    return out;
  }
  const size_t drop = full.size() - D;  // these must be the input's leading 1s (before axis)
  for (size_t i = 0; i < drop; ++i)
    if (i >= axis || full[i] != 1) return {};
  return std::vector<uint32_t>(full.begin() + drop, full.end());
}

IndexError Gather(const Tensor& input, const uint8_t* in, const Tensor& indices, const uint8_t* idx,
                  const Tensor& output, uint8_t* out, uint32_t axis, uint32_t m,
                  const uint8_t* fill) {
  const uint32_t D = input.Dims();
  if (axis >= D || m > D || indices.Dims() != D)
    throw std::invalid_argument("ref::Gather: arguments");
  for (uint32_t d = 0; d + m < D; ++d)
    if (indices.sizes[d] != 1) throw std::invalid_argument("ref::Gather: indices leading sizes");
  if (output.sizes != GatherOutputSizes(input.sizes, indices.sizes, axis, m))
    throw std::invalid_argument("ref::Gather: output sizes");
  const std::vector<GatherEntry> entries = GatherEntries(D, axis, m);
  // Output dimension o holds entry o + shift (shift < 0: leading 1s; > 0: dropped 1s).
  const int64_t shift = int64_t(entries.size()) - int64_t(D);
  // (One pair of coordinates for the whole walk: an allocation per element took most of the
  // sanitizer run's time in the large tests.)
  Coord ic(D), xc(D);
  ForEachCoord(output.sizes, [&](const Coord& oc) {
    std::fill(ic.begin(), ic.end(), 0);  // dropped and padding entries are size-1 dimensions: 0
    std::fill(xc.begin(), xc.end(), 0);
    for (uint32_t o = 0; o < D; ++o) {
      const int64_t e = int64_t(o) + shift;
      if (e < 0) continue;
      (entries[e].fromInput ? ic : xc)[entries[e].dim] = oc[o];
    }
    const IndexValue v = ReadIndex(indices, idx, xc);
    ic[axis] = ClampIndex(v, input.sizes[axis]);
    Copy(output, out, oc, input, in, ic);
    if (fill && !IndexInRange(v, input.sizes[axis]))
      std::memcpy(out + output.ByteOffset(oc), fill, output.ElemSize());
  });
  return FirstError(indices, idx, [&](const Coord&) { return input.sizes[axis]; });
}

IndexError GatherElements(const Tensor& input, const uint8_t* in, const Tensor& indices,
                          const uint8_t* idx, const Tensor& output, uint8_t* out, uint32_t axis,
                          const uint8_t* fill) {
  if (output.sizes != indices.sizes || axis >= input.Dims())
    throw std::invalid_argument("ref::GatherElements: arguments");
  Coord dc;
  ForEachCoord(output.sizes, [&](const Coord& c) {
    dc = c;
    const IndexValue v = ReadIndex(indices, idx, c);
    dc[axis] = ClampIndex(v, input.sizes[axis]);
    Copy(output, out, c, input, in, dc);
    if (fill && !IndexInRange(v, input.sizes[axis]))
      std::memcpy(out + output.ByteOffset(c), fill, output.ElemSize());
  });
  return FirstError(indices, idx, [&](const Coord&) { return input.sizes[axis]; });
}

std::vector<ScatterWrite> ScatterNDWrites(const Tensor& input, const Tensor& indices,
                                          const uint8_t* idx, const Tensor& updates,
                                          const Tensor& output, uint32_t r, uint32_t q) {
  CheckND(input, indices, r, q, 0);
  const uint32_t D = input.Dims();
  const uint32_t k = indices.sizes[D - 1];
  const uint32_t R = (q - 1) + (r - k);  // rank of the updates' actual shape
  if (updates.sizes != GatherNDOutputSizes(input.sizes, indices.sizes, r, q, 0) ||
      output.sizes != input.sizes)
    throw std::invalid_argument("ref::ScatterND: sizes");
  std::vector<ScatterWrite> writes;
  ForEachCoord(updates.sizes, [&](const Coord& uc) {
    bool inRange = true;
    Coord dc = NDInputCoord(input, indices, idx, Trailing(uc, R), r, q, 0, &inRange);
    writes.push_back({output.ByteOffset(dc), updates.ByteOffset(uc), inRange});
  });
  return writes;
}

namespace {

template <typename T>
bool IsNan(T v) {
  return v != v;
}

// Integers: wrapping arithmetic through the unsigned type of the same width.
template <typename T>
T ReduceInt(VKDML_REDUCE_FUNCTION f, T a, T b) {
  using U = typename std::make_unsigned<T>::type;
  switch (f) {
    case VKDML_REDUCE_FUNCTION_ADD:
      return T(U(uint64_t(U(a)) + uint64_t(U(b))));
    case VKDML_REDUCE_FUNCTION_MULTIPLY:
      return T(U(uint64_t(U(a)) * uint64_t(U(b))));
    case VKDML_REDUCE_FUNCTION_MAX:
      return a >= b ? a : b;
    case VKDML_REDUCE_FUNCTION_MIN:
      return a <= b ? a : b;
    default:
      return b;
  }
}

template <typename T>
T ReduceFloat(VKDML_REDUCE_FUNCTION f, T a, T b) {
  switch (f) {
    case VKDML_REDUCE_FUNCTION_ADD:
      return T(a + b);
    case VKDML_REDUCE_FUNCTION_MULTIPLY:
      return T(a * b);
    case VKDML_REDUCE_FUNCTION_MAX:
      return IsNan(a) || a >= b ? a : b;
    case VKDML_REDUCE_FUNCTION_MIN:
      return IsNan(a) || a <= b ? a : b;
    default:
      return b;
  }
}

// FLOAT16 arithmetic in the type itself: GCC's and newer clang's _Float16. Clang 14 (Debian 12's,
// which builds the sanitizer and fuzz runs) has no _Float16 on x86 and no runtime for __fp16
// beside libgcc, so there Half computes in float and rounds each result to half (to nearest,
// ties to even) in software. For a sum, a product, max and min that is the same as rounding
// once: float's 24-bit significand holds 2 * 11 + 2 bits.
#if defined(__clang__) && __clang_major__ < 15
struct Half {
  uint16_t bits;
  Half() = default;
  Half(float f) {  // NOLINT: converts as _Float16 does
    uint32_t x;
    std::memcpy(&x, &f, 4);
    const uint32_t sign = (x >> 16) & 0x8000, mant = x & 0x7FFFFF;
    const int exp = int((x >> 23) & 0xFF);
    if (exp == 0xFF) {  // infinity, or a NaN made quiet
      bits = uint16_t(sign | 0x7C00 | (mant ? 0x200 | (mant >> 13) : 0));
      return;
    }
    const int e = exp - 127 + 15;  // the half exponent
    if (e >= 31) {
      bits = uint16_t(sign | 0x7C00);
      return;
    }
    uint32_t half, rem, halfway;
    if (e <= 0) {  // a half subnormal (or zero): m * 2^-24
      if (e < -10) {
        bits = uint16_t(sign);
        return;
      }
      const uint32_t full = mant | 0x800000, shift = uint32_t(14 - e);
      half = full >> shift;
      rem = full & ((1u << shift) - 1);
      halfway = 1u << (shift - 1);
    } else {
      half = uint32_t(e) << 10 | mant >> 13;
      rem = mant & 0x1FFF;
      halfway = 0x1000;
    }
    if (rem > halfway || (rem == halfway && (half & 1))) ++half;  // a carry rounds up correctly
    bits = uint16_t(sign | half);
  }
  operator float() const {
    const uint32_t sign = uint32_t(bits & 0x8000) << 16, exp = (bits >> 10) & 0x1F,
                   mant = bits & 0x3FF;
    float f;
    if (exp == 0) {
      f = std::ldexp(float(mant), -24);
      return sign ? -f : f;
    }
    const uint32_t x =
        sign | (exp == 31 ? 0x7F800000 | mant << 13 : (exp - 15 + 127) << 23 | mant << 13);
    std::memcpy(&f, &x, 4);
    return f;
  }
};
static_assert(sizeof(Half) == 2);
#else
using Half = _Float16;
#endif

template <typename T, typename Op>
void ReduceAs(uint8_t* acc, const uint8_t* u, Op op) {
  T a, b;
  std::memcpy(&a, acc, sizeof(T));
  std::memcpy(&b, u, sizeof(T));
  const T r = op(a, b);
  std::memcpy(acc, &r, sizeof(T));
}

}  // namespace

void Reduce(DML_TENSOR_DATA_TYPE type, VKDML_REDUCE_FUNCTION f, uint8_t* acc, const uint8_t* u) {
  const auto ints = [f](auto a, auto b) { return ReduceInt(f, a, b); };
  const auto floats = [f](auto a, auto b) { return ReduceFloat(f, a, b); };
  switch (type) {
    case DML_TENSOR_DATA_TYPE_INT8:
      return ReduceAs<int8_t>(acc, u, ints);
    case DML_TENSOR_DATA_TYPE_UINT8:
      return ReduceAs<uint8_t>(acc, u, ints);
    case DML_TENSOR_DATA_TYPE_INT16:
      return ReduceAs<int16_t>(acc, u, ints);
    case DML_TENSOR_DATA_TYPE_UINT16:
      return ReduceAs<uint16_t>(acc, u, ints);
    case DML_TENSOR_DATA_TYPE_INT32:
      return ReduceAs<int32_t>(acc, u, ints);
    case DML_TENSOR_DATA_TYPE_UINT32:
      return ReduceAs<uint32_t>(acc, u, ints);
    case DML_TENSOR_DATA_TYPE_INT64:
      return ReduceAs<int64_t>(acc, u, ints);
    case DML_TENSOR_DATA_TYPE_UINT64:
      return ReduceAs<uint64_t>(acc, u, ints);
    case DML_TENSOR_DATA_TYPE_FLOAT16:
      return ReduceAs<Half>(acc, u, floats);
    case DML_TENSOR_DATA_TYPE_FLOAT32:
      return ReduceAs<float>(acc, u, floats);
    case DML_TENSOR_DATA_TYPE_FLOAT64:
      return ReduceAs<double>(acc, u, floats);
    default:
      throw std::invalid_argument("ref::Reduce: type");
  }
}

namespace {

template <typename T>
void IdentityAs(VKDML_REDUCE_FUNCTION f, uint8_t* dst) {
  T v = T(0);
  if (f == VKDML_REDUCE_FUNCTION_MULTIPLY) v = T(1);
  if (f == VKDML_REDUCE_FUNCTION_MAX)
    v = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                             : std::numeric_limits<T>::lowest();
  if (f == VKDML_REDUCE_FUNCTION_MIN)
    v = std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity()
                                             : std::numeric_limits<T>::max();
  std::memcpy(dst, &v, sizeof v);
}

// PyTorch's include_self=False: every target a (kept) write reaches starts from f's identity.
void SetIdentity(DML_TENSOR_DATA_TYPE type, VKDML_REDUCE_FUNCTION f,
                 const std::vector<ScatterWrite>& writes, bool drop, uint8_t* out) {
  for (const ScatterWrite& w : writes) {
    if (drop && !w.inRange) continue;
    uint8_t* dst = out + w.outOffset;
    switch (type) {
      case DML_TENSOR_DATA_TYPE_FLOAT16: {
        const uint16_t bits = f == VKDML_REDUCE_FUNCTION_MULTIPLY ? 0x3C00
                              : f == VKDML_REDUCE_FUNCTION_MAX    ? 0xFC00
                              : f == VKDML_REDUCE_FUNCTION_MIN    ? 0x7C00
                                                                  : 0;
        std::memcpy(dst, &bits, 2);
        break;
      }
      case DML_TENSOR_DATA_TYPE_FLOAT32:
        IdentityAs<float>(f, dst);
        break;
      case DML_TENSOR_DATA_TYPE_FLOAT64:
        IdentityAs<double>(f, dst);
        break;
      case DML_TENSOR_DATA_TYPE_INT8:
        IdentityAs<int8_t>(f, dst);
        break;
      case DML_TENSOR_DATA_TYPE_INT16:
        IdentityAs<int16_t>(f, dst);
        break;
      case DML_TENSOR_DATA_TYPE_INT32:
        IdentityAs<int32_t>(f, dst);
        break;
      case DML_TENSOR_DATA_TYPE_INT64:
        IdentityAs<int64_t>(f, dst);
        break;
      case DML_TENSOR_DATA_TYPE_UINT8:
        IdentityAs<uint8_t>(f, dst);
        break;
      case DML_TENSOR_DATA_TYPE_UINT16:
        IdentityAs<uint16_t>(f, dst);
        break;
      case DML_TENSOR_DATA_TYPE_UINT32:
        IdentityAs<uint32_t>(f, dst);
        break;
      default:
        IdentityAs<uint64_t>(f, dst);
        break;
    }
  }
}

template <typename T>
void DivideIntAs(uint8_t* x, uint64_t n) {
  T v;
  std::memcpy(&v, x, sizeof v);
  T q;
  if constexpr (std::is_signed_v<T>) {  // rounded toward -infinity
    const int64_t a = v, d = int64_t(n);
    q = T(a / d - (a % d < 0 ? 1 : 0));
  } else {
    q = T(uint64_t(v) / n);
  }
  std::memcpy(x, &q, sizeof q);
}

// x /= n in x's type, as PyTorch's mean divides: integers rounded toward negative infinity;
// floats correctly rounded, computed in double. That is exact for these counts: a quotient of
// x by n (below 2^12 for float16, 2^24 for float32) that is not a rounding midpoint of the type
// is further from one than double's rounding moves it (thrown beyond).
void Divide(DML_TENSOR_DATA_TYPE type, uint8_t* x, uint64_t n) {
  switch (type) {
    case DML_TENSOR_DATA_TYPE_FLOAT16: {
      if (n >= 1u << 12) throw std::invalid_argument("ref::Divide: float16 count");
      Half h;
      std::memcpy(&h, x, 2);
      h = Half(float(double(float(h)) / double(n)));
      std::memcpy(x, &h, 2);
      return;
    }
    case DML_TENSOR_DATA_TYPE_FLOAT32: {
      if (n >= 1u << 24) throw std::invalid_argument("ref::Divide: float32 count");
      float f;
      std::memcpy(&f, x, 4);
      f = float(double(f) / double(n));
      std::memcpy(x, &f, 4);
      return;
    }
    case DML_TENSOR_DATA_TYPE_FLOAT64: {
      double d;
      std::memcpy(&d, x, 8);
      d /= double(n);  // n below 2^53: one correctly rounded division
      std::memcpy(x, &d, 8);
      return;
    }
    case DML_TENSOR_DATA_TYPE_INT8:
      return DivideIntAs<int8_t>(x, n);
    case DML_TENSOR_DATA_TYPE_INT16:
      return DivideIntAs<int16_t>(x, n);
    case DML_TENSOR_DATA_TYPE_INT32:
      return DivideIntAs<int32_t>(x, n);
    case DML_TENSOR_DATA_TYPE_INT64:
      return DivideIntAs<int64_t>(x, n);
    case DML_TENSOR_DATA_TYPE_UINT8:
      return DivideIntAs<uint8_t>(x, n);
    case DML_TENSOR_DATA_TYPE_UINT16:
      return DivideIntAs<uint16_t>(x, n);
    case DML_TENSOR_DATA_TYPE_UINT32:
      return DivideIntAs<uint32_t>(x, n);
    case DML_TENSOR_DATA_TYPE_UINT64:
      return DivideIntAs<uint64_t>(x, n);
    default:
      throw std::invalid_argument("ref::Divide: type");
  }
}

// A scatter's writes into out (holding the input), in order: excludeSelf's identities, each
// kept write combined with its target, then MEAN (summed as ADD) divides each target reached by
// its number of writes, plus 1 for the input value unless excludeSelf.
void ApplyWrites(DML_TENSOR_DATA_TYPE type, const std::vector<ScatterWrite>& writes,
                 const uint8_t* upd, VKDML_REDUCE_FUNCTION f, bool drop, bool excludeSelf,
                 uint8_t* out) {
  const bool mean = f == VKDML_REDUCE_FUNCTION_MEAN;
  if (mean) f = VKDML_REDUCE_FUNCTION_ADD;
  if (excludeSelf) SetIdentity(type, f, writes, drop, out);
  std::map<uint64_t, uint64_t> counts;
  for (const ScatterWrite& w : writes)
    if (w.inRange || !drop) {
      Reduce(type, f, out + w.outOffset, upd + w.updOffset);
      if (mean) ++counts[w.outOffset];
    }
  if (mean)
    for (const auto& [offset, count] : counts) Divide(type, out + offset, count + !excludeSelf);
}

}  // namespace

IndexError ScatterND(const Tensor& input, const uint8_t* in, const Tensor& indices,
                     const uint8_t* idx, const Tensor& updates, const uint8_t* upd,
                     const Tensor& output, uint8_t* out, uint32_t r, uint32_t q,
                     VKDML_REDUCE_FUNCTION f, bool drop, bool excludeSelf) {
  std::vector<ScatterWrite> writes = ScatterNDWrites(input, indices, idx, updates, output, r, q);
  ForEachCoord(output.sizes, [&](const Coord& c) { Copy(output, out, c, input, in, c); });
  ApplyWrites(output.type, writes, upd, f, drop, excludeSelf, out);
  const uint32_t D = input.Dims();
  return FirstError(indices, idx, [&](const Coord& c) { return input.sizes[D - r + c[D - 1]]; });
}

std::vector<ScatterWrite> ScatterElementsWrites(const Tensor& input, const Tensor& indices,
                                                const uint8_t* idx, const Tensor& updates,
                                                const Tensor& output, uint32_t axis) {
  const uint32_t D = input.Dims();
  bool ok = axis < D && indices.Dims() == D && updates.sizes == indices.sizes &&
            output.sizes == input.sizes;
  for (uint32_t d = 0; ok && d < D; ++d) ok = d == axis || indices.sizes[d] == input.sizes[d];
  if (!ok) throw std::invalid_argument("ref::ScatterElements: arguments");
  std::vector<ScatterWrite> writes;
  Coord dc;
  ForEachCoord(updates.sizes, [&](const Coord& c) {
    dc = c;
    const IndexValue v = ReadIndex(indices, idx, c);
    dc[axis] = ClampIndex(v, input.sizes[axis]);
    writes.push_back(
        {output.ByteOffset(dc), updates.ByteOffset(c), IndexInRange(v, input.sizes[axis])});
  });
  return writes;
}

IndexError ScatterElements(const Tensor& input, const uint8_t* in, const Tensor& indices,
                           const uint8_t* idx, const Tensor& updates, const uint8_t* upd,
                           const Tensor& output, uint8_t* out, uint32_t axis,
                           VKDML_REDUCE_FUNCTION f, bool drop, bool excludeSelf) {
  std::vector<ScatterWrite> writes =
      ScatterElementsWrites(input, indices, idx, updates, output, axis);
  ForEachCoord(output.sizes, [&](const Coord& c) { Copy(output, out, c, input, in, c); });
  ApplyWrites(output.type, writes, upd, f, drop, excludeSelf, out);
  return FirstError(indices, idx, [&](const Coord&) { return input.sizes[axis]; });
}

}  // namespace ref
