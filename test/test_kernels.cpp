// The seam between the library and its kernels, on the CPU: the embedded SPIR-V lays out the
// plans and push constants exactly as C++ does (glsl/interface.h is read by both compilers), and
// every kernel that kernel choice (lib/kernels.h) can name is embedded.
#include <cstddef>
#include <map>
#include <string>

#include "harness.h"
#include "interface.h"
#include "kernels.h"
#include "spirv_table.h"
#include "test_util.h"

using namespace vt;
using vkdml::detail::FindSpirv;
namespace shader = vkdml::detail::shader;

namespace {

// What one SPIR-V module says of its types' layouts.
struct Layouts {
  std::map<uint32_t, std::string> names;                     // OpName
  std::map<uint32_t, std::map<uint32_t, uint32_t>> offsets;  // OpMemberDecorate Offset
  std::map<uint32_t, uint32_t> arrayStride, arrayElement;    // OpDecorate ArrayStride, OpTypeArray

  explicit Layouts(const vkdml::detail::SpirvModule& m) {
    for (size_t i = 5; i < m.count;) {  // after the 5-word header
      const uint32_t op = m.words[i] & 0xFFFF, n = m.words[i] >> 16;
      const uint32_t* w = m.words + i;
      if (op == 5) names[w[1]] = reinterpret_cast<const char*>(w + 2);  // OpName
      if (op == 72 && w[3] == 35) offsets[w[1]][w[2]] = w[4];           // Offset
      if (op == 71 && w[2] == 6) arrayStride[w[1]] = w[3];              // ArrayStride
      if (op == 28) arrayElement[w[1]] = w[2];                          // OpTypeArray
      REQUIRE(n > 0);
      i += n;
    }
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

}  // namespace

TEST_CASE("Interface: the kernels lay out plans and push constants as C++ does", "[kernels]") {
  const std::vector<size_t> plan = {
      offsetof(shader::PackedPlan, count),      offsetof(shader::PackedPlan, componentStride),
      offsetof(shader::PackedPlan, sortedBase), offsetof(shader::PackedPlan, unused),
      offsetof(shader::PackedPlan, sizes),      offsetof(shader::PackedPlan, magic),
      offsetof(shader::PackedPlan, shift),      offsetof(shader::PackedPlan, direct),
      offsetof(shader::PackedPlan, indexed),    offsetof(shader::PackedPlan, indices),
      offsetof(shader::PackedPlan, position),   offsetof(shader::PackedPlan, tupleSize),
      offsetof(shader::PackedPlan, tupleStride)};
  const std::vector<size_t> push = {
      offsetof(shader::Push, plan),      offsetof(shader::Push, srcBase),
      offsetof(shader::Push, indexBase), offsetof(shader::Push, dstBase),
      offsetof(shader::Push, begin),     offsetof(shader::Push, end)};
  for (const char* name :
       {"gather_e4_i32", "scatter_e16_i64", "lines_e2_i64", "mark_i32", "report_i64"}) {
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
}

TEST_CASE("Kernels: every kernel that kernel choice names is embedded", "[kernels]") {
  using vkdml::detail::DeviceTraits;
  using vkdml::detail::Kernel;
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
        // atomics, no promise to keep denormals), or a CPU device with none.
        for (int variant = 0; variant < 6; ++variant) {
          const int features = variant % 3;
          DeviceTraits device;
          device.type =
              features < 2 ? VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU : VK_PHYSICAL_DEVICE_TYPE_CPU;
          device.maxSharedMemory = 48 << 10;
          device.maxLinesGroupSize = 256;
          device.maxGroups = 65535;
          device.lines = variant < 3 ? DeviceTraits::Lines::Never : DeviceTraits::Lines::Always;
          device.float32AtomicAdd = device.int64Atomics = device.float64 = features < 2;
          device.denormPreserve32 = device.denormPreserve64 = features == 0;
          for (UINT flags :
               {0u, UINT(VKDML_EXECUTION_FLAG_CHECK_INDICES),
                UINT(VKDML_EXECUTION_FLAG_DETERMINISTIC),
                UINT(VKDML_EXECUTION_FLAG_CHECK_INDICES | VKDML_EXECUTION_FLAG_DETERMINISTIC)}) {
            const bool checked = (flags & VKDML_EXECUTION_FLAG_CHECK_INDICES) != 0;
            INFO("variant " << variant << ", flags " << flags);
            vkdml::detail::KernelSet set;
            REQUIRE(vkdml::detail::ChooseKernels(op, flags, device, &set).ok());
            CHECK(set.plans.size() == VKDML_PLAN_SLOTS);
            std::vector<const Kernel*> kernels;
            for (const auto& step : set.steps) {
              kernels.push_back(&step.plain);
              if (step.hasWide) kernels.push_back(&step.wide);
              CHECK((!step.hasWide || step.wide.slot != step.plain.slot));
            }
            if (checked) kernels.push_back(&set.report);
            for (const Kernel* k : kernels) {
              INFO("module " << k->module);
              CHECK(FindSpirv(k->module.c_str()) != nullptr);
              CHECK(k->slot < VKDML_PLAN_SLOTS);
              CHECK(k->groups >= 1);
              // Checked mode in every kernel that reads indices (not the sort's steps).
              CHECK(k->spec[VKDML_SPEC_CHECKED] ==
                    uint32_t(checked && k != &set.report && !k->sortStep));
            }
          }
        }
      }
    }
  }
}

// Perf choices no output shows, pinned on the CPU: ScatterND with slices of 128 bytes or more
// marks its targets and its copy skips them (without a reduction only: a reduction needs every
// input element); a deterministic scatter sorts and applies in order; the default reduction
// runs the atomic kernel.
TEST_CASE("Kernels: the steps each scatter takes", "[kernels]") {
  using vkdml::detail::DeviceTraits;
  using vkdml::detail::Pass;
  const DML_TENSOR_DATA_TYPE f32 = DML_TENSOR_DATA_TYPE_FLOAT32, i64 = DML_TENSOR_DATA_TYPE_INT64;
  DeviceTraits device;
  device.maxSharedMemory = 48 << 10;
  device.maxLinesGroupSize = 256;
  device.maxGroups = 65535;
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
    vkdml::detail::OperatorImpl op;
    REQUIRE(vkdml::detail::BuildOperator(spec.Desc(), &op).ok());
    vkdml::detail::KernelSet set;
    REQUIRE(vkdml::detail::ChooseKernels(op, e.flags, device, &set).ok());
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

// ScatterElements along its innermost axis: the line kernels where the device takes them (here
// forced, as VKDML_SCATTER_LINES=1 does), for a reduction through shared memory and, when
// deterministic, in order; neither where line kernels are off (CPU devices).
TEST_CASE("Kernels: the line kernels of ScatterElements with a reduction", "[kernels]") {
  using vkdml::detail::DeviceTraits;
  using vkdml::detail::Pass;
  const DML_TENSOR_DATA_TYPE f32 = DML_TENSOR_DATA_TYPE_FLOAT32, i32 = DML_TENSOR_DATA_TYPE_INT32;
  using K = Pass::Kind;
  const struct {
    DeviceTraits::Lines lines;
    UINT flags;
    std::string module;
    K kind;
  } expectations[] = {
      {DeviceTraits::Lines::Always, 0, "lines_reduce_e4_i32", K::Reduce},
      {DeviceTraits::Lines::Always, VKDML_EXECUTION_FLAG_DETERMINISTIC, "lines_ordered_e4_i32",
       K::Ordered},
      {DeviceTraits::Lines::Never, 0, "reduce_e4_i32", K::Reduce},
      {DeviceTraits::Lines::Never, VKDML_EXECUTION_FLAG_DETERMINISTIC, "ordered_e4_i32",
       K::Ordered},
  };
  for (const auto& e : expectations) {
    INFO("lines " << int(e.lines) << ", flags " << e.flags);
    DeviceTraits device;
    device.maxSharedMemory = 32 << 10;
    device.maxLinesGroupSize = 1024;
    device.maxGroups = 65535;
    device.lines = e.lines;
    OpSpec spec = OpSpec::ScatterElements(TensorDesc(f32, {4, 300}), TensorDesc(i32, {4, 200}),
                                          TensorDesc(f32, {4, 200}), TensorDesc(f32, {4, 300}), 1);
    spec.WithReduce(VKDML_REDUCE_FUNCTION_ADD);
    vkdml::detail::OperatorImpl op;
    REQUIRE(vkdml::detail::BuildOperator(spec.Desc(), &op).ok());
    vkdml::detail::KernelSet set;
    REQUIRE(vkdml::detail::ChooseKernels(op, e.flags, device, &set).ok());
    REQUIRE(!set.steps.empty());
    CHECK(set.steps.back().plain.module == e.module);
    CHECK(set.steps.back().kind == e.kind);
  }
}

// The ordered line kernel takes a line whose shared memory (interface.h:
// VKDML_ORDERED_SHARED_WORDS) is the device's limit, and not one that needs a word more.
TEST_CASE("Kernels: the ordered line kernel up to the shared-memory limit", "[kernels]") {
  using vkdml::detail::DeviceTraits;
  const DML_TENSOR_DATA_TYPE f32 = DML_TENSOR_DATA_TYPE_FLOAT32, i32 = DML_TENSOR_DATA_TYPE_INT32;
  DeviceTraits device;
  device.maxSharedMemory = 32 << 10;
  device.maxLinesGroupSize = 1024;
  device.maxGroups = 65535;
  device.lines = DeviceTraits::Lines::Always;
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

// A ScatterND reduction on wide slices is sorted by target on GPUs, in the default mode too
// (fewer steps than an atomic per element), and uses atomics on CPU devices; narrow slices use
// atomics everywhere.
TEST_CASE("Kernels: wide ScatterND slices are sorted on GPUs", "[kernels]") {
  using vkdml::detail::DeviceTraits;
  using vkdml::detail::Pass;
  const DML_TENSOR_DATA_TYPE f32 = DML_TENSOR_DATA_TYPE_FLOAT32, i64 = DML_TENSOR_DATA_TYPE_INT64;
  for (VkPhysicalDeviceType type :
       {VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, VK_PHYSICAL_DEVICE_TYPE_CPU}) {
    for (UINT width : {127u, 128u}) {
      INFO("device type " << type << ", slices of " << width);
      DeviceTraits device;
      device.type = type;
      device.maxSharedMemory = 48 << 10;
      device.maxLinesGroupSize = 256;
      device.maxGroups = 65535;
      OpSpec spec =
          OpSpec::ScatterND(TensorDesc(f32, {16, width}), TensorDesc(i64, {4, 1}),
                            TensorDesc(f32, {4, width}), TensorDesc(f32, {16, width}), 2, 2);
      spec.WithReduce(VKDML_REDUCE_FUNCTION_ADD);
      vkdml::detail::OperatorImpl op;
      REQUIRE(vkdml::detail::BuildOperator(spec.Desc(), &op).ok());
      vkdml::detail::KernelSet set;
      REQUIRE(vkdml::detail::ChooseKernels(op, 0, device, &set).ok());
      const bool sorted = type != VK_PHYSICAL_DEVICE_TYPE_CPU && width >= 128;
      CHECK(set.steps.back().kind == (sorted ? Pass::Kind::Ordered : Pass::Kind::Reduce));
      CHECK((set.sortWords > 0) == sorted);
    }
  }
}
