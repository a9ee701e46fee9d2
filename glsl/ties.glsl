// Deterministic float MAX and MIN (lib/kernels/kernel_ties.cpp). Applied one at a time, the
// updates leave a target holding the first value, in order (the input's own element, then the
// updates in IndicesTensor's row-major order), that equals the result; a NaN result is the
// first NaN. Equal values have equal bits but for two kinds: zeros (+0, -0) and NaNs (their
// payloads). So the atomic kernel's result (glsl/scatter_reduce.comp, TIES) is the sequential one
// except where it is a zero or a NaN taken from an update: an equal update never replaces what a
// target holds, so where the input's own element is of the result's kind it stays. The atomic
// kernel marks each target it sets to a zero or a NaN; where one ends so, glsl/scatter_ties.comp
// lowers its tie position to the first update of that kind aimed at it, then writes that one.
// Needs elem.glsl (ELEM 2: float16, 4 or 8) and arith.glsl. The scratch: interface.h,
// ScratchLayout.

// The scratch (bindings.glsl): TIE_MARK(VKDML_TIES_ANY), then from VKDML_TIES_BITS a bit per
// OutputTensor element; TIE_POSITION(t), per marked OutputTensor element t, its first tie's loop
// index.

const uint kNoTie = 0u, kZeroTie = 1u, kNanTie = 2u;
const uint kNoPosition = 0xFFFFFFFFu;  // above every loop index (a loop has under 2^32 elements)

// Which kind of tie a value can take part in.
uint tieKind(V v) {
#if ELEM == 8
  const bool zero = v.x == 0u && (v.y & 0x7FFFFFFFu) == 0u;
#else
  const bool zero = (v & (ELEM == 2 ? 0x7FFFu : 0x7FFFFFFFu)) == 0u;
#endif
  return zero ? kZeroTie : isNanBits(v) ? kNanTie : kNoTie;
}

// Whether this workgroup marked a target: the atomic kernel sets word VKDML_TIES_ANY once per
// workgroup, at its end, not per mark: millions of accesses to one word would queue at it.
shared bool workgroupTied;

// OutputTensor element t (from the tensor's start) now holds a zero or a NaN taken from an
// update: no position yet.
void markTie(uint t) {
  atomicOr(TIE_MARK(VKDML_TIES_BITS + (t >> 5)), 1u << (t & 31u));
  TIE_POSITION(t) = kNoPosition;
  workgroupTied = true;
}

bool tieMarked(uint t) {
  return (TIE_MARK(VKDML_TIES_BITS + (t >> 5)) & (1u << (t & 31u))) != 0u;
}
