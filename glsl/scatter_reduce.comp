#version 450
// A scatter with a reduction, the updates applied in any order (dml.h: VKDML_REDUCE_FUNCTION):
// each update element combines itself with its target atomically. 32-bit integer ADD, MAX and
// MIN use the matching atomics, float32 ADD the float atomic where FADD32 (the device's
// shaderBufferFloat32AtomicAdd); everything else of up to 4 bytes is a compare-and-swap loop on
// the 32-bit word that holds the element, so 1- and 2-byte elements need no narrow atomics.
// 8-byte elements: with ATOMIC64 (shaderInt64, shaderBufferInt64Atomics) 64-bit atomics and
// compare-and-swap; without, only integer ADD comes here, as two 32-bit adds with the carry.
// FLOAT64 (shaderFloat64) computes 8-byte floats. Runs over the scatter's plan
// (lib/operators/plan.h); LARGE: the large path (interface.h: LargePush), combining only the
// targets it owns. TIES: a deterministic float MAX or MIN, marking each target it sets to a zero
// or a NaN (glsl/ties.glsl).
#extension GL_GOOGLE_include_directive : require
#include "elem.glsl"
#if FADD32
#extension GL_EXT_shader_atomic_float : require
#endif
#if ATOMIC64
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_atomic_int64 : require
#endif

#include "common.glsl"
#include "index.glsl"
#include "arith.glsl"
#ifndef TIES
#define TIES 0
#endif
#if TIES
#include "ties.glsl"
#endif

layout(local_size_x_id = VKDML_SPEC_GROUP_SIZE) in;  // Capabilities::groupSize

layout(std430, set = 0, binding = VKDML_BIND_SOURCE) restrict readonly buffer Updates {
  T updatesData[];
};
// OutputTensor as 32-bit words (and, for the atomics that need them, as other types).
layout(std430, set = 0, binding = VKDML_BIND_OUTPUT) buffer OutputWords { uint outputWords[]; };
layout(std430, set = 0, binding = VKDML_BIND_OUTPUT) buffer OutputInts { int outputInts[]; };
#if FADD32
layout(std430, set = 0, binding = VKDML_BIND_OUTPUT) buffer OutputFloats {
  float outputFloats[];
};
#endif
#if ATOMIC64
layout(std430, set = 0, binding = VKDML_BIND_OUTPUT) buffer Output64 { uint64_t output64[]; };
layout(std430, set = 0, binding = VKDML_BIND_OUTPUT) buffer OutputI64 { int64_t outputI64[]; };
#endif

#if ELEM <= 4
// Combines u with element `element` (in ELEM-byte units) of OutputTensor.
void combine(uint element, uint u) {
  const uint byteOffset = element * ELEM, word = byteOffset >> 2, shift = (byteOffset & 3u) * 8u;
  if (ELEM == 4 && kKind != VKDML_KIND_FLOAT) {
    if (kReduce == VKDML_REDUCE_ADD) {
      atomicAdd(outputWords[word], u);
      return;
    }
    if (kReduce == VKDML_REDUCE_MAX) {
      if (kKind == VKDML_KIND_SIGNED)
        atomicMax(outputInts[word], int(u));
      else
        atomicMax(outputWords[word], u);
      return;
    }
    if (kReduce == VKDML_REDUCE_MIN) {
      if (kKind == VKDML_KIND_SIGNED)
        atomicMin(outputInts[word], int(u));
      else
        atomicMin(outputWords[word], u);
      return;
    }
  }
#if FADD32
  if (ELEM == 4 && kKind == VKDML_KIND_FLOAT && kReduce == VKDML_REDUCE_ADD) {
    atomicAdd(outputFloats[word], uintBitsToFloat(u));
    return;
  }
#endif
  const uint mask = kWidthMask << shift;
  uint old = outputWords[word];
  for (;;) {
    const uint current = (old & mask) >> shift, next = reduceBits(current, u);
    if (next == current) return;  // nothing to write (MAX or MIN kept it, or an identity)
    const uint seen = atomicCompSwap(outputWords[word], old, (old & ~mask) | (next << shift));
    if (seen == old) {
#if TIES
      if (tieKind(next) != kNoTie) markTie(element - pc.dstBase);
#endif
      return;
    }
    old = seen;
  }
}
#else
void combine(uint element, uvec2 u) {
#if ATOMIC64
  const uint64_t value = packUint2x32(u);
  if (kKind != VKDML_KIND_FLOAT) {
    if (kReduce == VKDML_REDUCE_ADD) {
      atomicAdd(output64[element], value);
      return;
    }
    if (kReduce == VKDML_REDUCE_MAX) {
      if (kKind == VKDML_KIND_SIGNED)
        atomicMax(outputI64[element], int64_t(value));
      else
        atomicMax(output64[element], value);
      return;
    }
    if (kReduce == VKDML_REDUCE_MIN) {
      if (kKind == VKDML_KIND_SIGNED)
        atomicMin(outputI64[element], int64_t(value));
      else
        atomicMin(output64[element], value);
      return;
    }
  }
  uint64_t old = output64[element];
  for (;;) {
    const uvec2 current = unpackUint2x32(old), next = reduceBits(current, u);
    if (next == current) return;
    const uint64_t seen = atomicCompSwap(output64[element], old, packUint2x32(next));
    if (seen == old) {
#if TIES
      if (tieKind(next) != kNoTie) markTie(element - pc.dstBase);
#endif
      return;
    }
    old = seen;
  }
#else
  // Integer ADD: the low words' sum carries into the high word, and the high words' additions
  // commute with it, so the 64-bit total is exact in any order.
  const uint before = atomicAdd(outputWords[2u * element], u.x);
  const uint carry = before + u.x < before ? 1u : 0u;
  if (u.y + carry != 0u) atomicAdd(outputWords[2u * element + 1u], u.y + carry);
#endif
}
#endif

void main() {
#if TIES
  if (gl_LocalInvocationIndex == 0u) workgroupTied = false;
  barrier();
#endif
  const uint p = pc.plan;
  const uint count = loopCount(p);
  const uint tile = kUnroll * gl_WorkGroupSize.x;
  const uint step = gl_NumWorkGroups.x * tile;
  uint base = gl_WorkGroupID.x * tile;
  while (base < count) {
    uint i = base + gl_LocalInvocationID.x;
    const uint inc = gl_WorkGroupSize.x;
    uint target[kUnroll];
    V v[kUnroll];
    uint n = 0u;
    for (uint u = 0u; u < kUnroll; ++u) {  // every load before any atomic: loads overlap
      if (i < count) {
        const uvec4 at = locate(p, i);  // not owned (LARGE) or dropped (kDrop): skipped
        target[u] = (LARGE != 0 || kDrop) && at.y == VKDML_NOT_OWNED ? VKDML_NOT_OWNED
                                                                      : pc.dstBase + at.y;
        v[u] = LOAD(updatesData, pc.srcBase + at.x);
        n = u + 1u;
      }
      i = count - i <= inc ? count : i + inc;  // no wrap-around past 2^32
    }
    for (uint u = 0u; u < kUnroll; ++u)
      if (u < n && ((LARGE == 0 && !kDrop) || target[u] != VKDML_NOT_OWNED))
        combine(target[u], v[u]);
    if (count - base <= step) break;
    base += step;
  }
#if TIES
  barrier();  // every invocation reaches it: the loop above only ends
  if (gl_LocalInvocationIndex == 0u && workgroupTied) TIE_MARK(VKDML_TIES_ANY) = 1u;
#endif
}
