// Pipelines: the one descriptor-set and pipeline layout, a pipeline per module and
// specialization, and the pipeline cache they all go through.
#include <cstring>

#include "device/device.h"
#include "spirv_table.h"

namespace vkdml::detail {

Result DeviceImpl::CreateLayouts() {
  VkDescriptorSetLayoutBinding b[VKDML_BINDING_COUNT];
  for (uint32_t i = 0; i < VKDML_BINDING_COUNT; ++i) {
    b[i] = {};
    b[i].binding = i;
    b[i].descriptorType = i == VKDML_BIND_PLANS ? VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER
                                                : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    b[i].descriptorCount = 1;
    b[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo sci{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  sci.bindingCount = VKDML_BINDING_COUNT;
  sci.pBindings = b;
  VKDML_VK(vk_.vkCreateDescriptorSetLayout(device_, &sci, nullptr, &setLayout_));
  VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0,
                           uint32_t(std::max({sizeof(shader::Push), sizeof(shader::SortPush),
                                              sizeof(shader::LargePush)}))};
  VkPipelineLayoutCreateInfo pci{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pci.setLayoutCount = 1;
  pci.pSetLayouts = &setLayout_;
  pci.pushConstantRangeCount = 1;
  pci.pPushConstantRanges = &push;
  VKDML_VK(vk_.vkCreatePipelineLayout(device_, &pci, nullptr, &pipelineLayout_));
  return {};
}

Result DeviceImpl::Pipeline(const std::string& module, const Specialization& spec,
                            VkPipeline* out) {
  auto key = std::make_pair(module, spec);
  {
    std::lock_guard<std::mutex> lock(pipelineMutex_);
    auto it = pipelines_.find(key);
    if (it != pipelines_.end()) {
      *out = it->second;
      return {};
    }
  }
  // Created outside the lock, so that threads compiling different operators do not wait for
  // each other; a thread that lost the race for the same key destroys its own.
  const SpirvModule* spirv = FindSpirv(module.c_str());
  if (!spirv) return Fail(Status::Internal, "internal: no SPIR-V module named ", module);
  VkShaderModuleCreateInfo mci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  mci.codeSize = spirv->count * sizeof(uint32_t);
  mci.pCode = spirv->words;
  VkShaderModule shader;
  VKDML_VK(vk_.vkCreateShaderModule(device_, &mci, nullptr, &shader));
  VkSpecializationMapEntry entries[std::tuple_size<Specialization>::value];
  for (uint32_t i = 0; i < spec.size(); ++i) entries[i] = {i, i * 4, 4};
  VkSpecializationInfo specInfo{uint32_t(spec.size()), entries, sizeof(spec), spec.data()};
  VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  ci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = shader;
  ci.stage.pName = "main";
  ci.stage.pSpecializationInfo = &specInfo;
  ci.layout = pipelineLayout_;
  VkPipeline pipeline;
  VkResult r = vk_.vkCreateComputePipelines(device_, pipelineCache_, 1, &ci, nullptr, &pipeline);
  vk_.vkDestroyShaderModule(device_, shader, nullptr);
  if (r != VK_SUCCESS) return VkFailure(r, "vkCreateComputePipelines");
  std::lock_guard<std::mutex> lock(pipelineMutex_);
  auto inserted = pipelines_.emplace(key, pipeline);
  if (!inserted.second) vk_.vkDestroyPipeline(device_, pipeline, nullptr);
  *out = inserted.first->second;
  return {};
}

// Pipeline cache ---------------------------------------------------------------------------

Result DeviceImpl::CreatePipelineCache(const DeviceDesc& desc) {
  if (desc.pipelineCache) {
    if (!desc.pipelineCacheData.empty())
      return Fail(Status::InvalidArgument,
                  "DeviceDesc.pipelineCache and pipelineCacheData are both set: vkdml seeds only "
                  "its own cache, expected one of them");
    pipelineCache_ = desc.pipelineCache;
    return {};
  }
  // VkPipelineCacheHeaderVersionOne. Data from another device or driver is left out (Vulkan
  // would ignore it); data that is no pipeline cache at all is refused.
  const std::vector<uint8_t>& data = desc.pipelineCacheData;
  VkPipelineCacheHeaderVersionOne header{};
  bool compatible = false;
  if (!data.empty()) {
    if (data.size() < sizeof header)
      return Fail(Status::InvalidArgument, "DeviceDesc.pipelineCacheData is ", data.size(),
                  " bytes, expected at least ", sizeof header,
                  " (a Vulkan pipeline cache header, as GetPipelineCacheData returns)");
    std::memcpy(&header, data.data(), sizeof header);
    if (header.headerSize < sizeof header || header.headerSize > data.size())
      return Fail(Status::InvalidArgument, "DeviceDesc.pipelineCacheData: headerSize is ",
                  header.headerSize, ", expected ", sizeof header, " to ", data.size(),
                  " (not data from GetPipelineCacheData?)");
    if (header.headerVersion != VK_PIPELINE_CACHE_HEADER_VERSION_ONE)
      return Fail(Status::InvalidArgument, "DeviceDesc.pipelineCacheData: headerVersion is ",
                  int(header.headerVersion), ", expected 1 (VK_PIPELINE_CACHE_HEADER_VERSION_ONE)");
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(physical_, &p);
    compatible = header.vendorID == p.vendorID && header.deviceID == p.deviceID &&
                 std::memcmp(header.pipelineCacheUUID, p.pipelineCacheUUID, VK_UUID_SIZE) == 0;
  }
  VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  if (compatible) {
    ci.initialDataSize = data.size();
    ci.pInitialData = data.data();
  }
  VKDML_VK(vk_.vkCreatePipelineCache(device_, &ci, nullptr, &pipelineCache_));
  ownCache_ = true;
  return {};
}

Result DeviceImpl::GetPipelineCacheData(std::vector<uint8_t>* out) {
  if (!out) return Fail(Status::InvalidArgument, "GetPipelineCacheData: out is null");
  for (;;) {  // the cache may grow between the two calls (another thread compiling)
    size_t size = 0;
    VKDML_VK(vk_.vkGetPipelineCacheData(device_, pipelineCache_, &size, nullptr));
    out->resize(size);
    VkResult r = vk_.vkGetPipelineCacheData(device_, pipelineCache_, &size, out->data());
    if (r == VK_INCOMPLETE) continue;
    if (r != VK_SUCCESS) return VkFailure(r, "vkGetPipelineCacheData");
    out->resize(size);
    return {};
  }
}

}  // namespace vkdml::detail
