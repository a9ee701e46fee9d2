"""vkdml.dequantize_rows and vkdml.quantize_rows against the NumPy references the CLI's tests
share (test/cli/onnx_reference.py): ggml's Q8_0 and Q4_0 blocks dequantized in float32 (then
rounded to float16 by NumPy), rows taken with DirectML's clamp; ggml's reference quantizer."""
import numpy as np
import pytest

import vkdml
from onnx_reference import QUANTIZED_BLOCK_BYTES as BLOCK
from onnx_reference import ref_dequantize as dequantize
from onnx_reference import ref_quantize as quantize


def random_table(rng, fmt, rows, blocks):
    t = rng.integers(0, 256, size=(rows, blocks, BLOCK[fmt]), dtype=np.uint8)
    t[:, :, 1] &= 0xBB  # finite scales: a float16 exponent below 31
    return t.reshape(rows, blocks * BLOCK[fmt])


def clamp(indices, n):
    i = np.clip(np.asarray(indices, dtype=np.int64), -n, n - 1)
    return np.where(i < 0, i + n, i)


@pytest.mark.parametrize("fmt", ["q8_0", "q4_0"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("itype", [np.int32, np.int64, np.uint32, np.uint64])
def test_dequantize_rows(device, fmt, dtype, itype):
    rng = np.random.default_rng(7)
    rows, blocks = 23, 3
    table = random_table(rng, fmt, rows, blocks)
    lo = -rows - 3 if np.dtype(itype).kind == "i" else 0
    indices = rng.integers(lo, rows + 3, size=(4, 5)).astype(itype)  # duplicates, out of range
    got = vkdml.dequantize_rows(table, indices, fmt, dtype=dtype)
    want = dequantize(table, fmt)[clamp(indices, rows)].astype(dtype)
    assert got.shape == (4, 5, blocks * 32) and got.dtype == np.dtype(dtype)
    assert got.tobytes() == want.tobytes()


def test_dequantize_rows_strided_table_and_scalars(device):
    rng = np.random.default_rng(8)
    wide = random_table(rng, "q4_0", 12, 5)
    table = wide[::2, : 2 * 18]  # every other row, the first 2 blocks: a strided view
    got = vkdml.dequantize_rows(table, np.int64(-1), "q4_0")
    assert got.shape == (64,)
    assert got.tobytes() == dequantize(np.ascontiguousarray(table), "q4_0")[-1].tobytes()
    empty = vkdml.dequantize_rows(table, np.zeros((0, 3), np.int32), "q4_0")
    assert empty.shape == (0, 3, 64)


def test_dequantize_rows_on_device_tensors(device):
    rng = np.random.default_rng(9)
    table = random_table(rng, "q8_0", 10, 2)
    t = vkdml.dequantize_rows(device.tensor(table), np.array([3, 3, 9]), "q8_0",
                              dtype=np.float16)
    assert isinstance(t, vkdml.Tensor) and t.shape == (3, 64)
    want = dequantize(table, "q8_0")[[3, 3, 9]].astype(np.float16)
    assert t.numpy().tobytes() == want.tobytes()


def test_dequantize_rows_out_of_range(device):
    table = random_table(np.random.default_rng(10), "q8_0", 4, 1)
    with pytest.raises(IndexError, match="is 4"):
        vkdml.dequantize_rows(table, np.array([0, 4]), "q8_0", check_indices=True)
    with pytest.raises(IndexError):
        vkdml.dequantize_rows(table, np.array([-5]), "q8_0", out_of_range="error")
    got = vkdml.dequantize_rows(table, np.array([1, 7]), "q8_0", out_of_range="fill",
                                fill_value=-2.5)
    assert got[0].tobytes() == dequantize(table, "q8_0")[1].tobytes()
    assert (got[1] == -2.5).all()


def test_dequantize_rows_refuses(device):
    table = np.zeros((4, 34), np.uint8)
    idx = np.array([0])
    with pytest.raises(ValueError, match="format is 'q5_0', expected one of q8_0, q4_0"):
        vkdml.dequantize_rows(table, idx, "q5_0")
    with pytest.raises(TypeError, match="dtype is float64, expected float32 or float16"):
        vkdml.dequantize_rows(table, idx, "q8_0", dtype=np.float64)
    with pytest.raises(ValueError, match="table: dtype is int8, expected uint8"):
        vkdml.dequantize_rows(table.view(np.int8), idx, "q8_0")
    with pytest.raises(ValueError, match=r"table: rank is 1 \(shape \(136,\)\), expected 2"):
        vkdml.dequantize_rows(table.reshape(-1), idx, "q8_0")
    with pytest.raises(ValueError, match=r"expected \(rows, a multiple of 18 bytes\)"):
        vkdml.dequantize_rows(table, idx, "q4_0")
    with pytest.raises(ValueError, match="out_of_range is 'drop'"):
        vkdml.dequantize_rows(table, idx, "q8_0", out_of_range="drop")


def random_rows(rng, shape):
    x = rng.standard_normal(shape).astype(np.float32)
    x *= np.float32(2.0) ** rng.integers(-30, 30, size=shape[:-1] + (1,)).astype(np.float32)
    x[..., :32][..., 5] = 0  # zeros among the values
    return x


@pytest.mark.parametrize("fmt", ["q8_0", "q4_0"])
@pytest.mark.parametrize("itype", [np.int32, np.int64, np.uint32, np.uint64])
def test_quantize_rows(device, fmt, itype):
    rng = np.random.default_rng(11)
    table = random_table(rng, fmt, 17, 2)
    lo = -20 if np.dtype(itype).kind == "i" else 0
    idx = rng.integers(lo, 20, size=(3, 4)).astype(itype)
    rows = random_rows(rng, (3, 4, 64))
    got = vkdml.quantize_rows(table, idx, rows, fmt)
    want = table.copy()
    blocks = quantize(rows, fmt)
    for n, r in enumerate(clamp(idx, 17).reshape(-1)):  # in order: the later one stays
        want[r] = blocks.reshape(-1, want.shape[1])[n]
    assert got.dtype == np.uint8 and got.shape == table.shape
    assert got.tobytes() == want.tobytes()
    back = vkdml.dequantize_rows(got, clamp(idx, 17), fmt)
    assert back.shape == rows.shape


def test_quantize_rows_in_place_on_device(device):
    rng = np.random.default_rng(12)
    table = random_table(rng, "q4_0", 6, 3)
    t = device.tensor(table)
    rows = random_rows(rng, (2, 96))
    res = vkdml.quantize_rows(t, np.array([5, 1]), rows, "q4_0", out=t)
    assert res is t
    want = table.copy()
    want[[5, 1]] = quantize(rows, "q4_0")
    assert t.numpy().tobytes() == want.tobytes()
    host = np.zeros_like(table)
    assert vkdml.quantize_rows(table, np.array([0]), rows[:1], "q4_0", out=host) is host
    assert host[1:].tobytes() == table[1:].tobytes()


def test_quantize_rows_out_of_range_and_refusals(device):
    table = random_table(np.random.default_rng(13), "q8_0", 3, 1)
    rows = np.ones((2, 32), np.float32)
    got = vkdml.quantize_rows(table, np.array([7, 2]), rows, "q8_0", out_of_range="drop")
    assert got[:2].tobytes() == table[:2].tobytes()
    assert got[2].tobytes() == quantize(rows[1], "q8_0").tobytes()
    with pytest.raises(IndexError, match="is 7"):
        vkdml.quantize_rows(table, np.array([7, 2]), rows, "q8_0", check_indices=True)
    with pytest.raises(ValueError, match=r"rows: dtype is float64, expected float32"):
        vkdml.quantize_rows(table, np.array([0, 1]), rows.astype(np.float64), "q8_0")
    with pytest.raises(ValueError, match=r"rows: shape is \(2, 32\), expected \(3, 32\)"):
        vkdml.quantize_rows(table, np.array([0, 1, 2]), rows, "q8_0")
    with pytest.raises(ValueError, match="out_of_range is 'fill'"):
        vkdml.quantize_rows(table, np.array([0]), rows[:1], "q8_0", out_of_range="fill")
