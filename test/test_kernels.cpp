// The seam between the library and its kernels, on the CPU: the embedded SPIR-V lays out the
// plans and push constants exactly as C++ does (glsl/interface.h is read by both compilers), and
// every kernel that kernel choice (lib/kernels/kernels.h) can name is embedded.
#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "harness.h"
#include "interface.h"
#include "kernels/kernels.h"
#include "spirv_table.h"
#include "test_util.h"

using namespace vt;
using vkdml::detail::FindSpirv;
namespace shader = vkdml::detail::shader;

namespace {

// Calls f(opcode, words) for each instruction after the 5-word header, while f returns true.
template <typename F>
void ForEachInstruction(const vkdml::detail::SpirvModule& m, F f) {
  for (size_t i = 5; i < m.count;) {
    const uint32_t n = m.words[i] >> 16;
    if (n == 0) FAIL("a SPIR-V instruction of 0 words at word " << i);
    if (!f(m.words[i] & 0xFFFF, m.words + i)) return;
    i += n;
  }
}

// What one SPIR-V module says of its types' layouts.
struct Layouts {
  std::map<uint32_t, std::string> names;                     // OpName
  std::map<uint32_t, std::map<uint32_t, uint32_t>> offsets;  // OpMemberDecorate Offset
  std::map<uint32_t, uint32_t> arrayStride, arrayElement;    // OpDecorate ArrayStride, OpTypeArray

  explicit Layouts(const vkdml::detail::SpirvModule& m) {
    ForEachInstruction(m, [&](uint32_t op, const uint32_t* w) {
      if (op == 5) names[w[1]] = reinterpret_cast<const char*>(w + 2);  // OpName
      if (op == 72 && w[3] == 35) offsets[w[1]][w[2]] = w[4];           // Offset
      if (op == 71 && w[2] == 6) arrayStride[w[1]] = w[3];              // ArrayStride
      if (op == 28) arrayElement[w[1]] = w[2];                          // OpTypeArray
      return true;
    });
  }
  uint32_t Id(const std::string& name) const {
    for (const auto& e : names)
      if (e.second == name) return e.first;
    return 0;
  }
  // The stride of an array of `element`, 0 if the module has none.
  uint32_t StrideOfArrayOf(uint32_t element) const {
    for (const auto& e : arrayElement)
      if (e.second == element && arrayStride.count(e.first)) return arrayStride.at(e.first);
    return 0;
  }
};

// Whether a module declares a SPIR-V capability (OpCapability, opcode 17). A module's
// capabilities are its first instructions (SPIR-V's logical layout, 2.4): the scan stops at the
// first other one (a third of the kernel-choice sweep's time went to scanning whole modules).
bool HasCapability(const vkdml::detail::SpirvModule& m, uint32_t capability) {
  bool found = false;
  ForEachInstruction(m, [&](uint32_t op, const uint32_t* w) {
    if (op != 17) return false;
    found = w[1] == capability;
    return !found;
  });
  return found;
}
constexpr uint32_t kInt64Atomics = 12;          // SpvCapabilityInt64Atomics
constexpr uint32_t kFloat64 = 10, kInt64 = 11;  // SpvCapabilityFloat64, SpvCapabilityInt64
constexpr uint32_t kStorage16 = 4433,
                   kStorage8 = 4448;  // SpvCapabilityStorageBuffer{16,8}BitAccess

using vkdml::detail::Capabilities;
using vkdml::detail::KernelSet;

// A GPU as these tests assume one: 48 KiB of shared memory, line kernels of up to 256 threads,
// 65535 workgroups a dispatch, 8/16-bit storage and no other optional feature.
Capabilities GpuDevice() {
  Capabilities device;
  device.storage8 = device.storage16 = true;
  device.maxSharedMemory = 48 << 10;
  device.maxLinesGroupSize = 256;
  device.maxGroups = 65535;
  return device;
}

Capabilities CpuDevice() {
  Capabilities device;
  device.type = VK_PHYSICAL_DEVICE_TYPE_CPU;
  device.storage8 = device.storage16 = true;
  device.maxSharedMemory = 32 << 10;
  device.maxLinesGroupSize = 1024;
  device.maxGroups = 65535;
  device.lines = Capabilities::Lines::Never;
  device.maxLoop = 16384;
  device.kernels = Capabilities::Kernels::Cpu;
  device.int64 = true;
  return device;
}

// The kernels chosen for spec's operator on the device.
KernelSet Choose(OpSpec spec, const Capabilities& device, UINT flags = 0) {
  vkdml::detail::OperatorImpl op;
  REQUIRE(vkdml::detail::BuildOperator(spec.Desc(), &op).ok());
  KernelSet set;
  REQUIRE(vkdml::detail::ChooseKernels(op, flags, device, &set).ok());
  return set;
}

}  // namespace

TEST_CASE("Interface: the kernels lay out plans and push constants as C++ does", "[kernels]") {
  const std::vector<size_t> plan = {
      offsetof(shader::PackedPlan, count),       offsetof(shader::PackedPlan, componentStride),
      offsetof(shader::PackedPlan, sortedBase),  offsetof(shader::PackedPlan, lineLength),
      offsetof(shader::PackedPlan, sizes),       offsetof(shader::PackedPlan, magic),
      offsetof(shader::PackedPlan, shift),       offsetof(shader::PackedPlan, direct),
      offsetof(shader::PackedPlan, indexed),     offsetof(shader::PackedPlan, indices),
      offsetof(shader::PackedPlan, position),    offsetof(shader::PackedPlan, tupleSize),
      offsetof(shader::PackedPlan, tupleStride), offsetof(shader::PackedPlan, params)};
  const std::vector<size_t> push = {
      offsetof(shader::Push, plan),      offsetof(shader::Push, srcBase),
      offsetof(shader::Push, indexBase), offsetof(shader::Push, dstBase),
      offsetof(shader::Push, begin),     offsetof(shader::Push, end),
      offsetof(shader::Push, from),      offsetof(shader::Push, to)};
  for (const char* name : {"gather_e4_i32", "scatter_e16_i64", "lines_e2_i64", "mark_i32",
                           "report_i64", "runs_gather_e32_i64", "runs_vec_scatter_e2_i32"}) {
    INFO("module " << name);
    const auto* m = FindSpirv(name);
    REQUIRE(m);
    Layouts l(*m);
    const uint32_t planId = l.Id("PackedPlan"), pushId = l.Id("Push");
    REQUIRE(planId);
    REQUIRE(pushId);
    REQUIRE(l.offsets[planId].size() == plan.size());
    for (uint32_t i = 0; i < plan.size(); ++i) CHECK(l.offsets[planId][i] == plan[i]);
    CHECK(l.StrideOfArrayOf(planId) == sizeof(shader::PackedPlan));
    REQUIRE(l.offsets[pushId].size() == push.size());
    for (uint32_t i = 0; i < push.size(); ++i) CHECK(l.offsets[pushId][i] == push[i]);
  }
  // The uniform block: the plans, then the scratch's layout, then the fill value
  // (lib/device/compiled.cpp writes them so), in every kernel but the report (which has no scratch
  // regions) and the sort's.
  for (const char* name :
       {"gather_e4_i32", "keys_i64", "sort_scatter", "ordered_e8_i32_f64", "ties_first_e4_i32",
        "mark_i32", "runs_scatter_e4_i32", "tally_i32", "mean_e2p", "dequantize_blocks_b4_i64",
        "embedding_bag_q8_0_i32_fetched", "bag_fetch_i64_large"}) {
    INFO("module " << name);
    const auto* m = FindSpirv(name);
    REQUIRE(m);
    Layouts l(*m);
    const uint32_t plansId = l.Id("Plans"), scratchId = l.Id("ScratchLayout");
    REQUIRE(plansId);
    REQUIRE(scratchId);
    REQUIRE(l.offsets[plansId].size() == 3);
    CHECK(l.offsets[plansId][1] == VKDML_PLAN_SLOTS * sizeof(shader::PackedPlan));
    CHECK(l.offsets[plansId][2] ==
          VKDML_PLAN_SLOTS * sizeof(shader::PackedPlan) + sizeof(shader::ScratchLayout));
    const std::vector<size_t> scratch = {
        offsetof(shader::ScratchLayout, mask),       offsetof(shader::ScratchLayout, keys),
        offsetof(shader::ScratchLayout, values),     offsetof(shader::ScratchLayout, counts),
        offsetof(shader::ScratchLayout, tally),      offsetof(shader::ScratchLayout, bounds),
        offsetof(shader::ScratchLayout, weights),    offsetof(shader::ScratchLayout, partials),
        offsetof(shader::ScratchLayout, blocks),     offsetof(shader::ScratchLayout, rows),
        offsetof(shader::ScratchLayout, dispatches), offsetof(shader::ScratchLayout, spans)};
    REQUIRE(l.offsets[scratchId].size() == scratch.size());
    for (uint32_t i = 0; i < scratch.size(); ++i) CHECK(l.offsets[scratchId][i] == scratch[i]);
  }
  // The large path's push constants, in its modules.
  const std::vector<size_t> large = {
      offsetof(shader::LargePush, start),        offsetof(shader::LargePush, base),
      offsetof(shader::LargePush, count),        offsetof(shader::LargePush, directStart),
      offsetof(shader::LargePush, indicesStart), offsetof(shader::LargePush, unused),
      offsetof(shader::LargePush, indexedStart), offsetof(shader::LargePush, indexedOwn),
      offsetof(shader::LargePush, indexedEnd)};
  for (const char* name : {"gather_e4_i32_large", "reduce_e8_i64_a64_large", "report_i64_large",
                           "bag_fetch_i32_large", "dequantize_blocks_b4_i64_large"}) {
    INFO("module " << name);
    const auto* m = FindSpirv(name);
    REQUIRE(m);
    Layouts l(*m);
    const uint32_t largeId = l.Id("LargePush");
    REQUIRE(largeId);
    REQUIRE(l.offsets[largeId].size() == large.size());
    for (uint32_t i = 0; i < large.size(); ++i) CHECK(l.offsets[largeId][i] == large[i]);
  }
}

TEST_CASE("Kernels: every kernel that kernel choice names is embedded", "[kernels]") {
  using vkdml::detail::Kernel;
  int largeModules = 0, largeSorts = 0, int64Modules = 0;
  // The families' lists of the names they can ask for (lib/kernels/kernels.h: ListModules), which
  // the build checks against the embedded modules: every name chosen below must be in them.
  std::set<std::string> listed;
  vkdml::detail::ListModules([&](const std::string& name) { listed.insert(name); });
  const auto t = [](DML_TENSOR_DATA_TYPE type, std::vector<UINT> sizes) {
    return TensorDesc(type, std::move(sizes));
  };
  for (DML_TENSOR_DATA_TYPE dt : DataTypes()) {
    for (DML_TENSOR_DATA_TYPE it : IndexTypes()) {
      // Rows of 128 elements: every plan widens, ScatterND's slices are large enough to mark.
      std::vector<OpSpec> specs = {
          OpSpec::Gather(t(dt, {8, 128}), t(it, {1, 4}), t(dt, {4, 128}), 0, 1),
          OpSpec::GatherND(t(dt, {8, 128}), t(it, {4, 1}), t(dt, {4, 128}), 2, 2),
          OpSpec::GatherElements(t(dt, {8, 128}), t(it, {8, 128}), t(dt, {8, 128}), 1),
          OpSpec::ScatterND(t(dt, {8, 128}), t(it, {4, 1}), t(dt, {4, 128}), t(dt, {8, 128}), 2, 2),
          OpSpec::ScatterElements(t(dt, {8, 128}), t(it, {8, 128}), t(dt, {8, 128}),
                                  t(dt, {8, 128}), 1)};
      for (VKDML_REDUCE_FUNCTION f :
           {VKDML_REDUCE_FUNCTION_NONE, VKDML_REDUCE_FUNCTION_ADD, VKDML_REDUCE_FUNCTION_MULTIPLY,
            VKDML_REDUCE_FUNCTION_MAX, VKDML_REDUCE_FUNCTION_MIN}) {
        specs.push_back(specs[3]);
        specs.back().WithReduce(f);
        specs.push_back(specs[4]);
        specs.back().WithReduce(f);
      }
      for (OpSpec& spec : specs) {
        INFO(spec.ToString());
        vkdml::detail::OperatorImpl op;
        const Result built = vkdml::detail::BuildOperator(spec.Desc(), &op);
        INFO(Str(built));
        REQUIRE(built.ok());
        // Line kernels or not; a GPU with every optional feature, one like NVIDIA's (float64,
        // atomics, no promise to keep denormals), a CPU device with none (1- and 2-byte elements
        // packed in words, float64 in integer arithmetic), or one with shaderInt64 (its runs
        // kernels move u64vec4s); each with a binding range of 4 GiB or of windows of 256 bytes,
        // so that the large path's modules (`_large`) are named too.
        for (int variant = 0; variant < 16; ++variant) {
          const int features = variant % 4;
          const bool large = variant >= 8;
          Capabilities device = GpuDevice();
          if (large) device.maxRange = device.rangeAlign + 256;
          if (features % 2) device.groupSize = device.maxLinesGroupSize = VKDML_MIN_GROUP_SIZE;
          device.type =
              features < 2 ? VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU : VK_PHYSICAL_DEVICE_TYPE_CPU;
          device.lines = variant % 8 < 4 ? Capabilities::Lines::Never : Capabilities::Lines::Always;
          device.float32AtomicAdd = device.int64Atomics = device.float64 = features < 2;
          device.storage8 = device.storage16 = device.float64Elements = features < 2;
          device.denormPreserve32 = device.denormPreserve64 = features == 0;
          if (features >= 2) {
            device.kernels = Capabilities::Kernels::Cpu;
            device.maxLoop = 16384;
            device.int64 = features == 3;
          }
          for (UINT flags :
               {0u, UINT(VKDML_EXECUTION_FLAG_CHECK_INDICES),
                UINT(VKDML_EXECUTION_FLAG_DETERMINISTIC),
                UINT(VKDML_EXECUTION_FLAG_CHECK_INDICES | VKDML_EXECUTION_FLAG_DETERMINISTIC)}) {
            const bool checked = (flags & VKDML_EXECUTION_FLAG_CHECK_INDICES) != 0;
            INFO("variant " << variant << ", flags " << flags);
            vkdml::detail::KernelSet set;
            const Result chosen = vkdml::detail::ChooseKernels(op, flags, device, &set);
            INFO(Str(chosen));
            REQUIRE(chosen.ok());
            CHECK(set.large == large);
            // Every mode on the large path: the deterministic one and 8-byte reductions without
            // 64-bit atomics sort there, in chunks (kernel_reduce.cpp: OrderedLarge).
            if (large)
              for (const auto& step : set.steps)
                largeSorts += step.kind == vkdml::detail::Pass::Kind::Keys;
            CHECK(set.plans.size() == VKDML_PLAN_SLOTS);
            // The scratch regions one after another, after the status words.
            const auto& at = set.scratchAt;
            CHECK(at.mask == VKDML_STATUS_WORDS);
            CHECK(at.mask + set.maskWords == at.keys);
            CHECK(at.keys + std::max(set.sortWords, set.tiePositionWords) == at.values);
            CHECK(at.values + set.sortWords == at.counts);
            CHECK(at.counts + std::max(set.countWords, set.tieMarkWords) == set.scratchWords);
            std::vector<const Kernel*> kernels;
            for (const auto& step : set.steps) {
              kernels.push_back(&step.plain);
              if (step.hasWide) kernels.push_back(&step.wide);
              CHECK((!step.hasWide || step.wide.slot != step.plain.slot));
            }
            if (checked) kernels.push_back(&set.report);
            // Each kernel once: the large path repeats one per chunk and window.
            std::set<std::tuple<std::string, vkdml::detail::Specialization, UINT, bool>> seen;
            for (const Kernel* k : kernels) {
              if (!seen.emplace(k->module, k->spec, k->slot, k->groups >= 1).second) continue;
              INFO("module " << k->module);
              const auto* spirv = FindSpirv(k->module.c_str());
              CHECK(spirv != nullptr);
              CHECK(listed.count(k->module) == 1);
              // A device without 64-bit atomics (Apple's GPUs, through MoltenVK) is never given
              // a module that needs them (lib.msl_translation: those do not translate to Metal).
              if (spirv && !device.int64Atomics) CHECK(!HasCapability(*spirv, kInt64Atomics));
              if (spirv && HasCapability(*spirv, kInt64Atomics)) ++int64Modules;
              // Nor is any device given a module that declares a feature it lacks.
              if (spirv && !device.storage8) CHECK(!HasCapability(*spirv, kStorage8));
              if (spirv && !device.storage16) CHECK(!HasCapability(*spirv, kStorage16));
              if (spirv && !device.float64 && !device.float64Elements)
                CHECK(!HasCapability(*spirv, kFloat64));
              if (spirv && !device.int64 && !device.int64Atomics)
                CHECK(!HasCapability(*spirv, kInt64));
              CHECK(set.packed == (op.ElemSize() < 4 && !device.storage8));
              const bool largeModule =
                  k->module.size() > 6 && k->module.compare(k->module.size() - 6, 6, "_large") == 0;
              CHECK(largeModule == (large && !k->sortStep));  // a sort touches no tensor
              if (largeModule) ++largeModules;
              CHECK(k->slot < VKDML_PLAN_SLOTS);
              CHECK(k->groups >= 1);
              // Workgroups within the device's limits: the line kernels' up to theirs, the CPU
              // runs' of 64, the others' of groupSize (the report's is 1, in its source).
              const UINT group = k->spec[VKDML_SPEC_GROUP_SIZE];
              if (k->module.rfind("lines_", 0) == 0)
                CHECK((group >= 32 && group <= device.maxLinesGroupSize));
              else if (k->module.rfind("runs_", 0) == 0)
                CHECK(group == 64);
              else if (k != &set.report)
                CHECK(group == device.groupSize);
              // Checked mode in every kernel that reads indices (not the sort's steps).
              CHECK(k->spec[VKDML_SPEC_CHECKED] ==
                    uint32_t(checked && k != &set.report && !k->sortStep));
            }
          }
        }
      }
    }
  }
  INFO(largeModules << " large-path modules named, " << largeSorts << " sorts on the large path");
  CHECK(largeModules > 0);
  CHECK(largeSorts > 0);
  CHECK(int64Modules > 0);  // chosen where the device has them: the check above can fail
}

// The build's check (lib/kernels/check_modules.cpp): every listed name is embedded, and a name the
// build does not make is reported.
TEST_CASE("Kernels: the build makes every module kernel choice can name", "[kernels]") {
  const auto embedded = [](const std::string& name) { return FindSpirv(name.c_str()) != nullptr; };
  CHECK(vkdml::detail::MissingModules(embedded).empty());
  size_t names = 0;
  vkdml::detail::ListModules([&](const std::string& name) {
    ++names;
    const auto* m = FindSpirv(name.c_str());
    if (m) CHECK(m->name == name);
  });
  CHECK(names > 200);
  // The table's binary search: no prefix, extension or neighbour of a name finds it.
  for (const char* absent : {"", "gather", "gather_e4_i32_", "gather_e4_i3", "~", "a"})
    CHECK(FindSpirv(absent) == nullptr);
  for (const char* dropped : {"gather_e16_i64_large", "ties_write_e8", "sort_scan_add",
                              "reduce_e8_i32_a64_f64_dp_ties", "runs_vec_scatter_e1_i32"}) {
    INFO(dropped);
    const auto missing = vkdml::detail::MissingModules(
        [&](const std::string& name) { return name != dropped && embedded(name); });
    CHECK(missing == std::vector<std::string>{dropped});
  }
}

// A binding range no larger than its offset alignment leaves windows of no bytes: refused, not a
// loop without end (VKDML_MAX_BINDING_RANGE used to allow 256 on a device aligning to 256).
TEST_CASE("Kernels: a binding range that leaves no window is refused", "[kernels]") {
  Capabilities device = GpuDevice();
  device.maxRange = device.rangeAlign + 8;
  vkdml::detail::OperatorImpl op;
  OpSpec spec = OpSpec::GatherElements(TensorDesc(DML_TENSOR_DATA_TYPE_FLOAT32, {8, 128}),
                                       TensorDesc(DML_TENSOR_DATA_TYPE_INT32, {8, 128}),
                                       TensorDesc(DML_TENSOR_DATA_TYPE_FLOAT32, {8, 128}), 1);
  REQUIRE(vkdml::detail::BuildOperator(spec.Desc(), &op).ok());
  KernelSet set;
  const Result r = vkdml::detail::ChooseKernels(op, 0, device, &set);
  INFO(Str(r));
  CHECK(r.status == Status::Unsupported);
  CHECK(r.message.find("leaves no window") != std::string::npos);
  device.maxRange = device.rangeAlign + VKDML_VECTOR_BYTES;
  CHECK(vkdml::detail::ChooseKernels(op, 0, device, &set).ok());
  CHECK(set.large);
}

// Perf choices no output shows, pinned on the CPU: ScatterND with slices of 128 bytes or more
// marks its targets and its copy skips them (without a reduction only: a reduction needs every
// input element); a deterministic scatter sorts and applies in order; the default reduction
// runs the atomic kernel.
TEST_CASE("Kernels: the steps each scatter takes", "[kernels]") {
  using vkdml::detail::Pass;
  const DML_TENSOR_DATA_TYPE f32 = DML_TENSOR_DATA_TYPE_FLOAT32, i64 = DML_TENSOR_DATA_TYPE_INT64;
  const Capabilities device = GpuDevice();
  using K = Pass::Kind;
  const struct {
    VKDML_REDUCE_FUNCTION f;
    UINT flags;
    std::vector<K> kinds;
    std::vector<uint32_t> maskSkip;
  } expectations[] = {
      {VKDML_REDUCE_FUNCTION_NONE, 0, {K::Mark, K::Gather, K::Scatter}, {0, 1, 0}},
      {VKDML_REDUCE_FUNCTION_ADD, 0, {K::Gather, K::Reduce}, {0, 0}},
      {VKDML_REDUCE_FUNCTION_NONE,
       VKDML_EXECUTION_FLAG_DETERMINISTIC,
       {K::Mark, K::Gather, K::Keys, K::Sort, K::Sort, K::Sort, K::Ordered},
       {0, 1, 0, 0, 0, 0, 0}},
  };
  for (const auto& e : expectations) {
    INFO("ReduceFunction " << e.f << ", flags " << e.flags);
    // 16 target rows: one digit pass (count, scan, scatter).
    OpSpec spec = OpSpec::ScatterND(TensorDesc(f32, {16, 32}), TensorDesc(i64, {4, 1}),
                                    TensorDesc(f32, {4, 32}), TensorDesc(f32, {16, 32}), 2, 2);
    if (e.f) spec.WithReduce(e.f);
    const KernelSet set = Choose(spec, device, e.flags);
    REQUIRE(set.steps.size() == e.kinds.size());
    for (size_t i = 0; i < set.steps.size(); ++i) {
      INFO("step " << i << ": " << set.steps[i].plain.module);
      CHECK(set.steps[i].kind == e.kinds[i]);
      CHECK(set.steps[i].plain.spec[VKDML_SPEC_MASK_SKIP] == e.maskSkip[i]);
      if (set.steps[i].hasWide)
        CHECK(set.steps[i].wide.spec[VKDML_SPEC_MASK_SKIP] == e.maskSkip[i]);
    }
  }
}

// Integer reductions are order-free bit for bit: deterministic, those of 4- and 8-byte elements
// take the default mode's steps; float reductions, NONE and 1- and 2-byte elements (whose atomics
// need a 4-byte aligned output) do not: the sort and the ordered fold, or for float16 and float32
// MAX and MIN the atomics marking ties and the ties' passes (the test below).
TEST_CASE("Kernels: deterministic integer reductions take the default mode's kernels",
          "[kernels]") {
  using vkdml::detail::Pass;
  Capabilities device = GpuDevice();
  device.int64Atomics = true;
  const DML_TENSOR_DATA_TYPE i32 = DML_TENSOR_DATA_TYPE_INT32;
  for (DML_TENSOR_DATA_TYPE t :
       {DML_TENSOR_DATA_TYPE_UINT8, DML_TENSOR_DATA_TYPE_INT16, DML_TENSOR_DATA_TYPE_INT32,
        DML_TENSOR_DATA_TYPE_UINT64, DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_FLOAT16}) {
    for (VKDML_REDUCE_FUNCTION f :
         {VKDML_REDUCE_FUNCTION_NONE, VKDML_REDUCE_FUNCTION_ADD, VKDML_REDUCE_FUNCTION_MULTIPLY,
          VKDML_REDUCE_FUNCTION_MAX, VKDML_REDUCE_FUNCTION_MIN}) {
      INFO(DataTypeName(t) << ", ReduceFunction " << f);
      OpSpec spec = OpSpec::ScatterElements(TensorDesc(t, {64}), TensorDesc(i32, {16}),
                                            TensorDesc(t, {16}), TensorDesc(t, {64}), 0);
      spec.WithReduce(f);
      const KernelSet set = Choose(spec, device, VKDML_EXECUTION_FLAG_DETERMINISTIC);
      const KernelSet plain = Choose(spec, device);
      const bool isFloat = t == DML_TENSOR_DATA_TYPE_FLOAT32 || t == DML_TENSOR_DATA_TYPE_FLOAT16;
      const bool orderFree = f != VKDML_REDUCE_FUNCTION_NONE && !isFloat && DataTypeSize(t) >= 4;
      const bool ties =
          isFloat && (f == VKDML_REDUCE_FUNCTION_MAX || f == VKDML_REDUCE_FUNCTION_MIN);
      CHECK(set.steps.back().kind == (orderFree ? Pass::Kind::Reduce
                                      : ties    ? Pass::Kind::Ties
                                                : Pass::Kind::Ordered));
      CHECK((set.steps.back().plain.module == plain.steps.back().plain.module) == orderFree);
    }
  }
}

namespace {

// A GPU whose line kernels take every line-shaped scatter that fits 32 KiB of shared memory.
Capabilities LinesDevice() {
  Capabilities device;
  device.maxSharedMemory = 32 << 10;
  device.maxLinesGroupSize = 1024;
  device.maxGroups = 65535;
  device.lines = Capabilities::Lines::Always;
  return device;
}

}  // namespace

// ScatterElements along its innermost axis: the line kernels where the device takes them (here
// forced, as VKDML_SCATTER_LINES=1 does), for a reduction through shared memory and, when
// deterministic, in order; neither where line kernels are off (CPU devices).
TEST_CASE("Kernels: the line kernels of ScatterElements with a reduction", "[kernels]") {
  using vkdml::detail::Pass;
  const DML_TENSOR_DATA_TYPE f32 = DML_TENSOR_DATA_TYPE_FLOAT32, i32 = DML_TENSOR_DATA_TYPE_INT32;
  using K = Pass::Kind;
  const struct {
    Capabilities::Lines lines;
    UINT flags;
    std::string module;
    K kind;
  } expectations[] = {
      {Capabilities::Lines::Always, 0, "lines_reduce_e4_i32", K::Reduce},
      {Capabilities::Lines::Always, VKDML_EXECUTION_FLAG_DETERMINISTIC, "lines_ordered_e4_i32",
       K::Ordered},
      {Capabilities::Lines::Never, 0, "reduce_e4_i32", K::Reduce},
      {Capabilities::Lines::Never, VKDML_EXECUTION_FLAG_DETERMINISTIC, "ordered_e4_i32",
       K::Ordered},
  };
  for (const auto& e : expectations) {
    INFO("lines " << int(e.lines) << ", flags " << e.flags);
    Capabilities device = LinesDevice();
    device.lines = e.lines;
    OpSpec spec = OpSpec::ScatterElements(TensorDesc(f32, {4, 300}), TensorDesc(i32, {4, 200}),
                                          TensorDesc(f32, {4, 200}), TensorDesc(f32, {4, 300}), 1);
    spec.WithReduce(VKDML_REDUCE_FUNCTION_ADD);
    const KernelSet set = Choose(spec, device, e.flags);
    REQUIRE(!set.steps.empty());
    CHECK(set.steps.back().plain.module == e.module);
    CHECK(set.steps.back().kind == e.kind);
  }
}

// A mean through the shared-memory line kernel counts each target's updates beside the line, in
// 16 bits, and divides before the line goes back: no passes after it. Where a line's slots and
// counts do not fit (its slots alone do) or a line has 2^16 updates or more, the line kernel
// sums and the tally and division passes follow.
TEST_CASE("Kernels: a mean on the shared-memory line kernel divides in it", "[kernels]") {
  const DML_TENSOR_DATA_TYPE f32 = DML_TENSOR_DATA_TYPE_FLOAT32, i32 = DML_TENSOR_DATA_TYPE_INT32;
  const Capabilities device = LinesDevice();
  const struct {
    UINT length, perLine;
    bool fused;
  } cases[] = {{300, 200, true},   {5461, 200, true},  {5462, 200, false},
               {8192, 200, false}, {300, 65535, true}, {300, 65536, false}};
  for (const auto& e : cases) {
    for (BOOL excludeSelf : {0, 1}) {
      INFO("line of " << e.length << ", " << e.perLine << " updates, ExcludeSelf " << excludeSelf);
      OpSpec spec = OpSpec::ScatterElements(
          TensorDesc(f32, {2, e.length}), TensorDesc(i32, {2, e.perLine}),
          TensorDesc(f32, {2, e.perLine}), TensorDesc(f32, {2, e.length}), 1);
      spec.WithReduce(VKDML_REDUCE_FUNCTION_MEAN);
      spec.excludeSelf = excludeSelf;
      const KernelSet set = Choose(spec, device, 0);
      REQUIRE(set.steps.size() >= 2);
      const auto& sum = set.steps[set.steps.size() - (e.fused ? 1 : 3)].plain;
      CHECK(sum.module == "lines_reduce_e4_i32");
      CHECK(sum.spec[VKDML_SPEC_MEAN] == UINT(e.fused));
      CHECK(sum.spec[VKDML_SPEC_SELF] == UINT(e.fused && !excludeSelf));
      CHECK(set.steps.back().plain.module == (e.fused ? "lines_reduce_e4_i32" : "mean_e4"));
      CHECK((set.tallyWords == 0) == e.fused);
    }
  }
}

// The ordered line kernel takes a line whose shared memory (interface.h:
// VKDML_ORDERED_SHARED_WORDS) is the device's limit, and not one that needs a word more.
TEST_CASE("Kernels: the ordered line kernel up to the shared-memory limit", "[kernels]") {
  const DML_TENSOR_DATA_TYPE f32 = DML_TENSOR_DATA_TYPE_FLOAT32, i32 = DML_TENSOR_DATA_TYPE_INT32;
  const Capabilities device = LinesDevice();
  const UINT perLine = 4096, fits = 8192 - VKDML_ORDERED_ENTRY_WORDS(perLine);
  for (UINT length : {fits, fits + 1}) {
    INFO("line of " << length << " elements, " << perLine << " updates");
    OpSpec spec =
        OpSpec::ScatterElements(TensorDesc(f32, {2, length}), TensorDesc(i32, {2, perLine}),
                                TensorDesc(f32, {2, perLine}), TensorDesc(f32, {2, length}), 1);
    spec.WithReduce(VKDML_REDUCE_FUNCTION_ADD);
    vkdml::detail::OperatorImpl op;
    REQUIRE(vkdml::detail::BuildOperator(spec.Desc(), &op).ok());
    vkdml::detail::KernelSet set;
    REQUIRE(
        vkdml::detail::ChooseKernels(op, VKDML_EXECUTION_FLAG_DETERMINISTIC, device, &set).ok());
    REQUIRE(!set.steps.empty());
    CHECK((set.steps.back().plain.module == "lines_ordered_e4_i32") == (length == fits));
  }
}

// The bench's deterministic ScatterElements (scatter-elements-add-axis1-f32-det and its mean: 8192
// lines of 8192 float32 targets and updates, int64 indices) on an H200 as vkdml sees it (48 KiB
// of shared memory, 1024-thread workgroups, no denormal promise, float64): the ordered line
// kernel with 1024 threads, 8 updates and 8 targets a thread, and the updates no more than the
// targets, so glsl/scatter_lines_ordered.comp stages the values (kStaged: at most 16 each); the
// mean divides in it, no passes after.
TEST_CASE("Kernels: the bench's deterministic lines are staged on an H200", "[kernels][mean]") {
  const DML_TENSOR_DATA_TYPE f32 = DML_TENSOR_DATA_TYPE_FLOAT32, i64 = DML_TENSOR_DATA_TYPE_INT64;
  Capabilities device;
  device.storage8 = device.storage16 = true;
  device.maxSharedMemory = 48 << 10;
  device.maxLinesGroupSize = 1024;
  device.maxGroups = 65535;
  device.float64 = device.float64Elements = true;
  device.float32AtomicAdd = device.int64 = device.int64Atomics = true;
  for (VKDML_REDUCE_FUNCTION f : {VKDML_REDUCE_FUNCTION_ADD, VKDML_REDUCE_FUNCTION_MEAN}) {
    INFO("reduce " << f);
    OpSpec spec =
        OpSpec::ScatterElements(TensorDesc(f32, {8192, 8192}), TensorDesc(i64, {8192, 8192}),
                                TensorDesc(f32, {8192, 8192}), TensorDesc(f32, {8192, 8192}), 1);
    spec.WithReduce(f);
    const KernelSet set = Choose(spec, device, VKDML_EXECUTION_FLAG_DETERMINISTIC);
    REQUIRE(!set.steps.empty());
    const auto& k = set.steps.back().plain;
    CHECK(k.module == "lines_ordered_e4_i64_w");
    const UINT group = k.spec[VKDML_SPEC_GROUP_SIZE], length = k.spec[VKDML_SPEC_LINE_LENGTH];
    CHECK(group == 1024);
    CHECK(k.spec[VKDML_SPEC_ITEMS] == 8);
    CHECK(k.spec[VKDML_SPEC_UNIT] <= length);   // the values fit in the counts' words
    CHECK((length + group - 1) / group <= 16);  // targets a thread
    CHECK(k.spec[VKDML_SPEC_MEAN] == UINT(f == VKDML_REDUCE_FUNCTION_MEAN));
    CHECK(set.tallyWords == 0);
  }
}

// Where loops are bounded (lavapipe, whatever type it reports), a line kernel's workgroup takes
// only as many lines as keep each invocation's loops within the bound: the minimum-limits device
// (an integrated GPU over lavapipe) folded 72 lines of 957 updates in one workgroup wrongly. With
// fewer workgroups than that needs, the scatter is sorted instead; unbounded, the lines stay.
TEST_CASE("Kernels: the line kernels keep each invocation's loops within the device's bound",
          "[kernels]") {
  const DML_TENSOR_DATA_TYPE f16 = DML_TENSOR_DATA_TYPE_FLOAT16, i32 = DML_TENSOR_DATA_TYPE_INT32;
  OpSpec spec = OpSpec::ScatterElements(TensorDesc(f16, {72, 529}), TensorDesc(i32, {72, 957}),
                                        TensorDesc(f16, {72, 957}), TensorDesc(f16, {72, 529}), 1);
  spec.WithReduce(VKDML_REDUCE_FUNCTION_ADD);
  Capabilities device = GpuDevice();
  device.lines = Capabilities::Lines::Always;
  for (UINT64 maxLoop : {UINT64(-1), UINT64(16384)})
    for (UINT groups : {1u, 36u, 72u}) {
      device.maxLoop = maxLoop;
      device.maxGroups = groups;
      // Each line costs 4 * (957 + 529) + 64 = 6008 iterations at most: two lines fit 16384.
      const bool fits = maxLoop == UINT64(-1) || groups >= 36;
      INFO("maxLoop " << maxLoop << ", " << groups << " workgroups");
      const KernelSet ordered = Choose(spec, device, VKDML_EXECUTION_FLAG_DETERMINISTIC);
      CHECK((ordered.steps.back().plain.module == "lines_ordered_e2_i32") == fits);
      CHECK((ordered.sortWords > 0) == !fits);
      const KernelSet shared = Choose(spec, device);
      CHECK((shared.steps.back().plain.module == "lines_reduce_e2_i32") == fits);
    }
}

// CPU devices take glsl/indexed_runs.comp: slices moved in u64vec4s (uvec4s without shaderInt64),
// GatherElements and ScatterElements lines a u64vec4 step at a time where they line up (and the
// device has shaderInt64), each element alone where they do not; the mark pass stays the GPU's.
TEST_CASE("Kernels: CPU devices' runs", "[kernels]") {
  const DML_TENSOR_DATA_TYPE f32 = DML_TENSOR_DATA_TYPE_FLOAT32, u8 = DML_TENSOR_DATA_TYPE_UINT8,
                             i32 = DML_TENSOR_DATA_TYPE_INT32, i64 = DML_TENSOR_DATA_TYPE_INT64;
  const auto t = [](DML_TENSOR_DATA_TYPE type, std::vector<UINT> sizes,
                    std::vector<UINT> strides = {}) {
    return TensorDesc(type, std::move(sizes), std::move(strides));
  };
  const struct {
    const char* what;
    OpSpec spec;
    bool int64;
    std::vector<std::string> plain, wide;  // per step; "" where it has no wide kernel
    UINT align, indexAlign;                // of the last step's wide kernel
  } expectations[] = {
      {"rows",
       OpSpec::GatherND(t(f32, {64, 256}), t(i64, {16, 1}), t(f32, {16, 256}), 2, 2),
       true,
       {"runs_gather_e4_i64"},
       {"runs_gather_e32_i64"},
       0,
       1},
      {"rows without int64",
       OpSpec::GatherND(t(f32, {64, 256}), t(i64, {16, 1}), t(f32, {16, 256}), 2, 2),
       false,
       {"runs_gather_e4_i64"},
       {"runs_gather_e16_i64"},
       0,
       1},
      {"rows of 3 elements",
       OpSpec::GatherND(t(f32, {64, 3}), t(i32, {16, 1}), t(f32, {16, 3}), 2, 2),
       true,
       {"runs_gather_e4_i32"},
       {""},
       0,
       1},
      {"GatherElements, last axis",
       OpSpec::GatherElements(t(f32, {8, 64}), t(i64, {8, 64}), t(f32, {8, 64}), 1),
       true,
       {"runs_gather_e4_i64"},
       {"runs_vec_gather_e4_i64"},
       32,
       32},
      {"GatherElements without int64",
       OpSpec::GatherElements(t(f32, {8, 64}), t(i64, {8, 64}), t(f32, {8, 64}), 1),
       false,
       {"runs_gather_e4_i64"},
       {""},
       0,
       1},
      {"GatherElements, outer axis (striped)",
       OpSpec::GatherElements(t(u8, {8, 256}), t(i32, {8, 256}), t(u8, {8, 256}), 0),
       true,
       {"runs_gather_e1_i32"},
       {"runs_vec_gather_e1_i32"},
       32,
       32},
      {"GatherElements, lines of 60",
       OpSpec::GatherElements(t(f32, {8, 60}), t(i64, {8, 60}), t(f32, {8, 60}), 1),
       true,
       {"runs_gather_e4_i64"},
       {""},
       0,
       1},
      {"GatherElements, lines 68 elements apart",
       OpSpec::GatherElements(t(f32, {8, 64}), t(i64, {8, 64}), t(f32, {8, 64}, {68, 1}), 1),
       true,
       {"runs_gather_e4_i64"},
       {""},
       0,
       1},
      {"ScatterElements",
       OpSpec::ScatterElements(t(f32, {8, 64}), t(i32, {8, 64}), t(f32, {8, 64}), t(f32, {8, 64}),
                               1),
       true,
       {"runs_gather_e4_i32", "runs_scatter_e4_i32"},
       {"runs_gather_e32_i32", "runs_vec_scatter_e4_i32"},
       32,
       32},
      {"ScatterND",
       OpSpec::ScatterND(t(f32, {64, 256}), t(i64, {16, 1}), t(f32, {16, 256}), t(f32, {64, 256}),
                         2, 2),
       true,
       {"mark_i64", "runs_gather_e4_i64", "runs_scatter_e4_i64"},
       {"", "runs_gather_e32_i64", "runs_scatter_e32_i64"},
       0,
       1},
  };
  for (const auto& e : expectations) {
    INFO(e.what);
    Capabilities device = CpuDevice();
    device.int64 = e.int64;
    const KernelSet set = Choose(e.spec, device);
    REQUIRE(set.steps.size() == e.plain.size());
    for (size_t i = 0; i < set.steps.size(); ++i) {
      const auto& step = set.steps[i];
      INFO("step " << i);
      CHECK(step.plain.module == e.plain[i]);
      CHECK(step.hasWide == !e.wide[i].empty());
      if (step.hasWide) CHECK(step.wide.module == e.wide[i]);
    }
    CHECK(set.steps.back().wide.align == e.align);
    CHECK(set.steps.back().wide.indexAlign == e.indexAlign);
  }
  // A device of the GPU kind takes the GPU kernels; so does a CPU device told to (VKDML_KERNELS).
  Capabilities gpu = CpuDevice();
  gpu.kernels = Capabilities::Kernels::Gpu;
  const KernelSet set = Choose(expectations[0].spec, gpu);
  REQUIRE(set.steps.size() == 1);
  CHECK(set.steps[0].plain.module == "gather_e4_i64");
  CHECK(set.steps[0].wide.module == "gather_e16_i64");
}

// A run is an invocation's loop: no longer than the device's bound (maxLoop, lavapipe's cut of
// long loops), counted in the elements the plain kernel loops over; each dispatch takes at most
// maxGroups workgroups, the next going on from the run where the last stopped.
TEST_CASE("Kernels: CPU devices' runs within the loop bound and the workgroup cap", "[kernels]") {
  const DML_TENSOR_DATA_TYPE u8 = DML_TENSOR_DATA_TYPE_UINT8, i32 = DML_TENSOR_DATA_TYPE_INT32;
  for (UINT64 maxLoop : {UINT64(16384), UINT64(100), UINT64(7)}) {
    for (UINT maxGroups : {65535u, 1u, 3u}) {
      INFO("maxLoop " << maxLoop << ", maxGroups " << maxGroups);
      Capabilities device = CpuDevice();
      device.maxLoop = maxLoop;
      device.maxGroups = maxGroups;
      // A line of 100000 bytes moved in u64vec4s (32 elements each), and one in bytes alone.
      for (UINT pitch : {100000u, 100001u}) {
        OpSpec spec = OpSpec::GatherND(TensorDesc(u8, {3, 100000}, {pitch, 1}),
                                       TensorDesc(i32, {2, 1}), TensorDesc(u8, {2, 100000}), 2, 2);
        const KernelSet set = Choose(spec, device);
        REQUIRE(!set.steps.empty());
        UINT64 runs = 0;
        for (const auto& step : set.steps) {
          CHECK(step.plain.spec[VKDML_SPEC_RUN] <= maxLoop);
          CHECK(step.plain.begin == runs);
          CHECK(step.plain.groups <= maxGroups);
          if (step.hasWide) {
            CHECK(step.wide.begin == step.plain.begin);
            CHECK(step.wide.groups == step.plain.groups);
            CHECK(step.wide.spec[VKDML_SPEC_RUN] * 32 == step.plain.spec[VKDML_SPEC_RUN]);
          }
          runs += UINT64(step.plain.groups) * 64;
        }
        const UINT run = set.steps[0].plain.spec[VKDML_SPEC_RUN];
        const UINT64 needed = 2 * ((100000 + run - 1) / run);
        CHECK(runs >= needed);
        CHECK(runs - needed < 64);
        CHECK(set.plans[set.steps[0].plain.slot].count == needed);
        CHECK(set.plans[set.steps[0].plain.slot].lineLength == 100000);
      }
    }
  }
}

// Small work goes to one workgroup, whose long runs cost less than waking a second CPU thread
// (a 64 x 64 GatherElements: PERF_NOTES.md, v33); larger work is cut into enough runs to keep
// every thread busy.
TEST_CASE("Kernels: CPU devices' runs for small and large work", "[kernels]") {
  const DML_TENSOR_DATA_TYPE f32 = DML_TENSOR_DATA_TYPE_FLOAT32, i64 = DML_TENSOR_DATA_TYPE_INT64;
  const struct {
    UINT side, run, groups;
  } expectations[] = {{64, 64, 1}, {128, 128, 2}, {512, 128, 32}, {1024, 256, 64}};
  for (const auto& e : expectations) {
    INFO("GatherElements " << e.side << " x " << e.side);
    const TensorDesc t(f32, {e.side, e.side}), ix(i64, {e.side, e.side});
    const KernelSet set = Choose(OpSpec::GatherElements(t, ix, t, 1), CpuDevice());
    REQUIRE(set.steps.size() == 1);
    CHECK(set.steps[0].wide.module == "runs_vec_gather_e4_i64");
    CHECK(set.steps[0].wide.spec[VKDML_SPEC_RUN] == e.run);
    CHECK(set.steps[0].wide.groups == e.groups);
  }
}

// Short lines that each share one index (GatherND's small slices, ScatterND's) go kRunLines (8)
// to an invocation, in both the plain and the wide kernel; with one workgroup per dispatch the
// next dispatch goes on from the line where the last stopped (64 invocations of 8 lines).
TEST_CASE("Kernels: CPU devices' short lines several to an invocation", "[kernels]") {
  const DML_TENSOR_DATA_TYPE f32 = DML_TENSOR_DATA_TYPE_FLOAT32, i64 = DML_TENSOR_DATA_TYPE_INT64;
  for (UINT maxGroups : {65535u, 1u}) {
    INFO("maxGroups " << maxGroups);
    Capabilities device = CpuDevice();
    device.maxGroups = maxGroups;
    const KernelSet set =
        Choose(OpSpec::GatherND(TensorDesc(f32, {64, 64, 16}), TensorDesc(i64, {1, 1500, 2}),
                                TensorDesc(f32, {1, 1500, 16}), 3, 2),
               device);
    REQUIRE(set.steps.size() == (maxGroups == 1 ? 3u : 1u));
    for (size_t i = 0; i < set.steps.size(); ++i) {
      const auto& step = set.steps[i];
      CHECK(step.wide.module == "runs_gather_e32_i64");
      CHECK(step.plain.spec[VKDML_SPEC_RUN_LINES] == 8);
      CHECK(step.wide.spec[VKDML_SPEC_RUN_LINES] == 8);
      CHECK(step.plain.begin == i * 512);
      CHECK(step.plain.groups == (maxGroups == 1 ? 1u : 3u));
    }
    CHECK(set.plans[set.steps[0].wide.slot].count == 1500);
  }
  // Long lines (rows of 256 floats) and lines with an index per element take one run each.
  const KernelSet rows =
      Choose(OpSpec::GatherND(TensorDesc(f32, {64, 256}), TensorDesc(i64, {16, 1}),
                              TensorDesc(f32, {16, 256}), 2, 2),
             CpuDevice());
  CHECK(rows.steps[0].wide.spec[VKDML_SPEC_RUN_LINES] == 1);
  const KernelSet elements =
      Choose(OpSpec::GatherElements(TensorDesc(f32, {64, 6}), TensorDesc(i64, {64, 6}),
                                    TensorDesc(f32, {64, 6}), 1),
             CpuDevice());
  CHECK(elements.steps[0].plain.spec[VKDML_SPEC_RUN_LINES] == 1);
}
// A ScatterND reduction on wide slices is sorted by target on GPUs, in the default mode too
// (fewer steps than an atomic per element), and uses atomics on CPU devices; narrow slices use
// atomics everywhere.
TEST_CASE("Kernels: wide ScatterND slices are sorted on GPUs", "[kernels]") {
  using vkdml::detail::Pass;
  const DML_TENSOR_DATA_TYPE f32 = DML_TENSOR_DATA_TYPE_FLOAT32, i64 = DML_TENSOR_DATA_TYPE_INT64;
  for (VkPhysicalDeviceType type :
       {VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, VK_PHYSICAL_DEVICE_TYPE_CPU}) {
    for (UINT width : {127u, 128u}) {
      INFO("device type " << type << ", slices of " << width);
      Capabilities device = GpuDevice();
      device.type = type;
      OpSpec spec =
          OpSpec::ScatterND(TensorDesc(f32, {16, width}), TensorDesc(i64, {4, 1}),
                            TensorDesc(f32, {4, width}), TensorDesc(f32, {16, width}), 2, 2);
      spec.WithReduce(VKDML_REDUCE_FUNCTION_ADD);
      const KernelSet set = Choose(spec, device);
      const bool sorted = type != VK_PHYSICAL_DEVICE_TYPE_CPU && width >= 128;
      CHECK(set.steps.back().kind == (sorted ? Pass::Kind::Ordered : Pass::Kind::Reduce));
      CHECK((set.sortWords > 0) == sorted);
    }
  }
}

// A deterministic float MAX or MIN takes the default mode's atomics, marking ties, then the two
// passes that resolve them (glsl/ties.glsl), with a tie position and a mark bit per OutputTensor
// element (its span, strides included): wherever the default mode takes atomics, on GPUs and CPU
// devices, ScatterElements' long lines too, float16 as float32. 8-byte floats need 64-bit
// atomics; ScatterND's wide slices on GPUs (sorted in the default mode too) keep the sorted path.
TEST_CASE("Kernels: deterministic float MAX and MIN resolve ties after the atomics", "[kernels]") {
  using vkdml::detail::Pass;
  const DML_TENSOR_DATA_TYPE f16 = DML_TENSOR_DATA_TYPE_FLOAT16, f32 = DML_TENSOR_DATA_TYPE_FLOAT32,
                             f64 = DML_TENSOR_DATA_TYPE_FLOAT64, i64 = DML_TENSOR_DATA_TYPE_INT64;
  const UINT deterministic = VKDML_EXECUTION_FLAG_DETERMINISTIC;
  using K = Pass::Kind;
  const std::vector<K> ties = {K::Gather, K::Reduce, K::Ties, K::Ties};
  for (VKDML_REDUCE_FUNCTION f : {VKDML_REDUCE_FUNCTION_MAX, VKDML_REDUCE_FUNCTION_MIN}) {
    for (bool cpu : {false, true}) {
      INFO("ReduceFunction " << f << (cpu ? ", CPU device" : ", GPU"));
      Capabilities device = cpu ? CpuDevice() : GpuDevice();
      device.int64Atomics = device.float64 = device.float64Elements = true;
      // Long lines (the line kernels' shape), the output strided: 64 x 4096 elements spanning
      // 63 * 5000 + 4096.
      const TensorDesc out(f32, {64, 4096}, {5000, 1});
      OpSpec lines = OpSpec::ScatterElements(out, TensorDesc(i64, {64, 4096}),
                                             TensorDesc(f32, {64, 4096}), out, 1);
      lines.WithReduce(f);
      KernelSet set = Choose(lines, device, deterministic);
      REQUIRE(set.steps.size() == ties.size());
      for (size_t i = 0; i < ties.size(); ++i) CHECK(set.steps[i].kind == ties[i]);
      CHECK(set.steps[1].plain.module == "reduce_e4_i64_ties");
      CHECK(set.steps[2].plain.module == "ties_first_e4_i64");
      CHECK(set.steps[3].plain.module == "ties_write_e4");
      const UINT64 span = 63 * 5000 + 4096;
      CHECK(set.tiePositionWords == span);
      CHECK(set.tieMarkWords == 1 + (span + 31) / 32);
      CHECK(set.sortWords == 0);
      CHECK(Choose(lines, device).tieMarkWords == 0);  // the default mode marks nothing

      OpSpec elements = OpSpec::ScatterElements(TensorDesc(f64, {64}), TensorDesc(i64, {16}),
                                                TensorDesc(f64, {16}), TensorDesc(f64, {64}), 0);
      elements.WithReduce(f);
      set = Choose(elements, device, deterministic);
      CHECK(set.steps.back().kind == K::Ties);
      CHECK(set.steps[1].plain.module == "reduce_e8_i64_a64_f64_ties");
      device.float64Elements = false;  // float64 in integer arithmetic
      CHECK(Choose(elements, device, deterministic).steps[1].plain.module ==
            "reduce_e8_i64_a64_sf64_ties");
      device.float64Elements = true;
      device.int64Atomics = false;
      set = Choose(elements, device, deterministic);
      CHECK(set.steps.back().kind == K::Ordered);
      CHECK(set.tieMarkWords == 0);
      device.int64Atomics = true;

      // float16: compare-and-swap on the words that hold it, which need a 4-byte output offset;
      // packed in words without 16-bit storage.
      elements.tensors[0] = elements.tensors[2] = elements.tensors[3] = TensorDesc(f16, {64});
      elements.tensors[2] = TensorDesc(f16, {16});
      for (bool storage16 : {true, false}) {
        device.storage16 = storage16;
        set = Choose(elements, device, deterministic);
        const std::string e2 = storage16 ? "e2" : "e2p";
        REQUIRE(set.steps.size() == 4);
        CHECK(set.steps[1].plain.module == "reduce_" + e2 + "_i64_ties");
        CHECK(set.steps[2].plain.module == "ties_first_" + e2 + "_i64");
        CHECK(set.steps[3].plain.module == "ties_write_" + e2);
        CHECK(set.wordAtomics);
        CHECK(set.tiePositionWords == 64);
      }

      OpSpec rows = OpSpec::ScatterND(TensorDesc(f32, {16, 128}), TensorDesc(i64, {4, 1}),
                                      TensorDesc(f32, {4, 128}), TensorDesc(f32, {16, 128}), 2, 2);
      rows.WithReduce(f);
      CHECK(Choose(rows, device, deterministic).steps.back().kind == (cpu ? K::Ties : K::Ordered));
    }
  }
}

// The large path, on the CPU: an operator whose tensor may not fit one descriptor takes it, and
// its dispatches cover the loop exactly, each within the windows; an operator that fits keeps
// the plain kernels; a layout too scattered for the windows is refused.
TEST_CASE("Kernels: the large path's chunks and windows", "[kernels]") {
  using vkdml::detail::LargeDispatch;
  const DML_TENSOR_DATA_TYPE f32 = DML_TENSOR_DATA_TYPE_FLOAT32, i64 = DML_TENSOR_DATA_TYPE_INT64;
  Capabilities device;
  device.maxSharedMemory = 48 << 10;
  device.maxGroups = 65535;
  device.maxRange = 1 << 20;
  device.rangeAlign = 256;
  const UINT64 window = ((1 << 20) - 256) / 16 * 16;
  auto choose = [&](OpSpec& spec, vkdml::detail::KernelSet* set) {
    vkdml::detail::OperatorImpl op;
    REQUIRE(vkdml::detail::BuildOperator(spec.Desc(), &op).ok());
    return vkdml::detail::ChooseKernels(op, 0, device, set);
  };
  {  // fits: the plain kernels
    OpSpec spec = OpSpec::GatherND(TensorDesc(f32, {256, 256}), TensorDesc(i64, {64, 1}),
                                   TensorDesc(f32, {64, 256}), 2, 2);
    vkdml::detail::KernelSet set;
    REQUIRE(choose(spec, &set).ok());
    CHECK(!set.large);
    CHECK(set.steps[0].plain.large.empty());
  }
  {  // a 3.5 MiB input (4 windows) and a 2 MiB output (2 chunks or more), rows of 4 KiB
    OpSpec spec = OpSpec::GatherND(TensorDesc(f32, {896, 1024}), TensorDesc(i64, {512, 1}),
                                   TensorDesc(f32, {512, 1024}), 2, 2);
    vkdml::detail::KernelSet set;
    REQUIRE(choose(spec, &set).ok());
    REQUIRE(set.large);
    for (const auto* k : {&set.steps[0].plain, &set.steps[0].wide}) {
      INFO(k->module);
      CHECK(k->module.find("_large") != std::string::npos);
      const UINT64 row = 4096 / k->unit;  // loop elements of an output row
      std::map<UINT64, UINT64> covered;   // per window start: loop elements in its dispatches
      UINT64 windows = 0;
      for (const LargeDispatch& d : k->large) {
        CHECK(d.direct.end - d.direct.begin <= window);
        CHECK(d.indexed.end - d.indexed.begin <= window);
        CHECK(d.direct.begin == (UINT64(d.start[0]) * row + d.start[1]) * k->unit);
        if (covered.count(d.indexed.begin) == 0) ++windows;
        covered[d.indexed.begin] += d.count;
      }
      CHECK(windows == 4);
      for (const auto& w : covered) CHECK(w.second == 512 * row);  // each window sees the loop
    }
  }
  {  // a CPU device's runs kernels have no large variant: it takes the GPU's
    const Capabilities gpu = device;
    device.type = VK_PHYSICAL_DEVICE_TYPE_CPU;
    device.kernels = Capabilities::Kernels::Cpu;
    device.int64 = true;
    device.maxLoop = 16384;
    OpSpec spec = OpSpec::GatherND(TensorDesc(f32, {896, 1024}), TensorDesc(i64, {512, 1}),
                                   TensorDesc(f32, {512, 1024}), 2, 2);
    vkdml::detail::KernelSet set;
    REQUIRE(choose(spec, &set).ok());
    REQUIRE(set.large);
    CHECK(set.steps[0].plain.module == "gather_e4_i64_large");
    device = gpu;
  }
  {  // a transposed output whose every element is a window apart: too many dispatches
    OpSpec spec = OpSpec::GatherND(TensorDesc(f32, {896, 1024}), TensorDesc(i64, {512, 1}),
                                   TensorDesc(f32, {512, 1024}, {1, 1 << 18}), 2, 2);
    vkdml::detail::KernelSet set;
    const Result r = choose(spec, &set);
    CHECK(r.status == Status::Unsupported);
    CHECK_THAT(r.message, Catch::Matchers::Contains("dispatches through windows"));
  }
}

// A deterministic scatter on the large path, on the CPU: for each chunk of the loop in order, the
// keys over a key range of OutputTensor's windows, a sort of an even number of digit passes
// (result in the first half) and the ordered fold once per window; chunks within the scratch
// range. A sort too large for the scratch range, with tensors that fit, takes the same path.
TEST_CASE("Kernels: deterministic scatters sort in chunks on the large path", "[kernels]") {
  using K = vkdml::detail::Pass::Kind;
  const DML_TENSOR_DATA_TYPE f32 = DML_TENSOR_DATA_TYPE_FLOAT32, u32 = DML_TENSOR_DATA_TYPE_UINT32;
  Capabilities device;
  device.maxSharedMemory = 48 << 10;
  device.maxGroups = 65535;
  device.rangeAlign = 256;
  device.float64 = device.int64Atomics = true;
  struct Shape {
    UINT64 maxRange, scratchRange;
    UINT updates, outputs;
    bool large;
    UINT sortedChunks;  // at least
  };
  // Tensors past a 64 KiB range; a sort past a 256 KiB scratch range (tensors that fit a 4 GiB
  // one); both; neither; windows of 64 bytes (chunks of 16 elements, each folded in order).
  for (const Shape& shape : {Shape{64 << 10, 1u << 30, 40000, 30000, true, 1},
                             Shape{0xFFFFFFFFu, 256 << 10, 40000, 30000, true, 2},
                             Shape{64 << 10, 256 << 10, 100000, 50000, true, 2},
                             Shape{0xFFFFFFFFu, 1u << 30, 40000, 30000, false, 0},
                             Shape{256 + 64, 1u << 30, 100, 50, true, 0}}) {
    device.maxRange = shape.maxRange;
    device.scratchRange = shape.scratchRange;
    INFO("maxRange " << shape.maxRange << ", scratchRange " << shape.scratchRange);
    OpSpec spec = OpSpec::ScatterElements(
        TensorDesc(f32, {shape.outputs}), TensorDesc(u32, {shape.updates}),
        TensorDesc(f32, {shape.updates}), TensorDesc(f32, {shape.outputs}), 0);
    spec.WithReduce(VKDML_REDUCE_FUNCTION_ADD);
    vkdml::detail::OperatorImpl op;
    REQUIRE(vkdml::detail::BuildOperator(spec.Desc(), &op).ok());
    vkdml::detail::KernelSet set;
    REQUIRE(
        vkdml::detail::ChooseKernels(op, VKDML_EXECUTION_FLAG_DETERMINISTIC, device, &set).ok());
    CHECK(set.large == shape.large);
    CHECK(set.scratchWords * 4 <= shape.scratchRange);
    if (!shape.large) continue;
    UINT64 windows = (UINT64(shape.outputs) * 4 + (shape.maxRange - 256) / 16 * 16 - 1) /
                     ((shape.maxRange - 256) / 16 * 16);
    if (shape.maxRange == 0xFFFFFFFFu) windows = 1;
    std::map<UINT, UINT> chunks;  // first loop coordinate: elements, sorted or folded in order
    UINT64 sortedFolds = 0, sequentialFolds = 0, sortedChunks = 0;
    UINT keys = 0, lastStart = 0;
    for (size_t i = 0; i < set.steps.size(); ++i) {
      const auto& step = set.steps[i];
      INFO("step " << i << ": " << step.plain.module);
      if (step.kind == K::Keys) {
        REQUIRE(step.plain.large.size() == 1);
        const auto& d = step.plain.large[0];
        CHECK(step.plain.module == "keys_i32_large");
        CHECK(d.start[0] >= lastStart);  // the chunks in the loop's order
        lastStart = d.start[0];
        sortedChunks += chunks.count(d.start[0]) == 0;
        chunks[d.start[0]] = d.count;
        keys = d.count;
        CHECK(keys > 64);
        CHECK(4 * (UINT64(set.scratchAt.counts) + set.countWords) <= shape.scratchRange);
        CHECK(UINT64(keys) * 2 <= set.sortWords);
        UINT passes = 0;
        for (size_t j = i + 1; j < set.steps.size() && set.steps[j].kind == K::Sort; ++j) {
          CHECK(set.steps[j].plain.sort.count <= std::max<UINT64>(keys, 256 * 8));
          passes += set.steps[j].plain.module == "sort_count";
        }
        CHECK(passes % 2 == 0);
        CHECK(passes >= 2);
      } else if (step.kind == K::Ordered) {
        CHECK(step.plain.module == "ordered_e4_i32_w_large");
        REQUIRE(step.plain.large.size() == 1);
        const auto& d = step.plain.large[0];
        CHECK(set.plans[step.plain.slot].sortedBase == 0);
        if (step.plain.spec[VKDML_SPEC_SEQUENTIAL]) {  // a small chunk, folded in order
          CHECK(d.count <= 64);
          CHECK((step.plain.begin == 0 && step.plain.end == d.count));
          CHECK((step.plain.groups == 1 && d.groups == 1));
          CHECK(d.start[0] >= lastStart);
          lastStart = d.start[0];
          chunks[d.start[0]] = d.count;
          ++sequentialFolds;
        } else {
          CHECK(step.plain.end == keys);
          ++sortedFolds;
        }
      }
    }
    UINT64 loop = 0;
    for (const auto& chunk : chunks) loop += chunk.second;
    CHECK(loop == shape.updates);
    CHECK(sortedChunks >= shape.sortedChunks);
    if (shape.maxRange < 1024) CHECK((sortedChunks == 0 && chunks.size() >= 7));
    CHECK(sortedFolds == sortedChunks * windows);
    CHECK(sequentialFolds == (chunks.size() - sortedChunks) * windows);
  }
}

// Capabilities::Of (lib/kernels/capabilities.h) from made-up devices: the limits, the driver quirks
// of CPU devices and lavapipe, then each switch within the device's limits.
TEST_CASE("Capabilities: limits, quirks and switches", "[kernels]") {
  using vkdml::detail::Switches;
  VkPhysicalDeviceLimits limits{};
  limits.maxComputeSharedMemorySize = 16384;  // Vulkan's minimum limits
  limits.maxComputeWorkGroupInvocations = 128;
  limits.maxComputeWorkGroupSize[0] = 128;
  limits.maxComputeWorkGroupCount[0] = 65535;
  limits.maxStorageBufferRange = 1u << 27;
  limits.minStorageBufferOffsetAlignment = 256;
  DeviceFeatures all;
  for (bool DeviceFeatures::*f :
       {&DeviceFeatures::shaderInt64, &DeviceFeatures::shaderBufferInt64Atomics,
        &DeviceFeatures::shaderBufferFloat32AtomicAdd, &DeviceFeatures::shaderFloat64,
        &DeviceFeatures::shaderDenormPreserveFloat32, &DeviceFeatures::shaderDenormPreserveFloat64})
    all.*f = true;
  const Switches none;
  const Capabilities gpu =
      Capabilities::Of(VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, VkDriverId(0), limits, all, none);
  CHECK(gpu.maxSharedMemory == 16384);
  CHECK(gpu.maxLinesGroupSize == 128);
  CHECK(gpu.groupSize == VKDML_MIN_GROUP_SIZE);
  CHECK(gpu.maxGroups == 65535);
  CHECK(gpu.maxRange == (1u << 27));
  CHECK(gpu.rangeAlign == 256);
  CHECK(gpu.lines == Capabilities::Lines::WhenBetter);
  CHECK(gpu.kernels == Capabilities::Kernels::Gpu);
  CHECK(gpu.maxLoop == UINT64(-1));
  CHECK((gpu.int64 && gpu.int64Atomics && gpu.float32AtomicAdd && gpu.float64 &&
         gpu.denormPreserve32 && gpu.denormPreserve64));
  limits.minStorageBufferOffsetAlignment = 4;  // at least a vector
  const Capabilities cpu =
      Capabilities::Of(VK_PHYSICAL_DEVICE_TYPE_CPU, VkDriverId(0), limits, {}, none);
  CHECK(cpu.rangeAlign == VKDML_VECTOR_BYTES);
  CHECK(cpu.lines == Capabilities::Lines::Never);
  CHECK(cpu.kernels == Capabilities::Kernels::Cpu);
  CHECK(cpu.maxLoop == 16384);
  CHECK(!(cpu.int64 || cpu.int64Atomics || cpu.float32AtomicAdd || cpu.float64));
  // lavapipe's loop bound goes with the driver, whatever type it reports (the minimum-limits
  // device's integrated GPU over it); a GPU's own workgroups of 256 where it allows them.
  const Capabilities lavapipeAsGpu = Capabilities::Of(VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU,
                                                      VK_DRIVER_ID_MESA_LLVMPIPE, limits, {}, none);
  CHECK(lavapipeAsGpu.maxLoop == 16384);
  CHECK(lavapipeAsGpu.kernels == Capabilities::Kernels::Gpu);
  limits.maxComputeWorkGroupInvocations = limits.maxComputeWorkGroupSize[0] = 1024;
  CHECK(Capabilities::Of(VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, VkDriverId(0), limits, all, none)
            .groupSize == VKDML_GROUP_SIZE);
  limits.maxComputeWorkGroupSize[0] = 255;  // both limits count
  CHECK(Capabilities::Of(VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, VkDriverId(0), limits, all, none)
            .groupSize == VKDML_MIN_GROUP_SIZE);
  limits.maxComputeWorkGroupInvocations = limits.maxComputeWorkGroupSize[0] = 128;
  DeviceFeatures atomicsWithoutInt64 = all;
  atomicsWithoutInt64.shaderInt64 = false;
  CHECK(!Capabilities::Of(VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, VkDriverId(0), limits,
                          atomicsWithoutInt64, none)
             .int64Atomics);

  Switches s;
  s.maxBindingRange = 100;  // below the least window: raised to one vector past the alignment
  s.maxGroups = 3;
  s.lines = Switches::Lines::Always;
  s.kernels = Switches::Kernels::Cpu;
  s.only32BitAtomics = true;
  s.nativeFloat32 = true;
  limits.minStorageBufferOffsetAlignment = 256;
  const Capabilities t =
      Capabilities::Of(VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, VkDriverId(0), limits, all, s);
  CHECK(t.maxRange == 256 + VKDML_VECTOR_BYTES);
  CHECK(t.maxGroups == 3);
  CHECK(t.lines == Capabilities::Lines::Always);
  CHECK(t.kernels == Capabilities::Kernels::Cpu);
  CHECK(!(t.int64Atomics || t.float32AtomicAdd || t.float64 || t.denormPreserve32));
  CHECK((t.int64 && t.denormPreserve64));
  s = {};
  s.maxBindingRange = UINT64(1) << 40;  // never above the device's own limits
  s.maxGroups = 1u << 20;
  s.lines = Switches::Lines::Never;
  s.kernels = Switches::Kernels::Gpu;
  const Capabilities c =
      Capabilities::Of(VK_PHYSICAL_DEVICE_TYPE_CPU, VkDriverId(0), limits, {}, s);
  CHECK(c.maxRange == (1u << 27));
  CHECK(c.maxGroups == 65535);
  CHECK(c.lines == Capabilities::Lines::Never);
  CHECK(c.kernels == Capabilities::Kernels::Gpu);
}

TEST_CASE("Switches: read from the environment, a bad value refused by name", "[kernels]") {
  using vkdml::detail::Switches;
  const char* names[] = {"VKDML_MAX_BINDING_RANGE", "VKDML_MAX_GROUPS", "VKDML_SCATTER_LINES",
                         "VKDML_KERNELS",           "VKDML_ATOMICS",    "VKDML_NATIVE_FLOAT32"};
  {
    ScopedEnv a(names[0], "4096"), b(names[1], "7"), c(names[2], "0"), d(names[3], "gpu"),
        e(names[4], "32"), f(names[5], "1");
    Switches s;
    REQUIRE(Switches::Read(&s).ok());
    CHECK(s.maxBindingRange == 4096);
    CHECK(s.maxGroups == 7);
    CHECK(s.lines == Switches::Lines::Never);
    CHECK(s.kernels == Switches::Kernels::Gpu);
    CHECK(s.only32BitAtomics);
    CHECK(s.nativeFloat32);
  }
  {
    ScopedEnv a(names[0], ""), b(names[1], ""), c(names[2], ""), d(names[3], ""), e(names[4], ""),
        f(names[5], "");
    Switches s;
    s.maxGroups = 9;
    REQUIRE(Switches::Read(&s).ok());  // unset: the defaults
    CHECK(s.maxGroups == 0);
    CHECK(s.lines == Switches::Lines::Auto);
    CHECK(s.kernels == Switches::Kernels::Auto);
  }
  const std::pair<int, const char*> bad[] = {{0, "-1"},  {0, "12x"}, {1, "0"},  {1, "99999999999"},
                                             {2, "yes"}, {3, "GPU"}, {4, "64"}, {5, "2"}};
  for (const auto& [i, value] : bad) {
    ScopedEnv env(names[i], value);
    Switches s;
    const Result r = Switches::Read(&s);
    INFO(names[i] << "=" << value << ": " << r.message);
    CHECK(r.status == Status::InvalidArgument);
    CHECK(r.message.rfind(std::string(names[i]) + "=" + value + ": expected ", 0) == 0);
  }
}

// A Device reads the environment once, when it is created: a switch set later changes only the
// devices created after it, and a bad one fails CreateDevice with the variable's name.
TEST_CASE("Device: the switches are read when the device is created", "[kernels]") {
  Device& shared = Dev();
  const UINT before = CapabilitiesOf(shared).maxGroups;
  REQUIRE(before > 3);
  ScopedEnv groups("VKDML_MAX_GROUPS", "3");
  CHECK(CapabilitiesOf(shared).maxGroups == before);
  DeviceDesc desc;
  desc.enableValidation = true;
  std::vector<std::string> messages;  // from this thread's Vulkan calls only
  desc.onValidationMessage = [&messages](const char* m) { messages.push_back(m ? m : ""); };
  std::unique_ptr<Device> fresh;
  REQUIRE(CreateDevice(desc, &fresh).ok());
  CHECK(CapabilitiesOf(*fresh).maxGroups == 3);
  CHECK(SwitchesOf(*fresh).maxGroups == 3);
  ScopedEnv lines("VKDML_SCATTER_LINES", "on");
  std::unique_ptr<Device> refused;
  const Result r = CreateDevice(desc, &refused);
  CHECK(r.status == Status::InvalidArgument);
  CHECK(r.message == "VKDML_SCATTER_LINES=on: expected one of 0, 1 (or unset)");
  CHECK(!refused);
  fresh.reset();
  CHECK(messages.empty());
}

// Without 8/16-bit storage every family moves 1- and 2-byte elements in 32-bit words (e1p, e2p)
// and its bindings start on words (KernelSet::packed); without shaderFloat64, FLOAT64
// reductions compute in integer arithmetic (_sf64). With the features, the same choices keep
// their modules.
TEST_CASE("Kernels: 1- and 2-byte elements in words, float64 in integers", "[kernels]") {
  const DML_TENSOR_DATA_TYPE u8 = DML_TENSOR_DATA_TYPE_UINT8, f16 = DML_TENSOR_DATA_TYPE_FLOAT16,
                             f64 = DML_TENSOR_DATA_TYPE_FLOAT64, i32 = DML_TENSOR_DATA_TYPE_INT32;
  const UINT deterministic = VKDML_EXECUTION_FLAG_DETERMINISTIC;
  for (bool features : {false, true}) {
    INFO((features ? "8/16-bit storage, float64" : "no optional feature"));
    Capabilities gpu = GpuDevice(), cpu = CpuDevice();
    for (Capabilities* d : {&gpu, &cpu}) d->storage8 = d->storage16 = d->float64Elements = features;
    gpu.lines = Capabilities::Lines::Always;
    const std::string p = features ? "" : "p";
    // GatherElements on UINT8 along an inner axis: nothing to widen.
    OpSpec gather = OpSpec::GatherElements(TensorDesc(u8, {64, 333}), TensorDesc(i32, {64, 333}),
                                           TensorDesc(u8, {64, 333}), 1);
    KernelSet set = Choose(gather, gpu);
    CHECK(set.steps.back().plain.module == "gather_e1" + p + "_i32");
    CHECK(set.packed == !features);
    set = Choose(gather, cpu);
    CHECK(set.steps.back().plain.module == "runs_gather_e1" + p + "_i32");
    // ScatterElements on FLOAT16 along its innermost axis: lines on the GPU, with or without a
    // reduction, in order when deterministic; atomics and the sort on the CPU device.
    OpSpec scatter =
        OpSpec::ScatterElements(TensorDesc(f16, {64, 333}), TensorDesc(i32, {64, 100}),
                                TensorDesc(f16, {64, 100}), TensorDesc(f16, {64, 333}), 1);
    CHECK(Choose(scatter, gpu).steps.back().plain.module == "lines_e2" + p + "_i32");
    scatter.WithReduce(VKDML_REDUCE_FUNCTION_ADD);
    CHECK(Choose(scatter, gpu).steps.back().plain.module == "lines_reduce_e2" + p + "_i32");
    CHECK(Choose(scatter, gpu, deterministic).steps.back().plain.module ==
          "lines_ordered_e2" + p + "_i32");
    CHECK(Choose(scatter, cpu).steps.back().plain.module == "reduce_e2" + p + "_i32");
    CHECK(Choose(scatter, cpu, deterministic).steps.back().plain.module ==
          "ordered_e2" + p + "_i32");
    // FLOAT64 ADD: the atomic kernel (64-bit atomics) and the sorted one.
    OpSpec add64 = OpSpec::ScatterElements(TensorDesc(f64, {64}), TensorDesc(i32, {16}),
                                           TensorDesc(f64, {16}), TensorDesc(f64, {64}), 0);
    add64.WithReduce(VKDML_REDUCE_FUNCTION_ADD);
    const std::string f = features ? "_f64" : "_sf64";
    cpu.int64Atomics = true;
    CHECK(Choose(add64, cpu).steps.back().plain.module == "reduce_e8_i32_a64" + f);
    cpu.int64Atomics = false;
    CHECK(Choose(add64, cpu).steps.back().plain.module == "ordered_e8_i32" + f);
  }
}

// VKDML_OUT_OF_RANGE_MODE_FILL and _DROP: the kernels CLAMP takes, each told by VKDML_SPEC_DROP
// to skip or fill dropped elements (runs, lines, ties and the rest alike), but for the ordered
// line kernel (which clamps): a deterministic ScatterElements on long lines takes the sort
// instead. A deterministic sort's keys leave room for the dropped units' key, one past the
// slots. ERROR compiles as checked.
TEST_CASE("Kernels: FILL and DROP take the kernels that skip dropped elements", "[kernels]") {
  using vkdml::detail::Pass;
  const DML_TENSOR_DATA_TYPE f32 = DML_TENSOR_DATA_TYPE_FLOAT32, i64 = DML_TENSOR_DATA_TYPE_INT64;
  const UINT deterministic = VKDML_EXECUTION_FLAG_DETERMINISTIC;
  const TensorDesc lineOut(f32, {64, 4096});
  OpSpec gather =
      OpSpec::GatherElements(lineOut, TensorDesc(i64, {64, 4096}), TensorDesc(f32, {64, 4096}), 1);
  OpSpec lines = OpSpec::ScatterElements(lineOut, TensorDesc(i64, {64, 4096}),
                                         TensorDesc(f32, {64, 4096}), lineOut, 1);
  OpSpec sum = lines;
  sum.WithReduce(VKDML_REDUCE_FUNCTION_ADD);
  OpSpec max = lines;
  max.WithReduce(VKDML_REDUCE_FUNCTION_MAX);
  const struct {
    OpSpec spec;
    bool cpu;
    UINT flags;
    const char* family;  // a module CLAMP takes, by its prefix
    bool ordered;        // the ordered line kernel: the sort instead
  } cases[] = {{gather, true, 0, "runs_", false},
               {lines, true, 0, "runs_", false},
               {lines, false, 0, "lines_e4", false},
               {sum, false, 0, "lines_reduce_", false},
               {sum, false, deterministic, "lines_ordered_", true},
               {max, false, deterministic, "ties_first_", false},
               {max, true, deterministic, "ties_first_", false}};
  for (const auto& e : cases) {
    INFO(e.spec.ToString() << (e.cpu ? ", CPU device" : ", GPU") << ", flags " << e.flags);
    Capabilities device = e.cpu ? CpuDevice() : GpuDevice();
    if (!e.cpu) device.lines = Capabilities::Lines::Always;
    auto modules = [&](const KernelSet& set) {
      std::vector<std::string> names;
      for (const auto& step : set.steps) names.push_back(step.plain.module);
      return names;
    };
    auto takes = [&](const std::vector<std::string>& names) {
      return std::any_of(names.begin(), names.end(),
                         [&](const std::string& m) { return m.rfind(e.family, 0) == 0; });
    };
    const std::vector<std::string> clamp = modules(Choose(e.spec, device, e.flags));
    CHECK(takes(clamp));
    OpSpec wrapped = e.spec;
    DML_SCALAR_UNION fill{};
    fill.Float32 = -1.5f;
    if (wrapped.IsScatter())
      wrapped.WithOutOfRange(VKDML_OUT_OF_RANGE_MODE_DROP);
    else
      wrapped.WithOutOfRange(VKDML_OUT_OF_RANGE_MODE_FILL, fill);
    const KernelSet set = Choose(wrapped, device, e.flags);
    CHECK(takes(modules(set)) == !e.ordered);
    if (!e.ordered) CHECK(modules(set) == clamp);
    for (const auto& step : set.steps) {
      INFO("module " << step.plain.module);
      CHECK(step.plain.spec[VKDML_SPEC_DROP] == (step.kind == Pass::Kind::Sort ? 0u : 1u));
      if (step.hasWide) CHECK(step.wide.spec[VKDML_SPEC_DROP] == 1);
    }
    const uint32_t bits = 0xBFC00000u;  // -1.5f
    for (UINT w = 0; w < 4; ++w) CHECK(set.fill[w] == (wrapped.IsScatter() ? 0u : bits));
    CHECK_FALSE(set.checked);
  }
  // A deterministic ScatterND over 256 target rows: keys 0..255 sort in one digit pass; with
  // DROP the dropped rows' key 256 takes a second.
  OpSpec rows = OpSpec::ScatterND(TensorDesc(f32, {256, 32}), TensorDesc(i64, {300, 1}),
                                  TensorDesc(f32, {300, 32}), TensorDesc(f32, {256, 32}), 2, 2);
  rows.WithReduce(VKDML_REDUCE_FUNCTION_ADD);
  for (bool drop : {false, true}) {
    OpSpec spec = rows;
    if (drop) spec.WithOutOfRange(VKDML_OUT_OF_RANGE_MODE_DROP);
    INFO(spec.ToString());
    const KernelSet set = Choose(spec, GpuDevice(), deterministic);
    int counts = 0, keys = 0;
    for (const auto& step : set.steps) {
      counts += step.plain.module == "sort_count";
      if (step.kind == Pass::Kind::Keys) {
        ++keys;
        CHECK(step.plain.end == 256);  // the dropped units' key
      }
    }
    CHECK(keys == 1);
    CHECK(counts == (drop ? 2 : 1));
  }
  OpSpec error = gather;
  error.WithOutOfRange(VKDML_OUT_OF_RANGE_MODE_ERROR);
  const KernelSet checked = Choose(error, CpuDevice());
  CHECK(checked.checked);
  CHECK(checked.steps[0].plain.spec[VKDML_SPEC_CHECKED] == 1);
  CHECK(checked.steps[0].plain.spec[VKDML_SPEC_DROP] == 0);
}

// ExcludeSelf: before the reduction, the scatter's own walk sets every target it reaches to the
// reduction's identity (indexed.comp with VKDML_SPEC_CONSTANT, the identity in the uniform's fill
// value), in both modes and on the large path; without it, no such step.
TEST_CASE("Kernels: ExcludeSelf resets the targets to the reduction's identity first",
          "[kernels]") {
  using vkdml::detail::Pass;
  const DML_TENSOR_DATA_TYPE i64 = DML_TENSOR_DATA_TYPE_INT64;
  const struct {
    DML_TENSOR_DATA_TYPE type;
    VKDML_REDUCE_FUNCTION f;
    uint32_t word;  // the identity's bytes, repeated, as the uniform's first word
  } cases[] = {{DML_TENSOR_DATA_TYPE_FLOAT32, VKDML_REDUCE_FUNCTION_ADD, 0},
               {DML_TENSOR_DATA_TYPE_FLOAT32, VKDML_REDUCE_FUNCTION_MULTIPLY, 0x3F800000u},
               {DML_TENSOR_DATA_TYPE_FLOAT32, VKDML_REDUCE_FUNCTION_MAX, 0xFF800000u},
               {DML_TENSOR_DATA_TYPE_FLOAT16, VKDML_REDUCE_FUNCTION_MIN, 0x7C007C00u},
               {DML_TENSOR_DATA_TYPE_FLOAT16, VKDML_REDUCE_FUNCTION_MAX, 0xFC00FC00u},
               {DML_TENSOR_DATA_TYPE_INT8, VKDML_REDUCE_FUNCTION_MAX, 0x80808080u},
               {DML_TENSOR_DATA_TYPE_INT16, VKDML_REDUCE_FUNCTION_MIN, 0x7FFF7FFFu},
               {DML_TENSOR_DATA_TYPE_UINT32, VKDML_REDUCE_FUNCTION_MIN, 0xFFFFFFFFu},
               {DML_TENSOR_DATA_TYPE_UINT8, VKDML_REDUCE_FUNCTION_MAX, 0},
               {DML_TENSOR_DATA_TYPE_INT64, VKDML_REDUCE_FUNCTION_MULTIPLY, 1},
               {DML_TENSOR_DATA_TYPE_FLOAT64, VKDML_REDUCE_FUNCTION_MIN, 0}};
  for (const auto& e : cases) {
    for (UINT flags : {0u, UINT(VKDML_EXECUTION_FLAG_DETERMINISTIC)}) {
      INFO(DataTypeName(e.type) << " ReduceFunction " << e.f << ", flags " << flags);
      OpSpec spec =
          OpSpec::ScatterElements(TensorDesc(e.type, {64, 300}), TensorDesc(i64, {64, 80}),
                                  TensorDesc(e.type, {64, 80}), TensorDesc(e.type, {64, 300}), 1);
      spec.WithReduce(e.f);
      Capabilities device = GpuDevice();
      device.int64Atomics = device.float64 = device.float64Elements = device.int64 = true;
      const KernelSet plain = Choose(spec, device, flags);
      spec.excludeSelf = 1;
      const KernelSet set = Choose(spec, device, flags);
      REQUIRE(set.steps.size() == plain.steps.size() + 1);
      // The copy, then the reset, then the reduction's steps as without it.
      CHECK(set.steps[0].kind == Pass::Kind::Gather);
      const auto& reset = set.steps[1].plain;
      CHECK(set.steps[1].kind == Pass::Kind::Scatter);
      CHECK(reset.module.rfind("scatter_e", 0) == 0);
      CHECK(reset.spec[VKDML_SPEC_CONSTANT] == 1);
      for (size_t i = 2; i < set.steps.size(); ++i) {
        CHECK(set.steps[i].plain.module == plain.steps[i - 1].plain.module);
        CHECK(set.steps[i].plain.spec[VKDML_SPEC_CONSTANT] == 0);
      }
      CHECK(set.fill[0] == e.word);
      if (e.type == DML_TENSOR_DATA_TYPE_FLOAT64 || e.type == DML_TENSOR_DATA_TYPE_INT64)
        CHECK(set.fill[1] == (e.type == DML_TENSOR_DATA_TYPE_FLOAT64 ? 0x7FF00000u : 0u));
      for (UINT w = 0; w < 4; ++w) CHECK(plain.fill[w] == 0);
    }
  }
}

// MEAN: its sum takes exactly ADD's steps (any family, both modes, ExcludeSelf's reset too). A
// sorted scatter's ordered fold divides each run's sum itself (VKDML_SPEC_MEAN); otherwise
// the tally over the operator's keys (an update unit each: a ScatterND slice counts once)
// and the division over every OutputTensor element, with the input in the mean unless
// ExcludeSelf; the tally's scratch region, a word per target slot, is zeroed each run. (On the
// large path: the next test.)
TEST_CASE("Kernels: MEAN is ADD's steps, then a tally and a division", "[kernels]") {
  const DML_TENSOR_DATA_TYPE i32 = DML_TENSOR_DATA_TYPE_INT32;
  int folded = 0, divided = 0;  // cases of each kind
  for (DML_TENSOR_DATA_TYPE type : {DML_TENSOR_DATA_TYPE_FLOAT16, DML_TENSOR_DATA_TYPE_FLOAT32,
                                    DML_TENSOR_DATA_TYPE_INT8, DML_TENSOR_DATA_TYPE_UINT64}) {
    for (bool nd : {false, true}) {
      for (UINT flags : {0u, UINT(VKDML_EXECUTION_FLAG_DETERMINISTIC)}) {
        for (bool cpu : {false, true}) {
          for (BOOL excludeSelf : {0, 1}) {
            INFO(DataTypeName(type)
                 << (nd ? ", ScatterND" : ", ScatterElements") << ", flags " << flags
                 << (cpu ? ", CPU" : ", GPU") << ", ExcludeSelf " << excludeSelf);
            // ScatterElements: 2 x 250 targets, 160 updates; ScatterND: 40 slices of 16, 30
            // tuples. OutputTensor strided: a gap after each row.
            OpSpec spec =
                nd ? OpSpec::ScatterND(TensorDesc(type, {40, 16}), TensorDesc(i32, {30, 1}),
                                       TensorDesc(type, {30, 16}),
                                       TensorDesc(type, {40, 16}, {20, 1}), 2, 2)
                   : OpSpec::ScatterElements(TensorDesc(type, {2, 250}), TensorDesc(i32, {2, 80}),
                                             TensorDesc(type, {2, 80}),
                                             TensorDesc(type, {2, 250}, {300, 1}), 1);
            spec.WithReduce(VKDML_REDUCE_FUNCTION_ADD);
            spec.excludeSelf = excludeSelf;
            const Capabilities device = cpu ? CpuDevice() : GpuDevice();
            const KernelSet add = Choose(spec, device, flags);
            spec.WithReduce(VKDML_REDUCE_FUNCTION_MEAN);
            const KernelSet mean = Choose(spec, device, flags);
            // In order by target (sorted, or a line's buckets), the fold divides each target's
            // sum where its run ends: no more steps.
            const auto ordered = [](const std::string& module) {
              return module.rfind("ordered_", 0) == 0 || module.rfind("lines_ordered_", 0) == 0;
            };
            bool folds = false;
            for (const auto& step : add.steps) folds = folds || ordered(step.plain.module);
            if (folds) {
              REQUIRE(mean.steps.size() == add.steps.size());
              for (size_t i = 0; i < add.steps.size(); ++i) {
                vkdml::detail::Specialization expected = add.steps[i].plain.spec;
                if (ordered(add.steps[i].plain.module)) {
                  CHECK(expected[VKDML_SPEC_MEAN] == 0);
                  expected[VKDML_SPEC_MEAN] = 1;
                  expected[VKDML_SPEC_SELF] = !excludeSelf;
                }
                CHECK(mean.steps[i].plain.module == add.steps[i].plain.module);
                CHECK(mean.steps[i].plain.spec == expected);
              }
              CHECK(mean.tallyWords == 0);
              ++folded;
              continue;
            }
            ++divided;
            REQUIRE(mean.steps.size() == add.steps.size() + 2);
            for (size_t i = 0; i < add.steps.size(); ++i) {
              CHECK(mean.steps[i].plain.module == add.steps[i].plain.module);
              CHECK(mean.steps[i].plain.spec == add.steps[i].plain.spec);
            }
            const auto& tally = mean.steps[add.steps.size()].plain;
            const auto& divide = mean.steps[add.steps.size() + 1].plain;
            CHECK(tally.module == "tally_i32");
            CHECK(mean.plans[tally.slot].count == (nd ? 30u : 160u));
            CHECK(divide.module == "mean_e" + std::to_string(DataTypeSize(type)) +
                                       (device.Packed(DataTypeSize(type)) ? "p" : ""));
            CHECK(mean.plans[divide.slot].count == (nd ? 640u : 500u));
            CHECK(divide.spec[VKDML_SPEC_SELF] == UINT(!excludeSelf));
            CHECK(divide.spec[VKDML_SPEC_ELEMENT_KIND] ==
                  (type == DML_TENSOR_DATA_TYPE_INT8     ? VKDML_KIND_SIGNED
                   : type == DML_TENSOR_DATA_TYPE_UINT64 ? VKDML_KIND_UNSIGNED
                                                         : VKDML_KIND_FLOAT));
            CHECK(mean.tallyWords == (nd ? 40u : 500u));
            CHECK(add.tallyWords == 0);
            CHECK(mean.scratchAt.tally + mean.tallyWords <= mean.scratchWords);
          }
        }
      }
    }
  }
  CHECK(folded > 10);
  CHECK(divided > 10);
}

// MEAN on the large path (kernel_mean.cpp): the sum's steps, then for each piece of OutputTensor
// a tally and a division, the pieces covering OutputTensor once, in order, each within one
// window and within the counts' words; both steps a dispatch per chunk of the scatter's loop,
// owning exactly the piece, whose first element the kernels are told (begin). The default
// mode's sum is ADD's steps. Where the scratch is small a window takes several pieces. A scratch
// with no room for counts is refused by name.
TEST_CASE("Kernels: MEAN on the large path counts and divides a piece of the output at a time",
          "[kernels]") {
  const DML_TENSOR_DATA_TYPE i32 = DML_TENSOR_DATA_TYPE_INT32;
  int pieced = 0;  // cases where a window took more than one piece
  for (DML_TENSOR_DATA_TYPE type : {DML_TENSOR_DATA_TYPE_FLOAT32, DML_TENSOR_DATA_TYPE_INT8}) {
    for (UINT flags : {0u, UINT(VKDML_EXECUTION_FLAG_DETERMINISTIC)}) {
      for (UINT64 scratch : {UINT64(1) << 20, UINT64(4096)}) {
        INFO(DataTypeName(type) << ", flags " << flags << ", scratchRange " << scratch);
        Capabilities device = GpuDevice();
        device.maxRange = 1 << 12;  // windows of 3840 bytes
        device.rangeAlign = 256;
        device.scratchRange = scratch;
        const UINT size = DataTypeSize(type);
        const UINT64 bytes = UINT64(64) * 256 * size, windows = (bytes + 3839) / 3840;
        OpSpec spec =
            OpSpec::ScatterElements(TensorDesc(type, {64, 256}), TensorDesc(i32, {64, 8}),
                                    TensorDesc(type, {64, 8}), TensorDesc(type, {64, 256}), 1);
        spec.WithReduce(VKDML_REDUCE_FUNCTION_ADD);
        const KernelSet add = Choose(spec, device, flags);
        spec.WithReduce(VKDML_REDUCE_FUNCTION_MEAN);
        const KernelSet mean = Choose(spec, device, flags);
        REQUIRE(mean.large);
        CHECK(mean.scratchWords * 4 <= scratch);
        size_t sum = 0;  // the sum's steps
        while (sum < mean.steps.size() && mean.steps[sum].plain.module.rfind("tally_", 0) != 0)
          ++sum;
        REQUIRE(sum > 0);
        if (flags == 0) {
          REQUIRE(sum == add.steps.size());
          for (size_t i = 0; i < sum; ++i)
            CHECK(mean.steps[i].plain.module == add.steps[i].plain.module);
        }
        REQUIRE((mean.steps.size() - sum) % 2 == 0);
        UINT64 covered = 0;  // OutputTensor's bytes, in order
        size_t pieces = 0;
        for (size_t i = sum; i < mean.steps.size(); i += 2, ++pieces) {
          const auto& tally = mean.steps[i].plain;
          const auto& divide = mean.steps[i + 1].plain;
          CHECK(tally.module == "tally_i32_large");
          CHECK(divide.module == "mean_e" + std::to_string(size) + "_i32_large");
          CHECK(divide.spec[VKDML_SPEC_SELF] == 1);
          REQUIRE(!tally.large.empty());
          REQUIRE(tally.large.size() == divide.large.size());
          const vkdml::detail::Span piece = tally.large[0].indexed;
          CHECK(piece.begin == covered);
          covered = piece.end;
          CHECK(piece.begin / 3840 == (piece.end - 1) / 3840);  // within one window
          CHECK(tally.begin == piece.begin / size);
          CHECK(divide.begin == tally.begin);
          CHECK(piece.end - piece.begin <= mean.tallyWords * size);
          for (size_t d = 0; d < tally.large.size(); ++d) {
            CHECK(tally.large[d].indexed.begin == piece.begin);
            CHECK(tally.large[d].indexed.end == piece.end);
            CHECK(divide.large[d].indexed.begin == piece.begin);
            CHECK(divide.large[d].indexed.end == piece.end);
            CHECK(divide.large[d].direct.begin == tally.large[d].direct.begin);
            CHECK(divide.large[d].count == tally.large[d].count);
          }
          if (flags == 0)  // the atomic sum: each chunk once per window
            CHECK(tally.large.size() * windows == mean.steps[sum - 1].plain.large.size());
        }
        CHECK(covered == bytes);
        CHECK(pieces >= windows);
        pieced += pieces > windows;
        CHECK(mean.scratchAt.tally + mean.tallyWords <= mean.scratchWords);
      }
    }
  }
  CHECK(pieced >= 2);
  // No room for the counts after the status words: refused, naming MEAN.
  Capabilities device = GpuDevice();
  device.maxRange = 1 << 12;
  device.rangeAlign = 256;
  device.scratchRange = 4 * (VKDML_STATUS_WORDS + 8);
  const DML_TENSOR_DATA_TYPE f32 = DML_TENSOR_DATA_TYPE_FLOAT32;
  OpSpec spec = OpSpec::ScatterElements(TensorDesc(f32, {64, 256}), TensorDesc(i32, {64, 8}),
                                        TensorDesc(f32, {64, 8}), TensorDesc(f32, {64, 256}), 1);
  spec.WithReduce(VKDML_REDUCE_FUNCTION_MEAN);
  vkdml::detail::OperatorImpl op;
  REQUIRE(vkdml::detail::BuildOperator(spec.Desc(), &op).ok());
  KernelSet set;
  const Result r = vkdml::detail::ChooseKernels(op, 0, device, &set);
  INFO(Str(r));
  CHECK(r.status == Status::Unsupported);
  CHECK(r.message.find("SCATTER_ELEMENTS_REDUCE: this device's maxStorageBufferRange (") == 0);
  CHECK(r.message.find("leaves no room for VKDML_REDUCE_FUNCTION_MEAN's counts on the large "
                       "path") != std::string::npos);
}

// GPUs' gathers of 2- and 4-byte elements with an index per element along a contiguous last
// dimension of whole steps (a uvec4 of indices: 2 int64 or 4 int32 ones) take
// glsl/gather_step.comp as their wide kernel (kernel_copy.cpp: StepPlan), where IndicesTensor
// starts on 16 bytes and OutputTensor on a step's bytes; the rest keep the indexed copy alone (or
// their widened slices).
TEST_CASE("Kernels: GPUs' GatherElements-shaped gathers go a step of indices at a time",
          "[kernels][gather_elements]") {
  const DML_TENSOR_DATA_TYPE f32 = DML_TENSOR_DATA_TYPE_FLOAT32, f16 = DML_TENSOR_DATA_TYPE_FLOAT16,
                             u8 = DML_TENSOR_DATA_TYPE_UINT8, i64 = DML_TENSOR_DATA_TYPE_INT64,
                             i32 = DML_TENSOR_DATA_TYPE_INT32;
  const auto t = [](DML_TENSOR_DATA_TYPE type, std::vector<UINT> sizes,
                    std::vector<UINT> strides = {}) {
    return TensorDesc(type, std::move(sizes), std::move(strides));
  };
  const struct {
    const char* what;
    OpSpec spec;
    bool storage16;
    std::string plain, wide;  // "": no wide kernel
    UINT per;                 // elements a step (0: not the step kernel)
    UINT align;               // OutputTensor's (and InputTensor's): a step's bytes
  } expectations[] = {
      {"last axis, float32, int64 indices",
       OpSpec::GatherElements(t(f32, {8, 64}), t(i64, {8, 64}), t(f32, {8, 64}), 1), true,
       "gather_e4_i64", "gather_step_e4_i64", 2, 8},
      {"last axis, float32, int64 indices, 1M elements",
       OpSpec::GatherElements(t(f32, {1024, 1024}), t(i64, {1024, 1024}), t(f32, {1024, 1024}), 1),
       true, "gather_e4_i64", "gather_step_e4_i64", 2, 8},
      {"last axis, float16, int32 indices, 1M elements",
       OpSpec::GatherElements(t(f16, {1024, 1024}), t(i32, {1024, 1024}), t(f16, {1024, 1024}), 1),
       true, "gather_e2_i32", "gather_step_e2_i32", 4, 8},
      {"last axis, float32, int32 indices",
       OpSpec::GatherElements(t(f32, {8, 64}), t(i32, {8, 64}), t(f32, {8, 64}), 1), true,
       "gather_e4_i32", "gather_step_e4_i32", 4, 16},
      {"last axis, float16, int32 indices",
       OpSpec::GatherElements(t(f16, {8, 64}), t(i32, {8, 64}), t(f16, {8, 64}), 1), true,
       "gather_e2_i32", "gather_step_e2_i32", 4, 8},
      {"float16 in words, int64 indices",
       OpSpec::GatherElements(t(f16, {8, 64}), t(i64, {8, 64}), t(f16, {8, 64}), 1), false,
       "gather_e2p_i64", "gather_step_e2p_i64", 2, 4},
      {"outer axis, striped",
       OpSpec::GatherElements(t(f32, {8, 256}), t(i32, {8, 256}), t(f32, {8, 256}), 0), true,
       "gather_e4_i32", "gather_step_e4_i32", 4, 16},
      {"lines of 63: no whole steps",
       OpSpec::GatherElements(t(f32, {8, 63}), t(i64, {8, 63}), t(f32, {8, 63}), 1), true,
       "gather_e4_i64", "", 0, 0},
      {"lines of 62, int32 indices: no whole steps",
       OpSpec::GatherElements(t(f16, {8, 62}), t(i32, {8, 62}), t(f16, {8, 62}), 1), true,
       "gather_e2_i32", "", 0, 0},
      {"output lines 65 elements apart",
       OpSpec::GatherElements(t(f32, {8, 64}), t(i64, {8, 64}), t(f32, {8, 64}, {65, 1}), 1), true,
       "gather_e4_i64", "", 0, 0},
      {"int32 index lines 66 apart",
       OpSpec::GatherElements(t(f32, {8, 64}), t(i32, {8, 64}, {66, 1}), t(f32, {8, 64}), 1), true,
       "gather_e4_i32", "", 0, 0},
      {"int64 index lines 66 apart: on 16 bytes",
       OpSpec::GatherElements(t(f32, {8, 64}), t(i64, {8, 64}, {66, 1}), t(f32, {8, 64}), 1), true,
       "gather_e4_i64", "gather_step_e4_i64", 2, 8},
      {"input lines 67 apart: read an element at a time",
       OpSpec::GatherElements(t(f32, {8, 64}, {67, 1}), t(i64, {8, 64}), t(f32, {8, 64}), 1), true,
       "gather_e4_i64", "gather_step_e4_i64", 2, 8},
      {"1-byte elements",
       OpSpec::GatherElements(t(u8, {8, 64}), t(i64, {8, 64}), t(u8, {8, 64}), 1), true,
       "gather_e1_i64", "", 0, 0},
      {"8-byte elements",
       OpSpec::GatherElements(t(i64, {8, 64}), t(i64, {8, 64}), t(i64, {8, 64}), 1), true,
       "gather_e8_i64", "", 0, 0},
      {"rows: widened slices",
       OpSpec::GatherND(t(f32, {64, 256}), t(i64, {16, 1}), t(f32, {16, 256}), 2, 2), true,
       "gather_e4_i64", "gather_e16_i64", 0, 0},
  };
  for (const auto& e : expectations) {
    INFO(e.what);
    Capabilities device = GpuDevice();
    device.storage16 = e.storage16;
    const KernelSet set = Choose(e.spec, device);
    REQUIRE(set.steps.size() == 1);
    const auto& step = set.steps[0];
    CHECK(step.plain.module == e.plain);
    CHECK(step.hasWide == !e.wide.empty());
    if (!step.hasWide) continue;
    CHECK(step.wide.module == e.wide);
    if (e.per == 0) continue;
    CHECK(step.wide.align == e.align);
    CHECK(step.wide.indexAlign == 16);
    // 8 elements an invocation; small work (up to 256 workgroups' width) a step.
    const bool small = set.plans[step.wide.slot].count <= 256 * VKDML_GROUP_SIZE;
    CHECK(step.wide.spec[VKDML_SPEC_UNROLL] * (small ? 8 : e.per) == 8);
    CHECK(step.wide.unit == step.plain.unit);
    // The plain plan's last dimension in steps: its strides a step's, its count 1 / per.
    const auto& plain = set.plans[step.plain.slot];
    const auto& plan = set.plans[step.wide.slot];
    const UINT last = step.wide.spec[VKDML_SPEC_RANK] - 1;
    CHECK(step.wide.spec[VKDML_SPEC_RANK] == step.plain.spec[VKDML_SPEC_RANK]);
    CHECK(VKDML_AT(plan.sizes, last) * e.per == VKDML_AT(plain.sizes, last));
    CHECK(VKDML_AT(plan.direct, last) == e.per);
    CHECK(VKDML_AT(plan.indices, last) == e.per);
    CHECK(VKDML_AT(plan.indexed, last) == VKDML_AT(plain.indexed, last) * e.per);
    CHECK(UINT64(plan.count) * e.per == plain.count);
  }
  // Not on CPU devices (their runs), nor for scatters, nor ScatterElements' copy pass.
  const OpSpec gather =
      OpSpec::GatherElements(t(f32, {8, 64}), t(i64, {8, 64}), t(f32, {8, 64}), 1);
  for (const auto& step : Choose(gather, CpuDevice()).steps)
    CHECK(step.wide.module.rfind("gather_step_", 0) == std::string::npos);
  const OpSpec scatter = OpSpec::ScatterElements(t(f32, {8, 64}), t(i64, {8, 64}), t(f32, {8, 64}),
                                                 t(f32, {8, 64}), 1);
  Capabilities noLines = GpuDevice();
  noLines.lines = Capabilities::Lines::Never;
  for (const auto& step : Choose(scatter, noLines).steps)
    CHECK(step.wide.module.find("step") == std::string::npos);
}
