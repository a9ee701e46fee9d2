// The device plan (lib/device/device_plan.h) and the feature table (lib/device/device_features.h)
// on made-up devices: what vkdml enables, in which Vulkan structures, and what it refuses of an
// adopted device. No GPU.
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "device/device_plan.h"
#include "test_util.h"

using namespace vt;
using vkdml::detail::ChainPlan;
using vkdml::detail::CheckClaimedFeatures;
using vkdml::detail::DevicePlan;
using vkdml::detail::Feature;
using vkdml::detail::FeatureChain;
using vkdml::detail::kFeatures;
using vkdml::detail::PlanDevice;
using vkdml::detail::ReadFeatures;

namespace {

DeviceInfo MadeUp(uint32_t apiVersion, DeviceFeatures available) {
  DeviceInfo info;
  info.name = "Made-up GPU";
  info.apiVersion = apiVersion;
  info.available = available;
  return info;
}

DeviceFeatures All() {
  DeviceFeatures all;
  for (const Feature& f : kFeatures) all.*f.member = true;
  return all;
}

// The structure types chained under a FeatureChain's `features`.
std::set<VkStructureType> Chained(const FeatureChain& chain) {
  std::set<VkStructureType> types;
  for (auto* s = static_cast<const VkBaseInStructure*>(chain.features.pNext); s; s = s->pNext)
    types.insert(s->sType);
  return types;
}

bool Contains(const std::vector<const char*>& list, const char* name) {
  for (const char* e : list)
    if (std::strcmp(e, name) == 0) return true;
  return false;
}

}  // namespace

TEST_CASE("Device plan: the feature table names every DeviceFeatures member once",
          "[device-plan]") {
  std::set<std::string> names;
  for (const Feature& f : kFeatures) {
    INFO(f.name);
    CHECK(names.insert(f.name).second);
    DeviceFeatures one;
    one.*f.member = true;
    FeatureChain chain;  // each feature has its own VkBool32
    *f.field(chain) = VK_TRUE;
    int set = 0;
    for (const Feature& g : kFeatures) set += *g.field(chain) == VK_TRUE;
    CHECK(set == 1);
  }
  CHECK(names.size() * sizeof(bool) == sizeof(DeviceFeatures));
}

TEST_CASE("Device plan: every feature the device has, with the extensions it needs",
          "[device-plan]") {
  DevicePlan plan;
  const std::vector<std::string> extensions = {"VK_KHR_portability_subset"};
  REQUIRE(PlanDevice(MadeUp(VK_API_VERSION_1_1, All()), extensions, &plan).ok());
  for (const Feature& f : kFeatures) CHECK(plan.enable.*f.member);
  // Each extension once (both denormal features come from VK_KHR_shader_float_controls), the
  // portability subset first.
  REQUIRE(plan.extensions.size() == 6);
  CHECK(std::strcmp(plan.extensions[0], "VK_KHR_portability_subset") == 0);
  for (const char* e :
       {VK_KHR_8BIT_STORAGE_EXTENSION_NAME, VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME,
        VK_KHR_SHADER_ATOMIC_INT64_EXTENSION_NAME, VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME,
        VK_KHR_SHADER_FLOAT_CONTROLS_EXTENSION_NAME})
    CHECK(Contains(plan.extensions, e));
  FeatureChain chain;
  ChainPlan(plan, &chain);
  CHECK(chain.features.features.shaderFloat64 == VK_TRUE);
  CHECK(chain.storage8.storageBuffer8BitAccess == VK_TRUE);
  CHECK(Chained(chain) == std::set<VkStructureType>{
                              VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
                              VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES,
                              VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES,
                              VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_INT64_FEATURES,
                              VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT});
}

TEST_CASE("Device plan: a device of Vulkan 1.1's minimum asks for no extension", "[device-plan]") {
  DevicePlan plan;
  REQUIRE(PlanDevice(MadeUp(VK_API_VERSION_1_1, {}), {}, &plan).ok());
  CHECK(plan.extensions.empty());
  for (const Feature& f : kFeatures) CHECK(!(plan.enable.*f.member));
  FeatureChain chain;
  ChainPlan(plan, &chain);
  // Only Vulkan 1.1's own structure, every feature off.
  CHECK(Chained(chain) ==
        std::set<VkStructureType>{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES});
  for (const Feature& f : kFeatures) CHECK(*f.field(chain) == VK_FALSE);
  // 16-bit storage alone: no extension (it is Vulkan 1.1's).
  DeviceFeatures s16;
  s16.storageBuffer16BitAccess = true;
  REQUIRE(PlanDevice(MadeUp(VK_API_VERSION_1_1, s16), {}, &plan).ok());
  CHECK(plan.extensions.empty());
  CHECK(plan.enable.storageBuffer16BitAccess);
}

TEST_CASE("Device plan: a Vulkan 1.0 device is refused", "[device-plan]") {
  DevicePlan plan;
  const Result r = PlanDevice(MadeUp(VK_API_VERSION_1_0, All()), {}, &plan);
  CHECK(r.status == Status::Unsupported);
  CHECK(r.message ==
        "Vulkan device Made-up GPU supports Vulkan 1.0, expected 1.1: install a newer driver");
}

TEST_CASE("Device plan: an adopted device's claims are checked feature by feature",
          "[device-plan]") {
  for (const Feature& f : kFeatures) {
    INFO(f.name);
    DeviceFeatures lacking = All();
    lacking.*f.member = false;
    DeviceFeatures claimed;
    claimed.*f.member = true;
    const Result r = CheckClaimedFeatures(MadeUp(VK_API_VERSION_1_2, lacking), claimed);
    CHECK(r.status == Status::InvalidArgument);
    CHECK(r.message == std::string("DeviceDesc.enabledFeatures.") + f.name +
                           " is set, but Made-up GPU does not support it");
    CHECK(CheckClaimedFeatures(MadeUp(VK_API_VERSION_1_2, All()), claimed).ok());
    CHECK(CheckClaimedFeatures(MadeUp(VK_API_VERSION_1_2, lacking), {}).ok());
  }
}

TEST_CASE("Device plan: a feature counts only where its extension is present", "[device-plan]") {
  FeatureChain chain;
  for (const Feature& f : kFeatures) *f.field(chain) = VK_TRUE;  // as a driver might leave them
  const DeviceFeatures none = ReadFeatures(chain, [](const char*) { return false; });
  for (const Feature& f : kFeatures) {
    INFO(f.name);
    CHECK((none.*f.member) == (f.extension == nullptr));  // Vulkan 1.1's core only
  }
  const DeviceFeatures all = ReadFeatures(chain, [](const char*) { return true; });
  for (const Feature& f : kFeatures) CHECK(all.*f.member);
}

// The limits vkdml's kernels need, none above Vulkan 1.1's minimum (lib/device/device_plan.h:
// CheckLimits): a device at them all is taken, one just below any is refused by name.
TEST_CASE("Device plan: a device below the limits the kernels need is refused by name",
          "[device-plan]") {
  VkPhysicalDeviceLimits enough{};
  enough.maxPerStageDescriptorStorageBuffers = enough.maxDescriptorSetStorageBuffers = 4;
  enough.maxPerStageResources = 5;
  enough.maxComputeWorkGroupInvocations = enough.maxComputeWorkGroupSize[0] = 128;
  const DeviceInfo info = MadeUp(VK_API_VERSION_1_1, {});
  CHECK(vkdml::detail::CheckLimits(info, enough).ok());
  const struct {
    uint32_t* field;
    const char* name;
  } limits[] = {
      {&enough.maxPerStageDescriptorStorageBuffers, "maxPerStageDescriptorStorageBuffers"},
      {&enough.maxDescriptorSetStorageBuffers, "maxDescriptorSetStorageBuffers"},
      {&enough.maxPerStageResources, "maxPerStageResources"},
      {&enough.maxComputeWorkGroupInvocations, "maxComputeWorkGroupInvocations"},
      {&enough.maxComputeWorkGroupSize[0], "maxComputeWorkGroupSize[0]"}};
  for (const auto& l : limits) {
    INFO(l.name);
    const uint32_t need = *l.field;
    --*l.field;
    const Result r = vkdml::detail::CheckLimits(info, enough);
    ++*l.field;
    CHECK(r.status == Status::Unsupported);
    CHECK(r.message.rfind("Vulkan device Made-up GPU allows " + std::to_string(need - 1) + " (" +
                              l.name + "), but vkdml needs " + std::to_string(need),
                          0) == 0);
  }
}
