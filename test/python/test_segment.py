"""vkdml.segment_csr, segment_coo and segment_reduce against a sequential NumPy reference written
here (dml.h's VKDML_OPERATOR_SEGMENT_REDUCE read literally: each segment's rows in order, each
step rounded in the element's type, float16 in float32), bit for bit; and against
torch.segment_reduce on the CPU, whose float32 and float64 folds take the same steps."""
import zlib

import numpy as np
import pytest
import torch

import vkdml

FLOATS = (np.float16, np.float32, np.float64)


def same(got, want):
    """Bit for bit, a NaN matching any NaN."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.shape)
    if got.dtype.kind == "f":
        nan = np.isnan(got) & np.isnan(want)
        got, want = np.where(nan, 0, got), np.where(nan, 0, want)
    assert got.tobytes() == want.tobytes(), f"\ngot  {got}\nwant {want}"


def ref_segment(src, starts, ends, axis, reduce, empty="scatter", initial=None):
    """The sequential reference: starts and ends (shape src.shape[:axis] + (segments,)) bound
    each segment's rows. Returns (values, args)."""
    dt = src.dtype
    acc_dt = np.dtype(np.float32) if dt == np.float16 else dt
    x = src
    batch = src.shape[:axis]
    inner = src.shape[axis + 1:]
    rows = src.shape[axis]
    segments = starts.shape[-1]
    out = np.zeros(batch + (segments,) + inner, dt)
    arg = np.full(batch + (segments,) + inner, rows, np.int64)
    pick = reduce in ("min", "max")
    with np.errstate(all="ignore"):
        for b in np.ndindex(*batch):
            for s in range(segments):
                lo, hi = int(starts[b + (s,)]), int(ends[b + (s,)])
                if initial is not None:
                    acc = np.full(inner, initial, dt).astype(acc_dt)
                else:
                    acc = np.full(inner, 1 if reduce == "prod" else 0, acc_dt)
                where = np.full(inner, rows, np.int64)
                for r in range(lo, hi):
                    v = x[b + (r,)].astype(acc_dt)
                    if pick:
                        if r == lo and initial is None:
                            take = np.ones(inner, bool)
                        elif reduce == "max":
                            take = ~((acc >= v) | np.isnan(acc)) if dt.kind == "f" else v > acc
                        else:
                            take = ~((acc <= v) | np.isnan(acc)) if dt.kind == "f" else v < acc
                        acc = np.where(take, v, acc)
                        where = np.where(take, r, where)
                    elif reduce == "prod":
                        acc = (acc * v).astype(acc_dt)
                    else:
                        acc = (acc + v).astype(acc_dt)
                if hi <= lo and initial is None:
                    if empty == "torch" and dt.kind == "f":
                        acc = np.full(inner, {"mean": np.nan, "max": -np.inf, "min": np.inf,
                                              "prod": 1, "sum": 0}[reduce], acc_dt)
                    elif empty == "torch" and reduce in ("max", "min"):
                        info = np.iinfo(dt)
                        acc = np.full(inner, info.min if reduce == "max" else info.max, dt)
                elif reduce == "mean" and hi > lo:
                    n = hi - lo  # below every integer type's maximum here
                    acc = (acc / acc_dt.type(n)).astype(acc_dt) if dt.kind == "f" else \
                        np.floor_divide(acc, dt.type(n))
                out[b + (s,)] = np.asarray(acc).astype(dt)
                arg[b + (s,)] = where
    return out, arg


def csr_bounds(indptr, rows):
    o = np.clip(indptr.astype(np.int64), 0, rows)
    starts = o[..., :-1]
    return starts, np.maximum(o[..., 1:], starts)


def coo_bounds(index, segments):
    batch = index.shape[:-1]
    starts = np.zeros(batch + (segments,), np.int64)
    ends = np.zeros(batch + (segments,), np.int64)
    for b in np.ndindex(*batch):
        starts[b] = np.searchsorted(index[b], np.arange(segments), "left")
        ends[b] = np.searchsorted(index[b], np.arange(segments), "right")
    return starts, ends


def random_src(rng, dtype, shape):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        v = rng.standard_normal(shape) * 4
        v[rng.random(shape) < 0.05] = 0
        return v.astype(dt)
    info = np.iinfo(dt)
    return rng.integers(max(info.min, -20), min(info.max, 20) + 1, shape).astype(dt)


def random_indptr(rng, batch, rows, segments):
    o = np.sort(rng.integers(0, rows + 1, batch + (segments + 1,)), axis=-1)
    o[..., 0] = 0
    return o


DTYPES = [np.float32, np.float16, np.float64, np.int32, np.int8, np.uint16, np.int64, np.uint64]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduce", ["sum", "mean", "min", "max", "prod"])
def test_segment_csr_vs_reference(device, dtype, reduce):
    rng = np.random.default_rng(zlib.crc32(f"csr {np.dtype(dtype)} {reduce}".encode()))
    for axis, shape in ((0, (23, 3)), (1, (2, 17, 2))):  # the second: a batch dimension
        src = random_src(rng, dtype, shape)
        indptr = random_indptr(rng, shape[:axis], shape[axis], int(rng.integers(1, 9)))
        got = vkdml.segment_csr(src, indptr, reduce)
        want, arg = ref_segment(src, *csr_bounds(indptr, shape[axis]), axis, reduce)
        if reduce in ("min", "max"):
            same(got[0], want)
            same(got[1], arg)
        else:
            same(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int16, np.uint8])
@pytest.mark.parametrize("reduce", ["sum", "mean", "max"])
def test_segment_coo_vs_reference(device, dtype, reduce):
    rng = np.random.default_rng(zlib.crc32(f"coo {np.dtype(dtype)} {reduce}".encode()))
    src = random_src(rng, dtype, (31, 5))
    index = np.sort(rng.integers(0, 9, 31))
    for dim_size in (None, 12):  # None: index.max() + 1; 12: empty segments at the end
        got = vkdml.segment_coo(src, index, dim_size=dim_size, reduce=reduce)
        n = int(index.max()) + 1 if dim_size is None else dim_size
        want, arg = ref_segment(src, *coo_bounds(index, n), 0, reduce)
        if reduce == "max":
            same(got[0], want)
            same(got[1], arg)
        else:
            same(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "prod"])
def test_segment_reduce_vs_torch(device, dtype, reduce):
    """torch.segment_reduce's CPU kernel folds each segment in row order in the data's type:
    the same bits, its empty segments' values and `initial` included."""
    rng = np.random.default_rng(zlib.crc32(f"torch {np.dtype(dtype)} {reduce}".encode()))
    for axis, shape in ((0, (19, 4)), (1, (3, 11))):
        data = random_src(rng, dtype, shape)
        if reduce == "prod":
            data = (data / 4).astype(dtype)
        cuts = np.sort(rng.integers(0, shape[axis] + 1, shape[:axis] + (5,)), axis=-1)
        edges = np.concatenate([np.zeros(shape[:axis] + (1,), np.int64), cuts,
                                np.full(shape[:axis] + (1,), shape[axis])], axis=-1)
        lengths = np.diff(edges, axis=-1)  # 6 segments, some empty, summing to the axis
        for initial in (None, 2.5):
            got = vkdml.segment_reduce(data, reduce, lengths=lengths, axis=axis, initial=initial)
            t = torch.segment_reduce(torch.from_numpy(data), reduce,
                                     lengths=torch.from_numpy(lengths), axis=axis,
                                     initial=initial)
            same(got, t.numpy())
            offsets = np.concatenate([np.zeros(lengths.shape[:-1] + (1,), np.int64),
                                      np.cumsum(lengths, axis=-1)], axis=-1)
            same(vkdml.segment_reduce(data, reduce, offsets=offsets, axis=axis,
                                      initial=initial), t.numpy())


def test_segment_on_device_tensors(device):
    src = np.arange(24, dtype=np.float32).reshape(8, 3)
    indptr = np.array([0, 3, 3, 8])
    t = device.tensor(src)
    out = device.empty((3, 3), np.float32)
    r = vkdml.segment_csr(t, indptr, "mean", out=out)
    assert r is out or isinstance(r, vkdml.Tensor)
    same(out.numpy(), ref_segment(src, *csr_bounds(indptr, 8), 0, "mean")[0])
    values, arg = vkdml.segment_coo(t, device.tensor(np.array([0, 0, 1, 1, 1, 3, 3, 3])),
                                    reduce="min")
    want, want_arg = ref_segment(src, *coo_bounds(np.array([0, 0, 1, 1, 1, 3, 3, 3]), 4), 0, "min")
    same(values.numpy(), want)
    same(arg.numpy(), want_arg)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("reduce", ["min", "max"])
def test_segment_min_max_values_at_their_rows(device, dtype, reduce):
    """min and max take their values from src at the arg rows: ties of -0 and +0 keep the first
    one's sign, a NaN stays, an empty segment (its row the axis size) gets 0; on host arrays and
    on device tensors with out=."""
    nan, inf = np.nan, np.inf
    src = np.array([[-0.0, 1], [0.0, nan], [0.0, 2], [-1, 3], [inf, -inf], [nan, -inf],
                    [-0.0, 5], [0.0, 4]], dtype)
    indptr = np.array([0, 3, 3, 6, 8])
    want, want_arg = ref_segment(src, *csr_bounds(indptr, 8), 0, reduce)
    values, arg = vkdml.segment_csr(src, indptr, reduce)
    same(values, want)
    same(arg, want_arg)
    assert values[0, 0].tobytes() == src[0, 0].tobytes()  # -0, the first of the equal zeros
    out = device.empty(want.shape, dtype)
    values, arg = vkdml.segment_csr(device.tensor(src), device.tensor(indptr), reduce, out=out)
    assert values is out or isinstance(values, vkdml.Tensor)
    same(out.numpy(), want)
    same(arg.numpy(), want_arg)


@pytest.mark.parametrize("reduce", ["min", "max"])
def test_segment_min_max_where_inputs_live(device, reduce):
    """min and max run on the device once src is there: host src and host indices give host
    arrays (no out=), host src beside device indices gives device tensors, and no segments give
    empty results."""
    src = np.array([[3, 1], [2, 7], [5, 5], [0, -1], [4, 2]], np.float32)
    indptr = np.array([0, 2, 2, 5])
    want, want_arg = ref_segment(src, *csr_bounds(indptr, 5), 0, reduce)
    values, arg = vkdml.segment_csr(src, indptr, reduce)
    assert isinstance(values, np.ndarray) and isinstance(arg, np.ndarray)
    same(values, want)
    same(arg, want_arg)
    values, arg = vkdml.segment_csr(src, device.tensor(indptr), reduce)
    assert isinstance(values, vkdml.Tensor) and isinstance(arg, vkdml.Tensor)
    same(values.numpy(), want)
    same(arg.numpy(), want_arg)
    with pytest.raises(TypeError, match="out: expected None for host arrays"):
        vkdml.segment_csr(src, indptr, reduce, out=device.empty(want.shape, np.float32))
    values, arg = vkdml.segment_coo(src, np.zeros(5, np.int64), dim_size=0, reduce=reduce)
    assert values.shape == (0, 2) and arg.shape == (0, 2)


def test_segment_errors(device):
    src = np.ones((6, 2), np.float32)
    with pytest.raises(IndexError, match="offsets in \\[0, 6\\]"):
        vkdml.segment_csr(src, np.array([0, 3, 2, 6]), check_indices=True)
    with pytest.raises(IndexError, match="segment ids"):
        vkdml.segment_coo(src, np.array([0, 1, 0, 1, 1, 1]), check_indices=True)
    with pytest.raises(IndexError):  # torch's unsafe=False: the offsets are checked
        vkdml.segment_reduce(src, "sum", offsets=np.array([0, 4, 7]))
    with pytest.raises(ValueError, match="summing to 6"):
        vkdml.segment_reduce(src, "sum", lengths=np.array([2, 2]))
    with pytest.raises(ValueError, match="reduce is 'median'"):
        vkdml.segment_csr(src, np.array([0, 6]), "median")
    with pytest.raises(ValueError, match="exactly one"):
        vkdml.segment_reduce(src, "sum")
    # Unchecked, a bad offset is clamped: never a read past the tensors.
    same(vkdml.segment_csr(src, np.array([0, 9, 2, -4])),
         np.array([[6, 6], [0, 0], [0, 0]], np.float32))


def test_gnn_message_passing(device):
    """The README's example: each node's mean of its neighbours' rows (CSR adjacency)."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((50, 16)).astype(np.float32)
    degrees = rng.integers(0, 6, 50)
    indptr = np.concatenate([[0], np.cumsum(degrees)])
    neighbours = rng.integers(0, 50, int(indptr[-1]))
    d = vkdml.Device()
    messages = vkdml.gather(d.tensor(x), neighbours, axis=0)        # (edges, 16) on the device
    h = vkdml.segment_csr(messages, indptr, reduce="mean").numpy()  # (50, 16)
    want, _ = ref_segment(x[neighbours], *csr_bounds(indptr, len(neighbours)), 0, "mean")
    same(h, want)


def test_readme_segment_example(device):
    """README.md's segment example runs as printed and gives the values its comment says."""
    import os
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                           "README.md")) as f:
        readme = f.read()
    section = readme[readme.index("\n## Segment reductions\n"):]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    scope = {}
    exec(compile(code, "README.md", "exec"), scope)
    same(scope["h"].numpy(), np.array([[6, 7, 8], [0, 0, 0], [3, 4, 5], [0, 1, 2]], np.float32))
