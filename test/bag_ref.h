// The embedding bag's reference (VKDML_OPERATOR_EMBEDDING_BAG, dml.h: entry order, each step
// rounded in float32), its cases' descriptors and the comparison of an output with it, shared by
// test_embedding_bag.cpp and the fuzz target (no Catch): written from dml.h's definition, not from
// vkdml's kernels.
#pragma once

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "op_spec.h"
#include "quantized_ref.h"

namespace vt {

struct BagCase {
  VKDML_QUANTIZED_FORMAT format = VKDML_QUANTIZED_FORMAT(0);      // 0: a table of values
  DML_TENSOR_DATA_TYPE valueType = DML_TENSOR_DATA_TYPE_FLOAT32;  // the table's (format 0)
  DML_TENSOR_DATA_TYPE outType = DML_TENSOR_DATA_TYPE_FLOAT32;
  DML_TENSOR_DATA_TYPE indexType = DML_TENSOR_DATA_TYPE_INT32;
  VKDML_EMBEDDING_BAG_MODE mode = VKDML_EMBEDDING_BAG_MODE_SUM;
  UINT rank = 2;
  UINT rows = 1, width = 1;  // width: values per row (format: 32 per block)
  UINT rowPad = 0;           // elements (bytes for format) past a table row
  UINT outPad = 0;           // elements past an output row (even for FLOAT16)
  UINT indexStride = 1, offsetStride = 1, weightStride = 1;
  bool includeLast = false, weighted = false, hasPadding = false;
  UINT padding = 0;
  VKDML_OUT_OF_RANGE_MODE outOfRange = VKDML_OUT_OF_RANGE_MODE_CLAMP;
  float fill = 0;
  bool denormals = false;  // values may be float32 denormals
  std::vector<int64_t> indices, offsets;

  UINT Entries() const { return UINT(indices.size()); }
  UINT Bags() const { return UINT(offsets.size()) - (includeLast ? 1 : 0); }
  UINT RowElements() const { return format ? width / 32 * BlockBytes(format) : width; }
  UINT RowStride() const { return RowElements() + rowPad; }
  UINT OutStride() const { return width + outPad; }
};

// Sizes {1, ..., 1, last...} of rank r.
inline std::vector<UINT> Lead(UINT r, std::vector<UINT> last) {
  std::vector<UINT> s(r - last.size(), 1);
  s.insert(s.end(), last.begin(), last.end());
  return s;
}

struct BagBuilt {
  TensorDesc table, indices, offsets, weights, output;
  VKDML_EMBEDDING_BAG_OPERATOR_DESC desc{};
  DML_OPERATOR_DESC bag{};
  VKDML_OUT_OF_RANGE_OPERATOR_DESC wrap{};
  DML_OPERATOR_DESC op{};
};

inline void Build(const BagCase& c, BagBuilt* b) {
  const UINT r = c.rank;
  const DML_TENSOR_DATA_TYPE tableType = c.format ? DML_TENSOR_DATA_TYPE_UINT8 : c.valueType;
  std::vector<UINT> none;
  b->table = TensorDesc(tableType, Lead(r, {c.rows, c.RowElements()}),
                        c.rowPad ? Lead(r, {c.RowStride(), 1}) : none);
  b->indices = TensorDesc(c.indexType, Lead(r, {c.Entries()}), Lead(r, {c.indexStride}));
  b->offsets =
      TensorDesc(c.indexType, Lead(r, {UINT(c.offsets.size())}), Lead(r, {c.offsetStride}));
  b->weights = TensorDesc(c.outType, Lead(r, {c.Entries()}), Lead(r, {c.weightStride}));
  b->output = TensorDesc(c.outType, Lead(r, {c.Bags(), c.width}),
                         c.outPad ? Lead(r, {c.OutStride(), 1}) : none);
  // Leading strides of size-1 dimensions: anything; Lead's 1s will do.
  b->desc = {b->table.Desc(),   b->indices.Desc(),
             b->offsets.Desc(), c.weighted ? b->weights.Desc() : nullptr,
             b->output.Desc(),  c.mode,
             c.format,          c.includeLast,
             c.hasPadding,      c.padding};
  b->bag = {VKDML_OPERATOR_EMBEDDING_BAG, &b->desc};
  b->op = b->bag;
  if (c.outOfRange != VKDML_OUT_OF_RANGE_MODE_CLAMP) {
    b->wrap.Operator = &b->bag;
    b->wrap.Mode = c.outOfRange;
    if (c.outOfRange == VKDML_OUT_OF_RANGE_MODE_FILL) {
      if (c.outType == DML_TENSOR_DATA_TYPE_FLOAT16)
        b->wrap.FillValue.UInt16 = NearestHalf(c.fill);
      else
        b->wrap.FillValue.Float32 = c.fill;
    }
    b->op = {VKDML_OPERATOR_OUT_OF_RANGE, &b->wrap};
  }
}

inline bool IsSigned(DML_TENSOR_DATA_TYPE t) {
  return t == DML_TENSOR_DATA_TYPE_INT32 || t == DML_TENSOR_DATA_TYPE_INT64;
}

// Products and sums rounded to float32 one at a time: through memory, so no fused multiply-add.
inline float Round(float f) {
  volatile float v = f;
  return v;
}

// Bound b of the bags (b <= bags): OffsetsTensor's entry b clamped into [0, entries], or (the
// last, without include_last_offset) the entry count.
inline UINT BagBound(const BagCase& c, UINT b) {
  const UINT n = c.Entries();
  if (b >= c.offsets.size()) return n;
  const int64_t o = c.offsets[b];
  if (IsSigned(c.indexType) && o < 0) return 0;
  return uint64_t(o) > n ? n : UINT(o);
}

// The bag's reference, value by value: dml.h's definition read literally.
inline std::vector<float> Reference(const BagCase& c, const std::vector<float>& table,
                                    const std::vector<float>& weights) {
  const UINT bags = c.Bags();
  std::vector<float> out(size_t(bags) * c.width, 0);
  for (UINT b = 0; b < bags; ++b)
    for (UINT v = 0; v < c.width; ++v) {
      float acc = 0;
      UINT count = 0;
      for (UINT e = BagBound(c, b); e < BagBound(c, b + 1); ++e) {
        int64_t i = c.indices[e];
        const bool isSigned = IsSigned(c.indexType);
        const bool inRange =
            isSigned ? i >= -int64_t(c.rows) && i < int64_t(c.rows) : uint64_t(i) < c.rows;
        float x;
        if (!inRange && c.outOfRange == VKDML_OUT_OF_RANGE_MODE_DROP) continue;
        if (!inRange && c.outOfRange == VKDML_OUT_OF_RANGE_MODE_FILL) {
          x = c.outType == DML_TENSOR_DATA_TYPE_FLOAT16 ? HalfValue(NearestHalf(c.fill)) : c.fill;
        } else {
          if (!inRange) i = isSigned && i < 0 ? -int64_t(c.rows) : int64_t(c.rows) - 1;
          const UINT row = UINT(i < 0 ? i + c.rows : i);
          if (c.hasPadding && row == c.padding) continue;
          x = table[size_t(row) * c.width + v];
        }
        if (c.weighted) x = Round(x * weights[e]);
        if (c.mode == VKDML_EMBEDDING_BAG_MODE_MAX)
          acc = count == 0 || std::isnan(x)   ? (count == 0 || !std::isnan(acc) ? x : acc)
                : std::isnan(acc) || acc >= x ? acc
                                              : x;
        else
          acc = Round(acc + x);
        ++count;
      }
      if (c.mode == VKDML_EMBEDDING_BAG_MODE_MEAN && count) acc = Round(acc / float(count));
      out[size_t(b) * c.width + v] = acc;
    }
  return out;
}

// The image of c's index-typed tensor t (IndicesTensor or OffsetsTensor) holding `values`,
// `stride` elements apart, the gaps 0xA5; values past t's bytes (a raw descriptor's) left out.
inline Bytes BagIndexBytes(const BagCase& c, const TensorDesc& t,
                           const std::vector<int64_t>& values, UINT stride) {
  Bytes bytes(t.Total(), 0xA5);
  const UINT es = ref::ElementSize(c.indexType);
  for (size_t i = 0; i < values.size() && (i * stride + 1) * es <= bytes.size(); ++i)
    ref::WriteIndex(c.indexType, bytes.data() + i * stride * es, values[i]);
  return bytes;
}

// The output against the reference, element by element: the same bits, or both NaNs (their
// bits are unspecified); the gaps between rows as they were (`before`). "" where it matches, else
// what differs first.
inline std::string DiffBag(const BagCase& c, const Bytes& out, const Bytes& before,
                           const std::vector<float>& expected) {
  const bool f16 = c.outType == DML_TENSOR_DATA_TYPE_FLOAT16;
  const UINT es = f16 ? 2 : 4;
  std::vector<bool> element(out.size(), false);
  for (UINT bag = 0; bag < c.Bags(); ++bag)
    for (UINT v = 0; v < c.width; ++v) {
      const UINT64 at = (UINT64(bag) * c.OutStride() + v) * es;
      for (UINT k = 0; k < es; ++k) element[at + k] = true;
      const float want = expected[size_t(bag) * c.width + v];
      uint32_t got = 0, wantBits;
      std::memcpy(&got, out.data() + at, es);
      bool same;
      if (f16) {
        wantBits = std::isnan(want) ? 0x7E00 : NearestHalf(want);
        same = got == wantBits || (std::isnan(want) && (got & 0x7C00) == 0x7C00 && (got & 0x3FF));
      } else {
        std::memcpy(&wantBits, &want, 4);
        float g;
        std::memcpy(&g, &got, 4);
        same = got == wantBits || (std::isnan(want) && std::isnan(g));
      }
      if (!same) {
        char text[160];
        std::snprintf(text, sizeof text, "bag %u, value %u: got bits 0x%x, expected 0x%x (%g)", bag,
                      v, got, wantBits, double(want));
        return text;
      }
    }
  for (UINT64 i = 0; i < out.size(); ++i)
    if (!element[i] && out[i] != before[i])
      return "byte " + std::to_string(i) + " between output rows changed";
  return "";
}

}  // namespace vt
