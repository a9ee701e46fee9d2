// Storing ggml's Q8_0 and Q4_0 blocks (dml.h: VKDML_QUANTIZED_FORMAT) into a table written in
// 32-bit words, on any device: a block's bytes streamed out (blocks start on any byte), and
// (where the includer defines VKDML_BLOCK_VALUE(j), value j of the block as float32 bits) the
// whole quantizer, as ggml's reference quantizer does it (dml.h:
// VKDML_SCATTER_QUANTIZED_ROWS_OPERATOR_DESC), in integer float32 arithmetic where a device's may
// differ. Used by glsl/quantize_rows.comp and glsl/paged.comp. Needs FORMAT (8: Q8_0, 4: Q4_0),
// divide.glsl, float32.glsl, half.glsl and the table as `uint outputWords[]`.

// A block's bytes streamed into the output, from byte o on (beginBlock): byte after byte into
// the word being filled, each word stored once whole; the first and the last, which may share
// their other bytes with a neighbouring block, changed in the block's bytes alone, atomically.
// No array: a block's words indexed by a loop counter would go to local memory.
uint blockWord, blockAt, blockBits, blockMask;

void beginBlock(uint o) {
  blockWord = o >> 2;
  blockAt = o & 3u;
  blockBits = 0u;
  blockMask = 0xFFFFFFFFu << (8u * blockAt);
}

void storeWord(uint mask) {
  if (mask == 0xFFFFFFFFu) {
    outputWords[blockWord] = blockBits;
  } else {
    atomicAnd(outputWords[blockWord], ~mask);
    atomicOr(outputWords[blockWord], blockBits & mask);
  }
}

void putByte(uint b) {
  blockBits |= (b & 0xFFu) << (8u * blockAt);
  if (++blockAt < 4u) return;
  storeWord(blockMask);
  ++blockWord;
  blockAt = 0u;
  blockBits = 0u;
  blockMask = 0xFFFFFFFFu;
}

void endBlock() {
  if (blockAt != 0u) storeWord(blockMask & ((1u << (8u * blockAt)) - 1u));
}

// roundf(v) for |v| below 2^31, from its bits (halves away from zero).
int roundAway(uint v) {
  const uint a = v & 0x7FFFFFFFu;
  if (a < 0x3F000000u) return 0;  // below 0.5
  const uint e = (a >> 23) - 127u + 1u;  // 0 for 0.5 to 1
  const uint m = (a & 0x7FFFFFu) | 0x800000u;
  const int r = int((m + (1u << (23u - e))) >> (24u - e));
  return (v & 0x80000000u) != 0u ? -r : r;
}

#ifdef VKDML_BLOCK_VALUE
// Quantizes the block VKDML_BLOCK_VALUE gives and stores its bytes from byte `target` on.
void quantizeBlock(uint target) {
  uint amax = 0u, extreme = 0u;  // largest magnitude's bits, and (Q4_0) that value's
  for (uint j = 0u; j < 32u; ++j) {  // the first of equal magnitudes stays
    const uint x = VKDML_BLOCK_VALUE(j);
    if ((x & 0x7FFFFFFFu) > amax) {
      amax = x & 0x7FFFFFFFu;
      extreme = x;
    }
  }
#if FORMAT == 8
  const uint d = divideFloat(uvec2(amax, 0u), 127u).x;
#else
  const uint d = divideFloat(uvec2(extreme, 0u), 8u).x ^ 0x80000000u;  // max / -8
#endif
  const bool zero = (d & 0x7FFFFFFFu) == 0u;
  const uint id = zero ? 0u : reciprocalFloat32(d);
  const bool overflow = (id & 0x7FFFFFFFu) == 0x7F800000u;  // 1 / d overflows: q 0 (dml.h)
  const uint h = floatToHalf(d);
  beginBlock(target);
  putByte(h);
  putByte(h >> 8);
#if FORMAT == 8
  for (uint j = 0u; j < 32u; ++j)
    putByte(overflow ? 0u : uint(roundAway(multiplyNormalFloat32(VKDML_BLOCK_VALUE(j), id))));
#else
  for (uint j = 0u; j < 16u; ++j) {  // values j and j + 16 in a byte's low and high nibble
    uint byte = 0u;
    for (uint high = 0u; high < 2u; ++high) {
      const uint v = multiplyNormalFloat32(VKDML_BLOCK_VALUE(j + 16u * high), id);
      // min(15, (int8_t)(x * id + 8.5f)): the sum rounded once, as the device's float add is
      // (correctly rounded; a denormal x * id, flushed or not, leaves 8.5 as it is).
      precise const float w = uintBitsToFloat(v) + 8.5;
      byte |= (overflow ? 8u : uint(min(15, int(w)))) << (4u * high);
    }
    putByte(byte);
  }
#endif
  endBlock();
}
#endif
