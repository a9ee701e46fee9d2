#version 450
// Checked mode's last step: reads the raw value of the first out-of-range index that the
// indexed kernel recorded (status[0], a row-major position in IndicesTensor) into status[1..2].
#extension GL_GOOGLE_include_directive : require

layout(local_size_x = 1) in;

#include "common.glsl"

layout(std430, set = 0, binding = 2) restrict readonly buffer Indices { uint indexWords[]; };

void main() {
  const uint p = pc.plan;
  uint position = status[0];
  if (position == 0xFFFFFFFFu) return;
  uint rest = position, element = 0u;
  for (uint d = plans[p].head.x; d-- > 0u;) {
    uint size = AT(plans[p].sizes, d);
    element += (rest % size) * AT(plans[p].indices, d);
    rest /= size;
  }
  bool wide = (plans[p].head.z & kFlagIndex64) != 0u;
  uint w = (wide ? 2u : 1u) * (pc.indexBase + element);
  uint lo = indexWords[w];
  bool negative = (plans[p].head.z & kFlagSigned) != 0u && int(lo) < 0;
  status[1] = lo;
  status[2] = wide ? indexWords[w + 1u] : (negative ? 0xFFFFFFFFu : 0u);
}
