// The block-quantized gather's reference (VKDML_OPERATOR_GATHER_BLOCK_QUANTIZED, ONNX Runtime's
// GatherBlockQuantized: (value - zero point) * scale in float32, once rounded), its cases'
// descriptors and images (random from any source with U, Ui and P: test_util.h's Rng, or the
// fuzz target's input), shared by test_block_quantized.cpp and the fuzz target (no Catch):
// written in ONNX's terms, not from vkdml's kernels.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "op_spec.h"
#include "quantized_ref.h"

namespace vt {

using Shape = std::vector<UINT>;

struct BlockCase {
  VKDML_BLOCK_QUANTIZED_TYPE type = VKDML_BLOCK_QUANTIZED_TYPE_UINT4;
  DML_TENSOR_DATA_TYPE outType = DML_TENSOR_DATA_TYPE_FLOAT32;
  DML_TENSOR_DATA_TYPE indexType = DML_TENSOR_DATA_TYPE_INT32;
  Shape values;   // ONNX's data shape, in values (4-bit, unless wholeData: an even last size)
  Shape indices;  // ONNX's indices shape
  UINT axis = 0, quantizeAxis = 0, blockSize = 16;
  bool zeroPoints = false;
  bool wholeData = false;  // INT4, UINT4: data described by ValueSizes, packed whole
  bool stridedIndices = false, stridedScales = false, stridedOutput = false;
  bool denormals = false;  // scales may be float32 denormals
  VKDML_OUT_OF_RANGE_MODE outOfRange = VKDML_OUT_OF_RANGE_MODE_CLAMP;
  float fill = 0;
  std::vector<int64_t> indexValues;  // row-major over `indices`

  bool FourBit() const { return type != VKDML_BLOCK_QUANTIZED_TYPE_UINT8; }
  // Zero points packed whole (ONNX's int4 and uint4 tensors), not a row at a time.
  bool WholeZeros() const { return FourBit() && type != VKDML_BLOCK_QUANTIZED_TYPE_UINT8_BITS4; }
  UINT Rank() const { return UINT(values.size()); }
  UINT D() const { return std::max<UINT>(Rank(), Rank() - 1 + UINT(indices.size())); }
  Shape Scales() const {
    Shape s = values;
    s[quantizeAxis] = (s[quantizeAxis] + blockSize - 1) / blockSize;
    return s;
  }
  Shape Output() const {
    Shape o(values.begin(), values.begin() + axis);
    o.insert(o.end(), indices.begin(), indices.end());
    o.insert(o.end(), values.begin() + axis + 1, values.end());
    return o;
  }
};

// {1, ..., 1} + s, of rank d (coordinates: {0, ..., 0} + s).
inline Shape Pad(const Shape& s, UINT d, UINT lead = 1) {
  Shape p(d - s.size(), lead);
  p.insert(p.end(), s.begin(), s.end());
  return p;
}

inline UINT64 Count(const Shape& s) {
  UINT64 n = 1;
  for (UINT v : s) n *= v;
  return n;
}

// Row-major strides, each dimension padded by a few elements when `padded`.
template <typename Random>
Shape Strides(Random& rng, const Shape& s, bool padded) {
  if (!padded) return {};
  Shape st(s.size());
  UINT64 at = 1;
  for (size_t d = s.size(); d-- > 0;) {
    st[d] = UINT(at);
    at = at * s[d] + rng.Ui(0, 2);
  }
  return st;
}

// The row-major number of `c` in `s`, or its offset over `strides` (row-major when empty).
inline UINT64 At(const Shape& s, const Shape& strides, const Shape& c) {
  UINT64 off = 0, packed = 1;
  for (size_t d = s.size(); d-- > 0;) {
    off += UINT64(c[d]) * (strides.empty() ? packed : strides[d]);
    packed *= s[d];
  }
  return off;
}

// Advances c through s in row-major order; false after the last.
inline bool Next(const Shape& s, Shape& c) {
  for (size_t d = s.size(); d-- > 0;) {
    if (++c[d] < s[d]) return true;
    c[d] = 0;
  }
  return false;
}

struct BlockBuilt {
  TensorDesc input, indices, scales, zeroPoints, output;
  VKDML_GATHER_BLOCK_QUANTIZED_OPERATOR_DESC desc{};
  DML_OPERATOR_DESC gather{};
  VKDML_OUT_OF_RANGE_OPERATOR_DESC wrap{};
  DML_OPERATOR_DESC op{};
  // The images in ONNX's layouts (the data's bytes, the zero points' bytes a row of the last
  // dimension each) and as bound.
  Bytes data, zeros, indexImage, scaleImage;
  Shape indexStrides, scaleStrides, outStrides;
  Shape valueSizes;  // desc.ValueSizes (wholeData)
};

inline Shape Bytes4(Shape s, bool fourBit) {  // a 4-bit tensor's last size in bytes
  if (fourBit) s.back() = (s.back() + 1) / 2;
  return s;
}

// A float32 scale: random magnitudes around 1, or (denormals) down to float32's least.
template <typename Random>
float RandomScale(Random& rng, bool denormals) {
  const float m = float(rng.U(1, 1 << 20)) / float(1 << 20) * (rng.P(0.5) ? 1 : -1);
  if (rng.P(0.05)) return 0.0f;
  return std::ldexp(m, denormals && rng.P(0.5) ? -int(rng.U(120, 149)) : -int(rng.U(0, 12)));
}

template <typename Random>
void Build(Random& rng, const BlockCase& c, BlockBuilt* b) {
  const UINT D = c.D();
  const bool four = c.FourBit();
  const Shape scales = c.Scales();
  // Packed whole (INT4 and UINT4), with an odd last size (or at times an even one): all in one
  // row of bytes.
  auto wholeBytes = [&rng](const Shape& s) {
    if (s.back() % 2 == 0 && !rng.P(0.3)) return Bytes4(s, true);
    Shape flat(s.size(), 1);
    flat.back() = UINT((Count(s) + 1) / 2);
    return flat;
  };
  const Shape data = c.wholeData ? wholeBytes(c.values) : Bytes4(c.values, four);
  const Shape zeros = c.WholeZeros() ? wholeBytes(scales) : Bytes4(scales, four);
  b->valueSizes = Pad(c.values, D);
  b->indexStrides = Strides(rng, Pad(c.indices, D), c.stridedIndices);
  b->scaleStrides = Strides(rng, Pad(scales, D), c.stridedScales);
  b->outStrides = Strides(rng, Pad(c.Output(), D), c.stridedOutput);
  b->input = TensorDesc(DML_TENSOR_DATA_TYPE_UINT8, Pad(data, D));
  b->indices = TensorDesc(c.indexType, Pad(c.indices, D), b->indexStrides);
  b->scales = TensorDesc(c.outType, Pad(scales, D), b->scaleStrides);
  b->zeroPoints = TensorDesc(DML_TENSOR_DATA_TYPE_UINT8, Pad(zeros, D));
  b->output = TensorDesc(c.outType, Pad(c.Output(), D), b->outStrides);
  const UINT lead = D - c.Rank();
  b->desc = {b->input.Desc(),
             b->indices.Desc(),
             b->scales.Desc(),
             c.zeroPoints ? b->zeroPoints.Desc() : nullptr,
             b->output.Desc(),
             c.type,
             c.axis + lead,
             UINT(c.indices.size()),
             c.quantizeAxis + lead,
             c.blockSize,
             c.wholeData ? b->valueSizes.data() : nullptr};
  b->gather = {VKDML_OPERATOR_GATHER_BLOCK_QUANTIZED, &b->desc};
  b->op = b->gather;
  if (c.outOfRange != VKDML_OUT_OF_RANGE_MODE_CLAMP) {
    b->wrap.Operator = &b->gather;
    b->wrap.Mode = c.outOfRange;
    if (c.outType == DML_TENSOR_DATA_TYPE_FLOAT32)
      b->wrap.FillValue.Float32 = c.fill;
    else
      b->wrap.FillValue.UInt16 = NearestHalf(c.fill);
    b->op = {VKDML_OPERATOR_OUT_OF_RANGE, &b->wrap};
  }

  b->data = Bytes(b->input.Total());
  for (auto& x : b->data) x = uint8_t(rng.U(0, 255));
  b->zeros = Bytes(b->zeroPoints.Total());
  for (auto& x : b->zeros) x = uint8_t(rng.U(0, 255));
  b->indexImage = Bytes(b->indices.Total(), 0);
  Shape at(c.indices.size(), 0);
  const UINT es = ref::ElementSize(c.indexType);
  for (size_t n = 0; n < c.indexValues.size(); ++n, Next(c.indices, at))
    ref::WriteIndex(
        c.indexType,
        b->indexImage.data() + At(Pad(c.indices, D), b->indexStrides, Pad(at, D, 0)) * es,
        c.indexValues[n]);
  b->scaleImage = Bytes(b->scales.Total(), 0xA5);  // the gaps: never read
  Shape s(scales.size(), 0);
  do {
    const float f = RandomScale(rng, c.denormals);
    const UINT64 off = At(Pad(scales, D), b->scaleStrides, Pad(s, D, 0));
    if (c.outType == DML_TENSOR_DATA_TYPE_FLOAT32) {
      std::memcpy(&b->scaleImage[off * 4], &f, 4);
    } else {
      const uint16_t h = NearestHalf(f);
      std::memcpy(&b->scaleImage[off * 2], &h, 2);
    }
  } while (Next(scales, s));
}

// Value n (row-major) of a tensor of 4-bit values whose rows of `last` values start on bytes,
// or of bytes; sign-extended for INT4.
inline int ValueAt(const Bytes& bytes, UINT64 n, UINT last, VKDML_BLOCK_QUANTIZED_TYPE type) {
  if (type == VKDML_BLOCK_QUANTIZED_TYPE_UINT8) return bytes[n];
  const UINT64 row = n / last, col = n % last, byte = row * ((last + 1) / 2) + col / 2;
  const int v = (bytes[byte] >> (4 * (col % 2))) & 15;
  return type == VKDML_BLOCK_QUANTIZED_TYPE_INT4 && v >= 8 ? v - 16 : v;
}

inline int DefaultZero(VKDML_BLOCK_QUANTIZED_TYPE type) {
  return type == VKDML_BLOCK_QUANTIZED_TYPE_UINT8         ? 128
         : type == VKDML_BLOCK_QUANTIZED_TYPE_UINT8_BITS4 ? 8
                                                          : 0;
}

// The expected output image (from `out`): ONNX Runtime's definition, index by index.
inline Bytes Expected(const BlockCase& c, const BlockBuilt& b, Bytes out) {
  const UINT D = c.D(), os = ref::ElementSize(c.outType);
  const Shape scales = c.Scales(), output = c.Output();
  const UINT64 n = c.values[c.axis];
  const bool isSigned =
      c.indexType == DML_TENSOR_DATA_TYPE_INT32 || c.indexType == DML_TENSOR_DATA_TYPE_INT64;
  Shape o(output.size(), 0);
  do {
    const Shape idx(o.begin() + c.axis, o.begin() + c.axis + c.indices.size());
    const int64_t raw = c.indexValues[At(c.indices, {}, idx)];
    const bool inRange = isSigned ? raw >= -int64_t(n) && raw < int64_t(n) : uint64_t(raw) < n;
    int64_t i = raw;
    if (!inRange) i = isSigned && raw < 0 ? -int64_t(n) : int64_t(n) - 1;
    if (i < 0) i += n;
    float value = c.fill;
    if (inRange || c.outOfRange != VKDML_OUT_OF_RANGE_MODE_FILL) {
      Shape v(o.begin(), o.begin() + c.axis);
      v.push_back(UINT(i));
      v.insert(v.end(), o.begin() + c.axis + c.indices.size(), o.end());
      Shape s = v;
      s[c.quantizeAxis] /= c.blockSize;
      const UINT64 block = At(scales, {}, s);
      // Packed whole: one row of them all.
      const UINT dataRow = c.wholeData ? UINT(Count(c.values)) : c.values.back();
      const int q = ValueAt(b.data, At(c.values, {}, v), dataRow, c.type);
      const UINT row = c.WholeZeros() ? UINT(Count(scales)) : scales.back();
      const int zero = c.zeroPoints ? ValueAt(b.zeros, block, row, c.type) : DefaultZero(c.type);
      const UINT64 so = At(Pad(scales, D), b.scaleStrides, Pad(s, D, 0));
      float scale;
      if (c.outType == DML_TENSOR_DATA_TYPE_FLOAT32) {
        std::memcpy(&scale, &b.scaleImage[so * 4], 4);
      } else {
        scale = HalfValue(uint16_t(b.scaleImage[so * 2] | b.scaleImage[so * 2 + 1] << 8));
      }
      value = float(q - zero) * scale;
    }
    uint8_t* dst = out.data() + At(Pad(output, D), b.outStrides, Pad(o, D, 0)) * os;
    if (os == 4) {
      std::memcpy(dst, &value, 4);
    } else {
      const uint16_t h = NearestHalf(value);
      std::memcpy(dst, &h, 2);
    }
  } while (Next(output, o));
  return out;
}

}  // namespace vt
