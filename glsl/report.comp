#version 450
// Checked mode's last step: reads the raw value of the first out-of-range index that the other
// kernels recorded (its row-major position in IndicesTensor) into the status buffer. Its plan
// (VKDML_REPORT_SLOT) walks IndicesTensor: sizes and `indices` strides, kRank dimensions.
#extension GL_GOOGLE_include_directive : require

layout(local_size_x = 1) in;

#include "common.glsl"
#include "index.glsl"

void main() {
  const uint position = status[VKDML_STATUS_POSITION];
  if (position == VKDML_NO_POSITION) return;
  const uvec2 value = readIndex(loopOffsets(pc.plan, kRank, position).z);
  status[VKDML_STATUS_LO] = value.x;
  status[VKDML_STATUS_HI] = value.y;
}
