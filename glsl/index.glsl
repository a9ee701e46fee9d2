// IndicesTensor and what every kernel does with an index: read it (INDEX64 selects 64-bit
// loads), clamp it (or with kDrop mark its element dropped), and in checked mode record where an
// out-of-range one is. Needs common.glsl and the specialization constants kChecked, kSignedIndex
// and kDrop.

#if INDEX64
layout(std430, set = 0, binding = VKDML_BIND_INDICES) restrict readonly buffer Indices {
  uvec2 indexData[];
};
#else
layout(std430, set = 0, binding = VKDML_BIND_INDICES) restrict readonly buffer Indices {
  uint indexData[];
};
#endif

// Index element e as (lo, hi), sign- or zero-extended from 32 bits.
uvec2 readIndex(uint e) {
#if INDEX64
  return indexData[pc.indexBase + e];
#else
  uint lo = indexData[pc.indexBase + e];
  return uvec2(lo, kSignedIndex && int(lo) < 0 ? 0xFFFFFFFFu : 0u);
#endif
}

// clampIndex's result for an out-of-range index with kDrop: no index of a dimension (n < 2^32).
#define VKDML_DROPPED 0xFFFFFFFFu

#ifdef V
// What a gather writes for a dropped element (VKDML_OUT_OF_RANGE_MODE_FILL), as an element of
// the kernel (interface.h: the value's bytes repeat over the uvec4).
V fillElement() {
#if ELEM == 32
  const uint64_t low = packUint2x32(fillBytes.xy), high = packUint2x32(fillBytes.zw);
  return u64vec4(low, high, low, high);
#elif ELEM == 16
  return fillBytes;
#elif ELEM == 8
  return fillBytes.xy;
#else  // 1-, 2- and 4-byte stores keep the low bytes
  return fillBytes.x;
#endif
}
#endif

// Clamps (lo, hi) into [-n, n-1] (signed) or [0, n-1] (unsigned), then maps a negative value
// to value + n; with kDrop, an out-of-range one is VKDML_DROPPED instead. When checking, records
// the position of an out-of-range index.
uint clampIndex(uvec2 v, uint n, uint position) {
  bool negative = kSignedIndex && int(v.y) < 0;
  bool inRange;
  uint result;
  if (negative) {
    inRange = v.y == 0xFFFFFFFFu && v.x >= 0u - n;  // value >= -n
    result = inRange ? v.x + n : 0u;
  } else {
    inRange = v.y == 0u && v.x < n;
    result = inRange ? v.x : n - 1u;
  }
  if (kChecked && !inRange) atomicMin(STATUS(VKDML_STATUS_POSITION), position);
  return kDrop && !inRange ? VKDML_DROPPED : result;
}

#if LARGE
#include "wide.glsl"  // the indexed side's 64-bit offsets

// Loop element i of this dispatch's chunk (interface.h: LargePush) is element lpc.start + i of
// the plan's loop. A chunk is a run of one dimension's coordinates with the dimensions after it
// whole (lib/kernels/kernel_large.cpp), so its coordinates are the start's plus i's digits, with no
// carry, each below its size: 32 bits do. Returns its offsets on the direct side and in
// IndicesTensor, from their windows, modulo 2^32 (each window holds what the chunk touches), and
// its row-major position; `indexed` is the indexed side's 64-bit offset before index components.
uvec3 chunkOffsets(uint p, uint i, out uvec2 indexed) {
  uint rest = i, direct = 0u, indices = 0u, position = 0u;
  indexed = uvec2(0u);
  for (int d = int(kRank) - 1; d >= 0; --d) {
    const uint size = VKDML_AT(plans[p].sizes, d);
    uint digit = rest;
    if (d > 0) {  // dimension 0 takes the rest
      const uint q = divideBySize(p, uint(d), rest);
      digit = rest - q * size;
      rest = q;
    }
    const uint c = VKDML_AT(lpc.start, d) + digit;
    direct += c * VKDML_AT(plans[p].direct, d);
    indices += c * VKDML_AT(plans[p].indices, d);
    position += c * VKDML_AT(plans[p].position, d);
    indexed = add2x32(indexed, product2x32(c, VKDML_AT(plans[p].indexed, d)));
  }
  return uvec3(direct - lpc.directStart, indices - lpc.indicesStart, position);
}

// An indexed-side offset from its window where this dispatch owns it, else VKDML_NOT_OWNED.
uint ownedOffset(uvec2 indexed) {
  const bool owned = !less2x32(indexed, uvec2(lpc.indexedOwn[0], lpc.indexedOwn[1])) &&
                     less2x32(indexed, uvec2(lpc.indexedEnd[0], lpc.indexedEnd[1]));
  return owned ? indexed.x - lpc.indexedStart[0] : VKDML_NOT_OWNED;
}

// locate() on the large path: the direct side's and IndicesTensor's offsets from their windows;
// the indexed side's 64-bit offset taken only where this dispatch owns it, else the result's y
// is VKDML_NOT_OWNED. A dropped element (kDrop: an index component out of range) is no
// dispatch's: y is VKDML_NOT_OWNED and w is 1 (else 0).
uvec4 locate(uint p, uint i) {
  uvec2 indexed;
  const uvec3 at = chunkOffsets(p, i, indexed);
  bool dropped = false;
  for (uint j = 0u; j < kTuple; ++j) {
    const uint v = clampIndex(readIndex(at.y + j * plans[p].componentStride),
                              VKDML_AT(plans[p].tupleSize, j), at.z + j);
    dropped = dropped || (kDrop && v == VKDML_DROPPED);
    indexed = add2x32(indexed, product2x32(v, VKDML_AT(plans[p].tupleStride, j)));
  }
  return uvec4(at.x, dropped ? VKDML_NOT_OWNED : ownedOffset(indexed), at.y, dropped ? 1u : 0u);
}

// A scatter mean's count of the target locate() gave as `owned` (lib/kernels/kernel_mean.cpp):
// its word in the counts of the piece of OutputTensor that starts at element pc.begin.
uint tallyWord(uint owned) {
  return lpc.indexedStart[0] + owned - pc.begin;  // modulo 2^32: the word is below it
}
#else
// A scatter mean's count of target slot `slot` (glsl/indexed.comp, TALLY_PASS).
uint tallyWord(uint slot) {
  return slot;
}

// The indexed-side offset of a loop element of plans[p] whose loopOffsets are `at`: its
// index components read, clamped and applied; with kDrop, VKDML_NOT_OWNED where one is out of
// range (no offset: a tensor within one descriptor has fewer than 2^32 - 1 elements).
uint indexedOffset(uint p, uvec4 at) {
  uint indexed = at.y;
  bool dropped = false;
  for (uint j = 0u; j < kTuple; ++j) {
    const uint v = clampIndex(readIndex(at.z + j * plans[p].componentStride),
                              VKDML_AT(plans[p].tupleSize, j), at.w + j);
    dropped = dropped || (kDrop && v == VKDML_DROPPED);
    indexed += v * VKDML_AT(plans[p].tupleStride, j);
  }
  return dropped ? VKDML_NOT_OWNED : indexed;
}

// Offsets of loop element i of plans[p] on the direct and the indexed side (index components
// applied), and in IndicesTensor (for a plan without index components: its mask slot); w is 1
// where the element is dropped (kDrop; y is then VKDML_NOT_OWNED), else 0.
uvec4 locate(uint p, uint i) {
  const uvec4 at = loopOffsets(p, kRank, i);
  const uint indexed = indexedOffset(p, at);
  return uvec4(at.x, indexed, at.z, kDrop && indexed == VKDML_NOT_OWNED ? 1u : 0u);
}
#endif
