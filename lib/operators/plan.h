// The kernel plan every operator lowers to: an indexed copy over up to 8 loop dimensions.
//
// For each element of the loop space, with coordinates c:
//   direct   = sum c[d] * direct[d]        (gather: OutputTensor, scatter: UpdatesTensor)
//   indexed  = sum c[d] * indexed[d]       (gather: InputTensor,  scatter: OutputTensor)
//            + sum_j clamp(indices[sum c[d] * indices[d] + j * componentStride]) * tupleStride[j]
//   gather:  out[direct]  = in[indexed];   scatter: out[indexed] = updates[direct]
// A plan with tuple == 0 is a strided copy (ScatterND's first pass).
#pragma once

#include "operators/tensor.h"

namespace vkdml::detail {

struct Plan {
  UINT rank = 0;
  UINT sizes[kMaxDims] = {};
  UINT direct[kMaxDims] = {};
  UINT indexed[kMaxDims] = {};
  UINT indices[kMaxDims] = {};      // IndicesTensor strides, 0 on slice dimensions
  UINT position[kMaxDims] = {};     // row-major element position in IndicesTensor (checked mode)
  UINT tuple = 0;                   // index components per loop element
  UINT tupleSize[kMaxDims] = {};    // size n of the dimension component j indexes
  UINT tupleStride[kMaxDims] = {};  // indexed-side stride of that dimension
  UINT componentStride = 0;         // IndicesTensor stride between components
  UINT64 count = 1;                 // loop elements (2^32 or more only for large tensors)

  void AddDim(UINT size, UINT directStride, UINT indexedStride, UINT indicesStride,
              UINT positionStride);
  void AddComponent(UINT size, UINT stride);
  // Drops size-1 dimensions and merges neighbours that are contiguous on every side.
  void Simplify();
  // The same copy done in vecBytes units (e.g. 16 for uvec4) when the innermost dimension is a
  // contiguous run on both sides whose length and every stride are whole vectors.
  bool Widen(UINT elemSize, UINT vecBytes, Plan* out) const;
  // The same gather walked in stripes of the innermost dimension, outermost, when each element
  // has its own index into an outer dimension (GatherElements off the last axis): a stripe's
  // rows of the input then stay in cache, and each memory sector fetched serves many elements
  // instead of one. False when that does not apply or the stripe's working set is too large.
  bool Stripe(UINT elemSize, Plan* out) const;
  // Whether a scatter can be done one output line at a time in shared memory
  // (glsl/scatter_lines.comp), and (unless anyShape) is better so. The caller guarantees the
  // shape: the last dimension walks the updates of one line (indexed stride 0; the one index
  // component addresses the line) and the dimensions before it name disjoint lines. It can when
  // that survived Simplify and the line fits in maxLineBytes of shared memory; it is better when
  // the line is at least a workgroup wide, there are enough lines to fill a GPU, and a line's
  // updates cover enough of it that rewriting the whole line beats writing each update alone.
  bool Lines(UINT elemSize, UINT64 maxLineBytes, bool anyShape) const;
  // The parts of that: the shape survived Simplify (one index component, a last dimension that
  // walks one line), and rewriting whole lines pays.
  bool LineShaped() const;
  bool LinesPay() const;
};

}  // namespace vkdml::detail
