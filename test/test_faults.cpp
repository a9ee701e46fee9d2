// Fault injection: what vkdml does when Vulkan fails. A Device made with this file's
// vkGetInstanceProcAddr (DeviceDesc::getInstanceProcAddr, the embedding hook) calls Vulkan
// through hooks that count every call of each function returning a VkResult and can make chosen
// calls return a chosen VkResult. VT_FUNCTIONS is the one list of them: a test reads lib/'s
// sources and vulkan_core.h and fails when lib/ calls such a function that the list lacks. The
// sweeps (one table of stages: CreateDevice, CompileOperator, CreateBindingTable, RecordDispatch
// in Submit, Run, CreateBuffer, Buffer::Write and Read, GetPipelineCacheData) count the calls each
// makes with nothing injected, fail on none, and another test fails unless together they make
// every listed call. Each sweep then fails each of those calls in turn, and check that the call
// reports it (status, function and VkResult named), that the validation layer reports nothing (it
// names every object still alive at vkDestroyDevice and vkDestroyInstance: nothing leaks), that
// LeakSanitizer finds nothing (the sanitizer run), and that the Device still works afterwards, or,
// after a lost device, refuses every call at once.
#include <dlfcn.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>

#include "device/compiled.h"  // to see that the large path is taken
#include "test_util.h"

using namespace vt;
using Catch::Matchers::Contains;

namespace {

// ----- The hooks -----

struct Rule {
  std::string function;
  uint64_t first = 1, count = 1;  // fail calls first .. first + count - 1 (counted from Reset)
  VkResult result = VK_SUCCESS;
};

struct Injector {
  std::mutex mutex;
  std::map<std::string, uint64_t> calls;  // since Reset
  std::vector<Rule> rules;
  uint64_t fired = 0;  // calls made to fail since Reset
  PFN_vkGetInstanceProcAddr loader = nullptr;
  PFN_vkGetDeviceProcAddr device = nullptr;

  void Reset(std::vector<Rule> r = {}) {
    std::lock_guard<std::mutex> lock(mutex);
    calls.clear();
    rules = std::move(r);
    fired = 0;
  }
  std::map<std::string, uint64_t> Calls() {
    std::lock_guard<std::mutex> lock(mutex);
    return calls;
  }
  uint64_t Total() {
    std::lock_guard<std::mutex> lock(mutex);
    uint64_t n = 0;
    for (const auto& kv : calls) n += kv.second;
    return n;
  }
  uint64_t Fired() {
    std::lock_guard<std::mutex> lock(mutex);
    return fired;
  }
  // Counts the call; true (and *result) if a rule makes it fail.
  bool Fail(const char* function, VkResult* result) {
    std::lock_guard<std::mutex> lock(mutex);
    const uint64_t n = ++calls[function];
    for (const Rule& r : rules)
      if (r.function == function && n >= r.first && n - r.first < r.count) {
        *result = r.result;
        ++fired;
        return true;
      }
    return false;
  }
} gInjector;

template <const char* Name, typename Fn>
struct Hook;
template <const char* Name, typename... Args>
struct Hook<Name, VkResult(VKAPI_PTR*)(Args...)> {
  static inline VkResult(VKAPI_PTR* real)(Args...) = nullptr;
  static VkResult VKAPI_PTR Call(Args... args) {
    VkResult r;
    if (gInjector.Fail(Name, &r)) return r;
    return real(args...);
  }
  static void Load(PFN_vkVoidFunction f) { real = reinterpret_cast<decltype(real)>(f); }
};

// The timeline semaphore's counter: a rule's VK_NOT_READY makes it read 0 (the work not done
// yet) instead of failing.
template <const char* Name>
struct Hook<Name, PFN_vkGetSemaphoreCounterValue> {
  static inline PFN_vkGetSemaphoreCounterValue real = nullptr;
  static VkResult VKAPI_PTR Call(VkDevice device, VkSemaphore semaphore, uint64_t* value) {
    VkResult r;
    if (!gInjector.Fail(Name, &r)) return real(device, semaphore, value);
    if (r != VK_NOT_READY) return r;
    r = real(device, semaphore, value);
    *value = 0;
    return r;
  }
  static void Load(PFN_vkVoidFunction f) { real = reinterpret_cast<decltype(real)>(f); }
};

struct Entry {
  const char* name;
  PFN_vkVoidFunction hook;
  void (*load)(PFN_vkVoidFunction);
};

#define VT_FUNCTIONS(X)                     \
  X(vkCreateInstance)                       \
  X(vkEnumerateInstanceLayerProperties)     \
  X(vkEnumerateInstanceExtensionProperties) \
  X(vkEnumeratePhysicalDevices)             \
  X(vkEnumerateDeviceExtensionProperties)   \
  X(vkCreateDevice)                         \
  X(vkCreateDebugUtilsMessengerEXT)         \
  X(vkCreateBuffer)                         \
  X(vkAllocateMemory)                       \
  X(vkBindBufferMemory)                     \
  X(vkMapMemory)                            \
  X(vkCreateShaderModule)                   \
  X(vkCreatePipelineCache)                  \
  X(vkGetPipelineCacheData)                 \
  X(vkCreateComputePipelines)               \
  X(vkCreateDescriptorSetLayout)            \
  X(vkCreatePipelineLayout)                 \
  X(vkCreateDescriptorPool)                 \
  X(vkAllocateDescriptorSets)               \
  X(vkCreateCommandPool)                    \
  X(vkAllocateCommandBuffers)               \
  X(vkCreateFence)                          \
  X(vkCreateSemaphore)                      \
  X(vkResetFences)                          \
  X(vkQueueSubmit)                          \
  X(vkGetFenceStatus)                       \
  X(vkWaitForFences)                        \
  X(vkGetSemaphoreCounterValue)             \
  X(vkGetSemaphoreCounterValueKHR)          \
  X(vkWaitSemaphores)                       \
  X(vkWaitSemaphoresKHR)                    \
  X(vkResetCommandBuffer)                   \
  X(vkBeginCommandBuffer)                   \
  X(vkEndCommandBuffer)                     \
  X(vkDeviceWaitIdle)

#define VT_NAME(fn) constexpr char k_##fn[] = #fn;
VT_FUNCTIONS(VT_NAME)
#define VT_ENTRY(fn)                                                         \
  {#fn, reinterpret_cast<PFN_vkVoidFunction>(&Hook<k_##fn, PFN_##fn>::Call), \
   &Hook<k_##fn, PFN_##fn>::Load},
const Entry kEntries[] = {VT_FUNCTIONS(VT_ENTRY)};

PFN_vkVoidFunction Hooked(const char* name, PFN_vkVoidFunction real) {
  if (!real) return nullptr;
  for (const Entry& e : kEntries)
    if (std::strcmp(name, e.name) == 0) {
      e.load(real);
      return e.hook;
    }
  return real;
}

PFN_vkVoidFunction VKAPI_PTR HookedDeviceProcAddr(VkDevice device, const char* name) {
  if (std::strcmp(name, "vkGetDeviceProcAddr") == 0)
    return reinterpret_cast<PFN_vkVoidFunction>(&HookedDeviceProcAddr);
  return Hooked(name, gInjector.device(device, name));
}

PFN_vkVoidFunction VKAPI_PTR HookedInstanceProcAddr(VkInstance instance, const char* name) {
  if (std::strcmp(name, "vkGetInstanceProcAddr") == 0)
    return reinterpret_cast<PFN_vkVoidFunction>(&HookedInstanceProcAddr);
  if (std::strcmp(name, "vkGetDeviceProcAddr") == 0) {
    gInjector.device = reinterpret_cast<PFN_vkGetDeviceProcAddr>(gInjector.loader(instance, name));
    return reinterpret_cast<PFN_vkVoidFunction>(&HookedDeviceProcAddr);
  }
  return Hooked(name, gInjector.loader(instance, name));
}

// ----- Devices under injection -----

std::mutex gMessagesMutex;
std::vector<std::string> gMessages;  // validation messages of the devices made here

std::vector<std::string> TakeMessages() {
  std::lock_guard<std::mutex> lock(gMessagesMutex);
  std::vector<std::string> m;
  m.swap(gMessages);
  return m;
}

DeviceDesc HookedDesc(uint64_t waitTimeoutNs = UINT64_MAX) {
  if (!gInjector.loader) {
    void* lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    REQUIRE(lib);
    gInjector.loader =
        reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib, "vkGetInstanceProcAddr"));
    REQUIRE(gInjector.loader);
  }
  DeviceDesc d;
  d.enableValidation = true;
  d.onValidationMessage = [](const char* message) {
    std::lock_guard<std::mutex> lock(gMessagesMutex);
    gMessages.push_back(message ? message : "(null)");
  };
  d.getInstanceProcAddr = &HookedInstanceProcAddr;
  d.waitTimeoutNs = waitTimeoutNs;
  return d;
}

// The same VkDevice adopted without the timeline semaphore: Submit and Run wait on a fence.
DeviceDesc FenceDesc(Device& owner) {
  DeviceDesc d = HookedDesc();
  d.instance = owner.Instance();
  d.physicalDevice = owner.PhysicalDevice();
  d.device = owner.Handle();
  d.queue = owner.Queue();
  d.queueFamilyIndex = owner.QueueFamilyIndex();
  d.enabledFeatures = owner.Info().enabled;
  d.enabledFeatures.timelineSemaphore = false;
  return d;
}

// What an injected error must come back as: the out-of-memory codes as OutOfMemory, the rest as
// DeviceError; the message names the function and the VkResult.
void CheckReported(const Result& r, const std::string& function, VkResult injected,
                   const char* resultName) {
  INFO("injected " << resultName << " into " << function << ": " << Str(r));
  const bool memory =
      injected == VK_ERROR_OUT_OF_DEVICE_MEMORY || injected == VK_ERROR_OUT_OF_HOST_MEMORY;
  CHECK(r.status == (memory ? Status::OutOfMemory : Status::DeviceError));
  CHECK_THAT(r.message, Contains(function));
  CHECK_THAT(r.message, Contains(resultName));
}

// The functions whose failure ends the device: a failed wait leaves the work's fate unknown.
bool IsWait(const std::string& f) {
  return f == "vkGetFenceStatus" || f == "vkWaitForFences" || f == "vkGetSemaphoreCounterValue" ||
         f == "vkGetSemaphoreCounterValueKHR" || f == "vkWaitSemaphores" ||
         f == "vkWaitSemaphoresKHR";
}

struct Injected {
  VkResult result;
  const char* name;
};
// What each call is made to return: device loss for submits and waits, a failed pipeline build,
// the loader's and the driver's own failures at instance and device creation, and memory for
// everything that allocates.
Injected ErrorFor(const std::string& f) {
  if (f == "vkQueueSubmit" || IsWait(f)) return {VK_ERROR_DEVICE_LOST, "VK_ERROR_DEVICE_LOST"};
  if (f == "vkCreateComputePipelines") return {VK_ERROR_UNKNOWN, "VK_ERROR_UNKNOWN"};
  if (f == "vkCreateInstance")
    return {VK_ERROR_INCOMPATIBLE_DRIVER, "VK_ERROR_INCOMPATIBLE_DRIVER"};
  if (f == "vkCreateDevice" || f == "vkEnumeratePhysicalDevices")
    return {VK_ERROR_INITIALIZATION_FAILED, "VK_ERROR_INITIALIZATION_FAILED"};
  if (f == "vkEnumerateInstanceLayerProperties" || f == "vkEnumerateInstanceExtensionProperties" ||
      f == "vkEnumerateDeviceExtensionProperties" || f == "vkCreateDebugUtilsMessengerEXT")
    return {VK_ERROR_OUT_OF_HOST_MEMORY, "VK_ERROR_OUT_OF_HOST_MEMORY"};
  return {VK_ERROR_OUT_OF_DEVICE_MEMORY, "VK_ERROR_OUT_OF_DEVICE_MEMORY"};
}

// A GatherElements over n floats (reversing them), compiled and run on a device.
struct Work {
  OpSpec spec;
  std::vector<float> in, expected;
  std::vector<uint32_t> idx;

  explicit Work(UINT n)
      : spec(OpSpec::GatherElements(TensorDesc(DML_TENSOR_DATA_TYPE_FLOAT32, {n}),
                                    TensorDesc(DML_TENSOR_DATA_TYPE_UINT32, {n}),
                                    TensorDesc(DML_TENSOR_DATA_TYPE_FLOAT32, {n}), 0)),
        in(n),
        expected(n),
        idx(n) {
    for (UINT i = 0; i < n; ++i) {
      in[i] = float(i) * 0.5f;
      idx[i] = n - 1 - i;
    }
    for (UINT i = 0; i < n; ++i) expected[i] = in[n - 1 - i];
  }
  Result Create(Device& d, std::unique_ptr<Operator>* op) {
    return d.CreateOperator(spec.Desc(), op);
  }
  Result Compile(Device& d, std::unique_ptr<CompiledOperator>* out) {
    std::unique_ptr<Operator> op;
    Result r = Create(d, &op);
    return r ? d.CompileOperator(*op, VKDML_EXECUTION_FLAG_CHECK_INDICES, out) : r;
  }
  Result Run(Device& d, const CompiledOperator& c, bool* correct = nullptr) {
    std::vector<float> out(in.size(), -1.0f);
    Result r = d.Run(c, {in.data(), idx.data()}, {out.data()});
    if (correct) *correct = out == expected;
    return r;
  }
  // The whole path, and the output checked: the device works.
  void RequireWorks(Device& d) {
    std::unique_ptr<CompiledOperator> c;
    Result r = Compile(d, &c);
    INFO("the device after the failure: " << Str(r));
    REQUIRE(r.ok());
    bool correct = false;
    r = Run(d, *c, &correct);
    INFO(Str(r));
    REQUIRE(r.ok());
    CHECK(correct);
  }
};

// Every later call of a lost device fails at once, with DeviceError, calling no Vulkan function.
void CheckLost(Device& d, Work& w, const CompiledOperator* compiled, BindingTable* table,
               Buffer* buffer) {
  gInjector.Reset();
  std::vector<Result> results;
  std::unique_ptr<Operator> op;
  results.push_back(w.Create(d, &op));
  std::unique_ptr<CompiledOperator> c;
  results.push_back(w.Compile(d, &c));
  std::unique_ptr<Buffer> b;
  results.push_back(d.CreateBuffer(64, Buffer::Memory::DeviceLocal, &b));
  results.push_back(d.Submit([](VkCommandBuffer) {}));
  if (compiled) {
    std::unique_ptr<BindingTable> t;
    results.push_back(d.CreateBindingTable(*compiled, &t));
    results.push_back(w.Run(d, *compiled));
  }
  if (table) {
    results.push_back(d.RecordDispatch(VK_NULL_HANDLE, *table));
    DML_BUFFER_BINDING none[2] = {};
    results.push_back(table->BindInputs(2, none));
    results.push_back(table->IndexStatus());
  }
  if (buffer) {
    uint8_t bytes[4] = {};
    results.push_back(buffer->Write(0, bytes, 4));
    results.push_back(buffer->Read(0, bytes, 4));
  }
  for (const Result& r : results) {
    INFO("a call on the lost device: " << Str(r));
    CHECK(r.status == Status::DeviceError);
    CHECK_THAT(r.message, Contains("the Vulkan device is lost"));
  }
  CHECK(gInjector.Total() == 0);
}

// What a stage prepares on its device before the call: destroyed before the device.
struct Prepared {
  std::unique_ptr<CompiledOperator> compiled;
  std::unique_ptr<Buffer> buffer;
  std::unique_ptr<BindingTable> table;
  void Reset() {
    table.reset();
    buffer.reset();
    compiled.reset();
  }
};

// One stage of the sweep: `prepare` makes what the call needs on a fresh device (none for
// CreateDevice), `call` makes the call. Each call is failed in turn, on a fresh device; then the
// device must work (or, after a failed submit or wait, be lost), and destroying it must leave
// nothing behind.
struct Stage {
  const char* group;  // the TEST_CASE that sweeps it
  const char* name;
  std::function<void(Device&, Prepared*)> prepare;  // null: the call needs no device
  std::function<Result(Device*, Prepared&)> call;
  bool fence = false;  // on the fence path (an adopted device without the timeline semaphore)
};

struct Tally {
  uint64_t calls = 0, injected = 0;
  std::set<std::string> functions;
};
Tally gTally;

void BindForRecord(Device& d, Prepared* p) {
  REQUIRE(d.CreateBuffer(1024, Buffer::Memory::DeviceLocal, &p->buffer).ok());
  REQUIRE(d.CreateBindingTable(*p->compiled, &p->table).ok());
  DML_BUFFER_BINDING in[] = {p->buffer->Binding(0, 256), p->buffer->Binding(256, 256)};
  DML_BUFFER_BINDING out[] = {p->buffer->Binding(512, 256)};
  REQUIRE(p->table->BindInputs(2, in).ok());
  REQUIRE(p->table->BindOutputs(1, out).ok());
}

// baselineOnly: only count the calls the stage makes with nothing injected, into it.
void Sweep(const Stage& s, std::map<std::string, uint64_t>* baselineOnly = nullptr) {
  Work check(64);
  // A fresh device (and, for the fence path, one adopting it), prepared.
  struct Fresh {
    std::unique_ptr<Device> owner, device;
    Prepared prepared;
    Device* Get() { return device ? device.get() : owner.get(); }
  };
  auto fresh = [&](Fresh* f) {
    gInjector.Reset();
    if (!s.prepare) return;
    Result r = CreateDevice(HookedDesc(), &f->owner);
    INFO(Str(r));
    REQUIRE(r.ok());
    if (s.fence) {
      r = CreateDevice(FenceDesc(*f->owner), &f->device);
      INFO(Str(r));
      REQUIRE(r.ok());
      REQUIRE(!f->device->Info().enabled.timelineSemaphore);
    }
    s.prepare(*f->Get(), &f->prepared);
  };
  auto finish = [&](Fresh* f) {
    f->prepared.Reset();
    f->device.reset();
    f->owner.reset();
    std::vector<std::string> m = TakeMessages();
    for (const std::string& msg : m) FAIL_CHECK("validation message: " << msg);
  };
  const auto isSubmit = [](const std::string& f) { return f == "vkQueueSubmit" || IsWait(f); };

  // The calls it makes with nothing injected: a stage that makes none sweeps nothing and fails.
  std::map<std::string, uint64_t> baseline;
  {
    Fresh f;
    fresh(&f);
    gInjector.Reset();
    Result r = s.call(f.Get(), f.prepared);
    INFO(s.name << " with nothing injected: " << Str(r));
    REQUIRE(r.ok());
    baseline = gInjector.Calls();
    if (f.Get()) check.RequireWorks(*f.Get());
    finish(&f);
  }
  baseline.erase("vkDeviceWaitIdle");  // only destructors wait: nothing reports it
  if (baselineOnly) {
    *baselineOnly = baseline;
    return;
  }
  INFO(s.name << (s.fence ? " (fence path)" : "") << ": no Vulkan call to fail");
  REQUIRE(!baseline.empty());
  std::string counted;
  for (const auto& kv : baseline) counted += " " + kv.first + " x" + std::to_string(kv.second);
  WARN(s.name << (s.fence ? " (fence path)" : "") << " makes" << counted);

  for (const auto& kv : baseline) {
    // A poll repeats one call until the work is done: failing its first and second calls covers
    // it (how many there are depends on the work's speed).
    const bool poll = kv.first == "vkGetFenceStatus" || kv.first == "vkGetSemaphoreCounterValue" ||
                      kv.first == "vkGetSemaphoreCounterValueKHR";
    for (uint64_t n = 1; n <= (poll ? std::min<uint64_t>(kv.second, 2) : kv.second); ++n) {
      const std::string& function = kv.first;
      const Injected err = ErrorFor(function);
      INFO(s.name << (s.fence ? " (fence path)" : "") << ": call " << n << " of " << function
                  << " returns " << err.name);
      Fresh f;
      fresh(&f);
      gInjector.Reset({{function, n, 1, err.result}});
      Result r = s.call(f.Get(), f.prepared);
      const std::map<std::string, uint64_t> calls = gInjector.Calls();
      const bool fired = gInjector.Fired() != 0;
      gInjector.Reset();
      ++gTally.calls;
      gTally.functions.insert(function);
      if (!fired) {  // a poll that the work outran this time
        INFO("not reached this time: " << Str(r));
        CHECK(IsWait(function));
        CHECK(r.ok());
      } else if (r.ok()) {
        // Only a documented fallback absorbs a failure: memory the host writes and the GPU reads
        // comes from host memory when the device's own mappable memory fails, and a checked
        // operator's scratch from device-local memory (buffer.h: CreateScratch).
        ++gTally.injected;
        INFO("succeeded despite the failure");
        CHECK(function == "vkAllocateMemory");
        CHECK(calls.at(function) == kv.second + 1);
      } else {
        ++gTally.injected;
        CheckReported(r, function, err.result, err.name);
      }
      if (f.Get() && fired && !r.ok() && isSubmit(function)) {
        Prepared& p = f.prepared;
        CheckLost(*f.Get(), check, p.compiled.get(), p.table.get(), p.buffer.get());
      } else if (f.Get()) {  // usable: the same call again, then a whole run
        Result again = s.call(f.Get(), f.prepared);
        INFO("the same call again: " << Str(again));
        CHECK(again.ok());
        check.RequireWorks(*f.Get());
      }
      finish(&f);
    }
  }
}

// Every stage the sweeps fail call by call, in one table: the TEST_CASEs below each sweep one
// group, and "every hooked call is swept" runs each stage once to see that together they make
// every call the hooks list. The objects the stages use live in `Scratch`.
struct Scratch {
  Work w64{64}, w1k{1024}, w128k{1 << 17};
  OpSpec scatter = OpSpec::ScatterElements(TensorDesc(DML_TENSOR_DATA_TYPE_INT32, {64}),
                                           TensorDesc(DML_TENSOR_DATA_TYPE_INT32, {16}),
                                           TensorDesc(DML_TENSOR_DATA_TYPE_INT32, {16}),
                                           TensorDesc(DML_TENSOR_DATA_TYPE_INT32, {64}), 0)
                       .WithReduce(VKDML_REDUCE_FUNCTION_ADD);
};

std::vector<Stage> Stages(Scratch& s) {
  const auto none = [](Device&, Prepared*) {};
  const auto compile = [&s](Device& d, Prepared* p) {
    REQUIRE(s.w64.Compile(d, &p->compiled).ok());
  };
  // A deterministic scatter with a reduction: the sort's pipelines and buffers too.
  const auto compileScatter = [&s](Device& d, Prepared* p) {
    std::unique_ptr<Operator> op;
    REQUIRE(d.CreateOperator(s.scatter.Desc(), &op).ok());
    REQUIRE(d.CompileOperator(*op, VKDML_EXECUTION_FLAG_DETERMINISTIC, &p->compiled).ok());
  };
  // A 1 KiB binding range sends 4 KiB tensors down the large path: one descriptor set per
  // window (lib/kernels/kernels.h: LargeDispatch).
  const auto compileLarge = [&s](Device& d, Prepared* p) {
    ScopedSwitch range("VKDML_MAX_BINDING_RANGE", "1024", d);
    REQUIRE(s.w1k.Compile(d, &p->compiled).ok());
    const auto& c = static_cast<const detail::CompiledOperatorImpl&>(*p->compiled);
    REQUIRE(c.state->kernels.large);
  };
  const auto table = [](Device* d, Prepared& p) {
    std::unique_ptr<BindingTable> t;
    return d->CreateBindingTable(*p.compiled, &t);
  };
  // RecordDispatch records commands only (no Vulkan call of it returns a VkResult); Submit
  // around it makes the calls that can fail.
  const auto submit = [](Device* d, Prepared& p) {
    Result recorded;
    Result r = d->Submit([&](VkCommandBuffer cmd) { recorded = d->RecordDispatch(cmd, *p.table); });
    return r ? recorded : r;
  };
  const auto deviceLocal = [](Device& d, Prepared* p) {
    REQUIRE(d.CreateBuffer(1 << 20, Buffer::Memory::DeviceLocal, &p->buffer).ok());
  };
  std::vector<Stage> stages = {
      {"CreateDevice", "CreateDevice", nullptr,
       [](Device*, Prepared&) {
         std::unique_ptr<Device> d;
         return CreateDevice(HookedDesc(), &d);
       }},
      // Adopting the caller's VkDevice without the timeline semaphore: its fence.
      {"CreateDevice", "CreateDevice (adopting a VkDevice, on a fence)", none,
       [](Device* owner, Prepared&) {
         std::unique_ptr<Device> d;
         return CreateDevice(FenceDesc(*owner), &d);
       }},
      {"CompileOperator", "CompileOperator", none,
       [&s](Device* d, Prepared&) {
         std::unique_ptr<CompiledOperator> c;
         return s.w64.Compile(*d, &c);
       }},
      {"CompileOperator", "CompileOperator (deterministic scatter)", none,
       [&s](Device* d, Prepared&) {
         std::unique_ptr<Operator> op;
         Result r = d->CreateOperator(s.scatter.Desc(), &op);
         std::unique_ptr<CompiledOperator> c;
         return r ? d->CompileOperator(*op, VKDML_EXECUTION_FLAG_DETERMINISTIC, &c) : r;
       }},
      {"CreateBindingTable", "CreateBindingTable", compile, table},
      // A deterministic scatter's table has sort buffers of its own.
      {"CreateBindingTable", "CreateBindingTable (deterministic scatter)", compileScatter, table},
      {"CreateBindingTable", "CreateBindingTable (large path)", compileLarge, table},
      {"Submit", "Submit(RecordDispatch)",
       [&s](Device& d, Prepared* p) {
         REQUIRE(s.w64.Compile(d, &p->compiled).ok());
         BindForRecord(d, p);
       },
       submit},
      // Run bound directly (64 floats) and staged through device memory (2^17).
      {"Run", "Run", compile, [&s](Device* d, Prepared& p) { return s.w64.Run(*d, *p.compiled); }},
      {"Run", "Run (staged)",
       [&s](Device& d, Prepared* p) { REQUIRE(s.w128k.Compile(d, &p->compiled).ok()); },
       [&s](Device* d, Prepared& p) { return s.w128k.Run(*d, *p.compiled); }},
      {"Run", "Run (large path)", compileLarge,
       [&s](Device* d, Prepared& p) { return s.w1k.Run(*d, *p.compiled); }},
      {"Buffers", "CreateBuffer (device-local)", none,
       [](Device* d, Prepared& p) {
         return d->CreateBuffer(1 << 20, Buffer::Memory::DeviceLocal, &p.buffer);
       }},
      {"Buffers", "CreateBuffer (host-visible)", none,
       [](Device* d, Prepared& p) {
         return d->CreateBuffer(1 << 20, Buffer::Memory::HostVisible, &p.buffer);
       }},
      // Device-local buffers are written and read through staging, a submit each.
      {"Buffers", "Buffer::Write (device-local)", deviceLocal,
       [](Device*, Prepared& p) {
         std::vector<uint8_t> bytes(1 << 20, 7);
         return p.buffer->Write(0, bytes.data(), bytes.size());
       }},
      {"Buffers", "Buffer::Read (device-local)", deviceLocal,
       [](Device*, Prepared& p) {
         std::vector<uint8_t> bytes(1 << 20);
         return p.buffer->Read(0, bytes.data(), bytes.size());
       }},
      {"CreateDevice", "EnumerateDevices", nullptr,
       [](Device*, Prepared&) {
         std::vector<DeviceInfo> devices;
         Result r = EnumerateDevices(&devices, &HookedInstanceProcAddr);
         if (r.ok() && devices.empty()) return Result{Status::DeviceError, "no device listed"};
         return r;
       }},
      {"Buffers", "GetPipelineCacheData", compile,
       [](Device* d, Prepared&) {
         std::vector<uint8_t> data;
         return d->GetPipelineCacheData(&data);
       }},
  };
  // Submit and Run again on the fence path (an adopted device without the timeline semaphore).
  const size_t n = stages.size();
  for (size_t i = 0; i < n; ++i)
    if (std::strcmp(stages[i].group, "Submit") == 0 || std::strcmp(stages[i].group, "Run") == 0) {
      stages.push_back(stages[i]);
      stages.back().fence = true;
    }
  return stages;
}

void SweepGroup(const char* group) {
  Scratch scratch;
  int swept = 0;
  const Tally before = gTally;
  for (const Stage& stage : Stages(scratch))
    if (std::strcmp(stage.group, group) == 0) {
      Sweep(stage);
      ++swept;
    }
  REQUIRE(swept > 0);
  // For the README's reliability figures.
  WARN("fault sweep " << group << ": " << swept << " stages, " << gTally.calls - before.calls
                      << " calls swept, " << gTally.injected - before.injected
                      << " failures injected");
}

}  // namespace

TEST_CASE("Faults: every Vulkan call of CreateDevice fails in turn", "[faults]") {
  // Each failed CreateDevice was followed by a successful one (the next call's).
  SweepGroup("CreateDevice");
}

TEST_CASE("Faults: every Vulkan call of CompileOperator fails in turn", "[faults]") {
  SweepGroup("CompileOperator");
}

TEST_CASE("Faults: every Vulkan call of CreateBindingTable fails in turn", "[faults]") {
  SweepGroup("CreateBindingTable");
}

TEST_CASE("Faults: RecordDispatch and Submit, every call failed in turn", "[faults]") {
  SweepGroup("Submit");
}

TEST_CASE("Faults: every Vulkan call of Run fails in turn", "[faults]") {
  SweepGroup("Run");
}

TEST_CASE("Faults: CreateBuffer, Buffer::Write and Read, GetPipelineCacheData, every call failed",
          "[faults]") {
  SweepGroup("Buffers");
}

TEST_CASE("Faults: a failed submit that ran nothing leaves the device usable", "[faults]") {
  for (Injected err : {Injected{VK_ERROR_OUT_OF_HOST_MEMORY, "VK_ERROR_OUT_OF_HOST_MEMORY"},
                       Injected{VK_ERROR_OUT_OF_DEVICE_MEMORY, "VK_ERROR_OUT_OF_DEVICE_MEMORY"}}) {
    std::unique_ptr<Device> d;
    REQUIRE(CreateDevice(HookedDesc(), &d).ok());
    Work w(64);
    std::unique_ptr<CompiledOperator> c;
    REQUIRE(w.Compile(*d, &c).ok());
    gInjector.Reset({{"vkQueueSubmit", 1, 1, err.result}});
    Result run = w.Run(*d, *c);
    gInjector.Reset();
    CheckReported(run, "vkQueueSubmit", err.result, err.name);
    w.RequireWorks(*d);
    c.reset();
    d.reset();
    for (const std::string& m : TakeMessages()) FAIL_CHECK("validation message: " << m);
  }
}

TEST_CASE("Faults: after device loss every call fails at once", "[faults]") {
  for (const char* wait : {"vkQueueSubmit", "vkGetSemaphoreCounterValueKHR"}) {
    std::unique_ptr<Device> d;
    REQUIRE(CreateDevice(HookedDesc(), &d).ok());
    Work w(64);
    Prepared p;
    REQUIRE(w.Compile(*d, &p.compiled).ok());
    BindForRecord(*d, &p);
    gInjector.Reset({{wait, 1, 1, VK_ERROR_DEVICE_LOST}});
    Result run = w.Run(*d, *p.compiled);
    gInjector.Reset();
    INFO(Str(run));
    REQUIRE(run.status == Status::DeviceError);
    CHECK_THAT(run.message, Contains(std::string(wait) + " failed: VK_ERROR_DEVICE_LOST"));
    CheckLost(*d, w, p.compiled.get(), p.table.get(), p.buffer.get());
    p.Reset();
    d.reset();
    CHECK(TakeMessages().empty());
  }
}

TEST_CASE("Faults: waits give up after DeviceDesc.waitTimeoutNs", "[faults]") {
  CHECK(DeviceDesc{}.waitTimeoutNs == UINT64_MAX);  // no bound unless the caller sets one
  Work w(64);
  SECTION("an injected VK_TIMEOUT, on the timeline semaphore and on the fence") {
    const uint64_t bound = 10000000000;  // 10 s: VK_TIMEOUT comes from the hook
    for (bool fence : {false, true}) {
      std::unique_ptr<Device> owner, d;
      REQUIRE(CreateDevice(HookedDesc(bound), &owner).ok());
      if (fence) {
        DeviceDesc desc = FenceDesc(*owner);
        desc.waitTimeoutNs = bound;
        REQUIRE(CreateDevice(desc, &d).ok());
      }
      Device& dev = fence ? *d : *owner;
      Prepared p;
      REQUIRE(w.Compile(dev, &p.compiled).ok());
      // The work never looks done to a poll, so the blocking wait runs: first the real one,
      // which succeeds, then one that gives up.
      const char* poll = fence ? "vkGetFenceStatus" : "vkGetSemaphoreCounterValueKHR";
      const char* block = fence ? "vkWaitForFences" : "vkWaitSemaphoresKHR";
      gInjector.Reset({{poll, 1, UINT64_MAX, VK_NOT_READY}});
      bool correct = false;
      Result r = w.Run(dev, *p.compiled, &correct);
      CHECK(gInjector.Calls()[block] == 1);
      INFO(Str(r));
      CHECK(r.ok());
      CHECK(correct);
      gInjector.Reset({{poll, 1, UINT64_MAX, VK_NOT_READY}, {block, 1, 1, VK_TIMEOUT}});
      r = w.Run(dev, *p.compiled);
      gInjector.Reset();
      INFO(Str(r));
      CHECK(r.status == Status::DeviceError);
      CHECK_THAT(r.message, Contains(std::string(block) +
                                     " gave up: the work did not complete within 10000000000 ns "
                                     "(DeviceDesc.waitTimeoutNs), VK_TIMEOUT"));
      CheckLost(dev, w, p.compiled.get(), nullptr, nullptr);
      p.Reset();
      d.reset();
      owner.reset();
      for (const std::string& m : TakeMessages()) FAIL_CHECK("validation message: " << m);
    }
  }
  SECTION("a bound of 0 and real work") {
    // A 64 MiB Buffer::Write (a staging copy) cannot be done by the first poll after its submit.
    std::unique_ptr<Device> d;
    REQUIRE(CreateDevice(HookedDesc(0), &d).ok());
    Prepared p;
    const uint64_t size = 64ull << 20;
    REQUIRE(d->CreateBuffer(size, Buffer::Memory::DeviceLocal, &p.buffer).ok());
    std::vector<uint8_t> bytes(size, 7);
    Result r = p.buffer->Write(0, bytes.data(), size);
    INFO(Str(r));
    CHECK(r.status == Status::DeviceError);
    CHECK_THAT(r.message, Contains("within 0 ns (DeviceDesc.waitTimeoutNs), VK_TIMEOUT"));
    CheckLost(*d, w, nullptr, nullptr, p.buffer.get());
    p.Reset();  // waits for the copy, which may still run
    d.reset();
    for (const std::string& m : TakeMessages()) FAIL_CHECK("validation message: " << m);
  }
}

// The hooks are the one list of the Vulkan calls that can fail: every function lib/ calls whose
// PFN returns VkResult (read from the sources in lib/ and its folders, and vulkan_core.h) must be
// in it, and nothing else.
TEST_CASE("Faults: the hooks name every VkResult call lib/ makes", "[faults]") {
  const auto read = [](const std::string& path) {
    std::ifstream f(path);
    INFO("reading " << path);
    REQUIRE(f);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  };
  std::set<std::string> returnsResult;
  const std::regex pfn("typedef VkResult \\(VKAPI_PTR \\*PFN_(vk\\w+)\\)");
  const std::string header = read(VKDML_TEST_VULKAN_CORE_H);
  for (std::sregex_iterator it(header.begin(), header.end(), pfn), end; it != end; ++it)
    returnsResult.insert((*it)[1]);
  REQUIRE(returnsResult.size() > 100);
  std::set<std::string> called;  // identifiers of such functions in lib/'s code, not comments
  const std::regex comment("//[^\\n]*"), identifier("\\bvk[A-Z]\\w*");
  int files = 0;
  for (const auto& entry :
       std::filesystem::recursive_directory_iterator(VKDML_TEST_SOURCE_DIR "/lib")) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".cpp" && ext != ".h") continue;
    ++files;
    const std::string code = std::regex_replace(read(entry.path().string()), comment, "");
    for (std::sregex_iterator it(code.begin(), code.end(), identifier), end; it != end; ++it)
      if (returnsResult.count(it->str())) called.insert(it->str());
  }
  REQUIRE(files > 10);
  std::set<std::string> hooked;
  for (const Entry& e : kEntries) hooked.insert(e.name);
  for (const std::string& f : called) {
    INFO(f << " returns a VkResult and lib/ calls it: add it to VT_FUNCTIONS (test_faults.cpp)");
    CHECK(hooked.count(f) == 1);
  }
  for (const std::string& f : hooked) {
    INFO(f << " is hooked but lib/ never calls it: remove it from VT_FUNCTIONS");
    CHECK(called.count(f) == 1);
  }
}

// Together the stages make every hooked call (so the sweeps fail each in turn), but for
// vkDeviceWaitIdle (only destructors wait, and nothing reports it) and, of the timeline
// semaphore's KHR and core entry points, the one this device does not take. Each stage runs once
// with nothing injected; the totals are printed for the README's reliability figures.
TEST_CASE("Faults: every hooked call is swept", "[faults]") {
  Scratch scratch;
  std::map<std::string, uint64_t> total;
  size_t stages = 0;
  for (const Stage& stage : Stages(scratch)) {
    std::map<std::string, uint64_t> calls;
    Sweep(stage, &calls);
    INFO(stage.name << " makes no Vulkan call");
    CHECK(!calls.empty());
    for (const auto& kv : calls) total[kv.first] += kv.second;
    ++stages;
  }
  std::set<std::string> missing;
  for (const Entry& e : kEntries)
    if (!total.count(e.name)) missing.insert(e.name);
  missing.erase("vkDeviceWaitIdle");
  for (const char* f : {"vkGetSemaphoreCounterValue", "vkWaitSemaphores"}) {
    const std::string khr = std::string(f) + "KHR";
    if (total.count(f) || total.count(khr)) {
      missing.erase(f);
      missing.erase(khr);
    }
  }
  std::string names;
  for (const std::string& f : missing) names += " " + f;
  INFO("hooked calls no stage makes:" << names);
  CHECK(missing.empty());
  uint64_t calls = 0;
  for (const auto& kv : total) calls += kv.second;
  WARN("fault sweep: " << stages << " stages, " << calls << " calls of " << total.size()
                       << " Vulkan functions with nothing injected");
}
