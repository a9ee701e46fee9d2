"""vkdml's Python module against NumPy references (test/cli/onnx_reference.py, the library's
index semantics: clamped, negative counted from the end; or filled and dropped): every function,
every dtype, random shapes, array layouts, device tensors, errors, and PyTorch's CPU ops where
python3-torch is installed."""
import array
import contextlib
import io
import os
import threading
import time

import numpy as np
import pytest

import vkdml
from onnx_reference import (ref_gather, ref_gather_elements, ref_gather_nd,
                            ref_scatter_elements, ref_scatter_nd, ref_scatter_reduce,
                            reduce_values, same, sample, unique_indices)

DATA_TYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
              np.uint64, np.float16, np.float32, np.float64]
INDEX_TYPES = [np.int32, np.int64, np.uint32, np.uint64, np.int8, np.int16, np.uint8,
               np.uint16]
REDUCTIONS = ["add", "mul", "max", "min", "mean"]


def name(t):
    return np.dtype(t).name


def reduces(device, dtype, reduction):
    """Whether device runs reduction on dtype; bool has no mean (a ValueError that says so)."""
    if reduction == "mean" and dtype == np.bool_:
        with pytest.raises(ValueError, match=r"\(mean divides: not on bool\)"):
            device.supports_reduction(dtype, reduction)
        with pytest.raises(ValueError, match=r"\(mean divides: not on bool\)"):
            vkdml.scatter_nd(np.zeros(2, np.bool_), [[0]], [True], reduction="mean")
        return False
    return device.supports_reduction(dtype, reduction)


def random_shape(rng, rank, low=1, high=5):
    return tuple(int(d) for d in rng.integers(low, high + 1, rank))


def random_indices(rng, shape, n, dtype, spill=0):
    """Indices into a dimension of n: in [-n, n) for signed types, [0, n) for unsigned, and
    `spill` more on each side (clamped by the library)."""
    signed = np.issubdtype(dtype, np.signedinteger)
    lo = -n - spill if signed else 0
    hi = min(n + spill, np.iinfo(dtype).max + 1)
    return rng.integers(max(lo, np.iinfo(dtype).min), hi, shape).astype(dtype)


# --- every function, every dtype, random shapes -------------------------------------------


@pytest.mark.parametrize("dtype", DATA_TYPES, ids=name)
def test_gather(device, dtype):
    rng = np.random.default_rng(1)
    for case in range(6):
        x = sample(dtype, random_shape(rng, int(rng.integers(1, 5))), seed=case)
        axis = int(rng.integers(-x.ndim, x.ndim))
        itype = INDEX_TYPES[case % len(INDEX_TYPES)]
        idx = random_indices(rng, random_shape(rng, int(rng.integers(0, 3))), x.shape[axis],
                             itype, spill=2)
        got = vkdml.gather(x, idx, axis=axis)
        assert same(got, ref_gather(x, idx, axis)), (x.shape, idx, axis)


@pytest.mark.parametrize("dtype", DATA_TYPES, ids=name)
def test_gather_elements(device, dtype):
    rng = np.random.default_rng(2)
    for case in range(6):
        x = sample(dtype, random_shape(rng, int(rng.integers(1, 5))), seed=case)
        axis = int(rng.integers(-x.ndim, x.ndim))
        # ONNX allows indices smaller than x off the axis, and any length along it.
        shape = tuple(int(rng.integers(1, d + 1)) for d in x.shape)
        shape = shape[:axis % x.ndim] + (int(rng.integers(1, 6)),) + shape[axis % x.ndim + 1:]
        idx = random_indices(rng, shape, x.shape[axis], INDEX_TYPES[case % 4], spill=1)
        got = vkdml.gather_elements(x, idx, axis=axis)
        assert same(got, ref_gather_elements(x, idx, axis % x.ndim)), (x.shape, idx, axis)


@pytest.mark.parametrize("dtype", DATA_TYPES, ids=name)
def test_gather_nd(device, dtype):
    rng = np.random.default_rng(3)
    for case in range(6):
        x = sample(dtype, random_shape(rng, int(rng.integers(1, 5))), seed=case)
        b = int(rng.integers(0, x.ndim))  # batch dims
        k = int(rng.integers(1, x.ndim - b + 1))
        lead = x.shape[:b] + random_shape(rng, int(rng.integers(0, 2)))
        itype = INDEX_TYPES[case % 4]
        idx = np.stack([random_indices(rng, lead, x.shape[b + j], itype, spill=1)
                        for j in range(k)], axis=-1)
        got = vkdml.gather_nd(x, idx, batch_dims=b)
        assert same(got, ref_gather_nd(x, idx, b)), (x.shape, idx, b)


@pytest.mark.parametrize("dtype", DATA_TYPES, ids=name)
def test_scatter_elements(device, dtype):
    rng = np.random.default_rng(4)
    for case in range(6):
        x = sample(dtype, random_shape(rng, int(rng.integers(1, 5))), seed=case)
        axis = int(rng.integers(-x.ndim, x.ndim))
        a = axis % x.ndim
        shape = tuple(int(rng.integers(1, d + 1)) for d in x.shape)
        idx = unique_indices(rng, shape, a, x.shape[a], INDEX_TYPES[case % 4],
                             negative=case % 2 == 0 and case % 4 in (0, 1))
        upd = sample(dtype, shape, seed=case + 100)
        got = vkdml.scatter_elements(x, idx, upd, axis=axis)
        assert same(got, ref_scatter_elements(x, idx, upd, a)), (x.shape, idx, axis)


@pytest.mark.parametrize("dtype", DATA_TYPES, ids=name)
def test_scatter_nd(device, dtype):
    rng = np.random.default_rng(5)
    for case in range(6):
        x = sample(dtype, random_shape(rng, int(rng.integers(1, 5))), seed=case)
        k = int(rng.integers(1, x.ndim + 1))
        # Distinct tuples, so that every target has one writer.
        count = int(rng.integers(1, int(np.prod(x.shape[:k])) + 1))
        flat = rng.permutation(int(np.prod(x.shape[:k])))[:count]
        idx = np.stack(np.unravel_index(flat, x.shape[:k]), axis=-1).astype(INDEX_TYPES[case % 4])
        upd = sample(dtype, (count,) + x.shape[k:], seed=case + 200)
        got = vkdml.scatter_nd(x, idx, upd)
        assert same(got, ref_scatter_nd(x, idx, upd)), (x.shape, idx)


@pytest.mark.parametrize("deterministic", [False, True], ids=["default", "deterministic"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", DATA_TYPES, ids=name)
def test_scatter_reductions(device, dtype, reduction, deterministic):
    """Duplicate targets, against NumPy's ufunc.at (the updates one at a time in C order): bit
    for bit in deterministic mode; in the default mode with values whose result cannot depend
    on the order."""
    if not reduces(device, dtype, reduction):
        pytest.skip(f"{device.name} runs no {reduction} on {name(dtype)}")
    rng = np.random.default_rng(6)
    x = reduce_values(dtype, (5, 4), reduction, not deterministic, seed=1)
    idx = rng.integers(-5, 5, (7, 4))
    upd = reduce_values(dtype, (7, 4), reduction, not deterministic, seed=2)
    got = vkdml.scatter_elements(x, idx, upd, axis=0, reduction=reduction,
                                 deterministic=deterministic)
    assert same(got, ref_scatter_reduce(x, idx, upd, reduction, axis=0))
    nd_idx = rng.integers(0, 5, (6, 1))
    nd_upd = reduce_values(dtype, (6, 4), reduction, not deterministic, seed=3)
    got = vkdml.scatter_nd(x, nd_idx, nd_upd, reduction=reduction, deterministic=deterministic)
    assert same(got, ref_scatter_reduce(x, nd_idx, nd_upd, reduction))


@pytest.mark.parametrize("deterministic", [False, True], ids=["default", "deterministic"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", DATA_TYPES, ids=name)
def test_include_self_false(device, dtype, reduction, deterministic):
    """include_self=False: each element an update reaches starts from the reduction's identity,
    the others keep x's value; against ufunc.at from the identity, on both scatters."""
    if not reduces(device, dtype, reduction):
        pytest.skip(f"{device.name} runs no {reduction} on {name(dtype)}")
    rng = np.random.default_rng(31)
    x = reduce_values(dtype, (6, 4), reduction, not deterministic, seed=4)
    idx = rng.integers(-6, 6, (5, 4))
    upd = reduce_values(dtype, (5, 4), reduction, not deterministic, seed=5)
    got = vkdml.scatter_elements(x, idx, upd, reduction=reduction, deterministic=deterministic,
                                 include_self=False)
    assert same(got, ref_scatter_reduce(x, idx, upd, reduction, axis=0, include_self=False))
    nd_idx = rng.integers(0, 3, (4, 1))  # rows 3-5 keep x's values
    nd_upd = reduce_values(dtype, (4, 4), reduction, not deterministic, seed=6)
    got = vkdml.scatter_nd(device.tensor(x), nd_idx, nd_upd, reduction=reduction,
                           deterministic=deterministic, include_self=False,
                           out_of_range="drop").numpy()
    assert same(got, ref_scatter_reduce(x, nd_idx, nd_upd, reduction, include_self=False))


def test_include_self_errors(device):
    x = np.zeros((3, 2), np.float32)
    with pytest.raises(ValueError, match="include_self=False applies to a reduction"):
        vkdml.scatter_nd(x, [[0]], np.ones((1, 2), np.float32), include_self=False)
    with pytest.raises(TypeError, match="include_self is 0, expected a bool"):
        vkdml.scatter_nd(x, [[0]], np.ones((1, 2), np.float32), reduction="add", include_self=0)


def fill_of(dtype, rng):
    """A random fill value of dtype, as the Python value a user would pass."""
    v = sample(dtype, (8,), seed=int(rng.integers(0, 1 << 30)))[int(rng.integers(0, 8))]
    return v.item()


@pytest.mark.parametrize("dtype", DATA_TYPES, ids=name)
def test_out_of_range_fill(device, dtype):
    """out_of_range="fill" on every gather: an element whose index (or any component of its
    tuple) is out of range is fill_value, from host arrays and device tensors."""
    rng = np.random.default_rng(28)
    for case in range(6):
        x = sample(dtype, random_shape(rng, int(rng.integers(1, 5))), seed=case)
        itype = INDEX_TYPES[case % len(INDEX_TYPES)]
        fill = fill_of(dtype, rng) if case % 3 else None  # None: the default, 0
        want_fill = np.asarray(0 if fill is None else fill, dtype)
        axis = int(rng.integers(-x.ndim, x.ndim))
        idx = random_indices(rng, random_shape(rng, int(rng.integers(0, 3))), x.shape[axis],
                             itype, spill=3)
        got = vkdml.gather(x, idx, axis=axis, out_of_range="fill", fill_value=fill)
        assert same(got, ref_gather(x, idx, axis % x.ndim, fill=want_fill)), (x.shape, idx)
        shape = tuple(int(rng.integers(1, d + 1)) for d in x.shape)
        eidx = random_indices(rng, shape, x.shape[axis], itype, spill=2)
        got = vkdml.gather_elements(device.tensor(x), eidx, axis=axis, out_of_range="fill",
                                    fill_value=fill).numpy()
        assert same(got, ref_gather_elements(x, eidx, axis % x.ndim, fill=want_fill))
        b = int(rng.integers(0, x.ndim))
        k = int(rng.integers(1, x.ndim - b + 1))
        comps = [random_indices(rng, x.shape[:b] + (3,), x.shape[b + j], itype, spill=2)
                 for j in range(k)]
        ndidx = np.stack(comps, axis=-1)
        if b:  # batch dims: ONNX's indices take x's batch sizes
            got = vkdml.gather_nd(x, ndidx, batch_dims=b, out_of_range="fill", fill_value=fill)
        else:
            got = vkdml.gather_nd(x, ndidx, out_of_range="fill", fill_value=fill)
        assert same(got, ref_gather_nd(x, ndidx, b, fill=want_fill)), (x.shape, ndidx, b)


# Duplicate targets without a reduction leave open which writer wins unless deterministic: the
# default mode's drop without a reduction is the next test's, with unique targets.
@pytest.mark.parametrize("reduction,deterministic",
                         [("none", True)] + [(r, d) for r in REDUCTIONS for d in (False, True)],
                         ids=lambda v: v if isinstance(v, str) else
                         ("deterministic" if v else "default"))
@pytest.mark.parametrize("dtype", DATA_TYPES, ids=name)
def test_out_of_range_drop(device, dtype, reduction, deterministic):
    """out_of_range="drop" on both scatters, every reduction, duplicate targets: the updates
    with an index out of range are skipped, the rest as ufunc.at applies them."""
    if reduction != "none" and not reduces(device, dtype, reduction):
        pytest.skip(f"{device.name} runs no {reduction} on {name(dtype)}")
    rng = np.random.default_rng(29)
    red = "add" if reduction == "none" else reduction  # the values' kind, for reduce_values
    x = reduce_values(dtype, (5, 4), red, not deterministic, seed=1)
    idx = rng.integers(-8, 8, (9, 4))
    upd = reduce_values(dtype, (9, 4), red, not deterministic, seed=2)
    got = vkdml.scatter_elements(x, idx, upd, axis=0, reduction=reduction,
                                 deterministic=deterministic, out_of_range="drop")
    want = (ref_scatter_elements(x, idx, upd, 0, drop=True) if reduction == "none" else
            ref_scatter_reduce(x, idx, upd, reduction, axis=0, drop=True))
    assert same(got, want)
    nd_idx = rng.integers(-3, 8, (8, 1)).astype(np.uint64 if deterministic else np.int32)
    nd_idx = np.where(nd_idx > 7, 0, nd_idx) if nd_idx.dtype == np.uint64 else nd_idx
    nd_upd = reduce_values(dtype, (8, 4), red, not deterministic, seed=3)
    got = vkdml.scatter_nd(device.tensor(x), nd_idx, nd_upd, reduction=reduction,
                           deterministic=deterministic, out_of_range="drop").numpy()
    want = (ref_scatter_nd(x, nd_idx, nd_upd, drop=True) if reduction == "none" else
            ref_scatter_reduce(x, nd_idx, nd_upd, reduction, drop=True))
    assert same(got, want)


def test_out_of_range_drop_unique_and_errors(device):
    """Default-mode scatters without a reduction drop too (unique targets: one writer each);
    "error" raises IndexError as check_indices does; and every refusal names the argument."""
    rng = np.random.default_rng(30)
    x = sample(np.float32, (6, 5), seed=4)
    idx = unique_indices(rng, (4, 5), 0, 6, np.int64, negative=True)
    idx[1, 2], idx[3, 0] = 6, -7
    upd = sample(np.float32, (4, 5), seed=5)
    got = vkdml.scatter_elements(x, idx, upd, out_of_range="drop")
    assert same(got, ref_scatter_elements(x, idx, upd, 0, drop=True))
    rows = np.array([[2], [9], [-1], [-7]], np.int64)
    got = vkdml.scatter_nd(x, rows, upd, out_of_range="drop")
    assert same(got, ref_scatter_nd(x, rows, upd, drop=True))
    with pytest.raises(IndexError, match=r"indices\[1\] is 9, outside the valid range"):
        vkdml.gather(x, np.array([0, 9]), out_of_range="error")
    with pytest.raises(IndexError, match=r"indices\[1,0\] is 9"):
        vkdml.scatter_nd(x, rows, upd, out_of_range="error")
    ok = vkdml.gather(x, np.array([0, -6]), out_of_range="error")
    assert same(ok, x[[0, 0]])
    small = np.arange(4, dtype=np.int32)
    refusals = [
        (lambda: vkdml.gather(x, [0], out_of_range="wrap"), ValueError,
         "out_of_range is 'wrap', expected one of clamp, fill, drop, error"),
        (lambda: vkdml.gather_nd(x, [[0]], out_of_range="drop"), ValueError,
         "out_of_range is 'drop', which is for scatters: gather_nd writes fill_value"),
        (lambda: vkdml.scatter_elements(x, idx, upd, out_of_range="fill"), ValueError,
         "out_of_range is 'fill', which is for gathers: scatter_elements skips"),
        (lambda: vkdml.scatter_nd(x, rows, upd, fill_value=0), ValueError,
         "fill_value is given, but out_of_range is 'clamp': only 'fill' writes it"),
        (lambda: vkdml.gather(x, [0], fill_value=1.0), ValueError, "only 'fill' writes it"),
        (lambda: vkdml.gather(x, [9], out_of_range="fill", fill_value=1e39), ValueError,
         r"fill_value is 1e\+39, which overflows float32"),
        (lambda: vkdml.gather(small.astype(np.uint8), [9], out_of_range="fill", fill_value=-1),
         ValueError, r"fill_value is -1, outside uint8's range \[0, 255\]"),
        (lambda: vkdml.gather(small, [9], out_of_range="fill", fill_value=0.5),
         ValueError, "fill_value is 0.5, expected an integer for int32"),
        (lambda: vkdml.gather(small.astype(np.bool_), [9], out_of_range="fill", fill_value=2),
         ValueError, "fill_value is 2, expected True, False, 0 or 1 for bool"),
        (lambda: vkdml.gather(x, [9], out_of_range="fill", fill_value="1"), TypeError,
         "fill_value is '1', expected a number"),
    ]
    for call, error, message in refusals:
        with pytest.raises(error, match=message):
            call()
    # A float fill rounds to the dtype as NumPy's conversion does; NaN and infinities stay.
    for value in (0.1, float("nan"), float("-inf")):
        got = vkdml.gather(x.astype(np.float16), [0, 9], out_of_range="fill", fill_value=value)
        assert same(got[1], np.full(5, value, np.float16))


def test_deterministic_bit_for_bit(device):
    """Float sums in deterministic mode: the sequential sum, the same bits every run, from host
    arrays and from device tensors."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((16, 33)).astype(np.float32)
    idx = rng.integers(0, 16, (2000, 33))
    upd = (rng.standard_normal((2000, 33)) * 1e4).astype(np.float32)
    want = ref_scatter_reduce(x, idx, upd, "add", axis=0)
    for _ in range(3):
        assert same(vkdml.scatter_elements(x, idx, upd, reduction="add", deterministic=True),
                    want)
    t = vkdml.scatter_elements(device.tensor(x), device.tensor(idx), device.tensor(upd),
                               reduction="add", deterministic=True)
    assert same(t.numpy(), want)


@contextlib.contextmanager
def switches(**values):
    """A Device created with VKDML_* switches set (read once, when it is created), checked for
    validation messages as the session's Device is."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update({k: str(v) for k, v in values.items()})
    try:
        d = vkdml.Device(validation=True)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k)
            else:
                os.environ[k] = v
    yield d
    messages = d.take_validation_messages()
    assert not messages, "\n".join(messages)


def test_large_path_every_mode():
    """What a user of a device with a small binding range meets: with VKDML_MAX_BINDING_RANGE=512
    (windows of 496 bytes on lavapipe, 256 on the minimum-limits device) every tensor past it
    takes the large path's windows, where random deterministic reductions
    (with VKDML_ATOMICS=32 too: no 64-bit or float atomics) and float64 reductions in the default
    mode without 64-bit atomics all run, bit for bit the sequential order's (NumPy's ufunc.at);
    mean too, its counts and divisions a piece of the output at a time."""
    rng = np.random.default_rng(26)
    with switches(VKDML_MAX_BINDING_RANGE=512) as wide, \
            switches(VKDML_MAX_BINDING_RANGE=512, VKDML_ATOMICS=32) as narrow:
        for case in range(100):
            d = narrow if case % 2 else wide
            deterministic = case < 75
            dtype = DATA_TYPES[int(rng.integers(len(DATA_TYPES)))] if deterministic \
                else np.float64
            reduction = REDUCTIONS[case % 5]
            if not reduces(d, dtype, reduction):
                continue
            rows = int(rng.integers(200, 600))  # past every window, even of 1-byte elements
            x = reduce_values(dtype, (rows, 3), reduction, not deterministic, seed=case)
            idx = rng.integers(-rows, rows, (int(rng.integers(100, 400)), 3))
            upd = reduce_values(dtype, idx.shape, reduction, not deterministic, seed=case + 99)
            kw = dict(reduction=reduction, deterministic=deterministic, device=d)
            want = ref_scatter_reduce(x, idx, upd, reduction, axis=0)
            got = vkdml.scatter_elements(x, idx, upd, axis=0, **kw)
            assert same(got, want), (case, name(dtype), reduction)
            nd_idx = idx[:, :1] % rows
            nd_upd = upd
            got = vkdml.scatter_nd(x, nd_idx, nd_upd, **kw)
            assert same(got, ref_scatter_reduce(x, nd_idx, nd_upd, reduction)), (case, name(dtype))


# --- layouts: NumPy's result whatever the array's memory looks like -----------------------


def layouts(a):
    """a, and arrays equal to it in other layouts."""
    yield "C", a
    yield "Fortran", np.asfortranarray(a)
    ro = a.copy()
    ro.setflags(write=False)
    yield "read-only", ro
    if a.dtype.itemsize > 1:
        yield "big-endian", a.astype(a.dtype.newbyteorder(">"))
    yield "reversed", np.ascontiguousarray(a[::-1])[::-1]
    wide = np.zeros((a.shape[0] * 3,) + a.shape[1:], a.dtype)
    wide[::3] = a
    yield "stepped", wide[::3]
    if a.ndim > 1:
        yield "transposed view", np.ascontiguousarray(a.T).T


@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.int32, np.float64], ids=name)
def test_layouts(device, dtype):
    x = sample(dtype, (4, 6), seed=3)
    idx = np.array([[3, -1, 0, 2, 1, 0], [0, 1, 2, 3, -4, 1]], np.int64)
    upd = sample(dtype, (2, 6), seed=4)
    want = {
        "gather": ref_gather(x, idx, 1),
        "gather_elements": ref_gather_elements(x, idx, 0),
        "gather_nd": ref_gather_nd(x, idx[:, :1]),
        "scatter_elements": ref_scatter_elements(x, np.array([[0, 1, 2, 3, 0, 1],
                                                              [1, 0, 3, 2, 2, 3]]), upd, 0),
    }
    for xl, xa in layouts(x):
        for il, ia in layouts(idx):
            assert same(vkdml.gather(xa, ia, axis=1), want["gather"]), (xl, il)
            assert same(vkdml.gather_elements(xa, ia), want["gather_elements"]), (xl, il)
            assert same(vkdml.gather_nd(xa, ia[:, :1]), want["gather_nd"]), (xl, il)
        for ul, ua in layouts(upd):
            got = vkdml.scatter_elements(xa, np.array([[0, 1, 2, 3, 0, 1], [1, 0, 3, 2, 2, 3]]),
                                         ua)
            assert same(got, want["scatter_elements"]), (xl, ul)


def test_odd_byte_counts(device):
    """3 bytes of uint8 and 3 float16s: DirectML's sizes round up to 4 bytes; nothing past the
    arrays is read (the module copies such inputs), and the results are the arrays' size."""
    for dtype in (np.uint8, np.int8, np.bool_, np.float16, np.int16):
        x = sample(dtype, (3,), seed=5)
        got = vkdml.gather(x, np.array([2, 1, 0]))
        assert same(got, x[::-1].copy())
        got = vkdml.scatter_elements(x, np.array([1]), x[:1].copy())
        want = x.copy()
        want[1] = x[0]
        assert same(got, want)
        assert same(device.tensor(x).numpy(), x)


def test_empty_and_0d(device):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    empty = np.zeros((0,), np.int64)
    assert same(vkdml.gather(x, empty, axis=1), np.take(x, empty, axis=1))
    assert same(vkdml.gather(x, np.zeros((2, 0), np.int64)), np.take(x, np.zeros((2, 0), int), 0))
    assert same(vkdml.gather_elements(x, np.zeros((0, 3), np.int64)), np.zeros((0, 3), np.float32))
    assert same(vkdml.gather_nd(x, np.zeros((0, 1), np.int64)), np.zeros((0, 3), np.float32))
    assert same(vkdml.scatter_nd(x, np.zeros((0, 1), np.int64), np.zeros((0, 3), np.float32)), x)
    assert same(vkdml.scatter_elements(x, np.zeros((0, 3), np.int64),
                                       np.zeros((0, 3), np.float32)), x)
    # A gather with an empty result checks its indices only when asked, as the device does.
    assert same(vkdml.gather(np.zeros((0, 2)), np.array([5]), axis=1), np.zeros((0, 1)))
    with pytest.raises(IndexError, match=r"indices\[0\] is 5, outside the valid range \[-2, 1\]"):
        vkdml.gather(np.zeros((0, 2)), np.array([5]), axis=1, check_indices=True)
    # 0-d arrays act as one-element arrays (PyTorch's 0-d tensors in gather and scatter).
    five = np.array(5.0, np.float32)
    assert same(vkdml.gather_elements(five, np.array(0)), five)
    assert same(vkdml.gather_elements(five, np.array([0, -1])), np.array([5.0, 5.0], np.float32))
    assert same(vkdml.scatter_elements(five, np.array(0), np.array(7.0, np.float32)),
                np.array(7.0, np.float32))
    assert same(vkdml.gather(five, np.array([0, 0])), np.array([5.0, 5.0], np.float32))
    assert same(vkdml.gather(x, np.array(1), axis=1), x[:, 1].copy())


def test_host_objects(device):
    """The buffer protocol and lists: anything np.asarray takes."""
    data = bytearray(range(10))
    assert same(vkdml.gather(data, [9, 0, -1]), np.array([9, 0, 9], np.uint8))
    assert same(vkdml.gather(memoryview(data)[2:], [0]), np.array([2], np.uint8))
    floats = array.array("f", [1.5, 2.5, 3.5])
    assert same(vkdml.gather(floats, array.array("i", [2, 0])), np.array([3.5, 1.5], np.float32))
    assert same(vkdml.gather([[1, 2], [3, 4]], [1], axis=1), np.array([[2], [4]]))


# --- device tensors -------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DATA_TYPES, ids=name)
def test_tensor_round_trip(device, dtype):
    for shape in [(), (1,), (3,), (5, 7), (2, 3, 4)]:
        a = sample(dtype, shape, seed=9)
        t = device.tensor(a)
        assert t.shape == shape and t.dtype == np.dtype(dtype) and t.device is device
        assert same(t.numpy(), a)
    assert device.empty((2, 3), dtype).numpy().shape == (2, 3)


def test_tensor_chain(device):
    """A chain of operators on device tensors: no host round trip between them, and the same
    result as the host route."""
    rng = np.random.default_rng(10)
    x = rng.standard_normal((8, 5)).astype(np.float32)
    idx = rng.integers(-8, 8, (12,))
    rows = np.array([[3, 1, 0, 2, 4]] * 2)
    upd = rng.standard_normal((2, 5)).astype(np.float32)
    host = vkdml.scatter_elements(vkdml.gather(x, idx), rows, upd)
    t = vkdml.gather(device.tensor(x), device.tensor(idx))
    assert isinstance(t, vkdml.Tensor) and t.shape == (12, 5)
    t = vkdml.scatter_elements(t, rows, upd)  # host arrays beside a tensor go to its device
    assert isinstance(t, vkdml.Tensor)
    assert same(t.numpy(), host)
    assert same(host, ref_scatter_elements(ref_gather(x, idx, 0), rows, upd, 0))
    # Every function on tensors.
    tx = device.tensor(x)
    assert same(vkdml.gather_elements(tx, rows).numpy(), ref_gather_elements(x, rows, 0))
    assert same(vkdml.gather_nd(tx, device.tensor(idx[:, None])).numpy(),
                ref_gather_nd(x, idx[:, None]))
    assert same(vkdml.scatter_nd(tx, np.array([[7], [0]]), upd).numpy(),
                ref_scatter_nd(x, np.array([[7], [0]]), upd))


def test_tensor_out_and_in_place(device):
    x = np.arange(20, dtype=np.int32).reshape(4, 5)
    idx = np.array([[2], [0]])
    upd = np.full((2, 5), -1, np.int32)
    want = ref_scatter_nd(x, idx, upd)
    t = device.tensor(x)
    assert vkdml.scatter_nd(t, idx, upd, out=t) is t  # in place
    assert same(t.numpy(), want)
    assert vkdml.scatter_nd(t, idx, upd, reduction="add", out=t) is t
    assert same(t.numpy(), ref_scatter_reduce(want, idx, upd, "add"))
    other = device.empty((4, 5), np.int32)
    src = device.tensor(x)
    assert vkdml.scatter_nd(src, idx, upd, out=other) is other
    assert same(other.numpy(), want) and same(src.numpy(), x)
    # Indices smaller than x off the axis: the output starts as a copy of x.
    small = np.array([[1, 0]])
    got = vkdml.scatter_elements(device.tensor(x), small, np.array([[7, 8]], np.int32))
    assert same(got.numpy(), ref_scatter_elements(x, small, np.array([[7, 8]], np.int32), 0))
    t = device.tensor(x)
    vkdml.scatter_elements(t, small, np.array([[7, 8]], np.int32), out=t)
    assert same(t.numpy(), got.numpy())
    # Host arrays: out= receives the result.
    host_out = np.empty((4, 5), np.int32)
    assert vkdml.scatter_nd(x, idx, upd, out=host_out) is host_out
    assert same(host_out, want)
    with pytest.raises(ValueError, match=r"out: shape \(4, 5\) int32, expected \(4, 5\) float32"):
        vkdml.scatter_nd(device.tensor(x.astype(np.float32)), idx, upd.astype(np.float32),
                         out=other)
    with pytest.raises(TypeError, match="out: expected a vkdml.Tensor"):
        vkdml.scatter_nd(device.tensor(x), idx, upd, out=host_out)
    with pytest.raises(TypeError, match="out: expected a vkdml.Tensor"):  # any tensor argument
        vkdml.scatter_nd(x, device.tensor(idx), upd, out=host_out)


def test_tensor_errors(device):
    x = np.arange(6, dtype=np.float32)
    with pytest.raises(IndexError, match=r"indices: indices\[1\] is 6, outside the valid range"):
        vkdml.gather(device.tensor(x), np.array([0, 6]), check_indices=True)
    # No update to apply (none needs the device), yet the indices are checked when asked.
    empty = device.tensor(np.zeros((3, 0), np.float32))
    with pytest.raises(IndexError, match=r"indices\[0,0\] is 9, outside the valid range \[-3, 2\]"):
        vkdml.scatter_nd(empty, np.array([[9]]), np.zeros((1, 0), np.float32), check_indices=True)
    assert vkdml.scatter_nd(empty, np.array([[9]]), np.zeros((1, 0), np.float32)).shape == (3, 0)
    other = vkdml.Device()
    with pytest.raises(ValueError, match="indices is a tensor on another device"):
        vkdml.gather(device.tensor(x), other.tensor(np.array([0])))


# --- errors: Python's exceptions with the library's message; nothing crashes ---------------


def test_errors(device):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    i = np.array([[0, 1, 2]])
    cases = [
        (TypeError, "x: dtype is object, expected a numeric or bool dtype",
         lambda: vkdml.gather(np.array([1, "a"], object), [0])),
        (TypeError, "x: dtype is object", lambda: vkdml.gather(None, [0])),
        (TypeError, "x: dtype is complex64, expected one of bool, int8",
         lambda: vkdml.gather(np.zeros(2, np.complex64), [0])),
        (TypeError, "indices: dtype is float64, expected an integer type",
         lambda: vkdml.gather(x, np.array([1.0]))),
        (TypeError, "indices: dtype is bool, expected an integer type",
         lambda: vkdml.gather(x, np.array([True]))),
        (TypeError, "updates: dtype is float64, expected float32 \\(the dtype of x\\)",
         lambda: vkdml.scatter_elements(x, i, np.zeros((1, 3)))),
        (ValueError, "axis is 2, expected -2 to 1 \\(x has rank 2\\)",
         lambda: vkdml.gather(x, [0], axis=2)),
        (ValueError, "axis is -3, expected -2 to 1",
         lambda: vkdml.gather_elements(x, i, axis=-3)),
        (TypeError, "axis is 1.0, expected an int", lambda: vkdml.gather(x, [0], axis=1.0)),
        (ValueError, "batch_dims is 2, expected 0 to 1",
         lambda: vkdml.gather_nd(x, np.zeros((2, 1), np.int64), batch_dims=2)),
        (ValueError, "indices: rank is 1 \\(shape \\(3,\\)\\), expected 2 \\(the rank of x\\)",
         lambda: vkdml.gather_elements(x, np.array([0, 1, 2]))),
        (ValueError, "updates: shape is \\(1, 2\\), expected \\(1, 3\\) \\(the shape of indices\\)",
         lambda: vkdml.scatter_elements(x, i, np.zeros((1, 2), np.float32))),
        (ValueError, "updates: shape is \\(2,\\), expected \\(3,\\)",
         lambda: vkdml.scatter_nd(x, np.array([1]), np.zeros(2, np.float32))),
        (ValueError, "indices: shape\\[-1\\] \\(the index tuple size\\) is 3, expected 1 to 2",
         lambda: vkdml.gather_nd(x, np.zeros((1, 3), np.int64))),
        (ValueError, "x: rank is 0, expected at least 1 for gather_nd",
         lambda: vkdml.gather_nd(np.array(1.0), np.zeros((1, 1), np.int64))),
        (ValueError, "reduction is 'sum', expected one of none, add, mul, max, min",
         lambda: vkdml.scatter_nd(x, np.array([[0]]), x[:1], reduction="sum")),
        (IndexError, "indices: indices\\[0,2\\] is 3, outside the valid range \\[-3, 2\\]",
         lambda: vkdml.gather_elements(x, np.array([[0, 1, 3]]), axis=1, check_indices=True)),
        (IndexError, "indices: indices\\[1,0\\] is 4294967295, outside the valid range \\[0, 1\\]",
         lambda: vkdml.scatter_nd(x, np.array([[1], [2**32 - 1]], np.uint32), np.zeros((2, 3),
                                  np.float32), check_indices=True)),
        (TypeError, "device is 'gpu', expected a vkdml.Device or None",
         lambda: vkdml.gather(x, [0], device="gpu")),
        (ValueError, "index is 1000, expected 0 to", lambda: vkdml.Device(1000)),
        (TypeError, "index is '0', expected an int or None", lambda: vkdml.Device("0")),
        (ValueError, "out: shape is \\(3,\\), expected \\(2, 3\\)",
         lambda: vkdml.scatter_nd(x, np.array([[0]]), x[:1], out=np.zeros(3, np.float32))),
    ]
    for exception, message, call in cases:
        with pytest.raises(exception, match=message):
            call()


def test_random_arguments(device):
    """Random shapes, ranks, dtypes, axes and batch dims, most of them invalid: every call
    returns or raises TypeError, ValueError or IndexError (never anything else, never a crash),
    and what returns equals the reference."""
    rng = np.random.default_rng(16)
    dtypes = [np.float32, np.int64, np.uint8, np.float64, np.bool_, np.int16]
    for case in range(300):
        x = sample(dtypes[case % len(dtypes)], random_shape(rng, int(rng.integers(0, 4)), 0, 3),
                   seed=case)
        idx = rng.integers(-4, 5, random_shape(rng, int(rng.integers(0, 4)), 0, 3))
        idx = idx.astype(INDEX_TYPES[case % 4] if case % 3 else np.int64)
        upd = sample(x.dtype.type, idx.shape if case % 2 else random_shape(rng, 2, 0, 3),
                     seed=case + 1)
        axis, b = int(rng.integers(-4, 4)), int(rng.integers(-1, 3))
        check = bool(case % 5 == 0)
        calls = {
            "gather": lambda: vkdml.gather(x, idx, axis=axis, check_indices=check),
            "gather_elements": lambda: vkdml.gather_elements(x, idx, axis=axis,
                                                             check_indices=check),
            "gather_nd": lambda: vkdml.gather_nd(x, idx, batch_dims=b, check_indices=check),
            "scatter_elements": lambda: vkdml.scatter_elements(x, idx, upd, axis=axis,
                                                               check_indices=check),
            "scatter_nd": lambda: vkdml.scatter_nd(x, idx, upd, check_indices=check),
        }
        for op, call in calls.items():
            try:
                got = call()
            except (TypeError, ValueError, IndexError):
                continue
            assert isinstance(got, np.ndarray) and got.dtype == x.dtype, (op, case)
            xs = x.reshape(x.shape or (1,))
            if op == "gather":
                a = axis % xs.ndim
                assert got.shape == xs.shape[:a] + idx.shape + xs.shape[a + 1:], (op, case)
                if got.size:  # an empty result reads no index (none is checked unless asked)
                    assert same(got, ref_gather(xs, idx, axis)), (op, case)
            elif op == "gather_nd" and got.size:
                assert same(got, ref_gather_nd(x, idx, b)), (op, case)


def test_device_queries(device):
    assert device.name and device.driver
    assert device.limits["max_storage_buffer_range"] >= 2**27
    assert device.limits["api_version"] >= (1, 1, 0)
    assert set(device.features) >= {"storageBuffer8BitAccess", "shaderFloat64"}
    for dtype in DATA_TYPES:
        assert device.supports(dtype)  # every type on every device
    assert device.supports_reduction(np.int32, "add")
    # Any size on the large path; embedding bags' and block-quantized gathers' tensors fit one
    # binding, less its offset alignment (at least 16 bytes).
    for function in ("gather", "gather_elements", "gather_nd", "scatter_elements", "scatter_nd",
                     "dequantize_rows", "quantize_rows"):
        assert device.max_tensor_bytes(function) is None, function
    one = device.limits["max_storage_buffer_range"] - device.max_tensor_bytes("embedding_bag")
    assert 16 <= one <= 4096
    assert device.max_tensor_bytes("gather_block_quantized") == \
        device.max_tensor_bytes("embedding_bag")
    with pytest.raises(ValueError, match="function is 'scatter', expected one of gather, "):
        device.max_tensor_bytes("scatter")
    with pytest.raises(TypeError, match="dtype is complex128, expected one of"):
        device.supports(np.complex128)
    with pytest.raises(ValueError,
                       match="reduction is 'none', expected add, mul, max, min or mean"):
        device.supports_reduction(np.float32, "none")
    assert vkdml.default_device() is device
    assert repr(device.tensor(np.zeros(2))).startswith("vkdml.Tensor(shape=(2,), dtype=float64")


def test_threads_overlap(device):
    """A call releases the GIL while the device works: another Python thread runs meanwhile."""
    x = np.random.default_rng(11).standard_normal((1 << 22,)).astype(np.float32)
    idx = np.random.default_rng(12).integers(0, 1 << 22, (1 << 22,))
    vkdml.gather(x, idx)  # compiled and staged once
    state = {"running": False, "done": False}

    def work():
        state["running"] = True
        for _ in range(3):
            vkdml.gather(x, idx)
        state["done"] = True

    worker = threading.Thread(target=work)
    ticks = 0
    worker.start()
    while not state["running"]:
        time.sleep(0)
    while not state["done"]:
        ticks += 1
        time.sleep(0.0005)
    worker.join()
    # Holding the GIL, the calls would let this loop run a few times in all (Python switches
    # threads every 5 ms); released, it runs all along.
    assert ticks >= 50, ticks


# --- PyTorch's CPU ops, where python3-torch is installed ------------------------------------


@pytest.mark.filterwarnings(r"ignore:scatter_reduce\(\) is in beta")
def test_torch(device):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(13)
    x = rng.standard_normal((6, 5)).astype(np.float32)
    tx = torch.from_numpy(x)
    idx = rng.integers(0, 6, (4, 5))
    tidx = torch.from_numpy(idx)
    # Host arrays straight from tensors (DLPack), views included, without a copy.
    assert np.shares_memory(vkdml._host(tx.t(), "x"), x)
    assert same(vkdml.gather_elements(tx, tidx), torch.gather(tx, 0, tidx).numpy())
    assert same(vkdml.gather_elements(tx.t(), tidx.t()[:, :4], axis=1),
                torch.gather(tx.t(), 1, tidx.t()[:, :4]).numpy())
    assert same(vkdml.gather(tx, torch.tensor([4, 0, 3]), axis=1),
                torch.index_select(tx, 1, torch.tensor([4, 0, 3])).numpy())
    # 0-d tensors.
    five = torch.tensor(5.0)
    assert same(vkdml.gather_elements(five, torch.tensor(0)),
                torch.gather(five, 0, torch.tensor(0)).numpy())
    assert same(vkdml.scatter_elements(five, torch.tensor(0), torch.tensor(7.0)),
                torch.scatter(five, 0, torch.tensor(0), torch.tensor(7.0)).numpy())
    # torch.scatter with distinct targets, and scatter_reduce with include_self (ONNX's) and
    # without it.
    perm = torch.from_numpy(np.stack([rng.permutation(6)[:4] for _ in range(5)], axis=1))
    src = torch.from_numpy(rng.standard_normal((4, 5)).astype(np.float32))
    assert same(vkdml.scatter_elements(tx, perm, src), torch.scatter(tx, 0, perm, src).numpy())
    names = {"add": "sum", "mul": "prod", "max": "amax", "min": "amin", "mean": "mean"}
    for dtype, tdtype in [(np.float32, torch.float32), (np.int64, torch.int64),
                          (np.float64, torch.float64), (np.int32, torch.int32)]:
        for red in REDUCTIONS:
            if not device.supports_reduction(dtype, red):
                continue
            base = reduce_values(dtype, (6, 5), red, True, seed=14)
            upd = reduce_values(dtype, (4, 5), red, True, seed=15)
            for include_self in (True, False):
                want = torch.scatter_reduce(torch.from_numpy(base), 0, tidx,
                                            torch.from_numpy(upd), reduce=names[red],
                                            include_self=include_self)
                assert want.dtype == tdtype
                got = vkdml.scatter_elements(base, idx, upd, reduction=red,
                                             include_self=include_self)
                assert same(got, want.numpy()), (red, include_self)
    # What NumPy cannot read (a tensor that requires grad) is a TypeError naming the argument.
    with pytest.raises(TypeError, match="x: Tensor is not a host array vkdml can read"):
        vkdml.gather(torch.zeros(2, requires_grad=True), [0])
    # Out-of-range indices: PyTorch refuses them; vkdml clamps them, or refuses when asked.
    with pytest.raises(RuntimeError):
        torch.gather(tx, 0, torch.tensor([[6]]))
    with pytest.raises(IndexError):
        vkdml.gather_elements(tx, torch.tensor([[6]]), check_indices=True)
    assert same(vkdml.gather_elements(tx, torch.tensor([[6]])), x[5:6, :1].copy())


def test_readme_example(device):
    """README.md's Python example runs as printed: its output is the block that follows it."""
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                           "README.md")) as f:
        readme = f.read()
    section = readme[readme.index("\n## Python\n"):]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    printed = section.split("```python\n", 1)[1].split("```\n```\n", 1)[1].split("```", 1)[0]
    assert len(code.strip().splitlines()) == 5
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    assert out.getvalue() == printed
