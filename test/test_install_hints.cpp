// What is missing, and what to install: no driver, no suitable device, no validation layer each
// give one line naming the Debian package. (No loader at all: cli.no_loader, in
// examples/CMakeLists.txt, hides libvulkan.so.1 from the CLI.)
#include <cstdlib>
#include <string>

#include "test_util.h"
#include "vk_hooks.h"

using namespace vt;

namespace {

// Sets an environment variable for the life of the object, restoring the old value after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) {
      had_ = true;
      old_ = old;
    }
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
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

}  // namespace

TEST_CASE_METHOD(Fixture, "Install hints: no Vulkan driver", "[install]") {
  Dev();  // the shared device exists before, and works after
  {
    ScopedEnv files("VK_DRIVER_FILES", "/nonexistent/vkdml_icd.json");
    ScopedEnv old("VK_ICD_FILENAMES", "/nonexistent/vkdml_icd.json");
    std::unique_ptr<Device> device;
    Result r = CreateDevice(DeviceDesc{}, &device);
    INFO(Str(r));
    CHECK(r.status == Status::DeviceError);
    CHECK_THAT(r.message, Catch::Matchers::StartsWith("no Vulkan driver found (vkCreateInstance: "
                                                      "VK_ERROR_INCOMPATIBLE_DRIVER; "
                                                      "VK_DRIVER_FILES is /nonexistent/"));
    CHECK_THAT(r.message, Catch::Matchers::Contains("install mesa-vulkan-drivers"));
    CHECK(r.message.find('\n') == std::string::npos);
    std::vector<DeviceInfo> infos;
    Result e = EnumerateDevices(&infos);
    CHECK(e.message == r.message);
  }
  std::vector<DeviceInfo> infos;
  CHECK(EnumerateDevices(&infos).ok());
  CHECK(!infos.empty());
}

TEST_CASE_METHOD(Fixture, "Install hints: no validation layer", "[install]") {
  ScopedEnv path("VK_LAYER_PATH", "/nonexistent/vkdml_layers");
  ScopedEnv add("VK_ADD_LAYER_PATH", nullptr);
  DeviceDesc desc;
  desc.enableValidation = true;
  std::unique_ptr<Device> device;
  Result r = CreateDevice(desc, &device);
  INFO(Str(r));
  CHECK(r.status == Status::Unsupported);
  CHECK(r.message ==
        "DeviceDesc.enableValidation is set but the validation layer (VK_LAYER_KHRONOS_validation) "
        "is not installed: install vulkan-validationlayers");
}

// A physical device that reports Vulkan 1.0 (through the hooks) is skipped by the default pick;
// with no other device, CreateDevice says so.
TEST_CASE_METHOD(Fixture, "Install hints: no suitable device", "[install]") {
  REQUIRE(hooks::LoaderGetInstanceProcAddr());
  DeviceDesc desc;
  desc.getInstanceProcAddr = hooks::GetInstanceProcAddr();
  hooks::FakeVulkan10(true);
  std::unique_ptr<Device> device;
  Result r = CreateDevice(desc, &device);
  hooks::FakeVulkan10(false);
  INFO(Str(r));
  CHECK(r.status == Status::Unsupported);
  CHECK_THAT(r.message, Catch::Matchers::StartsWith("no suitable Vulkan device (vkdml needs "
                                                    "Vulkan 1.1 and a compute queue): "));
  CHECK_THAT(r.message, Catch::Matchers::Contains(Dev().Info().name + " supports only Vulkan 1.0"));
  CHECK_THAT(r.message, Catch::Matchers::EndsWith(
                            ": install a newer driver, or mesa-vulkan-drivers for lavapipe"));
  // Without the fake, the same call finds it.
  r = CreateDevice(desc, &device);
  CHECK(r.ok());
}
