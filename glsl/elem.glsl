// The element type of a kernel keyed on element size ELEM (bytes): T in buffers, V in registers.
// Every access to a buffer of elements goes through LOAD and STORE (or STORE_SHARED, or COPY
// from one buffer to another). WORDS (1- and 2-byte elements on a device without 8/16-bit
// storage): buffers hold 32-bit words and an element is a bitfield of one; its binding starts on
// a word (lib/kernels/kernels.h: KernelSet::packed).
#ifndef WORDS
#define WORDS 0
#endif
#if WORDS && ELEM != 1 && ELEM != 2
#error WORDS is for 1- and 2-byte elements
#endif
#if ELEM == 1 && !WORDS
#extension GL_EXT_shader_8bit_storage : require
#define T uint8_t
#define V uint  // registers hold 8- and 16-bit values widened (storage-only types)
#elif ELEM == 2 && !WORDS
#extension GL_EXT_shader_16bit_storage : require
#define T uint16_t
#define V uint
#elif ELEM <= 2  // WORDS
#define T uint
#define V uint
#elif ELEM == 4
#define T uint
#define V T
#elif ELEM == 8
#define T uvec2
#define V T
#elif ELEM == 16
#define T uvec4
#define V T
#elif ELEM == 32  // CPU devices' widest: lanes load a vector's components one at a time
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#define T u64vec4
#define V T
#endif

#if WORDS
// Element i is bits [ELEM_SHIFT(i), + 8 * ELEM) of word ELEM_WORD(i). Neighbours in a word may
// be stored at the same time by other invocations, so stores change only their own bits,
// atomically: STORE where no other invocation stores this element in the same dispatch (an AND
// clearing it, then an OR setting it); STORE_SHARED where others may (a compare-and-swap loop:
// one of them wins, whole). Outputs are not writeonly: atomics read them.
#define ELEM_WORD(i) ((i) / (4u / ELEM))
#define ELEM_SHIFT(i) (((i) % (4u / ELEM)) * (8u * ELEM))
#define ELEM_MASK ((1u << (8u * ELEM)) - 1u)
#define LOAD(b, i) bitfieldExtract(b[ELEM_WORD(i)], int(ELEM_SHIFT(i)), int(8u * ELEM))
#define STORE(b, i, v)                                            \
  {                                                               \
    const uint word_ = ELEM_WORD(i), shift_ = ELEM_SHIFT(i);      \
    const uint bits_ = (uint(v) & ELEM_MASK) << shift_;           \
    atomicAnd(b[word_], ~(ELEM_MASK << shift_));                  \
    if (bits_ != 0u) atomicOr(b[word_], bits_);                   \
  }
#define STORE_SHARED(b, i, v)                                                            \
  {                                                                                      \
    const uint word_ = ELEM_WORD(i), shift_ = ELEM_SHIFT(i);                             \
    const uint bits_ = (uint(v) & ELEM_MASK) << shift_, keep_ = ~(ELEM_MASK << shift_); \
    uint old_ = b[word_];                                                                \
    while ((old_ & ~keep_) != bits_) {                                                   \
      const uint seen_ = atomicCompSwap(b[word_], old_, (old_ & keep_) | bits_);         \
      if (seen_ == old_) break;                                                          \
      old_ = seen_;                                                                      \
    }                                                                                    \
  }
#define COPY(dst, i, src, j) STORE(dst, i, LOAD(src, j))
#define OUTPUT_ACCESS
#else
#define LOAD(b, i) V(b[i])
#define STORE(b, i, v) b[i] = T(v)
#define STORE_SHARED(b, i, v) b[i] = T(v)
#define COPY(dst, i, src, j) dst[i] = src[j]
#define OUTPUT_ACCESS writeonly
#endif
