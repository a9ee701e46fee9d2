// vkdml inside an engine that owns its Vulkan objects. The engine (this file) loads Vulkan through
// volk, creates its own instance and device, sub-allocates its buffers from one VkDeviceMemory
// of device memory (and one of host memory), and records one command buffer of its own with
// three passes:
//   1. its own compute pass (embed_indices.comp) writes this frame's indices,
//   2. vkdml's Gather looks up rows of a table with them (an embedding lookup),
//   3. its own copy moves the result into host memory,
// with the two barriers README.md prescribes around vkdml's work. The command buffer is recorded
// once and replayed, each frame with new indices (the frame number comes from host memory), and
// every frame's result is compared with the CPU's. vkdml adopts the engine's VkDevice, queue and
// VkPipelineCache; it never submits here (only Device::Submit, Run and Buffer::Write/Read do).
//
//   vkdml_embed [--validation] [--frames N] [--pipeline-cache FILE]
// --validation: VK_LAYER_KHRONOS_validation with synchronization validation; any message fails.
// --pipeline-cache FILE: start the engine's pipeline cache from FILE if it exists, and write the
// cache (the engine's pipelines and vkdml's) back to it at exit.
// Exit status 0 when every frame matches, else 1.
#include <volk.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include <vkdml/vkdml.h>

#include "embed_spirv.h"

namespace {

constexpr uint32_t kRows = 64, kCols = 16;  // the table: 64 rows of 16 floats
constexpr uint32_t kCount = 200;            // rows looked up per frame
constexpr uint32_t kGroupSize = 64;         // embed_indices.comp's local_size_x

// What embed_indices.comp writes for index i of frame `seed`, as a row in [0, kRows).
uint32_t ExpectedRow(uint32_t seed, uint32_t i) {
  return (seed * 7u + i * 5u) % kRows;
}

float TableValue(uint32_t row, uint32_t col) {
  return float(row * 100 + col);
}

std::atomic<int> gValidationMessages{0};

VKAPI_ATTR VkBool32 VKAPI_CALL OnValidation(VkDebugUtilsMessageSeverityFlagBitsEXT,
                                            VkDebugUtilsMessageTypeFlagsEXT,
                                            const VkDebugUtilsMessengerCallbackDataEXT* data,
                                            void*) {
  ++gValidationMessages;
  std::fprintf(stderr, "Validation message: %s\n", data->pMessage);
  return VK_FALSE;
}

bool Ok(VkResult r, const char* what) {
  if (r != VK_SUCCESS) std::fprintf(stderr, "embed: %s failed: VkResult %d\n", what, int(r));
  return r == VK_SUCCESS;
}

bool Ok(const vkdml::Result& r, const char* what) {
  if (!r) std::fprintf(stderr, "embed: %s: %s\n", what, r.message.c_str());
  return r.ok();
}

// A buffer at `offset` in one of the engine's memory blocks.
struct SubBuffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize offset = 0, size = 0;
};

// Everything the engine owns, destroyed in reverse.
struct Engine {
  VkInstance instance = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  uint32_t family = 0;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  VkPhysicalDeviceMemoryProperties memory{};
  VkDeviceMemory deviceHeap = VK_NULL_HANDLE, hostHeap = VK_NULL_HANDLE;
  char* hostMapped = nullptr;
  SubBuffer table, indices, output;   // in deviceHeap
  SubBuffer upload, frame, readback;  // in hostHeap
  VkPipelineCache cache = VK_NULL_HANDLE;
  VkDescriptorSetLayout setLayout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  VkDescriptorSet set = VK_NULL_HANDLE;
  VkCommandPool commandPool = VK_NULL_HANDLE;
  VkCommandBuffer setup = VK_NULL_HANDLE, frameCommands = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;

  ~Engine() {
    if (device) {
      vkDeviceWaitIdle(device);
      vkDestroyFence(device, fence, nullptr);
      vkDestroyCommandPool(device, commandPool, nullptr);
      vkDestroyDescriptorPool(device, pool, nullptr);
      vkDestroyPipeline(device, pipeline, nullptr);
      vkDestroyPipelineLayout(device, layout, nullptr);
      vkDestroyDescriptorSetLayout(device, setLayout, nullptr);
      vkDestroyPipelineCache(device, cache, nullptr);
      for (SubBuffer* b : {&table, &indices, &output, &upload, &frame, &readback})
        vkDestroyBuffer(device, b->buffer, nullptr);
      vkFreeMemory(device, deviceHeap, nullptr);
      vkFreeMemory(device, hostHeap, nullptr);
      vkDestroyDevice(device, nullptr);
    }
    if (messenger) vkDestroyDebugUtilsMessengerEXT(instance, messenger, nullptr);
    if (instance) vkDestroyInstance(instance, nullptr);
  }

  bool CreateInstance(bool validation) {
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "vkdml embed example";
    app.apiVersion = VK_API_VERSION_1_1;  // vkdml needs 1.1
    VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ci.pApplicationInfo = &app;
    const char* layer = "VK_LAYER_KHRONOS_validation";
    const char* extension = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    VkValidationFeatureEnableEXT sync = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
    VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
    features.enabledValidationFeatureCount = 1;
    features.pEnabledValidationFeatures = &sync;
    VkDebugUtilsMessengerCreateInfoEXT mci{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    mci.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                          VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    mci.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                      VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT;
    mci.pfnUserCallback = OnValidation;
    if (validation) {
      uint32_t n = 0;
      vkEnumerateInstanceLayerProperties(&n, nullptr);
      std::vector<VkLayerProperties> layers(n);
      vkEnumerateInstanceLayerProperties(&n, layers.data());
      bool found = false;
      for (const VkLayerProperties& l : layers) found |= std::strcmp(l.layerName, layer) == 0;
      if (!found) {
        std::fprintf(stderr,
                     "embed: --validation: the validation layer is not installed: install "
                     "vulkan-validationlayers\n");
        return false;
      }
      features.pNext = &mci;
      ci.pNext = &features;
      ci.enabledLayerCount = 1;
      ci.ppEnabledLayerNames = &layer;
      ci.enabledExtensionCount = 1;
      ci.ppEnabledExtensionNames = &extension;
    }
    if (!Ok(vkCreateInstance(&ci, nullptr, &instance), "vkCreateInstance")) return false;
    volkLoadInstanceOnly(instance);
    return !validation ||
           Ok(vkCreateDebugUtilsMessengerEXT(instance, &mci, nullptr, &messenger), "messenger");
  }

  // The first discrete GPU with Vulkan 1.1 and a compute queue, else the first such device.
  bool PickDevice() {
    uint32_t n = 0;
    vkEnumeratePhysicalDevices(instance, &n, nullptr);
    std::vector<VkPhysicalDevice> all(n);
    vkEnumeratePhysicalDevices(instance, &n, all.data());
    for (VkPhysicalDevice pd : all) {
      VkPhysicalDeviceProperties p;
      vkGetPhysicalDeviceProperties(pd, &p);
      uint32_t count = 0;
      vkGetPhysicalDeviceQueueFamilyProperties(pd, &count, nullptr);
      std::vector<VkQueueFamilyProperties> families(count);
      vkGetPhysicalDeviceQueueFamilyProperties(pd, &count, families.data());
      uint32_t compute = UINT32_MAX;
      for (uint32_t i = 0; i < count && compute == UINT32_MAX; ++i)
        if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) compute = i;
      if (p.apiVersion < VK_API_VERSION_1_1 || compute == UINT32_MAX) continue;
      if (!physical || p.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU) {
        physical = pd;
        family = compute;
      }
      if (p.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU) break;
    }
    if (!physical) std::fprintf(stderr, "embed: no Vulkan 1.1 device with a compute queue\n");
    return physical != VK_NULL_HANDLE;
  }

  bool CreateDevice() {
    float priority = 1;
    VkDeviceQueueCreateInfo q{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    q.queueFamilyIndex = family;
    q.queueCount = 1;
    q.pQueuePriorities = &priority;
    VkDeviceCreateInfo ci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    ci.queueCreateInfoCount = 1;
    ci.pQueueCreateInfos = &q;
    if (!Ok(vkCreateDevice(physical, &ci, nullptr, &device), "vkCreateDevice")) return false;
    volkLoadDevice(device);
    vkGetDeviceQueue(device, family, 0, &queue);
    vkGetPhysicalDeviceMemoryProperties(physical, &memory);
    return true;
  }

  // Creates the buffers, then one memory block for them (types that have `want`), each buffer
  // at an offset aligned as it requires.
  bool Allocate(std::vector<SubBuffer*> buffers, VkMemoryPropertyFlags want, VkDeviceMemory* out) {
    VkDeviceSize total = 0;
    uint32_t typeBits = ~0u;
    for (SubBuffer* b : buffers) {
      VkBufferCreateInfo ci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
      ci.size = b->size;
      ci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                 VK_BUFFER_USAGE_TRANSFER_DST_BIT;
      if (!Ok(vkCreateBuffer(device, &ci, nullptr, &b->buffer), "vkCreateBuffer")) return false;
      VkMemoryRequirements req;
      vkGetBufferMemoryRequirements(device, b->buffer, &req);
      b->offset = (total + req.alignment - 1) / req.alignment * req.alignment;
      total = b->offset + req.size;
      typeBits &= req.memoryTypeBits;
    }
    uint32_t type = UINT32_MAX;
    for (uint32_t i = 0; i < memory.memoryTypeCount && type == UINT32_MAX; ++i)
      if ((typeBits & (1u << i)) && (memory.memoryTypes[i].propertyFlags & want) == want) type = i;
    if (type == UINT32_MAX) {
      std::fprintf(stderr, "embed: no memory type for the buffers\n");
      return false;
    }
    VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    ai.allocationSize = total;
    ai.memoryTypeIndex = type;
    if (!Ok(vkAllocateMemory(device, &ai, nullptr, out), "vkAllocateMemory")) return false;
    for (SubBuffer* b : buffers)
      if (!Ok(vkBindBufferMemory(device, b->buffer, *out, b->offset), "vkBindBufferMemory"))
        return false;
    return true;
  }

  bool CreateMemory() {
    table.size = kRows * kCols * sizeof(float);
    indices.size = kCount * sizeof(int32_t);
    output.size = kCount * kCols * sizeof(float);
    upload.size = table.size;
    frame.size = 3 * sizeof(uint32_t);
    readback.size = output.size;
    if (!Allocate({&table, &indices, &output}, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, &deviceHeap) ||
        !Allocate({&upload, &frame, &readback},
                  VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                  &hostHeap))
      return false;
    void* mapped;
    if (!Ok(vkMapMemory(device, hostHeap, 0, VK_WHOLE_SIZE, 0, &mapped), "vkMapMemory"))
      return false;
    hostMapped = static_cast<char*>(mapped);
    return true;
  }

  template <typename T>
  T* Host(const SubBuffer& b) {
    return reinterpret_cast<T*>(hostMapped + b.offset);
  }

  // The pipeline cache (from `data`, may be empty) and the index pass: its pipeline and its
  // descriptor set over `frame` and `indices`.
  bool CreateIndexPass(const std::vector<char>& data) {
    VkPipelineCacheCreateInfo cci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
    cci.initialDataSize = data.size();
    cci.pInitialData = data.data();
    if (!Ok(vkCreatePipelineCache(device, &cci, nullptr, &cache), "vkCreatePipelineCache"))
      return false;
    VkDescriptorSetLayoutBinding b[2] = {};
    for (uint32_t i = 0; i < 2; ++i)
      b[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
    VkDescriptorSetLayoutCreateInfo sci{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    sci.bindingCount = 2;
    sci.pBindings = b;
    if (!Ok(vkCreateDescriptorSetLayout(device, &sci, nullptr, &setLayout), "set layout"))
      return false;
    VkPipelineLayoutCreateInfo lci{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    lci.setLayoutCount = 1;
    lci.pSetLayouts = &setLayout;
    if (!Ok(vkCreatePipelineLayout(device, &lci, nullptr, &layout), "pipeline layout"))
      return false;
    const embed::SpirvModule* spirv = embed::FindSpirv("embed_indices");
    VkShaderModuleCreateInfo mci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    mci.codeSize = spirv->count * sizeof(uint32_t);
    mci.pCode = spirv->words;
    VkShaderModule module;
    if (!Ok(vkCreateShaderModule(device, &mci, nullptr, &module), "shader module")) return false;
    VkComputePipelineCreateInfo pci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    pci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    pci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    pci.stage.module = module;
    pci.stage.pName = "main";
    pci.layout = layout;
    VkResult r = vkCreateComputePipelines(device, cache, 1, &pci, nullptr, &pipeline);
    vkDestroyShaderModule(device, module, nullptr);
    if (!Ok(r, "vkCreateComputePipelines")) return false;

    VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2};
    VkDescriptorPoolCreateInfo dci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    dci.maxSets = 1;
    dci.poolSizeCount = 1;
    dci.pPoolSizes = &size;
    if (!Ok(vkCreateDescriptorPool(device, &dci, nullptr, &pool), "descriptor pool")) return false;
    VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    ai.descriptorPool = pool;
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &setLayout;
    if (!Ok(vkAllocateDescriptorSets(device, &ai, &set), "descriptor set")) return false;
    VkDescriptorBufferInfo infos[2] = {{frame.buffer, 0, frame.size},
                                       {indices.buffer, 0, indices.size}};
    VkWriteDescriptorSet writes[2] = {};
    for (uint32_t i = 0; i < 2; ++i) {
      writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
      writes[i].dstSet = set;
      writes[i].dstBinding = i;
      writes[i].descriptorCount = 1;
      writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[i].pBufferInfo = &infos[i];
    }
    vkUpdateDescriptorSets(device, 2, writes, 0, nullptr);
    return true;
  }

  bool CreateCommands() {
    VkCommandPoolCreateInfo ci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    ci.queueFamilyIndex = family;
    if (!Ok(vkCreateCommandPool(device, &ci, nullptr, &commandPool), "command pool")) return false;
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = commandPool;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    if (!Ok(vkAllocateCommandBuffers(device, &ai, &setup), "command buffer") ||
        !Ok(vkAllocateCommandBuffers(device, &ai, &frameCommands), "command buffer"))
      return false;
    VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    return Ok(vkCreateFence(device, &fci, nullptr, &fence), "vkCreateFence");
  }

  bool SubmitAndWait(VkCommandBuffer cmd) {
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &cmd;
    return Ok(vkResetFences(device, 1, &fence), "vkResetFences") &&
           Ok(vkQueueSubmit(queue, 1, &submit, fence), "vkQueueSubmit") &&
           Ok(vkWaitForFences(device, 1, &fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
  }
};

void Barrier(VkCommandBuffer cmd, VkPipelineStageFlags src, VkAccessFlags srcAccess,
             VkPipelineStageFlags dst, VkAccessFlags dstAccess) {
  VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, srcAccess, dstAccess};
  vkCmdPipelineBarrier(cmd, src, dst, 0, 1, &b, 0, nullptr, 0, nullptr);
}

// The table: uploaded once, through the host block, by a setup command buffer.
bool UploadTable(Engine& e) {
  float* t = e.Host<float>(e.upload);
  for (uint32_t r = 0; r < kRows; ++r)
    for (uint32_t c = 0; c < kCols; ++c) t[r * kCols + c] = TableValue(r, c);
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  if (!Ok(vkBeginCommandBuffer(e.setup, &begin), "vkBeginCommandBuffer")) return false;
  VkBufferCopy region{0, 0, e.table.size};
  vkCmdCopyBuffer(e.setup, e.upload.buffer, e.table.buffer, 1, &region);
  // The copy's writes, visible to the gather's reads in the frames (a barrier of the setup
  // submit: each frame's submit comes after it on the same queue).
  Barrier(e.setup, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
          VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT);
  return Ok(vkEndCommandBuffer(e.setup), "vkEndCommandBuffer") && e.SubmitAndWait(e.setup);
}

// The frame: the engine's index pass, vkdml's gather, the engine's read-back copy.
bool RecordFrame(Engine& e, vkdml::Device& dml, vkdml::BindingTable& table) {
  VkCommandBuffer cmd = e.frameCommands;
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  if (!Ok(vkBeginCommandBuffer(cmd, &begin), "vkBeginCommandBuffer")) return false;
  // 1. The engine's pass writes the indices.
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, e.pipeline);
  vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, e.layout, 0, 1, &e.set, 0, nullptr);
  vkCmdDispatch(cmd, (kCount + kGroupSize - 1) / kGroupSize, 1, 1);
  // README.md: before RecordDispatch, make the writes to its inputs visible to compute-shader
  // reads.
  Barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
          VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT);
  // 2. vkdml's gather: pipelines, descriptors, push constants and dispatches, in this buffer.
  // (vkdml binds its own pipeline and descriptor set: the engine binds its own again before
  // any later dispatch of its own.)
  if (!Ok(dml.RecordDispatch(cmd, table), "RecordDispatch")) return false;
  // README.md: after it, make its compute-shader writes visible to whatever reads the outputs
  // next: here a copy.
  Barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
          VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
  // 3. The engine reads the result back into host memory.
  VkBufferCopy region{0, 0, e.output.size};
  vkCmdCopyBuffer(cmd, e.output.buffer, e.readback.buffer, 1, &region);
  Barrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
          VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
  return Ok(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
}

// Compares frame `seed`'s read-back with the CPU's gather; prints the first difference.
bool CheckFrame(Engine& e, uint32_t seed) {
  const float* got = e.Host<float>(e.readback);
  for (uint32_t i = 0; i < kCount; ++i)
    for (uint32_t c = 0; c < kCols; ++c) {
      const float want = TableValue(ExpectedRow(seed, i), c);
      if (got[i * kCols + c] != want) {
        std::fprintf(stderr, "embed: frame %u: output[%u][%u] is %g, expected %g\n", seed, i, c,
                     double(got[i * kCols + c]), double(want));
        return false;
      }
    }
  return true;
}

std::vector<char> ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

int Run(bool validation, uint32_t frames, const std::string& cachePath) {
  if (!Ok(volkInitialize(), "volkInitialize (no Vulkan loader: install libvulkan1)")) return 1;
  Engine e;
  if (!e.CreateInstance(validation) || !e.PickDevice() || !e.CreateDevice() || !e.CreateMemory() ||
      !e.CreateIndexPass(cachePath.empty() ? std::vector<char>() : ReadFile(cachePath)) ||
      !e.CreateCommands() || !UploadTable(e))
    return 1;

  // vkdml adopts the engine's objects and its pipeline cache; it destroys none of them.
  vkdml::DeviceDesc desc;
  desc.instance = e.instance;
  desc.physicalDevice = e.physical;
  desc.device = e.device;
  desc.queue = e.queue;
  desc.queueFamilyIndex = e.family;
  desc.getInstanceProcAddr = vkGetInstanceProcAddr;  // volk's: the loader the engine uses
  desc.pipelineCache = e.cache;
  std::unique_ptr<vkdml::Device> dml;
  if (!Ok(vkdml::CreateDevice(desc, &dml), "CreateDevice")) return 1;

  // DirectML's Gather along axis 2: output[0, 0, i, :] = table[0, 0, indices[i], :].
  using namespace vkdml;
  UINT tableSizes[] = {1, 1, kRows, kCols}, indexSizes[] = {1, 1, 1, kCount},
       outSizes[] = {1, 1, kCount, kCols};
  DML_BUFFER_TENSOR_DESC tableDesc{
      DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_FLAG_NONE, 4, tableSizes, nullptr, e.table.size, 0};
  DML_BUFFER_TENSOR_DESC indexDesc{
      DML_TENSOR_DATA_TYPE_INT32, DML_TENSOR_FLAG_NONE, 4, indexSizes, nullptr, e.indices.size, 0};
  DML_BUFFER_TENSOR_DESC outDesc{
      DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_FLAG_NONE, 4, outSizes, nullptr, e.output.size, 0};
  DML_TENSOR_DESC input{DML_TENSOR_TYPE_BUFFER, &tableDesc},
      index{DML_TENSOR_TYPE_BUFFER, &indexDesc}, output{DML_TENSOR_TYPE_BUFFER, &outDesc};
  DML_GATHER_OPERATOR_DESC gather{&input, &index, &output, /*Axis=*/2, /*IndexDimensions=*/1};
  std::unique_ptr<Operator> op;
  std::unique_ptr<CompiledOperator> compiled;
  std::unique_ptr<BindingTable> table;
  if (!Ok(dml->CreateOperator({DML_OPERATOR_GATHER, &gather}, &op), "CreateOperator") ||
      !Ok(dml->CompileOperator(*op, DML_EXECUTION_FLAG_NONE, &compiled), "CompileOperator") ||
      !Ok(dml->CreateBindingTable(*compiled, &table), "CreateBindingTable"))
    return 1;
  // The engine's own buffers, each a sub-range of its memory block.
  DML_BUFFER_BINDING inputs[] = {{e.table.buffer, 0, e.table.size},
                                 {e.indices.buffer, 0, e.indices.size}};
  DML_BUFFER_BINDING outputs[] = {{e.output.buffer, 0, e.output.size}};
  if (!Ok(table->BindInputs(2, inputs), "BindInputs") ||
      !Ok(table->BindOutputs(1, outputs), "BindOutputs") || !RecordFrame(e, *dml, *table))
    return 1;

  // Replays: each frame the host writes the frame number, submits the same command buffer and
  // waits (the next replay's writes come after this wait, so they need no barrier of their own).
  uint32_t* frame = e.Host<uint32_t>(e.frame);
  bool ok = true;
  for (uint32_t seed = 1; seed <= frames && ok; ++seed) {
    frame[0] = seed;
    frame[1] = kCount;
    frame[2] = kRows;
    std::memset(e.Host<float>(e.readback), 0xFF, e.readback.size);
    ok = e.SubmitAndWait(e.frameCommands) && CheckFrame(e, seed);
  }

  if (ok && !cachePath.empty()) {  // the cache now holds vkdml's pipelines as well
    std::vector<uint8_t> data;
    ok = Ok(dml->GetPipelineCacheData(&data), "GetPipelineCacheData");
    std::ofstream f(cachePath, std::ios::binary);
    f.write(reinterpret_cast<const char*>(data.data()), std::streamsize(data.size()));
    ok = ok && bool(f);
  }
  table.reset();
  compiled.reset();
  op.reset();
  dml.reset();
  if (!ok) return 1;
  if (gValidationMessages) {
    std::fprintf(stderr, "embed: %d validation message(s)\n", gValidationMessages.load());
    return 1;
  }
  VkPhysicalDeviceProperties p;
  vkGetPhysicalDeviceProperties(e.physical, &p);
  std::printf(
      "embed on %s: %u frames of an index pass, vkdml's Gather and a copy in one replayed "
      "command buffer, all as expected\n",
      p.deviceName, frames);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  bool validation = false;
  uint32_t frames = 3;
  std::string cachePath;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--validation") {
      validation = true;
    } else if (a == "--frames" && i + 1 < argc) {
      char* end = nullptr;
      const unsigned long n = std::strtoul(argv[++i], &end, 10);
      if (*end || n < 1 || n > 1000000) {
        std::fprintf(stderr, "vkdml_embed: --frames %s: expected 1 to 1000000\n", argv[i]);
        return 2;
      }
      frames = uint32_t(n);
    } else if (a == "--pipeline-cache" && i + 1 < argc) {
      cachePath = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: vkdml_embed [--validation] [--frames N] [--pipeline-cache FILE]\n");
      return 2;
    }
  }
  return Run(validation, frames, cachePath);
}
