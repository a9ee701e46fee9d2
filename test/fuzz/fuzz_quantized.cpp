// The fuzz target's decoders of vkdml's quantized rows (an input whose first byte is 0xE0 or
// more): the gather (VKDML_OPERATOR_GATHER_QUANTIZED_ROWS) and, with its mode's bit 0x40, the
// quantizing scatter (VKDML_OPERATOR_SCATTER_QUANTIZED_ROWS), against test/quantized_ref.h.
#include <cstring>

#include "fuzz_common.h"
#include "quantized_ref.h"

namespace fz {

namespace {

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

// A table {1, ..., 1, rows, blocks * block bytes} of `format`, indices {n0, ..., 1}, an output
// {n0, ..., 32 * blocks} of FLOAT32 or FLOAT16, laid out as Layout does; raw: one size and the
// format or output type from the input (most of them invalid). Mode bits as Decode's: checked;
// bits 2-3 wrap it in FILL, ERROR or CLAMP (raw: DROP, which a gather refuses, for CLAMP).
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

}  // namespace fz
