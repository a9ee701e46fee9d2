// Small pieces every part of `vkdml bench` uses: its errors, printf-style formatting, timing
// statistics, and the generator, thread pool and uninitialised host arrays that make gigabytes
// of random data quickly.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "vkdml/vkdml.h"

namespace bench {

using Clock = std::chrono::steady_clock;

// A failure that ends the case (or, before any case, the run) with exit status 1.
struct BenchError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// vkdml cannot run the case on this device: the case is reported as skipped.
struct Unsupported : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// (MinGW's printf archetype is msvcrt's; its C99 printf, which the build selects, is gnu_printf.)
#ifdef __MINGW32__
std::string Format(const char* fmt, ...) __attribute__((format(gnu_printf, 1, 2)));
#else
std::string Format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
#endif

// Throws Unsupported or BenchError ("what: message") unless r is ok.
void Check(const vkdml::Result& r, const char* what);
void VkCheck(VkResult r, const char* what);

inline double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

double Median(std::vector<double> v);
// The median, minimum and maximum of ms (not empty).
void Summarise(const std::vector<double>& ms, double* median, double* min, double* max);

// The product of v[begin, end): an element count.
uint64_t Product(const std::vector<uint32_t>& v, size_t begin = 0, size_t end = SIZE_MAX);

std::string HumanBytes(double b);

// SplitMix64: a fast generator good enough for benchmark data; seeded per chunk so the data
// does not depend on the thread count.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull) {}
  uint64_t Next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t Below(uint64_t n) { return Next() % n; }
};

// Runs fn(chunk) for chunk in [0, chunks) on all hardware threads.
void ParallelFor(size_t chunks, const std::function<void(size_t)>& fn);

// A host byte array without zero-initialisation (gigabytes at full size).
struct Bytes {
  std::unique_ptr<uint8_t[]> p;
  size_t n = 0;
  void Allocate(size_t size) {
    p.reset(new uint8_t[size]);
    n = size;
  }
  uint8_t* data() { return p.get(); }
  const uint8_t* data() const { return p.get(); }
};

}  // namespace bench
