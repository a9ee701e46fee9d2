#include "kernels.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "error.h"

namespace vkdml::detail {

namespace {

constexpr UINT kMaxGroups = 65535;  // per dispatch; grid-stride loops cover the rest
// Shared memory a line of glsl/scatter_lines.comp may take (less where the device's limit is):
// 48 KiB leaves room for several workgroups per multiprocessor.
constexpr UINT64 kMaxLineBytes = 48 << 10;
constexpr UINT kLinesUnroll = 4;

// Elements each thread moves per step (indexed.comp's kUnroll): enough loads in flight to cover
// memory latency; uvec4 elements need fewer (examples/bench/PERF_NOTES.md, v3 and v11). Work of
// up to 256 workgroups' width goes one element per thread, spread over more multiprocessors: a
// thread's elements are a serial chain of index arithmetic, and small work is all latency (v16).
UINT Unroll(UINT elemSize, UINT count) {
  if (count <= 256 * VKDML_GROUP_SIZE) return 1;
  return elemSize >= VKDML_VECTOR_BYTES ? 2 : 8;
}

// Unsigned 32-bit division by d as a multiply and shifts (Granlund and Montgomery, 1994):
// with l = ceil(log2 d), magic = floor(2^32 (2^l - d) / d) + 1, t = mulhi(n, magic),
// n / d = (t + ((n - t) >> min(l, 1))) >> (max(l, 1) - 1) for every 32-bit n
// (glsl/common.glsl: divideBySize).
void Magic(UINT d, UINT* magic, UINT* shift) {
  UINT l = 0;
  while ((UINT64(1) << l) < d) ++l;
  *magic = UINT(((UINT64(1) << 32) * ((UINT64(1) << l) - d)) / d + 1);
  *shift = l;
}

shader::PackedPlan Pack(const Plan& p) {
  shader::PackedPlan w = {};
  w.count = p.count;
  w.componentStride = p.componentStride;
  for (UINT d = 0; d < p.rank; ++d) {
    VKDML_AT(w.sizes, d) = p.sizes[d];
    Magic(p.sizes[d], &VKDML_AT(w.magic, d), &VKDML_AT(w.shift, d));
    VKDML_AT(w.direct, d) = p.direct[d];
    VKDML_AT(w.indexed, d) = p.indexed[d];
    VKDML_AT(w.indices, d) = p.indices[d];
    VKDML_AT(w.position, d) = p.position[d];
  }
  for (UINT j = 0; j < p.tuple; ++j) {
    VKDML_AT(w.tupleSize, j) = p.tupleSize[j];
    VKDML_AT(w.tupleStride, j) = p.tupleStride[j];
  }
  return w;
}

// glsl/CMakeLists.txt names the modules.
std::string ModuleName(Pass::Kind kind, bool lines, UINT elemSize, UINT indexSize) {
  const UINT bits = indexSize * 8;
  if (kind == Pass::Kind::Mark) return Str("mark_i", bits);
  if (lines) return Str("lines_e", elemSize, "_i", bits);
  return Str(kind == Pass::Kind::Gather ? "gather_e" : "scatter_e", elemSize, "_i", bits);
}

UINT Groups(UINT64 work, UINT maxGroups) {
  return UINT(std::min<UINT64>(work, maxGroups));
}

// The indexed copy (glsl/indexed.comp) over `plan` in elements of elemSize bytes.
Kernel IndexedKernel(Pass::Kind kind, const Plan& plan, UINT elemSize, UINT slot,
                     Specialization spec, UINT indexSize, UINT maxGroups) {
  Kernel k;
  k.module = ModuleName(kind, false, elemSize, indexSize);
  k.spec = spec;
  k.spec[VKDML_SPEC_UNROLL] = Unroll(elemSize, plan.count);
  k.slot = slot;
  k.unit = elemSize;
  const UINT64 perGroup = UINT64(VKDML_GROUP_SIZE) * k.spec[VKDML_SPEC_UNROLL];
  k.groups = Groups((plan.count + perGroup - 1) / perGroup, maxGroups);
  return k;
}

}  // namespace

DeviceTraits DeviceTraits::Of(VkPhysicalDeviceType type, const VkPhysicalDeviceLimits& limits) {
  DeviceTraits t;
  t.type = type;
  t.maxSharedMemory = limits.maxComputeSharedMemorySize;
  t.maxLinesGroupSize =
      std::min({1024u, limits.maxComputeWorkGroupInvocations, limits.maxComputeWorkGroupSize[0]});
  t.maxGroups = std::min(kMaxGroups, limits.maxComputeWorkGroupCount[0]);
  const char* groups = std::getenv("VKDML_MAX_GROUPS");
  long n = groups ? std::strtol(groups, nullptr, 10) : 0;
  if (n > 0 && UINT64(n) < t.maxGroups) t.maxGroups = UINT(n);
  // On CPU devices (lavapipe) the line scatter's barriers cost more than the random writes it
  // saves (examples/bench/PERF_NOTES.md, v15).
  t.lines = type == VK_PHYSICAL_DEVICE_TYPE_CPU ? Lines::Never : Lines::WhenBetter;
  const char* lines = std::getenv("VKDML_SCATTER_LINES");
  if (lines && std::strcmp(lines, "0") == 0) t.lines = Lines::Never;
  if (lines && std::strcmp(lines, "1") == 0) t.lines = Lines::Always;
  return t;
}

Result ChooseKernels(const OperatorImpl& op, bool checked, const DeviceTraits& device,
                     KernelSet* out) {
  if (op.passes.size() > VKDML_MAX_PASSES)
    return Fail(Status::DeviceError, "internal: ", op.passes.size(), " passes, at most ",
                VKDML_MAX_PASSES);
  const Tensor& indices = op.Indices();
  const UINT elemSize = op.ElemSize(), indexSize = indices.elemSize;
  KernelSet set;
  set.checked = checked;
  set.plans.assign(VKDML_PLAN_SLOTS, shader::PackedPlan{});
  const UINT64 lineBytes = std::min(kMaxLineBytes, device.maxSharedMemory);
  for (UINT i = 0; i < op.passes.size(); ++i) {
    const Pass& pass = op.passes[i];
    PassKernels k;
    k.kind = pass.kind;
    k.skipInPlace = pass.skipInPlace;
    Plan plan = pass.plan;
    plan.Simplify();
    Plan striped;
    if (pass.kind == Pass::Kind::Gather && plan.Stripe(elemSize, &striped)) plan = striped;
    const bool lines = pass.lines && device.lines != DeviceTraits::Lines::Never &&
                       plan.Lines(elemSize, lineBytes, device.lines == DeviceTraits::Lines::Always);

    Specialization spec = {};
    spec[VKDML_SPEC_CHECKED] = checked;
    spec[VKDML_SPEC_RANK] = plan.rank;
    spec[VKDML_SPEC_TUPLE] = plan.tuple;
    spec[VKDML_SPEC_SIGNED_INDEX] = IsSignedIndexType(indices.type);
    spec[VKDML_SPEC_MASK_SKIP] = pass.maskSkip;
    spec[VKDML_SPEC_LINE_LENGTH] = 1;
    spec[VKDML_SPEC_GROUP_SIZE] = device.maxLinesGroupSize;
    const UINT slot = 2 * i;
    set.plans[slot] = Pack(plan);
    if (lines) {  // glsl/scatter_lines.comp: a workgroup per output line
      k.plain.module = ModuleName(pass.kind, true, elemSize, indexSize);
      k.plain.spec = spec;
      k.plain.spec[VKDML_SPEC_UNROLL] = kLinesUnroll;
      k.plain.spec[VKDML_SPEC_LINE_LENGTH] = plan.tupleSize[0];
      k.plain.slot = slot;
      k.plain.unit = elemSize;
      k.plain.groups = Groups(plan.count / plan.sizes[plan.rank - 1], device.maxGroups);
    } else {
      k.plain = IndexedKernel(pass.kind, plan, elemSize, slot, spec, indexSize, device.maxGroups);
      Plan wide;
      if (plan.Widen(elemSize, VKDML_VECTOR_BYTES, &wide)) {
        k.hasWide = true;
        k.wide = IndexedKernel(pass.kind, wide, VKDML_VECTOR_BYTES, slot + 1, spec, indexSize,
                               device.maxGroups);
        set.plans[slot + 1] = Pack(wide);
      }
    }
    set.passes.push_back(k);
  }
  if (checked) {
    Plan walk;  // IndicesTensor's elements, row-major
    for (UINT d = 0; d < indices.dims; ++d)
      walk.AddDim(indices.sizes[d], 0, 0, indices.strides[d], 0);
    set.report.module = Str("report_i", indexSize * 8);
    set.report.spec[VKDML_SPEC_RANK] = walk.rank;
    set.report.spec[VKDML_SPEC_SIGNED_INDEX] = IsSignedIndexType(indices.type);
    set.report.slot = VKDML_REPORT_SLOT;
    set.report.unit = elemSize;
    set.report.groups = 1;
    set.plans[VKDML_REPORT_SLOT] = Pack(walk);
  }
  *out = std::move(set);
  return {};
}

}  // namespace vkdml::detail
