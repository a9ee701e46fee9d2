// VKDML_OPERATOR_PAGED_CACHE_WRITE and VKDML_OPERATOR_PAGED_GATHER: validation and lowering (dml.h
// states the shapes and values).
//
// Both walk a cache's rows: a token slot's row of one head, head_size values (Format 0) or
// head_size / 32 blocks. Their plans (operator.h: Pass::Kind::PagedClaim, PagedWrite,
// PagedStarts, PagedOffsets, PagedRows, PagedGather) carry the cache's geometry as index components
// the kernel applies itself (glsl/paged.comp): component 0 is (blocks, a block's stride in bytes),
// component 1 (block_size, a token row's stride in bytes); the layout is only those strides and
// the heads' one (NHD and HND differ in nothing else). The write: the cache's copy (skipped in
// place), a claim per token (the scratch's tally: the last token naming a slot), then the rows.
// The gather: the sequences' starts and token offsets into the scratch (Vulkan guarantees four
// storage buffers a stage: the cache, BlockTableTensor, the output and the scratch), then each
// output token's cache row (bisecting the starts for its sequence, reading its block), then the
// values from those rows (on GPU kernels both in one pass: kernel_paged.cpp).
#include "operators/error.h"
#include "operators/operator.h"

namespace vkdml::detail {

namespace {

Result CheckLayout(VKDML_PAGED_CACHE_LAYOUT layout, VKDML_QUANTIZED_FORMAT format) {
  if (layout > VKDML_PAGED_CACHE_LAYOUT_HND)
    return Fail(Status::InvalidArgument, "Layout is ", UINT(layout),
                ", expected VKDML_PAGED_CACHE_LAYOUT_NHD (0) or VKDML_PAGED_CACHE_LAYOUT_HND (1)");
  if (format) VKDML_TRY(CheckQuantizedFormat(format));
  return {};
}

Result CheckRank(const Tensor& t, UINT rank, const char* shape) {
  if (t.dims != rank)
    return Fail(Status::InvalidArgument, t.field, ".DimensionCount is ", t.dims, ", expected ",
                rank, " (", shape, ")");
  return {};
}

// FLOAT16 rows start on 4-byte words: every stride but the last even.
Result CheckEvenStrides(const Tensor& t) {
  if (t.elemSize != 2) return {};
  for (UINT d = 0; d + 1 < t.dims; ++d)
    if (t.sizes[d] > 1 && t.strides[d] % 2)
      return Fail(Status::InvalidArgument, t.field, ".Strides[", d, "] is ", t.strides[d],
                  ", expected an even stride (FLOAT16 rows start on 4-byte words)");
  return {};
}

// The cache's geometry: its sizes in Layout's order, head_size in values, and the strides in
// bytes of a block, a token row and a head's row.
struct Cache {
  UINT blocks = 0, blockSize = 0, heads = 0, headSize = 0;
  UINT blockStride = 0, rowStride = 0, headStride = 0;
  UINT rowBytes = 0;  // a head's row: head_size values, or its blocks
};

Result CheckCache(const Tensor& cache, VKDML_PAGED_CACHE_LAYOUT layout,
                  VKDML_QUANTIZED_FORMAT format, Cache* out) {
  const char* shape = layout == VKDML_PAGED_CACHE_LAYOUT_NHD
                          ? "{blocks, block_size, heads, head_size} (Layout NHD)"
                          : "{blocks, heads, block_size, head_size} (Layout HND)";
  VKDML_TRY(CheckRank(cache, 4, shape));
  const bool nhd = layout == VKDML_PAGED_CACHE_LAYOUT_NHD;
  const UINT rowDim = nhd ? 1 : 2, headDim = nhd ? 2 : 1;
  Cache c;
  c.blocks = cache.sizes[0];
  c.blockSize = cache.sizes[rowDim];
  c.heads = cache.sizes[headDim];
  if (format) {
    if (cache.type != DML_TENSOR_DATA_TYPE_UINT8)
      return Fail(Status::InvalidArgument, cache.field, ".DataType is ", DataTypeName(cache.type),
                  ", expected UINT8 (the cache's ", QuantizedFormatName(format), " blocks)");
    const UINT blockBytes = QuantizedBlockBytes(format);
    if (cache.sizes[3] % blockBytes)
      return Fail(Status::InvalidArgument, cache.field, ".Sizes[3] is ", cache.sizes[3],
                  ", expected a multiple of ", blockBytes, " (the bytes of a ",
                  QuantizedFormatName(format),
                  " block of 32 values: a head's row is head_size / 32 blocks)");
    c.headSize = cache.sizes[3] / blockBytes * 32;
  } else {
    if (cache.type != DML_TENSOR_DATA_TYPE_FLOAT32 && cache.type != DML_TENSOR_DATA_TYPE_FLOAT16)
      return Fail(Status::InvalidArgument, cache.field, ".DataType is ", DataTypeName(cache.type),
                  ", expected FLOAT32 or FLOAT16 (or UINT8 blocks with a Format)");
    if (cache.sizes[3] % 4)
      return Fail(Status::InvalidArgument, cache.field, ".Sizes[3] is ", cache.sizes[3],
                  ", expected a multiple of 4 (head_size: the kernels move 4 values at a time)");
    c.headSize = cache.sizes[3];
  }
  VKDML_TRY(CheckLastStride(cache, "a head's row is consecutive"));
  VKDML_TRY(CheckEvenStrides(cache));
  const UINT64 slots = UINT64(c.blocks) * c.blockSize;
  if (slots > 0x7FFFFFFFu)
    return Fail(Status::InvalidArgument, cache.field, " holds ", slots,
                " token slots (blocks * block_size), expected at most 2147483647");
  const UINT64 unit = cache.elemSize;
  for (UINT64 stride :
       {cache.strides[0] * unit, cache.strides[rowDim] * unit, cache.strides[headDim] * unit})
    if (stride > 0xFFFFFFFFu)
      return Fail(Status::InvalidArgument, cache.field,
                  ".Strides take more than 2^32 bytes a step: the cache fits one descriptor");
  c.blockStride = UINT(cache.strides[0] * unit);
  c.rowStride = UINT(cache.strides[rowDim] * unit);
  c.headStride = UINT(cache.strides[headDim] * unit);
  c.rowBytes = cache.sizes[3];
  *out = c;
  return {};
}

// The value rows (the write's updates, the gather's output): {n, heads, head_size}.
Result CheckValueRows(const Tensor& t, UINT n, const std::string& nWhat, const Cache& c,
                      const Tensor& cache, VKDML_QUANTIZED_FORMAT format) {
  VKDML_TRY(CheckRank(t, 3, "{tokens, heads, head_size}"));
  if (format) {
    if (t.type != DML_TENSOR_DATA_TYPE_FLOAT32 && t.type != DML_TENSOR_DATA_TYPE_FLOAT16)
      return Fail(Status::InvalidArgument, t.field, ".DataType is ", DataTypeName(t.type),
                  ", expected FLOAT32 or FLOAT16 (the values of a quantized cache)");
  } else {
    VKDML_TRY(CheckSameType(t, cache));
  }
  const UINT sizes[3] = {n, c.heads, c.headSize};
  const std::string what[3] = {nWhat, Str(cache.field, "'s heads"),
                               Str(cache.field, "'s head_size")};
  VKDML_TRY(CheckSizes(t, 3, sizes, what));
  VKDML_TRY(CheckLastStride(t, "a head's values are consecutive"));
  return CheckEvenStrides(t);
}

// A 1-D tensor of `n` entries of the index type `type` (SequenceStartsTensor, TokenOffsetsTensor).
Result CheckList(const Tensor& t, UINT n, const std::string& what, const Tensor& table) {
  VKDML_TRY(CheckRank(t, 1, what.c_str()));
  VKDML_TRY(CheckSameType(t, table));
  return CheckSizes(t, 1, &n, &what);
}

// Values an invocation moves: 16 bytes of them (8 FLOAT16 where head_size allows, else 4).
UINT GroupValues(UINT elemSize, UINT headSize) {
  return elemSize == 2 && headSize % 8 == 0 ? 8 : 4;
}

void AddGeometry(Plan& plan, const Cache& c) {
  plan.AddComponent(c.blocks, c.blockStride);
  plan.AddComponent(c.blockSize, c.rowStride);
}

// The gather's components 2 and 3 (BlockTableTensor): a sequence's entries, and the sequences'
// rows (glsl/paged.comp: tokenRow).
void AddTable(Plan& plan, const Tensor& table) {
  plan.AddComponent(table.sizes[1], table.strides[1]);
  plan.AddComponent(table.sizes[0], table.strides[0]);
}

}  // namespace

Result BuildPagedCacheWrite(const VKDML_PAGED_CACHE_WRITE_OPERATOR_DESC& desc, OperatorImpl* op) {
  VKDML_TRY(CheckLayout(desc.Layout, desc.Format));
  Tensor input, slots, updates, output;
  VKDML_TRY(ValidateTensor(desc.InputTensor, "InputTensor", TensorRole::Data, &input));
  VKDML_TRY(
      ValidateTensor(desc.SlotMappingTensor, "SlotMappingTensor", TensorRole::Indices, &slots));
  VKDML_TRY(ValidateTensor(desc.UpdatesTensor, "UpdatesTensor", TensorRole::Data, &updates));
  VKDML_TRY(ValidateTensor(desc.OutputTensor, "OutputTensor", TensorRole::Data, &output));
  Cache c;
  VKDML_TRY(CheckCache(input, desc.Layout, desc.Format, &c));
  VKDML_TRY(CheckSameRank(output, input));
  VKDML_TRY(CheckSameType(output, input));
  VKDML_TRY(CheckSameSizes(output, input));
  VKDML_TRY(CheckNoOverlap(output));
  Cache o;
  VKDML_TRY(CheckCache(output, desc.Layout, desc.Format, &o));
  VKDML_TRY(CheckRank(slots, 1, "{tokens}"));
  const UINT tokens = slots.sizes[0];
  VKDML_TRY(CheckValueRows(updates, tokens, "SlotMappingTensor's tokens", c, input, desc.Format));

  Pass copy;  // the cache, then the rows the tokens claim
  copy.skipInPlace = true;
  for (UINT d = 0; d < 4; ++d)
    copy.plan.AddDim(input.sizes[d], output.strides[d], input.strides[d], 0, 0);
  Pass claim;
  claim.kind = Pass::Kind::PagedClaim;
  claim.plan.AddDim(tokens, 0, 0, slots.strides[0], 1);
  AddGeometry(claim.plan, o);
  // The rows: a group of 16 bytes of values (4 FLOAT32 or 8 FLOAT16; 4 FLOAT16 where head_size
  // is not a multiple of 8) or a quantized block of 32 an invocation; direct offsets in
  // UpdatesTensor's elements, indexed ones in the cache's bytes.
  const UINT group = desc.Format ? 32 : GroupValues(output.elemSize, c.headSize);
  const UINT groupBytes = desc.Format ? QuantizedBlockBytes(desc.Format) : group * output.elemSize;
  Pass write;
  write.kind = Pass::Kind::PagedWrite;
  write.plan.AddDim(tokens, updates.strides[0], 0, slots.strides[0], 1);
  write.plan.AddDim(c.heads, updates.strides[1], o.headStride, 0, 0);
  write.plan.AddDim(c.headSize / group, group, groupBytes, 0, 0);
  AddGeometry(write.plan, o);
  op->inputs = {input, slots, updates};
  op->outputs = {output};
  op->passes = {copy, claim, write};
  op->componentSizes = {UINT(UINT64(c.blocks) * c.blockSize)};
  op->format = desc.Format;
  op->paged = true;
  op->slots = UINT64(c.blocks) * c.blockSize;      // a scatter: in place allowed, DROP its mode
  op->outOfRange = VKDML_OUT_OF_RANGE_MODE_ERROR;  // a serving engine wants to know
  return {};
}

Result BuildPagedGather(const VKDML_PAGED_GATHER_OPERATOR_DESC& desc, OperatorImpl* op) {
  VKDML_TRY(CheckLayout(desc.Layout, desc.Format));
  Tensor input, table, starts, offsets, output;
  const bool hasOffsets = desc.TokenOffsetsTensor != nullptr;
  const bool lengths = desc.SequenceLengthsTensor != nullptr;
  if (lengths == (desc.SequenceStartsTensor != nullptr))
    return Fail(Status::InvalidArgument, "SequenceStartsTensor and SequenceLengthsTensor are ",
                lengths ? "both given" : "both null", ", expected exactly one of them");
  VKDML_TRY(ValidateTensor(desc.InputTensor, "InputTensor", TensorRole::Data, &input));
  VKDML_TRY(ValidateTensor(desc.BlockTableTensor, "BlockTableTensor", TensorRole::Indices, &table));
  VKDML_TRY(ValidateTensor(lengths ? desc.SequenceLengthsTensor : desc.SequenceStartsTensor,
                           lengths ? "SequenceLengthsTensor" : "SequenceStartsTensor",
                           TensorRole::Indices, &starts));
  if (hasOffsets)
    VKDML_TRY(ValidateTensor(desc.TokenOffsetsTensor, "TokenOffsetsTensor", TensorRole::Indices,
                             &offsets));
  VKDML_TRY(ValidateTensor(desc.OutputTensor, "OutputTensor", TensorRole::Data, &output));
  Cache c;
  VKDML_TRY(CheckCache(input, desc.Layout, desc.Format, &c));
  VKDML_TRY(CheckRank(table, 2, "{sequences, max_blocks}"));
  const UINT sequences = table.sizes[0], maxBlocks = table.sizes[1];
  if (UINT64(maxBlocks) * c.blockSize > 0x7FFFFFFFu)
    return Fail(Status::InvalidArgument, "BlockTableTensor.Sizes[1] is ", maxBlocks,
                ": max_blocks * block_size (", UINT64(maxBlocks) * c.blockSize,
                ") positions of a sequence, expected at most 2147483647");
  if (sequences == 0xFFFFFFFFu)
    return Fail(Status::InvalidArgument,
                "BlockTableTensor.Sizes[0] is 4294967295, expected less "
                "(SequenceStartsTensor holds one more)");
  if (lengths)
    VKDML_TRY(CheckList(starts, sequences, "BlockTableTensor.Sizes[0]", table));
  else
    VKDML_TRY(CheckList(starts, sequences + 1,
                        "sequences + 1: BlockTableTensor.Sizes[0] plus the last sequence's end",
                        table));
  if (hasOffsets) VKDML_TRY(CheckList(offsets, sequences, "BlockTableTensor.Sizes[0]", table));
  if (output.dims != 3)
    return Fail(Status::InvalidArgument, "OutputTensor.DimensionCount is ", output.dims,
                ", expected 3 ({total_tokens, heads, head_size})");
  const UINT total = output.sizes[0];
  VKDML_TRY(CheckValueRows(output, total, "total_tokens: any", c, input, desc.Format));
  VKDML_TRY(CheckNoOverlap(output));

  Pass bound;  // the sequences' starts, clamped into [0, total_tokens] (or their lengths, summed)
  bound.kind = Pass::Kind::PagedStarts;
  bound.plan.AddDim(lengths ? sequences : sequences + 1, 0, 0, starts.strides[0], 0);
  Pass offset;  // their token offsets
  offset.kind = Pass::Kind::PagedOffsets;
  if (hasOffsets) offset.plan.AddDim(sequences, 0, 0, offsets.strides[0], 0);
  // Each output token's row in the cache, into the scratch (the sequences' bisection and the
  // block table's read, once a token).
  Pass rows;
  rows.kind = Pass::Kind::PagedRows;
  rows.plan.AddDim(total, 0, 0, 0, 0);
  AddGeometry(rows.plan, c);
  AddTable(rows.plan, table);
  // The values: a group of 16 bytes of output values an invocation, as the write's (direct
  // offsets in OutputTensor's elements, indexed in the cache's bytes: the head's row; the kernel
  // places the group from its token's row).
  Pass gather;
  gather.kind = Pass::Kind::PagedGather;
  gather.plan.AddDim(total, output.strides[0], 0, 0, 0);
  gather.plan.AddDim(c.heads, output.strides[1], c.headStride, 0, 0);
  const UINT group = GroupValues(output.elemSize, c.headSize);
  gather.plan.AddDim(c.headSize / group, group, 0, 0, 0);
  AddGeometry(gather.plan, c);
  AddTable(gather.plan, table);  // (the fused gather finds the rows itself)
  op->inputs = {input, table, starts};
  if (hasOffsets) op->inputs.push_back(offsets);
  op->outputs = {output};
  op->passes = {bound};
  if (hasOffsets) op->passes.push_back(offset);
  op->passes.push_back(rows);
  op->passes.push_back(gather);
  op->componentSizes = {c.blocks};
  op->format = desc.Format;
  op->paged = true;
  op->sequenceLengths = lengths;
  op->outOfRange = VKDML_OUT_OF_RANGE_MODE_ERROR;  // a serving engine wants to know
  return {};
}

}  // namespace vkdml::detail
