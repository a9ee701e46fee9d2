// Small helpers shared by the test files.
#pragma once

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness.h"
#include "kernels/capabilities.h"
#include "kernels/kernels.h"

namespace vt {

// The random tests' seed: VKDML_TEST_SEED, or a fixed default.
inline uint64_t BaseSeed() {
  const char* s = std::getenv("VKDML_TEST_SEED");
  return s ? std::strtoull(s, nullptr, 0) : 0x5EEDC0DEull;
}

// Which numbered cases of a random sweep run: every one, or
//   VKDML_TEST_CASE=N     case N alone (to replay a failure the sweep reported), or those in
//   VKDML_TEST_SHARE=r/n  the cases whose number hashes to r modulo n (n from 1 to 64): the share
//                         CI's repeated suites run on the same code (.ci/sanitizers.sh,
//                         .ci/swiftshader.sh), with r turning from one commit to the next, and in
//   --share r/n           the same on the command line, with a hash of its own (so that both
//                         can apply): the share CTest gives each run of the suite
//                         (test/CMakeLists.txt), which the environment's narrows.
// A malformed value throws: a typo must not quietly run everything, or nothing.
inline std::string& ArgShare() {  // set by test_main.cpp
  static std::string share;
  return share;
}

inline bool SweepReplaysOne() {  // VKDML_TEST_CASE is set: checks over a whole sweep do not apply
  const char* only = std::getenv("VKDML_TEST_CASE");
  return only && *only;
}

inline const char* EnvShare() {
  const char* share = std::getenv("VKDML_TEST_SHARE");
  return share && *share ? share : nullptr;
}

// A share is set: a whole sweep's proportions need not hold.
inline bool SweepIsShared() {
  return EnvShare() || !ArgShare().empty();
}

// Whether the case is in the share `what` (its name in messages) gives, hashing it with salt.
inline bool InShare(const char* what, const char* share, uint64_t caseNumber, uint64_t salt) {
  unsigned r = 0, n = 0;
  char tail = 0;
  if (std::sscanf(share, "%u/%u%c", &r, &n, &tail) != 2 || n < 1 || n > 64 || r >= n)
    throw std::runtime_error(std::string(what) + share +
                             ": expected r/n with 0 <= r < n <= 64, e.g. 1/3");
  uint64_t h = caseNumber + salt;               // splitmix64: shares free of the sweeps' own
  h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;  // strides (case % 3, % 4, % 8, ...)
  h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
  return (h ^ (h >> 31)) % n == r;
}

inline bool SweepRuns(uint64_t caseNumber) {
  if (SweepReplaysOne())
    return std::strtoull(std::getenv("VKDML_TEST_CASE"), nullptr, 10) == caseNumber;
  if (const char* share = EnvShare())
    if (!InShare("VKDML_TEST_SHARE=", share, caseNumber, 0x9E3779B97F4A7C15ull)) return false;
  if (!ArgShare().empty())
    return InShare("--share ", ArgShare().c_str(), caseNumber, 0xD1B54A32D192ED03ull);
  return true;
}

// Sets an environment variable (null or empty: unsets it) for the life of the object, restoring
// the old value after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) {
      had_ = true;
      old_ = old;
    }
    if (value && *value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv() {
    if (had_)
      setenv(name_, old_.c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

// Sets one of the library's VKDML_* switches (lib/kernels/capabilities.h: Switches) for the life of
// the object: in the environment, for the devices created meanwhile, and on `device`, which read
// the environment once, when it was created. Restores both after.
class ScopedSwitch : ScopedEnv {
 public:
  ScopedSwitch(const char* name, const char* value, Device& device = Dev());
  ScopedSwitch(const ScopedSwitch&) = delete;
  ScopedSwitch& operator=(const ScopedSwitch&) = delete;
  ~ScopedSwitch();

 private:
  Device& device_;
  vkdml::detail::Switches old_;
};

// What kernel choice knows of a device (lib/device/device.h: DeviceImpl::Caps).
vkdml::detail::Capabilities CapabilitiesOf(const Device& device);
vkdml::detail::Switches SwitchesOf(const Device& device);

// The kernels a compile of `desc` on the test device would choose now (its switches included).
vkdml::detail::KernelSet Chosen(const DML_OPERATOR_DESC& desc, UINT flags = 0);

// How many windows of its indexed side kernel k's dispatches take (on the large path), checking
// that each dispatch's binding of that side (its window and k's reach past it, within `total`
// bytes: binding_table.cpp, SpanAt) holds the words of every piece of `bytes` bytes that starts
// in its window, at one of `firsts`. (Debian's GPU-assisted validation did not flag reads past a
// binding: test_quantized.cpp.)
size_t WindowsHolding(const vkdml::detail::Kernel& k, UINT64 total,
                      const std::vector<UINT64>& firsts, UINT64 bytes);

struct Rng {
  std::mt19937_64 g;
  explicit Rng(uint64_t seed) : g(seed) {}
  uint64_t U(uint64_t lo, uint64_t hi) {  // inclusive
    return std::uniform_int_distribution<uint64_t>(lo, hi)(g);
  }
  UINT Ui(uint64_t lo, uint64_t hi) { return static_cast<UINT>(U(lo, hi)); }
  bool P(double p) { return std::uniform_real_distribution<double>(0, 1)(g) < p; }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[U(0, v.size() - 1)];
  }
};

template <typename T>
Bytes ToBytes(const std::vector<T>& v, UINT64 total = 0) {
  Bytes b(std::max<UINT64>(total, v.size() * sizeof(T)), 0);
  std::memcpy(b.data(), v.data(), v.size() * sizeof(T));
  return b;
}

// Packed index tensor bytes of the given index type.
inline Bytes IndexBytes(DML_TENSOR_DATA_TYPE type, const std::vector<int64_t>& values,
                        UINT64 total) {
  Bytes b(total, 0);
  const uint32_t es = ref::ElementSize(type);
  for (size_t i = 0; i < values.size(); ++i) ref::WriteIndex(type, b.data() + i * es, values[i]);
  return b;
}

inline const std::vector<DML_TENSOR_DATA_TYPE>& IndexTypes() {
  static const std::vector<DML_TENSOR_DATA_TYPE> t = {
      DML_TENSOR_DATA_TYPE_INT32, DML_TENSOR_DATA_TYPE_UINT32, DML_TENSOR_DATA_TYPE_INT64,
      DML_TENSOR_DATA_TYPE_UINT64};
  return t;
}

inline const std::vector<DML_TENSOR_DATA_TYPE>& DataTypes() {
  static const std::vector<DML_TENSOR_DATA_TYPE> t = {
      DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_FLOAT16, DML_TENSOR_DATA_TYPE_INT32,
      DML_TENSOR_DATA_TYPE_INT16,   DML_TENSOR_DATA_TYPE_INT8,    DML_TENSOR_DATA_TYPE_UINT32,
      DML_TENSOR_DATA_TYPE_UINT16,  DML_TENSOR_DATA_TYPE_UINT8,   DML_TENSOR_DATA_TYPE_FLOAT64,
      DML_TENSOR_DATA_TYPE_INT64,   DML_TENSOR_DATA_TYPE_UINT64};
  return t;
}

// A DeviceDesc that adopts owner's Vulkan objects, saying `enabled` was enabled.
inline DeviceDesc Borrowed(Device& owner, DeviceFeatures enabled) {
  DeviceDesc d;
  d.instance = owner.Instance();
  d.physicalDevice = owner.PhysicalDevice();
  d.device = owner.Handle();
  d.queue = owner.Queue();
  d.queueFamilyIndex = owner.QueueFamilyIndex();
  d.enabledFeatures = enabled;
  return d;
}

// Whether this device runs tensors of the type and, with a reduction, its arithmetic, as
// Device::CheckFeatureSupport says.
inline bool DeviceSupports(DML_TENSOR_DATA_TYPE type,
                           VKDML_REDUCE_FUNCTION reduce = VKDML_REDUCE_FUNCTION_NONE) {
  DML_FEATURE_QUERY_TENSOR_DATA_TYPE_SUPPORT q = {type};
  DML_FEATURE_DATA_TENSOR_DATA_TYPE_SUPPORT d = {};
  REQUIRE(
      Dev().CheckFeatureSupport(DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT, sizeof q, &q, sizeof d, &d));
  if (!d.IsSupported || reduce == VKDML_REDUCE_FUNCTION_NONE) return d.IsSupported;
  VKDML_FEATURE_QUERY_REDUCTION_SUPPORT rq = {type, reduce};
  VKDML_FEATURE_DATA_REDUCTION_SUPPORT rd = {};
  REQUIRE(
      Dev().CheckFeatureSupport(VKDML_FEATURE_REDUCTION_SUPPORT, sizeof rq, &rq, sizeof rd, &rd));
  return rd.IsSupported;
}

// What the offsets of a tensor of the type's bindings must be multiples of on this device
// (Device::CheckFeatureSupport).
inline UINT64 BindingAlignment(DML_TENSOR_DATA_TYPE type) {
  VKDML_FEATURE_QUERY_BINDING_ALIGNMENT q = {type};
  VKDML_FEATURE_DATA_BINDING_ALIGNMENT d = {};
  REQUIRE(Dev().CheckFeatureSupport(VKDML_FEATURE_BINDING_ALIGNMENT, sizeof q, &q, sizeof d, &d));
  return d.OffsetAlignment;
}

// Whether the device runs every data type with every reduction (DeviceSupports): on such a
// device (lavapipe, the GPUs the suite has run on) a skip is a bug, not the device's.
inline bool DeviceHasEveryType() {
  for (DML_TENSOR_DATA_TYPE type : DataTypes())
    for (VKDML_REDUCE_FUNCTION f :
         {VKDML_REDUCE_FUNCTION_NONE, VKDML_REDUCE_FUNCTION_ADD, VKDML_REDUCE_FUNCTION_MULTIPLY,
          VKDML_REDUCE_FUNCTION_MAX, VKDML_REDUCE_FUNCTION_MIN})
      if (!DeviceSupports(type, f)) return false;
  return true;
}

// Cases (or whole tests) a device refused as DeviceSupports says it may: none where
// DeviceHasEveryType, elsewhere reported (never silently).
inline void CheckSkips(int skipped, const char* what) {
  INFO(skipped << " " << what << " skipped (Device::CheckFeatureSupport says the device does "
               << "not run them)");
  if (DeviceHasEveryType()) CHECK(skipped == 0);
  if (skipped > 0)
    WARN(skipped << " " << what << " skipped: " << Dev().Info().name
                 << " does not run them (Device::CheckFeatureSupport)");
}

// Skips the rest of a test, saying why, where the device cannot hold the type (DeviceSupports);
// never where DeviceHasEveryType.
#define VT_SKIP_UNLESS_SUPPORTED(type) \
  do {                                 \
    if (!::vt::DeviceSupports(type)) { \
      ::vt::CheckSkips(1, "test");     \
      return;                          \
    }                                  \
  } while (0)

// A test's count of the data types it ran and skipped (DeviceSupports). At the end of its scope
// it checks the skips (CheckSkips) and fails a test that ran no type on a device that could run
// them all.
class TypeSweep {
 public:
  TypeSweep() = default;
  TypeSweep(const TypeSweep&) = delete;
  TypeSweep& operator=(const TypeSweep&) = delete;
  bool Runs(DML_TENSOR_DATA_TYPE type, VKDML_REDUCE_FUNCTION reduce = VKDML_REDUCE_FUNCTION_NONE) {
    if (DeviceSupports(type, reduce)) return ++ran_, true;
    ++skipped_;
    return false;
  }
  ~TypeSweep() {
    // (The case replayed is another test's, or the share holds none of this test's cases.)
    if (std::uncaught_exceptions() != 0 ||
        (ran_ == 0 && skipped_ == 0 && (SweepReplaysOne() || SweepIsShared())))
      return;
    INFO(ran_ << " data types ran, " << skipped_ << " skipped");
    CHECK((ran_ > 0 || (skipped_ > 0 && !DeviceHasEveryType())));
    CheckSkips(skipped_, "data type(s)");
  }

 private:
  int ran_ = 0, skipped_ = 0;
};

// Runs spec on the given inputs through the recording path and Device::Run and checks every
// byte of the output image against `expected` (an image of the output's TotalTensorSizeInBytes).
inline void CheckAllPaths(OpSpec& spec, const std::vector<Bytes>& inputs, const Bytes& expected,
                          const Bytes& initial) {
  struct Variant {
    const char* name;
    ExecOptions opts;
  };
  std::vector<Variant> variants(3);
  variants[0].name = "record, device-local, offset 0";
  variants[1].name = "record, host-visible, offsets 20/36/.. in one buffer";
  variants[1].opts.memory = Buffer::Memory::HostVisible;
  variants[1].opts.oneBuffer = true;
  for (size_t i = 0; i < spec.tensors.size(); ++i) {
    const UINT64 es = BindingAlignment(spec.tensors[i].Type());
    variants[1].opts.offsets.push_back((20 + 16 * i + es - 1) / es * es);
  }
  variants[2].name = "Device::Run";
  variants[2].opts.path = Path::Run;
  for (const Variant& v : variants) {
    INFO("path: " << v.name);
    ExecResult res = Execute(spec, inputs, {initial}, v.opts);
    if (v.opts.path == Path::Run) {
      INFO("Run: " << Str(res.runResult));
      REQUIRE(res.runResult.ok());
    }
    const ref::Tensor t = spec.Output().Ref();
    std::string diff = DiffBytes(res.outputs[0], expected, &t);
    INFO("output differs: " << diff);
    CHECK(diff.empty());
  }
}

}  // namespace vt
