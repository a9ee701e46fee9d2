// MoE permute and unpermute (VKDML_OPERATOR_MOE_PERMUTE, _UNPERMUTE): a case's descriptors and
// the CPU reference, written from dml.h's definition in NumPy's order (a stable argsort of the
// keys, dropped ids keyed past every expert; each weighted sum in j order, one float32 rounding
// a step), not from vkdml's kernels. Shared by test_moe.cpp and the fuzz target (no Catch).
#pragma once

#include <algorithm>
#include <cstring>
#include <numeric>

#include "quantized_ref.h"  // HalfValue, NearestHalf

namespace vt {

// Sizes {1, ..., 1, last...} of rank r.
inline std::vector<UINT> MoeLead(UINT r, std::vector<UINT> last) {
  std::vector<UINT> s(r - last.size(), 1);
  s.insert(s.end(), last.begin(), last.end());
  return s;
}

inline int64_t ReadInt(DML_TENSOR_DATA_TYPE type, const uint8_t* p) {
  switch (type) {
    case DML_TENSOR_DATA_TYPE_INT32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DML_TENSOR_DATA_TYPE_UINT32: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    default: {  // INT64; UINT64 past 2^63 reads negative: out of range either way
      int64_t v;
      std::memcpy(&v, p, 8);
      return v;
    }
  }
}
inline void WriteInt(DML_TENSOR_DATA_TYPE type, uint8_t* p, int64_t v) {
  if (type == DML_TENSOR_DATA_TYPE_INT32 || type == DML_TENSOR_DATA_TYPE_UINT32) {
    const uint32_t w = uint32_t(v);
    std::memcpy(p, &w, 4);
  } else {
    std::memcpy(p, &v, 8);
  }
}
inline UINT IntSize(DML_TENSOR_DATA_TYPE type) {
  return type == DML_TENSOR_DATA_TYPE_INT32 || type == DML_TENSOR_DATA_TYPE_UINT32 ? 4 : 8;
}
inline UINT ValueSize(DML_TENSOR_DATA_TYPE type) {
  return type == DML_TENSOR_DATA_TYPE_FLOAT16 ? 2 : 4;
}
inline float ReadValue(DML_TENSOR_DATA_TYPE type, const uint8_t* p) {
  if (type == DML_TENSOR_DATA_TYPE_FLOAT16) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return HalfValue(h);
  }
  float f;
  std::memcpy(&f, p, 4);
  return f;
}
inline void WriteValue(DML_TENSOR_DATA_TYPE type, uint8_t* p, float f) {
  if (type == DML_TENSOR_DATA_TYPE_FLOAT16) {
    const uint16_t h = NearestHalf(f);
    std::memcpy(p, &h, 2);
  } else {
    std::memcpy(p, &f, 4);
  }
}

struct MoePermuteCase {
  UINT tokens = 1, k = 1, experts = 1, width = 2, rank = 2;
  DML_TENSOR_DATA_TYPE idType = DML_TENSOR_DATA_TYPE_INT32;
  DML_TENSOR_DATA_TYPE valueType = DML_TENSOR_DATA_TYPE_FLOAT32;
  DML_TENSOR_DATA_TYPE offsetType = DML_TENSOR_DATA_TYPE_INT32;
  DML_TENSOR_DATA_TYPE permType = DML_TENSOR_DATA_TYPE_INT32;
  DML_TENSOR_DATA_TYPE invType = DML_TENSOR_DATA_TYPE_INT32;
  // Strides in elements: the ids' {token, j}, the rows' (InputTensor, OutputTensor), the
  // offsets', the permutation's and the inverse's {token, j}.
  UINT idStride[2] = {1, 1}, xStride = 2, outStride = 2, offsetStride = 1, permStride = 1;
  UINT invStride[2] = {1, 1};
  UINT Entries() const { return tokens * k; }
};

struct MoePermuteBuilt {
  TensorDesc x, ids, rows, offsets, perm, inv;
  VKDML_MOE_PERMUTE_OPERATOR_DESC desc{};
  DML_OPERATOR_DESC op{};
};

inline void Build(const MoePermuteCase& c, MoePermuteBuilt* b) {
  const UINT r = c.rank, n = c.Entries();
  b->x = TensorDesc(c.valueType, MoeLead(r, {c.tokens, c.width}), MoeLead(r, {c.xStride, 1}));
  b->ids =
      TensorDesc(c.idType, MoeLead(r, {c.tokens, c.k}), MoeLead(r, {c.idStride[0], c.idStride[1]}));
  b->rows = TensorDesc(c.valueType, MoeLead(r, {n, c.width}), MoeLead(r, {c.outStride, 1}));
  b->offsets = TensorDesc(c.offsetType, MoeLead(r, {c.experts + 1}), MoeLead(r, {c.offsetStride}));
  b->perm = TensorDesc(c.permType, MoeLead(r, {n}), MoeLead(r, {c.permStride}));
  b->inv = TensorDesc(c.invType, MoeLead(r, {c.tokens, c.k}),
                      MoeLead(r, {c.invStride[0], c.invStride[1]}));
  b->desc = {b->x.Desc(),    b->ids.Desc(), b->rows.Desc(), b->offsets.Desc(),
             b->perm.Desc(), b->inv.Desc(), c.experts};
  b->op = {VKDML_OPERATOR_MOE_PERMUTE, &b->desc};
}

// The expected output images: each output's bytes (`poison` where nothing is written), from the
// inputs' images.
inline void PermuteReference(const MoePermuteCase& c, const Bytes& x, const Bytes& ids,
                             const std::vector<Bytes>& poison, std::vector<Bytes>* out) {
  const UINT n = c.Entries(), E = c.experts;
  std::vector<int64_t> key(n);
  for (UINT t = 0; t < c.tokens; ++t)
    for (UINT j = 0; j < c.k; ++j) {
      const UINT64 at = (UINT64(t) * c.idStride[0] + UINT64(j) * c.idStride[1]) * IntSize(c.idType);
      int64_t id = ReadInt(c.idType, ids.data() + at);
      if (c.idType == DML_TENSOR_DATA_TYPE_UINT64 && id < 0) id = -1;  // past 2^63: dropped
      key[t * c.k + j] = id >= 0 && id < int64_t(E) ? id : int64_t(E);
    }
  std::vector<UINT> order(n);  // numpy.argsort(key, kind="stable")
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](UINT a, UINT b) { return key[a] < key[b]; });
  *out = poison;
  Bytes &rows = (*out)[0], &offsets = (*out)[1], &perm = (*out)[2], &inv = (*out)[3];
  const UINT vs = ValueSize(c.valueType);
  for (UINT e = 0; e <= E; ++e) {
    const int64_t below = std::count_if(key.begin(), key.end(), [&](int64_t k) { return k < e; });
    WriteInt(c.offsetType, offsets.data() + UINT64(e) * c.offsetStride * IntSize(c.offsetType),
             below);
  }
  for (UINT p = 0; p < n; ++p) {
    const UINT i = order[p];
    const bool kept = key[i] < int64_t(E);
    uint8_t* row = rows.data() + UINT64(p) * c.outStride * vs;
    if (kept)
      std::memcpy(row, x.data() + UINT64(i / c.k) * c.xStride * vs, size_t(c.width) * vs);
    else
      std::memset(row, 0, size_t(c.width) * vs);
    WriteInt(c.permType, perm.data() + UINT64(p) * c.permStride * IntSize(c.permType),
             kept ? int64_t(i) : -1);
    const UINT64 invAt =
        (UINT64(i / c.k) * c.invStride[0] + UINT64(i % c.k) * c.invStride[1]) * IntSize(c.invType);
    WriteInt(c.invType, inv.data() + invAt, kept ? int64_t(p) : -1);
  }
}

struct MoeUnpermuteCase {
  UINT tokens = 1, k = 1, rows = 1, width = 2, rank = 2;
  DML_TENSOR_DATA_TYPE valueType = DML_TENSOR_DATA_TYPE_FLOAT32;  // InputTensor
  DML_TENSOR_DATA_TYPE invType = DML_TENSOR_DATA_TYPE_INT32;
  DML_TENSOR_DATA_TYPE weightType = DML_TENSOR_DATA_TYPE_FLOAT32;
  DML_TENSOR_DATA_TYPE outType = DML_TENSOR_DATA_TYPE_FLOAT32;
  UINT yStride = 2, outStride = 2, invStride[2] = {1, 1}, weightStride[2] = {1, 1};
};

struct MoeUnpermuteBuilt {
  TensorDesc y, inv, weights, out;
  VKDML_MOE_UNPERMUTE_OPERATOR_DESC desc{};
  DML_OPERATOR_DESC op{};
};

inline void Build(const MoeUnpermuteCase& c, MoeUnpermuteBuilt* b) {
  const UINT r = c.rank;
  b->y = TensorDesc(c.valueType, MoeLead(r, {c.rows, c.width}), MoeLead(r, {c.yStride, 1}));
  b->inv = TensorDesc(c.invType, MoeLead(r, {c.tokens, c.k}),
                      MoeLead(r, {c.invStride[0], c.invStride[1]}));
  b->weights = TensorDesc(c.weightType, MoeLead(r, {c.tokens, c.k}),
                          MoeLead(r, {c.weightStride[0], c.weightStride[1]}));
  b->out = TensorDesc(c.outType, MoeLead(r, {c.tokens, c.width}), MoeLead(r, {c.outStride, 1}));
  b->desc = {b->y.Desc(), b->inv.Desc(), b->weights.Desc(), b->out.Desc()};
  b->op = {VKDML_OPERATOR_MOE_UNPERMUTE, &b->desc};
}

// out[t, v] = sum over j in order of float32(w[t, j] * y[inv[t, j], v]), from +0, each step
// rounded to float32; rows outside [0, rows) skipped; then rounded to the output's type.
inline Bytes UnpermuteReference(const MoeUnpermuteCase& c, const Bytes& y, const Bytes& inv,
                                const Bytes& weights, const Bytes& poison) {
  Bytes out = poison;
  const UINT vs = ValueSize(c.valueType), ws = ValueSize(c.weightType), os = ValueSize(c.outType);
  for (UINT t = 0; t < c.tokens; ++t)
    for (UINT v = 0; v < c.width; ++v) {
      volatile float acc = 0.0f;
      for (UINT j = 0; j < c.k; ++j) {
        const UINT64 at = UINT64(t) * c.invStride[0] + UINT64(j) * c.invStride[1];
        int64_t row = ReadInt(c.invType, inv.data() + at * IntSize(c.invType));
        if (c.invType == DML_TENSOR_DATA_TYPE_UINT32) row = int64_t(uint32_t(row));
        if (row < 0 || row >= int64_t(c.rows)) continue;
        const UINT64 wAt = UINT64(t) * c.weightStride[0] + UINT64(j) * c.weightStride[1];
        const float w = ReadValue(c.weightType, weights.data() + wAt * ws);
        const float value = ReadValue(c.valueType, y.data() + (UINT64(row) * c.yStride + v) * vs);
        volatile float product = w * value;
        acc = acc + product;
      }
      WriteValue(c.outType, out.data() + (UINT64(t) * c.outStride + v) * os, acc);
    }
  return out;
}

}  // namespace vt
