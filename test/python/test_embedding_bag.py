"""vkdml.embedding_bag against the NumPy reference the CLI's tests share
(test/cli/onnx_reference.py: the definition read literally, in float32 steps), bit for bit, over
float32, float16, Q8_0 and Q4_0 tables; and against torch.nn.functional.embedding_bag on the
CPU where its arithmetic is the same."""
import zlib

import numpy as np
import pytest

import vkdml
from onnx_reference import QUANTIZED_BLOCK_BYTES as BLOCK
from onnx_reference import ref_dequantize, ref_embedding_bag, same_bits


def random_values(rng, shape):
    """float32 values whose sums round: any significand, exponents from -6 to 6, some zeros."""
    v = rng.standard_normal(shape).astype(np.float32) * np.float32(4)
    v[rng.random(shape) < 0.05] = 0
    return v


def random_blocks(rng, fmt, rows, blocks):
    t = rng.integers(0, 256, size=(rows, blocks, BLOCK[fmt]), dtype=np.uint8)
    t[:, :, 1] &= 0xBB  # finite scales
    return t.reshape(rows, blocks * BLOCK[fmt])


def random_offsets(rng, n, count):
    o = np.sort(rng.integers(0, n + 1, count))
    o[0] = 0
    return o


def case(rng, layout, rows, width):
    """A table of the layout, its values as float32, and the result's dtype."""
    if layout in BLOCK:
        table = random_blocks(rng, layout, rows, width // 32)
        return table, ref_dequantize(table, layout), np.float32
    values = random_values(rng, (rows, width)).astype(layout)
    return values, values.astype(np.float32), np.dtype(layout)


@pytest.mark.parametrize("layout", [np.float32, np.float16, "q8_0", "q4_0"])
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_vs_reference(device, layout, mode):
    rng = np.random.default_rng(zlib.crc32(f"{layout} {mode}".encode()))  # the same every run
    # One width per layout and one padding row: each width and padding row compiles its own
    # pipelines (the C++ sweep takes random ones; here the mapping and the modes matter).
    width = 64 if layout in BLOCK else 7
    for trial in range(2):  # 0: weights (sum), 1: include_last_offset and padding_idx
        rows = int(rng.integers(2, 20))
        table, values, out = case(rng, layout, rows, width)
        # Sum and mean (float32 arithmetic, a costly pipeline to build on lavapipe) with one
        # index type; max with the unsigned ones. The C++ sweep and cli.bag take every pairing.
        itype = [np.uint32, np.uint64][trial] if mode == "max" else np.int64
        n = int(rng.integers(1, 40))
        lo = -rows - 2 if np.dtype(itype).kind == "i" else 0
        idx = rng.integers(lo, rows + 2, n).astype(itype)  # duplicates, out of range: clamped
        off = random_offsets(rng, n, int(rng.integers(1, 8))).astype(itype)
        last = trial == 1 and len(off) > 1
        pad = 1 if trial == 1 else None
        weights = rng.standard_normal(n).astype(out) if mode == "sum" and trial == 0 else None
        got = vkdml.embedding_bag(table, idx, off, mode=mode, per_sample_weights=weights,
                                  include_last_offset=last, padding_idx=pad,
                                  format=layout if layout in BLOCK else None)
        want = ref_embedding_bag(values, idx, off, mode, weights, last, pad).astype(out)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert same_bits(got, want), (trial, got, want)


def test_embedding_bag_by_hand(device):
    table = np.array([[1, 2, 3], [-4, 5, 0.5], [7, -8, 9], [10, 11, -12]], np.float32)
    idx, off = np.array([0, 2, 2, 1, 1, 3]), np.array([0, 2, 3, 3])
    np.testing.assert_array_equal(vkdml.embedding_bag(table, idx, off),
                                  [[8, -6, 12], [7, -8, 9], [0, 0, 0], [2, 21, -11]])
    np.testing.assert_array_equal(vkdml.embedding_bag(table, idx, off, mode="max"),
                                  [[7, 2, 9], [7, -8, 9], [0, 0, 0], [10, 11, 0.5]])
    np.testing.assert_array_equal(  # row 1 skipped and not counted
        vkdml.embedding_bag(table, idx, off, mode="mean", padding_idx=1),
        [[4, -3, 6], [7, -8, 9], [0, 0, 0], [10, 11, -12]])
    np.testing.assert_array_equal(  # offsets[-1] ends the last bag: entry 5 is in none
        vkdml.embedding_bag(table, idx, [0, 2, 5], include_last_offset=True),
        [[8, -6, 12], [-1, 2, 10]])
    np.testing.assert_array_equal(  # 2-D indices: a bag per row
        vkdml.embedding_bag(table, np.array([[0, 1], [3, 3]]), mode="sum"),
        [[-3, 7, 3.5], [20, 22, -24]])


def test_embedding_bag_out_of_range(device):
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    idx, off = np.array([1, 9, 2, -7], np.int64), np.array([0, 2])
    clamped = vkdml.embedding_bag(table, idx, off)
    np.testing.assert_array_equal(clamped, [[12, 14, 16], [6, 8, 10]])  # 9 -> 3, -7 -> -4 = 0
    np.testing.assert_array_equal(vkdml.embedding_bag(table, idx, off, out_of_range="drop",
                                                      mode="mean"), [[3, 4, 5], [6, 7, 8]])
    np.testing.assert_array_equal(vkdml.embedding_bag(table, idx, off, out_of_range="fill",
                                                      fill_value=-1), [[2, 3, 4], [5, 6, 7]])
    for kwargs in ({"check_indices": True}, {"out_of_range": "error"}):
        with pytest.raises(IndexError, match=r"indices\[1\] is 9, outside the valid range "
                                             r"\[-4, 3\]"):
            vkdml.embedding_bag(table, idx, off, **kwargs)
    # An entry in no bag is not read, so not checked: entry 1 here.
    vkdml.embedding_bag(table, idx, [2, 2], check_indices=True, include_last_offset=True)


def test_embedding_bag_empty(device):
    table = np.ones((5, 4), np.float16)
    got = vkdml.embedding_bag(table, np.zeros(0, np.int64), [0, 0, 0])
    assert got.dtype == np.float16 and got.shape == (3, 4) and not got.any()
    assert vkdml.embedding_bag(table, np.array([1, 2]), np.zeros(0, np.int64)).shape == (0, 4)
    assert vkdml.embedding_bag(table, np.array([1]), [0], include_last_offset=True).shape == (0, 4)
    t = vkdml.embedding_bag(device.tensor(table), device.tensor(np.zeros(0, np.int32)),
                            device.tensor(np.array([0, 0], np.int32)))
    assert t.numpy().shape == (2, 4) and not t.numpy().any()


def test_embedding_bag_on_device_tensors(device):
    rng = np.random.default_rng(5)
    table = random_blocks(rng, "q4_0", 30, 2)
    idx = rng.integers(0, 30, 50)
    off = random_offsets(rng, 50, 6)
    t = vkdml.embedding_bag(device.tensor(table), device.tensor(idx), off, mode="mean",
                            format="q4_0", dtype=np.float16)
    assert isinstance(t, vkdml.Tensor) and t.shape == (6, 64) and t.dtype == np.float16
    want = ref_embedding_bag(ref_dequantize(table, "q4_0"), idx, off, "mean").astype(np.float16)
    assert same_bits(t.numpy(), want)


def test_embedding_bag_errors(device):
    table = np.ones((4, 3), np.float32)
    idx, off = np.array([0, 1]), np.array([0])
    with pytest.raises(ValueError, match="mode is 'min', expected one of sum, mean, max"):
        vkdml.embedding_bag(table, idx, off, mode="min")
    with pytest.raises(ValueError, match="format is None, expected one of q8_0, q4_0"):
        vkdml.embedding_bag(np.zeros((2, 34), np.uint8), idx, off)
    with pytest.raises(ValueError, match="format applies to a uint8 table"):
        vkdml.embedding_bag(table, idx, off, format="q8_0")
    with pytest.raises(ValueError, match=r"per-sample weights \(per_sample_weights\) apply to "
                                         r"mode sum only, not max"):
        vkdml.embedding_bag(table, idx, off, mode="max", per_sample_weights=np.ones(2, np.float32))
    with pytest.raises(ValueError, match=r"per_sample_weights: dtype is float16, expected "
                                         r"float32 \(the output's\)"):
        vkdml.embedding_bag(table, idx, off, per_sample_weights=np.ones(2, np.float16))
    with pytest.raises(ValueError, match=r"offsets: dtype is int32, expected int64 \(the dtype "
                                         r"of indices\)"):
        vkdml.embedding_bag(table, idx, off.astype(np.int32))
    with pytest.raises(ValueError, match=r"padding_idx is 4, expected -4 to 3 \(table has 4 "
                                         r"rows\)"):
        vkdml.embedding_bag(table, idx, off, padding_idx=4)
    with pytest.raises(ValueError, match=r"indices: rank is 2 \(shape \(1, 2\)\), expected 1"):
        vkdml.embedding_bag(table, idx.reshape(1, 2), off)
    with pytest.raises(ValueError, match="table: dtype is int32, expected float32 or float16"):
        vkdml.embedding_bag(table.astype(np.int32), idx, off)


torch = pytest.importorskip("torch")


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_vs_torch(device, mode):
    """PyTorch's CPU embedding_bag adds the rows in index order in float32 too: the same bits
    (with per-sample weights it fuses each product with its sum, so it differs by an ulp)."""
    rng = np.random.default_rng(11)
    table = random_values(rng, (100, 24))
    idx = rng.integers(0, 100, 300)
    off = random_offsets(rng, 300, 40)
    # PyTorch's include_last_offset takes CSR offsets, the last one len(indices): with another
    # last offset its CPU kernel (1.13) divides the last mean by the wrong count and writes past
    # its output (valgrind: invalid writes in _embedding_bag_forward_only_cpu).
    csr = off.copy()
    csr[-1] = len(idx)
    for last, pad in ((False, None), (False, 7), (True, None), (True, 7)):
        o = csr if last else off
        got = vkdml.embedding_bag(table, idx, o, mode=mode, include_last_offset=last,
                                  padding_idx=pad)
        want = torch.nn.functional.embedding_bag(
            torch.from_numpy(idx), torch.from_numpy(table), torch.from_numpy(o), mode=mode,
            include_last_offset=last, padding_idx=pad).numpy()
        assert same_bits(got, want), (last, pad)
    got = vkdml.embedding_bag(table, idx.reshape(30, 10), mode=mode)  # 2-D: a bag per row
    want = torch.nn.functional.embedding_bag(torch.from_numpy(idx.reshape(30, 10)),
                                             torch.from_numpy(table), mode=mode).numpy()
    assert same_bits(got, want)
    if mode == "sum":
        w = rng.standard_normal(300).astype(np.float32)
        got = vkdml.embedding_bag(table, idx, off, per_sample_weights=w)
        want = torch.nn.functional.embedding_bag(
            torch.from_numpy(idx), torch.from_numpy(table), torch.from_numpy(off), mode="sum",
            per_sample_weights=torch.from_numpy(w)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
