#version 450
// The stable sort of a deterministic scatter's updates by target: one least-significant-digit
// pass per VKDML_SORT_RADIX-way digit of the keys, each in three steps, chosen by STEP:
//   0 COUNT: each block of VKDML_SORT_BLOCK keys counts its digits into
//     SORT_COUNT(digit * blocks + block);
//   1 SCAN / 2 SCAN_ADD: an exclusive scan of those counts (lib/kernels/kernel_reduce.cpp
//     records one SCAN per level, VKDML_SCAN_BLOCK entries per workgroup, the level above
//     holding each workgroup's total, then one SCAN_ADD per level on the way back down);
//   3 SCATTER: each block moves its keys and values from half `from` to half 1 - from, at
//     SORT_COUNT(digit * blocks + block) plus the key's rank among the block's keys of its digit.
// A workgroup has G threads (VKDML_GROUP_SIZE or VKDML_MIN_GROUP_SIZE), each owning
// VKDML_SORT_RADIX / G digits. A block is taken in rounds of G keys; within a round a key's rank
// counts the threads below it with the same digit (a bit mask per digit), so the sort is stable.
#extension GL_GOOGLE_include_directive : require
#include "interface.h"

layout(local_size_x_id = VKDML_SPEC_GROUP_SIZE) in;
layout(push_constant) uniform PushConstants { SortPush pc; };

#include "bindings.glsl"  // the keys, values and counts: SORT_KEY, SORT_VALUE, SORT_COUNT

const uint kGroup = gl_WorkGroupSize.x;
const uint kMaskWords = kGroup / 32u;                // a thread mask per digit
const uint kRounds = VKDML_SORT_BLOCK / kGroup;      // a block's rounds of kGroup keys
const uint kScanItems = VKDML_SCAN_BLOCK / kGroup;   // a scan step's entries per thread

uint digitOf(uint key) {
  return (key >> pc.shift) & (VKDML_SORT_RADIX - 1u);
}

#if STEP == 0
shared uint digitCounts[VKDML_SORT_RADIX];

void main() {
  const uint t = gl_LocalInvocationID.x;
  for (uint block = gl_WorkGroupID.x; block < pc.blocks; block += gl_NumWorkGroups.x) {
    for (uint d = t; d < VKDML_SORT_RADIX; d += kGroup) digitCounts[d] = 0u;
    barrier();
    const uint first = block * VKDML_SORT_BLOCK, from = pc.from * pc.count;
    for (uint r = 0u; r < kRounds; ++r) {
      const uint i = first + r * kGroup + t;
      if (i < pc.count) atomicAdd(digitCounts[digitOf(SORT_KEY(from + i))], 1u);
    }
    barrier();
    for (uint d = t; d < VKDML_SORT_RADIX; d += kGroup)
      SORT_COUNT(d * pc.blocks + block) = digitCounts[d];
    barrier();  // the next block clears digitCounts
  }
}

#elif STEP == 1
shared uint sums[kGroup];

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint workgroups = (pc.count + VKDML_SCAN_BLOCK - 1u) / VKDML_SCAN_BLOCK;
  for (uint w = gl_WorkGroupID.x; w < workgroups; w += gl_NumWorkGroups.x) {
    const uint first = pc.level + w * VKDML_SCAN_BLOCK + t * kScanItems;
    const uint end = pc.level + pc.count;
    uint items[kScanItems], total = 0u;
    for (uint k = 0u; k < kScanItems; ++k) {
      items[k] = first + k < end ? SORT_COUNT(first + k) : 0u;
      total += items[k];
    }
    sums[t] = total;
    barrier();
    for (uint d = 1u; d < kGroup; d <<= 1) {  // inclusive scan of the threads' totals
      const uint add = t >= d ? sums[t - d] : 0u;
      barrier();
      sums[t] += add;
      barrier();
    }
    uint running = sums[t] - total;
    for (uint k = 0u; k < kScanItems; ++k) {
      if (first + k < end) SORT_COUNT(first + k) = running;
      running += items[k];
    }
    if (t == kGroup - 1u && pc.next != 0xFFFFFFFFu) SORT_COUNT(pc.next + w) = sums[t];
    barrier();  // the next workgroup's block reuses sums
  }
}

#elif STEP == 2
void main() {
  const uint step = gl_NumWorkGroups.x * kGroup;
  for (uint i = gl_GlobalInvocationID.x; i < pc.count; i += step) {
    SORT_COUNT(pc.level + i) += SORT_COUNT(pc.next + i / VKDML_SCAN_BLOCK);
    if (pc.count - i <= step) break;
  }
}

#elif STEP == 3
shared uint offsets[VKDML_SORT_RADIX];                 // where the next key of each digit goes
shared uint masks[VKDML_SORT_RADIX * kMaskWords];      // this round's threads, per digit

void main() {
  const uint t = gl_LocalInvocationID.x, word = t / 32u, bit = 1u << (t % 32u);
  const uint from = pc.from * pc.count, to = (1u - pc.from) * pc.count;
  for (uint block = gl_WorkGroupID.x; block < pc.blocks; block += gl_NumWorkGroups.x) {
    for (uint d = t; d < VKDML_SORT_RADIX; d += kGroup)
      offsets[d] = SORT_COUNT(d * pc.blocks + block);
    for (uint r = 0u; r < kRounds; ++r) {
      for (uint d = t; d < VKDML_SORT_RADIX; d += kGroup)
        for (uint k = 0u; k < kMaskWords; ++k) masks[d * kMaskWords + k] = 0u;
      barrier();
      const uint i = block * VKDML_SORT_BLOCK + r * kGroup + t;
      const bool valid = i < pc.count;
      uint key = 0u, value = 0u, digit = 0u;
      if (valid) {
        key = SORT_KEY(from + i);
        value = SORT_VALUE(from + i);
        digit = digitOf(key);
        atomicOr(masks[digit * kMaskWords + word], bit);
      }
      barrier();
      if (valid) {
        uint rank = offsets[digit] + uint(bitCount(masks[digit * kMaskWords + word] & (bit - 1u)));
        for (uint k = 0u; k < word; ++k) rank += uint(bitCount(masks[digit * kMaskWords + k]));
        SORT_KEY(to + rank) = key;
        SORT_VALUE(to + rank) = value;
      }
      barrier();  // every rank taken before the offsets move on
      for (uint d = t; d < VKDML_SORT_RADIX; d += kGroup) {
        uint round = 0u;
        for (uint k = 0u; k < kMaskWords; ++k) round += uint(bitCount(masks[d * kMaskWords + k]));
        offsets[d] += round;
      }
      barrier();
    }
  }
}
#endif
