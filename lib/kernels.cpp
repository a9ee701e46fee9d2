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
// glsl/indexed_runs.comp (CPU devices): threads in a workgroup; a run's elements (the widest the
// plan moves) at most, and at least while halving them to reach kMinRuns invocations, so long as
// each workgroup keeps kMinGroupElements elements: waking another CPU thread for less costs more
// than it saves (examples/bench/PERF_NOTES.md, v33).
constexpr UINT kRunsGroup = 64;
constexpr UINT kMaxRun = 256, kMinRun = 8, kMinRuns = 4096;
constexpr UINT64 kMinGroupElements = 8192;
constexpr UINT kRunVectorBytes = 32;  // its VECTOR steps' accesses: u64vec4
// Lines of at most kShortLine (widest) elements that share one index go kRunLines to an
// invocation, their reads from memory waiting together (PERF_NOTES.md, v34).
constexpr UINT kShortLine = 8, kRunLines = 8;
// The large path's limit on one kernel's dispatches (chunks times windows): beyond it the
// layout of the tensors is too scattered for windows of the device's binding range.
constexpr UINT64 kMaxLargeDispatches = 1 << 16;
// An update unit (ScatterND: a slice) of at least kWideUnit elements is wide: sorting the units
// by target costs little beside moving them, and glsl/scatter_ordered.comp folds
// kOrderedPerThread of a unit's elements a thread.
constexpr UINT kWideUnit = 128, kOrderedPerThread = 4;
// CPU devices: workgroups of a deterministic MAX or MIN's tie passes (Chooser::Ties).
constexpr UINT64 kCpuTieGroups = 16;

// Elements each thread moves per step (indexed.comp's kUnroll): enough loads in flight to cover
// memory latency; uvec4 elements need fewer (examples/bench/PERF_NOTES.md, v3 and v11). Work of
// up to 256 workgroups' width goes one element per thread, spread over more multiprocessors: a
// thread's elements are a serial chain of index arithmetic, and small work is all latency (v16).
UINT Unroll(UINT elemSize, UINT64 count) {
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
  w.count = UINT(p.count);  // below 2^32 off the large path, where dispatches carry their own
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

static_assert(VKDML_REDUCE_FUNCTION_NONE == VKDML_REDUCE_NONE &&
                  VKDML_REDUCE_FUNCTION_ADD == VKDML_REDUCE_ADD &&
                  VKDML_REDUCE_FUNCTION_MULTIPLY == VKDML_REDUCE_MULTIPLY &&
                  VKDML_REDUCE_FUNCTION_MAX == VKDML_REDUCE_MAX &&
                  VKDML_REDUCE_FUNCTION_MIN == VKDML_REDUCE_MIN,
              "dml.h and glsl/interface.h disagree on VKDML_REDUCE_FUNCTION");

UINT Groups(UINT64 work, UINT maxGroups) {
  return UINT(std::max<UINT64>(1, std::min<UINT64>(work, maxGroups)));
}

UINT Kind(DML_TENSOR_DATA_TYPE type) {
  switch (type) {
    case DML_TENSOR_DATA_TYPE_FLOAT16:
    case DML_TENSOR_DATA_TYPE_FLOAT32:
    case DML_TENSOR_DATA_TYPE_FLOAT64:
      return VKDML_KIND_FLOAT;
    case DML_TENSOR_DATA_TYPE_INT8:
    case DML_TENSOR_DATA_TYPE_INT16:
    case DML_TENSOR_DATA_TYPE_INT32:
    case DML_TENSOR_DATA_TYPE_INT64:
      return VKDML_KIND_SIGNED;
    default:
      return VKDML_KIND_UNSIGNED;
  }
}

// Builds the steps; each plan it packs takes the next slot.
class Chooser {
 public:
  Chooser(const OperatorImpl& op, UINT flags, const DeviceTraits& device)
      : op_(op), device_(device), elemSize_(op.ElemSize()), indexSize_(op.Indices().elemSize) {
    set_.checked = (flags & VKDML_EXECUTION_FLAG_CHECK_INDICES) != 0;
    set_.plans.assign(VKDML_PLAN_SLOTS, shader::PackedPlan{});
    // Integer reductions give the same bits in any order (ADD and MULTIPLY wrap modulo 2^bits;
    // MAX and MIN keep one of equal values, which have equal bits): deterministic executions of
    // them take the default mode's kernels. Float ones and NONE (the last update wins) do not
    // (float MAX and MIN add passes to them: Ties), nor 1- and 2-byte elements, whose atomics
    // need the output on 4 bytes and a deterministic execution does not.
    const bool orderFree = op.reduce != VKDML_REDUCE_FUNCTION_NONE &&
                           Kind(op.inputs[0].type) != VKDML_KIND_FLOAT && op.ElemSize() >= 4;
    deterministic_ = (flags & VKDML_EXECUTION_FLAG_DETERMINISTIC) != 0 && !orderFree;
    base_[VKDML_SPEC_CHECKED] = set_.checked;
    base_[VKDML_SPEC_SIGNED_INDEX] = IsSignedIndexType(op.Indices().type);
    base_[VKDML_SPEC_LINE_LENGTH] = 1;
    base_[VKDML_SPEC_GROUP_SIZE] = device.maxLinesGroupSize;
    base_[VKDML_SPEC_REDUCE] = op.reduce;
    base_[VKDML_SPEC_ELEMENT_KIND] = Kind(op.inputs[0].type);
    base_[VKDML_SPEC_UNIT] = 1;
    // The large path where a tensor may not fit one descriptor (its binding's offset may add up
    // to rangeAlign - 1 bytes before it) or a loop reaches 2^32 elements.
    for (const auto* tensors : {&op.inputs, &op.outputs})
      for (const Tensor& t : *tensors) large_ = large_ || Windowed(t);
    for (const Pass& pass : op.passes) large_ = large_ || pass.plan.count > 0xFFFFFFFFu;
    set_.large = large_;
    set_.maxRange = device.maxRange;
    set_.rangeAlign = device.rangeAlign;
  }

  Result Choose(KernelSet* out) {
    if (large_ && device_.maxRange < device_.rangeAlign + VKDML_VECTOR_BYTES)
      return Fail(Status::Unsupported, op_.name, ": this device's binding range (",
                  device_.maxRange, " bytes) leaves no window after its offset alignment (",
                  device_.rangeAlign, " bytes): the large path needs at least ",
                  device_.rangeAlign + VKDML_VECTOR_BYTES);
    if (large_ && deterministic_)
      return Fail(Status::Unsupported, op_.name,
                  ": VKDML_EXECUTION_FLAG_DETERMINISTIC on tensors past this device's binding "
                  "range (maxStorageBufferRange ",
                  device_.maxRange, " bytes) or of 2^32 or more elements is not supported");
    if (large_ && set_.checked && op_.Indices().Count() > 0xFFFFFFFFu)
      return Fail(Status::Unsupported, op_.name,
                  ": VKDML_EXECUTION_FLAG_CHECK_INDICES on an IndicesTensor of 2^32 or more "
                  "elements is not supported");
    for (const Pass& pass : op_.passes) {
      if (large_ && pass.kind == Pass::Kind::Mark) continue;  // its copy then copies everything
      if (pass.kind == Pass::Kind::Scatter && (op_.reduce || deterministic_))
        VKDML_TRY(ReducingScatter(pass));
      else
        VKDML_TRY(Plain(pass));
    }
    if (set_.checked) VKDML_TRY(Report());
    *out = std::move(set_);
    return {};
  }

 private:
  Result Slot(const Plan& plan, UINT* slot) {
    if (next_ == VKDML_REPORT_SLOT)
      return Fail(Status::Internal, "internal: more than ", VKDML_REPORT_SLOT, " plans");
    *slot = next_++;
    set_.plans[*slot] = Pack(plan);
    return {};
  }

  Specialization Spec(const Plan& plan) const {
    Specialization spec = base_;
    spec[VKDML_SPEC_RANK] = plan.rank;
    spec[VKDML_SPEC_TUPLE] = plan.tuple;
    return spec;
  }

  // A kernel over plan (already packed into `slot`) with a thread per loop element, kUnroll at a
  // time.
  Kernel Elementwise(std::string module, const Plan& plan, UINT slot, UINT unit) const {
    Kernel k;
    k.module = std::move(module);
    k.spec = Spec(plan);
    k.spec[VKDML_SPEC_UNROLL] = Unroll(unit, plan.count);
    k.slot = slot;
    k.unit = unit;
    const UINT64 perGroup = UINT64(VKDML_GROUP_SIZE) * k.spec[VKDML_SPEC_UNROLL];
    k.groups = Groups((plan.count + perGroup - 1) / perGroup, device_.maxGroups);
    return k;
  }

  std::string IndexSuffix() const { return Str("_i", indexSize_ * 8); }

  // The copy, the mark and the scatter without a reduction: glsl/indexed.comp (or, for a
  // scatter shaped for it, glsl/scatter_lines.comp), widened where the plan allows.
  Result Plain(const Pass& pass) {
    Step step;
    step.kind = pass.kind;
    step.skipInPlace = pass.skipInPlace;
    Plan plan = pass.plan;
    plan.Simplify();
    const bool lines = Lines(pass, plan);
    if (device_.kernels == DeviceTraits::Kernels::Cpu && pass.kind != Pass::Kind::Mark && !lines &&
        !large_)
      return Runs(pass, plan);
    Plan striped;
    if (pass.kind == Pass::Kind::Gather && !large_ && plan.Stripe(elemSize_, &striped))
      plan = striped;
    UINT slot = 0;
    VKDML_TRY(Slot(plan, &slot));
    const char* kind = pass.kind == Pass::Kind::Mark     ? "mark"
                       : pass.kind == Pass::Kind::Gather ? "gather_e"
                                                         : "scatter_e";
    const std::string elem = pass.kind == Pass::Kind::Mark ? "" : Str(elemSize_);
    if (lines) {  // a workgroup per output line
      step.plain = LineKernel(Str("lines_e", elemSize_, IndexSuffix()), plan, slot);
      step.plain.spec[VKDML_SPEC_UNROLL] = kLinesUnroll;
    } else {
      step.plain =
          Elementwise(Str(kind, elem, IndexSuffix(), LargeSuffix()), plan, slot, elemSize_);
      step.plain.spec[VKDML_SPEC_MASK_SKIP] = pass.maskSkip && !large_;
      VKDML_TRY(Large(plan, pass.kind, &step.plain));
      Plan wide;
      if (pass.kind != Pass::Kind::Mark && plan.Widen(elemSize_, VKDML_VECTOR_BYTES, &wide)) {
        UINT wideSlot = 0;
        VKDML_TRY(Slot(wide, &wideSlot));
        step.hasWide = true;
        step.wide = Elementwise(Str(kind, VKDML_VECTOR_BYTES, IndexSuffix(), LargeSuffix()), wide,
                                wideSlot, VKDML_VECTOR_BYTES);
        step.wide.spec[VKDML_SPEC_MASK_SKIP] = pass.maskSkip && !large_;
        VKDML_TRY(Large(wide, pass.kind, &step.wide));
      }
    }
    set_.steps.push_back(step);
    return {};
  }

  // A workgroup per output line (glsl/scatter_lines*.comp): what the line kernels share.
  Kernel LineKernel(const std::string& module, const Plan& plan, UINT slot) const {
    Kernel k;
    k.module = module;
    k.spec = Spec(plan);
    k.spec[VKDML_SPEC_LINE_LENGTH] = plan.tupleSize[0];
    k.slot = slot;
    k.unit = elemSize_;
    k.groups = Groups(plan.count / plan.sizes[plan.rank - 1], device_.maxGroups);
    return k;
  }

  // Whether a pass (its plan simplified) goes to glsl/scatter_lines.comp.
  bool Lines(const Pass& pass, const Plan& plan) const {
    const UINT64 lineBytes = std::min(kMaxLineBytes, device_.maxSharedMemory);
    return pass.lines && !large_ && device_.lines != DeviceTraits::Lines::Never &&
           plan.Lines(elemSize_, lineBytes, device_.lines == DeviceTraits::Lines::Always);
  }

  // CPU devices: glsl/indexed_runs.comp, an invocation per run of the plan's last dimension.
  // Its wide kernel, where the plan allows: GatherElements- and ScatterElements-shaped runs a
  // u64vec4 of indices and direct side at a time (VectorShaped; shaderInt64), else the plan
  // widened to u64vec4 (shaderInt64) or uvec4 elements. Runs are long enough to pay for their
  // offsets, short enough to leave many invocations, and within the device's loop bound; a dispatch
  // takes at most maxGroups workgroups, and the next one goes on from there.
  Result Runs(const Pass& pass, Plan plan) {
    if (plan.rank == 0) plan.AddDim(1, 0, 0, 0, 0);
    Plan striped;
    if (pass.kind == Pass::Kind::Gather && plan.Stripe(elemSize_, &striped)) plan = striped;
    const UINT last = plan.rank - 1;
    const bool vector = VectorShaped(plan);
    Plan wide;
    UINT wideBytes = 0;
    for (UINT bytes : {device_.int64 ? 32u : 0u, UINT(VKDML_VECTOR_BYTES)})
      if (!vector && !wideBytes && bytes && bytes / elemSize_ <= device_.maxLoop &&
          plan.Widen(elemSize_, bytes, &wide))
        wideBytes = bytes;
    const UINT per = wideBytes ? wideBytes / elemSize_ : 1;  // elements in a wide element
    const UINT step = vector ? VectorStep() : 1;             // a run's elements: a multiple
    // Off the large path the loop has fewer than 2^32 elements.
    const UINT length = plan.sizes[last] / per, lines = UINT(plan.count / plan.sizes[last]);
    // In the widest elements; halved from kMaxRun while that leaves too few invocations.
    UINT run =
        UINT(std::min<UINT64>({length, kMaxRun, std::max<UINT64>(1, device_.maxLoop / per)}));
    const auto runs = [&](UINT r) { return UINT64(lines) * ((length + r - 1) / r); };
    const auto groups = [&](UINT r) { return (runs(r) + kRunsGroup - 1) / kRunsGroup; };
    while (run / 2 >= std::max(kMinRun, step) && (run / 2) % step == 0 && runs(run) < kMinRuns &&
           plan.count / groups(run / 2) >= kMinGroupElements)
      run /= 2;

    const char* kind = pass.kind == Pass::Kind::Gather ? "gather" : "scatter";
    const bool indexed = plan.indices[last] != 0 && (plan.tuple > 0 || pass.maskSkip);
    const UINT perInvocation =  // runs
        !vector && !indexed && run == length && length <= kShortLine ? kRunLines : 1;
    const auto make = [&](const char* module, const Plan& p, UINT unit, UINT elements,
                          Kernel* k) -> Result {
      k->module = Str(module, kind, "_e", unit, IndexSuffix());
      k->spec = Spec(p);
      k->spec[VKDML_SPEC_GROUP_SIZE] = kRunsGroup;
      k->spec[VKDML_SPEC_RUN] = elements;
      k->spec[VKDML_SPEC_RUN_INDEXED] = indexed;
      k->spec[VKDML_SPEC_MASK_SKIP] = pass.maskSkip;
      k->spec[VKDML_SPEC_RUN_LINES] = perInvocation;
      k->unit = unit;
      Plan r = p;  // its last dimension counts runs
      const UINT n = p.sizes[last];
      r.sizes[last] = (n + elements - 1) / elements;
      r.count = p.count / n * r.sizes[last];
      VKDML_TRY(Slot(r, &k->slot));
      set_.plans[k->slot].lineLength = n;
      return {};
    };
    Kernel plain, wider;
    VKDML_TRY(make("runs_", plan, elemSize_, run * per, &plain));
    if (vector) {
      VKDML_TRY(make("runs_vec_", plan, elemSize_, run, &wider));
      wider.align = wider.indexAlign = kRunVectorBytes;
    } else if (wideBytes) {
      VKDML_TRY(make("runs_", wide, wideBytes, run, &wider));
    }
    const UINT64 perDispatch = UINT64(device_.maxGroups) * kRunsGroup * perInvocation;  // runs
    for (UINT64 begin = 0; begin < runs(run); begin += perDispatch) {
      Step s;
      s.kind = pass.kind;
      s.skipInPlace = pass.skipInPlace;
      s.plain = plain;
      s.hasWide = vector || wideBytes;
      s.wide = wider;
      s.plain.begin = s.wide.begin = UINT(begin);
      const UINT64 n = std::min<UINT64>(perDispatch, runs(run) - begin);
      const UINT64 group = UINT64(kRunsGroup) * perInvocation;
      s.plain.groups = s.wide.groups = Groups((n + group - 1) / group, device_.maxGroups);
      set_.steps.push_back(s);
    }
    return {};
  }

  // glsl/indexed_runs.comp's VECTOR steps: elements a step moves (its kStep).
  UINT VectorStep() const { return std::max(kRunVectorBytes / elemSize_, 8u); }

  // Whether the plan's runs can go a step at a time (glsl/indexed_runs.comp, VECTOR): 64-bit
  // integers on the device, one index component per element, IndicesTensor and the direct side
  // contiguous along the last dimension, lines of whole steps, and every step's indices and
  // direct side starting on a u64vec4 (the bindings' offsets too: Kernel::align, indexAlign).
  bool VectorShaped(const Plan& plan) const {
    const UINT last = plan.rank - 1;
    if (!device_.int64 || elemSize_ > 8 || plan.tuple != 1 || plan.direct[last] != 1 ||
        plan.indices[last] != 1 || plan.sizes[last] % VectorStep())
      return false;
    for (UINT d = 0; d < last; ++d)
      if (plan.direct[d] % (kRunVectorBytes / elemSize_) ||
          plan.indices[d] % (kRunVectorBytes / indexSize_))
        return false;
    return true;
  }

  // A scatter with a reduction, or a deterministic one. A deterministic float MAX or MIN takes
  // the default mode's atomics and then resolves ties in order (Ties), wherever the default mode
  // takes atomics. Otherwise, where the shape allows (ScatterElements along its innermost axis)
  // a line at a time: in order when deterministic, else through shared memory. Otherwise
  // atomics where the device has what the element type needs and the order is free, unless the
  // units are wide and the device a GPU, where sorting them costs less than an atomic per
  // element (examples/bench/PERF_NOTES.md, v23); else sorted by target and applied in order.
  Result ReducingScatter(const Pass& pass) {
    Plan plan = pass.plan;
    plan.Simplify();
    std::string module;
    const bool sortPays =
        device_.type != VK_PHYSICAL_DEVICE_TYPE_CPU && op_.unit >= kWideUnit && !large_;
    if (deterministic_ && !sortPays && TiesModule(&module)) return Ties(plan, module);
    if (pass.lines && !large_ && (deterministic_ ? OrderedLines(plan) : SharedLines(plan)))
      return {};
    if (!deterministic_ && !sortPays && AtomicModule(&module)) {
      UINT slot = 0;
      VKDML_TRY(Slot(plan, &slot));
      Step step;
      step.kind = Pass::Kind::Reduce;
      step.plain = Elementwise(module + LargeSuffix(), plan, slot, elemSize_);
      VKDML_TRY(Large(plan, Pass::Kind::Reduce, &step.plain));
      set_.steps.push_back(step);
      set_.wordAtomics = elemSize_ < 4;
      return {};
    }
    if (large_)
      return Fail(Status::Unsupported, op_.name, ": ", DataTypeName(op_.inputs[0].type),
                  " reductions without 64-bit atomics on tensors past this device's binding "
                  "range or of 2^32 or more elements are not supported");
    return Ordered(plan);
  }

  // The atomic kernel of a deterministic float MAX or MIN: the default mode's, marking ties
  // (glsl/ties.glsl). 4-byte elements on every device, 8-byte ones with 64-bit atomics.
  bool TiesModule(std::string* module) const {
    const bool maxOrMin =
        op_.reduce == VKDML_REDUCE_FUNCTION_MAX || op_.reduce == VKDML_REDUCE_FUNCTION_MIN;
    if (!maxOrMin || base_[VKDML_SPEC_ELEMENT_KIND] != VKDML_KIND_FLOAT || elemSize_ < 4 ||
        large_ || !AtomicModule(module))
      return false;
    *module += "_ties";
    return true;
  }

  // A deterministic float MAX or MIN: the atomic kernel, marking the targets it sets to a zero or
  // a NaN, then glsl/scatter_ties.comp over the updates (each such target's first update of that
  // kind) and over OutputTensor (its write); both return at once where nothing was marked.
  Result Ties(const Plan& plan, const std::string& atomic) {
    UINT slot = 0;
    VKDML_TRY(Slot(plan, &slot));
    Step step;
    step.kind = Pass::Kind::Reduce;
    step.plain = Elementwise(atomic, plan, slot, elemSize_);
    set_.steps.push_back(step);
    step.kind = Pass::Kind::Ties;
    step.plain = Elementwise(Str("ties_first_e", elemSize_, IndexSuffix()), plan, slot, elemSize_);
    step.plain.groups = TieGroups(plan.count, 1, step.plain.groups);
    set_.steps.push_back(step);
    const UINT64 targets = op_.outputs[0].Span();
    step.plain = Elementwise(Str("ties_write_e", elemSize_), plan, slot, elemSize_);
    step.plain.end = UINT(targets);  // fewer than 2^32 off the large path
    step.plain.groups =
        TieGroups(targets, 1, Groups(targets / VKDML_GROUP_SIZE + 1, device_.maxGroups));
    set_.steps.push_back(step);
    set_.tiePositionWords = targets;
    set_.tieMarkWords = VKDML_TIES_BITS + (targets + 31) / 32;
    return {};
  }

  // Workgroups of a tie pass over `items` of up to `cost` loop iterations each: `gpu` on GPUs; on
  // CPU devices, where a workgroup costs its start even where it returns at once, few, each
  // invocation's loops within the device's bound.
  UINT TieGroups(UINT64 items, UINT64 cost, UINT gpu) const {
    if (device_.type != VK_PHYSICAL_DEVICE_TYPE_CPU) return gpu;
    const UINT64 perGroup =
        UINT64(VKDML_GROUP_SIZE) * std::max<UINT64>(1, device_.maxLoop / 2 / cost);
    return Groups(std::max(kCpuTieGroups, (items + perGroup - 1) / perGroup), device_.maxGroups);
  }

  // glsl/scatter_lines.comp with REDUCE (elements of up to 4 bytes), where the line kernels
  // are chosen: for ADD and MULTIPLY, where every update writes; MAX and MIN leave most targets
  // as they are, and the plain atomics skip those writes (examples/bench/PERF_NOTES.md, v22).
  bool SharedLines(const Plan& plan) {
    const UINT64 lineBytes = std::min(kMaxLineBytes, device_.maxSharedMemory);
    const bool everyUpdateWrites =
        op_.reduce == VKDML_REDUCE_FUNCTION_ADD || op_.reduce == VKDML_REDUCE_FUNCTION_MULTIPLY;
    const bool wanted = device_.lines == DeviceTraits::Lines::Always ||
                        (device_.lines == DeviceTraits::Lines::WhenBetter && everyUpdateWrites);
    if (!wanted || elemSize_ > 4 ||
        !plan.Lines(elemSize_, lineBytes, device_.lines == DeviceTraits::Lines::Always))
      return false;
    UINT slot = 0;
    if (!Slot(plan, &slot).ok()) return false;
    Step step;
    step.kind = Pass::Kind::Reduce;
    step.plain =
        LineKernel(Str("lines_reduce_e", elemSize_, IndexSuffix(), FloatSuffix()), plan, slot);
    step.plain.spec[VKDML_SPEC_UNROLL] = kLinesUnroll;
    set_.steps.push_back(step);
    return true;
  }

  // glsl/scatter_lines_ordered.comp, when a line's buckets (or its sorted keys) fit in shared
  // memory (deterministic executions; on GPUs, where the line kernels are used).
  bool OrderedLines(const Plan& plan) {
    constexpr UINT64 kMaxItems = 64;  // a thread's updates, held in registers
    if (!plan.LineShaped()) return false;
    const UINT length = plan.tupleSize[0], perLine = plan.sizes[plan.rank - 1];
    UINT sortSize = 1;  // keys of a line sorted whole: the power of two at or above perLine
    while (sortSize < perLine) sortSize *= 2;
    UINT group = 32;  // a thread per target and per pair of keys, up to the device's limit
    while (group < std::max(length, sortSize / 2) && group < device_.maxLinesGroupSize) group *= 2;
    group = std::min({group, device_.maxLinesGroupSize, VKDML_LINES_MAX_GROUP});
    const UINT64 items = (UINT64(perLine) + group - 1) / group;
    const UINT64 words = VKDML_ORDERED_SHARED_WORDS(UINT64(length), UINT64(perLine), sortSize);
    // Not on CPU devices, where its barriers cost more than the sort (PERF_NOTES.md, v22).
    if (device_.lines == DeviceTraits::Lines::Never || length > 0x10000 || perLine > 0xFFFF ||
        items > kMaxItems || words * 4 > std::min(kMaxLineBytes, device_.maxSharedMemory))
      return false;
    UINT slot = 0;
    if (!Slot(plan, &slot).ok()) return false;
    Step step;
    step.kind = Pass::Kind::Ordered;
    step.plain =
        LineKernel(Str("lines_ordered_e", elemSize_, IndexSuffix(), FloatSuffix()), plan, slot);
    step.plain.spec[VKDML_SPEC_UNIT] = perLine;
    step.plain.spec[VKDML_SPEC_UNROLL] = sortSize;
    step.plain.spec[VKDML_SPEC_GROUP_SIZE] = group;
    step.plain.spec[VKDML_SPEC_ITEMS] = UINT(items);
    set_.steps.push_back(step);
    return true;
  }

  // The module suffix a reduction's float arithmetic needs (glsl/arith.glsl): 8-byte floats
  // compute in float64 (_f64, shaderFloat64); float32 and float64 keep denormals where the device
  // promises to when asked (_dp: SPIR-V's DenormPreserve), else float32 is computed in float64
  // where the device has it (_w: NVIDIA flushes float32 denormals, not float64's). float16 is
  // computed in float32, where its denormals are normal numbers. float32 MAX and MIN compare
  // bits as integers (glsl/arith.glsl: floatKeeps): no float arithmetic, no suffix.
  std::string FloatSuffix() const {
    if (!op_.reduce || base_[VKDML_SPEC_ELEMENT_KIND] != VKDML_KIND_FLOAT) return "";
    if (elemSize_ == 8) return device_.denormPreserve64 ? "_f64_dp" : "_f64";
    const bool arithmetic =
        op_.reduce == VKDML_REDUCE_FUNCTION_ADD || op_.reduce == VKDML_REDUCE_FUNCTION_MULTIPLY;
    if (elemSize_ != 4 || !arithmetic) return "";
    return device_.denormPreserve32 ? "_dp" : device_.float64 ? "_w" : "";
  }

  bool AtomicModule(std::string* module) const {
    const bool isFloat = base_[VKDML_SPEC_ELEMENT_KIND] == VKDML_KIND_FLOAT;
    const std::string name = Str("reduce_e", elemSize_, IndexSuffix());
    if (elemSize_ <= 4) {  // 32-bit atomics and compare-and-swap: every device
      // The float atomic add only where denormals cannot be kept anyway: NVIDIA's flushes them.
      const bool fadd = elemSize_ == 4 && isFloat && op_.reduce == VKDML_REDUCE_FUNCTION_ADD &&
                        device_.float32AtomicAdd && FloatSuffix().empty();
      *module = name + (fadd ? "_fadd" : FloatSuffix());
      return true;
    }
    if (device_.int64Atomics) {
      *module = name + "_a64" + FloatSuffix();
      return true;
    }
    *module = name;  // two 32-bit adds with the carry: integer ADD only
    return !isFloat && op_.reduce == VKDML_REDUCE_FUNCTION_ADD;
  }

  // Deterministic: each update unit's target slot (Keys), a stable sort of the units by slot
  // (Sort), then each slot's updates applied in order (Ordered).
  Result Ordered(const Plan& scatter) {
    Plan keys = op_.keys;
    keys.Simplify();
    UINT slot = 0;
    VKDML_TRY(Slot(keys, &slot));
    Step step;
    step.kind = Pass::Kind::Keys;
    step.plain = Elementwise(Str("keys", IndexSuffix()), keys, slot, 4);
    set_.steps.push_back(step);

    const UINT units = UINT(keys.count);  // a deterministic scatter is not on the large path
    UINT digits = 0;  // sort passes: the slots' significant bits, VKDML_SORT_RADIX at a time
    for (UINT64 top = op_.slots - 1; top; top >>= 8) ++digits;
    Sort(units, digits);

    Kernel k;
    k.module = Str("ordered_e", elemSize_, IndexSuffix(), FloatSuffix());
    k.spec = Spec(scatter);
    k.spec[VKDML_SPEC_UNIT] = op_.unit;
    // Wide units (ScatterND's rows) take kOrderedPerThread elements a thread, so a run's loads
    // overlap and more units are in flight (examples/bench/PERF_NOTES.md, v23).
    const UINT per = op_.unit >= kWideUnit ? kOrderedPerThread : 1;
    k.spec[VKDML_SPEC_ITEMS] = per;
    const UINT threadsPerUnit = (op_.unit + per - 1) / per;
    k.unit = elemSize_;
    VKDML_TRY(Slot(scatter, &k.slot));
    set_.plans[k.slot].sortedBase = digits % 2 ? units : 0;
    // A run of one target's updates is folded by one invocation: where loops are bounded, in
    // dispatches of at most maxLoop sorted positions, each continuing the runs the last left.
    const UINT64 chunk = std::min<UINT64>(units, device_.maxLoop);
    for (UINT64 begin = 0; begin < units; begin += chunk) {
      k.begin = UINT(begin);
      k.end = UINT(std::min<UINT64>(units, begin + chunk));
      const UINT64 threads = UINT64(k.end - k.begin) * threadsPerUnit;
      k.groups = Groups((threads + VKDML_GROUP_SIZE - 1) / VKDML_GROUP_SIZE, device_.maxGroups);
      step = {};
      step.kind = Pass::Kind::Ordered;
      step.plain = k;
      set_.steps.push_back(step);
    }
    set_.sortWords = 2 * UINT64(units);
    return {};
  }

  // glsl/radix_sort.comp's steps for `digits` passes over `units` keys.
  void Sort(UINT units, UINT digits) {
    const UINT blocks = UINT((UINT64(units) + VKDML_SORT_BLOCK - 1) / VKDML_SORT_BLOCK);
    // The scan's levels: the digit counts, then each level's workgroup totals, up to one
    // workgroup's worth.
    std::vector<UINT64> offset = {0}, size = {UINT64(VKDML_SORT_RADIX) * blocks};
    while (size.back() > VKDML_SCAN_BLOCK) {
      offset.push_back(offset.back() + size.back());
      size.push_back((size.back() + VKDML_SCAN_BLOCK - 1) / VKDML_SCAN_BLOCK);
    }
    set_.countWords = offset.back() + size.back();
    auto add = [&](const char* name, UINT64 groups, shader::SortPush push) {
      Step step;
      step.kind = Pass::Kind::Sort;
      step.plain.module = Str("sort_", name);
      step.plain.groups = Groups(groups, device_.maxGroups);
      step.plain.sortStep = true;
      step.plain.sort = push;
      set_.steps.push_back(step);
    };
    for (UINT d = 0; d < digits; ++d) {
      shader::SortPush pass = {};
      pass.count = units;
      pass.blocks = blocks;
      pass.shift = 8 * d;
      pass.from = d % 2;
      add("count", blocks, pass);
      const size_t top = size.size() - 1;
      for (size_t level = 0; level <= top; ++level) {
        shader::SortPush scan = {};
        scan.count = UINT(size[level]);
        scan.level = UINT(offset[level]);
        scan.next = level < top ? UINT(offset[level + 1]) : 0xFFFFFFFFu;
        add("scan", (size[level] + VKDML_SCAN_BLOCK - 1) / VKDML_SCAN_BLOCK, scan);
      }
      for (size_t level = top; level-- > 0;) {
        shader::SortPush back = {};
        back.count = UINT(size[level]);
        back.level = UINT(offset[level]);
        back.next = UINT(offset[level + 1]);
        add("scan_add", (size[level] + VKDML_SORT_GROUP - 1) / VKDML_SORT_GROUP, back);
      }
      add("scatter", blocks, pass);
    }
  }

  Result Report() {
    const Tensor& indices = op_.Indices();
    Plan walk;  // IndicesTensor's elements, row-major
    for (UINT d = 0; d < indices.dims; ++d)
      walk.AddDim(indices.sizes[d], 0, 0, indices.strides[d], 0);
    Kernel& k = set_.report;
    k.module = Str("report", IndexSuffix(), LargeSuffix());
    k.spec = Spec(walk);
    k.spec[VKDML_SPEC_CHECKED] = false;
    k.slot = VKDML_REPORT_SLOT;
    k.unit = elemSize_;
    k.groups = 1;
    set_.plans[VKDML_REPORT_SLOT] = Pack(walk);
    if (!large_) return {};
    // A dispatch per window of IndicesTensor, the one owning the recorded index reading it.
    k.indexedBinding = VKDML_BIND_INDICES;
    k.indexedUnit = indexSize_;
    for (const Span& w : Windows(indices)) {
      LargeDispatch d;
      d.count = 1;
      d.groups = 1;
      d.indexed = w;
      k.large.push_back(d);
    }
    return {};
  }

  // ----- The large path -----

  // Whether a tensor may not fit one descriptor: its binding's offset may lie up to rangeAlign
  // - 1 bytes past the descriptor's aligned offset.
  bool Windowed(const Tensor& t) const {
    return t.totalBytes > device_.maxRange - device_.rangeAlign;
  }
  // The bytes a window may hold: what a descriptor covers after that alignment, in whole
  // vectors, so no element straddles two windows.
  UINT64 WindowBytes() const {
    return (device_.maxRange - device_.rangeAlign) / VKDML_VECTOR_BYTES * VKDML_VECTOR_BYTES;
  }
  // A tensor's windows, in order: the whole tensor where it fits one.
  std::vector<Span> Windows(const Tensor& t) const {
    if (!Windowed(t)) return {Span{0, t.totalBytes}};
    std::vector<Span> windows;
    for (UINT64 begin = 0; begin < t.totalBytes; begin += WindowBytes())
      windows.push_back({begin, std::min(t.totalBytes, begin + WindowBytes())});
    return windows;
  }

  std::string LargeSuffix() const { return large_ ? "_large" : ""; }

  // An index tuple must fit one window.
  Result TupleTooWide() const {
    return Fail(Status::Unsupported, op_.name, ": an index tuple of ", op_.Indices().field,
                " spans more than this device's binding range (", device_.maxRange, " bytes)");
  }

  // The large path's dispatches of a kernel over plan (for a pass of `kind`): the plan's loop
  // in chunks, of fewer than 2^32 elements each, within which every windowed tensor that the
  // loop walks (the direct side, IndicesTensor, and a copy's source) spans at most a window;
  // each chunk once per window of the indexed side where that side is indexed (a gather's
  // InputTensor, a scatter's OutputTensor), the dispatch taking only the elements there.
  Result Large(const Plan& plan, Pass::Kind kind, Kernel* k) const {
    if (!large_) return {};
    const bool gather = kind == Pass::Kind::Gather;
    const Tensor& direct = gather ? op_.outputs[0] : op_.inputs[2];
    const Tensor& indexed = gather ? op_.inputs[0] : op_.outputs[0];
    const Tensor& indices = op_.Indices();
    k->directBinding = gather ? VKDML_BIND_OUTPUT : VKDML_BIND_UPDATES;
    k->indexedBinding = gather ? VKDML_BIND_INPUT : VKDML_BIND_OUTPUT;
    k->indexedUnit = k->unit;
    struct Walked {
      const Tensor* tensor;
      const UINT* strides;  // the plan's, in `unit`-byte elements
      UINT64 unit, extra;   // element bytes; bytes past an element that it also reads
      Span LargeDispatch::*span;
    };
    std::vector<Walked> walked = {{&direct, plan.direct, k->unit, 0, &LargeDispatch::direct}};
    if (plan.tuple > 0)
      walked.push_back({&indices, plan.indices, indexSize_,
                        UINT64(plan.tuple - 1) * plan.componentStride * indexSize_,
                        &LargeDispatch::indices});
    else  // a copy: its source is walked too
      walked.push_back({&indexed, plan.indexed, k->unit, 0, &LargeDispatch::indexed});
    const UINT64 cap = WindowBytes();
    const std::vector<Span> windows =
        plan.tuple > 0 ? Windows(indexed) : std::vector<Span>{Span{0, indexed.totalBytes}};
    if (plan.rank == 0) {  // one element, with its index tuple, in each tensor's first window
      for (const Walked& w : walked)
        if (Windowed(*w.tensor) && w.unit + w.extra > cap) return TupleTooWide();
      LargeDispatch d;
      d.count = d.groups = 1;
      d.indices = Windows(indices)[0];
      for (const Walked& w : walked) d.*w.span = Windows(*w.tensor)[0];
      for (const Span& window : windows) {
        if (plan.tuple > 0) d.indexed = window;
        k->large.push_back(d);
      }
      return {};
    }
    // Bytes spanned by dimension k's coordinates [0, length) with dimensions past k whole.
    auto spanned = [&plan](const Walked& w, UINT dim, UINT64 length) {
      UINT64 last = (length - 1) * w.strides[dim];
      for (UINT d = dim + 1; d < plan.rank; ++d) last += UINT64(plan.sizes[d] - 1) * w.strides[d];
      return last * w.unit + w.unit + w.extra;
    };
    // Split at the outermost dimension whose single coordinate fits, chunking it by as many
    // coordinates as every windowed walked tensor allows.
    UINT split = plan.rank;
    UINT64 inner = 1, length = 1;
    for (UINT dim = 0; dim < plan.rank && split == plan.rank; ++dim) {
      inner = 1;
      for (UINT d = dim + 1; d < plan.rank; ++d) inner *= plan.sizes[d];
      bool fits = inner <= 0xFFFFFFFFu;
      for (const Walked& w : walked)
        fits = fits && (!Windowed(*w.tensor) || spanned(w, dim, 1) <= cap);
      if (!fits) continue;
      split = dim;
      length = std::min<UINT64>(plan.sizes[dim], 0xFFFFFFFFu / inner);
      for (const Walked& w : walked)
        if (Windowed(*w.tensor) && w.strides[dim] > 0)
          length =
              std::min(length, (cap - spanned(w, dim, 1)) / (UINT64(w.strides[dim]) * w.unit) + 1);
    }
    if (split == plan.rank) return TupleTooWide();
    UINT64 outer = 1;
    for (UINT d = 0; d < split; ++d) outer *= plan.sizes[d];
    const UINT64 pieces = (plan.sizes[split] + length - 1) / length;
    const UINT64 total = outer * pieces * windows.size();
    if (total > kMaxLargeDispatches)
      return Fail(Status::Unsupported, op_.name, ": its tensors' layout would take ", total,
                  " dispatches through windows of this device's binding range (", device_.maxRange,
                  " bytes); at most ", kMaxLargeDispatches);
    const UINT64 perGroup = UINT64(VKDML_GROUP_SIZE) * k->spec[VKDML_SPEC_UNROLL];
    UINT coords[VKDML_MAX_DIMS] = {};  // the outer coordinates, row-major
    for (UINT64 o = 0; o < outer; ++o) {
      for (UINT64 first = 0; first < plan.sizes[split]; first += length) {
        LargeDispatch d;
        d.indices = Windows(indices)[0];  // a copy reads no indices, but binds them
        std::copy(coords, coords + split, d.start);
        d.start[split] = UINT(first);
        const UINT64 n = std::min<UINT64>(length, plan.sizes[split] - first);
        d.count = UINT(n * inner);
        d.groups = Groups((d.count + perGroup - 1) / perGroup, device_.maxGroups);
        for (const Walked& w : walked) {
          Span& s = d.*w.span;
          if (!Windowed(*w.tensor)) {
            s = {0, w.tensor->totalBytes};
            continue;
          }
          UINT64 at = 0;
          for (UINT e = 0; e < plan.rank; ++e) at += UINT64(d.start[e]) * w.strides[e];
          s.begin = at * w.unit;
          s.end = s.begin + spanned(w, split, n);
        }
        for (const Span& window : windows) {
          if (plan.tuple > 0) d.indexed = window;
          k->large.push_back(d);
        }
      }
      for (UINT d = split; d-- > 0;) {  // the next outer coordinates
        if (++coords[d] < plan.sizes[d]) break;
        coords[d] = 0;
      }
    }
    return {};
  }

  const OperatorImpl& op_;
  const DeviceTraits& device_;
  const UINT elemSize_, indexSize_;
  bool deterministic_ = false;
  bool large_ = false;  // the large path (Large)
  Specialization base_ = {};
  KernelSet set_;
  UINT next_ = 0;
};

}  // namespace

DeviceTraits DeviceTraits::Of(VkPhysicalDeviceType type, const VkPhysicalDeviceLimits& limits,
                              const DeviceFeatures& enabled) {
  DeviceTraits t;
  t.type = type;
  t.maxSharedMemory = limits.maxComputeSharedMemorySize;
  t.maxLinesGroupSize = std::min({VKDML_LINES_MAX_GROUP, limits.maxComputeWorkGroupInvocations,
                                  limits.maxComputeWorkGroupSize[0]});
  t.maxGroups = std::min(kMaxGroups, limits.maxComputeWorkGroupCount[0]);
  t.maxRange = limits.maxStorageBufferRange;
  t.rangeAlign = std::max<UINT64>(VKDML_VECTOR_BYTES, limits.minStorageBufferOffsetAlignment);
  const char* range = std::getenv("VKDML_MAX_BINDING_RANGE");
  const unsigned long long cap = range ? std::strtoull(range, nullptr, 10) : 0;
  if (cap > 0 && cap < t.maxRange)
    t.maxRange = std::max<UINT64>(cap, t.rangeAlign + VKDML_VECTOR_BYTES);
  const char* groups = std::getenv("VKDML_MAX_GROUPS");
  long n = groups ? std::strtol(groups, nullptr, 10) : 0;
  if (n > 0 && UINT64(n) < t.maxGroups) t.maxGroups = UINT(n);
  // On CPU devices (lavapipe) the line scatter's barriers cost more than the random writes it
  // saves (examples/bench/PERF_NOTES.md, v15).
  t.lines = type == VK_PHYSICAL_DEVICE_TYPE_CPU ? Lines::Never : Lines::WhenBetter;
  if (type == VK_PHYSICAL_DEVICE_TYPE_CPU) t.maxLoop = 16384;
  t.kernels = type == VK_PHYSICAL_DEVICE_TYPE_CPU ? Kernels::Cpu : Kernels::Gpu;
  const char* kernels = std::getenv("VKDML_KERNELS");
  if (kernels && std::strcmp(kernels, "gpu") == 0) t.kernels = Kernels::Gpu;
  if (kernels && std::strcmp(kernels, "cpu") == 0) t.kernels = Kernels::Cpu;
  t.int64 = enabled.shaderInt64;
  const char* lines = std::getenv("VKDML_SCATTER_LINES");
  if (lines && std::strcmp(lines, "0") == 0) t.lines = Lines::Never;
  if (lines && std::strcmp(lines, "1") == 0) t.lines = Lines::Always;
  const char* atomics = std::getenv("VKDML_ATOMICS");
  const bool only32 = atomics && std::strcmp(atomics, "32") == 0;
  t.float32AtomicAdd = enabled.shaderBufferFloat32AtomicAdd && !only32;
  t.int64Atomics = enabled.shaderInt64 && enabled.shaderBufferInt64Atomics && !only32;
  // VKDML_NATIVE_FLOAT32=1: float32 reductions in float32 with the device's own denormal
  // handling, as on a device with neither DenormPreserve nor float64 (so the tests run it).
  const char* native = std::getenv("VKDML_NATIVE_FLOAT32");
  const bool nativeFloat32 = native && std::strcmp(native, "1") == 0;
  t.float64 = enabled.shaderFloat64 && !nativeFloat32;
  t.denormPreserve32 = enabled.shaderDenormPreserveFloat32 && !nativeFloat32;
  t.denormPreserve64 = enabled.shaderDenormPreserveFloat64;
  return t;
}

Result ChooseKernels(const OperatorImpl& op, UINT flags, const DeviceTraits& device,
                     KernelSet* out) {
  return Chooser(op, flags, device).Choose(out);
}

}  // namespace vkdml::detail
