// The segment reductions' sequential reference (VKDML_OPERATOR_SEGMENT_REDUCE, dml.h's definition
// read literally: row order, each step in the element's type, FLOAT16 in float), and a case's
// descriptors and images: shared by test/test_segment.cpp and the fuzz target
// (test/fuzz/fuzz_segment.cpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "bag_ref.h"  // IsSigned
#include "op_spec.h"
#include "quantized_ref.h"
#include "reference.h"

namespace vt {

struct SegCase {
  DML_TENSOR_DATA_TYPE type = DML_TENSOR_DATA_TYPE_FLOAT32;
  DML_TENSOR_DATA_TYPE indexType = DML_TENSOR_DATA_TYPE_INT64;
  DML_TENSOR_DATA_TYPE argType = DML_TENSOR_DATA_TYPE_INT64;
  VKDML_SEGMENT_REDUCE_FUNCTION f = VKDML_SEGMENT_REDUCE_FUNCTION_SUM;
  VKDML_SEGMENT_EMPTY empty = VKDML_SEGMENT_EMPTY_SCATTER;
  uint64_t initial = 0;  // InitialValue's bits
  bool sorted = false;
  UINT axis = 0, segments = 0;
  std::vector<UINT> sizes;                              // InputTensor's
  std::vector<UINT> inStrides, idxStrides, outStrides;  // empty: packed
  std::vector<int64_t> indices;                         // IndicesTensor, row-major
  std::vector<uint64_t> values;                         // InputTensor's bits, row-major

  bool Arg() const { return f >= VKDML_SEGMENT_REDUCE_FUNCTION_ARGMIN; }
  DML_TENSOR_DATA_TYPE OutType() const { return Arg() ? argType : type; }
  std::vector<UINT> IdxSizes() const {
    std::vector<UINT> s(sizes.size(), 1);
    for (UINT d = 0; d < axis; ++d) s[d] = sizes[d];
    s[axis] = sorted ? sizes[axis] : segments + 1;
    return s;
  }
  std::vector<UINT> OutSizes() const {
    std::vector<UINT> s = sizes;
    s[axis] = segments;
    return s;
  }
};

// Row-major strides of sizes, each dimension's stride times pad[d] (pad empty: packed).
inline std::vector<UINT> Strides(const std::vector<UINT>& sizes, const std::vector<UINT>& pad) {
  if (pad.empty()) return {};
  std::vector<UINT> s(sizes.size());
  UINT64 n = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    s[d] = UINT(n * pad[d]);
    n = n * pad[d] * sizes[d];
  }
  return s;
}

// Element offset of row-major element i of sizes under strides (empty: packed).
inline UINT64 OffsetOf(const std::vector<UINT>& sizes, const std::vector<UINT>& strides, UINT64 i) {
  if (strides.empty()) return i;
  UINT64 at = 0;
  for (size_t d = sizes.size(); d-- > 0;) {
    at += (i % sizes[d]) * strides[d];
    i /= sizes[d];
  }
  return at;
}

inline UINT64 Count(const std::vector<UINT>& sizes) {
  UINT64 n = 1;
  for (UINT s : sizes) n *= s;
  return n;
}

inline bool IsFloat(DML_TENSOR_DATA_TYPE t) {
  return t == DML_TENSOR_DATA_TYPE_FLOAT16 || t == DML_TENSOR_DATA_TYPE_FLOAT32 ||
         t == DML_TENSOR_DATA_TYPE_FLOAT64;
}

inline bool IsSignedType(DML_TENSOR_DATA_TYPE t) {
  return t == DML_TENSOR_DATA_TYPE_INT8 || t == DML_TENSOR_DATA_TYPE_INT16 ||
         t == DML_TENSOR_DATA_TYPE_INT32 || t == DML_TENSOR_DATA_TYPE_INT64;
}

// ---- the sequential reference, one type at a time: T the storage, A the fold's type ----

template <typename T>
T FromBits(uint64_t b) {
  T v;
  std::memcpy(&v, &b, sizeof(T));
  return v;
}
template <typename T>
uint64_t ToBits(T v) {
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}

template <typename T>
struct Traits {  // integers and float32, float64: folded in their own type
  using A = T;
  static A Load(uint64_t b) { return FromBits<T>(b); }
  static uint64_t Store(A a) { return ToBits<T>(a); }
};
template <>
struct Traits<uint16_t> {  // standing for FLOAT16: folded in float
  using A = float;
  static A Load(uint64_t b) { return HalfValue(uint16_t(b)); }
  static uint64_t Store(A a) { return std::isnan(a) ? 0x7E00 : NearestHalf(a); }
};

template <typename A>
A Add(A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    using U = std::make_unsigned_t<A>;
    return A(U(U(a) + U(b)));
  } else {
    volatile A r = a + b;  // one rounding, as the device's
    return r;
  }
}
template <typename A>
A Mul(A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    using U = std::make_unsigned_t<A>;
    using W = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
    return A(U(W(U(a)) * W(U(b))));
  } else {
    volatile A r = a * b;
    return r;
  }
}
// NumPy's maximum (max) or minimum, the accumulated one kept on ties: whether b replaces a.
template <typename A>
bool Replaces(A a, A b, bool max) {
  if constexpr (std::is_floating_point_v<A>) {
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
  }
  return max ? b > a : b < a;
}
template <typename A>
A Mean(A sum, UINT64 n) {
  if constexpr (std::is_floating_point_v<A>) {
    volatile A r = sum / A(n);  // n exact: below 2^24
    return r;
  } else if constexpr (std::is_signed_v<A>) {
    const int64_t s = int64_t(sum), q = s / int64_t(n);
    return A(q * int64_t(n) != s && s < 0 ? q - 1 : q);  // toward negative infinity
  } else {
    return A(uint64_t(sum) / n);
  }
}

// The bits of the torch policy's empty value, and of InitialValue, as A.
template <typename T>
typename Traits<T>::A EmptyTorch(VKDML_SEGMENT_REDUCE_FUNCTION f) {
  using A = typename Traits<T>::A;
  constexpr bool fl = std::is_floating_point_v<A>;
  switch (f) {
    case VKDML_SEGMENT_REDUCE_FUNCTION_MEAN:
      if constexpr (fl) return std::numeric_limits<A>::quiet_NaN();
      return A(0);
    case VKDML_SEGMENT_REDUCE_FUNCTION_MAX:
      if constexpr (fl) return -std::numeric_limits<A>::infinity();
      return std::numeric_limits<A>::lowest();
    case VKDML_SEGMENT_REDUCE_FUNCTION_MIN:
      if constexpr (fl) return std::numeric_limits<A>::infinity();
      return std::numeric_limits<A>::max();
    case VKDML_SEGMENT_REDUCE_FUNCTION_PROD:
      return A(1);
    default:
      return A(0);
  }
}

// The segment [start, end) of rows of each output element: IndicesTensor read as dml.h says.
inline void SegmentRows(const SegCase& c, UINT64 batch, UINT s, UINT* start, UINT* end) {
  const UINT rows = c.sizes[c.axis];
  if (c.sorted) {
    const int64_t* ids = &c.indices[batch * rows];
    UINT r = 0;
    while (r < rows && ids[r] < int64_t(s)) ++r;  // sorted: a linear scan finds the same
    *start = r;
    while (r < rows && ids[r] == int64_t(s)) ++r;
    *end = r;
    return;
  }
  auto clampOffset = [&](int64_t o) {
    if (IsSignedType(c.indexType) && o < 0) return UINT(0);
    return UINT(std::min<uint64_t>(uint64_t(o), rows));
  };
  const int64_t* o = &c.indices[batch * (c.segments + 1)];
  *start = clampOffset(o[s]);
  *end = std::max(clampOffset(o[s + 1]), *start);
}

// The reference's output bits, one per OutputTensor element (row-major).
template <typename T>
std::vector<uint64_t> ReferenceOf(const SegCase& c) {
  using Tr = Traits<T>;
  using A = typename Tr::A;
  const std::vector<UINT> out = c.OutSizes();
  UINT64 batches = 1, inner = 1;
  for (UINT d = 0; d < c.axis; ++d) batches *= c.sizes[d];
  for (UINT d = c.axis + 1; d < c.sizes.size(); ++d) inner *= c.sizes[d];
  const UINT rows = c.sizes[c.axis];
  const bool pick = c.f == VKDML_SEGMENT_REDUCE_FUNCTION_MIN ||
                    c.f == VKDML_SEGMENT_REDUCE_FUNCTION_MAX || c.Arg();
  const bool max =
      c.f == VKDML_SEGMENT_REDUCE_FUNCTION_MAX || c.f == VKDML_SEGMENT_REDUCE_FUNCTION_ARGMAX;
  const bool prod = c.f == VKDML_SEGMENT_REDUCE_FUNCTION_PROD;
  const bool initial = c.empty == VKDML_SEGMENT_EMPTY_INITIAL;
  std::vector<uint64_t> result(Count(out));
  for (UINT64 b = 0; b < batches; ++b)
    for (UINT s = 0; s < c.segments; ++s) {
      UINT start, end;
      SegmentRows(c, b, s, &start, &end);
      for (UINT64 i = 0; i < inner; ++i) {
        A acc = initial ? Tr::Load(c.initial) : prod ? A(1) : A(0);
        UINT64 where = rows;
        for (UINT r = start; r < end; ++r) {
          const A v = Tr::Load(c.values[(b * rows + r) * inner + i]);
          if (pick) {
            if ((r == start && !initial) || Replaces(acc, v, max)) {
              acc = v;
              where = r;
            }
          } else {
            acc = prod ? Mul(acc, v) : Add(acc, v);
          }
        }
        uint64_t bits;
        if (c.Arg()) {
          bits = where;
        } else if (end == start && !initial) {
          bits = Tr::Store(c.empty == VKDML_SEGMENT_EMPTY_TORCH ? EmptyTorch<T>(c.f)
                           : prod                               ? A(1)
                                                                : A(0));
        } else {
          if (c.f == VKDML_SEGMENT_REDUCE_FUNCTION_MEAN && end > start) {
            if constexpr (std::is_integral_v<A>)
              acc = Mean(acc, end - start);
            else
              acc = Mean(acc, end - start);
          }
          bits = Tr::Store(acc);
        }
        result[(b * c.segments + s) * inner + i] = bits;
      }
    }
  return result;
}

inline std::vector<uint64_t> Reference(const SegCase& c) {
  switch (c.type) {
    case DML_TENSOR_DATA_TYPE_FLOAT32:
      return ReferenceOf<float>(c);
    case DML_TENSOR_DATA_TYPE_FLOAT16:
      return ReferenceOf<uint16_t>(c);
    case DML_TENSOR_DATA_TYPE_FLOAT64:
      return ReferenceOf<double>(c);
    case DML_TENSOR_DATA_TYPE_INT8:
      return ReferenceOf<int8_t>(c);
    case DML_TENSOR_DATA_TYPE_UINT8:
      return ReferenceOf<uint8_t>(c);
    case DML_TENSOR_DATA_TYPE_INT16:
      return ReferenceOf<int16_t>(c);
    case DML_TENSOR_DATA_TYPE_INT32:
      return ReferenceOf<int32_t>(c);
    case DML_TENSOR_DATA_TYPE_UINT32:
      return ReferenceOf<uint32_t>(c);
    case DML_TENSOR_DATA_TYPE_INT64:
      return ReferenceOf<int64_t>(c);
    case DML_TENSOR_DATA_TYPE_UINT64:
      return ReferenceOf<uint64_t>(c);
    default:  // UINT16 (char16_t: uint16_t's Traits stand for FLOAT16)
      return ReferenceOf<char16_t>(c);
  }
}

// ---- the device side ----

struct SegBuilt {
  TensorDesc input, indices, output;
  VKDML_SEGMENT_REDUCE_OPERATOR_DESC desc{};
  DML_OPERATOR_DESC op{};
};

inline void Build(const SegCase& c, SegBuilt* b) {
  b->input = TensorDesc(c.type, c.sizes, c.inStrides);
  b->indices = TensorDesc(c.indexType, c.IdxSizes(), c.idxStrides);
  b->output = TensorDesc(c.OutType(), c.OutSizes(), c.outStrides);
  b->desc.InputTensor = b->input.Desc();
  b->desc.IndicesTensor = b->indices.Desc();
  b->desc.OutputTensor = b->output.Desc();
  b->desc.Axis = c.axis;
  b->desc.ReduceFunction = c.f;
  b->desc.SortedIndices = c.sorted;
  b->desc.EmptyValue = c.empty;
  std::memcpy(b->desc.InitialValue.Bytes, &c.initial, 8);
  b->op = {VKDML_OPERATOR_SEGMENT_REDUCE, &b->desc};
}

// InputTensor's and IndicesTensor's images for c (the bytes between elements: filler).
inline Bytes SegmentInput(const SegCase& c, const SegBuilt& b) {
  const UINT es = ref::ElementSize(c.type);
  Bytes in(b.input.Total(), 0x3C);
  for (UINT64 i = 0; i < c.values.size(); ++i)
    std::memcpy(&in[OffsetOf(c.sizes, c.inStrides, i) * es], &c.values[i], es);
  return in;
}
inline Bytes SegmentIndices(const SegCase& c, const SegBuilt& b) {
  const UINT is = ref::ElementSize(c.indexType);
  Bytes idx(b.indices.Total(), 0x77);
  const std::vector<UINT> idxSizes = c.IdxSizes();
  for (UINT64 i = 0; i < c.indices.size(); ++i)
    ref::WriteIndex(c.indexType, &idx[OffsetOf(idxSizes, c.idxStrides, i) * is], c.indices[i]);
  return idx;
}

// Empty when OutputTensor's image `out` holds the reference's elements (a NaN any NaN) and the
// bytes between them are as `before` had them; else the first differences.
inline std::string DiffSegment(const SegCase& c, const Bytes& out, const Bytes& before) {
  const UINT os = ref::ElementSize(c.OutType());
  const std::vector<uint64_t> want = Reference(c);
  const std::vector<UINT> outSizes = c.OutSizes();
  std::vector<bool> mine(out.size(), false);
  std::string diff;
  int bad = 0;
  auto isNan = [&](uint64_t bits) {
    return c.type == DML_TENSOR_DATA_TYPE_FLOAT16   ? std::isnan(HalfValue(uint16_t(bits)))
           : c.type == DML_TENSOR_DATA_TYPE_FLOAT32 ? std::isnan(FromBits<float>(bits))
                                                    : std::isnan(FromBits<double>(bits));
  };
  for (UINT64 i = 0; i < want.size(); ++i) {
    const UINT64 at = OffsetOf(outSizes, c.outStrides, i) * os;
    uint64_t got = 0;
    std::memcpy(&got, &out[at], os);
    for (UINT k = 0; k < os; ++k) mine[at + k] = true;
    bool same = got == want[i];
    if (!same && !c.Arg() && IsFloat(c.type)) same = isNan(got) && isNan(want[i]);
    if (!same && bad++ < 5) {
      char text[128];
      std::snprintf(text, sizeof text, "output element %llu is 0x%llx, expected 0x%llx; ",
                    (unsigned long long)i, (unsigned long long)got, (unsigned long long)want[i]);
      diff += text;
    }
  }
  for (UINT64 k = 0; k < out.size(); ++k)
    if (!mine[k] && out[k] != before[k]) {
      diff += "byte " + std::to_string(k) + " between OutputTensor's elements changed";
      break;
    }
  return diff;
}

}  // namespace vt
