"""vkdml.gather_block_quantized against ONNX Runtime's own com.microsoft.GatherBlockQuantized
(its CPU provider, through the npm package onnxruntime-node), bit for bit, on random cases:
int4, uint4 and uint8 (bits 4 and 8) data, float32 and float16 scales, zero points or not,
random ranks (2 to 4), gather and quantize axes (uint8: 0 and the last, as ONNX Runtime
requires), block sizes and int32 or int64 indices (negative ones
too). The same bytes go to both: the data and zero points as the model's initializers, in ONNX's
layouts (int4 and uint4 tensors packed whole, of any last size in half the cases, which vkdml
takes through values_shape; uint8 with bits 4 a row at a time).

    npm install --prefix DIR --ignore-scripts onnxruntime-node@1.30.0
    PYTHONPATH=BUILD/python /usr/bin/python3 test/onnxruntime/check_gather_block_quantized.py \\
        DIR/node_modules/onnxruntime-node [CASES] [SEED]

Needs /usr/bin/python3's numpy and onnx (Debian's python3-onnx) and Node.js. Not part of CI:
the package is 113 MB; README.md ("Checked against ONNX Runtime") gives the last run.
Exit status 1 if any case differs."""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from onnx import TensorProto, helper

import vkdml

HERE = os.path.dirname(os.path.abspath(__file__))
ELEM = {"int4": 22, "uint4": 21, "uint8": TensorProto.UINT8}  # TensorProto's INT4, UINT4


def pack4(values):
    """4-bit values (any shape, C order) packed whole, two a byte, the first in the low nibble."""
    v = (np.asarray(values).reshape(-1) & 15).astype(np.uint8)
    if v.size % 2:
        v = np.append(v, np.uint8(0))
    return v[0::2] | (v[1::2] << 4)


def initializer(name, kind, dims, raw):
    t = TensorProto()
    t.name, t.data_type, t.raw_data = name, ELEM[kind], bytes(raw)
    t.dims.extend(dims)
    return t


def write_model(path, kind, bits, data_dims, data_raw, zero_dims, zero_raw, index_type,
                index_dims, scale_type, scale_dims, gather_axis, quantize_axis, block_size):
    inputs = [helper.make_tensor_value_info("indices", index_type, index_dims),
              helper.make_tensor_value_info("scales", scale_type, scale_dims)]
    inits = [initializer("data", kind, data_dims, data_raw)]
    names = ["data", "indices", "scales"]
    if zero_raw is not None:
        inits.append(initializer("zero_points", kind, zero_dims, zero_raw))
        names.append("zero_points")
    attrs = dict(gather_axis=gather_axis, quantize_axis=quantize_axis, block_size=block_size)
    if kind == "uint8":
        attrs["bits"] = bits
    node = helper.make_node("GatherBlockQuantized", names, ["y"], domain="com.microsoft", **attrs)
    graph = helper.make_graph([node], "g", inputs,
                              [helper.make_tensor_value_info("y", scale_type, None)],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 10  # int4 and uint4 tensors
    with open(path, "wb") as f:
        f.write(model.SerializeToString())


def run_ort(ort_module, folder, model, feeds):
    spec = {"inputs": []}
    for name, (kind, array) in feeds.items():
        path = os.path.join(folder, name + ".bin")
        np.ascontiguousarray(array).tofile(path)
        spec["inputs"].append({"name": name, "type": kind, "file": path,
                               "dims": list(array.shape)})
    with open(os.path.join(folder, "spec.json"), "w") as f:
        json.dump(spec, f)
    out = os.path.join(folder, "y.bin")
    p = subprocess.run(["node", os.path.join(HERE, "run_model.js"), ort_module, model,
                        os.path.join(folder, "spec.json"), out], capture_output=True, text=True)
    if p.returncode:
        return None, None, p.stderr.strip().splitlines()[0]
    return np.fromfile(out, dtype=np.uint8), json.loads(p.stdout), ""


def one_case(rng, n, ort_module, folder):
    kind, bits = [("int4", 4), ("uint4", 4), ("uint8", 4), ("uint8", 8)][n % 4]
    four = bits == 4
    # ONNX Runtime's domain (vkdml's is wider): rank 2 or more; uint8 data gathered on axis 0
    # and quantized on the last.
    rank = int(rng.integers(2, 5))
    qa = rank - 1 if kind == "uint8" else int(rng.integers(0, rank))
    ga = 0 if kind == "uint8" else int(rng.integers(0, rank))
    block_size = int(rng.choice([16, 32, 64]))
    values = [int(rng.integers(1, 5)) for _ in range(rank)]
    values[qa] = int(rng.integers(1, 4)) * block_size + int(rng.integers(0, 2)) * \
        int(rng.integers(1, block_size))
    # int4 and uint4 in every other round of 4 cases: any last size, vkdml's data described by
    # values_shape (ONNX's shape), their bytes 1-D; else a row of whole bytes.
    whole = kind != "uint8" and (n // 4) % 2 == 1
    if four and not whole:
        values[-1] += values[-1] % 2
    blocks = list(values)
    blocks[qa] = -(-values[qa] // block_size)
    lo, hi = (-8, 8) if kind == "int4" else (0, 16 if four else 256)
    q = rng.integers(lo, hi, size=values)
    scale_dtype = np.float32 if rng.random() < 0.5 else np.float16
    scales = (rng.standard_normal(blocks) * 2.0 ** rng.integers(-8, 3)).astype(scale_dtype)
    zeros = rng.integers(lo, hi, size=blocks) if rng.random() < 0.6 else None
    index_dtype = np.int32 if rng.random() < 0.5 else np.int64
    indices = rng.integers(-values[ga], values[ga], size=rng.integers(1, 4, size=int(
        rng.integers(1, 3)))).astype(index_dtype)

    # The bytes both take: ONNX's layouts.
    if not four:
        data = q.astype(np.uint8)
        zero_bytes = None if zeros is None else zeros.astype(np.uint8)
    elif kind == "uint8":  # bits 4: a row of the last dimension at a time
        data = pack4(q).reshape(values[:-1] + [values[-1] // 2])
        zero_bytes = None if zeros is None else np.stack(
            [pack4(r) for r in zeros.reshape(-1, blocks[-1])]).reshape(
                blocks[:-1] + [-(-blocks[-1] // 2)])
    else:  # int4, uint4: ONNX's tensors of that type, packed whole
        data = pack4(q) if whole else pack4(q).reshape(values[:-1] + [values[-1] // 2])
        zero_bytes = None if zeros is None else pack4(zeros)
    model = os.path.join(folder, "m.onnx")
    onnx_dims = values if kind != "uint8" else list(data.shape)
    zero_dims = None if zeros is None else (blocks if kind != "uint8" else list(zero_bytes.shape))
    write_model(model, kind, bits, onnx_dims, data.tobytes(), zero_dims,
                None if zeros is None else zero_bytes.tobytes(),
                TensorProto.INT32 if index_dtype == np.int32 else TensorProto.INT64,
                list(indices.shape),
                TensorProto.FLOAT if scale_dtype == np.float32 else TensorProto.FLOAT16,
                blocks, ga, qa, block_size)
    feeds = {"indices": ("int32" if index_dtype == np.int32 else "int64", indices),
             "scales": ("float32", scales) if scale_dtype == np.float32 else
                       ("float16", scales.view(np.uint16))}
    shape_note = " (values_shape)" if whole else ""
    what = (f"case {n}: {kind} bits {bits}, values {values}{shape_note}, gather_axis {ga}, "
            f"quantize_axis {qa}, block_size {block_size}, scales {np.dtype(scale_dtype).name}, "
            f"zero points {zeros is not None}, indices {list(indices.shape)} "
            f"{np.dtype(index_dtype).name}")
    ort_bytes, ort_dims, error = run_ort(ort_module, folder, model, feeds)
    if ort_bytes is None:
        return what, "ONNX Runtime refused it: " + error
    got = vkdml.gather_block_quantized(data, indices, scales, zero_bytes, type=kind, bits=bits,
                                       gather_axis=ga, quantize_axis=qa, block_size=block_size,
                                       values_shape=values if whole else None)
    got = np.ascontiguousarray(got)
    if list(got.shape) != list(ort_dims):
        return what, f"shapes differ: vkdml {list(got.shape)}, ONNX Runtime {ort_dims}"
    if got.view(np.uint8).tobytes() != ort_bytes.tobytes():
        want = np.frombuffer(ort_bytes.tobytes(), dtype=got.dtype).reshape(got.shape)
        at = tuple(np.argwhere(got.view(np.uint8 if got.dtype == np.uint8 else got.dtype) !=
                               want)[0])
        return what, f"differs first at {list(at)}: vkdml {got[at]!r}, ONNX Runtime {want[at]!r}"
    return what, ""


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    ort_module = os.path.abspath(sys.argv[1])
    cases = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    rng = np.random.default_rng(int(sys.argv[3]) if len(sys.argv) > 3 else 27)
    failed = 0
    with tempfile.TemporaryDirectory() as folder:
        for n in range(cases):
            what, problem = one_case(rng, n, ort_module, folder)
            if problem:
                failed += 1
                print(f"{what}: {problem}")
    print(f"{cases - failed} of {cases} cases bit for bit the same as ONNX Runtime")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
