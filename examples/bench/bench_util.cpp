#include "bench_util.h"

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <thread>

namespace bench {

std::string Format(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

void Check(const vkdml::Result& r, const char* what) {
  if (r.status == vkdml::Status::Unsupported)
    throw Unsupported(std::string(what) + ": " + r.message);
  if (!r.ok()) throw BenchError(std::string(what) + ": " + r.message);
}

void VkCheck(VkResult r, const char* what) {
  if (r != VK_SUCCESS)
    throw BenchError(Format("%s failed: VkResult %d", what, static_cast<int>(r)));
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void Summarise(const std::vector<double>& ms, double* median, double* min, double* max) {
  *median = Median(ms);
  *min = *std::min_element(ms.begin(), ms.end());
  *max = *std::max_element(ms.begin(), ms.end());
}

uint64_t Product(const std::vector<uint32_t>& v, size_t begin, size_t end) {
  uint64_t p = 1;
  const size_t stop = std::min(end, v.size());
  for (size_t i = begin; i < stop; ++i) p *= v[i];
  return p;
}

std::string HumanBytes(double b) {
  if (b >= 1024.0 * 1024 * 1024) return Format("%.2f GiB", b / (1024.0 * 1024 * 1024));
  if (b >= 1024.0 * 1024) return Format("%.1f MiB", b / (1024.0 * 1024));
  return Format("%.1f KiB", b / 1024.0);
}

void ParallelFor(size_t chunks, const std::function<void(size_t)>& fn) {
  size_t threads = std::max(1u, std::thread::hardware_concurrency());
  threads = std::min(threads, chunks);
  if (threads <= 1) {
    for (size_t c = 0; c < chunks; ++c) fn(c);
    return;
  }
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (size_t t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (size_t c = next++; c < chunks; c = next++) fn(c);
    });
  for (auto& th : pool) th.join();
}

}  // namespace bench
