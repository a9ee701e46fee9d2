// The large path (tensors that may not fit one descriptor, loops of 2^32 or more elements): a
// kernel is dispatched once per chunk of its plan's loop and, where its indexed side is indexed
// and windowed, once per window of that side (kernels.h: LargeDispatch). The modules are those
// of the other families built with LARGE=1 ("_large").
#include <algorithm>

#include "kernels/kernel_choice.h"

namespace vkdml::detail {

namespace {

// The limit on one kernel's dispatches (chunks times windows): beyond it the layout of the
// tensors is too scattered for windows of the device's binding range.
constexpr UINT64 kMaxLargeDispatches = 1 << 16;

// The bytes a window may hold where a dispatch also reads `reach` bytes past its end
// (Kernel::indexedReach): what a descriptor covers after its offset's alignment and the reach,
// in whole vectors, so no element straddles two windows; 0 if nothing is left.
UINT64 WindowBytes(const Capabilities& caps, UINT64 reach = 0) {
  const UINT64 room = caps.maxRange - caps.rangeAlign;
  return room > reach ? (room - reach) / VKDML_VECTOR_BYTES * VKDML_VECTOR_BYTES : 0;
}

// A tensor's first window (Windows' first, without the others).
Span FirstWindow(const Capabilities& caps, const Tensor& t) {
  return {0, Windowed(caps, t) ? std::min(t.totalBytes, WindowBytes(caps)) : t.totalBytes};
}

// An index tuple must fit one window.
Result TupleTooWide(const Choice& c) {
  return Fail(Status::Unsupported, c.op.name, ": an index tuple of ", c.op.Indices().field,
              " spans more than this device's binding range (", c.caps.maxRange, " bytes)");
}

// A tensor the loop walks: its strides in the plan, in `unit`-byte elements; `extra` bytes past
// an element that it also reads (the rest of an index tuple, or of the 32-bit word that holds a
// packed element: Capabilities::Packed); the span of a dispatch it fills.
struct Walked {
  const Tensor* tensor;
  const UINT* strides;
  UINT64 unit, extra;
  Span LargeDispatch::*span;
};

// Bytes spanned by dimension dim's coordinates [0, length) with the dimensions past it whole.
UINT64 Spanned(const Plan& plan, const Walked& w, UINT dim, UINT64 length) {
  UINT64 last = (length - 1) * w.strides[dim];
  for (UINT d = dim + 1; d < plan.rank; ++d) last += UINT64(plan.sizes[d] - 1) * w.strides[d];
  return last * w.unit + w.unit + w.extra;
}

// Where the loop splits into chunks of at most maxCount elements: the outermost dimension whose
// single coordinate fits a window in every windowed walked tensor (plan.rank if none does), and
// how many of its coordinates a chunk takes.
void Split(const Capabilities& caps, const Plan& plan, const std::vector<Walked>& walked,
           UINT64 maxCount, UINT* split, UINT64* inner, UINT64* length) {
  const UINT64 cap = WindowBytes(caps);
  *split = plan.rank;
  for (UINT dim = 0; dim < plan.rank; ++dim) {
    *inner = 1;
    for (UINT d = dim + 1; d < plan.rank; ++d) *inner *= plan.sizes[d];
    bool fits = *inner <= maxCount;
    for (const Walked& w : walked)
      fits = fits && (!Windowed(caps, *w.tensor) || Spanned(plan, w, dim, 1) <= cap);
    if (!fits) continue;
    *split = dim;
    *length = std::min<UINT64>(plan.sizes[dim], maxCount / *inner);
    for (const Walked& w : walked)
      if (Windowed(caps, *w.tensor) && w.strides[dim] > 0)
        *length = std::min(
            *length, (cap - Spanned(plan, w, dim, 1)) / (UINT64(w.strides[dim]) * w.unit) + 1);
    return;
  }
}

// The dispatches of one chunk, starting at `start` with n coordinates of dimension `split`: its
// spans, once per window of the indexed side.
void AddChunk(const Choice& c, const Plan& plan, const std::vector<Walked>& walked,
              const std::vector<Span>& windows, const UINT* start, UINT split, UINT64 n,
              UINT64 inner, Kernel* k) {
  const UINT64 perGroup = UINT64(c.caps.groupSize) * k->spec[VKDML_SPEC_UNROLL];
  LargeDispatch d;
  d.indices = FirstWindow(c.caps, c.op.Indices());  // a copy reads no indices, but binds them
  std::copy(start, start + split + 1, d.start);
  d.count = UINT(n * inner);
  d.groups = c.Groups((d.count + perGroup - 1) / perGroup);
  for (const Walked& w : walked) {
    Span& s = d.*w.span;
    if (!Windowed(c.caps, *w.tensor)) {
      s = {0, w.tensor->totalBytes};
      continue;
    }
    UINT64 at = 0;
    for (UINT e = 0; e < plan.rank; ++e) at += UINT64(d.start[e]) * w.strides[e];
    s.begin = at * w.unit;
    s.end = s.begin + Spanned(plan, w, split, n);
    // Packed elements: up to the end of the last one's word (the binding starts on a word).
    if (c.caps.Packed(UINT(w.unit))) s.end = s.end / 4 * 4;
  }
  for (const Span& window : windows) {
    if (plan.tuple > 0) d.indexed = window;
    k->large.push_back(d);
  }
}

}  // namespace

bool Windowed(const Capabilities& caps, const Tensor& t) {
  // Its binding's offset may lie up to rangeAlign - 1 bytes past the descriptor's aligned offset.
  return t.totalBytes > caps.maxRange - caps.rangeAlign;
}

std::vector<Span> Windows(const Capabilities& caps, const Tensor& t, UINT64 reach) {
  if (!Windowed(caps, t)) return {Span{0, t.totalBytes}};
  const UINT64 bytes = WindowBytes(caps, reach);
  std::vector<Span> windows;
  for (UINT64 begin = 0; bytes && begin < t.totalBytes; begin += bytes)
    windows.push_back({begin, std::min(t.totalBytes, begin + bytes)});
  return windows;
}

std::vector<LargeDispatch> PerWindow(const std::vector<Span>& windows, LargeDispatch each) {
  std::vector<LargeDispatch> dispatches;
  for (const Span& window : windows) {
    each.indexed = window;
    dispatches.push_back(each);
  }
  return dispatches;
}

Result CheckWithinRange(const Choice& c, const Tensor& t, const char* others) {
  if (!Windowed(c.caps, t)) return {};
  return Fail(Status::Unsupported, c.op.name, ": ", t.field, " takes ", t.totalBytes,
              " bytes, past this device's maxStorageBufferRange (", c.caps.maxRange,
              " bytes) less its offset alignment (", c.caps.rangeAlign, "): only ", others,
              " may pass it");
}

Result CheckLargePath(const Choice& c) {
  if (c.caps.maxRange < c.caps.rangeAlign + VKDML_VECTOR_BYTES)
    return Fail(Status::Unsupported, c.op.name, ": this device's binding range (", c.caps.maxRange,
                " bytes) leaves no window after its offset alignment (", c.caps.rangeAlign,
                " bytes): the large path needs at least ", c.caps.rangeAlign + VKDML_VECTOR_BYTES);
  if (c.set.checked && c.op.Indices().Count() > 0xFFFFFFFFu)
    return Fail(Status::Unsupported, c.op.name,
                ": VKDML_EXECUTION_FLAG_CHECK_INDICES on an IndicesTensor of 2^32 or more "
                "elements is not supported");
  return {};
}

// The plan's loop in chunks, of fewer than 2^32 elements each, within which every windowed
// tensor that the loop walks (the direct side, IndicesTensor, and a copy's source) spans at most
// a window; each chunk once per window of the indexed side where that side is indexed (a
// gather's InputTensor, a scatter's OutputTensor), the dispatch taking only the elements there.
// A quantizing scatter's claims index the scratch, bound whole: no windows. The chunks go in the
// loop's order (a deterministic scatter's sort takes them one by one).
Result ChooseLargeDispatches(const Choice& c, const Plan& plan, Pass::Kind kind, Kernel* k,
                             UINT64 maxCount) {
  if (!c.large) return {};
  const bool gather = kind == Pass::Kind::Gather, claims = kind == Pass::Kind::Claim;
  const Tensor& direct = gather ? c.op.outputs[0] : c.op.inputs[2];
  const Tensor& indexed = gather ? c.op.inputs[0] : c.op.outputs[0];
  const Tensor& indices = c.op.Indices();
  k->directTensor = gather ? Role::Output : Role::Updates;
  k->indexedTensor = gather ? Role::Input : claims ? Role::None : Role::Output;
  if (!k->indexedUnit) k->indexedUnit = k->unit;
  const UINT directUnit = k->DirectUnit();
  const auto wordRest = [&](UINT unit) -> UINT64 {  // the rest of a packed element's word
    return c.caps.Packed(unit) ? 3 : 0;
  };
  std::vector<Walked> walked = {{&direct, plan.direct, directUnit,
                                 k->directReach + wordRest(directUnit), &LargeDispatch::direct}};
  if (plan.tuple > 0)
    walked.push_back({&indices, plan.indices, c.indexSize,
                      UINT64(plan.tuple - 1) * plan.componentStride * c.indexSize,
                      &LargeDispatch::indices});
  else  // a copy: its source is walked too
    walked.push_back({&indexed, plan.indexed, k->unit, wordRest(k->unit), &LargeDispatch::indexed});
  const std::vector<Span> windows = plan.tuple > 0 && !claims
                                        ? Windows(c.caps, indexed, k->indexedReach)
                                        : std::vector<Span>{Span{0, indexed.totalBytes}};
  if (windows.empty())  // a row that would not fit one
    return Fail(Status::Unsupported, c.op.name, ": a dispatch reaches ", k->indexedReach,
                " bytes of ", indexed.field, " past its window (a row or block starting in it),",
                " which leaves no window in this device's binding range (", c.caps.maxRange,
                " bytes)");
  if (plan.rank == 0) {  // one element, with its index tuple, in each tensor's first window
    for (const Walked& w : walked)
      if (Windowed(c.caps, *w.tensor) && w.unit + w.extra > WindowBytes(c.caps))
        return TupleTooWide(c);
    LargeDispatch d;
    d.count = d.groups = 1;
    d.indices = FirstWindow(c.caps, indices);
    for (const Walked& w : walked) d.*w.span = FirstWindow(c.caps, *w.tensor);
    for (const Span& window : windows) {
      if (plan.tuple > 0) d.indexed = window;
      k->large.push_back(d);
    }
    return {};
  }
  UINT split = 0;
  UINT64 inner = 1, length = 1;
  Split(c.caps, plan, walked, std::min<UINT64>(maxCount, 0xFFFFFFFFu), &split, &inner, &length);
  if (split == plan.rank) return TupleTooWide(c);
  UINT64 outer = 1;
  for (UINT d = 0; d < split; ++d) outer *= plan.sizes[d];
  const UINT64 pieces = (plan.sizes[split] + length - 1) / length;
  const UINT64 total = outer * pieces * windows.size();
  if (total > kMaxLargeDispatches)
    return Fail(Status::Unsupported, c.op.name, ": its tensors' layout would take ", total,
                " dispatches through windows of this device's binding range (", c.caps.maxRange,
                " bytes); at most ", kMaxLargeDispatches);
  UINT start[VKDML_MAX_DIMS] = {};  // the outer coordinates, row-major, then the chunk's first
  for (UINT64 o = 0; o < outer; ++o) {
    for (UINT64 first = 0; first < plan.sizes[split]; first += length) {
      start[split] = UINT(first);
      AddChunk(c, plan, walked, windows, start, split,
               std::min<UINT64>(length, plan.sizes[split] - first), inner, k);
    }
    start[split] = 0;
    for (UINT d = split; d-- > 0;) {  // the next outer coordinates
      if (++start[d] < plan.sizes[d]) break;
      start[d] = 0;
    }
  }
  return {};
}

}  // namespace vkdml::detail
