// The fuzz target's decoder of vkdml's block-quantized gather
// (VKDML_OPERATOR_GATHER_BLOCK_QUANTIZED, ONNX Runtime's GatherBlockQuantized; an input whose first
// byte is 0xC8 to 0xCF): INT4, UINT4 and UINT8 values (4 and 8 bits), ranks 1-3, any axis and
// quantize axis, blocks of 16 or 32, zero points or none, INT4 and UINT4 data packed whole
// (ValueSizes: any last size), strided indices, scales and output,
// denormal scales, FILL and ERROR, checked runs; the values, zero points, scales and indices from
// the input, compared with test/block_ref.h. In raw mode one field of the descriptor comes from the
// input (most of them invalid): where vkdml accepts it, the run must succeed, its output unchecked.
#include "block_ref.h"
#include "fuzz_common.h"

namespace fz {

namespace {

// block_ref.h's source of random choices, from the input: a byte a choice where it fits one.
struct InputRandom {
  Decoder& d;
  uint64_t U(uint64_t lo, uint64_t hi) {
    const uint64_t span = hi - lo + 1;
    return lo + (span <= 256 ? d.Byte() : d.Raw32()) % span;
  }
  UINT Ui(uint64_t lo, uint64_t hi) { return UINT(U(lo, hi)); }
  bool P(double p) { return d.Byte() < p * 256; }
};

}  // namespace

int RunBlockQuantized(Decoder& d) {
  d.Byte();  // the byte that chose this operator
  const uint8_t mode = d.Byte();
  const bool raw = mode & 0x80;
  const UINT flags = mode & 1 ? VKDML_EXECUTION_FLAG_CHECK_INDICES : 0;
  vt::BlockCase c;
  c.type = VKDML_BLOCK_QUANTIZED_TYPE(1 + d.Byte() % 4);
  c.indexType = kIndex[d.Byte() % 4];
  c.outType = d.Byte() & 1 ? DML_TENSOR_DATA_TYPE_FLOAT16 : DML_TENSOR_DATA_TYPE_FLOAT32;
  const UINT rank = d.In(1, 3);
  for (UINT i = 0; i < rank; ++i) c.values.push_back(d.In(1, i + 1 == rank ? 40 : 4));
  if (c.FourBit()) c.values.back() += c.values.back() % 2;
  c.axis = d.In(0, rank - 1);
  c.quantizeAxis = d.In(0, rank - 1);
  c.blockSize = d.Byte() & 1 ? 32 : 16;
  const UINT q = d.In(rank == 3 ? 0 : 1, rank == 3 ? 1 : 2);
  for (UINT i = 0; i < q; ++i) c.indices.push_back(d.In(1, 4));
  const uint8_t options = d.Byte();
  c.zeroPoints = options & 1;
  c.stridedIndices = options & 2;
  c.stridedScales = options & 4;
  c.stridedOutput = options & 8;
  c.denormals = c.outType == DML_TENSOR_DATA_TYPE_FLOAT32 && (options & 16);
  c.wholeData = c.WholeZeros() && (options & 32);  // any last size
  if (c.wholeData && (options & 64)) c.values.back() -= 1;
  const UINT wrap = (mode >> 2) & 3;
  c.outOfRange = wrap == 1   ? VKDML_OUT_OF_RANGE_MODE_FILL
                 : wrap == 2 ? VKDML_OUT_OF_RANGE_MODE_ERROR
                             : VKDML_OUT_OF_RANGE_MODE_CLAMP;
  c.fill = float(int8_t(d.Byte())) / 4;
  const UINT n = c.values[c.axis];
  const bool isSigned = ref::IsSignedIndexType(c.indexType);
  for (UINT64 i = vt::Count(c.indices); i-- > 0;)
    c.indexValues.push_back(int64_t(d.Byte() % (2 * n + 3)) - (isSigned ? int64_t(n) + 1 : 0));
  InputRandom random{d};
  vt::BlockBuilt b;
  vt::Build(random, c, &b);  // the strides, values, zero points and scales from the input
  if (raw) {                 // one field from the input
    switch (d.Byte() % 5) {
      case 0:
        RawSize(d, {&b.input, &b.indices, &b.scales, &b.zeroPoints, &b.output}, 70);
        break;
      case 1:
        b.desc.ValueType = VKDML_BLOCK_QUANTIZED_TYPE(d.Byte() % 6);
        break;
      case 2:
        b.desc.BlockSize = UINT(1) << (d.Byte() % 8);
        break;
      case 3:  // any type, the data's bytes as they are
        b.valueSizes[d.In(0, UINT(b.valueSizes.size()) - 1)] = d.In(0, 70);
        b.desc.ValueSizes = b.valueSizes.data();
        break;
      default:
        (d.Byte() & 1 ? b.desc.Axis : b.desc.QuantizeAxis) = d.In(0, 5);
        break;
    }
  }
  std::unique_ptr<CompiledOperator> compiled;
  if (!Prepare(b.op, flags, &compiled)) return 0;

  std::vector<const void*> inputs = {b.data.data(), b.indexImage.data(), b.scaleImage.data()};
  if (c.zeroPoints) inputs.push_back(b.zeros.data());
  vt::Bytes got(b.output.Total(), 0xA5);
  const Result r = Dev().Run(*compiled, inputs, {got.data()});
  ++gStats.ran;
  ++gStats.blockGathers;
  if (raw) {
    CheckRawRun(r, "block-quantized gather");
    return 0;
  }
  const ref::IndexError err =
      ref::FirstError(b.indices.Ref(), b.indexImage.data(), [&](const ref::Coord&) { return n; });
  const bool checked = flags || c.outOfRange == VKDML_OUT_OF_RANGE_MODE_ERROR;
  CheckStatus(r, checked, err);
  gStats.checkedOutOfRange += checked && err.found;
  CheckOutput(got, vt::Expected(c, b, vt::Bytes(b.output.Total(), 0xA5)),
              "block-quantized gather: input " + b.input.ToString() + ", indices " +
                  b.indices.ToString() + ", scales " + b.scales.ToString() + ", output " +
                  b.output.ToString() + ", type " + std::to_string(c.type) + ", axis " +
                  std::to_string(c.axis) + ", quantize axis " + std::to_string(c.quantizeAxis) +
                  ", block " + std::to_string(c.blockSize) + ", zero points " +
                  std::to_string(c.zeroPoints) + ", whole data " + std::to_string(c.wholeData));
  return 0;
}

}  // namespace fz
