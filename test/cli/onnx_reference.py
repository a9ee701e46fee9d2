"""NumPy references for the ONNX operators with vkdml's index semantics (clamped, then
negative indices wrapped; or, out of range, filled by a gather given `fill` and skipped by a
scatter given `drop`), and the values the tests feed them: shared by the CLI's tests
(cli_test.py) and the Python module's (test/python)."""
import numpy as np

def same(a, b):
    """Exactly equal: dtype, shape and bytes (NaN payloads included)."""
    return (a is not None and a.dtype == b.dtype and a.shape == b.shape and
            np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes())


def fix(idx, n):
    """The library's index semantics: clamp into [-n, n-1] (signed) or [0, n-1], then wrap."""
    i = np.asarray(idx).astype(np.float64)
    lo = -n if np.issubdtype(np.asarray(idx).dtype, np.signedinteger) else 0
    i = np.clip(i, lo, n - 1).astype(np.int64)
    return np.where(i < 0, i + n, i)


def in_range(v, n):
    """Whether index value v addresses a dimension of size n: [-n, n-1] for signed types,
    [0, n-1] for unsigned ones (Python ints: no wrap-around)."""
    v = int(v)
    return -n <= v <= n - 1


def ref_gather_nd(data, indices, b=0, fill=None):
    k = indices.shape[-1]
    out = np.empty(indices.shape[:-1] + data.shape[b + k:], data.dtype)
    for pos in np.ndindex(*indices.shape[:-1]):
        tup = tuple(int(fix(v, data.shape[b + j])) for j, v in enumerate(indices[pos]))
        out[pos] = data[pos[:b] + tup]
        if fill is not None and not all(in_range(v, data.shape[b + j])
                                        for j, v in enumerate(indices[pos])):
            out[pos] = fill
    return out


def ref_gather(data, indices, axis, fill=None):
    """ONNX Gather with the library's clamping: data.shape[:axis] + indices.shape +
    data.shape[axis+1:]."""
    out = np.take(data, fix(indices, data.shape[axis]), axis=axis)
    if fill is not None:
        n = data.shape[axis]
        bad = np.vectorize(lambda v: not in_range(v, n), otypes=[bool])(indices)
        bad = bad.reshape((1,) * axis + bad.shape + (1,) * (data.ndim - axis - 1))
        out = np.where(bad, np.asarray(fill, data.dtype), out)
    return out


def ref_gather_elements(data, indices, axis, fill=None):
    out = np.empty(indices.shape, data.dtype)
    for pos in np.ndindex(*indices.shape):
        src = list(pos)
        src[axis] = int(fix(indices[pos], data.shape[axis]))
        out[pos] = data[tuple(src)]
        if fill is not None and not in_range(indices[pos], data.shape[axis]):
            out[pos] = fill
    return out


def ref_scatter_nd(data, indices, updates, drop=False):
    out = np.array(data, order="C")
    for pos in np.ndindex(*indices.shape[:-1]):
        if drop and not all(in_range(v, data.shape[j]) for j, v in enumerate(indices[pos])):
            continue
        tup = tuple(int(fix(v, data.shape[j])) for j, v in enumerate(indices[pos]))
        out[tup] = updates[pos]
    return out


def ref_scatter_elements(data, indices, updates, axis, drop=False):
    """Exact when no two updates hit one element (otherwise the last one wins here)."""
    out = np.array(data, order="C")
    for pos in np.ndindex(*indices.shape):
        if drop and not in_range(indices[pos], data.shape[axis]):
            continue
        dst = list(pos)
        dst[axis] = int(fix(indices[pos], data.shape[axis]))
        out[tuple(dst)] = updates[pos]
    return out


def scatter_elements_writers(data, indices, updates, axis):
    """For every output element, the values it may hold: the input's, or those of the updates
    that hit it (DirectML leaves open which of several writers wins)."""
    allowed = {pos: [data[pos]] for pos in np.ndindex(*data.shape)}
    hit = set()
    for pos in np.ndindex(*indices.shape):
        dst = list(pos)
        dst[axis] = int(fix(indices[pos], data.shape[axis]))
        dst = tuple(dst)
        if dst not in hit:
            hit.add(dst)
            allowed[dst] = []
        allowed[dst].append(updates[pos])
    return allowed


def unique_indices(rng, shape, axis, n, dtype, negative=False):
    """Indices of `shape` into a dimension of size n >= shape[axis] along axis, no two equal on
    one line along axis (so every output element has at most one writer)."""
    shape = list(shape)
    lines = np.moveaxis(np.zeros(shape, np.int64), axis, -1)
    for pos in np.ndindex(*lines.shape[:-1]):
        lines[pos] = rng.permutation(n)[:shape[axis]]
    idx = np.moveaxis(lines, -1, axis)
    if negative:  # the same targets, half of them counted from the end
        idx = np.where(rng.integers(0, 2, idx.shape) == 1, idx - n, idx)
    return np.ascontiguousarray(idx).astype(dtype)


def sample(dtype, shape, seed=1):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    if dtype == np.bool_:
        return rng.integers(0, 2, n).astype(np.bool_).reshape(shape)
    if np.issubdtype(dtype, np.floating):
        a = rng.standard_normal(n).astype(dtype)
        special = np.array([np.nan, -np.inf, np.inf, -0.0], dtype)
        a[:min(4, n)] = special[:min(4, n)]
        return a.reshape(shape)
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    a[:2] = [info.min, info.max][:min(2, n)]
    return a.reshape(shape)


UFUNC = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def identity(dtype, red):
    """The reduction's identity in dtype, as torch.scatter_reduce(include_self=False) starts a
    target from: add 0 (bool: False), mul 1, max the least value, min the greatest."""
    dt = np.dtype(dtype)
    if red in ("add", "mul", "mean"):
        return np.asarray(1 if red == "mul" else 0, dt)
    if dt.kind == "f":
        return np.asarray(-np.inf if red == "max" else np.inf, dt)
    if dt.kind == "b":
        return np.asarray(red == "min", dt)
    info = np.iinfo(dt)
    return np.asarray(info.min if red == "max" else info.max, dt)


def ref_scatter_reduce(data, indices, updates, red, axis=None, drop=False, include_self=True):
    """ONNX's ScatterND (axis None) or ScatterElements with a reduction: NumPy's ufunc.at, which
    applies the updates one at a time in C order (clamped indices, as the library's); "mean"
    (torch.scatter_reduce's) sums so and then divides. include_self=False: each target an update
    reaches starts from the identity instead."""
    out = np.array(data, order="C")
    targets, values = [], []
    for pos in np.ndindex(*(indices.shape if axis is not None else indices.shape[:-1])):
        if drop and not (all(in_range(v, data.shape[j]) for j, v in enumerate(indices[pos]))
                         if axis is None else in_range(indices[pos], data.shape[axis])):
            continue
        if axis is None:
            dst = tuple(int(fix(v, data.shape[j])) for j, v in enumerate(indices[pos]))
        else:
            dst = list(pos)
            dst[axis] = int(fix(indices[pos], data.shape[axis]))
            dst = tuple(dst)
        targets.append(dst)
        values.append(updates[pos])
    if not include_self:
        for dst in targets:
            out[dst] = identity(out.dtype, red)
    for dst, v in zip(targets, values):
        UFUNC["add" if red == "mean" else red].at(out, dst, v)
    if red == "mean":  # each target reached: the sum divided once by its number of values
        count = np.zeros(out.shape, np.int64)
        for dst in targets:
            count[dst] += 1
        reached = count > 0
        n = count[reached] + (1 if include_self else 0)
        total = out[reached]
        if out.dtype.kind == "f":  # float64's quotient, rounded once more: exact for these n
            out[reached] = (total.astype(np.float64) / n).astype(out.dtype)
        elif out.dtype.kind == "i":  # rounded toward -infinity, as torch's floor division
            out[reached] = (total.astype(np.int64) // n).astype(out.dtype)
        else:
            out[reached] = (total.astype(np.uint64) // n.astype(np.uint64)).astype(out.dtype)
    return out


def reduce_values(dtype, shape, red, order_free, seed):
    """Values for a reduction test: any in deterministic mode (finite for add and mul, whose NaN
    payloads depend on the CPU); in the default mode ones whose result cannot depend on the
    order: small integers for float add and mul, no -0 or NaN for max and min."""
    rng = np.random.default_rng(seed)
    if red == "mean":  # a sum, then a division
        red = "add"
    if np.issubdtype(dtype, np.floating):
        if red in ("add", "mul") and order_free:
            choices = [-1, 1] if dtype == np.float16 or red == "mul" else [-2, -1, 1, 2, 3]
            return rng.choice(np.array(choices, dtype), shape)
        a = sample(dtype, shape, seed)
        if red in ("add", "mul") or order_free:
            a = np.where(np.isfinite(a) & (a != 0), a, np.array(1.5, dtype))
        return a
    return sample(dtype, shape, seed)


QUANTIZED_BLOCK_BYTES = {"q8_0": 34, "q4_0": 18}


def ref_dequantize(table, fmt):
    """ggml's Q8_0 / Q4_0 blocks (a uint8 table, rows of whole blocks) as float32 products d * q,
    one rounding each."""
    b = table.reshape(table.shape[0], -1, QUANTIZED_BLOCK_BYTES[fmt])
    d = b[:, :, :2].copy().view(np.float16).astype(np.float32)  # (rows, blocks, 1)
    if fmt == "q8_0":
        q = b[:, :, 2:].view(np.int8).astype(np.float32)
    else:
        qs = b[:, :, 2:]
        q = np.concatenate([qs & 15, qs >> 4], axis=2).astype(np.float32) - np.float32(8)
    return (d * q).reshape(table.shape[0], -1)


def ref_quantize(x, fmt):
    """ggml's reference quantizer (quantize_row_q8_0_ref / _q4_0_ref) in NumPy float32, one
    rounding per operation: blocks of 32 values of x (float32, (..., 32 * blocks)) to bytes."""
    b = x.reshape(-1, 32).astype(np.float32)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        if fmt == "q8_0":
            d = np.abs(b).max(axis=1) / np.float32(127)
        else:
            d = b[np.arange(len(b)), np.abs(b).argmax(axis=1)] / np.float32(-8)  # first on ties
        inv = np.where(d != 0, np.float32(1) / np.where(d != 0, d, 1), 0).astype(np.float32)
        v = b * inv[:, None]
        scale = d.astype(np.float16)  # past 65504: infinity, as ggml's conversion
    if fmt == "q8_0":
        t = np.trunc(v)
        q = (t + np.sign(v) * (np.abs(v - t) >= 0.5)).astype(np.int8).view(np.uint8)  # roundf
    else:
        n = np.minimum(15, (v + np.float32(8.5)).astype(np.int8)).astype(np.uint8)
        q = n[:, :16] | (n[:, 16:] << 4)
    out = np.concatenate([scale.view(np.uint8).reshape(-1, 2), q], axis=1)
    return out.reshape(x.shape[:-1] + (-1,))


def ref_embedding_bag(values, indices, offsets, mode="sum", weights=None,
                      include_last_offset=False, padding_idx=None, out_of_range="clamp",
                      fill=0.0):
    """torch's embedding_bag as vkdml defines it (dml.h: VKDML_EMBEDDING_BAG_OPERATOR_DESC), read
    literally: values the table's rows as float32 (rows, width); each bag's entries in order,
    each product and sum rounded to float32 (NumPy's float32 arithmetic: no fused multiply-add);
    the mean's division once; max keeping a NaN and, of equal values, the earlier. Returns
    float32 (bags, width); the caller rounds to the output's dtype."""
    values = np.asarray(values, np.float32)
    rows, width = values.shape
    idx = [int(v) for v in np.asarray(indices).reshape(-1)]
    off = [int(v) for v in np.asarray(offsets).reshape(-1)]
    n = len(idx)
    bags = len(off) - 1 if include_last_offset else len(off)
    signed = np.asarray(indices).dtype.kind == "i"

    def bound(b):
        return n if b >= len(off) else min(max(off[b], 0), n)

    out = np.zeros((max(bags, 0), width), np.float32)
    for b in range(max(bags, 0)):
        acc, count = np.zeros(width, np.float32), 0
        for e in range(bound(b), bound(b + 1)):
            i = idx[e]
            inside = -rows <= i < rows if signed else 0 <= i < rows
            if not inside and out_of_range == "drop":
                continue
            if not inside and out_of_range == "fill":
                v = np.full(width, fill, np.float32)
            else:
                row = min(max(i, -rows), rows - 1) if signed else min(i, rows - 1)
                row = row + rows if row < 0 else row
                if padding_idx is not None and row == padding_idx:
                    continue
                v = values[row]
            if weights is not None:
                v = v * np.float32(weights[e])
            if mode == "max":
                keep = np.isnan(acc) | ~(np.isnan(v) | (v > acc))
                acc = v.copy() if count == 0 else np.where(keep, acc, v)
            else:
                acc = acc + v
            count += 1
        if mode == "mean" and count:
            acc = acc / np.float32(count)
        out[b] = acc
    return out


BLOCK_ZERO_POINT = {("int4", 4): 0, ("uint4", 4): 0, ("uint8", 4): 8, ("uint8", 8): 128}


def unpack_values(packed, kind, bits):
    """Values of a uint8 array of ONNX Runtime's GatherBlockQuantized data or zero points: a
    value a byte (8 bits), or two (4 bits; the first in the low nibble, each row of the last
    dimension starting on a byte: int4 and uint4 zero points packed whole are passed 1-D),
    int4 sign-extended; int32, the last dimension doubled."""
    if bits == 8:
        return packed.astype(np.int32)
    v = np.stack([packed & 15, packed >> 4], axis=-1).reshape(*packed.shape[:-1], -1)
    v = v.astype(np.int32)
    return np.where(v >= 8, v - 16, v) if kind == "int4" else v


def ref_gather_block_quantized(data, indices, scales, zero_points=None, kind="uint8", bits=4,
                               gather_axis=0, quantize_axis=1, block_size=128, fill=None,
                               values_shape=None):
    """com.microsoft.GatherBlockQuantized, written from its definition: each value v of data
    dequantized as (v - zero point) * scale of its block (the block: the value's coordinates
    with quantize_axis's divided by block_size) in float32, one rounding, then to the scales'
    dtype; then ONNX's Gather on gather_axis (DirectML's clamp, or `fill` for out-of-range
    indices). Zero points default to BLOCK_ZERO_POINT. values_shape (int4, uint4): the
    values' shape, data their bytes packed whole (ONNX's tensors of those types)."""
    if values_shape is None:
        values = unpack_values(data, kind, bits)
    else:
        count = int(np.prod(values_shape))
        values = unpack_values(data.reshape(-1), kind, bits)[:count].reshape(values_shape)
    axis = gather_axis % values.ndim
    qa = quantize_axis % values.ndim
    n = values.shape[qa]
    block = np.arange(n) // block_size
    if zero_points is None:
        zeros = np.full(scales.shape, BLOCK_ZERO_POINT[(kind, bits)], np.int32)
    elif kind in ("int4", "uint4"):  # ONNX's int4 and uint4 tensors: packed whole
        zeros = unpack_values(zero_points.reshape(-1), kind, bits)[:scales.size]
        zeros = zeros.reshape(scales.shape)
    else:  # uint8 with bits 4 or 8: each row of the last dimension starting on a byte
        zeros = unpack_values(zero_points, kind, bits)[..., :scales.shape[-1]]
    s = np.take(scales.astype(np.float32), block, axis=qa)
    z = np.take(zeros, block, axis=qa)
    deq = ((values - z).astype(np.float32) * s).astype(scales.dtype)
    return ref_gather(deq, indices, axis, fill=fill)


def same_bits(a, b):
    """a and b (float arrays of one dtype) hold the same bits, any NaN matching any NaN."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    u = np.dtype(f"u{a.itemsize}")
    nan = np.isnan(a) & np.isnan(b)
    return bool(np.all((a.view(u) == b.view(u)) | nan))
