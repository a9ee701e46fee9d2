// A validated operator, lowered to passes of the indexed-copy kernel (plan.h); kernels.h then
// chooses the kernels that run them.
#pragma once

#include <string>
#include <vector>

#include "interface.h"
#include "operators/plan.h"

namespace vkdml::detail {

struct Pass {
  // Mark: set the mask bit of each plan element's indexed offset (glsl/indexed.comp, MARK).
  // kernel choice (kernels.h) adds the kinds a scatter with a reduction or a deterministic one runs
  // instead of its Scatter pass: Reduce (glsl/scatter_reduce.comp), Keys, Sort
  // (glsl/radix_sort.comp), Ordered (glsl/scatter_ordered.comp) and Ties (glsl/scatter_ties.comp).
  // Dequantize: a gather of quantized rows (glsl/dequantize_rows.comp); its plan walks the
  // output's rows and, innermost, each row's groups of 4 values (direct stride 4), its one index
  // component addressing a row (tupleStride: the row stride in bytes).
  // Claim and Quantize: a quantizing scatter of rows (glsl/quantize_rows.comp). Claim walks the
  // update rows, each setting its target row's claim (the scratch's tally word) to the latest
  // position that names it; Quantize walks the update rows and, innermost, their blocks (direct
  // stride 32 values, indexed stride a block's bytes), and the claiming row's invocations
  // quantize and store the block.
  // Bounds, Weights and Bag: an embedding bag (glsl/embedding_bag.comp). Bounds walks the bags
  // plus one (indices stride: OffsetsTensor's), clamping each bound into the scratch's bounds,
  // its one index component addressing the entries (tupleSize: IndicesTensor's entries);
  // Weights walks the entries (indices stride: PerSampleWeightsTensor's) into the scratch's
  // weights as float32; Bag walks the output's bags (position stride 1: the bag) and,
  // innermost, each row's groups of 4 values (indexed stride 4: the group's first value), its
  // one index component addressing a table row (tupleStride: the row stride in bytes) and
  // componentStride IndicesTensor's stride between entries.
  // Scales, ZeroPoints and Blocks: a block-quantized gather (glsl/dequantize_blocks.comp). Scales
  // walks ScaleTensor (direct: the block's number in row-major order; indexed: its element) into
  // the scratch's blocks, with each type's zero point; ZeroPoints walks ScaleTensor's sizes over
  // ZeroPointTensor (indexed: its value's number, 4-bit values counted in nibbles), storing each
  // block's zero point; Blocks is DML_OPERATOR_GATHER's pass over InputTensor's values (indexed:
  // a value's row-major number).
  // MoeKeys to MoeRows: a MoE permute (glsl/moe.comp; kernel choice adds the sort between
  // MoeKeys and the others), MoeWeights and MoeUnpermute a MoE unpermute; `output` says which of
  // the operator's outputs each writes (bound at VKDML_BIND_OUTPUT).
  // PagedClaim, PagedWrite, PagedStarts, PagedOffsets, PagedRows and PagedGather: the paged
  // cache's write
  // and gather (glsl/paged.comp; operators/paged_cache.cpp says what their plans hold).
  // Segment and SegmentCheck: a segment reduction (glsl/segment_reduce.comp; operators/
  // segment_reduce.cpp says what their plans walk).
  enum class Kind {
    Gather,
    Scatter,
    Mark,
    Reduce,
    Keys,
    Sort,
    Ordered,
    Ties,
    Dequantize,
    Claim,
    Quantize,
    Bounds,
    Weights,
    Bag,
    Scales,
    ZeroPoints,
    Blocks,
    MoeKeys,
    MoePermutation,
    MoeInverse,
    MoeOffsets,
    MoeRows,
    MoeWeights,
    MoeUnpermute,
    PagedClaim,
    PagedWrite,
    PagedStarts,
    PagedOffsets,
    PagedRows,
    PagedGather,
    Segment,
    SegmentCheck
  } kind = Kind::Gather;
  Plan plan;                 // as lowered: kernel choice transforms it
  bool skipInPlace = false;  // a scatter's copy: nothing to do when OutputTensor is InputTensor
  bool maskSkip = false;     // skip elements whose mask bit (at their `indices` offset) is set
  bool lines = false;        // a scatter shaped for Plan::Lines (ScatterElements)
  UINT output = 0;           // the output it writes (a MoE permute's four)
};

class OperatorImpl final : public Operator {
 public:
  DML_OPERATOR_TYPE type = DML_OPERATOR_INVALID;
  DML_OPERATOR_TYPE base = DML_OPERATOR_INVALID;  // the operator VKDML_OPERATOR_OUT_OF_RANGE wraps
  const char* name = "";
  // InputTensor, IndicesTensor[, UpdatesTensor] (an embedding bag: InputTensor, IndicesTensor,
  // OffsetsTensor[, PerSampleWeightsTensor])
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;  // OutputTensor
  std::vector<Pass> passes;
  // What each index component indexes, for checked-mode messages: component j of an index
  // tuple (j = position % tuple) has valid values for a dimension of size componentSizes[j].
  std::vector<UINT> componentSizes;
  UINT64 maskWords = 0;  // 32-bit words of the mask a Mark pass sets (0: no mask)
  // Scatters: the reduction, and what a deterministic execution sorts. An update unit is
  // `unit` consecutive elements of the Scatter pass's loop (ScatterND: an index tuple's slice;
  // ScatterElements: one element); `keys` loops over the units in IndicesTensor's row-major
  // order, its indexed offset being the unit's target slot, one of `slots`.
  VKDML_REDUCE_FUNCTION reduce = VKDML_REDUCE_FUNCTION_NONE;
  Plan keys;
  // Every OutputTensor element (direct offsets) with its slot (`indices` offsets): a scatter
  // mean divides each by its slot's count.
  Plan slotWalk;
  UINT unit = 1;
  UINT64 slots = 0;
  // What an out-of-range index component does (VKDML_OPERATOR_OUT_OF_RANGE), and FILL's value:
  // its element's bytes repeated over 16 bytes, so a kernel moving uvec4s reads it too.
  VKDML_OUT_OF_RANGE_MODE outOfRange = VKDML_OUT_OF_RANGE_MODE_CLAMP;
  shader::uvec4 fill = {};
  // ExcludeSelf: the targets are first set to the reduction's identity, held in `fill` (a
  // scatter has no FILL value of its own).
  bool excludeSelf = false;
  // VKDML_REDUCE_FUNCTION_MEAN: `reduce` is ADD, the sum; kernel choice then counts each
  // target's updates and divides (kernel_mean.cpp).
  bool mean = false;
  // VKDML_OPERATOR_GATHER_QUANTIZED_ROWS and _SCATTER_: the table's block layout.
  VKDML_QUANTIZED_FORMAT format = VKDML_QUANTIZED_FORMAT(0);
  // VKDML_OPERATOR_EMBEDDING_BAG (bag): its mode and options as the kernel takes them
  // (interface.h: VKDML_BAG_* in PackedPlan::params, but FILL, which VKDML_OPERATOR_OUT_OF_RANGE
  // sets), its padding row (VKDML_NO_PADDING: none), a row's values, and IndicesTensor's
  // entries.
  bool bag = false;
  VKDML_EMBEDDING_BAG_MODE bagMode = VKDML_EMBEDDING_BAG_MODE_SUM;
  UINT bagFlags = 0, padding = VKDML_NO_PADDING, width = 0, entries = 0;
  // VKDML_OPERATOR_GATHER_BLOCK_QUANTIZED: its value type, the kernels' PackedPlan::params (the
  // values after QuantizeAxis, along it, its blocks, BlockSize) and the blocks (ScaleTensor's
  // elements).
  VKDML_BLOCK_QUANTIZED_TYPE blockType = VKDML_BLOCK_QUANTIZED_TYPE(0);
  shader::uvec4 blockParams = {};
  UINT64 blocks = 0;
  // VKDML_OPERATOR_MOE_PERMUTE and _UNPERMUTE: ExpertCount (permute), k and the tokens; `width`
  // holds a row's values.
  bool moe = false;
  UINT experts = 0, topk = 0, tokens = 0;
  // VKDML_OPERATOR_PAGED_CACHE_WRITE and _GATHER (format: the cache's blocks, 0 for values);
  // a gather given SequenceLengthsTensor (its PagedStarts pass sums them).
  bool paged = false, sequenceLengths = false;
  // VKDML_OPERATOR_SEGMENT_REDUCE: its function, and its passes' PackedPlan::params (the fold's,
  // then the check's: glsl/segment_reduce.comp); `fill` holds an empty segment's value and the
  // fold's start.
  bool segment = false;
  VKDML_SEGMENT_REDUCE_FUNCTION segmentReduce = VKDML_SEGMENT_REDUCE_FUNCTION_SUM;
  shader::uvec4 segmentParams[2] = {};
  // FILL or DROP: an element whose index tuple is out of range is filled or skipped.
  bool Drops() const {
    return outOfRange == VKDML_OUT_OF_RANGE_MODE_FILL || outOfRange == VKDML_OUT_OF_RANGE_MODE_DROP;
  }
  // A scatter: OutputTensor may be bound exactly where InputTensor is (in place).
  bool InPlaceAllowed() const { return IsScatter(); }
  bool IsScatter() const { return slots != 0; }

  const Tensor& Indices() const { return inputs[1]; }
  UINT ElemSize() const { return inputs[0].elemSize; }

  DML_OPERATOR_TYPE Type() const override { return type; }
  UINT InputCount() const override { return UINT(inputs.size()); }
  UINT OutputCount() const override { return UINT(outputs.size()); }
  UINT64 InputSize(UINT i) const override { return i < inputs.size() ? inputs[i].totalBytes : 0; }
  UINT64 OutputSize(UINT i) const override {
    return i < outputs.size() ? outputs[i].totalBytes : 0;
  }
};

// The tensors every operator has, validated in binding order, with the checks they all share:
// IndicesTensor, UpdatesTensor (scatters only: hasUpdates) and OutputTensor have InputTensor's
// DimensionCount, UpdatesTensor and OutputTensor its DataType, and no two OutputTensor elements
// share an address.
struct OperatorTensors {
  Tensor input, indices, updates, output;
};
Result ValidateOperatorTensors(const DML_TENSOR_DESC* input, const DML_TENSOR_DESC* indices,
                               bool hasUpdates, const DML_TENSOR_DESC* updates,
                               const DML_TENSOR_DESC* output, OperatorTensors* out);

// Whether vkdml implements operators of `type`; the list of those it does, for messages.
bool KnownOperatorType(DML_OPERATOR_TYPE type);
const char* OperatorTypeList();

// Each validates its descriptor (messages without the operator-name prefix) and fills op.
Result BuildGather(const DML_GATHER_OPERATOR_DESC& desc, OperatorImpl* op);
Result BuildGatherElements(const DML_GATHER_ELEMENTS_OPERATOR_DESC& desc, OperatorImpl* op);
Result BuildGatherND(const DML_GATHER_ND1_OPERATOR_DESC& desc, bool hasBatch, OperatorImpl* op);
Result BuildScatterND(const DML_SCATTER_ND_OPERATOR_DESC& desc, VKDML_REDUCE_FUNCTION reduce,
                      OperatorImpl* op);
Result BuildScatterElements(const DML_SCATTER_OPERATOR_DESC& desc, VKDML_REDUCE_FUNCTION reduce,
                            OperatorImpl* op);

// A quantized format's block: its bytes (0 for an unknown format) and its name ("Q8_0").
UINT QuantizedBlockBytes(VKDML_QUANTIZED_FORMAT format);
const char* QuantizedFormatName(VKDML_QUANTIZED_FORMAT format);
Result CheckQuantizedFormat(VKDML_QUANTIZED_FORMAT format);
// A quantized table (InputTensor): UINT8 {1, ..., 1, rows, bytes per row} of whole blocks, its
// bytes in a row consecutive.
Result CheckQuantizedTable(const Tensor& input, VKDML_QUANTIZED_FORMAT format);
// t's last stride is 1 (`why` says what needs it).
Result CheckLastStride(const Tensor& t, const char* why);
Result BuildGatherQuantizedRows(const VKDML_GATHER_QUANTIZED_ROWS_OPERATOR_DESC& desc,
                                OperatorImpl* op);
Result BuildScatterQuantizedRows(const VKDML_SCATTER_QUANTIZED_ROWS_OPERATOR_DESC& desc,
                                 OperatorImpl* op);

Result BuildEmbeddingBag(const VKDML_EMBEDDING_BAG_OPERATOR_DESC& desc, OperatorImpl* op);

Result BuildSegmentReduce(const VKDML_SEGMENT_REDUCE_OPERATOR_DESC& desc, OperatorImpl* op);

// DML_OPERATOR_GATHER's checks of Axis, IndexDimensions and OutputTensor's sizes, and its pass,
// over validated tensors (VKDML_OPERATOR_GATHER_BLOCK_QUANTIZED's input: its values).
Result LowerGather(const Tensor& input, const Tensor& indices, const Tensor& output, UINT axis,
                   UINT m, Pass* result);
Result BuildGatherBlockQuantized(const VKDML_GATHER_BLOCK_QUANTIZED_OPERATOR_DESC& desc,
                                 OperatorImpl* op);
// A block-quantized type: whether its values are 4-bit, and its zero point without a
// ZeroPointTensor.
bool FourBit(VKDML_BLOCK_QUANTIZED_TYPE type);
UINT BlockZeroPoint(VKDML_BLOCK_QUANTIZED_TYPE type);

Result BuildMoePermute(const VKDML_MOE_PERMUTE_OPERATOR_DESC& desc, OperatorImpl* op);
Result BuildMoeUnpermute(const VKDML_MOE_UNPERMUTE_OPERATOR_DESC& desc, OperatorImpl* op);
// VKDML_OPERATOR_PAGED_CACHE_WRITE and VKDML_OPERATOR_PAGED_GATHER (paged_cache.cpp).
Result BuildPagedCacheWrite(const VKDML_PAGED_CACHE_WRITE_OPERATOR_DESC& desc, OperatorImpl* op);
Result BuildPagedGather(const VKDML_PAGED_GATHER_OPERATOR_DESC& desc, OperatorImpl* op);

// Dispatches on desc.Type, adds the "GATHER_ND: " prefix to messages.
Result BuildOperator(const DML_OPERATOR_DESC& desc, OperatorImpl* op);

}  // namespace vkdml::detail
