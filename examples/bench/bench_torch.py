#!/usr/bin/env python3
"""PyTorch peers of `vkdml bench`: the same cases, shapes and dtypes, random data.

GPU kernels are timed with torch.cuda.Event (median of --runs after --warmup), CPU ones with
time.perf_counter. The latency cases are host time per call, median of at least 200 calls:
torch.gather + synchronize, and (latency-host) the same from and to host tensors. Prints one JSON object per line and case (--json), or a table.

  python3 examples/bench/bench_torch.py --size full                        # CUDA
  /usr/bin/python3 examples/bench/bench_torch.py --size small --torch-device cpu --threads 2

bench_compare.py imports this module to put both sides in one table.
"""
import argparse
import json
import math
import statistics
import sys
import os
import time

# OpenMP's default spin-waiting starves a CPU-quota'd machine (2 threads on a 2-core VM measured
# an 8 ms floor per op); sleeping waits cost nothing on CUDA runs. Must precede `import torch`.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import torch  # noqa: E402

L2_ROTATE_BYTES = 4 * 60e6  # rotate input sets below ~4x a large GPU L2, as vkdml bench does
MAX_ROTATION = 16

CASE_NAMES = [
    "rows-f32", "rows-f16", "rows-f16-6gib", "tuples-f32", "elements-axis1-f32", "elements-axis0-f32",
    "elements-axis1-i32idx", "elements-axis1-f16", "scatter-rows-f32", "scatter-rows-inplace",
    "scatter-elements-axis1-f32", "scatter-add-rows-f32", "scatter-add-rows-f32-det",
    "scatter-elements-add-axis1-f32", "scatter-elements-add-axis1-f32-det",
    "scatter-elements-amax-axis1-f32", "scatter-elements-amax-axis1-f32-det",
    "scatter-elements-amax-axis1-f16", "scatter-elements-amax-axis1-f16-det", "q4_0-rows",
    "q8_0-rows", "q8_0-quantize-rows", "gbq-uint4-rows", "bag-sum-f32", "bag-sum-f32-det",
    "bag-mean-f32", "bag-mean-f32-det", "moe-permute-f16", "moe-unpermute-f16",
    "segment-csr-sum-f32", "segment-csr-max-f32",
    "segment-csr-sum-f32-powerlaw", "segment-csr-max-f32-powerlaw", "segment-coo-sum-f32",
    "segment-coo-max-f32", "latency",
    "latency-host", "elements-axis0-64rows", "elements-axis0-pitch8224", "tuples-f32-4mib",
    "rows-f32-fill", "elements-axis1-f32-fill", "scatter-elements-axis1-f32-drop",
    "scatter-add-rows-f32-drop", "scatter-elements-add-axis1-f32-drop", "scatter-mean-rows-f32",
    "scatter-mean-rows-f32-det", "scatter-elements-mean-axis1-f32",
    "scatter-elements-mean-axis1-f32-det", "scatter-elements-add-axis1-f64",
    "scatter-elements-add-axis1-f64-det", "paged-cache-write-f16", "paged-gather-f16",
]


def segment_lengths(segments, power_law):
    """bench_cases.cpp's SegmentLengths: pairs of a hashed length in [1, 31] and 32 less it; or
    (power_law) pairs in [1, 15], with 4 segments of segments * 2 rows among them."""
    span = 15 if power_law else 31
    lengths = []
    for k in range(segments):
        h = ((k // 2 * 2654435761) & 0xFFFFFFFF) >> 7
        lengths.append(1 + h % span if k % 2 == 0 else span + 1 - lengths[-1])
    if power_law:
        for k in range(1, segments, segments // 4):
            lengths[k] = segments * 2
    return lengths


def specs(small):
    """The cases of examples/bench/bench_cases.cpp (MakeSpecs), same shapes."""
    rows, picks = (16384, 4096) if small else (1048576, 262144)
    side, tuples = (512, 16384) if small else (4096, 1048576)
    sq = 1024 if small else 8192
    s = []
    s.append(dict(case="rows-f32", op="GatherND", dtype="float32", index_dtype="int64",
                  input_shape=[rows, 256], indices_shape=[picks, 1], updates_shape=None, axis=None,
                  peer="torch.index_select(x, 0, i)"))
    s.append(dict(s[0], case="rows-f16", dtype="float16"))
    # A 6 GiB float16 embedding table (small: 192 MiB), past 4 GiB.
    s.append(dict(s[1], case="rows-f16-6gib", input_shape=[24576 if small else 786432, 4096],
                  indices_shape=[4096 if small else 262144, 1]))
    s.append(dict(case="tuples-f32", op="GatherND", dtype="float32", index_dtype="int64",
                  input_shape=[side, side, 16], indices_shape=[tuples, 2], updates_shape=None,
                  axis=None, peer="x[i0, i1]"))
    el = dict(case="elements-axis1-f32", op="GatherElements", dtype="float32", index_dtype="int64",
              input_shape=[sq, sq], indices_shape=[sq, sq], updates_shape=None, axis=1,
              peer="torch.gather(x, 1, i)")
    s.append(el)
    s.append(dict(el, case="elements-axis0-f32", axis=0, peer="torch.gather(x, 0, i)"))
    s.append(dict(el, case="elements-axis1-i32idx", index_dtype="int32"))
    s.append(dict(el, case="elements-axis1-f16", dtype="float16"))
    sc = dict(case="scatter-rows-f32", op="ScatterND", dtype="float32", index_dtype="int64",
              input_shape=[rows, 256], indices_shape=[picks, 1], updates_shape=[picks, 256],
              axis=None, in_place=False, peer="x.clone().index_copy_(0, i, u)")
    s.append(sc)
    s.append(dict(sc, case="scatter-rows-inplace", in_place=True, peer="x.index_copy_(0, i, u)"))
    # Plain random indices along axis 1: duplicate targets within a row (one writer wins).
    s.append(dict(case="scatter-elements-axis1-f32", op="ScatterElements", dtype="float32",
                  index_dtype="int64", input_shape=[sq, sq], indices_shape=[sq, sq],
                  updates_shape=[sq, sq], axis=1, in_place=True, peer="x.scatter_(1, i, u)"))
    # Scatters with a reduction, in place, random indices (duplicate targets); each again with
    # torch.use_deterministic_algorithms(True) against vkdml's deterministic mode.
    red = [dict(case="scatter-add-rows-f32", op="ScatterND", dtype="float32", index_dtype="int64",
                input_shape=[rows, 256], indices_shape=[rows, 1], updates_shape=[rows, 256],
                axis=None, in_place=True, reduction="add", peer="x.index_add_(0, i, u)"),
           dict(s[-1], case="scatter-elements-add-axis1-f32", reduction="add",
                peer="x.scatter_add_(1, i, u)"),
           dict(s[-1], case="scatter-elements-amax-axis1-f32", reduction="max",
                peer='x.scatter_reduce_(1, i, u, "amax")'),
           dict(s[-1], case="scatter-elements-amax-axis1-f16", dtype="float16", reduction="max",
                peer='x.scatter_reduce_(1, i, u, "amax")')]
    for c in red:
        s.append(c)
        s.append(dict(c, case=c["case"] + "-det", deterministic=True,
                      peer=c["peer"] + " (torch.use_deterministic_algorithms(True))"))
    # vkdml's own operators (issue 27), as bench_cases.cpp: a 32000 x 4096 table of ggml's Q4_0 or
    # Q8_0 blocks (input_shape: its bytes), 8192 rows; embedding bags of 20 rows over 1,000,000 x
    # 128 float32.
    vocab, qpicks = (500, 128) if small else (32000, 8192)
    for fmt, block in (("q4_0", 18), ("q8_0", 34)):
        s.append(dict(case=f"{fmt}-rows", op="GatherQuantizedRows", dtype="float32",
                      index_dtype="int64", input_shape=[vocab, 4096 // 32 * block],
                      indices_shape=[qpicks, 1], updates_shape=None, axis=None, format=fmt,
                      width=4096, peer="x.index_select(0, i), unpacked and scaled"))
    s.append(dict(s[-1], case="q8_0-quantize-rows", op="ScatterQuantizedRows",
                  updates_shape=[qpicks, 4096], in_place=True,
                  peer="x.index_copy_(0, i, u quantized and packed)"))
    # ONNX Runtime's GatherBlockQuantized on that vocabulary: uint8 data with bits 4, a float16
    # scale and a 4-bit zero point per 32 values, float16 out.
    s.append(dict(case="gbq-uint4-rows", op="GatherBlockQuantized", dtype="float16",
                  index_dtype="int64", input_shape=[vocab, 2048], indices_shape=[qpicks],
                  updates_shape=None, axis=None, width=4096, block_size=32,
                  peer="x.index_select(0, i), unpacked, minus zero points, scaled"))
    bag_rows, bags = (15625, 1024) if small else (1000000, 65536)
    for mode in ("sum", "mean"):
        c = dict(case=f"bag-{mode}-f32", op="EmbeddingBag", dtype="float32", index_dtype="int64",
                 input_shape=[bag_rows, 128], indices_shape=[bags * 20], updates_shape=None,
                 axis=None, width=128, mode=mode, bag_size=20,
                 peer=f'F.embedding_bag(i, x, offsets, mode="{mode}")')
        s.append(c)
        s.append(dict(c, case=c["case"] + "-det", deterministic=True,
                      peer=c["peer"] + " (torch.use_deterministic_algorithms(True))"))
    # MoE routing (issue 51): 8192 tokens x 4096 float16, top-8 of 64 experts (small: 1024 x 512).
    moe_tokens, moe_width = (1024, 512) if small else (8192, 4096)
    s.append(dict(case="moe-permute-f16", op="MoePermute", dtype="float16", index_dtype="int32",
                  input_shape=[moe_tokens, moe_width], indices_shape=[moe_tokens, 8],
                  updates_shape=None, axis=None, experts=64,
                  peer="torch.argsort(ids.view(-1), stable=True), x[perm // k], bincount, "
                       "inverse"))
    s.append(dict(s[-1], case="moe-unpermute-f16", op="MoeUnpermute",
                  input_shape=[moe_tokens * 8, moe_width], updates_shape=[moe_tokens, 8],
                  peer="torch.zeros(t, w).index_add_(0, token, w.view(-1, 1) * y[inv.view(-1)])"))
    # The paged KV cache (bench_cases.cpp, issue 51): 256 tokens x 8 heads x 128 float16 written
    # into a 4096-block x 16 cache in place (unique slots); 64 sequences of 2048 tokens gathered
    # through an int32 block table that permutes the blocks.
    blocks, wtokens = (256, 64) if small else (4096, 256)
    s.append(dict(case="paged-cache-write-f16", op="PagedCacheWrite", dtype="float16",
                  index_dtype="int64", input_shape=[blocks, 16, 8, 128],
                  indices_shape=[wtokens], updates_shape=[wtokens, 8, 128], axis=None,
                  in_place=True, peer="k_cache.view(-1, 8, 128).index_copy_(0, slot_mapping, k)"))
    seqs, seq_len = (8, 256) if small else (64, 2048)
    s.append(dict(case="paged-gather-f16", op="PagedGather", dtype="float16",
                  index_dtype="int32", input_shape=[seqs * seq_len // 16, 16, 8, 128],
                  indices_shape=[seqs, seq_len // 16], updates_shape=None, axis=None,
                  seq_len=seq_len,
                  peer="k_cache.index_select(0, block_table.flatten()).view(-1, 8, 128)"))
    # Segment reductions: 1M rows x 128 float32 into 65,536 segments (segment_lengths), as
    # offsets (torch.segment_reduce) and as sorted ids (scatter_reduce).
    segs = 1024 if small else 65536
    for coo, power_law in ((False, False), (False, True), (True, False)):
        n = sum(segment_lengths(segs, power_law))
        for red in ("sum", "max"):
            name = (f"segment-{'coo' if coo else 'csr'}-{red}-f32" +
                    ("-powerlaw" if power_law else ""))
            amax = "sum" if red == "sum" else "amax"
            peer = (f'torch.zeros(S, 128).scatter_reduce_(0, i, x, "{amax}", include_self=False)'
                    if coo else f'torch.segment_reduce(x, "{red}", offsets=o)')
            s.append(dict(case=name, op="SegmentReduce", dtype="float32", index_dtype="int64",
                          input_shape=[n, 128], indices_shape=[n if coo else segs + 1, 1],
                          updates_shape=None, axis=None, width=128, reduce=red, segments=segs,
                          sorted_ids=coo, power_law=power_law, peer=peer))
    s.append(dict(case="latency", op="GatherElements", dtype="float32", index_dtype="int64",
                  input_shape=[64, 64], indices_shape=[64, 64], updates_shape=None, axis=1,
                  peer="torch.gather(x, 1, i) + synchronize"))
    # Device::Run's like-for-like peer: host tensors in, host tensor out.
    s.append(dict(s[-1], case="latency-host", host=True,
                  peer="torch.gather(x.to(dev), 1, i.to(dev)).cpu()"))
    # Diagnostics (only when named), as in bench_cases.cpp.
    s.append(dict(el, case="elements-axis0-64rows", axis=0, input_shape=[64, sq],
                  peer="torch.gather(x, 0, i)", diagnostic=True))
    s.append(dict(el, case="elements-axis0-pitch8224", axis=0, input_shape=[sq, sq + 32],
                  indices_shape=[sq, sq + 32], peer="torch.gather(x, 0, i)", diagnostic=True))
    s.append(dict(s[2], case="tuples-f32-4mib", input_shape=[256, 256, 16], diagnostic=True))
    # vkdml's out-of-range modes (FILL, DROP) beside their clamp cases; torch has neither, so
    # its peer is the clamp case's op (the indices are in range: the same result).
    for name, mode in (("rows-f32", "fill"), ("elements-axis1-f32", "fill"),
                       ("scatter-elements-axis1-f32", "drop"), ("scatter-add-rows-f32", "drop"),
                       ("scatter-elements-add-axis1-f32", "drop")):
        c = next(c for c in s if c["case"] == name)
        s.append(dict(c, case=f"{name}-{mode}", diagnostic=True,
                      peer=c["peer"] + " (torch has no out-of-range mode)"))
    # scatter_reduce's mean beside add, on the same shapes (issue 28: within 1.2x of add).
    for name, case in (("scatter-add-rows-f32", "scatter-mean-rows-f32"),
                       ("scatter-elements-add-axis1-f32", "scatter-elements-mean-axis1-f32")):
        c = next(c for c in s if c["case"] == name)
        peer = ('x.index_reduce_(0, i, u, "mean")' if c["op"] == "ScatterND"
                else 'x.scatter_reduce_(1, i, u, "mean")')
        s.append(dict(c, case=case, reduction="mean", diagnostic=True, peer=peer))
        s.append(dict(c, case=case + "-det", reduction="mean", deterministic=True,
                      diagnostic=True, peer=peer + " (torch.use_deterministic_algorithms(True))"))
    # float64 ADD (bench_cases.cpp: a device without shaderFloat64 adds in integer arithmetic),
    # each mode; torch's float64 scatter_add_ on the same shapes.
    c = next(c for c in s if c["case"] == "scatter-elements-add-axis1-f32")
    s.append(dict(c, case="scatter-elements-add-axis1-f64", dtype="float64", diagnostic=True))
    s.append(dict(c, case="scatter-elements-add-axis1-f64-det", dtype="float64",
                  deterministic=True, diagnostic=True,
                  peer=c["peer"] + " (torch.use_deterministic_algorithms(True))"))
    for c in s:
        c.setdefault("in_place", False)
        c.setdefault("reduction", "none")
        c.setdefault("deterministic", False)
        c["batch_dims"] = 0
    return s


def _dtype(name):
    return {"float64": torch.float64, "float32": torch.float32, "float16": torch.float16,
            "int32": torch.int32, "int64": torch.int64}[name]


def _size(t):
    return {torch.float64: 8, torch.float32: 4, torch.float16: 2, torch.int32: 4,
            torch.int64: 8}[t]


def expected_targets(c):
    """The expected number of distinct output elements that uniform random indices target,
    n * (1 - (1 - 1/n)^m) per line along the axis (n output, m updates entries); for ScatterND,
    distinct rows times the row's elements."""
    if c["op"] == "ScatterND":
        n, m = c["input_shape"][0], c["indices_shape"][0]
        return round(n * (1 - (1 - 1 / n) ** m)) * math.prod(c["input_shape"][1:])
    n, m = c["input_shape"][c["axis"]], c["indices_shape"][c["axis"]]
    lines = math.prod(c["input_shape"]) // n
    return round(lines * n * (1 - (1 - 1 / n) ** m))


def min_bytes(c, targets=None):
    """examples/bench/BENCH.md's formulas, as vkdml bench computes them. targets: for ScatterElements,
    the distinct output elements the indices target (default: the expected number)."""
    es, isz = _size(_dtype(c["dtype"])), _size(_dtype(c["index_dtype"]))
    idx = math.prod(c["indices_shape"]) * isz
    n = c["indices_shape"][0]
    if c["op"] == "GatherQuantizedRows":  # rows' blocks read, float32 values written
        return idx + n * c["input_shape"][1] + n * c["width"] * es
    if c["op"] == "ScatterQuantizedRows":  # float32 rows read, their blocks written
        return idx + n * c["width"] * es + n * c["input_shape"][1]
    if c["op"] == "GatherBlockQuantized":  # rows' bytes, scales and zero points; float16 out
        return idx + n * (c["input_shape"][1] + c["width"] // c["block_size"] * (es + 0.5)) + \
            n * c["width"] * es
    if c["op"] in ("MoePermute", "MoeUnpermute"):  # as bench_cases.cpp's MinBytes
        tokens, k = c["indices_shape"]
        n, row = tokens * k, c["input_shape"][1] * es
        if c["op"] == "MoePermute":  # ids; rows read and written; INT32 offsets, perm, inverse
            return idx + 2 * n * row + 8 * n + 4 * (c["experts"] + 1)
        return idx + n * es + n * row + tokens * row  # inverse, weights, y read, out written
    if c["op"] == "PagedCacheWrite":  # the slots, the tokens' rows read and written
        return idx + 2 * math.prod(c["updates_shape"]) * es
    if c["op"] == "PagedGather":  # the block table, the starts, each row read and written
        return idx + (n + 1) * isz + 2 * n * c["seq_len"] * math.prod(c["input_shape"][2:]) * es
    if c["op"] == "SegmentReduce":  # every row read, the indices, each segment's output
        return idx + (c["input_shape"][0] + c["segments"]) * c["width"] * es
    if c["op"] == "EmbeddingBag":  # every entry's row read, offsets, each bag's output
        bags = n // c["bag_size"]
        return idx + bags * isz + (n + bags) * c["width"] * es
    if c.get("reduction", "none") != "none":  # in place; each distinct target read and written
        if targets is None:
            targets = expected_targets(c)
        return idx + math.prod(c["updates_shape"]) * es + 2 * targets * es
    if c["op"] == "ScatterElements" and c["in_place"]:
        if targets is None:
            targets = expected_targets(c)
        return idx + math.prod(c["updates_shape"]) * es + targets * es
    if c["op"] == "GatherND":
        k = c["indices_shape"][-1]
        out = math.prod(c["indices_shape"][:-1]) * math.prod(c["input_shape"][k:]) * es
    elif c["op"] == "GatherElements":
        out = math.prod(c["indices_shape"]) * es
    else:
        upd = math.prod(c["updates_shape"]) * es
        if c["in_place"]:
            return idx + 2 * upd
        return 2 * math.prod(c["input_shape"]) * es + idx + upd
    return idx + 2 * out


def _nbytes(t):
    return t.numel() * t.element_size()  # Tensor.nbytes is newer than Debian's torch


def _data(shape, dtype, device, gen):
    # Values in +-[1, 2): never zero. Past 2^28 elements made on the device itself (the 6 GiB
    # table would take tens of GiB and minutes on the host).
    if math.prod(shape) > (1 << 28) and torch.device(device).type == "cuda":
        g = torch.Generator(device=device)
        g.manual_seed(int(torch.randint(0, 1 << 31, (1,), generator=gen)))
        x = torch.rand(shape, generator=g, device=device, dtype=dtype) + 1.0
        return torch.where(torch.rand(shape, generator=g, device=device) < 0.5, -x, x)
    x = torch.rand(shape, generator=gen, device="cpu", dtype=torch.float32) + 1.0
    x = torch.where(torch.rand(shape, generator=gen) < 0.5, -x, x)
    return x.to(device=device, dtype=dtype)


def _make_inputs(c, device, gen):
    """Returns (fn, working_set_bytes, notes): fn() runs the peer once on one input set; notes
    go into the result (a "bytes" note replaces the shape-only min_bytes)."""
    dt, it = _dtype(c["dtype"]), _dtype(c["index_dtype"])
    if c.get("host"):  # tensors stay on the host; each call copies them over and back
        x = _data(c["input_shape"], dt, torch.device("cpu"), gen)
        i = torch.randint(0, c["input_shape"][c["axis"]], c["indices_shape"], generator=gen)
        i = i.to(dtype=it)
        return (lambda: torch.gather(x.to(device), c["axis"], i.to(device)).cpu()), 0, {}
    if c["op"] in ("GatherQuantizedRows", "ScatterQuantizedRows", "EmbeddingBag",
                   "GatherBlockQuantized", "PagedCacheWrite", "PagedGather", "SegmentReduce"):
        return _own_inputs(c, device, gen)
    if c["op"] in ("MoePermute", "MoeUnpermute"):
        return _moe_inputs(c, device, gen)
    x = _data(c["input_shape"], dt, device, gen)
    notes = {}
    if c["op"] == "GatherND" and c["indices_shape"][-1] == 1:
        i = torch.randint(0, c["input_shape"][0], (c["indices_shape"][0],), generator=gen)
        i = i.to(device=device, dtype=it)
        return (lambda: torch.index_select(x, 0, i)), _nbytes(x) + _nbytes(i), notes
    if c["op"] == "GatherND":
        n = c["indices_shape"][0]
        i0 = torch.randint(0, c["input_shape"][0], (n,), generator=gen).to(device=device, dtype=it)
        i1 = torch.randint(0, c["input_shape"][1], (n,), generator=gen).to(device=device, dtype=it)
        return (lambda: x[i0, i1]), _nbytes(x) + _nbytes(i0) + _nbytes(i1), notes
    if c["op"] == "GatherElements":
        axis = c["axis"]
        i = torch.randint(0, c["input_shape"][axis], c["indices_shape"], generator=gen)
        i = i.to(device=device, dtype=it)
        try:
            torch.gather(x, axis, i)
        except RuntimeError:  # torch.gather wants int64 indices
            i = i.to(torch.int64)
            notes["peer_index_dtype"] = "int64"
        return (lambda: torch.gather(x, axis, i)), _nbytes(x) + 2 * _nbytes(i), notes
    if c["reduction"] != "none":
        return _reduce_inputs(c, x, device, gen)
    if c["op"] == "ScatterElements":
        axis = c["axis"]
        i = torch.randint(0, c["input_shape"][axis], c["indices_shape"], generator=gen)
        i = i.to(device=device, dtype=it)
        u = _data(c["updates_shape"], dt, device, gen)
        # bytes counts the distinct elements written (a duplicate target once), as vkdml does.
        hit = torch.zeros(c["input_shape"], dtype=torch.int8, device=device).scatter_(axis, i, 1)
        notes["bytes"] = min_bytes(c, int(torch.count_nonzero(hit)))
        del hit
        if c["in_place"]:
            return (lambda: x.scatter_(axis, i, u)), _nbytes(x) + _nbytes(i) + _nbytes(u), notes
        return ((lambda: x.clone().scatter_(axis, i, u)),
                2 * _nbytes(x) + _nbytes(i) + _nbytes(u), notes)
    rows = c["input_shape"][0]
    i = torch.randperm(rows, generator=gen)[: c["indices_shape"][0]].to(device=device, dtype=it)
    u = _data(c["updates_shape"], dt, device, gen)
    if c["in_place"]:
        return (lambda: x.index_copy_(0, i, u)), _nbytes(x) + _nbytes(i) + _nbytes(u), notes
    return (lambda: x.clone().index_copy_(0, i, u)), 2 * _nbytes(x) + _nbytes(i) + _nbytes(u), notes


def _table(c, device, gen):
    """A table of ggml's blocks (uint8 [rows, bytes per row]): random quants, each block's
    float16 scale in +-[1, 2)."""
    rows, row_bytes = c["input_shape"]
    block = 34 if c["format"] == "q8_0" else 18
    x = torch.randint(0, 256, (rows, row_bytes // block, block), generator=gen, dtype=torch.uint8)
    d = _data((rows, row_bytes // block, 1), torch.float16, "cpu", gen)
    x[:, :, :2] = d.view(torch.uint8)
    return x.view(rows, row_bytes).to(device)


def _dequantize(b, fmt, width):
    """The route a user would write: packed rows [n, bytes] to float32 [n, width]."""
    n = b.shape[0]
    blocks = b.view(n, width // 32, -1)
    d = blocks[:, :, :2].contiguous().view(torch.float16).float()
    q = blocks[:, :, 2:]
    if fmt == "q8_0":
        v = q.contiguous().view(torch.int8).float()
    else:
        v = torch.cat([q & 15, q >> 4], dim=2).float() - 8
    return (v * d).view(n, width)


def _quantize_q8_0(u):
    """float32 rows [n, width] to Q8_0 blocks [n, width / 32 * 34] (torch.round ties to even,
    where ggml's roundf goes away from zero: the peer's time, not its bits)."""
    n, width = u.shape
    x = u.view(n, width // 32, 32)
    d = x.abs().amax(dim=2, keepdim=True) / 127
    q = torch.round(x * torch.where(d != 0, 1 / d, torch.zeros_like(d))).to(torch.int8)
    return torch.cat([d.half().view(torch.uint8), q.view(torch.uint8)], dim=2).view(n, -1)


def _deterministic(fn):
    """fn under torch.use_deterministic_algorithms(True)."""
    def fn_det():
        torch.use_deterministic_algorithms(True)
        try:
            return fn()
        finally:
            torch.use_deterministic_algorithms(False)
    return fn_det


def _nibbles(b):
    """uint8 (..., k) to int32 (..., 2k): each byte's low nibble, then its high one."""
    return torch.stack([b & 15, b >> 4], dim=-1).reshape(*b.shape[:-1], -1).to(torch.int32)


def _dequantize_blocks(data, scales, zeros, block_size):
    """ONNX Runtime's GatherBlockQuantized rows (uint8 data with bits 4): (v - zero point) *
    scale in float32, then float16: the route a PyTorch user would write."""
    v = _nibbles(data) - torch.repeat_interleave(_nibbles(zeros), block_size, dim=-1)
    s = torch.repeat_interleave(scales.float(), block_size, dim=-1)
    return (v.float() * s).half()


def _own_inputs(c, device, gen):
    """vkdml's own operators' peers: the quantized rows' PyTorch route, and embedding_bag."""
    it = _dtype(c["index_dtype"])
    n = c["indices_shape"][0]
    if c["op"] == "SegmentReduce":
        x = _data(c["input_shape"], torch.float32, device, gen)
        lengths = torch.tensor(segment_lengths(c["segments"], c["power_law"]), dtype=it)
        offsets = torch.cat([torch.zeros(1, dtype=it), torch.cumsum(lengths, 0)]).to(device)
        if not c["sorted_ids"]:
            return (lambda: torch.segment_reduce(x, c["reduce"], offsets=offsets)), \
                _nbytes(x) + _nbytes(offsets), {}
        ids = torch.repeat_interleave(torch.arange(c["segments"], dtype=it), lengths)
        i = ids.to(device).unsqueeze(1).expand(-1, c["width"])
        red = "sum" if c["reduce"] == "sum" else "amax"
        out = torch.zeros(c["segments"], c["width"], device=device)
        return (lambda: out.zero_().scatter_reduce_(0, i, x, red, include_self=False)), \
            _nbytes(x) + _nbytes(ids) + _nbytes(out), {}
    if c["op"] == "EmbeddingBag":
        x = _data(c["input_shape"], torch.float32, device, gen)
        i = torch.randint(0, c["input_shape"][0], (n,), generator=gen).to(device=device, dtype=it)
        offsets = torch.arange(0, n, c["bag_size"], dtype=it, device=device)
        fn = lambda: torch.nn.functional.embedding_bag(i, x, offsets, mode=c["mode"])  # noqa: E731
        if c.get("deterministic"):
            fn = _deterministic(fn)
        return fn, _nbytes(x) + _nbytes(i) + _nbytes(offsets), {}
    if c["op"] == "PagedCacheWrite":  # vLLM's torch route: index_copy_ into the token rows
        cache = _data(c["input_shape"], torch.float16, device, gen)
        slots = c["input_shape"][0] * c["input_shape"][1]
        i = torch.randperm(slots, generator=gen)[:n].to(device=device, dtype=it)
        k = _data(c["updates_shape"], torch.float16, device, gen)
        rows = cache.view(slots, *c["input_shape"][2:])
        return (lambda: rows.index_copy_(0, i, k)), _nbytes(cache) + _nbytes(i) + _nbytes(k), {}
    if c["op"] == "PagedGather":  # every sequence whole blocks: an index_select of the blocks
        cache = _data(c["input_shape"], torch.float16, device, gen)
        table = torch.randperm(c["input_shape"][0], generator=gen).to(device=device, dtype=it)
        flat = table.view(-1)
        heads = c["input_shape"][2:]
        return (lambda: cache.index_select(0, flat).view(-1, *heads)), \
            _nbytes(cache) + _nbytes(table), {}
    if c["op"] == "GatherBlockQuantized":
        rows, blocks = c["input_shape"][0], c["width"] // c["block_size"]
        x = torch.randint(0, 256, c["input_shape"], generator=gen, dtype=torch.uint8).to(device)
        scales = _data([rows, blocks], torch.float16, device, gen)
        zeros = torch.randint(0, 256, (rows, blocks // 2), generator=gen,
                              dtype=torch.uint8).to(device)
        i = torch.randint(0, rows, (n,), generator=gen).to(device=device, dtype=it)
        fn = lambda: _dequantize_blocks(x.index_select(0, i), scales.index_select(0, i),  # noqa: E731
                                        zeros.index_select(0, i), c["block_size"])
        return fn, _nbytes(x) + _nbytes(scales) + _nbytes(zeros) + _nbytes(i), {}
    x = _table(c, device, gen)
    rows = c["input_shape"][0]
    if c["op"] == "GatherQuantizedRows":
        i = torch.randint(0, rows, (n,), generator=gen).to(device=device, dtype=it)
        return (lambda: _dequantize(x.index_select(0, i), c["format"], c["width"])), \
            _nbytes(x) + _nbytes(i), {}
    i = torch.randperm(rows, generator=gen)[:n].to(device=device, dtype=it)
    u = _data(c["updates_shape"], torch.float32, device, gen)
    return (lambda: x.index_copy_(0, i, _quantize_q8_0(u))), _nbytes(x) + _nbytes(i) + _nbytes(u), {}


def _moe_inputs(c, device, gen):
    """MoE routing's torch route: a stable argsort of the flattened ids and a gather, the
    offsets by bincount, the inverse by a scatter; back with index_add_ of the weighted rows."""
    tokens, k = c["indices_shape"]
    n, experts = tokens * k, c["experts"]
    x = _data(c["input_shape"], torch.float16, device, gen)
    if c["op"] == "MoePermute":  # each token's k distinct experts, as bench_cases.cpp
        ids = torch.argsort(torch.rand((tokens, experts), generator=gen), dim=1)[:, :k]
        ids = ids.to(device=device, dtype=torch.int32)

        def permute():
            flat = ids.view(-1)
            perm = torch.argsort(flat, stable=True)
            rows = x[perm // k]
            offsets = torch.zeros(experts + 1, dtype=torch.int64, device=device)
            offsets[1:] = torch.cumsum(torch.bincount(flat, minlength=experts), 0)
            inv = torch.empty_like(perm)
            inv[perm] = torch.arange(n, device=device)
            return rows, offsets, perm, inv.view(tokens, k)
        return permute, _nbytes(x) + _nbytes(ids), {}
    inv = torch.randperm(n, generator=gen).to(device=device, dtype=torch.int64).view(tokens, k)
    w = _data([tokens, k], torch.float16, device, gen)
    token = torch.arange(tokens, device=device).repeat_interleave(k)

    def unpermute():
        src = (w.view(-1, 1).float() * x[inv.view(-1)].float())
        out = torch.zeros((tokens, c["input_shape"][1]), dtype=torch.float32, device=device)
        return out.index_add_(0, token, src).half()
    return unpermute, _nbytes(x) + _nbytes(inv) + _nbytes(w), {}


def _reduce_inputs(c, x, device, gen):
    """The reductions' peers, in place, with random indices (duplicates) as vkdml bench's."""
    dt, it = _dtype(c["dtype"]), _dtype(c["index_dtype"])
    u = _data(c["updates_shape"], dt, device, gen)
    notes = {}
    if c["op"] == "ScatterND":
        i = torch.randint(0, c["input_shape"][0], (c["indices_shape"][0],), generator=gen)
        i = i.to(device=device, dtype=it)
        notes["bytes"] = min_bytes(c, int(torch.unique(i).numel()) * c["input_shape"][1])
        if c["reduction"] == "mean":
            fn = lambda: x.index_reduce_(0, i, u, "mean")  # noqa: E731
        else:
            fn = lambda: x.index_add_(0, i, u)  # noqa: E731
    else:
        axis = c["axis"]
        i = torch.randint(0, c["input_shape"][axis], c["indices_shape"], generator=gen)
        i = i.to(device=device, dtype=it)
        hit = torch.zeros(c["input_shape"], dtype=torch.int8, device=device).scatter_(axis, i, 1)
        notes["bytes"] = min_bytes(c, int(torch.count_nonzero(hit)))
        del hit
        if c["reduction"] == "add":
            fn = lambda: x.scatter_add_(axis, i, u)  # noqa: E731
        elif c["reduction"] == "mean":
            fn = lambda: x.scatter_reduce_(axis, i, u, "mean")  # noqa: E731
        else:
            fn = lambda: x.scatter_reduce_(axis, i, u, "amax")  # noqa: E731
    if c.get("deterministic"):
        fn = _deterministic(fn)
        fn()  # raises here, before timing, where torch has no deterministic path
    return fn, _nbytes(x) + _nbytes(i) + _nbytes(u), notes


def _median_ms(fns, device, warmup, runs):
    """Times fns[k % len(fns)]() runs times after warmup calls; median milliseconds."""
    cuda = device.type == "cuda"
    total = max(warmup, len(fns)) + runs
    times = []
    for k in range(total):
        fn = fns[k % len(fns)]
        timed = k >= total - runs
        if cuda:
            if timed:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                fn()
                end.record()
                times.append((start, end))
            else:
                fn()
        else:
            t0 = time.perf_counter()
            fn()
            if timed:
                times.append((time.perf_counter() - t0) * 1e3)
    if cuda:
        torch.cuda.synchronize()
        times = [s.elapsed_time(e) for s, e in times]
    return statistics.median(times), min(times), max(times)


def _latency(c, device, calls, gen):
    fn, _, notes = _make_inputs(c, device, gen)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    times = []
    for k in range(20 + calls):
        t0 = time.perf_counter()
        fn()
        sync()
        if k >= 20:
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times), min(times), max(times), notes


def device_name(device):
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"cpu ({torch.get_num_threads()} threads)"


def run(cases=None, small=False, device="cuda", threads=None, runs=30, warmup=5,
        latency_calls=200, progress=True):
    """Runs the peers; returns a list of dicts (one per case)."""
    device = torch.device(device)
    if threads:
        torch.set_num_threads(threads)
    gen = torch.Generator().manual_seed(1)
    out = []
    chosen = [c for c in specs(small) if (not cases and not c.get("diagnostic")) or
              (cases and c["case"] in cases)
              or (c["case"].startswith("latency") and any(n.startswith("latency") for n in cases))]
    for n, c in enumerate(chosen):
        if progress:
            print(f"[{n + 1}/{len(chosen)}] torch {c['case']}", file=sys.stderr, flush=True)
        r = dict(c, size="small" if small else "full", device=device_name(device),
                 torch=torch.__version__, bytes=min_bytes(c))
        try:
            if c["case"].startswith("latency"):
                med, lo, hi, notes = _latency(c, device, max(200, latency_calls), gen)
                r.update(median_ms=med, min_ms=lo, max_ms=hi, runs=max(200, latency_calls),
                         timing="host", rotation=1, **notes)
            else:
                fn, ws, notes = _make_inputs(c, device, gen)
                fns = [fn]
                if device.type == "cuda" and ws < L2_ROTATE_BYTES:
                    rot = min(MAX_ROTATION, math.ceil(L2_ROTATE_BYTES / ws))
                    fns += [_make_inputs(c, device, gen)[0] for _ in range(rot - 1)]
                med, lo, hi = _median_ms(fns, device, warmup, runs)
                r.update(median_ms=med, min_ms=lo, max_ms=hi, runs=runs,
                         timing="cuda-events" if device.type == "cuda" else "host",
                         rotation=len(fns), **notes)
                del fns, fn
            r["gbps"] = r["bytes"] / (r["median_ms"] * 1e6)
        except RuntimeError as e:  # torch.cuda.OutOfMemoryError is one too
            r.update(error=str(e).splitlines()[0], median_ms=None, gbps=None)
        if device.type == "cuda":
            torch.cuda.empty_cache()
        out.append(r)
    return out


def add_arguments(p):
    p.add_argument("--case", action="append", default=[],
                   help="case name (repeat, or comma-separated); default all")
    p.add_argument("--size", choices=["full", "small"], default="full")
    p.add_argument("--torch-device", default="cuda", help="cuda, cuda:N or cpu")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--runs", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--latency-calls", type=int, default=200)


def is_diagnostic(name):
    """Diagnostic cases run only when named."""
    return any(c["case"] == name and c.get("diagnostic") for c in specs(True))


def case_list(args):
    names = [n for arg in args.case for n in arg.split(",") if n]
    for n in names:
        if n not in CASE_NAMES and n not in ("latency-run", "latency-replay"):
            sys.exit(f"bench_torch: unknown case {n!r}; expected one of {', '.join(CASE_NAMES)}")
    return names


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(p)
    p.add_argument("--json", action="store_true", help="one JSON object per line and case")
    args = p.parse_args()
    results = run(case_list(args), args.size == "small", args.torch_device, args.threads,
                  args.runs, args.warmup, args.latency_calls)
    for r in results:
        if args.json:
            print(json.dumps(r), flush=True)
        elif r.get("error"):
            print(f"{r['case']:<26} ERROR {r['error']}")
        else:
            print(f"{r['case']:<26} {r['median_ms']:10.4f} ms {r['gbps']:10.2f} GB/s   {r['peer']}")
    return 1 if any(r.get("error") for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
