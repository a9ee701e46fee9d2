// Shared by every vkdml kernel: the plan layout (lib/compiled.cpp writes it, std140), the
// bindings (lib/operator.h) and index clamping.

struct Plan {
  uvec4 head;            // x: rank, y: tuple size k, z: flags, w: loop element count
  uvec4 sizes[2];        // loop dimension sizes, outermost first
  uvec4 direct[2];       // strides on the direct side (gather: output, scatter: updates)
  uvec4 indexed[2];      // strides on the indexed side (gather: input, scatter: output)
  uvec4 indices[2];      // IndicesTensor strides
  uvec4 position[2];     // row-major position in IndicesTensor (checked mode)
  uvec4 tupleSize[2];    // size of the dimension index component j addresses
  uvec4 tupleStride[2];  // indexed-side stride of that dimension
  uvec4 extra;           // x: IndicesTensor stride between tuple components
};

const uint kFlagSigned = 1u;  // INT32 / INT64 indices
const uint kFlagIndex64 = 2u; // 64-bit indices: two 32-bit words, low word first

layout(std140, set = 0, binding = 0) uniform Plans { Plan plans[5]; };
layout(std430, set = 0, binding = 2) readonly buffer Indices { uint indexWords[]; };
layout(std430, set = 0, binding = 5) buffer Status { uint status[4]; };  // position, lo, hi

layout(push_constant) uniform Push {
  uint plan;       // which of plans[] this dispatch runs
  uint srcBase;    // element offset of the source binding within its descriptor range
  uint indexBase;  // 32-bit word offset of IndicesTensor
  uint dstBase;    // element offset of the destination binding
} pc;

#define AT(array, i) array[(i) >> 2][(i) & 3u]

// Reads index element `element` as two 32-bit words (lo, hi), sign- or zero-extending 32-bit ones.
uvec2 readIndex(uint element, uint flags) {
  if ((flags & kFlagIndex64) != 0u) {
    uint w = pc.indexBase + 2u * element;
    return uvec2(indexWords[w], indexWords[w + 1u]);
  }
  uint lo = indexWords[pc.indexBase + element];
  bool negative = (flags & kFlagSigned) != 0u && int(lo) < 0;
  return uvec2(lo, negative ? 0xFFFFFFFFu : 0u);
}
