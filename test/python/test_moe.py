"""vkdml.moe_permute and vkdml.moe_unpermute against a NumPy reference of exactly their order
(a stable argsort of the expert ids, dropped ids keyed past every expert; each token's weighted
rows summed in j order, one float32 rounding a step), bit for bit, and against the torch route
a serving engine takes (torch.argsort(stable=True) and a gather; index_add_); device tensors in
and out; the errors."""
import numpy as np
import pytest

import vkdml

torch = pytest.importorskip("torch")


def ref_permute(x, ids, experts):
    """NumPy's order: rows, offsets, perm, inv."""
    tokens, k = ids.shape
    flat = ids.reshape(-1).astype(np.int64)
    if ids.dtype == np.uint64:  # past 2^63 reads negative: dropped either way
        flat = np.where(ids.reshape(-1) >= np.uint64(experts), -1, flat)
    kept = (flat >= 0) & (flat < experts)
    key = np.where(kept, flat, experts)
    order = np.argsort(key, kind="stable")
    n_kept = int(kept.sum())
    offsets = np.searchsorted(key[order], np.arange(experts + 1), side="left")
    perm = np.where(np.arange(tokens * k) < n_kept, order, -1)
    rows = np.zeros((tokens * k, x.shape[1]), x.dtype)
    rows[:n_kept] = x[order[:n_kept] // k]
    inv = np.full(tokens * k, -1, np.int64)
    inv[order[:n_kept]] = np.arange(n_kept)
    return rows, offsets, perm, inv.reshape(tokens, k)


def ref_unpermute(y, inv, weights, dtype):
    """Each token's rows in j order, in float32 steps."""
    tokens, k = inv.shape
    out = np.zeros((tokens, y.shape[1]), np.float32)
    y32, w32 = y.astype(np.float32), weights.astype(np.float32)
    for j in range(k):
        r = inv[:, j].astype(np.int64)
        ok = (r >= 0) & (r < y.shape[0])
        prod = (w32[:, j:j + 1] * y32[np.where(ok, r, 0)]).astype(np.float32)
        out = np.where(ok[:, None], (out + prod).astype(np.float32), out)
    return out.astype(dtype)


def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def random_ids(rng, tokens, k, experts, dtype, dropped):
    ids = rng.integers(0, experts, (tokens, k))
    drop = rng.random((tokens, k)) < dropped
    far = rng.integers(experts, experts + 5, (tokens, k))
    if np.dtype(dtype).kind == "i":
        far = np.where(rng.random((tokens, k)) < 0.5, -rng.integers(1, 4, (tokens, k)), far)
    return np.where(drop, far, ids).astype(dtype)


@pytest.mark.parametrize("seed", range(12))
def test_permute_matches_numpy(seed):
    rng = np.random.default_rng(seed)
    tokens, k = int(rng.integers(1, 300)), int(rng.integers(1, 9))
    experts = int(rng.choice([1, 7, 64, 300]))
    xdt = [np.float32, np.float16][seed % 2]
    width = 2 * int(rng.integers(1, 40)) - seed % 3 // 2  # float16 rows off words: odd widths
    x = rng.standard_normal((tokens, width)).astype(xdt)
    ids = random_ids(rng, tokens, k, experts, [np.int32, np.int64, np.uint32][seed % 3],
                     [0.0, 0.2, 0.9][seed % 3])
    idt = [np.int64, np.int32][(seed // 2) % 2]
    rows, offsets, perm, inv = vkdml.moe_permute(x, ids, experts, index_dtype=idt)
    want = ref_permute(x, ids, experts)
    assert same_bits(rows, want[0])
    for got, w in zip((offsets, perm, inv), want[1:]):
        assert got.dtype == np.dtype(idt)
        assert np.array_equal(got, w)
    # perm indexes the flattened topk_ids; inv is its inverse on the kept entries.
    n = int(offsets[-1])
    assert np.array_equal(inv.reshape(-1)[perm[:n]], np.arange(n))


def torch_permute(x, ids, experts):
    """The torch route: argsort(stable=True) of the flattened ids, a gather, bincount."""
    flat = torch.from_numpy(ids.astype(np.int64)).reshape(-1)
    key = torch.where((flat >= 0) & (flat < experts), flat, torch.full_like(flat, experts))
    order = torch.argsort(key, stable=True)
    kept = int((key < experts).sum())
    k = ids.shape[1]
    rows = torch.zeros((flat.numel(), x.shape[1]), dtype=x.dtype)
    rows[:kept] = x[order[:kept] // k]
    counts = torch.bincount(key, minlength=experts + 1)[:experts]
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), torch.cumsum(counts, 0)])
    inv = torch.full((flat.numel(),), -1, dtype=torch.int64)
    inv[order[:kept]] = torch.arange(kept)
    perm = torch.where(torch.arange(flat.numel()) < kept, order, torch.full_like(order, -1))
    return rows, offsets, perm, inv.reshape(ids.shape)


def torch_unpermute(y, inv, weights):
    """index_add_ of each entry's weighted row into its token, entries in t * k + j order."""
    tokens, k = inv.shape
    flat = inv.reshape(-1)
    ok = (flat >= 0) & (flat < y.shape[0])
    token = torch.arange(tokens).repeat_interleave(k)[ok]
    src = weights.reshape(-1, 1)[ok] * y[flat[ok]]
    return torch.zeros((tokens, y.shape[1]), dtype=torch.float32).index_add_(0, token, src)


@pytest.mark.parametrize("seed", range(6))
def test_against_torch(seed):
    rng = np.random.default_rng(100 + seed)
    tokens, k, experts, width = int(rng.integers(1, 200)), 8, 64, 64
    x = rng.standard_normal((tokens, width)).astype(np.float32)
    ids = random_ids(rng, tokens, k, experts, np.int64, 0.1 if seed % 2 else 0.0)
    rows, offsets, perm, inv = vkdml.moe_permute(x, ids, experts)
    t_rows, t_offsets, t_perm, t_inv = torch_permute(torch.from_numpy(x), ids, experts)
    assert same_bits(rows, t_rows.numpy())
    assert np.array_equal(offsets, t_offsets.numpy())
    assert np.array_equal(perm, t_perm.numpy())
    assert np.array_equal(inv, t_inv.numpy())
    # Each expert's output: its rows scaled (exactly, by a power of 2) plus one.
    scale = np.float32(2.0) ** (np.arange(experts + 1) % 4 - 1)
    expert_of = np.searchsorted(offsets, np.arange(rows.shape[0]), side="right") - 1
    y = (rows * scale[expert_of][:, None] + np.float32(1)).astype(np.float32)
    w = rng.random((tokens, k)).astype(np.float32)
    out = vkdml.moe_unpermute(y, inv, w)
    want = torch_unpermute(torch.from_numpy(y), torch.from_numpy(inv), torch.from_numpy(w))
    assert same_bits(out, want.numpy())


@pytest.mark.parametrize("ydt,wdt,odt", [(np.float32, np.float32, np.float32),
                                         (np.float16, np.float16, np.float16),
                                         (np.float16, np.float32, np.float32),
                                         (np.float32, np.float16, np.float16)])
@pytest.mark.parametrize("width", [38, 37])
def test_unpermute_matches_numpy(ydt, wdt, odt, width):
    rng = np.random.default_rng(7)
    rows, tokens, k = 90, 40, 6
    y = rng.standard_normal((rows, width)).astype(ydt)
    inv = rng.integers(0, rows, (tokens, k)).astype(np.int64)
    inv[rng.random((tokens, k)) < 0.2] = -1
    inv[rng.random((tokens, k)) < 0.05] = rows + 3  # past y: skipped too
    w = rng.random((tokens, k)).astype(wdt)
    out = vkdml.moe_unpermute(y, inv, w, dtype=odt)
    assert same_bits(out, ref_unpermute(y, inv, w, odt))


def test_device_tensors_and_out(device):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((50, 16)).astype(np.float16)
    ids = random_ids(rng, 50, 4, 8, np.int32, 0.1)
    tx, tids = device.tensor(x), device.tensor(ids)
    got = vkdml.moe_permute(tx, tids, 8)
    assert all(isinstance(t, vkdml.Tensor) for t in got)
    want = ref_permute(x, ids, 8)
    assert same_bits(got[0].numpy(), want[0])
    outs = (device.empty((200, 16), np.float16), device.empty((9,), np.int32),
            device.empty((200,), np.int32), device.empty((50, 4), np.int32))
    res = vkdml.moe_permute(tx, ids, 8, index_dtype=np.int32, out=outs)
    assert all(a is b for a, b in zip(res, outs))
    assert np.array_equal(outs[1].numpy(), want[1])
    assert np.array_equal(outs[3].numpy(), want[3])
    w = rng.random((50, 4)).astype(np.float16)
    out = device.empty((50, 16), np.float16)
    assert vkdml.moe_unpermute(got[0], got[3], w, out=out) is out
    assert same_bits(out.numpy(), ref_unpermute(want[0], want[3], w, np.float16))


def test_errors():
    x = np.zeros((4, 6), np.float32)
    ids = np.zeros((4, 2), np.int32)
    with pytest.raises(ValueError, match="experts is 0"):
        vkdml.moe_permute(x, ids, 0)
    with pytest.raises(TypeError, match="index_dtype"):
        vkdml.moe_permute(x, ids, 4, index_dtype=np.float32)
    with pytest.raises(TypeError, match="x: dtype is int32"):
        vkdml.moe_permute(ids, ids, 4)
    with pytest.raises(ValueError, match="expected 4 tokens"):
        vkdml.moe_permute(x, np.zeros((3, 2), np.int32), 4)
    with pytest.raises(ValueError, match="WeightsTensor.Sizes"):
        vkdml.moe_unpermute(x, ids, np.zeros((4, 3), np.float32))
    with pytest.raises(TypeError, match="out: expected 4"):
        vkdml.moe_permute(x, ids, 4, out=vkdml.default_device().empty((8, 6)))


def test_max_tensor_bytes(device):
    """Every tensor fits one binding, as an embedding bag's bounded ones."""
    for function in ("moe_permute", "moe_unpermute"):
        assert device.max_tensor_bytes(function) == device.max_tensor_bytes("embedding_bag")
