#version 450
// The indexed copy every operator lowers to (lib/plan.h): gather when SCATTER is 0, scatter
// when 1. ELEM is the element size in bytes (1, 2, 4, 8, or 16 for widened plans): the kernel
// moves bytes and never looks at data types.
#extension GL_GOOGLE_include_directive : require
#if ELEM == 1
#extension GL_EXT_shader_8bit_storage : require
#define T uint8_t
#elif ELEM == 2
#extension GL_EXT_shader_16bit_storage : require
#define T uint16_t
#elif ELEM == 4
#define T uint
#elif ELEM == 8
#define T uvec2
#elif ELEM == 16
#define T uvec4
#endif

layout(local_size_x = 256) in;
layout(constant_id = 0) const bool kChecked = false;

#include "common.glsl"

layout(std430, set = 0, binding = 1) readonly buffer Input { T inputData[]; };
layout(std430, set = 0, binding = 3) readonly buffer Updates { T updatesData[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Output { T outputData[]; };

// Clamps index (lo, hi) into [-n, n-1] (signed) or [0, n-1] (unsigned), then maps a negative
// value to value + n. Records the element's position when checking and it was out of range.
uint clampIndex(uvec2 v, uint n, uint flags, uint position) {
  bool negative = (flags & kFlagSigned) != 0u && int(v.y) < 0;
  bool inRange;
  uint result;
  if (negative) {
    inRange = v.y == 0xFFFFFFFFu && v.x >= 0u - n;  // value >= -n
    result = inRange ? v.x + n : 0u;
  } else {
    inRange = v.y == 0u && v.x < n;
    result = inRange ? v.x : n - 1u;
  }
  if (kChecked && !inRange) atomicMin(status[0], position);
  return result;
}

void main() {
  const uint p = pc.plan;
  const uint rank = plans[p].head.x, tuple = plans[p].head.y, flags = plans[p].head.z;
  const uint count = plans[p].head.w;
  const uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < count;) {
    uint rest = i, direct = 0u, indexed = 0u, index = 0u, position = 0u;
    for (uint d = rank; d-- > 0u;) {
      uint size = AT(plans[p].sizes, d);
      uint c = rest % size;
      rest /= size;
      direct += c * AT(plans[p].direct, d);
      indexed += c * AT(plans[p].indexed, d);
      index += c * AT(plans[p].indices, d);
      position += c * AT(plans[p].position, d);
    }
    for (uint j = 0u; j < tuple; ++j) {
      uvec2 v = readIndex(index + j * plans[p].extra.x, flags);
      indexed += clampIndex(v, AT(plans[p].tupleSize, j), flags, position + j) *
                 AT(plans[p].tupleStride, j);
    }
#if SCATTER
    outputData[pc.dstBase + indexed] = updatesData[pc.srcBase + direct];
#else
    outputData[pc.dstBase + direct] = inputData[pc.srcBase + indexed];
#endif
    if (count - i <= step) break;  // i + step would pass count (or wrap around 2^32)
    i += step;
  }
}
