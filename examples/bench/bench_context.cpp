#include "bench_context.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "bench_spirv.h"

namespace bench {

using vkdml::UINT64;

void Vk::Load(const vkdml::Device& dev) {
  device = dev.Handle();
  PFN_vkGetDeviceProcAddr gdpa = dev.GetDeviceProcAddr();
#define BENCH_LOAD(name)                                    \
  name = reinterpret_cast<PFN_##name>(gdpa(device, #name)); \
  if (!name) throw BenchError("vkGetDeviceProcAddr returned null for " #name);
  BENCH_DEVICE_FUNCTIONS(BENCH_LOAD)
#undef BENCH_LOAD
  // vkdml's own instance is Vulkan 1.1, so it enables timeline semaphores as
  // VK_KHR_timeline_semaphore: ask for the KHR name first, the core 1.2 one after.
  if (!dev.Info().enabled.timelineSemaphore) return;
  for (const char* name : {"vkGetSemaphoreCounterValueKHR", "vkGetSemaphoreCounterValue"})
    if (!vkGetSemaphoreCounterValue)
      vkGetSemaphoreCounterValue =
          reinterpret_cast<PFN_vkGetSemaphoreCounterValue>(gdpa(device, name));
}

void Barrier(const Vk& vk, VkCommandBuffer cmd, VkPipelineStageFlags src, VkAccessFlags srcAccess,
             VkPipelineStageFlags dst, VkAccessFlags dstAccess) {
  VkMemoryBarrier b{};
  b.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  b.srcAccessMask = srcAccess;
  b.dstAccessMask = dstAccess;
  vk.vkCmdPipelineBarrier(cmd, src, dst, 0, 1, &b, 0, nullptr, 0, nullptr);
}

namespace {

// Makes earlier uploads (transfer writes) and kernels visible to the shaders recorded after it.
void BarrierBeforeShaders(const Vk& vk, VkCommandBuffer cmd) {
  Barrier(vk, cmd, VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
          VK_ACCESS_TRANSFER_WRITE_BIT | kShaderRW, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
          kShaderRW);
}

}  // namespace

Context::~Context() {
  if (vk_.device) {
    if (pool_) vk_.vkDestroyDescriptorPool(vk_.device, pool_, nullptr);
    if (pipeline_) vk_.vkDestroyPipeline(vk_.device, pipeline_, nullptr);
    if (layout_) vk_.vkDestroyPipelineLayout(vk_.device, layout_, nullptr);
    if (setLayout_) vk_.vkDestroyDescriptorSetLayout(vk_.device, setLayout_, nullptr);
    if (module_) vk_.vkDestroyShaderModule(vk_.device, module_, nullptr);
  }
}

void Context::Open(std::unique_ptr<vkdml::Device> device) {
  dev_ = std::move(device);
  vk_.Load(*dev_);
  CreateCopyKernel();
}

void Context::CreateCopyKernel() {
  const SpirvModule* copy = FindSpirv("bench_copy");
  if (!copy) throw BenchError("bench_copy.spv is not embedded");
  VkShaderModuleCreateInfo smci{};
  smci.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
  smci.codeSize = copy->count * 4;
  smci.pCode = copy->words;
  VkCheck(vk_.vkCreateShaderModule(vk_.device, &smci, nullptr, &module_), "vkCreateShaderModule");
  VkDescriptorSetLayoutBinding b[2]{};
  for (uint32_t i = 0; i < 2; ++i) {
    b[i].binding = i;
    b[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    b[i].descriptorCount = 1;
    b[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo dslci{};
  dslci.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
  dslci.bindingCount = 2;
  dslci.pBindings = b;
  VkCheck(vk_.vkCreateDescriptorSetLayout(vk_.device, &dslci, nullptr, &setLayout_),
          "vkCreateDescriptorSetLayout");
  VkPushConstantRange pcr{VK_SHADER_STAGE_COMPUTE_BIT, 0, 4};
  VkPipelineLayoutCreateInfo plci{};
  plci.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  plci.setLayoutCount = 1;
  plci.pSetLayouts = &setLayout_;
  plci.pushConstantRangeCount = 1;
  plci.pPushConstantRanges = &pcr;
  VkCheck(vk_.vkCreatePipelineLayout(vk_.device, &plci, nullptr, &layout_),
          "vkCreatePipelineLayout");
  VkComputePipelineCreateInfo cpci{};
  cpci.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
  cpci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  cpci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  cpci.stage.module = module_;
  cpci.stage.pName = "main";
  cpci.layout = layout_;
  VkCheck(vk_.vkCreateComputePipelines(vk_.device, VK_NULL_HANDLE, 1, &cpci, nullptr, &pipeline_),
          "vkCreateComputePipelines");
  VkDescriptorPoolSize ps{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 2 * kMaxSets};
  VkDescriptorPoolCreateInfo dpci{};
  dpci.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
  dpci.maxSets = kMaxSets;
  dpci.poolSizeCount = 1;
  dpci.pPoolSizes = &ps;
  VkCheck(vk_.vkCreateDescriptorPool(vk_.device, &dpci, nullptr, &pool_), "vkCreateDescriptorPool");
}

// How many buffer sets to rotate through: enough to exceed ~4x a large GPU L2 (60 MB), only
// on GPUs (a CPU device's caches are far smaller than any case).
int Context::Rotation(double workingSetBytes) const {
  if (opt.rotate >= 0) return std::max(1, std::min(opt.rotate, static_cast<int>(kMaxSets)));
  if (Info().type == VK_PHYSICAL_DEVICE_TYPE_CPU) return 1;
  const double target = 4 * 60e6;
  if (workingSetBytes >= target) return 1;
  return std::min(static_cast<int>(kMaxSets),
                  static_cast<int>(std::ceil(target / workingSetBytes)));
}

std::unique_ptr<vkdml::Buffer> Context::NewBuffer(UINT64 size) {
  std::unique_ptr<vkdml::Buffer> b;
  Check(dev_->CreateBuffer(size, vkdml::Buffer::Memory::DeviceLocal, &b), "CreateBuffer");
  return b;
}

std::unique_ptr<vkdml::CompiledOperator> Context::Compile(const OpDesc& desc, vkdml::UINT flags) {
  std::unique_ptr<vkdml::Operator> op;
  Check(dev_->CreateOperator(desc.op, &op), "CreateOperator");
  std::unique_ptr<vkdml::CompiledOperator> compiled;
  Check(dev_->CompileOperator(*op, flags, &compiled), "CompileOperator");
  return compiled;
}

std::unique_ptr<vkdml::Buffer> Context::NewBuffer(const uint8_t* data, UINT64 size) {
  std::unique_ptr<vkdml::Buffer> b = NewBuffer(size);
  const UINT64 step = UINT64(64) << 20;
  for (UINT64 off = 0; off < size; off += step)
    Check(b->Write(off, data + off, std::min(step, size - off)), "Buffer::Write");
  return b;
}

std::unique_ptr<vkdml::BindingTable> Context::Bind(
    const vkdml::CompiledOperator& compiled, const std::vector<vkdml::DML_BUFFER_BINDING>& inputs,
    const vkdml::DML_BUFFER_BINDING& output, const std::vector<vkdml::DML_BUFFER_BINDING>& more) {
  std::unique_ptr<vkdml::BindingTable> table;
  Check(dev_->CreateBindingTable(compiled, &table), "CreateBindingTable");
  Check(table->BindInputs(static_cast<vkdml::UINT>(inputs.size()), inputs.data()), "BindInputs");
  std::vector<vkdml::DML_BUFFER_BINDING> outputs = {output};
  outputs.insert(outputs.end(), more.begin(), more.end());
  Check(table->BindOutputs(static_cast<vkdml::UINT>(outputs.size()), outputs.data()),
        "BindOutputs");
  return table;
}

// Without timestamps: each body submitted alone, `warmup + runs` times, timed on the host.
std::vector<std::vector<double>> Context::TimeOnHost(const std::vector<Body>& bodies, int warmup,
                                                     int runs) {
  std::vector<std::vector<double>> ms(bodies.size());
  for (int it = 0; it < warmup + runs; ++it)
    for (size_t k = 0; k < bodies.size(); ++k) {
      auto t0 = Clock::now();
      Check(dev_->Submit([&](VkCommandBuffer cmd) {
        BarrierBeforeShaders(vk_, cmd);
        bodies[k](cmd, it);
      }),
            "Device::Submit");
      if (it >= warmup) ms[k].push_back(Seconds(t0, Clock::now()) * 1e3);
    }
  return ms;
}

// GPU clocks fall while the host prepares data and take a while to come back: keep the GPU
// busy with untimed iterations for a quarter of a second before the timed submit.
void Context::WarmUp(const std::vector<Body>& bodies) {
  for (auto start = Clock::now(); Seconds(start, Clock::now()) < 0.25;)
    Check(dev_->Submit([&](VkCommandBuffer cmd) {
      for (int it = 0; it < 8; ++it)
        for (const Body& body : bodies) {
          BarrierBeforeShaders(vk_, cmd);
          body(cmd, it);
        }
    }),
          "Device::Submit");
}

// Records `warmup + runs` iterations into one submit; each iteration runs every body in turn
// (body(cmd, iteration)), with a barrier before each and timestamps around each timed one.
// Returns the timed durations in ms, per body. Interleaving the case with the copy kernel
// makes both see the same GPU state (on an H100 the whole memory system was seen to slow to
// ~57% for seconds at a time, for both kernels alike).
std::vector<std::vector<double>> Context::Time(const std::vector<Body>& bodies, int warmup,
                                               int runs, std::string* timing) {
  if (!Timestamps()) {
    *timing = "host";
    return TimeOnHost(bodies, warmup, runs);
  }
  *timing = "gpu-timestamps";
  WarmUp(bodies);
  const size_t nb = bodies.size();
  VkQueryPoolCreateInfo qpci{};
  qpci.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
  qpci.queryType = VK_QUERY_TYPE_TIMESTAMP;
  qpci.queryCount = static_cast<uint32_t>(2 * nb * static_cast<size_t>(runs));
  VkQueryPool qp = VK_NULL_HANDLE;
  VkCheck(vk_.vkCreateQueryPool(vk_.device, &qpci, nullptr, &qp), "vkCreateQueryPool");
  struct Guard {
    const Vk& vk;
    VkQueryPool qp;
    ~Guard() { vk.vkDestroyQueryPool(vk.device, qp, nullptr); }
  } guard{vk_, qp};
  Check(dev_->Submit([&](VkCommandBuffer cmd) {
    vk_.vkCmdResetQueryPool(cmd, qp, 0, qpci.queryCount);
    BarrierBeforeShaders(vk_, cmd);
    for (int it = 0; it < warmup + runs; ++it)
      for (size_t k = 0; k < nb; ++k) {
        if (it > 0 || k > 0)
          Barrier(vk_, cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, kShaderRW,
                  VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, kShaderRW);
        int q = it - warmup;
        uint32_t query = static_cast<uint32_t>(2 * (static_cast<size_t>(q) * nb + k));
        // BOTTOM_OF_PIPE: written once all earlier work has completed.
        if (q >= 0) vk_.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, qp, query);
        bodies[k](cmd, it);
        if (q >= 0)
          vk_.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, qp, query + 1);
      }
    Barrier(vk_, cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
            VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT,
            VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_HOST_READ_BIT);
  }),
        "Device::Submit");
  return Durations(qp, nb, runs);
}

// The timed durations (ms) in the query pool_ Time() filled, per body.
std::vector<std::vector<double>> Context::Durations(VkQueryPool qp, size_t nb, int runs) {
  std::vector<uint64_t> ticks(2 * nb * static_cast<size_t>(runs));
  VkCheck(vk_.vkGetQueryPoolResults(vk_.device, qp, 0, static_cast<uint32_t>(ticks.size()),
                                    ticks.size() * sizeof(uint64_t), ticks.data(), sizeof(uint64_t),
                                    VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
          "vkGetQueryPoolResults");
  // A timestamp counter may wrap at its timestampValidBits, which vkdml does not report. That is
  // at least 36 (Vulkan's minimum), so a difference taken modulo 2^36 is exact for any kernel
  // shorter than 2^36 ticks (over a minute at 1 ns a tick).
  const uint64_t mask = (uint64_t(1) << 36) - 1;
  std::vector<std::vector<double>> ms(nb);
  for (size_t q = 0; q < static_cast<size_t>(runs); ++q)
    for (size_t k = 0; k < nb; ++k) {
      size_t i = 2 * (q * nb + k);
      uint64_t d = (ticks[i + 1] - ticks[i]) & mask;
      ms[k].push_back(static_cast<double>(d) * Info().timestampPeriod * 1e-6);
    }
  return ms;
}

// The copy kernel on `bytes` read + written (bytes/2 each way, rounded up to 16), with its
// buffers (`rotation` pairs) and descriptor sets ready to record.
struct Context::CopyJob {
  std::vector<std::unique_ptr<vkdml::Buffer>> src, dst;
  std::vector<VkDescriptorSet> sets;
  Bytes block;  // the source contents, repeated
  UINT64 half = 0;
  uint32_t count = 0, groupsX = 0, groupsY = 0;  // 2D grid: one invocation per element
  double movedBytes = 0;
};

// `count` descriptor sets for the copy kernel; those of the previous case go back to the pool.
std::vector<VkDescriptorSet> Context::AllocateCopySets(uint32_t count) {
  std::vector<VkDescriptorSet> sets(count);
  VkCheck(vk_.vkResetDescriptorPool(vk_.device, pool_, 0), "vkResetDescriptorPool");
  std::vector<VkDescriptorSetLayout> layouts(count, setLayout_);
  VkDescriptorSetAllocateInfo dsai{};
  dsai.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
  dsai.descriptorPool = pool_;
  dsai.descriptorSetCount = count;
  dsai.pSetLayouts = layouts.data();
  VkCheck(vk_.vkAllocateDescriptorSets(vk_.device, &dsai, sets.data()), "vkAllocateDescriptorSets");
  return sets;
}

void Context::PrepareCopy(const std::string& name, double bytes, int rotation, CopyJob* job) {
  job->half = (static_cast<UINT64>(std::ceil(bytes / 2)) + 15) / 16 * 16;
  const UINT64 half = job->half;
  job->count = static_cast<uint32_t>(half / 16);
  const UINT64 groups = std::max<UINT64>(1, (UINT64(job->count) + 255) / 256);
  job->groupsX = static_cast<uint32_t>(std::min<UINT64>(groups, 65535));
  job->groupsY = static_cast<uint32_t>((groups + job->groupsX - 1) / job->groupsX);
  job->movedBytes = 2.0 * static_cast<double>(half);
  Step(name, Format("copy kernel buffers, 2 x %s", HumanBytes(static_cast<double>(half)).c_str()));
  // Random source contents from one 64 MiB block.
  Bytes& block = job->block;
  block.Allocate(static_cast<size_t>(std::min<UINT64>(half, UINT64(64) << 20)));
  FillData(block, 4, 99);
  std::vector<VkDescriptorSet>& sets = job->sets;
  sets = AllocateCopySets(static_cast<uint32_t>(rotation));
  for (size_t r = 0; r < sets.size(); ++r) {
    job->src.push_back(NewBuffer(half));
    job->dst.push_back(NewBuffer(half));
    for (UINT64 off = 0; off < half; off += block.n)
      Check(job->src.back()->Write(off, block.data(), std::min<UINT64>(block.n, half - off)),
            "Buffer::Write");
    VkDescriptorBufferInfo info[2] = {{job->src.back()->Handle(), 0, half},
                                      {job->dst.back()->Handle(), 0, half}};
    VkWriteDescriptorSet w[2]{};
    for (uint32_t i = 0; i < 2; ++i) {
      w[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
      w[i].dstSet = sets[r];
      w[i].dstBinding = i;
      w[i].descriptorCount = 1;
      w[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      w[i].pBufferInfo = &info[i];
    }
    vk_.vkUpdateDescriptorSets(vk_.device, 2, w, 0, nullptr);
  }
}

void Context::RecordCopy(const CopyJob& job, VkCommandBuffer cmd, int it) {
  vk_.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline_);
  vk_.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout_, 0, 1,
                              &job.sets[static_cast<size_t>(it) % job.sets.size()], 0, nullptr);
  vk_.vkCmdPushConstants(cmd, layout_, VK_SHADER_STAGE_COMPUTE_BIT, 0, 4, &job.count);
  vk_.vkCmdDispatch(cmd, job.groupsX, job.groupsY, 1);
}

// Checks the copy too: a broken reference would make every ratio meaningless.
void Context::CheckCopy(const CopyJob& job) {
  std::vector<uint8_t> head(static_cast<size_t>(std::min<UINT64>(job.half, 1 << 16)));
  Check(job.dst[0]->Read(0, head.data(), head.size()), "Buffer::Read");
  if (std::memcmp(head.data(), job.block.data(), head.size()) != 0)
    throw BenchError("the copy kernel's output differs from its input");
}

// One set of a case's device buffers, holding its host data, and the table that binds them.
struct Context::Slot {
  // updates: or a bag's offsets, or a block-quantized gather's scales (and zeros its zero points)
  std::unique_ptr<vkdml::Buffer> input, indices, updates, zeros, output;
  std::vector<std::unique_ptr<vkdml::Buffer>> more;  // a MoE permute's outputs past the rows
  std::unique_ptr<vkdml::BindingTable> table;
};

Context::Slot Context::MakeSlot(const Spec& s, const HostData& h,
                                const vkdml::CompiledOperator& compiled) {
  const vkdml::Operator& op = compiled.Op();
  Slot sl;
  sl.input = NewBuffer(h.input.data(), op.InputSize(0));
  sl.indices = NewBuffer(h.indices.data(), op.InputSize(1));
  std::vector<vkdml::DML_BUFFER_BINDING> in = {sl.input->Binding(), sl.indices->Binding()};
  if (s.IsScatter() || s.kind == OpKind::EmbeddingBag || s.kind == OpKind::GatherBlockQuantized ||
      s.kind == OpKind::MoeUnpermute || s.kind == OpKind::PagedGather) {
    const Bytes& third = s.IsScatter() || s.kind == OpKind::MoeUnpermute ? h.updates
                         : s.kind == OpKind::EmbeddingBag || s.kind == OpKind::PagedGather
                             ? h.offsets
                             : h.scales;
    sl.updates = NewBuffer(third.data(), op.InputSize(2));
    in.push_back(sl.updates->Binding());
  }
  if (s.kind == OpKind::GatherBlockQuantized) {
    sl.zeros = NewBuffer(h.zeros.data(), op.InputSize(3));
    in.push_back(sl.zeros->Binding());
  }
  if (!s.inPlace) sl.output = NewBuffer(op.OutputSize(0));
  std::vector<vkdml::DML_BUFFER_BINDING> more;
  for (vkdml::UINT o = 1; o < op.OutputCount(); ++o) {
    sl.more.push_back(NewBuffer(op.OutputSize(o)));
    more.push_back(sl.more.back()->Binding());
  }
  sl.table = Bind(compiled, in, (s.inPlace ? sl.input : sl.output)->Binding(), more);
  return sl;
}

// Times the case (rotating through `slots`) interleaved with the copy kernel on the same
// byte count, and fills res's times.
void Context::TimeAgainstCopy(const Spec& s, std::vector<Slot>& slots, CaseResult* res) {
  CopyJob copy;
  PrepareCopy(s.name, res->bytes, res->rotation, &copy);
  Step(s.name, Format("timing %d runs, interleaved with the copy kernel", opt.runs));
  vkdml::Result recordError;
  std::vector<std::vector<double>> times =
      Time({[&](VkCommandBuffer cmd, int it) {
              vkdml::Result r =
                  dev_->RecordDispatch(cmd, *slots[static_cast<size_t>(it) % slots.size()].table);
              if (!r.ok() && recordError.ok()) recordError = r;
            },
            [&](VkCommandBuffer cmd, int it) { RecordCopy(copy, cmd, it); }},
           std::max(opt.warmup, res->rotation), opt.runs, &res->timing);
  Check(recordError, "RecordDispatch");
  CheckCopy(copy);
  // Scale the copy to the case's exact byte count (it rounds up to 16 bytes).
  for (double& t : times[1]) t *= res->bytes / copy.movedBytes;
  Summarise(times[0], &res->ms, &res->minMs, &res->maxMs);
  Summarise(times[1], &res->copyMs, &res->copyMinMs, &res->copyMaxMs);
  res->runs = opt.runs;
}

CaseResult Context::RunCase(const Spec& s) {
  CaseResult res;
  res.spec = &s;
  res.caseName = s.name;
  Step(s.name, "creating the operator");
  const OpDesc desc(s);
  std::unique_ptr<vkdml::CompiledOperator> compiled =
      Compile(desc, s.deterministic ? vkdml::VKDML_EXECUTION_FLAG_DETERMINISTIC
                                    : vkdml::DML_EXECUTION_FLAG_NONE);
  const vkdml::Operator& op = compiled->Op();

  HostData h;
  UINT64 updSize = op.InputCount() > 2 ? op.InputSize(2) : 0, outSize = op.OutputSize(0);
  if (op.InputCount() > 3) updSize += op.InputSize(3);
  for (vkdml::UINT o = 1; o < op.OutputCount(); ++o) updSize += op.OutputSize(o);
  double ws =
      static_cast<double>(op.InputSize(0) + op.InputSize(1) + updSize + (s.inPlace ? 0 : outSize));
  Step(s.name, "generating " + HumanBytes(ws) + " of random data");
  MakeHostData(s, desc, &h, opt.seed + caseIndex);

  res.rotation = Rotation(ws);
  std::vector<Slot> slots;
  for (int r = 0; r < res.rotation; ++r) {
    Step(s.name, Format("uploading %s (set %d/%d)", HumanBytes(ws).c_str(), r + 1, res.rotation));
    slots.push_back(MakeSlot(s, h, *compiled));
  }
  res.bytes = MinBytes(s, h);
  TimeAgainstCopy(s, slots, &res);

  Step(s.name, "verifying a sample");
  if (s.reduce && s.inPlace) {  // the timed runs reduced into the input: once more from scratch
    Check(slots[0].input->Write(0, h.input.data(), op.InputSize(0)), "Buffer::Write");
    vkdml::Result recorded;
    Check(dev_->Submit([&](VkCommandBuffer cmd) {
      Barrier(vk_, cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
              VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, kShaderRW);
      recorded = dev_->RecordDispatch(cmd, *slots[0].table);
      Barrier(vk_, cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
              VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
    }),
          "Device::Submit");
    Check(recorded, "RecordDispatch");
  }
  Bytes out;
  out.Allocate(outSize);
  vkdml::Buffer& ob = s.inPlace ? *slots[0].input : *slots[0].output;
  Check(ob.Read(0, out.data(), outSize), "Buffer::Read");
  res.mismatches = Verify(s, h, out.data(), &res.checked, &res.firstMismatch);
  return res;
}

}  // namespace bench
