#version 450
// The stable sort of a deterministic scatter's updates by target: one least-significant-digit
// pass per VKDML_SORT_RADIX-way digit of the keys, each in three steps, chosen by STEP:
//   0 COUNT: each block of VKDML_SORT_BLOCK keys counts its digits into
//     counts[digit * blocks + block];
//   1 SCAN / 2 SCAN_ADD: an exclusive scan of those counts (lib/kernel_reduce.cpp records one
//     SCAN per level, VKDML_SCAN_BLOCK entries per workgroup, the level above holding each
//     workgroup's total, then one SCAN_ADD per level on the way back down);
//   3 SCATTER: each block moves its keys and values from half `from` to half 1 - from, at
//     counts[digit * blocks + block] plus the key's rank among the block's keys of its digit.
// A block is taken in rounds of VKDML_SORT_GROUP keys; within a round a key's rank counts the
// threads below it with the same digit (a bit mask per digit), so the sort is stable.
#extension GL_GOOGLE_include_directive : require
#include "interface.h"

#if VKDML_SORT_GROUP != VKDML_SORT_RADIX
#error the count and scatter steps give each thread one digit
#endif

layout(local_size_x = VKDML_SORT_GROUP) in;
layout(push_constant) uniform PushConstants { SortPush pc; };

layout(std430, set = 0, binding = VKDML_BIND_SORT_KEYS) restrict buffer Keys { uint keys[]; };
layout(std430, set = 0, binding = VKDML_BIND_SORT_VALUES) restrict buffer Values {
  uint values[];
};
layout(std430, set = 0, binding = VKDML_BIND_SORT_COUNTS) restrict buffer Counts {
  uint counts[];
};

const uint kMaskWords = VKDML_SORT_GROUP / 32u;  // a thread mask per digit

uint digitOf(uint key) {
  return (key >> pc.shift) & (VKDML_SORT_RADIX - 1u);
}

#if STEP == 0
shared uint digitCounts[VKDML_SORT_RADIX];

void main() {
  const uint t = gl_LocalInvocationID.x;
  for (uint block = gl_WorkGroupID.x; block < pc.blocks; block += gl_NumWorkGroups.x) {
    digitCounts[t] = 0u;
    barrier();
    const uint first = block * VKDML_SORT_BLOCK, from = pc.from * pc.count;
    for (uint r = 0u; r < VKDML_SORT_ROUNDS; ++r) {
      const uint i = first + r * VKDML_SORT_GROUP + t;
      if (i < pc.count) atomicAdd(digitCounts[digitOf(keys[from + i])], 1u);
    }
    barrier();
    counts[t * pc.blocks + block] = digitCounts[t];
    barrier();  // the next block clears digitCounts
  }
}

#elif STEP == 1
shared uint sums[VKDML_SORT_GROUP];

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint workgroups = (pc.count + VKDML_SCAN_BLOCK - 1u) / VKDML_SCAN_BLOCK;
  for (uint w = gl_WorkGroupID.x; w < workgroups; w += gl_NumWorkGroups.x) {
    const uint first = pc.level + w * VKDML_SCAN_BLOCK + t * VKDML_SCAN_ITEMS;
    const uint end = pc.level + pc.count;
    uint items[VKDML_SCAN_ITEMS], total = 0u;
    for (uint k = 0u; k < VKDML_SCAN_ITEMS; ++k) {
      items[k] = first + k < end ? counts[first + k] : 0u;
      total += items[k];
    }
    sums[t] = total;
    barrier();
    for (uint d = 1u; d < VKDML_SORT_GROUP; d <<= 1) {  // inclusive scan of the threads' totals
      const uint add = t >= d ? sums[t - d] : 0u;
      barrier();
      sums[t] += add;
      barrier();
    }
    uint running = sums[t] - total;
    for (uint k = 0u; k < VKDML_SCAN_ITEMS; ++k) {
      if (first + k < end) counts[first + k] = running;
      running += items[k];
    }
    if (t == VKDML_SORT_GROUP - 1u && pc.next != 0xFFFFFFFFu) counts[pc.next + w] = sums[t];
    barrier();  // the next workgroup's block reuses sums
  }
}

#elif STEP == 2
void main() {
  const uint step = gl_NumWorkGroups.x * VKDML_SORT_GROUP;
  for (uint i = gl_GlobalInvocationID.x; i < pc.count; i += step) {
    counts[pc.level + i] += counts[pc.next + i / VKDML_SCAN_BLOCK];
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
    offsets[t] = counts[t * pc.blocks + block];
    for (uint r = 0u; r < VKDML_SORT_ROUNDS; ++r) {
      for (uint k = 0u; k < kMaskWords; ++k) masks[t * kMaskWords + k] = 0u;
      barrier();
      const uint i = block * VKDML_SORT_BLOCK + r * VKDML_SORT_GROUP + t;
      const bool valid = i < pc.count;
      uint key = 0u, value = 0u, digit = 0u;
      if (valid) {
        key = keys[from + i];
        value = values[from + i];
        digit = digitOf(key);
        atomicOr(masks[digit * kMaskWords + word], bit);
      }
      barrier();
      if (valid) {
        uint rank = offsets[digit] + uint(bitCount(masks[digit * kMaskWords + word] & (bit - 1u)));
        for (uint k = 0u; k < word; ++k) rank += uint(bitCount(masks[digit * kMaskWords + k]));
        keys[to + rank] = key;
        values[to + rank] = value;
      }
      barrier();  // every rank taken before the offsets move on
      uint round = 0u;
      for (uint k = 0u; k < kMaskWords; ++k) round += uint(bitCount(masks[t * kMaskWords + k]));
      offsets[t] += round;
      barrier();
    }
  }
}
#endif
