#version 450
// Checked mode's last step: reads the raw value of the first out-of-range index that the
// indexed kernel recorded (status[0], a row-major position in IndicesTensor) into status[1..2].
#extension GL_GOOGLE_include_directive : require

layout(local_size_x = 1) in;

#include "common.glsl"

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
  uvec2 v = readIndex(element, plans[p].head.z);
  status[1] = v.x;
  status[2] = v.y;
}
