// Pipeline cache: every pipeline vkdml creates goes through one VkPipelineCache, vkdml's own
// (seeded with DeviceDesc::pipelineCacheData) or the caller's (DeviceDesc::pipelineCache), and
// GetPipelineCacheData reads it out. A hooking vkGetInstanceProcAddr (vk_hooks.h) shows which
// cache each pipeline is created with and the data each cache starts from.
#include <set>

#include "op_cases.h"
#include "test_util.h"
#include "vk_hooks.h"

using namespace vt;

namespace {

constexpr size_t kHeaderBytes = sizeof(VkPipelineCacheHeaderVersionOne);

// A device of vkdml's own through the hooks, with the validation layer; its messages land in
// *messages.
DeviceDesc Hooked(std::vector<std::string>* messages) {
  DeviceDesc d;
  d.getInstanceProcAddr = hooks::GetInstanceProcAddr();
  d.enableValidation = true;
  d.onValidationMessage = [messages](const char* m) { messages->push_back(m); };
  return d;
}

// Runs one operator of every kind on `device` (compiling each), checking every output.
void RunEveryKind(Device& device) {
  Rng rng(BaseSeed());
  for (int kind = 0; kind < kOpKinds; ++kind) {
    OpCase c = MakeOpCase(kind, rng);
    std::string error = RunOpCase(device, c);
    INFO("kind " << kind);
    CHECK(error == "");
  }
}

// The caches the recorded pipelines were created with.
std::set<VkPipelineCache> CachesUsed() {
  const auto& seen = hooks::Seen().pipelineCaches;
  return std::set<VkPipelineCache>(seen.begin(), seen.end());
}

VkPipelineCacheHeaderVersionOne Header(const std::vector<uint8_t>& data) {
  VkPipelineCacheHeaderVersionOne h{};
  REQUIRE(data.size() >= kHeaderBytes);
  std::memcpy(&h, data.data(), kHeaderBytes);
  return h;
}

}  // namespace

TEST_CASE_METHOD(Fixture, "Pipeline cache: vkdml's own, seeded with an earlier device's data",
                 "[cache]") {
  REQUIRE(hooks::LoaderGetInstanceProcAddr());
  std::vector<std::string> messages;
  std::vector<uint8_t> data;
  {
    hooks::Reset();
    std::unique_ptr<Device> first;
    Result r = CreateDevice(Hooked(&messages), &first);
    INFO(Str(r));
    REQUIRE(r.ok());
    RunEveryKind(*first);
    // Every pipeline went through the one cache the device made, which started empty.
    REQUIRE(hooks::Seen().initialData.size() == 1);
    CHECK(hooks::Seen().initialData[0].empty());
    CHECK(hooks::Seen().pipelineCaches.size() >= size_t(kOpKinds));
    CHECK(CachesUsed().size() == 1);
    CHECK(*CachesUsed().begin() != VK_NULL_HANDLE);
    REQUIRE(first->GetPipelineCacheData(&data).ok());
  }
  // The data is a Vulkan pipeline cache of this physical device.
  const VkPipelineCacheHeaderVersionOne h = Header(data);
  CHECK(h.headerSize == kHeaderBytes);
  CHECK(h.headerVersion == VK_PIPELINE_CACHE_HEADER_VERSION_ONE);
  VkPhysicalDeviceProperties props;
  auto properties = reinterpret_cast<PFN_vkGetPhysicalDeviceProperties>(
      hooks::LoaderGetInstanceProcAddr()(Dev().Instance(), "vkGetPhysicalDeviceProperties"));
  properties(Dev().PhysicalDevice(), &props);
  CHECK(h.vendorID == props.vendorID);
  CHECK(h.deviceID == props.deviceID);
  CHECK(std::memcmp(h.pipelineCacheUUID, props.pipelineCacheUUID, VK_UUID_SIZE) == 0);

  // A second device starts its cache from exactly that data and compiles the same operators.
  hooks::Reset();
  DeviceDesc desc = Hooked(&messages);
  desc.pipelineCacheData = data;
  std::unique_ptr<Device> second;
  REQUIRE(CreateDevice(desc, &second).ok());
  REQUIRE(hooks::Seen().initialData.size() == 1);
  CHECK(hooks::Seen().initialData[0] == data);
  RunEveryKind(*second);
  CHECK(CachesUsed().size() == 1);
  std::vector<uint8_t> again;
  REQUIRE(second->GetPipelineCacheData(&again).ok());
  REQUIRE(again.size() >= kHeaderBytes);
  CHECK(std::memcmp(again.data(), data.data(), kHeaderBytes) == 0);
  second.reset();
  INFO("validation messages: " << messages.size() << (messages.empty() ? "" : messages[0]));
  CHECK(messages.empty());
}

TEST_CASE_METHOD(Fixture, "Pipeline cache: pipelineCacheData that is no pipeline cache",
                 "[cache]") {
  std::vector<uint8_t> data;
  REQUIRE(Dev().GetPipelineCacheData(&data).ok());
  REQUIRE(data.size() >= kHeaderBytes);
  // The device's own data with byte `at` set to v (little-endian header fields).
  auto patched = [&](size_t at, uint8_t v) {
    std::vector<uint8_t> d = data;
    d[at] = v;
    return d;
  };
  const struct {
    const char* what;
    std::vector<uint8_t> data;
    const char* message;
  } bad[] = {
      {"10 bytes", std::vector<uint8_t>(10, 1),
       "DeviceDesc.pipelineCacheData is 10 bytes, expected at least 32"},
      {"headerSize 8", patched(0, 8),
       "DeviceDesc.pipelineCacheData: headerSize is 8, expected 32 to "},
      {"headerVersion 7", patched(4, 7),
       "DeviceDesc.pipelineCacheData: headerVersion is 7, expected 1"},
  };
  for (const auto& b : bad) {
    INFO(b.what);
    DeviceDesc desc;
    desc.pipelineCacheData = b.data;
    std::unique_ptr<Device> device;
    Result r = CreateDevice(desc, &device);
    INFO(Str(r));
    CHECK(r.status == Status::InvalidArgument);
    CHECK_THAT(r.message, Catch::Matchers::StartsWith(b.message));
    CHECK(!device);
  }

  // Another device's (or driver version's) data is left out: the cache starts empty.
  hooks::Reset();
  std::vector<std::string> messages;
  DeviceDesc desc = Hooked(&messages);
  desc.pipelineCacheData = data;
  desc.pipelineCacheData[8] ^= 0x5A;  // vendorID
  std::unique_ptr<Device> device;
  REQUIRE(CreateDevice(desc, &device).ok());
  REQUIRE(hooks::Seen().initialData.size() == 1);
  CHECK(hooks::Seen().initialData[0].empty());
  Rng rng(BaseSeed());
  OpCase c = MakeOpCase(3, rng);
  CHECK(RunOpCase(*device, c) == "");
  CHECK(messages.empty());
}

TEST_CASE_METHOD(Fixture, "Pipeline cache: the caller's VkPipelineCache, borrowed", "[cache]") {
  Device& owner = Dev();
  auto proc = [&](const char* name) { return owner.GetDeviceProcAddr()(owner.Handle(), name); };
  auto create = reinterpret_cast<PFN_vkCreatePipelineCache>(proc("vkCreatePipelineCache"));
  auto destroy = reinterpret_cast<PFN_vkDestroyPipelineCache>(proc("vkDestroyPipelineCache"));
  auto getData = reinterpret_cast<PFN_vkGetPipelineCacheData>(proc("vkGetPipelineCacheData"));
  VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  VkPipelineCache mine;
  REQUIRE(create(owner.Handle(), &ci, nullptr, &mine) == VK_SUCCESS);

  DeviceDesc desc = Borrowed(owner, owner.Info().enabled);
  desc.getInstanceProcAddr = hooks::GetInstanceProcAddr();
  desc.pipelineCache = mine;
  SECTION("every pipeline goes through it, and it outlives the Device") {
    hooks::Reset();
    std::unique_ptr<Device> borrowed;
    Result r = CreateDevice(desc, &borrowed);
    INFO(Str(r));
    REQUIRE(r.ok());
    CHECK(hooks::Seen().initialData.empty());  // no cache of vkdml's own
    RunEveryKind(*borrowed);
    CHECK(CachesUsed() == std::set<VkPipelineCache>{mine});
    std::vector<uint8_t> data;
    REQUIRE(borrowed->GetPipelineCacheData(&data).ok());
    size_t size = 0;
    REQUIRE(getData(owner.Handle(), mine, &size, nullptr) == VK_SUCCESS);
    CHECK(data.size() == size);
    borrowed.reset();
    // Still the caller's: readable, and destroyed once, by the caller (the validation layer
    // would report a second destruction or a use after it).
    REQUIRE(getData(owner.Handle(), mine, &size, nullptr) == VK_SUCCESS);
  }
  SECTION("with pipelineCacheData too: refused") {
    desc.pipelineCacheData.assign(64, 0);
    std::unique_ptr<Device> borrowed;
    Result r = CreateDevice(desc, &borrowed);
    CHECK(r.status == Status::InvalidArgument);
    CHECK_THAT(r.message, Catch::Matchers::Contains("pipelineCache and pipelineCacheData are "
                                                    "both set"));
  }
  SECTION("without the device it belongs to: refused") {
    DeviceDesc own;
    own.pipelineCache = mine;
    std::unique_ptr<Device> device;
    Result r = CreateDevice(own, &device);
    CHECK(r.status == Status::InvalidArgument);
    CHECK_THAT(r.message, Catch::Matchers::StartsWith("DeviceDesc.pipelineCache is set but device "
                                                      "is not"));
  }
  destroy(owner.Handle(), mine, nullptr);
  RequireNoValidationMessages();
}
