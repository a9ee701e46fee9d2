// The cases of `vkdml bench`: their shapes and peers (MakeSpecs), their DirectML descriptors,
// random host data, the CPU reference that checks a sample of each output, and the minimum
// bytes each must move (BENCH.md's formulas).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vkdml/vkdml.h"

#include "bench_util.h"

namespace bench {

enum class OpKind {
  GatherND,
  GatherElements,
  ScatterND,
  ScatterElements,
  GatherQuantized,       // VKDML_OPERATOR_GATHER_QUANTIZED_ROWS
  ScatterQuantized,      // VKDML_OPERATOR_SCATTER_QUANTIZED_ROWS, in place
  EmbeddingBag,          // VKDML_OPERATOR_EMBEDDING_BAG
  GatherBlockQuantized,  // VKDML_OPERATOR_GATHER_BLOCK_QUANTIZED: rows, ONNX Runtime's uint8
  MoePermute,            // VKDML_OPERATOR_MOE_PERMUTE
  MoeUnpermute,          // VKDML_OPERATOR_MOE_UNPERMUTE
  PagedWrite,            // VKDML_OPERATOR_PAGED_CACHE_WRITE, NHD, in place
  PagedGather,           // VKDML_OPERATOR_PAGED_GATHER, NHD
  Segment,               // VKDML_OPERATOR_SEGMENT_REDUCE: rows of {rows, width} into segments
};

struct Spec {
  std::string name;
  OpKind kind = OpKind::GatherND;
  vkdml::DML_TENSOR_DATA_TYPE dtype = vkdml::DML_TENSOR_DATA_TYPE_FLOAT32;
  vkdml::DML_TENSOR_DATA_TYPE itype = vkdml::DML_TENSOR_DATA_TYPE_INT64;
  std::vector<uint32_t> input, indices, updates;  // actual shapes (updates: scatters only)
  int axis = -1;                                  // GatherElements, ScatterElements
  bool inPlace = false;                           // scatters: output bound to the input
  bool uniqueRows = false;                        // ScatterND: a permutation prefix
  // Scatters with a reduction (vkdml's VKDML_OPERATOR_SCATTER_*_REDUCE), deterministic or not.
  vkdml::VKDML_REDUCE_FUNCTION reduce = vkdml::VKDML_REDUCE_FUNCTION_NONE;
  bool deterministic = false;
  bool latency = false;
  bool diagnostic = false;  // runs only when named: evidence for what limits a case
  bool ties = false;        // every update a zero of random sign, every input element negative
  // Wrapped in VKDML_OPERATOR_OUT_OF_RANGE (FILL or DROP; the indices stay in range, so the
  // output is the clamp case's and the time is the mode's own cost).
  vkdml::VKDML_OUT_OF_RANGE_MODE outOfRange = vkdml::VKDML_OUT_OF_RANGE_MODE_CLAMP;
  // Quantized tables (GatherQuantized, ScatterQuantized): input is the UINT8 table {rows, bytes
  // per row} of `format`'s blocks, `width` values a row; dtype is the values' type (float32).
  vkdml::VKDML_QUANTIZED_FORMAT format = vkdml::VKDML_QUANTIZED_FORMAT(0);
  uint32_t width = 0;
  // EmbeddingBag: input {rows, width} of dtype, indices {entries}, bags of `bagSize` entries
  // each (offsets 0, bagSize, ...).
  vkdml::VKDML_EMBEDDING_BAG_MODE bagMode = vkdml::VKDML_EMBEDDING_BAG_MODE_SUM;
  uint32_t bagSize = 0;
  // GatherBlockQuantized: input the uint8 data {rows, width / 2} (ONNX Runtime's uint8 with
  // bits 4), float16 scales {rows, width / blockSize} (dtype: the output's), zero points
  // {rows, width / blockSize / 2}; rows gathered on axis 0 by indices {picks}.
  uint32_t blockSize = 0;
  // MoePermute: input x {tokens, width}, indices the top-k ids {tokens, k} (distinct experts
  // of `experts` a token); the rows out, then the offsets, permutation and inverse (INT32).
  // MoeUnpermute: input y {tokens * k, width}, indices the inverse {tokens, k} (a permutation),
  // updates the weights {tokens, k} of dtype; out {tokens, width}.
  uint32_t experts = 0;
  // PagedWrite: input the cache {blocks, block_size, heads, head_size} of dtype, indices the slot
  // mapping {tokens} (unique slots), updates {tokens, heads, head_size}. PagedGather: input the
  // cache, indices the block table {sequences, max_blocks} (a permutation of the blocks), every
  // sequence seqLen tokens (its cumulative lengths: HostData::offsets).
  uint32_t seqLen = 0;
  // Segment: input {rows, width}, `segments` segments of SegmentLengths' rows each (powerLaw or
  // not), given as offsets (indices {segments + 1}) or with sortedIds a segment id per row
  // (indices {rows}).
  vkdml::VKDML_SEGMENT_REDUCE_FUNCTION segmentReduce = vkdml::VKDML_SEGMENT_REDUCE_FUNCTION_SUM;
  uint32_t segments = 0;
  bool sortedIds = false, powerLaw = false;
  std::string peer;

  std::vector<uint32_t> Output() const;
  bool IsScatter() const {
    return kind == OpKind::ScatterND || kind == OpKind::ScatterElements ||
           kind == OpKind::ScatterQuantized || kind == OpKind::PagedWrite;
  }
  // The UINT8 table's type for quantized gathers and scatters, else dtype.
  vkdml::DML_TENSOR_DATA_TYPE InputType() const;
  // The output's: the table's for a quantizing scatter, else dtype.
  vkdml::DML_TENSOR_DATA_TYPE OutputType() const;
  uint64_t Bags() const { return bagSize ? indices[0] / bagSize : 0; }
  const char* OpName() const;
  const char* ReduceName() const;  // ONNX's names: none, add, mul, max, min
};

// Full sizes; `small` divides the big dimensions (all cases in well under a minute on lavapipe).
std::vector<Spec> MakeSpecs(bool small);

// "float32", "int64", ...: vkdml::DataTypeName in the lower case NumPy and torch use.
std::string TypeName(vkdml::DML_TENSOR_DATA_TYPE t);

// The DirectML descriptors of a case, right-aligned to one DimensionCount. Not movable: the
// descriptors point into it.
struct OpDesc {
  struct Tensor {
    std::vector<vkdml::UINT> sizes;
    vkdml::DML_BUFFER_TENSOR_DESC buffer{};
    vkdml::DML_TENSOR_DESC desc{};
  };
  Tensor input, indices, updates, offsets, output;
  vkdml::DML_GATHER_ND_OPERATOR_DESC gnd{};
  vkdml::DML_GATHER_ELEMENTS_OPERATOR_DESC ge{};
  vkdml::DML_SCATTER_ND_OPERATOR_DESC snd{};
  vkdml::DML_SCATTER_OPERATOR_DESC se{};
  vkdml::VKDML_SCATTER_ND_REDUCE_OPERATOR_DESC sndr{};
  vkdml::VKDML_SCATTER_ELEMENTS_REDUCE_OPERATOR_DESC ser{};
  vkdml::VKDML_GATHER_QUANTIZED_ROWS_OPERATOR_DESC gqr{};
  vkdml::VKDML_SCATTER_QUANTIZED_ROWS_OPERATOR_DESC sqr{};
  vkdml::VKDML_EMBEDDING_BAG_OPERATOR_DESC bag{};
  Tensor scales, zeros;  // GatherBlockQuantized
  vkdml::VKDML_GATHER_BLOCK_QUANTIZED_OPERATOR_DESC gbq{};
  Tensor moeOffsets, moePerm, moeInv;  // MoePermute's outputs but the rows
  vkdml::VKDML_MOE_PERMUTE_OPERATOR_DESC mp{};
  vkdml::VKDML_MOE_UNPERMUTE_OPERATOR_DESC mu{};
  vkdml::VKDML_PAGED_CACHE_WRITE_OPERATOR_DESC pcw{};  // PagedWrite
  vkdml::VKDML_PAGED_GATHER_OPERATOR_DESC pg{};        // PagedGather (offsets: its starts)
  vkdml::VKDML_SEGMENT_REDUCE_OPERATOR_DESC seg{};
  vkdml::DML_OPERATOR_DESC inner{};  // op's operator where op wraps it (Spec::outOfRange)
  vkdml::VKDML_OUT_OF_RANGE_OPERATOR_DESC outOfRange{};
  vkdml::DML_OPERATOR_DESC op{};

  explicit OpDesc(const Spec& s);
  OpDesc(const OpDesc&) = delete;
  OpDesc& operator=(const OpDesc&) = delete;
};

// Host copies of a case's inputs (random, never zeros).
struct HostData {
  // offsets: EmbeddingBag's, PagedGather's starts; updates: MoE weights
  Bytes input, indices, updates, offsets;
  Bytes scales, zeros;   // GatherBlockQuantized
  uint64_t targets = 0;  // ScatterElements: distinct output elements that some update targets
};

void MakeHostData(const Spec& s, const OpDesc& d, HostData* h, uint64_t seed);

// Random non-zero finite values of elemSize bytes (the copy kernel's source uses it too).
void FillData(Bytes& b, size_t elemSize, uint64_t seed);

// Checks a sample of the output `out` against the CPU reference. Returns the number of
// mismatches; *checked is the sample size, *first describes the first mismatch.
uint64_t Verify(const Spec& s, const HostData& h, const uint8_t* out, uint64_t* checked,
                std::string* first);

// The same for vkdml's own operators (GatherQuantized, ScatterQuantized, EmbeddingBag,
// GatherBlockQuantized; bench_own.cpp): 20000 random output elements (quantizing scatters: table
// bytes, half of them in rows the updates write) against dml.h's definitions.
uint64_t VerifyOwn(const Spec& s, const HostData& h, const uint8_t* out, uint64_t* checked,
                   std::string* first);

// float16 bits as a float (exact: every float16 is a float).
float HalfToFloat(uint16_t h);
// A block's bytes in a quantized table (dml.h: VKDML_QUANTIZED_FORMAT).
uint32_t BlockBytes(vkdml::VKDML_QUANTIZED_FORMAT f);
// Index `pos` of an index tensor of type t as vkdml reads it for a dimension of n: clamped into
// [-n, n-1] (signed) or [0, n-1], negatives + n.
uint64_t LoadIndex(const uint8_t* base, vkdml::DML_TENSOR_DATA_TYPE t, uint64_t pos, uint64_t n);

// A Segment case's segment lengths (bench_torch.py makes the same): uniform, pairs of a
// hashed length in [1, 31] and 32 less it (16 on average); or powerLaw, 4 segments of
// segments * 2 rows spread among the others, which are pairs of [1, 15] and 16 less it.
std::vector<uint32_t> SegmentLengths(uint32_t segments, bool powerLaw);

// Minimum bytes a case must move (examples/bench/BENCH.md).
double MinBytes(const Spec& s, const HostData& h);

}  // namespace bench
