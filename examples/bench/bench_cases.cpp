#include "bench_cases.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cinttypes>
#include <cmath>
#include <cstring>

namespace bench {

using vkdml::UINT;

// ------------------------------------------------------------------------------------------
// Cases

std::vector<uint32_t> Spec::Output() const {
  if (kind == OpKind::GatherQuantized || kind == OpKind::GatherBlockQuantized)
    return {indices[0], width};
  if (kind == OpKind::EmbeddingBag) return {static_cast<uint32_t>(Bags()), width};
  if (kind == OpKind::MoePermute) return {indices[0] * indices[1], input[1]};
  if (kind == OpKind::MoeUnpermute) return {indices[0], input[1]};
  if (kind == OpKind::Segment) return {segments, width};
  if (kind == OpKind::GatherElements) return indices;
  if (kind == OpKind::PagedGather) return {indices[0] * seqLen, input[2], input[3]};
  if (IsScatter()) return input;
  std::vector<uint32_t> out(indices.begin(), indices.end() - 1);
  out.insert(out.end(), input.begin() + indices.back(), input.end());
  return out;
}

const char* Spec::ReduceName() const {
  const char* names[] = {"none", "add", "mul", "max", "min", "mean"};
  return reduce <= vkdml::VKDML_REDUCE_FUNCTION_MEAN ? names[reduce] : "?";
}

const char* Spec::OpName() const {
  switch (kind) {
    case OpKind::GatherND:
      return "GatherND";
    case OpKind::GatherElements:
      return "GatherElements";
    case OpKind::ScatterND:
      return "ScatterND";
    case OpKind::ScatterElements:
      return "ScatterElements";
    case OpKind::GatherQuantized:
      return "GatherQuantizedRows";
    case OpKind::ScatterQuantized:
      return "ScatterQuantizedRows";
    case OpKind::EmbeddingBag:
      return "EmbeddingBag";
    case OpKind::GatherBlockQuantized:
      return "GatherBlockQuantized";
    case OpKind::MoePermute:
      return "MoePermute";
    case OpKind::MoeUnpermute:
      return "MoeUnpermute";
    case OpKind::PagedWrite:
      return "PagedCacheWrite";
    case OpKind::PagedGather:
      return "PagedGather";
    case OpKind::Segment:
      return "SegmentReduce";
  }
  return "?";
}

vkdml::DML_TENSOR_DATA_TYPE Spec::InputType() const {
  const bool table = kind == OpKind::GatherQuantized || kind == OpKind::ScatterQuantized ||
                     kind == OpKind::GatherBlockQuantized;
  return table ? vkdml::DML_TENSOR_DATA_TYPE_UINT8 : dtype;
}

vkdml::DML_TENSOR_DATA_TYPE Spec::OutputType() const {
  return kind == OpKind::ScatterQuantized ? vkdml::DML_TENSOR_DATA_TYPE_UINT8 : dtype;
}

std::string TypeName(vkdml::DML_TENSOR_DATA_TYPE t) {
  std::string name = vkdml::DataTypeName(t);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16, exponent = (h >> 10) & 0x1Fu,
                 mantissa = h & 0x3FFu;
  if (exponent == 0x1Fu) {
    const uint32_t bits = sign | 0x7F800000u | (mantissa << 13);
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  const float magnitude = exponent == 0 ? std::ldexp(float(mantissa), -24)
                                        : std::ldexp(float(mantissa | 0x400u), int(exponent) - 25);
  return sign ? -magnitude : magnitude;
}

uint32_t BlockBytes(vkdml::VKDML_QUANTIZED_FORMAT f) {
  return f == vkdml::VKDML_QUANTIZED_FORMAT_Q8_0 ? 34 : 18;
}

namespace {

Spec MakeSpec(const char* name, OpKind kind, vkdml::DML_TENSOR_DATA_TYPE dtype,
              vkdml::DML_TENSOR_DATA_TYPE itype, std::vector<uint32_t> input,
              std::vector<uint32_t> indices) {
  Spec s;
  s.name = name;
  s.kind = kind;
  s.dtype = dtype;
  s.itype = itype;
  s.input = std::move(input);
  s.indices = std::move(indices);
  return s;
}

}  // namespace

// Full sizes; `small` divides the big dimensions by 64 (8 for the square GatherElements and
// ScatterElements cases: 1/64 of the elements) so that all cases run in well under a minute on
// lavapipe.
std::vector<Spec> MakeSpecs(bool small) {
  const uint32_t rows = small ? 16384 : 1048576, picks = small ? 4096 : 262144;
  const uint32_t side = small ? 512 : 4096, tuples = small ? 16384 : 1048576;
  const uint32_t sq = small ? 1024 : 8192;
  const auto f32 = vkdml::DML_TENSOR_DATA_TYPE_FLOAT32, f16 = vkdml::DML_TENSOR_DATA_TYPE_FLOAT16;
  const auto i64 = vkdml::DML_TENSOR_DATA_TYPE_INT64, i32 = vkdml::DML_TENSOR_DATA_TYPE_INT32;
  std::vector<Spec> s;
  auto add = [&](Spec sp) { s.push_back(std::move(sp)); };
  Spec rowsF32 = MakeSpec("rows-f32", OpKind::GatherND, f32, i64, {rows, 256}, {picks, 1});
  rowsF32.peer = "torch.index_select(x, 0, i)";
  add(rowsF32);
  Spec rowsF16 = rowsF32;
  rowsF16.name = "rows-f16";
  rowsF16.dtype = f16;
  add(rowsF16);
  // rows-f16 from a float16 embedding table of 3 x 2^30 elements, 6 GiB, width 4096: past 4 GiB,
  // every GPU's binding range, so vkdml's large path (small: 192 MiB, past lavapipe's 128 MiB).
  Spec rows6 = MakeSpec("rows-f16-6gib", OpKind::GatherND, f16, i64,
                        {small ? 24576u : 786432u, 4096}, {small ? 4096u : 262144u, 1});
  rows6.peer = "torch.index_select(x, 0, i)";
  add(rows6);
  Spec tup = MakeSpec("tuples-f32", OpKind::GatherND, f32, i64, {side, side, 16}, {tuples, 2});
  tup.peer = "x[i0, i1]";
  add(tup);
  Spec el1 = MakeSpec("elements-axis1-f32", OpKind::GatherElements, f32, i64, {sq, sq}, {sq, sq});
  el1.axis = 1;
  el1.peer = "torch.gather(x, 1, i)";
  add(el1);
  Spec el0 = el1;
  el0.name = "elements-axis0-f32";
  el0.axis = 0;
  el0.peer = "torch.gather(x, 0, i)";
  add(el0);
  Spec el1i = el1;
  el1i.name = "elements-axis1-i32idx";
  el1i.itype = i32;
  add(el1i);
  // float16 elements one at a time: a device without 16-bit storage moves them in 32-bit words.
  Spec el1h = el1;
  el1h.name = "elements-axis1-f16";
  el1h.dtype = f16;
  add(el1h);
  Spec sc = MakeSpec("scatter-rows-f32", OpKind::ScatterND, f32, i64, {rows, 256}, {picks, 1});
  sc.updates = {picks, 256};
  sc.uniqueRows = true;
  sc.peer = "x.clone().index_copy_(0, i, u)";
  add(sc);
  Spec sci = sc;
  sci.name = "scatter-rows-inplace";
  sci.inPlace = true;
  sci.peer = "x.index_copy_(0, i, u)";
  add(sci);
  // ScatterElements along axis 1, in place, plain random indices: duplicate targets in a row.
  Spec sce =
      MakeSpec("scatter-elements-axis1-f32", OpKind::ScatterElements, f32, i64, {sq, sq}, {sq, sq});
  sce.updates = {sq, sq};
  sce.axis = 1;
  sce.inPlace = true;
  sce.peer = "x.scatter_(1, i, u)";
  add(sce);
  // Scatters with a reduction, in place, with random indices (duplicate targets), each again
  // deterministic.
  Spec sadd = MakeSpec("scatter-add-rows-f32", OpKind::ScatterND, f32, i64, {rows, 256}, {rows, 1});
  sadd.updates = {rows, 256};
  sadd.inPlace = true;
  sadd.reduce = vkdml::VKDML_REDUCE_FUNCTION_ADD;
  sadd.peer = "x.index_add_(0, i, u)";
  Spec seadd = sce;
  seadd.name = "scatter-elements-add-axis1-f32";
  seadd.reduce = vkdml::VKDML_REDUCE_FUNCTION_ADD;
  seadd.peer = "x.scatter_add_(1, i, u)";
  Spec semax = seadd;
  semax.name = "scatter-elements-amax-axis1-f32";
  semax.reduce = vkdml::VKDML_REDUCE_FUNCTION_MAX;
  semax.peer = "x.scatter_reduce_(1, i, u, \"amax\")";
  // float16 MAX: compare-and-swap on the 4-byte words that hold it; deterministic, the ties'
  // passes after it, as float32.
  Spec semaxh = semax;
  semaxh.name = "scatter-elements-amax-axis1-f16";
  semaxh.dtype = f16;
  // Diagnostic: MAX where every target an update reaches ends a zero taken from an update
  // (glsl/ties.glsl), so a deterministic execution's tie passes do all their work; the default
  // mode beside it. Not in place: in place, the second run would find the zeros there already.
  Spec ties = semax;
  ties.name = "scatter-elements-amax-ties";
  ties.ties = true;
  ties.inPlace = false;
  ties.diagnostic = true;
  // Diagnostic: float64 ADD, which a device without shaderFloat64 computes in integer
  // arithmetic (glsl/soft_float64.glsl).
  Spec seadd64 = seadd;
  seadd64.name = "scatter-elements-add-axis1-f64";
  seadd64.dtype = vkdml::DML_TENSOR_DATA_TYPE_FLOAT64;
  seadd64.diagnostic = true;
  // Diagnostics, added last: the out-of-range modes beside their clamp cases (issue 28: within 5%
  // of the clamp), FILL on the gathers, DROP on the scatters, indices in range.
  std::vector<Spec> outOfRange;
  for (Spec c : {rowsF32, el1, sce, sadd, seadd}) {
    const bool gather = !c.IsScatter();
    c.name += gather ? "-fill" : "-drop";
    c.outOfRange =
        gather ? vkdml::VKDML_OUT_OF_RANGE_MODE_FILL : vkdml::VKDML_OUT_OF_RANGE_MODE_DROP;
    c.diagnostic = true;
    outOfRange.push_back(c);
  }
  // Diagnostics: MEAN beside ADD on the same shapes (issue 28: within 1.2x of ADD), each again
  // deterministic: ADD's kernels, then the count and the division.
  Spec smean = sadd;
  smean.name = "scatter-mean-rows-f32";
  smean.reduce = vkdml::VKDML_REDUCE_FUNCTION_MEAN;
  smean.peer = "x.index_reduce_(0, i, u, \"mean\")";
  smean.diagnostic = true;
  Spec semean = seadd;
  semean.name = "scatter-elements-mean-axis1-f32";
  semean.reduce = vkdml::VKDML_REDUCE_FUNCTION_MEAN;
  semean.peer = "x.scatter_reduce_(1, i, u, \"mean\")";
  semean.diagnostic = true;
  for (Spec* r : {&sadd, &seadd, &semax, &semaxh, &ties, &seadd64, &smean, &semean}) {
    add(*r);
    r->name += "-det";
    r->deterministic = true;
    r->peer += " (torch.use_deterministic_algorithms(True))";
    add(*r);
  }
  // vkdml's own operators (issue 27). Rows of a 32000 x 4096 table in ggml's Q4_0 and Q8_0
  // blocks, 8192 of them gathered to float32, and 8192 float32 rows quantized into the Q8_0 one
  // in place (unique rows: ggml's set_rows into a KV cache).
  const uint32_t vocab = small ? 500 : 32000, qpicks = small ? 128 : 8192, qwidth = 4096;
  auto quantized = [&](const char* name, OpKind kind, vkdml::VKDML_QUANTIZED_FORMAT f) {
    Spec q = MakeSpec(name, kind, f32, i64, {vocab, qwidth / 32 * BlockBytes(f)}, {qpicks, 1});
    q.format = f;
    q.width = qwidth;
    return q;
  };
  Spec q4 = quantized("q4_0-rows", OpKind::GatherQuantized, vkdml::VKDML_QUANTIZED_FORMAT_Q4_0);
  q4.peer = "x.index_select(0, i), unpacked and scaled";
  add(q4);
  Spec q8 = quantized("q8_0-rows", OpKind::GatherQuantized, vkdml::VKDML_QUANTIZED_FORMAT_Q8_0);
  q8.peer = q4.peer;
  add(q8);
  Spec q8s =
      quantized("q8_0-quantize-rows", OpKind::ScatterQuantized, vkdml::VKDML_QUANTIZED_FORMAT_Q8_0);
  q8s.updates = {qpicks, qwidth};
  q8s.uniqueRows = true;
  q8s.inPlace = true;
  q8s.peer = "x.index_copy_(0, i, u quantized and packed)";
  add(q8s);
  // ONNX Runtime's GatherBlockQuantized on that vocabulary: uint8 data with bits 4 (two values a
  // byte), a float16 scale and a 4-bit zero point per block of 32, float16 out.
  Spec gbq = MakeSpec("gbq-uint4-rows", OpKind::GatherBlockQuantized, f16, i64, {vocab, qwidth / 2},
                      {qpicks});
  gbq.width = qwidth;
  gbq.blockSize = 32;
  gbq.peer = "x.index_select(0, i), unpacked, minus zero points, scaled";
  add(gbq);
  // Embedding bags over a 1,000,000 x 128 float32 table, 65,536 bags of 20 random rows: sum
  // and mean, each again deterministic (the same kernels: vkdml's bags are always in order).
  const uint32_t bagRows = small ? 15625 : 1000000, bags = small ? 1024 : 65536;
  Spec bagSum =
      MakeSpec("bag-sum-f32", OpKind::EmbeddingBag, f32, i64, {bagRows, 128}, {bags * 20});
  bagSum.width = 128;
  bagSum.bagSize = 20;
  bagSum.peer = "F.embedding_bag(i, x, offsets, mode=\"sum\")";
  Spec bagMean = bagSum;
  bagMean.name = "bag-mean-f32";
  bagMean.bagMode = vkdml::VKDML_EMBEDDING_BAG_MODE_MEAN;
  bagMean.peer = "F.embedding_bag(i, x, offsets, mode=\"mean\")";
  for (Spec* r : {&bagSum, &bagMean}) {
    add(*r);
    r->name += "-det";
    r->deterministic = true;
    r->peer += " (torch.use_deterministic_algorithms(True))";
    add(*r);
  }
  // MoE routing (issue 51): 8192 tokens of 4096 float16 values, top-8 of 64 experts (small:
  // 1024 tokens of 512); the permute's rows and indices, then the weighted sum back.
  const uint32_t moeTokens = small ? 1024 : 8192, moeWidth = small ? 512 : 4096, topk = 8;
  Spec moeP = MakeSpec("moe-permute-f16", OpKind::MoePermute, f16, i32, {moeTokens, moeWidth},
                       {moeTokens, topk});
  moeP.experts = 64;
  moeP.peer = "torch.argsort(ids.view(-1), stable=True), x[perm // k], bincount, inverse";
  add(moeP);
  Spec moeU = MakeSpec("moe-unpermute-f16", OpKind::MoeUnpermute, f16, i32,
                       {moeTokens * topk, moeWidth}, {moeTokens, topk});
  moeU.updates = {moeTokens, topk};
  moeU.experts = 64;
  moeU.peer = "torch.zeros(t, w).index_add_(0, token, w.view(-1, 1) * y[inv.view(-1)])";
  add(moeU);
  // The paged KV cache (issue 51): a decode step's write of 256 tokens x 8 heads x 128 float16
  // values into a 4096-block x 16-token cache, in place (unique slots), and the gather of 64
  // sequences of 2048 tokens through a block table (vLLM's int32) that permutes the blocks.
  const uint32_t cacheBlocks = small ? 256 : 4096, wtokens = small ? 64 : 256;
  Spec pcw = MakeSpec("paged-cache-write-f16", OpKind::PagedWrite, f16, i64,
                      {cacheBlocks, 16, 8, 128}, {wtokens});
  pcw.updates = {wtokens, 8, 128};
  pcw.inPlace = true;
  pcw.peer = "k_cache.view(-1, 8, 128).index_copy_(0, slot_mapping, k)";
  add(pcw);
  const uint32_t seqs = small ? 8 : 64, seqLen = small ? 256 : 2048;
  Spec pg =
      MakeSpec("paged-gather-f16", OpKind::PagedGather, f16, vkdml::DML_TENSOR_DATA_TYPE_INT32,
               {seqs * seqLen / 16, 16, 8, 128}, {seqs, seqLen / 16});
  pg.seqLen = seqLen;
  pg.peer = "k_cache.index_select(0, block_table.flatten()).view(-1, 8, 128)";
  add(pg);
  // Segment reductions (GNN message passing): 1M rows x 128 float32 into 65,536 segments of 1
  // to 31 rows (16 on average), sum and max, as offsets (CSR) and as sorted ids (COO); and the
  // CSR sum and max with power-law lengths (4 segments of 131,072 rows): no serial tail.
  const uint32_t segs = small ? 1024 : 65536;
  for (bool coo : {false, true})
    for (bool powerLaw : {false, true}) {
      if (coo && powerLaw) continue;
      for (auto f :
           {vkdml::VKDML_SEGMENT_REDUCE_FUNCTION_SUM, vkdml::VKDML_SEGMENT_REDUCE_FUNCTION_MAX}) {
        const bool sum = f == vkdml::VKDML_SEGMENT_REDUCE_FUNCTION_SUM;
        uint32_t n = 0;
        for (uint32_t l : SegmentLengths(segs, powerLaw)) n += l;
        const std::string name = std::string(coo ? "segment-coo-" : "segment-csr-") +
                                 (sum ? "sum" : "max") + "-f32" + (powerLaw ? "-powerlaw" : "");
        Spec g = MakeSpec("", OpKind::Segment, f32, i64, {n, 128}, {coo ? n : segs + 1, 1});
        g.name = name;
        g.width = 128;
        g.segments = segs;
        g.segmentReduce = f;
        g.sortedIds = coo;
        g.powerLaw = powerLaw;
        g.peer = coo ? Format(
                           "torch.zeros(S, 128).scatter_reduce_(0, i, x, \"%s\", "
                           "include_self=False)",
                           sum ? "sum" : "amax")
                     : Format("torch.segment_reduce(x, \"%s\", offsets=o)", sum ? "sum" : "max");
        add(g);
      }
    }
  Spec lat = MakeSpec("latency", OpKind::GatherElements, f32, i64, {64, 64}, {64, 64});
  lat.axis = 1;
  lat.latency = true;
  lat.peer = "torch.gather(x, 1, i) + torch.cuda.synchronize()";
  add(lat);

  // Diagnostics (run with --case NAME). elements-axis0 with 64 input rows: the same kernel and
  // access pattern, but the rows a stripe reads fit in an SM's L1 instead of L2.
  Spec el0l1 = el0;
  el0l1.name = "elements-axis0-64rows";
  el0l1.input = {64, sq};
  el0l1.diagnostic = true;
  add(el0l1);
  // elements-axis0 with rows 8224 elements apart instead of 8192: the same walk, but the rows a
  // stripe reads no longer lie a power of two (32 KiB) apart in memory.
  Spec el0p = el0;
  el0p.name = "elements-axis0-pitch8224";
  el0p.input = {sq, sq + 32};
  el0p.indices = {sq, sq + 32};
  el0p.diagnostic = true;
  add(el0p);
  // tuples-f32 over a 4 MiB input that stays in L2: what is left without random DRAM reads.
  Spec tupL2 = tup;
  tupL2.name = "tuples-f32-4mib";
  tupL2.input = {256, 256, 16};
  tupL2.diagnostic = true;
  add(tupL2);
  for (Spec& c : outOfRange) add(c);
  return s;
}

OpDesc::OpDesc(const Spec& s) {
  std::vector<uint32_t> out = s.Output();
  size_t d = std::max({s.input.size(), s.indices.size(), out.size(), s.updates.size()});
  // The paged cache's tensors keep their own ranks (dml.h fixes them); the others right-align.
  const bool ownRanks = s.kind == OpKind::PagedWrite || s.kind == OpKind::PagedGather;
  auto set = [d, ownRanks](Tensor& t, vkdml::DML_TENSOR_DATA_TYPE type,
                           const std::vector<uint32_t>& a) {
    t.sizes.assign(ownRanks ? 0 : d - a.size(), 1u);
    t.sizes.insert(t.sizes.end(), a.begin(), a.end());
    const UINT dims = static_cast<UINT>(t.sizes.size());
    t.buffer.DataType = type;
    t.buffer.Flags = vkdml::DML_TENSOR_FLAG_NONE;
    t.buffer.DimensionCount = dims;
    t.buffer.Sizes = t.sizes.data();
    t.buffer.Strides = nullptr;
    t.buffer.TotalTensorSizeInBytes =
        vkdml::CalcBufferTensorSize(type, dims, t.sizes.data(), nullptr);
    t.buffer.GuaranteedBaseOffsetAlignment = 0;
    t.desc = {vkdml::DML_TENSOR_TYPE_BUFFER, &t.buffer};
  };
  set(input, s.InputType(), s.input);
  set(indices, s.itype, s.indices);
  set(output, s.OutputType(), out);
  switch (s.kind) {
    case OpKind::GatherQuantized:
      gqr = {&input.desc, &indices.desc, &output.desc, s.format};
      op = {vkdml::VKDML_OPERATOR_GATHER_QUANTIZED_ROWS, &gqr};
      break;
    case OpKind::ScatterQuantized:
      set(updates, s.dtype, s.updates);
      sqr = {&input.desc, &indices.desc, &updates.desc, &output.desc, s.format};
      op = {vkdml::VKDML_OPERATOR_SCATTER_QUANTIZED_ROWS, &sqr};
      break;
    case OpKind::EmbeddingBag:
      set(offsets, s.itype, {static_cast<uint32_t>(s.Bags())});
      bag = {&input.desc,
             &indices.desc,
             &offsets.desc,
             nullptr,
             &output.desc,
             s.bagMode,
             vkdml::VKDML_QUANTIZED_FORMAT(0),
             false,
             false,
             0};
      op = {vkdml::VKDML_OPERATOR_EMBEDDING_BAG, &bag};
      break;
    case OpKind::GatherBlockQuantized:
      set(scales, s.dtype, {s.input[0], s.width / s.blockSize});
      set(zeros, vkdml::DML_TENSOR_DATA_TYPE_UINT8, {s.input[0], s.width / s.blockSize / 2});
      gbq = {&input.desc,
             &indices.desc,
             &scales.desc,
             &zeros.desc,
             &output.desc,
             vkdml::VKDML_BLOCK_QUANTIZED_TYPE_UINT8_BITS4,
             static_cast<UINT>(d - 2),
             1,
             static_cast<UINT>(d - 1),
             s.blockSize,
             nullptr};
      op = {vkdml::VKDML_OPERATOR_GATHER_BLOCK_QUANTIZED, &gbq};
      break;
    case OpKind::MoePermute: {
      const uint32_t n = s.indices[0] * s.indices[1];
      set(moeOffsets, vkdml::DML_TENSOR_DATA_TYPE_INT32, {s.experts + 1});
      set(moePerm, vkdml::DML_TENSOR_DATA_TYPE_INT32, {n});
      set(moeInv, vkdml::DML_TENSOR_DATA_TYPE_INT32, s.indices);
      mp = {&input.desc,   &indices.desc, &output.desc, &moeOffsets.desc,
            &moePerm.desc, &moeInv.desc,  s.experts};
      op = {vkdml::VKDML_OPERATOR_MOE_PERMUTE, &mp};
      break;
    }
    case OpKind::MoeUnpermute:
      set(updates, s.dtype, s.updates);
      mu = {&input.desc, &indices.desc, &updates.desc, &output.desc};
      op = {vkdml::VKDML_OPERATOR_MOE_UNPERMUTE, &mu};
      break;
    case OpKind::PagedWrite:
      set(updates, s.dtype, s.updates);
      pcw = {&input.desc,
             &indices.desc,
             &updates.desc,
             &output.desc,
             vkdml::VKDML_PAGED_CACHE_LAYOUT_NHD,
             vkdml::VKDML_QUANTIZED_FORMAT(0)};
      op = {vkdml::VKDML_OPERATOR_PAGED_CACHE_WRITE, &pcw};
      break;
    case OpKind::PagedGather:
      set(offsets, s.itype, {s.indices[0] + 1});
      pg = {&input.desc,
            &indices.desc,
            &offsets.desc,
            nullptr,
            &output.desc,
            vkdml::VKDML_PAGED_CACHE_LAYOUT_NHD,
            vkdml::VKDML_QUANTIZED_FORMAT(0)};
      op = {vkdml::VKDML_OPERATOR_PAGED_GATHER, &pg};
      break;
    case OpKind::Segment:
      seg = {&input.desc,
             &indices.desc,
             &output.desc,
             static_cast<UINT>(d - 2),
             s.segmentReduce,
             s.sortedIds,
             vkdml::VKDML_SEGMENT_EMPTY_SCATTER,
             {}};
      op = {vkdml::VKDML_OPERATOR_SEGMENT_REDUCE, &seg};
      break;
    case OpKind::GatherND:
      gnd = {&input.desc, &indices.desc, &output.desc, static_cast<UINT>(s.input.size()),
             static_cast<UINT>(s.indices.size())};
      op = {vkdml::DML_OPERATOR_GATHER_ND, &gnd};
      break;
    case OpKind::GatherElements:
      ge = {&input.desc, &indices.desc, &output.desc,
            static_cast<UINT>(s.axis + static_cast<int>(d - s.input.size()))};
      op = {vkdml::DML_OPERATOR_GATHER_ELEMENTS, &ge};
      break;
    case OpKind::ScatterND:
      set(updates, s.dtype, s.updates);
      snd = {&input.desc,
             &indices.desc,
             &updates.desc,
             &output.desc,
             static_cast<UINT>(s.input.size()),
             static_cast<UINT>(s.indices.size())};
      op = {vkdml::DML_OPERATOR_SCATTER_ND, &snd};
      if (s.reduce) {
        sndr = {
            snd.InputTensor,         snd.IndicesTensor,         snd.UpdatesTensor, snd.OutputTensor,
            snd.InputDimensionCount, snd.IndicesDimensionCount, s.reduce,          0};
        op = {vkdml::VKDML_OPERATOR_SCATTER_ND_REDUCE, &sndr};
      }
      break;
    case OpKind::ScatterElements:
      set(updates, s.dtype, s.updates);
      se = {&input.desc, &indices.desc, &updates.desc, &output.desc,
            static_cast<UINT>(s.axis + static_cast<int>(d - s.input.size()))};
      op = {vkdml::DML_OPERATOR_SCATTER_ELEMENTS, &se};
      if (s.reduce) {
        ser = {se.InputTensor,
               se.IndicesTensor,
               se.UpdatesTensor,
               se.OutputTensor,
               se.Axis,
               s.reduce,
               0};
        op = {vkdml::VKDML_OPERATOR_SCATTER_ELEMENTS_REDUCE, &ser};
      }
      break;
  }
  if (s.outOfRange != vkdml::VKDML_OUT_OF_RANGE_MODE_CLAMP) {
    inner = op;
    outOfRange = {&inner, s.outOfRange, {}};
    op = {vkdml::VKDML_OPERATOR_OUT_OF_RANGE, &outOfRange};
  }
}

// ------------------------------------------------------------------------------------------
// Host data

namespace {

constexpr size_t kChunk = size_t(1) << 20;  // elements per generator chunk

// A float16 in +-[1, 2) from random bits.
uint16_t RandomHalf(uint64_t r) {
  return static_cast<uint16_t>(0x3C00u | (r & 0x3FFu) | ((r >> 63) << 15));
}

}  // namespace

// float32 (float64 where elemSize is 8) integers in +-[1, 4]: sums of them are exact whatever
// the order of the additions, so a reduction's output can be checked bit for bit without knowing
// the order.
void FillIntegers(Bytes& b, size_t elemSize, uint64_t seed) {
  size_t count = b.n / elemSize;
  ParallelFor((count + kChunk - 1) / kChunk, [&](size_t c) {
    Rng rng(seed ^ (c * 0x51ED2705ull));
    size_t begin = c * kChunk, end = std::min(count, begin + kChunk);
    for (size_t i = begin; i < end; ++i) {
      uint64_t r = rng.Next();
      double v = static_cast<double>(1 + (r & 3)) * (r >> 63 ? -1.0 : 1.0);
      float f = static_cast<float>(v);
      std::memcpy(b.data() + i * elemSize, elemSize == 8 ? static_cast<void*>(&v) : &f, elemSize);
    }
  });
}

// float32 in +-[1, 2), float16 in +-[1, 2), other types any non-zero bit pattern. The kernels
// move bits, so every value is exact on both sides.
void FillData(Bytes& b, size_t elemSize, uint64_t seed) {
  size_t count = b.n / elemSize;
  ParallelFor((count + kChunk - 1) / kChunk, [&](size_t c) {
    Rng rng(seed ^ (c * 0x51ED2705ull));
    size_t begin = c * kChunk, end = std::min(count, begin + kChunk);
    for (size_t i = begin; i < end; ++i) {
      uint64_t r = rng.Next();
      if (elemSize == 4) {
        uint32_t v = 0x3F800000u | static_cast<uint32_t>(r & 0x7FFFFFu) |
                     static_cast<uint32_t>(r >> 63) << 31;
        std::memcpy(b.data() + i * 4, &v, 4);
      } else if (elemSize == 2) {
        const uint16_t v = RandomHalf(r);
        std::memcpy(b.data() + i * 2, &v, 2);
      } else {
        r |= 1;
        std::memcpy(b.data() + i * elemSize, &r, elemSize);
      }
    }
  });
}

namespace {

// A quantized table: random quants, each block's float16 scale in +-[1, 2) (finite: an infinite
// or NaN one gives NaN bits the operators leave unspecified).
void FillTable(Bytes& b, vkdml::VKDML_QUANTIZED_FORMAT f, uint64_t seed) {
  Rng rng(seed);
  for (size_t at = 0; at < b.n; at += 8) {
    const uint64_t r = rng.Next();
    std::memcpy(b.data() + at, &r, std::min<size_t>(8, b.n - at));
  }
  for (size_t at = 0; at + 2 <= b.n; at += BlockBytes(f)) {
    const uint16_t d = RandomHalf(rng.Next());
    std::memcpy(b.data() + at, &d, 2);
  }
}

bool IsSigned(vkdml::DML_TENSOR_DATA_TYPE t) {
  return t == vkdml::DML_TENSOR_DATA_TYPE_INT32 || t == vkdml::DML_TENSOR_DATA_TYPE_INT64;
}

void StoreIndex(uint8_t* p, size_t size, int64_t v) {
  if (size == 8) {
    std::memcpy(p, &v, 8);
  } else {
    int32_t w = static_cast<int32_t>(v);
    std::memcpy(p, &w, 4);
  }
}

}  // namespace

uint64_t LoadIndex(const uint8_t* base, vkdml::DML_TENSOR_DATA_TYPE t, uint64_t pos, uint64_t n) {
  size_t size = vkdml::DataTypeSize(t);
  const uint8_t* p = base + pos * size;
  if (IsSigned(t)) {
    int64_t v;
    if (size == 8) {
      std::memcpy(&v, p, 8);
    } else {
      int32_t w;
      std::memcpy(&w, p, 4);
      v = w;
    }
    int64_t sn = static_cast<int64_t>(n);
    v = std::min(std::max(v, -sn), sn - 1);
    return static_cast<uint64_t>(v < 0 ? v + sn : v);
  }
  uint64_t v = 0;
  std::memcpy(&v, p, size);
  return std::min(v, n - 1);
}

namespace {

// Random indices: component j of each k-tuple in [0, ranges[j]).
void FillIndices(Bytes& b, vkdml::DML_TENSOR_DATA_TYPE t, const std::vector<uint32_t>& ranges,
                 uint64_t seed) {
  size_t size = vkdml::DataTypeSize(t), k = ranges.size();
  size_t count = b.n / size;
  ParallelFor((count + kChunk - 1) / kChunk, [&](size_t c) {
    Rng rng(seed ^ (c * 0x2545F491ull));
    size_t begin = c * kChunk, end = std::min(count, begin + kChunk);
    for (size_t i = begin; i < end; ++i)
      StoreIndex(b.data() + i * size, size, static_cast<int64_t>(rng.Below(ranges[i % k])));
  });
}

// The first `count` entries of a random permutation of [0, n): unique row indices.
void FillUniqueIndices(Bytes& b, vkdml::DML_TENSOR_DATA_TYPE t, uint32_t n, uint64_t seed) {
  size_t size = vkdml::DataTypeSize(t), count = b.n / size;
  std::vector<uint32_t> perm(n);
  for (uint32_t i = 0; i < n; ++i) perm[i] = i;
  Rng rng(seed);
  for (size_t i = 0; i < count; ++i) {
    size_t j = i + rng.Below(n - i);
    std::swap(perm[i], perm[j]);
    StoreIndex(b.data() + i * size, size, perm[i]);
  }
}

// ScatterElements: how many distinct output elements the updates target (a duplicate target
// counts once). Each line along the axis (outer, inner) is independent.
uint64_t CountTargets(const Spec& s, const HostData& h) {
  const size_t axis = static_cast<size_t>(s.axis);
  const uint64_t outer = Product(s.input, 0, axis), inner = Product(s.input, axis + 1);
  const uint64_t n = s.input[axis], m = s.indices[axis];
  std::atomic<uint64_t> total{0};
  ParallelFor(static_cast<size_t>(outer), [&](size_t o) {
    std::vector<uint8_t> hit(static_cast<size_t>(n * inner), 0);
    uint64_t count = 0;
    for (uint64_t j = 0; j < m; ++j)
      for (uint64_t in = 0; in < inner; ++in) {
        uint64_t u = (o * m + j) * inner + in;
        uint64_t t = LoadIndex(h.indices.data(), s.itype, u, n) * inner + in;
        count += hit[t] ? 0 : 1;
        hit[t] = 1;
      }
    total += count;
  });
  return total;
}

}  // namespace

void MakeHostData(const Spec& s, const OpDesc& d, HostData* h, uint64_t seed) {
  size_t es = vkdml::DataTypeSize(s.dtype);
  // ADD and MEAN sum small integers, exact in any order (the default mode's atomics).
  const bool integers =
      s.reduce == vkdml::VKDML_REDUCE_FUNCTION_ADD || s.reduce == vkdml::VKDML_REDUCE_FUNCTION_MEAN;
  h->input.Allocate(d.input.buffer.TotalTensorSizeInBytes);
  if (integers)
    FillIntegers(h->input, es, seed * 3 + 1);
  else if (s.format)  // (each row whole blocks: the blocks run on across rows)
    FillTable(h->input, s.format, seed * 3 + 1);
  else
    FillData(h->input, es, seed * 3 + 1);
  h->indices.Allocate(Product(s.indices) * vkdml::DataTypeSize(s.itype));
  if (s.kind == OpKind::GatherBlockQuantized) {  // random rows, scales and zero points
    FillIndices(h->indices, s.itype, {s.input[0]}, seed * 3 + 2);
    h->scales.Allocate(d.scales.buffer.TotalTensorSizeInBytes);
    FillData(h->scales, es, seed * 3 + 3);
    h->zeros.Allocate(d.zeros.buffer.TotalTensorSizeInBytes);
    FillData(h->zeros, 1, seed * 3 + 4);
  } else if (s.kind == OpKind::EmbeddingBag) {  // random rows; bags of bagSize entries
    FillIndices(h->indices, s.itype, {s.input[0]}, seed * 3 + 2);
    const size_t is = vkdml::DataTypeSize(s.itype);
    h->offsets.Allocate(d.offsets.buffer.TotalTensorSizeInBytes);
    for (uint64_t b = 0; b < s.Bags(); ++b)
      StoreIndex(h->offsets.data() + b * is, is, static_cast<int64_t>(b * s.bagSize));
  } else if (s.kind == OpKind::MoePermute || s.kind == OpKind::MoeUnpermute) {
    // Permute: each token's k distinct experts. Unpermute: the inverse of a random
    // permutation of the tokens' entries (each row of y read once); the weights in updates.
    Rng rng(seed * 3 + 2);
    const uint32_t tokens = s.indices[0], k = s.indices[1];
    std::vector<int32_t> ids(size_t(tokens) * k);
    if (s.kind == OpKind::MoePermute) {
      std::vector<int32_t> experts(s.experts);
      for (uint32_t e = 0; e < s.experts; ++e) experts[e] = int32_t(e);
      for (uint32_t t = 0; t < tokens; ++t)
        for (uint32_t j = 0; j < k; ++j) {  // a partial Fisher-Yates shuffle
          std::swap(experts[j], experts[j + rng.Below(s.experts - j)]);
          ids[size_t(t) * k + j] = experts[j];
        }
    } else {
      for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t(i);
      for (size_t i = ids.size(); i > 1; --i) std::swap(ids[i - 1], ids[rng.Below(i)]);
      h->updates.Allocate(d.updates.buffer.TotalTensorSizeInBytes);
      FillData(h->updates, es, seed * 3 + 3);
    }
    std::memcpy(h->indices.data(), ids.data(), ids.size() * 4);
  } else if (s.kind == OpKind::PagedWrite) {  // unique slots
    FillUniqueIndices(h->indices, s.itype, s.input[0] * s.input[1], seed * 3 + 2);
  } else if (s.kind == OpKind::PagedGather) {  // the blocks permuted; every sequence seqLen long
    FillUniqueIndices(h->indices, s.itype, s.input[0], seed * 3 + 2);
    const size_t is = vkdml::DataTypeSize(s.itype);
    h->offsets.Allocate(d.offsets.buffer.TotalTensorSizeInBytes);
    for (uint64_t b = 0; b <= s.indices[0]; ++b)
      StoreIndex(h->offsets.data() + b * is, is, static_cast<int64_t>(b * s.seqLen));
  } else if (s.kind == OpKind::Segment) {  // offsets (also kept for the check) or sorted ids
    const std::vector<uint32_t> lengths = SegmentLengths(s.segments, s.powerLaw);
    h->offsets.Allocate((lengths.size() + 1) * 8);
    int64_t at = 0;
    StoreIndex(h->offsets.data(), 8, 0);
    for (size_t k = 0; k < lengths.size(); ++k) {
      if (s.sortedIds)
        for (uint32_t r = 0; r < lengths[k]; ++r)
          StoreIndex(h->indices.data() + (at + r) * 8, 8, static_cast<int64_t>(k));
      at += lengths[k];
      StoreIndex(h->offsets.data() + (k + 1) * 8, 8, at);
    }
    if (!s.sortedIds) std::memcpy(h->indices.data(), h->offsets.data(), h->offsets.n);
  } else if (s.uniqueRows) {
    FillUniqueIndices(h->indices, s.itype, s.input[0], seed * 3 + 2);
  } else if (s.kind == OpKind::GatherElements || s.kind == OpKind::ScatterElements) {
    // Plain random along the axis: for ScatterElements, duplicate targets within a line.
    FillIndices(h->indices, s.itype, {s.input[static_cast<size_t>(s.axis)]}, seed * 3 + 2);
  } else {
    std::vector<uint32_t> ranges(s.input.begin(), s.input.begin() + s.indices.back());
    FillIndices(h->indices, s.itype, ranges, seed * 3 + 2);
  }
  if (s.IsScatter()) {
    h->updates.Allocate(d.updates.buffer.TotalTensorSizeInBytes);
    if (integers)
      FillIntegers(h->updates, es, seed * 3 + 3);
    else
      FillData(h->updates, es, seed * 3 + 3);
  }
  if (s.ties) {  // float32: negative inputs, updates of +0 and -0
    for (size_t i = 0; i < h->input.n / 4; ++i) h->input.data()[i * 4 + 3] |= 0x80;
    for (size_t i = 0; i < h->updates.n / 4; ++i) {
      const uint8_t sign = h->updates.data()[i * 4 + 3] & 0x80;
      std::memset(h->updates.data() + i * 4, 0, 4);
      h->updates.data()[i * 4 + 3] = sign;
    }
  }
  if (s.kind == OpKind::ScatterElements) h->targets = CountTargets(s, *h);
  if (s.kind == OpKind::ScatterND && s.reduce) {  // distinct rows, times a row's elements
    std::vector<uint8_t> hit(s.input[0], 0);
    for (uint64_t i = 0; i < s.indices[0]; ++i)
      h->targets += hit[LoadIndex(h->indices.data(), s.itype, i, s.input[0])]++ ? 0 : 1;
    h->targets *= Product(s.input, 1);
  }
}

// ------------------------------------------------------------------------------------------
// CPU reference

namespace {

// Where output element o comes from: an input element or an updates element; for
// ScatterElements with duplicate targets, any one of the updates that target it.
struct Reference {
  const Spec& s;
  const HostData& h;
  uint64_t k = 0, slice = 1;
  std::vector<int64_t> owner;        // ScatterND: input slice -> update row
  std::vector<uint32_t> head, next;  // ScatterND with a reduction: each slice's rows, in order
  uint64_t axisN = 1, axisM = 1, axisInner = 1;  // ScatterElements: output and updates

  Reference(const Spec& spec, const HostData& host) : s(spec), h(host) {
    if (s.kind == OpKind::GatherElements) return;
    if (s.kind == OpKind::ScatterElements) {
      size_t axis = static_cast<size_t>(s.axis);
      axisN = s.input[axis];
      axisM = s.indices[axis];
      axisInner = Product(s.input, axis + 1);
      return;
    }
    k = s.indices.back();
    slice = Product(s.input, k);
    if (s.kind == OpKind::ScatterND) {
      owner.assign(Product(s.input, 0, k), -1);
      uint64_t rows = Product(s.indices, 0, s.indices.size() - 1);
      for (uint64_t i = 0; i < rows; ++i) owner[TupleSlot(i)] = static_cast<int64_t>(i);
      if (s.reduce) {
        head.assign(owner.size(), UINT32_MAX);
        next.assign(rows, UINT32_MAX);
        for (uint64_t i = rows; i-- > 0;) {
          next[i] = head[TupleSlot(i)];
          head[TupleSlot(i)] = static_cast<uint32_t>(i);
        }
      }
    }
  }
  // A reduction's output element o (float32 or float64, as the bench's reduction cases are): the
  // input folded with each update that targets it, in IndicesTensor's order, NumPy's way; its
  // bits.
  uint64_t Folded(uint64_t o) const {
    uint64_t bits = 0;
    if (vkdml::DataTypeSize(s.dtype) == 2) return FoldHalfMax(o);
    if (vkdml::DataTypeSize(s.dtype) == 8) {
      const double v = Fold<double>(o);
      std::memcpy(&bits, &v, 8);
    } else {
      const float v = Fold<float>(o);
      std::memcpy(&bits, &v, 4);
    }
    return bits;
  }
  // float16 MAX (the only 2-byte reduction case): compared as floats, the bits kept.
  uint16_t FoldHalfMax(uint64_t o) const {
    uint16_t v, u;
    std::memcpy(&v, h.input.data() + o * 2, 2);
    auto fold = [&](const uint8_t* update) {
      std::memcpy(&u, update, 2);
      const float fv = HalfToFloat(v), fu = HalfToFloat(u);
      v = std::isnan(fv) || fv >= fu ? v : u;
    };
    if (s.kind == OpKind::ScatterND) {
      for (uint32_t r = head[o / slice]; r != UINT32_MAX; r = next[r])
        fold(h.updates.data() + (r * slice + o % slice) * 2);
      return v;
    }
    for (uint64_t e : UpdatesOf(o)) fold(h.updates.data() + e * 2);
    return v;
  }
  // ScatterElements: the update elements aimed at output element o, in order.
  std::vector<uint64_t> UpdatesOf(uint64_t o) const {
    const uint64_t n = axisN, m = axisM, inner = axisInner;
    uint64_t outer = o / (n * inner), c = (o / inner) % n, in = o % inner;
    std::vector<uint64_t> found;
    for (uint64_t j = 0; j < m; ++j) {
      uint64_t e = (outer * m + j) * inner + in;
      if (LoadIndex(h.indices.data(), s.itype, e, n) == c) found.push_back(e);
    }
    return found;
  }
  template <typename T>
  T Fold(uint64_t o) const {
    constexpr size_t es = sizeof(T);
    T v, u;
    std::memcpy(&v, h.input.data() + o * es, es);
    const bool mean = s.reduce == vkdml::VKDML_REDUCE_FUNCTION_MEAN;
    uint64_t n = 1;  // the values folded
    auto fold = [&](const uint8_t* update) {
      std::memcpy(&u, update, es);
      if (s.reduce == vkdml::VKDML_REDUCE_FUNCTION_ADD || mean) v = v + u;
      if (s.reduce == vkdml::VKDML_REDUCE_FUNCTION_MAX) v = std::isnan(v) || v >= u ? v : u;
      ++n;
    };
    if (s.kind == OpKind::ScatterND) {
      for (uint32_t r = head[o / slice]; r != UINT32_MAX; r = next[r])
        fold(h.updates.data() + (r * slice + o % slice) * es);
    } else {
      for (uint64_t e : UpdatesOf(o)) fold(h.updates.data() + e * es);
    }
    // MEAN: one division, correctly rounded (in double: exact for float32 with these counts).
    return mean && n > 1 ? T(double(v) / double(n)) : v;
  }
  uint64_t TupleSlot(uint64_t i) const {
    uint64_t off = 0;
    for (uint64_t j = 0; j < k; ++j)
      off = off * s.input[j] + LoadIndex(h.indices.data(), s.itype, i * k + j, s.input[j]);
    return off;
  }
  // ScatterElements: the output element that updates element u targets.
  uint64_t Target(uint64_t u) const {
    const uint64_t n = axisN, m = axisM, inner = axisInner;
    uint64_t outer = u / (m * inner), in = u % inner;
    return (outer * n + LoadIndex(h.indices.data(), s.itype, u, n)) * inner + in;
  }
  // The values output element o may hold: one, except for ScatterElements, where it is each
  // update targeting o (one of them wins) or, when none does, the input element.
  void Allowed(uint64_t o, std::vector<const uint8_t*>* want) const {
    want->clear();
    if (s.kind != OpKind::ScatterElements) {
      want->push_back(Expected(o));
      return;
    }
    size_t es = vkdml::DataTypeSize(s.dtype);
    const uint64_t n = axisN, m = axisM, inner = axisInner;
    uint64_t outer = o / (n * inner), c = (o / inner) % n, in = o % inner;
    for (uint64_t j = 0; j < m; ++j) {
      uint64_t u = (outer * m + j) * inner + in;
      if (LoadIndex(h.indices.data(), s.itype, u, n) == c)
        want->push_back(h.updates.data() + u * es);
    }
    if (want->empty()) want->push_back(h.input.data() + o * es);
  }
  const uint8_t* Expected(uint64_t o) const {
    size_t es = vkdml::DataTypeSize(s.dtype);
    switch (s.kind) {
      case OpKind::GatherND:
        return h.input.data() + (TupleSlot(o / slice) * slice + o % slice) * es;
      case OpKind::GatherElements: {
        // Output shape == indices shape; replace the axis coordinate with the index.
        size_t axis = static_cast<size_t>(s.axis);
        uint64_t inner = Product(s.indices, axis + 1);
        uint64_t outer = o / (inner * s.indices[axis]);
        uint64_t in = o % inner;
        uint64_t idx = LoadIndex(h.indices.data(), s.itype, o, s.input[axis]);
        uint64_t src = (outer * s.input[axis] + idx) * Product(s.input, axis + 1) + in;
        return h.input.data() + src * es;
      }
      case OpKind::ScatterND: {
        int64_t row = owner[o / slice];
        if (row < 0) return h.input.data() + o * es;
        return h.updates.data() + (static_cast<uint64_t>(row) * slice + o % slice) * es;
      }
      case OpKind::ScatterElements:  // Allowed()
      case OpKind::GatherQuantized:  // VerifyOwn
      case OpKind::ScatterQuantized:
      case OpKind::EmbeddingBag:
      case OpKind::GatherBlockQuantized:
      case OpKind::MoePermute:
      case OpKind::MoeUnpermute:
      case OpKind::PagedWrite:
      case OpKind::PagedGather:
      case OpKind::Segment:
        break;
    }
    return nullptr;
  }
};

// 20000 random output positions (all of them when there are fewer); for ScatterND, half of
// them in updated slices, for ScatterElements half of them targets of random update elements.
std::vector<uint64_t> SamplePositions(const Spec& s, const Reference& ref) {
  const uint64_t total = Product(s.Output()), samples = 20000;
  std::vector<uint64_t> pos;
  if (total <= samples) {
    for (uint64_t o = 0; o < total; ++o) pos.push_back(o);
    return pos;
  }
  Rng rng(12345);
  uint64_t rows = Product(s.indices, 0, s.indices.size() - 1);
  for (uint64_t i = 0; i < samples; ++i) {
    if (s.kind == OpKind::ScatterND && i % 2)
      pos.push_back(ref.TupleSlot(rng.Below(rows)) * ref.slice + rng.Below(ref.slice));
    else if (s.kind == OpKind::ScatterElements && i % 2)
      pos.push_back(ref.Target(rng.Below(Product(s.indices))));
    else
      pos.push_back(rng.Below(total));
  }
  return pos;
}

}  // namespace

uint64_t Verify(const Spec& s, const HostData& h, const uint8_t* out, uint64_t* checked,
                std::string* first) {
  if (s.kind == OpKind::GatherQuantized || s.kind == OpKind::ScatterQuantized ||
      s.kind == OpKind::EmbeddingBag || s.kind == OpKind::GatherBlockQuantized ||
      s.kind == OpKind::MoePermute || s.kind == OpKind::MoeUnpermute ||
      s.kind == OpKind::PagedWrite || s.kind == OpKind::PagedGather || s.kind == OpKind::Segment)
    return VerifyOwn(s, h, out, checked, first);
  Reference ref(s, h);
  size_t es = vkdml::DataTypeSize(s.dtype);
  std::vector<uint64_t> pos = SamplePositions(s, ref);
  uint64_t bad = 0;
  std::vector<const uint8_t*> want;
  for (uint64_t o : pos) {
    uint64_t folded = 0;
    if (s.reduce) {
      folded = ref.Folded(o);
      want.assign(1, reinterpret_cast<const uint8_t*>(&folded));
    } else {
      ref.Allowed(o, &want);
    }
    bool ok = false;
    for (const uint8_t* w : want) ok = ok || std::memcmp(out + o * es, w, es) == 0;
    if (s.reduce == vkdml::VKDML_REDUCE_FUNCTION_MAX && !s.deterministic && !ok) {
      // The default mode keeps any of equal values: +0 or -0, any NaN.
      auto value = [es](const void* p) -> double {
        if (es == 2) {
          uint16_t b;
          std::memcpy(&b, p, 2);
          return HalfToFloat(b);
        }
        if (es == 8) {
          double d;
          std::memcpy(&d, p, 8);
          return d;
        }
        float f;
        std::memcpy(&f, p, 4);
        return f;
      };
      const double got = value(out + o * es), expected = value(&folded);
      ok = (got == expected) || (std::isnan(got) && std::isnan(expected));
    }
    if (!ok && !bad++) {
      uint64_t g = 0, w = 0;
      std::memcpy(&g, out + o * es, es);
      std::memcpy(&w, want[0], es);
      *first = Format("output element %" PRIu64 " is 0x%" PRIx64 ", expected 0x%" PRIx64, o, g, w);
      if (want.size() > 1)
        *first += Format(" or one of the other %zu updates targeting it", want.size() - 1);
    }
  }
  *checked = pos.size();
  return bad;
}

std::vector<uint32_t> SegmentLengths(uint32_t segments, bool powerLaw) {
  std::vector<uint32_t> l(segments);
  const uint32_t span = powerLaw ? 15 : 31, pair = span + 1;
  for (uint32_t k = 0; k < segments; ++k) {
    const uint32_t h = (k / 2 * 2654435761u) >> 7;
    l[k] = k % 2 == 0 ? 1 + h % span : pair - l[k - 1];
  }
  if (powerLaw)
    for (uint32_t k = 1; k < segments; k += segments / 4) l[k] = segments * 2;
  return l;
}

// BENCH.md, "Bytes counted".
double MinBytes(const Spec& s, const HostData& h) {
  double es = vkdml::DataTypeSize(s.dtype), is = vkdml::DataTypeSize(s.itype);
  double idx = static_cast<double>(Product(s.indices)) * is;
  double out = static_cast<double>(Product(s.Output())) * es;
  // vkdml's own: the table rows read (quantized: their blocks) or written, the indices, offsets,
  // updates and output.
  const double tableRow = static_cast<double>(s.format ? s.input[1] : s.width * es);
  if (s.kind == OpKind::GatherQuantized) return idx + s.indices[0] * tableRow + out;
  if (s.kind == OpKind::ScatterQuantized)
    return idx + static_cast<double>(Product(s.updates)) * es + s.indices[0] * tableRow;
  if (s.kind == OpKind::EmbeddingBag)
    return idx + static_cast<double>(s.Bags()) * is + s.indices[0] * tableRow + out;
  // MoE: the ids, each row read and written, the offsets, permutation and inverse (INT32);
  // the inverse and weights, each row of y read, the tokens' rows written.
  const double n = static_cast<double>(Product(s.indices)), row = s.input[1] * es;
  if (s.kind == OpKind::MoePermute) return idx + 2 * n * row + 8 * n + 4.0 * (s.experts + 1);
  if (s.kind == OpKind::MoeUnpermute) return idx + n * es + n * row + out;
  // The paged cache: the slots, the tokens' rows read and written; the block table, the starts
  // and each gathered row read and written.
  if (s.kind == OpKind::PagedWrite) return idx + 2 * static_cast<double>(Product(s.updates)) * es;
  if (s.kind == OpKind::PagedGather) return idx + (s.indices[0] + 1) * is + 2 * out;
  if (s.kind == OpKind::Segment)  // every row read, the indices, each segment's output
    return idx + static_cast<double>(s.input[0]) * s.width * es + out;
  if (s.kind == OpKind::GatherBlockQuantized)  // a row's bytes, scales and zero points
    return idx + s.indices[0] * (s.input[1] + s.width / s.blockSize * (es + 0.5)) + out;
  if (!s.IsScatter()) return idx + 2 * out;  // indices + elements read + output
  double upd = static_cast<double>(Product(s.updates)) * es;
  if (!s.inPlace)  // input read + output written + indices + updates read
    return static_cast<double>(Product(s.input)) * es + out + idx + upd;
  // In place: indices + updates read + the output elements written; for ScatterElements the
  // distinct targets (a duplicate target needs one write), for ScatterND the updated slices.
  // A reduction also reads each distinct target.
  if (s.reduce) return idx + upd + 2 * static_cast<double>(h.targets) * es;
  if (s.kind == OpKind::ScatterElements) return idx + upd + static_cast<double>(h.targets) * es;
  return idx + 2 * upd;
}

}  // namespace bench
