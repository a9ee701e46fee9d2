#!/usr/bin/python3
"""Writes the fuzz targets' seed corpora (committed in corpus/): python3 seeds.py [DIR].

corpus/npy: small .npy files of every dtype, C and Fortran order, 0-d and empty arrays, format
versions 1.0-3.0, and broken ones (cut, lying, foreign). corpus/operator: inputs for
vkdml_fuzz_operator's decoders, one per operator type and mode (plain, checked, deterministic,
raw; the quantized-row gather's plain, checked, FILL, ERROR and raw; the quantizing scatter's
plain, checked, DROP, ERROR and raw; the embedding bag's plain, checked, deterministic, FILL,
DROP, ERROR and raw on each table; the block-quantized gather's plain, checked, FILL, ERROR
and raw on each value type; the MoE permute's and unpermute's plain and raw), each followed
by fixed pseudo-random bytes (sizes, strides, data, indices); then the inputs the fuzzer found (found_*), kept as found.
"""
import base64
import io
import os
import random
import sys

import numpy as np

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus")
npy_dir, op_dir = os.path.join(root, "npy"), os.path.join(root, "operator")
os.makedirs(npy_dir, exist_ok=True)
os.makedirs(op_dir, exist_ok=True)


def npy_bytes(a, version=None):
    f = io.BytesIO()
    np.lib.format.write_array(f, a, version=version, allow_pickle=False)
    return f.getvalue()


def put(directory, name, data):
    with open(os.path.join(directory, name), "wb") as f:
        f.write(data)


types = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
         np.uint64, np.float16, np.float32, np.float64]
for t in types:
    a = (np.arange(6) % 3).astype(t).reshape(2, 3)
    put(npy_dir, f"{np.dtype(t).name}.npy", npy_bytes(a))
put(npy_dir, "fortran.npy", npy_bytes(np.asfortranarray(np.arange(12, dtype=np.int16)
                                                        .reshape(3, 4))))
put(npy_dir, "zero_d.npy", npy_bytes(np.array(7, np.float32)))
put(npy_dir, "empty.npy", npy_bytes(np.zeros((3, 0, 2), np.float64)))
put(npy_dir, "rank8.npy", npy_bytes(np.zeros((1, 2) * 4, np.uint8)))
put(npy_dir, "v2.npy", npy_bytes(np.arange(4, dtype=np.int32), version=(2, 0)))
put(npy_dir, "v3.npy", npy_bytes(np.arange(4, dtype=np.int32), version=(3, 0)))
good = npy_bytes(np.arange(4, dtype=np.float32))
put(npy_dir, "cut_header.npy", good[:40])
put(npy_dir, "cut_data.npy", good[:-3])
put(npy_dir, "trailing.npy", good + b"\0")
put(npy_dir, "big_endian.npy", npy_bytes(np.arange(3, dtype=">i4")))
put(npy_dir, "huge_claim.npy", good.replace(b"(4,)", b"(9999999999999,)"))
put(npy_dir, "not_npy.npy", b"PK\x03\x04 not an npy file")

random.seed(16)
for op in range(8):
    for mode, name in ((0, "plain"), (1, "checked"), (2, "deterministic"), (0x80, "raw")):
        tail = bytes(random.randrange(256) for _ in range(96))
        # op, mode, data type, index type, then rank, sizes, strides, data, indices
        put(op_dir, f"op{op}_{name}.bin", bytes([op, mode, (op * 3 + mode) % 11, op % 4]) + tail)
# The quantized-row gather (a first byte of 0xE0 or more): each mode, Q8_0 and Q4_0, float32 and
# float16 outputs, then rank, sizes, strides, data and indices.
for k, (mode, name) in enumerate(((0, "plain"), (1, "checked"), (4, "fill"), (8, "error"),
                                  (0x80, "raw"))):
    for fmt in range(2):
        tail = bytes(random.randrange(256) for _ in range(96))
        put(op_dir, f"rows_{name}_{fmt}.bin", bytes([0xE0 + k, mode, fmt, k % 2, k % 4]) + tail)
# The quantizing scatter (mode bit 0x40): each mode (0x44 DROP, 0x48 ERROR), Q8_0 and Q4_0, then
# the index type, rank, sizes, strides, the table's bytes, the updates and the indices.
for k, (mode, name) in enumerate(((0x40, "plain"), (0x41, "checked"), (0x44, "drop"),
                                  (0x48, "error"), (0xC0, "raw"))):
    for fmt in range(2):
        tail = bytes(random.randrange(256) for _ in range(160))
        put(op_dir, f"scatter_rows_{name}_{fmt}.bin", bytes([0xE8 + k, mode, fmt, k % 4]) + tail)
# The embedding bag (a first byte from 0xD0 to 0xDF): each mode (2 deterministic, 4 FILL, 8 DROP,
# 12 ERROR), each table (FLOAT32, FLOAT16, Q8_0, Q4_0), then the output and index types, the bag
# mode, shapes, options, entries, offsets and values.
for k, (mode, name) in enumerate(((0, "plain"), (1, "checked"), (2, "deterministic"), (4, "fill"),
                                  (8, "drop"), (12, "error"), (0x80, "raw"))):
    for table in range(4):
        tail = bytes(random.randrange(256) for _ in range(320))
        put(op_dir, f"bag_{name}_{table}.bin", bytes([0xD0 + k, mode, table, k % 2, k % 4]) + tail)
# The block-quantized gather (a first byte from 0xC8 to 0xCF): each mode (4 FILL, 8 ERROR), each
# value type (INT4, UINT4, UINT8 with 4 bits, UINT8), then the index and output types, shapes,
# axes, options, indices, strides and the values, zero points and scales.
for k, (mode, name) in enumerate(((0, "plain"), (1, "checked"), (4, "fill"), (8, "error"),
                                  (0x80, "raw"))):
    for kind in range(4):
        tail = bytes(random.randrange(256) for _ in range(400))
        put(op_dir, f"blocks_{name}_{kind}.bin", bytes([0xC8 + k, mode, kind, k % 4]) + tail)
# Float ADD and MULTIPLY reductions in the default mode (op 6 and 7, FLOAT32, FLOAT16 and FLOAT64,
# rank 2), whose colliding updates the target checks against every order (PossibleFold): the
# seeds above have none.
for op in (6, 7):
    for dt, reduce, name in ((0, 1, "f32_add"), (1, 2, "f16_mul"), (8, 1, "f64_add")):
        for k in range(2):
            tail = bytes(random.randrange(256) for _ in range(96))
            put(op_dir, f"op{op}_{name}_{k}.bin", bytes([op, 0, dt, 0, 1, reduce, 1]) + tail)
# Inputs the fuzzer found, kept as found. 2026-11-28: a FLOAT16 MULTIPLY of a signalling NaN
# (the broadcast input) by a quiet one (the update), where x86-64 keeps the first operand's
# payload and lavapipe's code the second's: either is right (dml.h: a NaN result of ADD or
# MULTIPLY has unspecified bits), and the target compared the bits until then.
found = base64.b64decode(
    "BwABAAMCAf+YwY8S/B2SMU8TPHWwaN8uXS3szOVYeDg2XzY0kjFPEzx1sGjfLl0t7MzwYQAA8AE6AJ2m"
    "XmCCQX4AAgIA61h4ODZfNjSSMU8TPHWwaN8uXS3szOVYeDg2XzY0kjFPEzx1sGjfLl0t7MzwYQAA8AE6"
    "ABBikJCQkJCQkJCQkJCQkJCQkJCQAAAAAAAA2FuOABBiAAAAAAAArewx3MfYtByqDYQvBXWtluIwwGqJ"
    "MaFd+s5121t8JuHqc2d4nZcl4UzgkJAL")
put(op_dir, "found_f16_mul_nan.bin", found)
# The MoE permute and unpermute (a first byte from 0xC4 to 0xC7; mode bit 0 the unpermute,
# 0x80 raw), then the id, row and output types, shapes, strides, rows, ids and weights. Its own
# generator, so the seeds above stay as they were.
moe = random.Random(51)
for k, (mode, name) in enumerate(((0, "permute"), (1, "unpermute"), (0x80, "permute_raw"),
                                  (0x81, "unpermute_raw"))):
    for variant in range(4):
        tail = bytes(moe.randrange(256) for _ in range(320))
        put(op_dir, f"moe_{name}_{variant}.bin",
            bytes([0xC4 + k, mode, variant, variant // 2]) + tail)
# The paged KV cache (a first byte from 0xC0 to 0xC3): the gather and (0x40) the write, each
# mode (4 and 8: the wrapped modes, 12 one each must refuse), each cache (FLOAT32, FLOAT16, Q8_0,
# Q4_0, Q8_0 from FLOAT16), then the layout, shapes, indices, strides and the values.
for k, (mode, name) in enumerate(((0, "plain"), (1, "checked"), (4, "wrap1"), (8, "wrap2"),
                                  (12, "wrap3"), (0x80, "raw"))):
    for op, opname in ((0, "gather"), (0x40, "write")):
        for kind in range(5):
            tail = bytes(random.randrange(256) for _ in range(400))
            put(op_dir, f"paged_{opname}_{name}_{kind}.bin",
                bytes([0xC0 + k % 4, mode | op, kind, k % 2]) + tail)
# The segment reduction (a first byte from 0xB8 to 0xBF): each mode, then the data, index and
# arg types, the function, empty value, index kind, shapes, indices and values; one seed per
# function.
for k, (mode, name) in enumerate(((0, "plain"), (1, "checked"), (2, "deterministic"),
                                  (0x80, "raw"))):
    for f in range(7):
        tail = bytes(random.randrange(256) for _ in range(160))
        put(op_dir, f"segment_{name}_{f}.bin",
            bytes([0xB8 + k, mode, (3 * f + k) % 11, k % 4, f % 4, f, k % 3]) + tail)
