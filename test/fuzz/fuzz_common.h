// What the fuzz target's decoders share (fuzz_operator.cpp: DirectML's operators and vkdml's
// scatter reductions; fuzz_quantized.cpp: vkdml's quantized rows; fuzz_bag.cpp: its embedding
// bags; fuzz_blocks.cpp: its block-quantized gather): the device, the decoder of an input's bytes,
// tensor layouts and images, and the checks every run makes.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "op_spec.h"
#include "vkdml/vkdml.h"

namespace fz {

using namespace vkdml;

// A crash: the message, then abort (libFuzzer keeps the input).
[[noreturn]] void Die(const std::string& what);

// The device the tests use (lavapipe), with the validation layer, every message a crash.
Device& Dev();
// Counts an input; the Device keeps every pipeline it has made (one per module and
// specialization), and lavapipe holds each one's compiled code: thousands of inputs would pass
// libFuzzer's 2 GiB limit, so a fresh Device every 500 inputs.
void NextInput();

// Bytes of the input, read in order; past the end, zeros.
struct Decoder {
  const uint8_t* p;
  size_t n, at = 0;
  uint8_t Byte() { return at < n ? p[at++] : 0; }
  UINT In(UINT lo, UINT hi) { return lo + Byte() % (hi - lo + 1); }  // inclusive, small ranges
  UINT Raw32() {
    UINT v = 0;
    for (int i = 0; i < 4; ++i) v = v << 8 | Byte();
    return v;
  }
};

extern const DML_TENSOR_DATA_TYPE kData[11];  // every data type
extern const DML_TENSOR_DATA_TYPE kIndex[4];  // every index type

// A tensor's strides and TotalTensorSizeInBytes from the decoder: packed, padded, or (inputs)
// broadcast along some dimensions; plus a few spare bytes and perhaps an alignment.
vt::TensorDesc Layout(Decoder& d, DML_TENSOR_DATA_TYPE type, const std::vector<UINT>& sizes,
                      bool output);
// An input image: its bytes from the decoder (repeated), indices as values near their range.
vt::Bytes Image(Decoder& d, const vt::TensorDesc& t, bool indices, UINT bound);

// How far the inputs got, printed at exit (.ci/fuzz.sh reports it).
struct Stats {
  uint64_t inputs = 0, refused = 0, ran = 0, checkedOutOfRange = 0, folds = 0, orderDecides = 0;
  uint64_t nanResults = 0;  // float sums and products whose NaN result's bits went unchecked
  uint64_t quantizedRows = 0, quantizingScatters = 0, bags = 0, blockGathers = 0;  // of `ran`
  uint64_t moe = 0;       // of `ran`: MoE permutes and unpermutes
  uint64_t segments = 0;  // of `ran`: segment reductions
  uint64_t paged = 0;     // of `ran`: paged cache writes and gathers
  ~Stats();
};
extern Stats gStats;

// Creates and compiles `desc`: false (counted) where vkdml refuses it as it must, with
// InvalidArgument or Unsupported and a message of one line.
bool Prepare(const DML_OPERATOR_DESC& desc, UINT flags, std::unique_ptr<CompiledOperator>* out);
// Raw mode: one size of one of `tensors` set from the input, 0 to `most` (each keeps its
// TotalTensorSizeInBytes: validation refuses a size past it).
void RawSize(Decoder& d, std::initializer_list<vt::TensorDesc*> tensors, UINT most);
// Raw mode's run: accepted raw fields must run (or meet an out-of-range index), whatever they
// compute; else a crash naming `what`.
void CheckRawRun(const Result& r, const std::string& what);
// A checked run must report the reference's first out-of-range index; any other run succeeds.
void CheckStatus(const Result& r, bool checked, const ref::IndexError& err);
// Every output byte, padding included, as the reference has it: else a crash naming the first
// that differs and `what` ran.
void CheckOutput(const vt::Bytes& got, const vt::Bytes& expected, const std::string& what);

// fuzz_quantized.cpp: an input whose first byte is 0xE0 or more (one in eight).
int RunQuantizedRows(Decoder& d);
// fuzz_bag.cpp: an input whose first byte is 0xD0 to 0xDF (one in sixteen).
int RunEmbeddingBag(Decoder& d);
// fuzz_segment.cpp: an input whose first byte is 0xB8 to 0xBF (one in 32).
int RunSegment(Decoder& d);
// fuzz_blocks.cpp: an input whose first byte is 0xC8 to 0xCF (one in thirty-two).
int RunBlockQuantized(Decoder& d);
// fuzz_moe.cpp: an input whose first byte is 0xC4 to 0xC7 (one in sixty-four).
int RunMoe(Decoder& d);
// fuzz_paged.cpp: an input whose first byte is 0xC0 to 0xC3 (one in sixty-four).
int RunPaged(Decoder& d);

}  // namespace fz
