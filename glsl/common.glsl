// Shared by every vkdml kernel: the plan layout (lib/compiled.cpp writes it, std140), the
// bindings (lib/operator.h) and the push constants.

struct Plan {
  uvec4 head;            // x: rank, y: tuple size k, z: flags, w: loop element count
  uvec4 sizes[2];        // loop dimension sizes, outermost first
  uvec4 magic[2];        // sizes[d] as a multiply-shift divisor (lib/plan.cpp: Magic)
  uvec4 shift[2];
  uvec4 direct[2];       // strides on the direct side (gather: output, scatter: updates)
  uvec4 indexed[2];      // strides on the indexed side (gather: input, scatter: output)
  uvec4 indices[2];      // IndicesTensor strides
  uvec4 position[2];     // row-major position in IndicesTensor (checked mode)
  uvec4 tupleSize[2];    // size of the dimension index component j addresses
  uvec4 tupleStride[2];  // indexed-side stride of that dimension
  uvec4 extra;           // x: IndicesTensor stride between tuple components
};

const uint kFlagSigned = 1u;   // INT32 / INT64 indices
const uint kFlagIndex64 = 2u;  // 64-bit indices

layout(std140, set = 0, binding = 0) uniform Plans { Plan plans[7]; };  // lib/compiled.cpp: kPlanSlots
layout(std430, set = 0, binding = 5) restrict buffer Status { uint status[4]; };

layout(push_constant) uniform Push {
  uint plan;       // which of plans[] this dispatch runs
  uint srcBase;    // element offset of the source binding within its descriptor range
  uint indexBase;  // index-element offset of IndicesTensor
  uint dstBase;    // element offset of the destination binding
} pc;

#define AT(array, i) array[(i) >> 2][(i) & 3u]

// n / plans[p].sizes[d] as a multiply and shifts (lib/compiled.cpp: Magic).
uint divideBySize(uint p, uint d, uint n) {
  uint hi, lo;
  umulExtended(n, AT(plans[p].magic, d), hi, lo);
  uint l = AT(plans[p].shift, d);
  return (hi + ((n - hi) >> min(l, 1u))) >> (max(l, 1u) - 1u);
}

// Offsets of element i of the loop space of plans[p]'s first `rank` dimensions: on the direct
// side, on the indexed side (before index components), in IndicesTensor, and its row-major
// position there (checked mode).
uvec4 loopOffsets(uint p, uint rank, uint i) {
  uint rest = i;
  uvec4 at = uvec4(0u);
  for (int d = int(rank) - 1; d >= 0; --d) {
    uint c = rest;
    if (d > 0) {  // dimension 0 takes the rest
      uint q = divideBySize(p, uint(d), rest);
      c = rest - q * AT(plans[p].sizes, d);
      rest = q;
    }
    at += c * uvec4(AT(plans[p].direct, d), AT(plans[p].indexed, d), AT(plans[p].indices, d),
                    AT(plans[p].position, d));
  }
  return at;
}
