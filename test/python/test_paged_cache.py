"""vkdml.paged_cache_write and vkdml.paged_gather (vLLM's reshape_and_cache_flash and
gather_cache) against NumPy references written from their definitions, bit for bit: float32,
float16, Q8_0 and Q4_0 caches (test/cli/onnx_reference.py's ggml quantizer and dequantizer), both
layouts, duplicate and negative slots, token offsets, host arrays and device tensors; and against
torch's index_copy_ / index_select route where torch is installed."""
import numpy as np
import pytest

import vkdml
from onnx_reference import QUANTIZED_BLOCK_BYTES as BLOCK
from onnx_reference import ref_dequantize, ref_quantize, same_bits

FORMATS = [("float32", None), ("float16", None), ("float32", "q8_0"), ("float16", "q4_0")]


def cache_shape(layout, blocks, block_size, heads, row):
    return (blocks, block_size, heads, row) if layout == "NHD" else (blocks, heads, block_size, row)


def row_of(cache, layout, slot, h, block_size):
    b, r = divmod(int(slot), block_size)
    return cache[b, r, h] if layout == "NHD" else cache[b, h, r]


def make_cache(rng, layout, fmt, dtype, blocks, block_size, heads, head_size):
    row = head_size // 32 * BLOCK[fmt] if fmt else head_size
    shape = cache_shape(layout, blocks, block_size, heads, row)
    if fmt:
        c = rng.integers(0, 256, size=shape, dtype=np.uint8)
        c.reshape(-1, BLOCK[fmt])[:, 1] &= 0xBB  # finite scales
        return c
    return rng.standard_normal(shape).astype(dtype)


def ref_write(cache, values, slots, layout, fmt, block_size):
    """The cache after the write: each token in order (the last of a slot stays), negative
    slots skipped."""
    out = cache.copy()
    for t, s in enumerate(slots):
        if s < 0:
            continue
        for h in range(values.shape[1]):
            v = values[t, h]
            row = ref_quantize(v.astype(np.float32), fmt) if fmt else v
            row_of(out, layout, s, h, block_size)[...] = row
    return out


def ref_gather(cache, table, lens, offsets, layout, fmt, dtype, block_size):
    rows = []
    for b, n in enumerate(lens):
        for i in range(n):
            p = i + (offsets[b] if offsets is not None else 0)
            block = table[b, p // block_size]
            heads = []
            for h in range(cache.shape[2] if layout == "NHD" else cache.shape[1]):
                r = row_of(cache, layout, block * block_size + p % block_size, h, block_size)
                heads.append(ref_dequantize(r[None], fmt)[0].astype(dtype) if fmt else r)
            rows.append(np.stack(heads))
    return np.stack(rows)


@pytest.mark.parametrize("layout", ["NHD", "HND"])
@pytest.mark.parametrize("dtype,fmt", FORMATS)
def test_write_matches_reference(device, layout, dtype, fmt):
    rng = np.random.default_rng(hash((layout, dtype, fmt)) % 2**32)
    blocks, block_size, heads, head_size, tokens = 5, 4, 2, 64 if fmt else 12, 9
    key_cache = make_cache(rng, layout, fmt, dtype, blocks, block_size, heads, head_size)
    value_cache = make_cache(rng, layout, fmt, dtype, blocks, block_size, heads, head_size)
    key = rng.standard_normal((tokens, heads, head_size)).astype(dtype)
    value = rng.standard_normal((tokens, heads, head_size)).astype(dtype)
    slots = rng.integers(0, blocks * block_size, tokens).astype(np.int64)
    slots[2] = slots[5]  # a duplicate: token 5 wins
    slots[7] = -1  # padding
    want_k = ref_write(key_cache, key, slots, layout, fmt, block_size)
    want_v = ref_write(value_cache, value, slots, layout, fmt, block_size)
    k, v = vkdml.paged_cache_write(key, value, key_cache, value_cache, slots, layout=layout,
                                   format=fmt)
    assert k is key_cache and v is value_cache  # in place
    assert same_bits(key_cache, want_k) if not fmt else np.array_equal(key_cache, want_k)
    assert same_bits(value_cache, want_v) if not fmt else np.array_equal(value_cache, want_v)


@pytest.mark.parametrize("layout", ["NHD", "HND"])
@pytest.mark.parametrize("dtype,fmt", FORMATS)
def test_gather_matches_reference(device, layout, dtype, fmt):
    rng = np.random.default_rng(hash(("g", layout, dtype, fmt)) % 2**32)
    blocks, block_size, heads, head_size = 7, 4, 3, 64 if fmt else 8
    cache = make_cache(rng, layout, fmt, dtype, blocks, block_size, heads, head_size)
    table = rng.integers(0, blocks, (3, 4)).astype(np.int32)
    lens = [5, 0, 11]
    offsets = np.array([2, 0, 3], np.int32)
    out_dtype = np.dtype(dtype)
    got = vkdml.paged_gather(cache, table, lens, format=fmt, dtype=out_dtype if fmt else None,
                             layout=layout, token_offsets=offsets)
    want = ref_gather(cache, table, lens, offsets, layout, fmt, out_dtype, block_size)
    assert got.dtype == want.dtype and same_bits(got, want)
    # cumulative lengths, no offsets
    got = vkdml.paged_gather(cache, table, cu_seq_lens=[0, 5, 5, 16], format=fmt, layout=layout,
                             dtype=out_dtype if fmt else None)
    assert same_bits(got, ref_gather(cache, table, lens, None, layout, fmt, out_dtype,
                                     block_size))


def test_device_tensors_decode_step(device):
    """The README's decode step on device tensors: one new token per sequence written to both
    caches, then both sequences gathered, never leaving the device."""
    rng = np.random.default_rng(7)
    blocks, block_size, heads, head_size = 8, 4, 2, 8
    k_np = rng.standard_normal((blocks, block_size, heads, head_size)).astype(np.float16)
    v_np = rng.standard_normal((blocks, block_size, heads, head_size)).astype(np.float16)
    k_cache, v_cache = device.tensor(k_np), device.tensor(v_np)
    block_table = np.array([[3, 5], [2, 0]], np.int32)
    seq_lens = np.array([6, 4], np.int32)  # after this step's token
    slots = np.array([5 * block_size + 1, 2 * block_size + 3], np.int64)  # each's last position
    key = rng.standard_normal((2, heads, head_size)).astype(np.float16)
    value = rng.standard_normal((2, heads, head_size)).astype(np.float16)
    vkdml.paged_cache_write(device.tensor(key), device.tensor(value), k_cache, v_cache,
                            device.tensor(slots))
    keys = vkdml.paged_gather(k_cache, device.tensor(block_table),
                              cu_seq_lens=device.tensor(np.array([0, 6, 10], np.int32)))
    assert isinstance(keys, vkdml.Tensor) and keys.shape == (10, heads, head_size)
    want_k = ref_write(k_np, key, slots, "NHD", None, block_size)
    want = ref_gather(want_k, block_table, seq_lens, None, "NHD", None, np.float16, block_size)
    assert same_bits(keys.numpy(), want)
    assert same_bits(v_cache.numpy(), ref_write(v_np, value, slots, "NHD", None, block_size))
    # The lengths themselves on the device, summed there; out= gives total_tokens (no read back).
    out = device.empty((10, heads, head_size), np.float16)
    values = vkdml.paged_gather(v_cache, device.tensor(block_table),
                                device.tensor(seq_lens), out=out)
    want_v = ref_write(v_np, value, slots, "NHD", None, block_size)
    assert same_bits(out.numpy(), ref_gather(want_v, block_table, seq_lens, None, "NHD", None,
                                             np.float16, block_size))
    assert values is out or isinstance(values, vkdml.Tensor)
    # Host lengths: a negative one counts 0; a length past block_table's dtype is refused.
    got = vkdml.paged_gather(k_np, block_table, np.array([6, -3], np.int64), total_tokens=6)
    assert same_bits(got, ref_gather(k_np, block_table, np.array([6, 0]), None, "NHD", None,
                                     np.float16, block_size))
    with pytest.raises(ValueError, match="outside block_table's dtype int32"):
        vkdml.paged_gather(k_np, block_table, np.array([6, 2**40], np.int64))


def test_out_of_range(device):
    cache = np.zeros((2, 4, 1, 4), np.float32)
    key = np.ones((3, 1, 4), np.float32)
    with pytest.raises(IndexError, match="SlotMappingTensor"):
        vkdml.paged_cache_write(key, None, cache, None, np.array([1, 8, 2]))
    assert cache[0, 1, 0, 0] == 1 and cache[0, 2, 0, 0] == 1  # the others written
    cache[...] = 0
    vkdml.paged_cache_write(key, None, cache, None, np.array([1, 9, 2]), out_of_range="drop")
    assert cache.sum() == 8
    with pytest.raises(ValueError, match="never clamps"):
        vkdml.paged_cache_write(key, None, cache, None, np.array([1]), out_of_range="clamp")
    table = np.array([[0, 5]], np.int32)
    with pytest.raises(IndexError, match="BlockTableTensor"):
        vkdml.paged_gather(cache, table, [6])
    got = vkdml.paged_gather(cache, table, [6], out_of_range="fill", fill_value=-2.0)
    assert (got[4:] == -2).all() and (got[:4] == cache[0]).all()


def test_validation_messages(device):
    cache = np.zeros((2, 4, 1, 30), np.uint8)
    with pytest.raises(ValueError, match="InputTensor.Sizes.3. is 30, expected a multiple of 34"):
        vkdml.paged_cache_write(np.zeros((1, 1, 32), np.float32), None, cache, None,
                                np.array([0]), format="q8_0")
    with pytest.raises(ValueError, match="layout is 'XYZ'"):
        vkdml.paged_gather(cache, np.zeros((1, 1), np.int32), [1], layout="XYZ")


def test_torch_route(device):
    """The torch route the benchmarks time (index_copy_ into the cache's token rows,
    index_select of the gathered blocks) gives the same bits on float caches."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    blocks, block_size, heads, head_size = 16, 8, 2, 16
    cache = rng.standard_normal((blocks, block_size, heads, head_size)).astype(np.float32)
    key = rng.standard_normal((10, heads, head_size)).astype(np.float32)
    slots = rng.permutation(blocks * block_size)[:10].astype(np.int64)
    t = torch.from_numpy(cache.copy())
    t.view(-1, heads, head_size).index_copy_(0, torch.from_numpy(slots), torch.from_numpy(key))
    vkdml.paged_cache_write(key, None, cache, None, slots)
    assert same_bits(cache, t.numpy())
    table = rng.integers(0, blocks, (4, 2)).astype(np.int64)
    rows = torch.from_numpy(cache).view(blocks, -1).index_select(0, torch.from_numpy(
        table.reshape(-1))).view(-1, heads, head_size)
    got = vkdml.paged_gather(cache, table, [16] * 4)
    assert same_bits(got, rows.numpy())


def test_gather_out_and_total_tokens(device):
    """out= (a device tensor written in place), and total_tokens past the last sequence: those
    rows keep their bytes (zeros in a new host array, the tensor's own on the device)."""
    rng = np.random.default_rng(11)
    cache = rng.standard_normal((4, 4, 2, 8)).astype(np.float32)
    table = np.array([[1, 3], [0, 2]], np.int32)
    got = vkdml.paged_gather(cache, table, [3, 5], total_tokens=10)
    want = ref_gather(cache, table, [3, 5], None, "NHD", None, np.float32, 4)
    assert got.shape == (10, 2, 8) and same_bits(got[:8], want) and not got[8:].any()
    out = device.tensor(np.full((10, 2, 8), 7, np.float32))
    res = vkdml.paged_gather(device.tensor(cache), device.tensor(table),
                             cu_seq_lens=device.tensor(np.array([0, 3, 8], np.int32)),
                             total_tokens=10, out=out)
    assert res is out
    got = out.numpy()
    assert same_bits(got[:8], want) and (got[8:] == 7).all()
    # Without total_tokens, out's rows are the output's (the rows past the last sequence kept).
    out = device.tensor(np.full((9, 2, 8), 7, np.float32))
    vkdml.paged_gather(device.tensor(cache), device.tensor(table),
                       cu_seq_lens=device.tensor(np.array([0, 3, 8], np.int32)), out=out)
    got = out.numpy()
    assert same_bits(got[:8], want) and (got[8:] == 7).all()
    with pytest.raises(ValueError, match="out: shape"):
        vkdml.paged_gather(device.tensor(cache), device.tensor(table),
                           cu_seq_lens=device.tensor(np.array([0, 3, 8], np.int32)),
                           out=device.empty((9, 2, 7)))
