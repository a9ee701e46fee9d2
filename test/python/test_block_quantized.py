"""vkdml.gather_block_quantized (ONNX Runtime's GatherBlockQuantized) against the NumPy
reference the CLI's tests share (test/cli/onnx_reference.py): every data type and bits,
float32 and float16 scales, zero points or the defaults, random shapes and axes, duplicates and
out-of-range indices (clamped, filled, or an error), device tensors, and its refusals."""
import zlib

import numpy as np
import pytest

import vkdml
from onnx_reference import ref_gather_block_quantized as reference

KINDS = [("int4", 4), ("uint4", 4), ("uint8", 4), ("uint8", 8)]


def random_case(rng, kind, bits, dtype, block_size):
    rank = int(rng.integers(1, 4))
    values = [int(rng.integers(1, 5)) for _ in range(rank - 1)] + [int(rng.integers(1, 40))]
    if bits == 4:
        values[-1] += values[-1] % 2  # a whole byte a row
    qa = int(rng.integers(0, rank))
    data = rng.integers(0, 256, size=values[:-1] + [values[-1] * bits // 8], dtype=np.uint8)
    blocks = list(values)
    blocks[qa] = -(-blocks[qa] // block_size)
    scales = (rng.standard_normal(blocks) * 2.0 ** rng.integers(-12, 4)).astype(dtype)
    zeros = blocks[:-1] + [-(-blocks[-1] * bits // 8)]
    if kind != "uint8" and (blocks[-1] % 2 or rng.random() < 0.3):  # ONNX's packing, whole
        zeros = [-(-int(np.prod(blocks)) // 2)]
    zero_points = rng.integers(0, 256, size=zeros, dtype=np.uint8) if rng.random() < 0.5 else None
    return data, scales, zero_points, int(rng.integers(-rank, rank)), qa


@pytest.mark.parametrize("kind,bits", KINDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("itype", [np.int32, np.uint64])
def test_gather_block_quantized(device, kind, bits, dtype, itype):
    rng = np.random.default_rng(zlib.crc32(f"{kind}{bits}{np.dtype(dtype)}{np.dtype(itype)}"
                                           .encode()))
    for _ in range(6):
        block_size = int(rng.choice([16, 32]))
        data, scales, zero_points, axis, qa = random_case(rng, kind, bits, dtype, block_size)
        n = data.shape[axis] * (2 if bits == 4 and axis % data.ndim == data.ndim - 1 else 1)
        lo = -n - 2 if np.dtype(itype).kind == "i" else 0
        indices = rng.integers(lo, n + 2, size=rng.integers(1, 4, size=2)).astype(itype)
        got = vkdml.gather_block_quantized(data, indices, scales, zero_points, type=kind,
                                           bits=bits, gather_axis=axis, quantize_axis=qa,
                                           block_size=block_size)
        want = reference(data, indices, scales, zero_points, kind, bits, axis, qa, block_size)
        assert got.dtype == np.dtype(dtype) and got.shape == want.shape
        assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("kind", ["int4", "uint4"])
def test_gather_block_quantized_values_shape(device, kind):
    """values_shape: ONNX's int4 and uint4 tensors of any shape, their bytes packed whole (rows
    of an odd length do not start on a byte), 1-D or (an even last size) the shape halved."""
    rng = np.random.default_rng(zlib.crc32(kind.encode()))
    odd = 0
    for case in range(12):
        rank = int(rng.integers(1, 4))
        shape = [int(rng.integers(1, 5)) for _ in range(rank - 1)] + [int(rng.integers(1, 40))]
        count = int(np.prod(shape))
        data = rng.integers(0, 256, size=(count + 1) // 2, dtype=np.uint8)
        if shape[-1] % 2 == 0 and case % 2:
            data = data.reshape(shape[:-1] + [shape[-1] // 2])
        odd += rank > 1 and shape[-1] % 2
        qa, axis = int(rng.integers(0, rank)), int(rng.integers(-rank, rank))
        blocks = list(shape)
        blocks[qa] = -(-blocks[qa] // 16)
        scales = rng.standard_normal(blocks).astype(np.float32)
        zero_points = None
        if case % 3:
            zero_points = rng.integers(0, 256, size=-(-int(np.prod(blocks)) // 2),
                                       dtype=np.uint8)
        n = shape[axis]
        indices = rng.integers(-n - 2, n + 2, size=int(rng.integers(1, 6))).astype(np.int64)
        got = vkdml.gather_block_quantized(data, indices, scales, zero_points, type=kind,
                                           gather_axis=axis, quantize_axis=qa, block_size=16,
                                           values_shape=shape)
        want = reference(data, indices, scales, zero_points, kind, 4, axis, qa, 16,
                         values_shape=shape)
        assert got.shape == want.shape and got.tobytes() == want.tobytes(), (case, shape)
    assert odd > 0
    # A device tensor of the bytes: the result stays on the device.
    data = rng.integers(0, 256, 8, dtype=np.uint8)  # 15 values of shape (3, 5), one spare nibble
    scales = rng.standard_normal((3, 1)).astype(np.float16)
    t = vkdml.gather_block_quantized(device.tensor(data), np.array([2, 0, 1]), scales, type=kind,
                                     block_size=16, values_shape=(3, 5))
    assert isinstance(t, vkdml.Tensor)
    want = reference(data, np.array([2, 0, 1]), scales, None, kind, 4, 0, 1, 16,
                     values_shape=(3, 5))
    assert t.numpy().tobytes() == want.tobytes()


def test_gather_block_quantized_denormal_scales(device):
    """(v - zero point) * scale rounds once, as IEEE float32 does, denormals kept."""
    rng = np.random.default_rng(5)
    data = rng.integers(0, 256, size=(6, 32), dtype=np.uint8)
    scales = (rng.standard_normal((6, 1)) * 2.0 ** -140).astype(np.float32)
    scales[0, 0] = np.float32(2.0 ** -149)
    got = vkdml.gather_block_quantized(data, np.arange(6), scales, type="uint8", bits=8,
                                       block_size=32)
    want = reference(data, np.arange(6), scales, None, "uint8", 8, 0, 1, 32)
    assert np.any((got != 0) & (np.abs(got) < np.finfo(np.float32).tiny))
    assert got.tobytes() == want.tobytes()


def test_gather_block_quantized_out_of_range_and_device(device):
    rng = np.random.default_rng(6)
    data = rng.integers(0, 256, size=(5, 16), dtype=np.uint8)  # int4: 5 x 32 values
    scales = rng.standard_normal((5, 2)).astype(np.float16)
    indices = np.array([1, 7, -6, 4], np.int64)
    got = vkdml.gather_block_quantized(data, indices, scales, type="int4", block_size=16,
                                       out_of_range="fill", fill_value=-2.5)
    want = reference(data, indices, scales, None, "int4", 4, 0, 1, 16, fill=-2.5)
    assert got.tobytes() == want.tobytes()
    with pytest.raises(IndexError, match="indices\\[1\\] is 7"):
        vkdml.gather_block_quantized(data, indices, scales, type="int4", block_size=16,
                                     out_of_range="error")
    t = vkdml.gather_block_quantized(device.tensor(data), np.array([4, 0]), scales,
                                     type="int4", block_size=16)
    assert isinstance(t, vkdml.Tensor)
    want = reference(data, np.array([4, 0]), scales, None, "int4", 4, 0, 1, 16)
    assert t.numpy().tobytes() == want.tobytes()


def test_gather_block_quantized_refuses(device):
    data = np.zeros((4, 16), np.uint8)
    scales = np.ones((4, 2), np.float32)
    with pytest.raises(ValueError, match="type is 'int8'"):
        vkdml.gather_block_quantized(data, [0], scales, type="int8", block_size=16)
    with pytest.raises(ValueError, match="bits is 8, expected 4 for int4"):
        vkdml.gather_block_quantized(data, [0], scales, type="int4", bits=8, block_size=16)
    with pytest.raises(ValueError, match="block_size is 24, expected a power of 2"):
        vkdml.gather_block_quantized(data, [0], scales, block_size=24)
    with pytest.raises(ValueError, match=r"scales: shape is \(4, 2\), expected \(4, 1\)"):
        vkdml.gather_block_quantized(data, [0], scales, block_size=32)
    with pytest.raises(ValueError, match="data: dtype is int8, expected uint8"):
        vkdml.gather_block_quantized(data.view(np.int8), [0], scales, block_size=16)
    with pytest.raises(ValueError, match=r"zero_points: shape is \(4, 2\), expected \(4, 1\)"):
        vkdml.gather_block_quantized(data, [0], scales, np.zeros((4, 2), np.uint8),
                                     block_size=16)
    with pytest.raises(ValueError, match="quantize_axis is 2, expected -2 to 1"):
        vkdml.gather_block_quantized(data, [0], scales, quantize_axis=2, block_size=16)
    with pytest.raises(ValueError, match="values_shape is given, expected none for uint8"):
        vkdml.gather_block_quantized(data, [0], scales, block_size=16, values_shape=(4, 32))
    with pytest.raises(ValueError, match=r"data: shape is \(4, 16\), expected \(47,\) \(two "
                       r"4-bit values a byte, packed whole as ONNX's uint4 tensors\)"):
        vkdml.gather_block_quantized(data, [0], np.ones((3, 2), np.float32), type="uint4",
                                     block_size=16, values_shape=(3, 31))
    with pytest.raises(TypeError, match="values_shape is 7, expected a sequence of ints"):
        vkdml.gather_block_quantized(data, [0], scales, type="uint4", values_shape=7)
    with pytest.raises(ValueError, match=r"values_shape is \(4, -1\), expected"):
        vkdml.gather_block_quantized(data, [0], scales, type="uint4", values_shape=(4, -1))
