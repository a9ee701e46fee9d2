"""vkdml: DirectML's gather and scatter operators on any Vulkan device, from NumPy.

The functions take NumPy/ONNX semantics, as `vkdml run` does: negative indices count from the
end, out-of-range indices are clamped (or with out_of_range="fill", gathers write fill_value;
with "drop", scatters skip the update; "error" or check_indices=True raises IndexError), shapes
are NumPy's. Inputs are host arrays (NumPy arrays, anything with the buffer protocol, objects with
__dlpack__ such as PyTorch CPU tensors) and give a new NumPy array; or device tensors
(Device.tensor), which give a device tensor and never leave the device.

    import numpy as np, vkdml
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    vkdml.gather(x, np.array([2, 0]), axis=0)          # x[[2, 0]]
    d = vkdml.Device()
    t = vkdml.scatter_nd(d.tensor(x), np.array([[1]]), np.ones((1, 4), np.float32))
    t.numpy()                                            # row 1 is ones
"""

import threading

import numpy as np

from ._vkdml import Error, Tensor, UnsupportedError
from ._vkdml import Device as _NativeDevice
from ._vkdml import BagArgs as _BagArgs
from ._vkdml import BlockArgs as _BlockArgs
from ._vkdml import SegArgs as _SegArgs
from ._vkdml import run as _run
from ._vkdml import run_moe as _run_moe
from ._vkdml import paged as _paged

__all__ = ["Device", "Tensor", "Error", "UnsupportedError", "gather", "gather_elements",
           "gather_nd", "scatter_elements", "scatter_nd", "dequantize_rows", "quantize_rows",
           "gather_block_quantized", "embedding_bag", "paged_cache_write", "paged_gather",
           "moe_permute", "moe_unpermute", "segment_csr", "segment_coo", "segment_reduce",
           "default_device"]

_REDUCTIONS = ("none", "add", "mul", "max", "min", "mean")
# dml.h's VKDML_OUT_OF_RANGE_MODE: what an out-of-range index does.
_OUT_OF_RANGE = {"clamp": 0, "fill": 1, "drop": 2, "error": 3}


class Device(_NativeDevice):
    """A Vulkan device. index: as `vkdml devices` lists them (None: the first discrete GPU,
    else the first device). validation: enable the Vulkan validation layer, whose messages
    take_validation_messages() returns.

    name, driver, limits (a dict), features (the optional Vulkan features vkdml enabled),
    supports(dtype), supports_reduction(dtype, reduction) and max_tensor_bytes(function) (the
    largest tensor a function of this module takes here, None for any size; embedding_bag's
    bounds all but its table, gather_block_quantized's its scales and zero points,
    moe_permute's and moe_unpermute's all)
    (Device::CheckFeatureSupport), tensor(array) (an array copied to the device),
    empty(dtype, shape)."""

    def __init__(self, index=None, validation=False):
        if index is not None and (isinstance(index, bool) or not isinstance(index, int)):
            raise TypeError(f"index is {index!r}, expected an int or None")
        _NativeDevice.__init__(self, -1 if index is None else index, bool(validation))

    def tensor(self, array):
        """The array (any host array) in a new device buffer."""
        return _NativeDevice.tensor(self, _host(array, "array"))

    def empty(self, shape, dtype=np.float32):
        """An uninitialised device tensor."""
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        return _NativeDevice.empty(self, _dtype_name(dtype), [int(d) for d in shape])

    def supports(self, dtype):
        return _NativeDevice.supports(self, _dtype_name(dtype))

    def supports_reduction(self, dtype, reduction):
        return _NativeDevice.supports_reduction(self, _dtype_name(dtype), reduction)

    def __repr__(self):
        return f"vkdml.Device({self.name!r})"


def _tensor_repr(t):
    return f"vkdml.Tensor(shape={t.shape}, dtype={t.dtype_name}, device={t.device.name!r})"


Tensor.dtype = property(lambda t: np.dtype(t.dtype_name))
Tensor.ndim = property(lambda t: len(t.shape))
Tensor.__repr__ = _tensor_repr

_default = None
_default_lock = threading.Lock()


def default_device():
    """The Device the functions use for host arrays when device=None (made on first use)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Device()
        return _default


def _dtype_name(dtype):
    try:
        return np.dtype(dtype).name
    except TypeError as e:
        raise TypeError(f"dtype is {dtype!r}: {e}") from None


def _host(obj, name):
    """obj as a NumPy array vkdml reads in place: native byte order, strides that are
    non-negative whole elements (a copy otherwise; a view needs none)."""
    if isinstance(obj, np.ndarray):
        a = obj
    else:
        try:
            if hasattr(obj, "__dlpack__"):
                try:
                    a = np.from_dlpack(obj)  # no copy (PyTorch CPU tensors)
                except (TypeError, RuntimeError, BufferError, ValueError):
                    a = np.asarray(obj)  # e.g. a dtype DLPack's NumPy lacks
            else:
                a = np.asarray(obj)
        except (TypeError, RuntimeError, ValueError, BufferError) as e:
            raise TypeError(f"{name}: {type(obj).__name__} is not a host array vkdml can read "
                            f"({e})") from None
    if a.dtype.hasobject or a.dtype.fields is not None:
        raise TypeError(f"{name}: dtype is {a.dtype}, expected a numeric or bool dtype")
    if not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    if any(s < 0 or s % a.itemsize for s in a.strides):
        a = np.ascontiguousarray(a)
    return a


def _arg(obj, name):
    return obj if isinstance(obj, Tensor) else _host(obj, name)


def _indices(obj):
    a = _arg(obj, "indices")
    if isinstance(a, np.ndarray):
        if a.dtype.kind == "b" or a.dtype.kind not in "iu":
            raise TypeError(f"indices: dtype is {a.dtype}, expected an integer type")
        if a.itemsize < 4:  # int8/16 and uint8/16: the library's index types are 32/64-bit
            a = a.astype(np.int32)
    return a


def _one(a):
    return a.reshape(1) if isinstance(a, np.ndarray) and a.ndim == 0 else a


def _device(device):
    if device is None:
        return default_device()
    if not isinstance(device, _NativeDevice):
        raise TypeError(f"device is {device!r}, expected a vkdml.Device or None")
    return device


def _int(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} is {value!r}, expected an int")
    return int(value)


def _fill_bytes(value, dtype):
    """fill_value as the bytes of one element of dtype; a value the dtype cannot hold (an
    integer out of its range or with a fraction, a finite float that overflows) is refused."""
    dt = np.dtype(dtype)
    if isinstance(value, (np.ndarray, np.generic)) and np.ndim(value) == 0:
        value = value.item()
    if not isinstance(value, (bool, int, float)):
        raise TypeError(f"fill_value is {value!r}, expected a number (or a bool)")
    if dt.kind == "b":
        if value not in (0, 1) or (isinstance(value, float) and value != int(value)):
            raise ValueError(f"fill_value is {value!r}, expected True, False, 0 or 1 for bool")
        return np.array(bool(value), dt).tobytes()
    if dt.kind in "iu":
        if isinstance(value, float) and not value.is_integer():
            raise ValueError(f"fill_value is {value!r}, expected an integer for {dt}")
        info = np.iinfo(dt)
        if not info.min <= int(value) <= info.max:
            raise ValueError(f"fill_value is {value!r}, outside {dt}'s range "
                             f"[{info.min}, {info.max}]")
        return np.array(int(value), dt).tobytes()
    with np.errstate(over="ignore"):
        f = np.array(value, dt)
    if np.isinf(f) and np.isfinite(float(value)):
        raise ValueError(f"fill_value is {value!r}, which overflows {dt}")
    return f.tobytes()


def _call(op, label, x, indices, updates=None, axis=0, batch_dims=0, reduction="none",
          deterministic=False, check_indices=False, device=None, out=None, promote=False,
          out_of_range="clamp", fill_value=None, include_self=True):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"reduction is {reduction!r}, expected one of {', '.join(_REDUCTIONS)}")
    if not isinstance(include_self, (bool, np.bool_)):
        raise TypeError(f"include_self is {include_self!r}, expected a bool")
    if not include_self and reduction == "none":
        raise ValueError("include_self=False applies to a reduction (add, mul, max, min, mean); "
                         "reduction is 'none'")
    if out_of_range not in _OUT_OF_RANGE:
        raise ValueError(f"out_of_range is {out_of_range!r}, expected one of "
                         f"{', '.join(_OUT_OF_RANGE)}")
    scatter = updates is not None
    if out_of_range == "fill" and scatter:
        raise ValueError(f"out_of_range is 'fill', which is for gathers: {label} skips "
                         f"out-of-range updates with out_of_range='drop'")
    if out_of_range == "drop" and not scatter:
        raise ValueError(f"out_of_range is 'drop', which is for scatters: {label} writes "
                         f"fill_value for out-of-range indices with out_of_range='fill'")
    if fill_value is not None and out_of_range != "fill":
        raise ValueError(f"fill_value is given, but out_of_range is {out_of_range!r}: only "
                         f"'fill' writes it")
    x, idx = _arg(x, "x"), _indices(indices)
    upd = None if updates is None else _arg(updates, "updates")
    fill = _fill_bytes(0 if fill_value is None else fill_value, x.dtype) \
        if out_of_range == "fill" else b""
    check_indices = bool(check_indices) or out_of_range == "error"
    mode = _OUT_OF_RANGE[out_of_range] if out_of_range in ("fill", "drop") else 0
    # Host arrays only: a NumPy out= receives the result (with a tensor argument, out= must be
    # a tensor, which the native part checks).
    on_device = any(isinstance(a, Tensor) for a in (x, idx, upd))
    host_out = out if isinstance(out, np.ndarray) and not on_device else None
    if host_out is not None:
        out = None
    # PyTorch's 0-d tensors in gather/scatter: one-element tensors; the result takes the shape
    # of indices (gather_elements) or of x (scatter_elements).
    shape = None
    if promote:
        if op != "gather":
            shape = x.shape if upd is not None else idx.shape
            idx, upd = _one(idx), _one(upd)
        x = _one(x)
    result = _run(op, label, _device(device), x, idx, upd, _int(axis, "axis"),
                  _int(batch_dims, "batch_dims"), reduction, bool(deterministic),
                  check_indices, mode, fill, bool(include_self), out)
    if shape is not None and isinstance(result, np.ndarray) and result.shape != shape:
        result = result.reshape(shape)
    if host_out is not None:
        if host_out.shape != result.shape:
            raise ValueError(f"out: shape is {host_out.shape}, expected {result.shape}")
        np.copyto(host_out, result, casting="no")
        return host_out
    return result


def gather(x, indices, axis=0, *, check_indices=False, device=None, out_of_range="clamp",
           fill_value=None):
    """ONNX Gather (np.take along axis): x.shape[:axis] + indices.shape + x.shape[axis+1:].
    out_of_range: "clamp" (DirectML's), "fill" (the element is fill_value, default 0, as
    jnp.take(mode="fill") with a fill value), or "error" (as check_indices=True)."""
    return _call("gather", "gather", x, indices, axis=axis, check_indices=check_indices,
                 device=device, promote=True, out_of_range=out_of_range, fill_value=fill_value)


def gather_elements(x, indices, axis=0, *, check_indices=False, device=None,
                    out_of_range="clamp", fill_value=None):
    """ONNX GatherElements (np.take_along_axis, torch.gather): the shape of indices.
    out_of_range and fill_value as gather's."""
    return _call("gather-elements", "gather_elements", x, indices, axis=axis,
                 check_indices=check_indices, device=device, promote=True,
                 out_of_range=out_of_range, fill_value=fill_value)


def gather_nd(x, indices, batch_dims=0, *, check_indices=False, device=None,
              out_of_range="clamp", fill_value=None):
    """ONNX GatherND: index tuples along indices' last axis;
    indices.shape[:-1] + x.shape[batch_dims + indices.shape[-1]:]. out_of_range and
    fill_value as gather's: a tuple with any component out of range fills its whole slice."""
    return _call("gather-nd", "gather_nd", x, indices, batch_dims=batch_dims,
                 check_indices=check_indices, device=device, out_of_range=out_of_range,
                 fill_value=fill_value)


def scatter_elements(x, indices, updates, axis=0, reduction="none", deterministic=False, *,
                     check_indices=False, device=None, out=None, out_of_range="clamp",
                     fill_value=None, include_self=True):
    """ONNX ScatterElements (torch.scatter / scatter_reduce): x with updates written at
    indices along axis, or combined with reduction add, mul, max or min, or averaged with
    "mean" (torch.scatter_reduce's: integers round toward -infinity). deterministic: the
    updates applied in indices' row-major order, the same bits every run. out: where the
    result goes (a device tensor, x itself for in place; or a NumPy array). out_of_range:
    "clamp" (DirectML's), "drop" (the update is skipped, as JAX's mode="drop") or "error".
    fill_value: accepted for a uniform signature; a scatter writes none, so it must be None.
    include_self=False (with a reduction): each element an update reaches starts from the
    reduction's identity instead of x's value, as torch.scatter_reduce(include_self=False)."""
    return _call("scatter-elements", "scatter_elements", x, indices, updates, axis=axis,
                 reduction=reduction, deterministic=deterministic, check_indices=check_indices,
                 device=device, out=out, promote=True, out_of_range=out_of_range,
                 fill_value=fill_value, include_self=include_self)


def scatter_nd(x, indices, updates, reduction="none", deterministic=False, *,
               check_indices=False, device=None, out=None, out_of_range="clamp",
               fill_value=None, include_self=True):
    """ONNX ScatterND: x with updates written at the index tuples along indices' last axis
    (or combined with reduction), as scatter_elements; "drop" skips a tuple's whole slice."""
    return _call("scatter-nd", "scatter_nd", x, indices, updates, reduction=reduction,
                 deterministic=deterministic, check_indices=check_indices, device=device,
                 out=out, out_of_range=out_of_range, fill_value=fill_value,
                 include_self=include_self)


_QUANTIZED_FORMATS = ("q8_0", "q4_0")


def dequantize_rows(table, indices, format, *, dtype=np.float32, check_indices=False,
                    device=None, out_of_range="clamp", fill_value=None):
    """Rows of a quantized table, dequantized (ggml's get_rows; vkdml's
    VKDML_OPERATOR_GATHER_QUANTIZED_ROWS). table: a uint8 array of shape (rows, bytes per row)
    holding ggml's blocks of 32 values in `format`: "q8_0" (34 bytes: a float16 scale d, then
    32 int8 q) or "q4_0" (18 bytes: d, then 16 bytes whose low nibbles are values 0-15 and
    high nibbles 16-31, each q - 8). indices: any shape of integers, one row each (negative
    ones count from the end). Returns indices.shape + (32 * blocks per row,) values d * q,
    computed in float32 and rounded to dtype (float32 or float16). out_of_range: "clamp",
    "fill" (the whole row is fill_value) or "error" (as check_indices=True)."""
    if format not in _QUANTIZED_FORMATS:
        raise ValueError(f"format is {format!r}, expected one of {', '.join(_QUANTIZED_FORMATS)}")
    dt = np.dtype(_dtype_name(dtype))
    if dt not in (np.dtype(np.float32), np.dtype(np.float16)):
        raise TypeError(f"dtype is {dt}, expected float32 or float16")
    if out_of_range not in ("clamp", "fill", "error"):
        raise ValueError(f"out_of_range is {out_of_range!r}, expected clamp, fill or error")
    if fill_value is not None and out_of_range != "fill":
        raise ValueError(f"fill_value is given, but out_of_range is {out_of_range!r}: only "
                         f"'fill' writes it")
    fill = _fill_bytes(0 if fill_value is None else fill_value, dt) \
        if out_of_range == "fill" else b""
    check = bool(check_indices) or out_of_range == "error"
    mode = _OUT_OF_RANGE["fill"] if out_of_range == "fill" else 0
    return _run("dequantize-rows", "dequantize_rows", _device(device), _arg(table, "table"),
                _indices(indices), None, 0, 0, "none", False, check, mode, fill, True, None,
                format, dt.name)


_BLOCK_TYPES = ("int4", "uint4", "uint8")


def gather_block_quantized(data, indices, scales, zero_points=None, *, type="uint8", bits=4,
                           gather_axis=0, quantize_axis=1, block_size=128, values_shape=None,
                           check_indices=False, device=None, out_of_range="clamp",
                           fill_value=None):
    """ONNX Runtime's com.microsoft.GatherBlockQuantized (vkdml's
    VKDML_OPERATOR_GATHER_BLOCK_QUANTIZED): Gather on gather_axis over the values of `data`,
    each value v dequantized as (v - zero point) * scale in float32 (one rounding), then rounded
    to the scales' dtype (float32 or float16). data: uint8 bytes in C order, of type "int4" or
    "uint4" (two values a byte, the first in the low nibble, so data's last dimension counts
    bytes: ONNX's int4 and uint4 tensors when their last dimension is even), or "uint8" (ONNX
    Runtime's uint8 data: with bits=4 as uint4, with bits=8 a value a byte). values_shape
    ("int4" and "uint4"): ONNX's data shape in values, any last size; data is then its bytes
    packed whole as ONNX's (value n, C order, in byte n // 2): 1-D, or where the last size is
    even, values_shape with it halved. scales: the values' shape with ceil(size / block_size) on
    quantize_axis; a value takes the scale of its block. zero_points: None (0; for "uint8" 8, or
    128 with bits=8), or uint8 of the scales' shape ("uint8" with bits=4: two a byte, each row
    of the last dimension starting on a byte, as ONNX Runtime's; "int4" and "uint4": two a byte
    packed whole, as ONNX's int4 and uint4 tensors: 1-D, or where the scales' last dimension is
    even their shape with it halved). Returns the values' shape with gather_axis replaced by
    indices.shape. out_of_range: "clamp", "fill" (fill_value) or "error" (as
    check_indices=True)."""
    if type not in _BLOCK_TYPES:
        raise ValueError(f"type is {type!r}, expected one of {', '.join(_BLOCK_TYPES)}")
    if out_of_range not in ("clamp", "fill", "error"):
        raise ValueError(f"out_of_range is {out_of_range!r}, expected clamp, fill or error")
    if fill_value is not None and out_of_range != "fill":
        raise ValueError(f"fill_value is given, but out_of_range is {out_of_range!r}: only "
                         f"'fill' writes it")
    bits = _int(bits, "bits")
    if type != "uint8" and bits != 4:
        raise ValueError(f"bits is {bits}, expected 4 for {type} data")
    shape = []
    if values_shape is not None:
        if isinstance(values_shape, (str, bytes)) or not hasattr(values_shape, "__iter__"):
            raise TypeError(f"values_shape is {values_shape!r}, expected a sequence of ints")
        shape = [_int(v, "values_shape[]") for v in values_shape]
        if not shape or min(shape) < 0:
            raise ValueError(f"values_shape is {tuple(shape)}, expected at least one size, "
                             f"none negative")
    s = _arg(scales, "scales")
    d = _arg(data, "data")
    z = None if zero_points is None else _arg(zero_points, "zero_points")
    if isinstance(d, np.ndarray):  # read as packed bytes
        d = np.ascontiguousarray(d)
    if isinstance(z, np.ndarray):
        z = np.ascontiguousarray(z)
    out_dtype = s.dtype if isinstance(s, np.ndarray) else np.dtype(s.dtype)
    fill = _fill_bytes(0 if fill_value is None else fill_value, out_dtype) \
        if out_of_range == "fill" and out_dtype in (np.float32, np.float16) else b""
    check = bool(check_indices) or out_of_range == "error"
    mode = _OUT_OF_RANGE["fill"] if out_of_range == "fill" else 0
    return _run("gather-block-quantized", "gather_block_quantized", _device(device), d,
                _indices(indices), None, _int(gather_axis, "gather_axis"), 0, "none", False,
                check, mode, fill, True, None,
                block=_BlockArgs(s, z, type, bits, _int(quantize_axis, "quantize_axis"),
                                 _int(block_size, "block_size"), shape))


def quantize_rows(table, indices, rows, format, *, out=None, check_indices=False, device=None,
                  out_of_range="clamp"):
    """The table (uint8, (rows, bytes per row), ggml's `format` blocks: "q8_0" or "q4_0") with
    row indices[...] replaced by rows[...] (float32, indices.shape + (values per row,))
    quantized as ggml's reference quantizer does, bit for bit (ggml's set_rows; vkdml's
    VKDML_OPERATOR_SCATTER_QUANTIZED_ROWS). Where two indices name a row, the later one in
    C order stays. Returns a new array, or with a device table a device tensor; out: where
    the result goes (a device tensor, the table itself for in place; or a NumPy array).
    out_of_range: "clamp", "drop" (the row is skipped) or "error" (as check_indices=True)."""
    if format not in _QUANTIZED_FORMATS:
        raise ValueError(f"format is {format!r}, expected one of {', '.join(_QUANTIZED_FORMATS)}")
    if out_of_range not in ("clamp", "drop", "error"):
        raise ValueError(f"out_of_range is {out_of_range!r}, expected clamp, drop or error")
    t, idx, r = _arg(table, "table"), _indices(indices), _arg(rows, "rows")
    on_device = any(isinstance(a, Tensor) for a in (t, idx, r))
    host_out = out if isinstance(out, np.ndarray) and not on_device else None
    check = bool(check_indices) or out_of_range == "error"
    mode = _OUT_OF_RANGE["drop"] if out_of_range == "drop" else 0
    result = _run("quantize-rows", "quantize_rows", _device(device), t, idx, r, 0, 0, "none",
                  False, check, mode, b"", True, None if host_out is not None else out, format,
                  "float32")
    if host_out is not None:
        if host_out.shape != result.shape:
            raise ValueError(f"out: shape is {host_out.shape}, expected {result.shape}")
        np.copyto(host_out, result, casting="no")
        return host_out
    return result


_BAG_MODES = ("sum", "mean", "max")


def embedding_bag(table, indices, offsets=None, mode="sum", per_sample_weights=None,
                  include_last_offset=False, padding_idx=None, deterministic=False, *,
                  format=None, dtype=None, check_indices=False, device=None,
                  out_of_range="clamp", fill_value=None):
    """torch.nn.functional.embedding_bag (vkdml's VKDML_OPERATOR_EMBEDDING_BAG): for each bag
    b, the rows table[indices[i]] for i in [offsets[b], offsets[b + 1]) (the last bag to the
    end of indices, or with include_last_offset to offsets[-1]) reduced by mode "sum", "mean"
    or "max", in index order, each step rounded in float32 (the same bits every run, so
    deterministic changes nothing); empty bags give 0. Returns (bags, values per row).
    table: float32 or float16 (rows, width); or uint8 (rows, bytes per row) of ggml's blocks
    in format "q8_0" or "q4_0", read without a dequantized copy, the result of dtype float32
    (default) or float16. indices and offsets: 1-D integers of one dtype; or indices 2-D
    (a bag per row) and offsets None, as PyTorch's. per_sample_weights (mode "sum"): one per
    index, of the result's dtype; each row is multiplied by its weight (rounded) before it is
    added. padding_idx: entries naming that row (negative: from the end) are skipped, not
    counted. Bounds outside [0, len(indices)] are clamped. out_of_range: "clamp", "drop" (the
    entry is skipped), "fill" (its row is fill_value) or "error" (as check_indices=True)."""
    if mode not in _BAG_MODES:
        raise ValueError(f"mode is {mode!r}, expected one of {', '.join(_BAG_MODES)}")
    if not isinstance(include_last_offset, (bool, np.bool_)):
        raise TypeError(f"include_last_offset is {include_last_offset!r}, expected a bool")
    if padding_idx is not None:
        padding_idx = _int(padding_idx, "padding_idx")
    if out_of_range not in _OUT_OF_RANGE:
        raise ValueError(f"out_of_range is {out_of_range!r}, expected one of "
                         f"{', '.join(_OUT_OF_RANGE)}")
    if fill_value is not None and out_of_range != "fill":
        raise ValueError(f"fill_value is given, but out_of_range is {out_of_range!r}: only "
                         f"'fill' writes it")
    t, idx = _arg(table, "table"), _indices(indices)
    weights = None if per_sample_weights is None else _arg(per_sample_weights,
                                                           "per_sample_weights")
    blocks = t.dtype == np.uint8
    if blocks:
        if format not in _QUANTIZED_FORMATS:
            raise ValueError(f"format is {format!r}, expected one of "
                             f"{', '.join(_QUANTIZED_FORMATS)} for a uint8 table")
        out_dtype = np.dtype(_dtype_name(np.float32 if dtype is None else dtype))
        if out_dtype not in (np.dtype(np.float32), np.dtype(np.float16)):
            raise TypeError(f"dtype is {out_dtype}, expected float32 or float16")
    else:
        if format is not None or dtype is not None:
            raise ValueError(f"{'format' if format is not None else 'dtype'} applies to a uint8 "
                             f"table of quantized blocks; table's dtype is {t.dtype}")
        out_dtype = t.dtype
    if offsets is None:  # PyTorch's 2-D indices: a bag per row, all of one length
        if not isinstance(idx, np.ndarray) or idx.ndim != 2:
            raise ValueError("offsets is None: expected 2-D host indices (a bag per row); "
                             "give 1-D indices with offsets otherwise")
        if include_last_offset:
            raise ValueError("include_last_offset applies to offsets; with 2-D indices each row "
                             "is a bag")
        bags, length = idx.shape
        offsets = np.arange(0, bags * length, max(length, 1), dtype=idx.dtype)[:bags]
        idx = idx.reshape(-1)
        if isinstance(weights, np.ndarray) and weights.ndim == 2:
            weights = weights.reshape(-1)
    elif isinstance(offsets, (list, tuple)) and isinstance(idx, (np.ndarray, Tensor)):
        offsets = np.asarray(offsets, dtype=idx.dtype)  # a list takes indices' dtype
    else:
        offsets = _arg(offsets, "offsets")
        if isinstance(offsets, np.ndarray) and offsets.dtype.kind in "iu" \
                and offsets.itemsize < 4:
            offsets = offsets.astype(np.int32)
    fill = _fill_bytes(0 if fill_value is None else fill_value, out_dtype) \
        if out_of_range == "fill" else b""
    check = bool(check_indices) or out_of_range == "error"
    code = _OUT_OF_RANGE[out_of_range] if out_of_range in ("fill", "drop") else 0
    return _run("embedding-bag", "embedding_bag", _device(device), t, idx, None, 0, 0, "none",
                bool(deterministic), check, code, fill, True, None,
                format if blocks else "q8_0", out_dtype.name,
                _BagArgs(offsets, weights, mode, bool(include_last_offset), padding_idx))


# MoE routing (VKDML_OPERATOR_MOE_PERMUTE and _UNPERMUTE).

def _moe_tensors(args, device):
    """The arguments (name, value) as device tensors on one device, and whether any was one."""
    dev = next((v.device for _, v in args if isinstance(v, Tensor)), None)
    on_device = dev is not None
    if dev is None:
        dev = _device(device)
    tensors = []
    for name, v in args:
        if isinstance(v, Tensor):
            tensors.append(v)
            continue
        a = _host(v, name)
        if a.dtype.kind in "iu" and a.itemsize < 4:  # the library's ids are 32/64-bit
            a = a.astype(np.int32)
        tensors.append(_NativeDevice.tensor(dev, np.ascontiguousarray(a)))
    return tensors, on_device, dev


def _moe_check(t, name, ndim, kinds, what):
    if t.ndim != ndim:
        raise ValueError(f"{name}: shape {t.shape}, expected {ndim} dimensions ({what})")
    if t.dtype.kind not in kinds or t.dtype.kind == "b":
        raise TypeError(f"{name}: dtype is {t.dtype}, expected "
                        + ("float32 or float16" if kinds == "f" else "an integer type"))


def _moe_outputs(out, dev, specs):
    """out: None (new tensors), or tensors of the specs' (dtype, shape), one each."""
    if out is None:
        return [dev.empty(shape, dtype) for dtype, shape in specs]
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    if len(outs) != len(specs) or not all(isinstance(o, Tensor) for o in outs):
        raise TypeError(f"out: expected {len(specs)} vkdml.Tensor" + ("s" if len(specs) > 1
                                                                       else ""))
    for o, (dtype, shape) in zip(outs, specs):
        if o.shape != tuple(shape) or o.dtype != np.dtype(dtype):
            raise ValueError(f"out: shape {o.shape} {o.dtype}, expected {tuple(shape)} "
                             f"{np.dtype(dtype)}")
    return outs


def moe_permute(x, topk_ids, experts, *, index_dtype=np.int64, device=None, out=None):
    """A mixture-of-experts layer's routing (vkdml's VKDML_OPERATOR_MOE_PERMUTE): token t's
    j-th expert topk_ids[t, j] is entry i = t * k + j of topk_ids.reshape(-1); ids outside
    [0, experts) are dropped (an expert-parallel shard's foreign experts). The entries sorted by
    expert, stably (numpy.argsort(key, kind="stable"), a dropped entry's key past every
    expert: the same order on every device), give position p entry perm[p]. Returns
    (rows, offsets, perm, inv):
      rows     (tokens * k, width), x's dtype: x[perm[p] // k], zeros past offsets[-1];
      offsets  (experts + 1,): expert e's rows are rows[offsets[e]:offsets[e + 1]];
               offsets[-1] is the kept entries' count;
      perm     (tokens * k,): the entry at each position, -1 past offsets[-1];
      inv      (tokens, k): entry t * k + j's position, -1 where dropped.
    x: (tokens, width) float32 or float16; topk_ids: (tokens, k)
    integers. index_dtype: int64 (default) or int32, of offsets, perm and inv. Host arrays in:
    NumPy arrays out; any device tensor in: device tensors out (out: a tuple of four tensors
    to write)."""
    experts = _int(experts, "experts")
    if experts < 1:
        raise ValueError(f"experts is {experts}, expected at least 1")
    idt = np.dtype(_dtype_name(index_dtype))
    if idt not in (np.dtype(np.int32), np.dtype(np.int64)):
        raise TypeError(f"index_dtype is {idt}, expected int32 or int64")
    (xt, ids), on_device, dev = _moe_tensors((("x", x), ("topk_ids", topk_ids)), device)
    _moe_check(xt, "x", 2, "f", "tokens, width")
    _moe_check(ids, "topk_ids", 2, "iu", "tokens, k")
    if ids.shape[0] != xt.shape[0]:
        raise ValueError(f"topk_ids: shape {ids.shape}, expected {xt.shape[0]} tokens (x's)")
    tokens, k = ids.shape
    outs = _moe_outputs(out, dev, [(xt.dtype, (tokens * k, xt.shape[1])),
                                   (idt, (experts + 1,)), (idt, (tokens * k,)),
                                   (idt, (tokens, k))])
    _run_moe("permute", [xt, ids], outs, experts)
    if on_device:
        return tuple(outs)
    return tuple(o.numpy() for o in outs)


def moe_unpermute(y, inv, weights, *, dtype=None, device=None, out=None):
    """The experts' rows back to their tokens (vkdml's VKDML_OPERATOR_MOE_UNPERMUTE):
    out[t] = sum over j in order of weights[t, j] * y[inv[t, j]], in float32 (each product
    and each sum rounded once, from +0: the same bits on every device), rounded to dtype
    (default: y's); a row outside [0, len(y)) (moe_permute's -1) adds nothing.
    y: (rows, width) float32 or float16; inv: (tokens, k) integers; weights: (tokens, k)
    float32 or float16. Host arrays in: a NumPy array out; any device tensor in: a device
    tensor out (out: a tensor to write)."""
    (yt, it, wt), on_device, dev = _moe_tensors(
        (("y", y), ("inv", inv), ("weights", weights)), device)
    _moe_check(yt, "y", 2, "f", "rows, width")
    _moe_check(it, "inv", 2, "iu", "tokens, k")
    _moe_check(wt, "weights", 2, "f", "tokens, k")
    odt = yt.dtype if dtype is None else np.dtype(_dtype_name(dtype))
    outs = _moe_outputs(out, dev, [(odt, (it.shape[0], yt.shape[1]))])
    _run_moe("unpermute", [yt, it, wt], outs, 0)
    return outs[0] if on_device else outs[0].numpy()
# The paged KV cache (vLLM's reshape_and_cache_flash and gather_cache; vkdml's
# VKDML_OPERATOR_PAGED_CACHE_WRITE and VKDML_OPERATOR_PAGED_GATHER).
_LAYOUTS = {"NHD": 0, "HND": 1}
_PAGED_FORMATS = {None: 0, "q8_0": 1, "q4_0": 2}


def _paged_options(layout, format):
    if layout not in _LAYOUTS:
        raise ValueError(f"layout is {layout!r}, expected 'NHD' or 'HND'")
    if format not in _PAGED_FORMATS:
        raise ValueError(f"format is {format!r}, expected None, 'q8_0' or 'q4_0'")
    return _LAYOUTS[layout], _PAGED_FORMATS[format]


def _paged_args(items, names):
    """Host arrays C-ordered (index arrays of 8/16-bit widened to int32), or, where any is a
    device tensor, every one on its device."""
    args = []
    for obj, name in zip(items, names):
        a = _arg(obj, name)
        if isinstance(a, np.ndarray):
            if name in ("slot_mapping", "block_table", "seq_starts", "token_offsets"):
                if a.dtype.kind not in "iu":
                    raise TypeError(f"{name}: dtype is {a.dtype}, expected an integer type")
                if a.itemsize < 4:
                    a = a.astype(np.int32)
            a = np.ascontiguousarray(a)
        args.append(a)
    tensors = [a for a in args if isinstance(a, Tensor)]
    if tensors:
        dev = tensors[0].device
        args = [a if isinstance(a, Tensor) else dev.tensor(a) for a in args]
    return args


def paged_cache_write(key, value, key_cache, value_cache, slot_mapping, layout="NHD",
                      format=None, *, out_of_range="error", device=None):
    """vLLM's reshape_and_cache_flash: token t's key[t] and value[t] ((tokens, heads,
    head_size)) into key_cache and value_cache, in place, at slot slot_mapping[t] (block
    slot // block_size, row slot % block_size). Caches: (blocks, block_size, heads, head_size)
    (layout "NHD") or (blocks, heads, block_size, head_size) ("HND"), of key's dtype (float32
    or float16); or with format "q8_0" / "q4_0", uint8 with head_size / 32 ggml blocks in the
    last dimension (34 or 18 bytes each), quantized bit for bit as ggml's CPU quantizer. A
    negative slot skips its token (padding); where tokens share a slot the last one wins
    (every run). A slot past the cache raises IndexError (out_of_range "error", the rows of
    the others written) or is skipped ("drop"). NumPy arrays are written in place, device
    tensors on their device. Either of key/value may be None (that cache is then not written).
    Returns (key_cache, value_cache)."""
    lay, fmt = _paged_options(layout, format)
    if out_of_range not in ("error", "drop"):
        raise ValueError(f"out_of_range is {out_of_range!r}, expected 'error' or 'drop' (a cache "
                         f"write never clamps)")
    mode = _OUT_OF_RANGE[out_of_range]
    for values, cache, name in ((key, key_cache, "key"), (value, value_cache, "value")):
        if values is None:
            continue
        if isinstance(cache, np.ndarray) and not cache.flags.c_contiguous:
            raise ValueError(f"{name}_cache: a NumPy cache must be C-contiguous (written in place)")
        if not isinstance(cache, (np.ndarray, Tensor)):
            raise TypeError(f"{name}_cache: expected a NumPy array or a vkdml.Tensor (written in "
                            f"place)")
        c, slots, v = _paged_args((cache, slot_mapping, values),
                                  ("cache", "slot_mapping", "values"))
        if isinstance(cache, np.ndarray) and c is not cache:  # uploaded beside device tensors
            raise TypeError(f"{name}_cache is a NumPy array but {name} or slot_mapping is a "
                            f"device tensor: give the cache as a vkdml.Tensor")
        _paged("write", _device(device), [c, slots, v], lay, fmt, "float32", mode, b"", 0,
               None)
    return key_cache, value_cache


def paged_gather(cache, block_table, seq_lens=None, format=None, dtype=None, *, layout="NHD",
                 cu_seq_lens=None, token_offsets=None, total_tokens=None, out=None,
                 out_of_range="error", fill_value=None, device=None):
    """vLLM's gather_cache: each sequence's tokens from a paged cache (as paged_cache_write
    takes it), one after another: ((total_tokens, heads, head_size)). Sequence b's token i is
    the cache's row of block block_table[b, p // block_size], row p % block_size, where
    p = i + token_offsets[b] (0 without them: prefix reuse). seq_lens: each sequence's length
    (summed on the device, a negative one counting 0); or cu_seq_lens, the cumulative lengths
    (len(sequences) + 1 of them from 0, vLLM's). Either has block_table's dtype. Quantized caches
    (format "q8_0"/"q4_0") are dequantized to dtype float32 (default) or float16; float caches
    keep their dtype. total_tokens: the output's rows (default: out's, else the last cumulative
    length or the lengths' sum, which reads device lengths back; rows past it are left as they
    were: zeros in a new array). A block out of range raises
    IndexError (out_of_range "error"), is clamped ("clamp") or gives fill_value ("fill")."""
    lay, fmt = _paged_options(layout, format)
    if (seq_lens is None) == (cu_seq_lens is None):
        raise ValueError("give one of seq_lens and cu_seq_lens")
    if out_of_range not in ("error", "clamp", "fill"):
        raise ValueError(f"out_of_range is {out_of_range!r}, expected 'error', 'clamp' or "
                         f"'fill'")
    c = _arg(cache, "cache")
    table = _arg(block_table, "block_table")
    table_dtype = table.dtype if isinstance(table, np.ndarray) else np.dtype(table.dtype)
    lengths = cu_seq_lens is None
    starts = seq_lens if lengths else cu_seq_lens
    if isinstance(starts, (list, tuple)) or (lengths and not isinstance(starts, Tensor)):
        host = np.asarray(starts)
        if host.dtype.kind not in "iu" and host.size:
            raise TypeError(f"{'seq_lens' if lengths else 'cu_seq_lens'}: dtype is {host.dtype}, "
                            f"expected integers")
        info = np.iinfo(table_dtype) if np.dtype(table_dtype).kind in "iu" else None
        if info and host.size and (host.min() < info.min or host.max() > info.max):
            raise ValueError(f"{'seq_lens' if lengths else 'cu_seq_lens'}: values from "
                             f"{host.min()} to {host.max()}, outside block_table's dtype "
                             f"{np.dtype(table_dtype)}")
        starts = host.astype(table_dtype)
    if isinstance(token_offsets, (list, tuple)):
        token_offsets = np.asarray(token_offsets, dtype=table_dtype)
    if total_tokens is None and out is not None and len(out.shape) == 3:
        total_tokens = out.shape[0]
    if total_tokens is None:
        host = starts.numpy() if isinstance(starts, Tensor) else np.asarray(starts)
        last = np.maximum(host.astype(np.int64), 0).sum() if lengths else host[-1]
        total_tokens = max(int(last), 0)
    total_tokens = _int(total_tokens, "total_tokens")
    if total_tokens < 1:
        raise ValueError(f"total_tokens is {total_tokens}: no tokens to gather")
    if fmt:
        out_dtype = np.dtype(_dtype_name(np.float32 if dtype is None else dtype))
        if out_dtype not in (np.dtype(np.float32), np.dtype(np.float16)):
            raise TypeError(f"dtype is {out_dtype}, expected float32 or float16")
    else:
        out_dtype = c.dtype if isinstance(c, np.ndarray) else np.dtype(c.dtype)
        if dtype is not None and np.dtype(_dtype_name(dtype)) != out_dtype:
            raise TypeError(f"dtype is {np.dtype(dtype)}, but a float cache keeps its dtype "
                            f"({out_dtype})")
    if fill_value is not None and out_of_range != "fill":
        raise ValueError("fill_value is given, but out_of_range is not 'fill'")
    fill = _fill_bytes(0 if fill_value is None else fill_value, out_dtype) \
        if out_of_range == "fill" else b""
    items = [c, table, starts] + ([] if token_offsets is None else [token_offsets])
    names = ["cache", "block_table", "seq_lens" if lengths else "cu_seq_lens",
             "token_offsets"][:len(items)]
    args = _paged_args(items, names)
    on_device = isinstance(args[0], Tensor)
    if on_device:
        if out is not None and not isinstance(out, Tensor):
            raise TypeError("out: expected a vkdml.Tensor for device tensor arguments")
        target = out
    else:
        host_out = out
        target = np.zeros((total_tokens,) + _paged_row_shape(args[0], lay, fmt), out_dtype)
    result = _paged("gather", _device(device), args, lay, fmt, out_dtype.name,
                    _OUT_OF_RANGE[out_of_range], fill, total_tokens, target, lengths)
    if not on_device and host_out is not None:
        if host_out.shape != result.shape:
            raise ValueError(f"out: shape is {host_out.shape}, expected {result.shape}")
        np.copyto(host_out, result, casting="no")
        return host_out
    return result


def _paged_row_shape(cache, layout, fmt):
    shape = cache.shape
    if len(shape) != 4:
        raise ValueError(f"cache: shape is {tuple(shape)}, expected 4 dimensions")
    heads = shape[2] if layout == 0 else shape[1]
    head_size = shape[3] // (34 if fmt == 1 else 18) * 32 if fmt else shape[3]
    return (heads, head_size)
# Segment reductions (vkdml's VKDML_OPERATOR_SEGMENT_REDUCE): each segment reduced in row
# order, each step rounded in the element's type (float16 in float32), so every device and run
# gives the same bits.
_SEGMENT_REDUCTIONS = ("sum", "add", "mean", "min", "max", "prod", "mul")


def _segment(op, label, src, indices, reduce, dim_size=-1, out=None, check=False, initial=None,
             device=None, with_arg=True):
    if reduce not in _SEGMENT_REDUCTIONS:
        raise ValueError(f"reduce is {reduce!r}, expected one of {', '.join(_SEGMENT_REDUCTIONS)}")
    s, idx = _arg(src, "src"), _indices(indices)
    if isinstance(indices, (list, tuple)):
        idx = np.asarray(indices, dtype=np.int64)
    fill = b""
    if initial is not None:
        fill = _fill_bytes(initial, s.dtype if isinstance(s, np.ndarray) else
                           np.dtype(s.dtype_name))
    dev = _device(device)
    if reduce not in ("min", "max") or not with_arg:
        return _run(op, label, dev, s, idx, None, 0, 0, reduce, False, bool(check), 0, fill, True,
                    out, segment=_SegArgs(dim_size, initial is not None))
    # One reduction: each value is src's at its arg row along the axis (the first of the best,
    # a NaN's own bits), gathered; an empty segment's row, the axis size, is out of range and
    # gets 0, pytorch_scatter's value. Both runs on the device, src uploaded once; host arrays
    # in, host arrays out.
    on_device = isinstance(s, Tensor) or isinstance(idx, Tensor)
    if not on_device and out is not None:
        raise TypeError("out: expected None for host arrays (a vkdml.Tensor only where src or "
                        "the indices are device tensors)")
    if not isinstance(s, Tensor):
        s = (idx.device if isinstance(idx, Tensor) else dev).tensor(s)
    arg = _run(op, label, dev, s, idx, None, 0, 0, "arg" + reduce, False, bool(check), 0, b"",
               True, None, segment=_SegArgs(dim_size, False))
    axis = len(idx.shape) - 1
    zero = _fill_bytes(0, s.dtype)
    values = _run("gather-elements", label, dev, s, arg, None, axis, 0, "none", False, False,
                  _OUT_OF_RANGE["fill"], zero, True, out)
    return (values, arg) if on_device else (values.numpy(), arg.numpy())


def segment_csr(src, indptr, reduce="sum", out=None, *, check_indices=False, device=None):
    """pytorch_scatter's segment_csr: src reduced along axis indptr.ndim - 1 over the segments
    [indptr[..., s], indptr[..., s + 1]) (indptr's sizes before its last are src's; each bound
    clamped into [0, rows]), reduce "sum" ("add"), "mean", "min", "max" or "prod" ("mul"), in row
    order. Empty segments give 0 (prod: 1). "min" and "max" return (out, arg), arg (int64) the
    row of each value (src's size along the axis for an empty segment). check_indices: a
    decreasing, negative or too large offset raises IndexError."""
    return _segment("segment-csr", "segment_csr", src, indptr, reduce, out=out,
                    check=check_indices, device=device)


def segment_coo(src, index, dim_size=None, reduce="sum", out=None, *, check_indices=False,
                device=None):
    """pytorch_scatter's segment_coo: as segment_csr, the segments given by index, a sorted
    segment id per row along axis index.ndim - 1 (index's sizes are src's up to there), into
    dim_size segments (None: index.max() + 1). Ids outside [0, dim_size) belong to no segment;
    an unsorted index gives unspecified segments (check_indices: raises IndexError)."""
    if dim_size is None:
        host = index.numpy() if isinstance(index, Tensor) else np.asarray(index)
        dim_size = int(host.max()) + 1 if host.size else 0
    dim_size = _int(dim_size, "dim_size")
    if dim_size < 0:
        raise ValueError(f"dim_size is {dim_size}, expected 0 or more")
    return _segment("segment-coo", "segment_coo", src, index, reduce, dim_size, out=out,
                    check=check_indices, device=device)


def segment_reduce(data, reduce, lengths=None, offsets=None, axis=0, unsafe=False, initial=None,
                   *, device=None):
    """torch.segment_reduce: data reduced along `axis` over segments given by lengths or offsets
    (shape data.shape[:axis] + (segments,) or (segments + 1,)), reduce "sum", "mean", "max",
    "min" or "prod", in row order. Empty segments give torch's values (sum 0, mean NaN, max
    -inf, min +inf, prod 1), or with `initial` every segment's fold starts from it (mean divides
    the sum by the rows alone). unsafe=False checks the lengths (non-negative, summing to the
    axis' size) or the offsets (in order, within the rows: IndexError otherwise)."""
    if (lengths is None) == (offsets is None):
        raise ValueError("give exactly one of lengths and offsets")
    if reduce not in ("sum", "mean", "max", "min", "prod"):
        raise ValueError(f"reduce is {reduce!r}, expected sum, mean, max, min or prod")
    shape = data.shape
    axis = _int(axis, "axis")
    if not -len(shape) <= axis < len(shape):
        raise ValueError(f"axis is {axis}, expected -{len(shape)} to {len(shape) - 1}")
    axis %= len(shape)
    if lengths is not None:
        ln = lengths.numpy() if isinstance(lengths, Tensor) else np.asarray(lengths)
        if ln.dtype.kind not in "iu":
            raise TypeError(f"lengths: dtype is {ln.dtype}, expected an integer type")
        if ln.ndim != axis + 1:
            raise ValueError(f"lengths: rank is {ln.ndim}, expected {axis + 1} (axis + 1)")
        if not unsafe and (np.any(ln < 0) or np.any(ln.sum(axis=-1) != shape[axis])):
            raise ValueError(f"lengths: expected non-negative lengths summing to {shape[axis]} "
                             "(data's size along axis) in every batch")
        zero = np.zeros(ln.shape[:-1] + (1,), np.int64)
        offsets = np.concatenate([zero, np.cumsum(ln.astype(np.int64), axis=-1)], axis=-1)
    elif isinstance(offsets, (list, tuple)):
        offsets = np.asarray(offsets, dtype=np.int64)
    return _segment("segment-reduce", "segment_reduce", data, offsets, reduce,
                    check=not unsafe, initial=initial, device=device, with_arg=False)
