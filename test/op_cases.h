// Operators of every kind with small random tensors and their expected outputs (the CPU
// reference), for tests that run many operators at once (threads, pipeline caches).
#pragma once

#include <vector>

#include "test_util.h"

namespace vt {

struct OpCase {
  OpSpec spec;
  std::vector<Bytes> inputs;  // in binding order, TotalTensorSizeInBytes each
  Bytes expected;             // the output, from a poisoned start
  UINT flags = DML_EXECUTION_FLAG_NONE;
};

// kOpKinds operators: 0 GatherElements, 1 GatherND, 2 Gather, 3 ScatterND (distinct rows),
// 4 ScatterElements (a permutation per row, checked mode), 5 a deterministic ScatterElements
// ADD on INT32 (duplicates), 6 GatherND1 (a batch dimension), 7 ScatterND MAX on INT32.
constexpr int kOpKinds = 8;
OpCase MakeOpCase(int kind, Rng& rng);

// Device::Run of c's operator compiled on `device`: empty if its output matches, else what
// went wrong.
std::string RunOpCase(Device& device, OpCase& c);

}  // namespace vt
