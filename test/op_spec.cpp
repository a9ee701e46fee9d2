#include "op_spec.h"

#include <sstream>
#include <stdexcept>

namespace vt {

namespace {

std::string Dims(const std::vector<UINT>& v) {
  std::ostringstream s;
  s << "{";
  for (size_t i = 0; i < v.size(); ++i) s << (i ? "," : "") << v[i];
  s << "}";
  return s.str();
}

// The tests size their tensors with the library's CalcBufferTensorSize (or, past 2^32 - 1
// elements, CalcLargeBufferTensorSize): each size is checked against the reference's own rule
// (ref::Tensor::RequiredBytes, in 64 bits), so a wrong size rule cannot hide behind tests sized
// by it. Descs the library calls invalid (0 dimensions or more than 8, a size of 0, an unknown
// type) are left to the validation tests.
void CheckSizeRule(DML_TENSOR_DATA_TYPE type, const std::vector<UINT>& sizes,
                   const std::vector<UINT>& strides, UINT64 got) {
  if (ref::ElementSize(type) == 0 || sizes.empty() || sizes.size() > 8) return;
  if (!strides.empty() && strides.size() != sizes.size()) return;
  const UINT64 cap = UINT64(1) << 56;  // VKDML_TENSOR_FLAG_LARGE's most elements
  UINT64 count = 1, inner = 1;         // all sizes; all but the outermost (its packed stride)
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return;
    count = count > cap / sizes[d] ? cap + 1 : count * sizes[d];
    if (d > 0) inner = inner > 0xFFFFFFFFu / sizes[d] ? UINT64(1) << 33 : inner * sizes[d];
  }
  if (count > cap || (strides.empty() && inner > 0xFFFFFFFFu)) return;
  // Past 2^62 bytes the reference's 64-bit sum may wrap (the library then returns 0).
  long double last = 0;
  for (size_t d = 0; !strides.empty() && d < sizes.size(); ++d)
    last += (long double)(sizes[d] - 1) * strides[d];
  if (last * 8 > 0x1p62L) return;
  const UINT64 expected = ref::Tensor(type, sizes, strides).RequiredBytes();
  if (got != expected) {
    std::ostringstream s;
    s << "TensorDesc " << DataTypeName(type) << " " << Dims(sizes) << " strides "
      << (strides.empty() ? std::string("packed") : Dims(strides)) << ": the library's size is "
      << got << " bytes, the reference's rule gives " << expected;
    throw std::logic_error(s.str());
  }
}

}  // namespace

// ----- TensorDesc -----

TensorDesc::TensorDesc(DML_TENSOR_DATA_TYPE type, std::vector<UINT> s, std::vector<UINT> st,
                       UINT64 totalBytes, UINT alignment)
    : sizes(std::move(s)), strides(std::move(st)) {
  buf.DataType = type;
  buf.Flags = DML_TENSOR_FLAG_NONE;
  buf.DimensionCount = static_cast<UINT>(sizes.size());
  buf.GuaranteedBaseOffsetAlignment = alignment;
  const UINT* given = strides.empty() ? nullptr : strides.data();
  buf.TotalTensorSizeInBytes =
      totalBytes ? totalBytes : CalcBufferTensorSize(type, buf.DimensionCount, sizes.data(), given);
  // Past DirectML's 2^32 - 1 elements: vkdml's flag, and the size it gives.
  if (!totalBytes && buf.TotalTensorSizeInBytes == 0 &&
      CalcLargeBufferTensorSize(type, buf.DimensionCount, sizes.data(), given) != 0) {
    buf.Flags = VKDML_TENSOR_FLAG_LARGE;
    buf.TotalTensorSizeInBytes =
        CalcLargeBufferTensorSize(type, buf.DimensionCount, sizes.data(), given);
  }
  if (!totalBytes) CheckSizeRule(type, sizes, strides, buf.TotalTensorSizeInBytes);
  desc.Type = DML_TENSOR_TYPE_BUFFER;
  Fix();
}

TensorDesc::TensorDesc(const TensorDesc& o)
    : sizes(o.sizes), strides(o.strides), buf(o.buf), desc(o.desc) {
  Fix();
}

TensorDesc& TensorDesc::operator=(const TensorDesc& o) {
  sizes = o.sizes;
  strides = o.strides;
  buf = o.buf;
  desc = o.desc;
  Fix();
  return *this;
}

void TensorDesc::Fix() {
  buf.Sizes = sizes.data();
  buf.Strides = strides.empty() ? nullptr : strides.data();
  desc.Desc = &buf;
}

std::string TensorDesc::ToString() const {
  std::ostringstream s;
  s << DataTypeName(buf.DataType) << " sizes " << Dims(sizes);
  if (!strides.empty()) s << " strides " << Dims(strides);
  s << " total " << buf.TotalTensorSizeInBytes;
  if (buf.GuaranteedBaseOffsetAlignment) s << " align " << buf.GuaranteedBaseOffsetAlignment;
  return s.str();
}

// ----- OpSpec -----

OpSpec OpSpec::GatherND(TensorDesc input, TensorDesc indices, TensorDesc output, UINT r, UINT q) {
  OpSpec s;
  s.type = DML_OPERATOR_GATHER_ND;
  s.tensors = {input, indices, output};
  s.r = r;
  s.q = q;
  return s;
}

OpSpec OpSpec::GatherND1(TensorDesc input, TensorDesc indices, TensorDesc output, UINT r, UINT q,
                         UINT b) {
  OpSpec s;
  s.type = DML_OPERATOR_GATHER_ND1;
  s.tensors = {input, indices, output};
  s.r = r;
  s.q = q;
  s.b = b;
  return s;
}

OpSpec OpSpec::Gather(TensorDesc input, TensorDesc indices, TensorDesc output, UINT axis,
                      UINT indexDimensions) {
  OpSpec s;
  s.type = DML_OPERATOR_GATHER;
  s.tensors = {input, indices, output};
  s.axis = axis;
  s.indexDims = indexDimensions;
  return s;
}

OpSpec OpSpec::GatherElements(TensorDesc input, TensorDesc indices, TensorDesc output, UINT axis) {
  OpSpec s;
  s.type = DML_OPERATOR_GATHER_ELEMENTS;
  s.tensors = {input, indices, output};
  s.axis = axis;
  return s;
}

OpSpec OpSpec::ScatterND(TensorDesc input, TensorDesc indices, TensorDesc updates,
                         TensorDesc output, UINT r, UINT q) {
  OpSpec s;
  s.type = DML_OPERATOR_SCATTER_ND;
  s.tensors = {input, indices, updates, output};
  s.r = r;
  s.q = q;
  return s;
}

OpSpec OpSpec::ScatterElements(TensorDesc input, TensorDesc indices, TensorDesc updates,
                               TensorDesc output, UINT axis) {
  OpSpec s;
  s.type = DML_OPERATOR_SCATTER_ELEMENTS;
  s.tensors = {input, indices, updates, output};
  s.axis = axis;
  return s;
}

OpSpec& OpSpec::WithReduce(VKDML_REDUCE_FUNCTION f) {
  if (type == DML_OPERATOR_SCATTER_ND) type = VKDML_OPERATOR_SCATTER_ND_REDUCE;
  if (type == DML_OPERATOR_SCATTER_ELEMENTS) type = VKDML_OPERATOR_SCATTER_ELEMENTS_REDUCE;
  reduce = f;
  return *this;
}

OpSpec& OpSpec::WithOutOfRange(VKDML_OUT_OF_RANGE_MODE mode, DML_SCALAR_UNION fillValue) {
  wrapped = true;
  outOfRange = mode;
  fill = fillValue;
  return *this;
}

const DML_OPERATOR_DESC& OpSpec::Desc() {
  for (TensorDesc& t : tensors) t.Fix();
  op.Type = type;
  switch (type) {
    case DML_OPERATOR_GATHER_ND:
      gnd = {tensors[0].Desc(), tensors[1].Desc(), tensors[2].Desc(), r, q};
      op.Desc = &gnd;
      break;
    case DML_OPERATOR_GATHER_ND1:
      gnd1 = {tensors[0].Desc(), tensors[1].Desc(), tensors[2].Desc(), r, q, b};
      op.Desc = &gnd1;
      break;
    case DML_OPERATOR_GATHER:
      g = {tensors[0].Desc(), tensors[1].Desc(), tensors[2].Desc(), axis, indexDims};
      op.Desc = &g;
      break;
    case DML_OPERATOR_GATHER_ELEMENTS:
      ge = {tensors[0].Desc(), tensors[1].Desc(), tensors[2].Desc(), axis};
      op.Desc = &ge;
      break;
    case DML_OPERATOR_SCATTER_ND:
      snd = {tensors[0].Desc(), tensors[1].Desc(), tensors[2].Desc(), tensors[3].Desc(), r, q};
      op.Desc = &snd;
      break;
    case DML_OPERATOR_SCATTER_ELEMENTS:
      se = {tensors[0].Desc(), tensors[1].Desc(), tensors[2].Desc(), tensors[3].Desc(), axis};
      op.Desc = &se;
      break;
    case VKDML_OPERATOR_SCATTER_ND_REDUCE:
      sndr = {
          tensors[0].Desc(), tensors[1].Desc(), tensors[2].Desc(), tensors[3].Desc(), r, q, reduce,
          excludeSelf};
      op.Desc = &sndr;
      break;
    case VKDML_OPERATOR_SCATTER_ELEMENTS_REDUCE:
      ser = {
          tensors[0].Desc(), tensors[1].Desc(), tensors[2].Desc(), tensors[3].Desc(), axis, reduce,
          excludeSelf};
      op.Desc = &ser;
      break;
    default:
      op.Desc = nullptr;
  }
  if (!wrapped) return op;
  oor = {&op, outOfRange, fill};
  outer = {VKDML_OPERATOR_OUT_OF_RANGE, &oor};
  return outer;
}

const DML_TENSOR_DESC** OpSpec::TensorSlot(size_t i) {
  switch (type) {
    case DML_OPERATOR_GATHER_ND: {
      const DML_TENSOR_DESC** p[] = {&gnd.InputTensor, &gnd.IndicesTensor, &gnd.OutputTensor};
      return p[i];
    }
    case DML_OPERATOR_GATHER_ND1: {
      const DML_TENSOR_DESC** p[] = {&gnd1.InputTensor, &gnd1.IndicesTensor, &gnd1.OutputTensor};
      return p[i];
    }
    case DML_OPERATOR_GATHER: {
      const DML_TENSOR_DESC** p[] = {&g.InputTensor, &g.IndicesTensor, &g.OutputTensor};
      return p[i];
    }
    case DML_OPERATOR_GATHER_ELEMENTS: {
      const DML_TENSOR_DESC** p[] = {&ge.InputTensor, &ge.IndicesTensor, &ge.OutputTensor};
      return p[i];
    }
    case DML_OPERATOR_SCATTER_ELEMENTS: {
      const DML_TENSOR_DESC** p[] = {&se.InputTensor, &se.IndicesTensor, &se.UpdatesTensor,
                                     &se.OutputTensor};
      return p[i];
    }
    case VKDML_OPERATOR_SCATTER_ND_REDUCE: {
      const DML_TENSOR_DESC** p[] = {&sndr.InputTensor, &sndr.IndicesTensor, &sndr.UpdatesTensor,
                                     &sndr.OutputTensor};
      return p[i];
    }
    case VKDML_OPERATOR_SCATTER_ELEMENTS_REDUCE: {
      const DML_TENSOR_DESC** p[] = {&ser.InputTensor, &ser.IndicesTensor, &ser.UpdatesTensor,
                                     &ser.OutputTensor};
      return p[i];
    }
    default: {
      const DML_TENSOR_DESC** p[] = {&snd.InputTensor, &snd.IndicesTensor, &snd.UpdatesTensor,
                                     &snd.OutputTensor};
      return p[i];
    }
  }
}

const char* OpSpec::Name() const {
  switch (type) {
    case DML_OPERATOR_GATHER_ND:
      return "GATHER_ND";
    case DML_OPERATOR_GATHER_ND1:
      return "GATHER_ND1";
    case DML_OPERATOR_GATHER:
      return "GATHER";
    case DML_OPERATOR_GATHER_ELEMENTS:
      return "GATHER_ELEMENTS";
    case DML_OPERATOR_SCATTER_ND:
      return "SCATTER_ND";
    case DML_OPERATOR_SCATTER_ELEMENTS:
      return "SCATTER_ELEMENTS";
    case VKDML_OPERATOR_SCATTER_ND_REDUCE:
      return "SCATTER_ND_REDUCE";
    case VKDML_OPERATOR_SCATTER_ELEMENTS_REDUCE:
      return "SCATTER_ELEMENTS_REDUCE";
    default:
      return "?";
  }
}

const char* OpSpec::TensorName(size_t i) const {
  static const char* names3[] = {"InputTensor", "IndicesTensor", "OutputTensor"};
  static const char* names4[] = {"InputTensor", "IndicesTensor", "UpdatesTensor", "OutputTensor"};
  return tensors.size() == 4 ? names4[i] : names3[i];
}

std::string OpSpec::ToString() const {
  std::ostringstream s;
  switch (type) {
    case DML_OPERATOR_GATHER_ND:
      s << "GATHER_ND r=" << r << " q=" << q;
      break;
    case DML_OPERATOR_GATHER_ND1:
      s << "GATHER_ND1 r=" << r << " q=" << q << " b=" << b;
      break;
    case DML_OPERATOR_GATHER:
      s << "GATHER axis=" << axis << " IndexDimensions=" << indexDims;
      break;
    case DML_OPERATOR_GATHER_ELEMENTS:
      s << "GATHER_ELEMENTS axis=" << axis;
      break;
    case DML_OPERATOR_SCATTER_ND:
      s << "SCATTER_ND r=" << r << " q=" << q;
      break;
    case DML_OPERATOR_SCATTER_ELEMENTS:
      s << "SCATTER_ELEMENTS axis=" << axis;
      break;
    case VKDML_OPERATOR_SCATTER_ND_REDUCE:
      s << "SCATTER_ND_REDUCE r=" << r << " q=" << q << " ReduceFunction=" << reduce
        << (excludeSelf ? " ExcludeSelf" : "");
      break;
    case VKDML_OPERATOR_SCATTER_ELEMENTS_REDUCE:
      s << "SCATTER_ELEMENTS_REDUCE axis=" << axis << " ReduceFunction=" << reduce
        << (excludeSelf ? " ExcludeSelf" : "");
      break;
    default:
      s << "op " << int(type);
  }
  if (wrapped) {
    static const char* modes[] = {"CLAMP", "FILL", "DROP", "ERROR"};
    s << " OutOfRange=" << (outOfRange <= 3 ? modes[outOfRange] : "?");
    if (outOfRange == VKDML_OUT_OF_RANGE_MODE_FILL)
      s << " FillValue.UInt64=0x" << std::hex << fill.UInt64 << std::dec;
  }
  static const char* names3[] = {"input", "indices", "output"};
  static const char* names4[] = {"input", "indices", "updates", "output"};
  for (size_t i = 0; i < tensors.size(); ++i)
    s << "\n  " << (tensors.size() == 4 ? names4[i] : names3[i]) << ": " << tensors[i].ToString();
  return s.str();
}

ref::IndexError OpSpec::Reference(const std::vector<Bytes>& inputs, Bytes* output) const {
  const ref::Tensor in = tensors[0].Ref(), idx = tensors[1].Ref(), out = tensors.back().Ref();
  const uint8_t* fillBytes =
      wrapped && outOfRange == VKDML_OUT_OF_RANGE_MODE_FILL ? fill.Bytes : nullptr;
  const bool drop = wrapped && outOfRange == VKDML_OUT_OF_RANGE_MODE_DROP;
  switch (type) {
    case DML_OPERATOR_GATHER_ND:
      return ref::GatherND(in, inputs[0].data(), idx, inputs[1].data(), out, output->data(), r, q,
                           0, fillBytes);
    case DML_OPERATOR_GATHER_ND1:
      return ref::GatherND(in, inputs[0].data(), idx, inputs[1].data(), out, output->data(), r, q,
                           b, fillBytes);
    case DML_OPERATOR_GATHER:
      return ref::Gather(in, inputs[0].data(), idx, inputs[1].data(), out, output->data(), axis,
                         indexDims, fillBytes);
    case DML_OPERATOR_GATHER_ELEMENTS:
      return ref::GatherElements(in, inputs[0].data(), idx, inputs[1].data(), out, output->data(),
                                 axis, fillBytes);
    case DML_OPERATOR_SCATTER_ND:
    case VKDML_OPERATOR_SCATTER_ND_REDUCE:
      return ref::ScatterND(in, inputs[0].data(), idx, inputs[1].data(), tensors[2].Ref(),
                            inputs[2].data(), out, output->data(), r, q, reduce, drop,
                            excludeSelf != 0);
    case DML_OPERATOR_SCATTER_ELEMENTS:
    case VKDML_OPERATOR_SCATTER_ELEMENTS_REDUCE:
      return ref::ScatterElements(in, inputs[0].data(), idx, inputs[1].data(), tensors[2].Ref(),
                                  inputs[2].data(), out, output->data(), axis, reduce, drop,
                                  excludeSelf != 0);
    default:
      throw std::invalid_argument("OpSpec::Reference: operator type");
  }
}

std::vector<ref::ScatterWrite> OpSpec::Writes(const Bytes& indices) const {
  const ref::Tensor in = tensors[0].Ref(), idx = tensors[1].Ref(), upd = tensors[2].Ref(),
                    out = tensors[3].Ref();
  if (type == DML_OPERATOR_SCATTER_ELEMENTS || type == VKDML_OPERATOR_SCATTER_ELEMENTS_REDUCE)
    return ref::ScatterElementsWrites(in, idx, indices.data(), upd, out, axis);
  return ref::ScatterNDWrites(in, idx, indices.data(), upd, out, r, q);
}

}  // namespace vt
