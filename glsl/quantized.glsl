// Reading ggml's Q8_0 and Q4_0 blocks (dml.h: VKDML_QUANTIZED_FORMAT) from a table read in 32-bit
// words, on any device (no 8/16-bit storage); blocks start on any byte. Needs half.glsl, FORMAT
// (8: Q8_0, 4: Q4_0) and the table as `uint tableWords[]`.
const uint kBlockBytes = FORMAT == 8 ? 34u : 18u;

// The 4 table bytes from byte b, little-endian. The word after b's is read only when b is not on
// a word; it then holds byte b + 3, which is the tensor's (its size rounds up to a word).
uint tableBytes4(uint b) {
  const uint word = b >> 2, shift = (b & 3u) * 8u;
  const uint low = tableWords[word];
  return shift == 0u ? low : (low >> shift) | (tableWords[word + 1u] << (32u - shift));
}

// Values 4q to 4q + 3 of the row whose first byte is `row`, as float32 bits: d * q, one rounding
// (`precise`: not fused with what a caller adds to it).
uvec4 dequantizeQuad(uint row, uint q) {
  const uint block = row + (q >> 3) * kBlockBytes;
  const float d = halfToFloat(tableBytes4(block) & 0xFFFFu);
  uvec4 bits;
#if FORMAT == 8
  const uint packed = tableBytes4(block + 2u + (q & 7u) * 4u);
  for (uint k = 0u; k < 4u; ++k) {
    precise const float v = d * float(bitfieldExtract(int(packed), int(8u * k), 8));
    bits[k] = floatBitsToUint(v);
  }
#else
  const uint packed = tableBytes4(block + 2u + (q & 3u) * 4u) >> ((q & 4u) != 0u ? 4u : 0u);
  for (uint k = 0u; k < 4u; ++k) {
    precise const float v = d * float(int((packed >> (8u * k)) & 15u) - 8);
    bits[k] = floatBitsToUint(v);
  }
#endif
  return bits;
}

// Values 4q to 4q + 7 (q even: one block's) of the row whose first byte is `row`, as float32
// bits (lo: 4q to 4q + 3; hi: the next four), each d * q rounded once: one scale and 8 bytes
// read (words straddled where they start off one).
void dequantizeOctet(uint row, uint q, out uvec4 lo, out uvec4 hi) {
  const uint block = row + (q >> 3) * kBlockBytes;
  const float d = halfToFloat(tableBytes4(block) & 0xFFFFu);
#if FORMAT == 8
  const uint b = block + 2u + (q & 7u) * 4u;
#else
  const uint b = block + 2u + (q & 3u) * 4u;
#endif
  const uint word = b >> 2, shift = (b & 3u) * 8u;
  uvec2 packed = uvec2(tableWords[word], tableWords[word + 1u]);
  if (shift != 0u) {  // byte b + 7 is in the third word, the tensor's
    const uint third = tableWords[word + 2u];
    packed = uvec2((packed.x >> shift) | (packed.y << (32u - shift)),
                   (packed.y >> shift) | (third << (32u - shift)));
  }
#if FORMAT == 4
  packed = (packed >> ((q & 4u) != 0u ? 4u : 0u)) & 0x0F0F0F0Fu;  // the nibbles, q + 8
#endif
  for (uint k = 0u; k < 4u; ++k) {  // no array: a vector's components, whose index unrolls
#if FORMAT == 8
    const vec2 x = vec2(bitfieldExtract(ivec2(packed), int(8u * k), 8));
#else
    const vec2 x = vec2(ivec2((packed >> (8u * k)) & 15u) - 8);
#endif
    precise const vec2 value = d * x;
    lo[k] = floatBitsToUint(value.x);
    hi[k] = floatBitsToUint(value.y);
  }
}

