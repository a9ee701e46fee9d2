#version 450
// Checked mode's last step: reads the raw value of the first out-of-range index that the other
// kernels recorded (its row-major position in IndicesTensor) into the status words. Its plan
// (VKDML_REPORT_SLOT) walks IndicesTensor: sizes and `indices` strides, kRank dimensions. LARGE
// (interface.h: LargePush): IndicesTensor is seen through windows, one a dispatch; the dispatch
// whose window owns the index (its 64-bit element offset in [indexedOwn, indexedEnd)) reads it.
#extension GL_GOOGLE_include_directive : require

layout(local_size_x = 1) in;

#include "common.glsl"
#include "index.glsl"

void main() {
  const uint position = STATUS(VKDML_STATUS_POSITION);
  if (position == VKDML_NO_POSITION) return;
#if LARGE
  uint rest = position;
  uvec2 offset = uvec2(0u);
  for (int d = int(kRank) - 1; d >= 0; --d) {
    uint c = rest;
    if (d > 0) {
      const uint q = divideBySize(pc.plan, uint(d), rest);
      c = rest - q * VKDML_AT(plans[pc.plan].sizes, d);
      rest = q;
    }
    offset = add2x32(offset, product2x32(c, VKDML_AT(plans[pc.plan].indices, d)));
  }
  if (less2x32(offset, uvec2(lpc.indexedOwn[0], lpc.indexedOwn[1])) ||
      !less2x32(offset, uvec2(lpc.indexedEnd[0], lpc.indexedEnd[1])))
    return;
  const uvec2 value = readIndex(offset.x - lpc.indexedStart[0]);
#else
  const uvec2 value = readIndex(loopOffsets(pc.plan, kRank, position).z);
#endif
  STATUS(VKDML_STATUS_LO) = value.x;
  STATUS(VKDML_STATUS_HI) = value.y;
}
