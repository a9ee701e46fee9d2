// What is missing, and what to install: no driver, no suitable device, no validation layer each
// give one line naming the Debian package. (No loader at all: cli.no_loader, in
// examples/CMakeLists.txt, hides libvulkan.so.1 from the CLI.)
#include <cstdlib>
#include <string>

#include "test_util.h"
#include "vk_hooks.h"

using namespace vt;

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

// What vkdml refuses of the caller's own objects and of the loader, through the hooks: an adopted
// physical device of Vulkan 1.0, an adopted queue family without compute, a device with no
// compute queue at all, and a loader that knows only Vulkan 1.0.
TEST_CASE_METHOD(Fixture, "Install hints: Vulkan 1.0 and no compute queue are refused",
                 "[install]") {
  REQUIRE(hooks::LoaderGetInstanceProcAddr());
  DeviceDesc adopt = Borrowed(Dev(), Dev().Info().enabled);
  adopt.getInstanceProcAddr = hooks::GetInstanceProcAddr();
  std::unique_ptr<Device> device;
  {
    hooks::FakeVulkan10(true);
    Result r = CreateDevice(adopt, &device);
    hooks::FakeVulkan10(false);
    INFO(Str(r));
    CHECK(r.status == Status::Unsupported);
    CHECK(r.message == "DeviceDesc.physicalDevice (" + Dev().Info().name +
                           ") supports Vulkan 1.0, expected 1.1");
    CHECK(!device);
  }
  {
    hooks::FakeNoCompute(true);
    Result r = CreateDevice(adopt, &device);
    DeviceDesc own;
    own.getInstanceProcAddr = hooks::GetInstanceProcAddr();
    Result created = CreateDevice(own, &device);
    hooks::FakeNoCompute(false);
    INFO(Str(r));
    CHECK(r.status == Status::InvalidArgument);
    CHECK_THAT(r.message, Catch::Matchers::StartsWith("DeviceDesc.queueFamilyIndex " +
                                                      std::to_string(Dev().QueueFamilyIndex()) +
                                                      " has no compute support"));
    INFO(Str(created));
    CHECK(created.status == Status::Unsupported);
    CHECK_THAT(created.message,
               Catch::Matchers::Contains(Dev().Info().name + " has no compute queue"));
    CHECK(!device);
  }
  {
    hooks::FakeLoader10(true);
    DeviceDesc own;
    own.getInstanceProcAddr = hooks::GetInstanceProcAddr();
    Result r = CreateDevice(own, &device);
    hooks::FakeLoader10(false);
    INFO(Str(r));
    CHECK(r.status == Status::Unsupported);
    CHECK(r.message == "the Vulkan loader supports only Vulkan 1.0, expected 1.1");
    CHECK(!device);
  }
  // Without the fakes, the same calls succeed.
  CHECK(CreateDevice(adopt, &device).ok());
}

// An adopted device's features are the caller's word, checked against what the physical device
// offers: one it does not offer is refused by name (it used to be dropped without a word).
TEST_CASE_METHOD(Fixture, "Adopting a device: a claimed feature the device lacks is refused",
                 "[install]") {
  REQUIRE(hooks::LoaderGetInstanceProcAddr());
  DeviceDesc adopt = Borrowed(Dev(), Dev().Info().enabled);
  adopt.enabledFeatures.shaderFloat64 = true;  // lavapipe has it (so the hooks hide it)
  adopt.getInstanceProcAddr = hooks::GetInstanceProcAddr();
  std::unique_ptr<Device> device;
  hooks::FakeNoFloat64(true);
  Result r = CreateDevice(adopt, &device);
  adopt.enabledFeatures.shaderFloat64 = false;
  Result without = CreateDevice(adopt, &device);
  hooks::FakeNoFloat64(false);
  INFO(Str(r));
  CHECK(r.status == Status::InvalidArgument);
  CHECK(r.message == "DeviceDesc.enabledFeatures.shaderFloat64 is set, but " + Dev().Info().name +
                         " does not support it");
  INFO(Str(without));
  CHECK(without.ok());
  REQUIRE(device);
  CHECK(!device->Info().enabled.shaderFloat64);
  CHECK(device->Info().enabled.storageBuffer8BitAccess ==
        Dev().Info().enabled.storageBuffer8BitAccess);
}

// Vulkan forbids asking a memory heap for more than it holds (VUID-vkAllocateMemory-
// pAllocateInfo-01713): a buffer larger than its heap is out of memory before vkAllocateMemory,
// said as such (SwiftShader's 2 GiB heap met a 32 GiB output so). The hooks shrink every heap.
TEST_CASE_METHOD(Fixture, "Buffers: one larger than its memory heap is refused before Vulkan",
                 "[install]") {
  REQUIRE(hooks::LoaderGetInstanceProcAddr());
  DeviceDesc desc;
  desc.enableValidation = true;
  std::vector<std::string> messages;
  desc.onValidationMessage = [&messages](const char* m) { messages.push_back(m ? m : ""); };
  desc.getInstanceProcAddr = hooks::GetInstanceProcAddr();
  const UINT64 heap = 64 << 20;
  hooks::FakeHeapBytes(heap);
  std::unique_ptr<Device> device;
  const Result created = CreateDevice(desc, &device);
  hooks::FakeHeapBytes(0);
  INFO(Str(created));
  REQUIRE(created.ok());
  for (Buffer::Memory memory : {Buffer::Memory::DeviceLocal, Buffer::Memory::HostVisible}) {
    std::unique_ptr<Buffer> buffer;
    const Result big = device->CreateBuffer(heap + (1 << 20), memory, &buffer);
    INFO(Str(big));
    CHECK(big.status == Status::OutOfMemory);
    CHECK(big.message.find(" bytes are more than the whole memory heap the buffer needs (" +
                           std::to_string(heap) + " bytes) (a buffer of " +
                           std::to_string(heap + (1 << 20)) + " bytes)") != std::string::npos);
    CHECK(!buffer);
    CHECK(device->CreateBuffer(1 << 20, memory, &buffer).ok());
  }
  device.reset();
  CHECK(messages.empty());
}

// SwiftShader builds each queue's renderer on the queue's first submission, on a thread of its
// own, and crashes there if memory has run out (cli.limits met it at a 1000 MiB address-space
// limit). So a device vkdml creates submits once, empty, inside CreateDevice, while the memory
// is there; an adopted queue is the caller's, which vkdml submits to only from Submit, Run and
// Write/Read (DeviceDesc).
TEST_CASE_METHOD(Fixture,
                 "Creating a device: its own queue is submitted to once, an adopted one "
                 "never",
                 "[install]") {
  REQUIRE(hooks::LoaderGetInstanceProcAddr());
  DeviceDesc own;
  own.getInstanceProcAddr = hooks::GetInstanceProcAddr();
  hooks::Reset();
  std::unique_ptr<Device> device;
  const Result created = CreateDevice(own, &device);
  INFO(Str(created));
  REQUIRE(created.ok());
  CHECK(hooks::Seen().submits == std::vector<VkQueue>{device->Queue()});

  DeviceDesc adopt = Borrowed(*device, device->Info().enabled);
  adopt.getInstanceProcAddr = hooks::GetInstanceProcAddr();
  hooks::Reset();
  std::unique_ptr<Device> adopted;
  const Result borrowed = CreateDevice(adopt, &adopted);
  INFO(Str(borrowed));
  REQUIRE(borrowed.ok());
  CHECK(hooks::Seen().submits.empty());
  adopted.reset();
  device.reset();
}
