// 64-bit unsigned arithmetic on (low, high) words in 32-bit integers, for devices without
// shaderInt64: glsl/soft_float64.glsl's float64, glsl/divide.glsl's division and the large
// path's 64-bit offsets (glsl/index.glsl).
#ifndef VKDML_WIDE_GLSL
#define VKDML_WIDE_GLSL

uvec2 product2x32(uint a, uint b) {  // a * b, whole
  uint high, low;
  umulExtended(a, b, high, low);
  return uvec2(low, high);
}
uvec2 add2x32(uvec2 a, uvec2 b) {
  uint carry;
  const uint low = uaddCarry(a.x, b.x, carry);
  return uvec2(low, a.y + b.y + carry);
}
uvec2 sub2x32(uvec2 a, uvec2 b) {
  uint borrow;
  const uint low = usubBorrow(a.x, b.x, borrow);
  return uvec2(low, a.y - b.y - borrow);
}
bool less2x32(uvec2 a, uvec2 b) {
  return a.y < b.y || (a.y == b.y && a.x < b.x);
}
uvec2 shiftLeft2x32(uvec2 v, uint n) {
  if (n == 0u) return v;
  if (n >= 64u) return uvec2(0u);
  if (n >= 32u) return uvec2(0u, v.x << (n - 32u));
  return uvec2(v.x << n, (v.y << n) | (v.x >> (32u - n)));
}
// v >> n, any bit shifted out set in the lowest bit of the result (it only rounds: "sticky").
uvec2 shiftRightJam2x32(uvec2 v, uint n) {
  if (n == 0u) return v;
  if (n >= 64u) return uvec2((v.x | v.y) != 0u ? 1u : 0u, 0u);
  uvec2 r;
  bool lost;
  if (n >= 32u) {
    const uint m = n - 32u;
    r = uvec2(m == 0u ? v.y : v.y >> m, 0u);
    lost = v.x != 0u || (m != 0u && (v.y << (32u - m)) != 0u);
  } else {
    r = uvec2((v.x >> n) | (v.y << (32u - n)), v.y >> n);
    lost = (v.x << (32u - n)) != 0u;
  }
  return uvec2(r.x | (lost ? 1u : 0u), r.y);
}
// Bits above the leading one of a nonzero v: 63 - its position.
uint leadingZeros2x32(uvec2 v) {
  return v.y != 0u ? 31u - uint(findMSB(v.y)) : 63u - uint(findMSB(v.x));
}
uvec2 shiftRight2x32(uvec2 v, uint n) {
  if (n == 0u) return v;
  if (n >= 64u) return uvec2(0u);
  if (n >= 32u) return uvec2(v.y >> (n - 32u), 0u);
  return uvec2((v.x >> n) | (v.y << (32u - n)), v.y >> n);
}
// The position of v's leading one plus 1 (0 for 0).
uint bitLength2x32(uvec2 v) {
  return v.y != 0u ? 33u + uint(findMSB(v.y)) : uint(findMSB(v.x) + 1);
}

#endif  // VKDML_WIDE_GLSL
