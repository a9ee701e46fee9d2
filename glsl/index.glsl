// IndicesTensor and what every kernel does with an index: read it (INDEX64 selects 64-bit
// loads), clamp it, and in checked mode record where an out-of-range one is. Needs common.glsl
// and the specialization constants kChecked and kSignedIndex.

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

// Clamps (lo, hi) into [-n, n-1] (signed) or [0, n-1] (unsigned), then maps a negative value
// to value + n. When checking, records the position of an out-of-range index.
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
  if (kChecked && !inRange) atomicMin(status[VKDML_STATUS_POSITION], position);
  return result;
}

// Offsets of loop element i of plans[p] on the direct and the indexed side (index components
// applied), and in IndicesTensor (for a plan without index components: its mask slot).
uvec3 locate(uint p, uint i) {
  uvec4 at = loopOffsets(p, kRank, i);
  for (uint j = 0u; j < kTuple; ++j)
    at.y += clampIndex(readIndex(at.z + j * plans[p].componentStride),
                       VKDML_AT(plans[p].tupleSize, j), at.w + j) *
            VKDML_AT(plans[p].tupleStride, j);
  return at.xyz;
}
