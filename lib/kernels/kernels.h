// Kernel choice: which kernel runs each of an operator's passes, with which specialization
// constants, over which packed plan, and how many workgroups it dispatches, on a device as its
// Capabilities describe it. Every plan transformation (plan.h: Simplify, Stripe, Lines, Widen)
// is applied here and nowhere else; kernel_choice.h lists the families it is made of.
// CPU only: no Vulkan calls, so the tests check it directly.
#pragma once

#include <array>
#include <functional>
#include <string>
#include <vector>

#include "interface.h"
#include "kernels/capabilities.h"
#include "operators/operator.h"

namespace vkdml::detail {

using Specialization = std::array<uint32_t, VKDML_SPEC_COUNT>;

// The large path (tensors that may not fit one descriptor, loops of 2^32 or more elements): a
// kernel is dispatched once per chunk of its plan's loop (and, where its indexed side is indexed
// and windowed, once per window of that side), each dispatch seeing every tensor through a
// descriptor that covers only what it touches (binding_table.cpp; interface.h: LargePush).
struct Span {
  UINT64 begin = 0, end = 0;  // bytes from the tensor's element 0
};
struct LargeDispatch {
  UINT start[VKDML_MAX_DIMS] = {};  // the chunk's first loop coordinates
  UINT count = 0;                   // its loop elements, fewer than 2^32
  UINT groups = 0;
  // What it touches of the direct side and IndicesTensor, and of the indexed side: there, the
  // elements it takes (the others belong to another dispatch's window).
  Span direct, indices, indexed;
};

// The tensors a kernel touches, as kernel choice names them: inputs[i] is Role(Input + i), so an
// embedding bag's OffsetsTensor is Updates' (Offsets) and its PerSampleWeightsTensor Weights. A
// pass's source (InputTensor, UpdatesTensor, or an embedding bag's OffsetsTensor or
// PerSampleWeightsTensor) is bound at VKDML_BIND_SOURCE (binding_table.cpp).
// outputs[o] is Role(Output + o) (a MoE permute's four).
enum class Role : UINT {
  None,
  Input,
  Indices,
  Updates,
  Weights,
  Output,
  Output1,
  Output2,
  Output3,
  Count,
  Offsets = Updates
};
constexpr UINT kMaxOutputs = 4;

// One dispatch.
struct Kernel {
  std::string module;  // the embedded SPIR-V module (glsl/CMakeLists.txt names them)
  Specialization spec = {};
  UINT groups = 0;                       // workgroups
  VkPipeline pipeline = VK_NULL_HANDLE;  // filled in by CompileOperator
  // Its push constants: a plan's (shader::Push: the plan slot, the bindings' bases counted in
  // `unit`-byte elements, and an ordered scatter's [begin, end)) or, for a sort step, a fixed
  // shader::SortPush.
  UINT slot = 0, unit = 0;
  // A wide kernel (Step::wide) runs where the source and destination bindings start at a multiple
  // of `align` bytes within their descriptor ranges (0: of `unit`), and IndicesTensor's at a
  // multiple of `indexAlign`.
  UINT align = 0, indexAlign = 1;
  UINT begin = 0, end = 0;
  UINT from = 0, to = 0;  // an embedding bag's (interface.h: Push)
  bool sortStep = false;
  shader::SortPush sort = {};
  // n > 0: dispatched indirectly, its workgroups from the scratch's n-th VkDispatchIndirectCommand
  // (KernelSet::dispatchWords).
  UINT indirect = 0;
  // On the large path, dispatched once as off it (the operator's descriptors, each tensor's
  // first maxStorageBufferRange bytes): it reads no tensor past them (an embedding bag's passes
  // but the fetch from its table).
  bool whole = false;
  // The large path: this kernel's dispatches; the tensors of its direct and indexed sides, with
  // their element sizes (0: `unit`; checked mode's report indexes IndicesTensor); the bytes past
  // a direct element that a loop element also writes (a group of values), and past an indexed
  // window's end that a dispatch also reads (the rest of a row whose first byte it holds).
  std::vector<LargeDispatch> large;
  Role directTensor = Role::None, indexedTensor = Role::None;
  UINT directUnit = 0, indexedUnit = 0;
  UINT64 directReach = 0, indexedReach = 0;
  // The indexed side counts 4-bit values, two a byte (indexedUnit 1): its offsets are twice its
  // bytes' (a block-quantized gather's InputTensor).
  bool indexedNibbles = false;
  UINT DirectUnit() const { return directUnit ? directUnit : unit; }
};

// One dispatch of an operator's work, after a barrier from the one before.
struct Step {
  Pass::Kind kind = Pass::Kind::Gather;
  UINT output = 0;           // the output bound at VKDML_BIND_OUTPUT (Pass::output)
  bool skipInPlace = false;  // Pass::skipInPlace
  Kernel plain;
  // The same pass moving uvec4s, where the plan widens (Plan::Widen), or on CPU devices a
  // faster kernel for it: usable where its bindings are aligned as it needs (Kernel::align).
  bool hasWide = false;
  Kernel wide;
};

struct KernelSet {
  std::vector<Step> steps;
  bool checked = false;
  Kernel report;  // checked mode's last dispatch
  // Checked mode's status words: the first step writes their initial values itself (no fill
  // before the run); the kernels write the report too (no report dispatch after them). The
  // paged caches' (kernel_paged.cpp).
  bool statusInKernel = false, reportInKernel = false;
  // The scratch is the status words alone, which the kernels write whole: the binding table
  // makes it host visible and reads them there (no copy into a buffer of the host's).
  bool HostStatus() const {
    return checked && statusInKernel && reportInKernel && scratchWords == VKDML_STATUS_WORDS;
  }
  std::vector<shader::PackedPlan> plans;  // VKDML_PLAN_SLOTS, the uniform buffer's contents
  // The scratch regions (glsl/interface.h: ScratchLayout), in 32-bit words: ScatterND's mask
  // (zeroed before each run); a deterministic scatter's sort keys and values (each), and its
  // counts; or a deterministic float MAX or MIN's tie positions and tie marks (zeroed before
  // each run), in the sort's keys and counts regions. 0 where unused.
  UINT64 maskWords = 0, sortWords = 0, countWords = 0;
  UINT64 tiePositionWords = 0, tieMarkWords = 0;
  // A scatter mean's count per target slot, or a quantizing scatter's claim per table row
  // (zeroed each run).
  UINT64 tallyWords = 0;
  // An embedding bag's bounds and float32 weights (written by its first passes), and its partial
  // folds where its bags take more than one dispatch.
  UINT64 boundsWords = 0, weightWords = 0, partialWords = 0;
  // On the large path, its rows of a chunk of entries, fetched from the table's windows, and the
  // span of bags with entries in it (zeroed each run). Its longest bag in a chunk (zeroed each
  // run) and a VkDispatchIndirectCommand (3 words) for each Bag dispatch of a chunk.
  UINT64 rowWords = 0, spanWords = 0, dispatchWords = 0;
  // A block-quantized gather's scale and zero point of each block (written by its first passes).
  UINT64 blockWords = 0;
  // Where they are, after checked mode's status words (the uniform buffer's tail), and the
  // scratch buffer's size in words.
  shader::ScratchLayout scratchAt = {};
  UINT64 scratchWords = VKDML_STATUS_WORDS;
  shader::uvec4 fill = {};  // the uniform's last: VKDML_OUT_OF_RANGE_MODE_FILL's value
  // A reduction on 1- or 2-byte elements updates the 4-byte words holding them atomically, so
  // OutputTensor's binding offset must be a multiple of 4.
  bool wordAtomics = false;
  // 1- and 2-byte elements packed in 32-bit words (Capabilities::Packed): every binding of a
  // tensor of them starts on a multiple of 4 bytes, so that the words the kernels touch are the
  // tensor's own (DML's required size rounds up to 4 bytes).
  bool packed = false;
  // Every binding starts on a multiple of 4 bytes: the kernels read and write the tensors in
  // 32-bit words whatever their types (quantized rows: kernel_quantized.cpp).
  bool wordBindings = false;
  // The large path: every kernel dispatched through Kernel::large; maxRange and rangeAlign as
  // kernel choice assumed them (Capabilities).
  bool large = false;
  UINT64 maxRange = 0, rangeAlign = 0;
};

// The largest TotalTensorSizeInBytes kernel choice takes for every tensor of an operator of
// `type` (not VKDML_OPERATOR_OUT_OF_RANGE: the one it wraps): UINT64_MAX where the large path
// takes each past the binding range, else what fits one descriptor at any binding offset (for
// the tensors that bounds: an embedding bag's but its table, a block-quantized gather's scales
// and zero points).
UINT64 MaxTensorBytes(DML_OPERATOR_TYPE type, const Capabilities& caps);

// flags: the compile flags (VKDML_EXECUTION_FLAG_CHECK_INDICES, _DETERMINISTIC); an operator
// in VKDML_OUT_OF_RANGE_MODE_ERROR is checked whatever they say.
Result ChooseKernels(const OperatorImpl& op, UINT flags, const Capabilities& caps, KernelSet* out);

// Every module name kernel choice can ask for (some more than once), each family's in turn.
void ListModules(const std::function<void(const std::string&)>& sink);

// The module names kernel choice can ask for that `built` says the build did not make: empty
// when every family's names are made. The build runs it (lib/kernels/check_modules.cpp) against the
// embedded modules, so a name the library asks for and glsl/CMakeLists.txt does not make fails
// the build.
std::vector<std::string> MissingModules(const std::function<bool(const std::string&)>& built);

}  // namespace vkdml::detail
