#!/usr/bin/python3
"""Tests of the `vkdml` command-line tool: cli_test.py PATH_TO_VKDML GROUP.

Groups: help, roundtrip (every data and index type through .npy), shapes (0-d, 1-d, 8-d,
Fortran order, views, empty arrays), errors (exit codes and messages, no partial output),
indices (negative, clamped and checked indices), output (links, FIFOs, permissions, signals),
limits (hostile files and sizes, outputs too large, memory running out),
bench (`vkdml bench` at small sizes: its JSON lines and its checks). The expected values come
from NumPy.
"""
import io
import json
import os
import re
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

import validation
from onnx_reference import (ref_dequantize, ref_embedding_bag, ref_gather, ref_gather_elements,
                            ref_gather_block_quantized,
                            ref_gather_nd, ref_quantize, ref_scatter_elements, ref_scatter_nd,
                            ref_scatter_reduce, reduce_values, same, sample,
                            scatter_elements_writers, unique_indices)

validation.install()  # every process below under the validation layer, where ctest asks
VKDML = os.path.abspath(sys.argv[1])
TMP = tempfile.mkdtemp(prefix="vkdml_cli_test_")
failures = []
DATA_TYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
              np.uint64, np.float16, np.float32, np.float64]
INDEX_TYPES = [np.int32, np.int64, np.uint32, np.uint64]


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def share(items):
    """The items a repeated run of the suite takes: with VKDML_TEST_SHARE=r/n (CI's sanitizer and
    SwiftShader runs, .ci/test-share.sh: lavapipe's run took every item first, and r turns with
    the commit), those at positions r, r + n, ...; else every one. For the long loops over data
    types, axes and cases, where each item is a few whole CLI runs."""
    items = list(items)
    value = os.environ.get("VKDML_TEST_SHARE", "")
    if not value:
        return items
    m = re.fullmatch(r"(\d+)/(\d+)", value)
    if not m or not 0 <= int(m[1]) < int(m[2]) <= 64:
        raise SystemExit(f"VKDML_TEST_SHARE={value}: expected r/n with 0 <= r < n <= 64, e.g. 1/3")
    r, n = int(m[1]), int(m[2])
    return items[r::n] or items[r % len(items):][:1]  # never none: each loop runs


_features = None
skips = {}  # the device features whose absence made cases skip, and how many


def features():
    """The default device's optional features and driver, as `vkdml devices` lists them, and what
    it says Device::CheckFeatureSupport answers: "types" (the data types it runs) and "reduced"
    (those whose reductions it runs), as sets of DML names."""
    global _features
    if _features is None:
        _features = {"types": set(), "reduced": set()}
        p = vkdml("devices")
        mine = False
        for line in p.stdout.splitlines():
            if re.match(r"^[ *] \d+: ", line):
                mine = line.startswith("*")
            elif mine:
                for name, value in re.findall(r"(\w+): (yes|no)\b", line):
                    _features[name] = value == "yes"
                key, _, value = line.strip().partition(":")
                if key == "driver":
                    _features["driver"] = value.strip()
                elif key in ("data types", "reductions on"):
                    _features["types" if key == "data types" else "reduced"] = set(value.split())
    return _features


REFUSAL = re.compile(r"a reduction on (\w+) elements needs (\w+), not enabled on device")


def refused_for_lack(text):
    """Whether text is the device's documented refusal of a reduction that `vkdml devices` says
    it does not run; counted as a skip. Any other refusal is not one."""
    m = REFUSAL.search(text)
    if not m or m.group(1) in features()["reduced"]:
        return False
    skips[m.group(2)] = skips.get(m.group(2), 0) + 1
    return True


def device_refused(p):
    """Whether p is such a refusal from `vkdml run` (exit 1, one line)."""
    return p.returncode == 1 and p.stderr.count("\n") == 1 and refused_for_lack(p.stderr)


ALL_TYPES = {"FLOAT32", "FLOAT16", "UINT32", "UINT16", "UINT8", "INT32", "INT16", "INT8",
             "FLOAT64", "UINT64", "INT64"}


def has_every_type():
    """Every data type with every reduction, as `vkdml devices` says: a device where no case may
    be skipped."""
    f = features()
    return f["types"] >= ALL_TYPES and f["reduced"] >= ALL_TYPES


def path(name):
    return os.path.join(TMP, name)


def save(name, a, version=None):
    p = path(name)
    with open(p, "wb") as f:
        np.lib.format.write_array(f, a, version=version)
    return p


def vkdml(*args):
    return subprocess.run([VKDML, *args], capture_output=True, text=True)


def run_op(op, inp, idx, upd=None, extra=(), version=None):
    """Runs `vkdml run`; returns (CompletedProcess, output array or None)."""
    out = path("out.npy")
    if os.path.exists(out):
        os.remove(out)
    args = ["run", op, "--input", save("in.npy", inp, version), "--indices",
            save("idx.npy", idx, version), "--output", out, *extra]
    if upd is not None:
        args += ["--updates", save("upd.npy", upd, version)]
    p = vkdml(*args)
    result = np.load(out) if p.returncode == 0 else None
    if p.returncode != 0 and os.path.exists(out):
        failures.append(f"{op}: {out} exists after a failed run")
    return p, result


def expect_ok(what, p, got, want):
    if p.returncode != 0 and device_refused(p):
        return
    check(p.returncode == 0, f"{what}: exit {p.returncode}, stderr: {p.stderr.strip()}")
    if p.returncode == 0:
        check(same(got, want), f"{what}: got {got!r}, expected {want!r}")
        check(p.stderr == "", f"{what}: stderr is {p.stderr!r}, expected nothing")


def expect_error(what, p, status, text):
    check(p.returncode == status and text in p.stderr and p.stderr.count("\n") == 1,
          f"{what}: expected exit {status} and one stderr line containing {text!r}; got exit "
          f"{p.returncode}, stderr {p.stderr!r}")


def group_help():
    for cmd in ([], ["devices"], ["demo"], ["run"]):
        p = vkdml(*cmd, "--help")
        check(p.returncode == 0 and "usage: vkdml" in p.stdout, f"vkdml {cmd} --help")
    # The top-level help names every operator `vkdml run` takes.
    p = vkdml("--help")
    for op in ("gather", "gather-nd", "gather-elements", "scatter-elements", "scatter-nd",
               "dequantize-rows", "quantize-rows", "embedding-bag", "gather-block-quantized",
               "moe-permute", "moe-unpermute"):
        check(op in p.stdout.replace("\n", " ").replace("  ", " "), f"vkdml --help names {op}")
    p = vkdml()
    check(p.returncode == 2 and "no command" in p.stderr, "vkdml with no command")
    p = vkdml("frobnicate")
    check(p.returncode == 2 and "unknown command 'frobnicate'" in p.stderr, "unknown command")
    p = vkdml("demo", "--device", "0")
    check(p.returncode == 0 and "6 examples, 6 match the pages, 0 do not" in p.stdout,
          f"vkdml demo --device 0: {p.stdout} {p.stderr}")
    p = vkdml("demo", "--device", "99")
    check(p.returncode == 2 and "--device is 99, expected 0 to" in p.stderr, "demo --device 99")
    p = vkdml("devices", "extra")
    check(p.returncode == 2 and "unexpected argument 'extra'" in p.stderr, "devices extra")
    p = vkdml("devices")
    check(p.returncode == 0 and "maxStorageBufferRange" in p.stdout and "0:" in p.stdout and
          "storageBuffer8BitAccess" in p.stdout, f"vkdml devices: {p.stdout} {p.stderr}")
    # Every data type runs on every device (CheckFeatureSupport), packed in words or not.
    check(features()["types"] == ALL_TYPES, f"vkdml devices: data types {features()['types']}")
    # The largest tensor: any size, but embedding bags' (all but their tables) and
    # block-quantized gathers' scales and zero points fit one binding, maxStorageBufferRange less
    # its offset alignment (at least 16 bytes).
    mine = re.search(r"^\* \d+: .*?(?=^[ *] \d+: |^\(\*)", p.stdout, re.M | re.S).group(0)
    ranges = re.findall(r"maxStorageBufferRange: (\d+) bytes", mine)
    largest = re.findall(r"largest tensor: any size \(past maxStorageBufferRange: the large "
                         r"path\); but EMBEDDING_BAG (\d+) bytes \(all but its table\), "
                         r"GATHER_BLOCK_QUANTIZED (\d+) bytes \(its scales and zero points\), "
                         r"MOE_PERMUTE (\d+) bytes \(every tensor\), "
                         r"MOE_UNPERMUTE (\d+) bytes \(every tensor\)$", mine, re.M)
    check(len(ranges) == 1 and len(largest) == 1 and len(set(largest[0])) == 1 and
          0 < int(ranges[0]) - int(largest[0][0]) and int(ranges[0]) - int(largest[0][0]) >= 16,
          f"vkdml devices: the largest tensor of each operator: {mine}")


def group_roundtrip():
    for dt in share(DATA_TYPES):
        data = sample(dt, (3, 4))
        name = np.dtype(dt).name
        # gather-elements with the identity indices returns the input bit for bit
        ident = np.broadcast_to(np.arange(3, dtype=np.int64)[:, None], (3, 4)).copy()
        p, got = run_op("gather-elements", data, ident)
        expect_ok(f"gather-elements identity {name}", p, got, data)
        idx = np.array([[2], [0], [1], [2]], np.int32)
        p, got = run_op("gather-nd", data, idx)
        expect_ok(f"gather-nd {name}", p, got, ref_gather_nd(data, idx))
        gidx = np.array([3, 0, -1, 1, 1], np.int64)
        p, got = run_op("gather", data, gidx, extra=["--axis", "1"])
        expect_ok(f"gather {name}", p, got, data[:, [3, 0, 3, 1, 1]])
        upd = sample(dt, (2, 4), seed=2)
        sidx = np.array([[2], [0]], np.uint32)
        p, got = run_op("scatter-nd", data, sidx, upd)
        expect_ok(f"scatter-nd {name}", p, got, ref_scatter_nd(data, sidx, upd))
        eidx = np.array([[2, 0, 1, 1], [0, 2, 2, 0]], np.int64)  # (2, 4) into (3, 4), axis 0
        p, got = run_op("scatter-elements", data, eidx, upd)
        expect_ok(f"scatter-elements {name}", p, got, ref_scatter_elements(data, eidx, upd, 0))
    for it in share(INDEX_TYPES):
        data = sample(np.float32, (4, 3))
        idx = np.array([[3, 2], [0, 1], [1, 0]], it)
        p, got = run_op("gather-nd", data, idx)
        expect_ok(f"gather-nd indices {np.dtype(it).name}", p, got, ref_gather_nd(data, idx))
        p, got = run_op("gather", data, idx)
        expect_ok(f"gather indices {np.dtype(it).name}", p, got, data[[[3, 2], [0, 1], [1, 0]]])
        eidx = np.array([[2, 0], [0, 1], [1, 2], [3, 0]], it)  # (4, 2) into (4, 3), axis 1
        upd = sample(np.float32, (4, 2), seed=3)
        p, got = run_op("scatter-elements", data, eidx, upd, extra=["--axis", "1"])
        expect_ok(f"scatter-elements indices {np.dtype(it).name}", p, got,
                  ref_scatter_elements(data, eidx, upd, 1))
    short = np.int16
    for version in [(1, 0), (2, 0), (3, 0)]:
        data = sample(short, (2, 5))
        idx = np.array([[1], [0]], np.int64)
        p, got = run_op("gather-nd", data, idx, version=version)
        expect_ok(f"npy format version {version}", p, got, data[::-1])
    # The output file itself: format 1.0, C order, the input's dtype.
    with open(path("out.npy"), "rb") as f:
        check(np.lib.format.read_magic(f) == (1, 0), "output is format 1.0")
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        check(not fortran and shape == (2, 5) and dtype == short, "output header")


def group_shapes():
    # 0-d output and 0-d updates.
    data = np.arange(5, dtype=np.float32)
    p, got = run_op("gather-nd", data, np.array([3], np.int64))
    expect_ok("gather-nd to a 0-d output", p, got, np.array(3, np.float32))
    p, got = run_op("scatter-nd", data, np.array([1], np.int64), np.array(9, np.float32))
    expect_ok("scatter-nd with 0-d updates", p, got, np.array([0, 9, 2, 3, 4], np.float32))
    # 1-d
    idx = np.array([4, 0, -1, 2], np.int64)
    p, got = run_op("gather-elements", data, idx)
    expect_ok("gather-elements 1-d", p, got, data[[4, 0, 4, 2]])
    # 8-d, and every axis of it, negative axes too
    data8 = sample(np.int32, (2, 1, 3, 2, 1, 2, 3, 2))
    for axis in share(range(-8, 8)):
        idx8 = np.zeros_like(data8, np.int64)
        idx8[...] = data8.shape[axis] - 1
        p, got = run_op("gather-elements", data8, idx8, extra=["--axis", str(axis)])
        expect_ok(f"gather-elements 8-d axis {axis}", p, got,
                  ref_gather_elements(data8, idx8, axis % 8))
    idx = np.array([[[1, 0, 2], [0, 0, 1]]], np.int32)
    p, got = run_op("gather-nd", data8, idx)
    expect_ok("gather-nd 8-d input", p, got, ref_gather_nd(data8, idx))
    # Gather: every axis of the 8-d data with 0-d indices (rank 7), 1-d indices (rank 8), and
    # 2-d indices where the output's rank allows; 0-d data out of 1-d data; Fortran order.
    for axis in share(range(-8, 8)):
        n = data8.shape[axis]
        for idx in (np.array(n - 1, np.int64), np.array([0, n - 1, -n], np.int32)):
            p, got = run_op("gather", data8, idx, extra=["--axis", str(axis)])
            expect_ok(f"gather 8-d axis {axis} indices {idx.shape}", p, got,
                      ref_gather(data8, idx, axis % 8))
    data = sample(np.uint16, (4, 1, 3))
    idx = np.array([[[2, -1]], [[0, 3]]], np.int64)  # (2, 1, 2)
    for axis in (0, -1):
        for fd in (False, True):
            for fi in (False, True):
                f = (lambda a, on: np.asfortranarray(a) if on else np.ascontiguousarray(a))
                what = f"(input {'F' if fd else 'C'}, indices {'F' if fi else 'C'})"
                p, got = run_op("gather", f(data, fd), f(idx, fi), extra=["--axis", str(axis)])
                expect_ok(f"gather axis {axis} {what}", p, got, ref_gather(data, idx, axis % 3))
    p, got = run_op("gather", np.arange(5, dtype=np.int8), np.array(-2, np.int32))
    expect_ok("gather to a 0-d output", p, got, np.array(3, np.int8))
    p, got = run_op("gather", sample(np.float32, (1, 3)), np.array([[0]], np.uint64))
    expect_ok("gather from a leading 1", p, got, sample(np.float32, (1, 3))[[[0]]])
    # Batch dims
    data = sample(np.float64, (2, 3, 4))
    idx = np.array([[[2, 1], [0, 3]], [[1, 1], [2, 0]]], np.int64)
    p, got = run_op("gather-nd", data, idx, extra=["--batch-dims", "1"])
    expect_ok("gather-nd batch dims 1", p, got, ref_gather_nd(data, idx, 1))
    idx = np.array([[[1], [3]], [[0], [2]]], np.int64).reshape(2, 1, 2, 1)
    data4 = sample(np.float32, (2, 1, 4, 3))
    p, got = run_op("gather-nd", data4, idx, extra=["--batch-dims", "2"])
    expect_ok("gather-nd batch dims 2", p, got, ref_gather_nd(data4, idx, 2))
    # Fortran order for every input of every operator, alone and together
    data = sample(np.float32, (3, 4, 2))
    gidx = np.array([[2, 1], [0, 3], [1, 0]], np.int64)
    eidx = sample(np.int64, (3, 4, 2)) % 4
    sidx = np.array([[2, 1], [0, 3]], np.int32)
    upd = sample(np.float32, (2, 2), seed=5)
    for fd in (False, True):
        for fi in (False, True):
            f = (lambda a, on: np.asfortranarray(a) if on else np.ascontiguousarray(a))
            what = f"(input {'F' if fd else 'C'}, indices {'F' if fi else 'C'})"
            p, got = run_op("gather-nd", f(data, fd), f(gidx, fi))
            expect_ok("gather-nd Fortran " + what, p, got, ref_gather_nd(data, gidx))
            p, got = run_op("gather-elements", f(data, fd), f(eidx, fi), extra=["--axis", "1"])
            expect_ok("gather-elements Fortran " + what, p, got,
                      ref_gather_elements(data, eidx, 1))
            p, got = run_op("scatter-nd", f(data, fd), f(sidx, fi), f(upd, fd))
            expect_ok("scatter-nd Fortran " + what, p, got, ref_scatter_nd(data, sidx, upd))
    # ONNX GatherElements: indices smaller than the input on non-axis dims (a strided view)
    data = sample(np.int16, (4, 5, 3))
    idx = np.array([[[3], [0]], [[1], [2]]], np.int64)  # (2, 2, 1), axis 1
    for fd in (False, True):
        d = np.asfortranarray(data) if fd else data
        p, got = run_op("gather-elements", d, idx, extra=["--axis", "-2"])
        expect_ok(f"gather-elements smaller indices ({'F' if fd else 'C'})", p, got,
                  ref_gather_elements(data, idx, 1))
    # ONNX ScatterElements: negative axes, every axis of 8-d data, Fortran order, and indices
    # smaller than the input on non-axis dims (the output outside them is the input's).
    rng = np.random.default_rng(11)
    for axis in share(range(-8, 8)):
        ishape = list(data8.shape)
        ishape[axis] = 1
        idx8 = unique_indices(rng, ishape, axis % 8, data8.shape[axis], np.int64, negative=True)
        upd8 = sample(np.int32, ishape, seed=axis + 20)
        p, got = run_op("scatter-elements", data8, idx8, upd8, extra=["--axis", str(axis)])
        expect_ok(f"scatter-elements 8-d axis {axis}", p, got,
                  ref_scatter_elements(data8, idx8, upd8, axis % 8))
    data = sample(np.float64, (4, 5, 3))
    for axis, ishape in [(1, (2, 3, 1)), (-1, (3, 1, 2)), (-3, (4, 2, 3)), (0, (1, 1, 1))]:
        idx = unique_indices(rng, ishape, axis % 3, data.shape[axis], np.int32, negative=True)
        upd = sample(np.float64, ishape, seed=6)
        want = ref_scatter_elements(data, idx, upd, axis % 3)
        for fd in (False, True):
            for fi in (False, True):
                f = (lambda a, on: np.asfortranarray(a) if on else np.ascontiguousarray(a))
                what = (f"scatter-elements axis {axis} indices {ishape} (input "
                        f"{'F' if fd else 'C'}, indices and updates {'F' if fi else 'C'})")
                p, got = run_op("scatter-elements", f(data, fd), f(idx, fi), f(upd, fi),
                                extra=["--axis", str(axis)])
                expect_ok(what, p, got, want)
    # Long lines along the last axis, fewer rows than the input, odd lengths of small elements.
    for dt, shape, k in [(np.float32, (3, 1000), 600), (np.int8, (4, 2, 1001), 1001),
                         (np.uint16, (2, 3, 333), 100)]:
        ishape = (shape[0] - 1, *shape[1:-1], k)
        idx = unique_indices(rng, ishape, len(shape) - 1, shape[-1], np.int64, negative=True)
        data, upd = sample(dt, shape, seed=12), sample(dt, ishape, seed=13)
        p, got = run_op("scatter-elements", data, idx, upd, extra=["--axis", "-1"])
        expect_ok(f"scatter-elements long lines {np.dtype(dt).name} {shape} indices {ishape}", p,
                  got, ref_scatter_elements(data, idx, upd, len(shape) - 1))
    # More indices than the input has along axis, so targets repeat: any writer may win, and
    # the elements no index covers (rows 1 and 2, and the smaller indices' column 3) keep the
    # input's values.
    data = sample(np.int16, (3, 4))
    idx = np.array([[0, 0, 2, -3, 0], [2, -1, 0, 2, 2], [-3, 0, 0, 0, 0]], np.int64).T.copy()
    upd = sample(np.int16, idx.shape, seed=9)  # (5, 3): 5 updates per column, 3 columns of 4
    p, got = run_op("scatter-elements", data, idx, upd)
    refused = p.returncode != 0 and device_refused(p)
    ran = p.returncode == 0 and got is not None
    check(refused or (ran and got.dtype == data.dtype and got.shape == data.shape),
          f"scatter-elements repeated targets: exit {p.returncode}, stderr {p.stderr.strip()}, "
          f"got {got!r}")
    if p.returncode == 0 and got is not None and got.shape == data.shape:
        allowed = scatter_elements_writers(data, idx, upd, 0)
        for pos, values in allowed.items():
            check(any(got[pos] == v for v in values),
                  f"scatter-elements repeated targets: output{list(pos)} is {got[pos]}, "
                  f"expected one of {values}")
        check(got[1, 0] == data[1, 0] and (got[:, 3] == data[:, 3]).all(),
              "scatter-elements repeated targets: untouched elements keep the input's values")
    # Empty arrays need no device: an empty output, or a scatter without updates.
    p, got = run_op("gather-nd", np.ones((3, 2), np.float32), np.zeros((0, 1), np.int64))
    expect_ok("gather-nd with no index tuples", p, got, np.zeros((0, 2), np.float32))
    data = np.asfortranarray(sample(np.uint8, (3, 2)))
    p, got = run_op("scatter-nd", data, np.zeros((0, 1), np.int64), np.zeros((0, 2), np.uint8))
    expect_ok("scatter-nd with no updates", p, got, np.ascontiguousarray(data))
    p, got = run_op("gather", np.ones((3, 2), np.float32), np.zeros((2, 0), np.int64))
    expect_ok("gather with no indices", p, got, np.zeros((2, 0, 2), np.float32))
    p, got = run_op("gather", np.ones((3, 0), np.float32), np.array([1, 2], np.int64))
    expect_ok("gather of empty rows", p, got, np.zeros((2, 0), np.float32))
    p, got = run_op("gather-elements", np.zeros((2, 0), np.float32), np.zeros((2, 0), np.int64),
                    extra=["--axis", "1"])
    expect_ok("gather-elements empty", p, got, np.zeros((2, 0), np.float32))
    data = np.asfortranarray(sample(np.float16, (2, 3)))
    p, got = run_op("scatter-elements", data, np.zeros((2, 0), np.int32),
                    np.zeros((2, 0), np.float16), extra=["--axis", "1"])
    expect_ok("scatter-elements with no updates", p, got, np.ascontiguousarray(data))
    p, got = run_op("scatter-elements", np.zeros((0, 3), np.int8), np.zeros((0, 3), np.int64),
                    np.zeros((0, 3), np.int8))
    expect_ok("scatter-elements empty", p, got, np.zeros((0, 3), np.int8))
    data = np.arange(5, dtype=np.uint16)
    idx = np.array([4, -5, 2], np.int64)
    upd = np.array([40, 0, 20], np.uint16)
    p, got = run_op("scatter-elements", data, idx, upd)
    expect_ok("scatter-elements 1-d", p, got, np.array([0, 1, 20, 3, 40], np.uint16))


def group_indices():
    data = np.arange(10, dtype=np.float32).reshape(5, 2)
    for it in share(INDEX_TYPES):
        vals = [-1, -5, 7, -9, 0] if np.issubdtype(it, np.signedinteger) else [7, 0, 4, 99, 2**31]
        idx = np.array(vals, np.int64).astype(it).reshape(5, 1)
        p, got = run_op("gather-nd", data, idx)
        expect_ok(f"clamped {np.dtype(it).name} indices", p, got, ref_gather_nd(data, idx))
        p, got = run_op("gather-nd", data, idx, extra=["--check-indices"])
        bad = 2 if np.issubdtype(it, np.signedinteger) else 0
        rng = "[-5, 4]" if np.issubdtype(it, np.signedinteger) else "[0, 4]"
        expect_error(f"--check-indices {np.dtype(it).name}", p, 2,
                     f"idx.npy: indices[{bad},0] is {vals[bad]}, outside the valid range {rng}")
    idx = np.array([[-1], [-5], [4]], np.int64)
    p, got = run_op("gather-nd", data, idx, extra=["--check-indices"])
    expect_ok("--check-indices with valid negative indices", p, got, data[[4, 0, 4]])
    eidx = np.array([[0, 1], [-5, 5]], np.int32)
    p, got = run_op("gather-elements", data.T.copy(), eidx, extra=["--axis", "1",
                                                                   "--check-indices"])
    expect_error("gather-elements --check-indices", p, 2,
                 "idx.npy: indices[1,1] is 5, outside the valid range [-5, 4]")
    for it in share(INDEX_TYPES):
        name = np.dtype(it).name
        signed = np.issubdtype(it, np.signedinteger)
        vals = [[-1, 9], [-7, 2]] if signed else [[2**31, 0], [4, 2]]
        gidx = np.array(vals, np.int64).astype(it)
        p, got = run_op("gather", data, gidx)
        expect_ok(f"gather clamped {name} indices", p, got, ref_gather(data, gidx, 0))
        p, got = run_op("gather", data, gidx, extra=["--check-indices"])
        rng = "[-5, 4]" if signed else "[0, 4]"
        bad = "[0,1] is 9" if signed else f"[0,0] is {2**31}"
        expect_error(f"gather --check-indices {name}", p, 2,
                     f"idx.npy: indices{bad}, outside the valid range {rng}")
    p, got = run_op("gather", data, np.array([-2, 1], np.int64), extra=["--axis", "1",
                                                                      "--check-indices"])
    expect_ok("gather --check-indices with valid negative indices", p, got, data[:, [0, 1]])
    p, got = run_op("gather", data, np.array(-3, np.int64), extra=["--axis", "-1",
                                                                 "--check-indices"])
    expect_error("gather --check-indices 0-d indices", p, 2,
                 "idx.npy: indices[()] is -3, outside the valid range [-2, 1]")
    sidx = np.array([[1], [6]], np.int64)
    p, got = run_op("scatter-nd", data, sidx, np.ones((2, 2), np.float32),
                    extra=["--check-indices"])
    expect_error("scatter-nd --check-indices", p, 2,
                 "indices[1,0] is 6, outside the valid range [-5, 4]")
    # scatter-elements into data (5, 2) along axis 0, two updates per column: negative indices
    # count from the end; out-of-range ones are clamped, or an error with --check-indices.
    upd = np.array([[10, 20], [30, 40]], np.float32)
    for it in share(INDEX_TYPES):
        name = np.dtype(it).name
        signed = np.issubdtype(it, np.signedinteger)
        if signed:
            valid = np.array([[-1, 0], [-5, -2]], it)
            p, got = run_op("scatter-elements", data, valid, upd, extra=["--check-indices"])
            expect_ok(f"scatter-elements negative {name} indices", p, got,
                      np.array([[30, 20], [2, 3], [4, 5], [6, 40], [10, 9]], np.float32))
        vals = [[-9, 1], [3, 7]] if signed else [[2**31, 1], [3, 7]]
        idx = np.array(vals, np.int64).astype(it)
        p, got = run_op("scatter-elements", data, idx, upd)
        expect_ok(f"scatter-elements clamped {name} indices", p, got,
                  ref_scatter_elements(data, idx, upd, 0))
        p, got = run_op("scatter-elements", data, idx, upd, extra=["--check-indices"])
        rng = "[-5, 4]" if signed else "[0, 4]"
        expect_error(f"scatter-elements --check-indices {name}", p, 2,
                     f"idx.npy: indices[0,0] is {vals[0][0]}, outside the valid range {rng}")
        idx = np.array([[0, 1], [3, 7]], it)
        p, got = run_op("scatter-elements", data, idx, upd, extra=["--check-indices"])
        expect_error(f"scatter-elements --check-indices {name} (second row)", p, 2,
                     f"idx.npy: indices[1,1] is 7, outside the valid range {rng}")
    # Smaller indices than the input: the index positions are the indices' own.
    p, got = run_op("scatter-elements", data.T.copy(), np.array([[0, 4, -6]], np.int32),
                    np.ones((1, 3), np.float32), extra=["--axis", "-1", "--check-indices"])
    expect_error("scatter-elements --check-indices smaller indices", p, 2,
                 "idx.npy: indices[0,2] is -6, outside the valid range [-5, 4]")


def group_errors():
    data = np.arange(6, dtype=np.float32).reshape(3, 2)
    idx = np.array([[1], [0]], np.int64)
    inp, ind = save("e_in.npy", data), save("e_idx.npy", idx)
    out = path("e_out.npy")

    def run(*args):
        return vkdml("run", *args)

    base = ["--input", inp, "--indices", ind, "--output", out]
    expect_error("gather --batch-dims", run("gather", *base, "--batch-dims", "0"), 2,
                 "--batch-dims does not apply to gather")
    expect_error("gather --updates", run("gather", *base, "--updates", inp), 2,
                 "--updates does not apply to gather")
    expect_error("gather --reduction", run("gather", *base, "--reduction", "add"), 2,
                 "--reduction does not apply to gather")
    expect_error("gather axis", run("gather", *base, "--axis", "-3"), 2,
                 "--axis is -3, expected -2 to 1 (")
    expect_error("gather 0-d input",
                 run("gather", "--input", save("g0.npy", np.array(1, np.float32)),
                     "--indices", ind, "--output", out), 2,
                 "g0.npy: rank is 0, expected at least 1 for gather")
    expect_error("gather output rank 9",
                 run("gather", "--input", save("g8.npy", np.zeros((1,) * 8, np.float32)),
                     "--indices", save("g_i2.npy", np.zeros((2, 2), np.int64)), "--output", out),
                 2, "the output would have rank 9 (shape (2, 2, 1, 1, 1, 1, 1, 1, 1))")
    expect_error("gather from an empty axis",
                 run("gather", "--input", save("gz.npy", np.zeros((0, 2), np.float32)),
                     "--indices", ind, "--output", out), 2,
                 "gz.npy: has no elements (shape (0, 2)), so no index into it is valid")
    expect_error("--reduction on gather-elements",
                 run("gather-elements", *base, "--reduction", "add"), 2,
                 "--reduction does not apply to gather-elements")
    expect_error("bad --reduction", run("scatter-nd", *base, "--reduction", "sum"), 2,
                 "--reduction is 'sum', expected none, add, mul, max, min or mean")
    expect_error("--deterministic on gather-nd", run("gather-nd", *base, "--deterministic"), 2,
                 "--deterministic does not apply to gather-nd (a gather is deterministic)")
    expect_error("unknown operator", run("gatherx", *base), 2, "unknown operator 'gatherx'")
    expect_error("no operator", run(*base), 2, "no operator given")
    expect_error("unknown option", run("gather-nd", *base, "--frob", "1"), 2,
                 "unknown option --frob")
    expect_error("missing --output", run("gather-nd", "--input", inp, "--indices", ind), 2,
                 "--output is required")
    expect_error("missing --updates", run("scatter-nd", *base), 2, "--updates is required")
    expect_error("--axis on gather-nd", run("gather-nd", *base, "--axis", "0"), 2,
                 "--axis does not apply to gather-nd")
    expect_error("bad --axis", run("gather-elements", *base, "--axis", "x"), 2,
                 "--axis is 'x', expected an integer")
    expect_error("missing file", run("gather-nd", "--input", path("nope.npy"), "--indices", ind,
                                     "--output", out), 2, "nope.npy: cannot open")
    expect_error("--device out of range", run("gather-nd", *base, "--device", "99"), 2,
                 "--device is 99, expected 0 to")
    expect_error("--device past the parser's range", run("gather-nd", *base, "--device",
                                                         "1000001"), 2,
                 "--device is 1000001, expected a device index from `vkdml devices`")
    # Work that needs no device (an empty output) still checks --device and --check-indices.
    empty_in = save("e_empty.npy", np.zeros((3, 0), np.float32))
    expect_error("--device out of range, empty output",
                 run("gather", "--input", empty_in, "--indices", ind, "--output", out,
                     "--axis", "0", "--device", "99"), 2, "--device is 99, expected 0 to")
    far = save("e_far.npy", np.array([[1], [99]], np.int64))
    expect_error("--check-indices, empty output",
                 run("gather", "--input", empty_in, "--indices", far, "--output", out, "--axis",
                     "0", "--check-indices"), 2,
                 "e_far.npy: indices[1,0] is 99, outside the valid range [-3, 2]")
    expect_error("--check-indices, scatter-nd without updates",
                 run("scatter-nd", "--input", empty_in, "--indices", far, "--updates",
                     save("e_u20.npy", np.zeros((2, 0), np.float32)), "--output", out,
                     "--check-indices"), 2,
                 "e_far.npy: indices[1,0] is 99, outside the valid range [-3, 2]")
    p = run("gather", "--input", empty_in, "--indices", far, "--output", out, "--axis", "0")
    check(p.returncode == 0 and np.load(out).shape == (2, 1, 0),
          f"an empty gather without --check-indices: exit {p.returncode} {p.stderr!r}")
    os.remove(out)
    for op in ("gather-nd", "scatter-nd"):
        extra = ["--updates", save("e_u0.npy", np.zeros(2, np.float32))] if op == "scatter-nd" \
            else []
        expect_error(f"{op} 0-d input",
                     run(op, "--input", save("e_0d.npy", np.array(1, np.float32)), "--indices",
                         ind, "--output", out, *extra), 2,
                     f"e_0d.npy: rank is 0, expected at least 1 for {op}")

    # Malformed and unsupported files
    def raw(name, header_dict, data_bytes, version=1):
        h = header_dict.encode()
        lenb = len(h).to_bytes(2 if version == 1 else 4, "little")
        with open(path(name), "wb") as f:
            f.write(b"\x93NUMPY" + bytes([version, 0]) + lenb + h + data_bytes)
        return path(name)

    cases = [
        ("big-endian", save("be.npy", data.astype(">f4")),
         "be.npy: descr is '>f4' (big-endian), expected little-endian ('<f4')"),
        ("complex", save("c.npy", data.astype(np.complex64)), "c.npy: descr is '<c8' (complex)"),
        ("structured", save("s.npy", np.zeros(2, dtype=[("a", "<f4")])),
         "s.npy: descr is a structured dtype"),
        ("truncated", raw("t.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }",
                          b"\0" * 20), "t.npy: truncated data: 20 bytes of data, expected 24"),
        ("bad header", raw("h.npy", "{'descr': '<f4', 'shape': (3, 2), }", b"\0" * 24),
         "h.npy: header has no fortran_order"),
        ("bad version", raw("v.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}",
                            b"\0" * 4, version=9), "v.npy: format version is 9.0"),
    ]
    with open(path("n.npy"), "wb") as f:
        f.write(b"PK\x03\x04 not an npy")
    cases.append(("not npy", path("n.npy"), "n.npy: not a .npy file"))
    with open(path("o.npy"), "wb") as f:
        np.save(f, np.array([1, "a"], dtype=object), allow_pickle=True)
    cases.append(("object", path("o.npy"), "o.npy: descr is '|O' (object)"))
    for what, bad, msg in cases:
        expect_error(what, run("gather-nd", "--input", bad, "--indices", ind, "--output", out), 2,
                     msg)
    # Shapes and types against the operator
    expect_error("float indices", run("gather-nd", "--input", inp, "--indices", inp, "--output",
                                      out), 2, "e_in.npy: dtype is float32, expected an index type")
    big = save("r9.npy", np.zeros((1,) * 9, np.float32))
    expect_error("rank 9", run("gather-elements", "--input", big, "--indices", ind, "--output",
                               out), 2, "r9.npy: rank is 9 (shape (1, 1, 1, 1, 1, 1, 1, 1, 1)), "
                                        "expected at most 8")
    expect_error("tuple too long", run("gather-nd", "--input", inp, "--indices",
                                       save("k3.npy", np.zeros((2, 3), np.int64)), "--output",
                                       out), 2,
                 "k3.npy: shape[-1] (the index tuple size) is 3, expected 1 to 2")
    expect_error("updates shape", run("scatter-nd", *base, "--updates",
                                      save("u.npy", np.zeros((2, 3), np.float32))), 2,
                 "u.npy: shape is (2, 3), expected (2, 2)")
    expect_error("updates dtype", run("scatter-nd", *base, "--updates",
                                      save("u2.npy", np.zeros((2, 2), np.float64))), 2,
                 "u2.npy: dtype is float64, expected float32")
    expect_error("gather-elements rank", run("gather-elements", *base[:2], "--indices",
                                             save("i1.npy", np.zeros(2, np.int64)), *base[4:]), 2,
                 "i1.npy: rank is 1 (shape (2,)), expected 2")
    expect_error("gather-elements axis", run("gather-elements", *base, "--axis", "2"), 2,
                 "--axis is 2, expected -2 to 1")
    # scatter-elements: indices and updates against the input, and against each other
    sidx = save("se_idx.npy", np.zeros((2, 2), np.int64))
    supd = save("se_upd.npy", np.zeros((2, 2), np.float32))
    sbase = ["--input", inp, "--output", out]
    expect_error("scatter-elements updates shape",
                 run("scatter-elements", *sbase, "--indices", sidx, "--updates",
                     save("se_u3.npy", np.zeros((2, 1), np.float32))), 2,
                 "se_u3.npy: shape is (2, 1), expected (2, 2) (the shape of ")
    expect_error("scatter-elements updates rank",
                 run("scatter-elements", *sbase, "--indices", sidx, "--updates",
                     save("se_u4.npy", np.zeros(4, np.float32))), 2,
                 "se_u4.npy: shape is (4,), expected (2, 2)")
    expect_error("scatter-elements updates dtype",
                 run("scatter-elements", *sbase, "--indices", sidx, "--updates",
                     save("se_u5.npy", np.zeros((2, 2), np.int32))), 2,
                 "se_u5.npy: dtype is int32, expected float32")
    expect_error("scatter-elements indices rank",
                 run("scatter-elements", *sbase, "--indices",
                     save("se_i1.npy", np.zeros(2, np.int64)), "--updates",
                     save("se_u1.npy", np.zeros(2, np.float32))), 2,
                 "se_i1.npy: rank is 1 (shape (2,)), expected 2")
    expect_error("scatter-elements larger indices",
                 run("scatter-elements", *sbase, "--axis", "0", "--indices",
                     save("se_i3.npy", np.zeros((2, 3), np.int64)), "--updates",
                     save("se_u6.npy", np.zeros((2, 3), np.float32))), 2,
                 "se_i3.npy: shape[1] is 3, expected at most 2")
    expect_error("scatter-elements axis",
                 run("scatter-elements", *sbase, "--indices", sidx, "--updates", supd,
                     "--axis", "-3"), 2, "--axis is -3, expected -2 to 1")
    expect_error("scatter-elements 0-d",
                 run("scatter-elements", "--input", save("se_0.npy", np.array(1, np.float32)),
                     "--indices", save("se_i0.npy", np.array(0, np.int64)), "--updates",
                     save("se_u0.npy", np.array(1, np.float32)), "--output", out), 2,
                 "se_0.npy: rank is 0, expected at least 1 for scatter-elements")
    expect_error("scatter-elements missing --updates",
                 run("scatter-elements", *sbase, "--indices", sidx), 2,
                 "--updates is required for scatter-elements")
    expect_error("scatter-elements --batch-dims",
                 run("scatter-elements", *sbase, "--indices", sidx, "--updates", supd,
                     "--batch-dims", "0"), 2, "--batch-dims does not apply to scatter-elements")
    expect_error("scatter-elements into an empty input",
                 run("scatter-elements", "--input", save("se_z.npy", np.zeros((2, 0), np.float32)),
                     "--indices", sidx, "--updates", supd, "--axis", "1", "--output", out), 2,
                 "se_z.npy: has no elements (shape (2, 0)), so no index into it is valid")
    expect_error("scatter-nd into an empty input",
                 run("scatter-nd", "--input", save("se_z2.npy", np.zeros((0, 2), np.float32)),
                     "--indices", ind, "--updates", supd, "--output", out), 2,
                 "se_z2.npy: has no elements (shape (0, 2)), so no index into it is valid")
    expect_error("gather-elements larger indices",
                 run("gather-elements", *base[:2], "--indices",
                     save("i3.npy", np.zeros((3, 3), np.int64)), *base[4:], "--axis", "0"), 2,
                 "i3.npy: shape[1] is 3, expected at most 2")
    expect_error("batch dims", run("gather-nd", *base, "--batch-dims", "2"), 2,
                 "--batch-dims is 2, expected 0 to 1")
    expect_error("output rank 9", run("gather-nd", "--input", save("w.npy", np.zeros(
        (2, 1, 1, 1, 1, 1, 1, 1), np.float32)), "--indices",
        save("w_idx.npy", np.zeros((2, 1, 1), np.int64)), "--output", out), 2,
        "the output would have rank 9")
    expect_error("empty input", run("gather-nd", "--input", save("z.npy", np.zeros(
        (0, 2), np.float32)), "--indices", ind, "--output", out), 2,
        "z.npy: has no elements (shape (0, 2)), so no index into it is valid")
    expect_error("output directory missing", run("gather-nd", *base[:4], "--output",
                                                 path("nodir/out.npy")), 2,
                 "nodir/out.npy: cannot create a temporary file")

    # A failed run leaves an existing output untouched and no temporary file behind.
    with open(out, "wb") as f:
        f.write(b"previous content")
    oob = save("oob.npy", np.array([[7]], np.int64))
    before = sorted(os.listdir(TMP))
    p = run("gather-nd", *base[:4], "--output", out, "--check-indices", "--indices", oob)
    expect_error("check-indices failure", p, 2, "outside the valid range")
    check(sorted(os.listdir(TMP)) == before, "a failed run leaves no temporary file")
    with open(out, "rb") as f:
        check(f.read() == b"previous content", "a failed run leaves the output untouched")
    p = run("gather-nd", *base)
    check(p.returncode == 0 and same(np.load(out), data[[1, 0]]), "success replaces the output")


def group_reduce():
    """`vkdml run scatter-nd|scatter-elements --reduction R [--deterministic]` against NumPy's
    ufunc.at: every dtype, every reduction, duplicate targets; deterministic runs bit for bit
    with any values, default runs with values whose result does not depend on the order. Each
    dtype and reduction runs in one of the two modes, each dtype in both (every pair of them and
    every mode runs in the lib suite's sweeps; here each process is a whole CLI run)."""
    dtypes = [np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64,
              np.uint8, np.uint16, np.uint32, np.uint64, np.bool_]
    rng = np.random.default_rng(7)
    for n, dtype in share(enumerate(dtypes)):
        for r, red in enumerate(("add", "mul", "max", "min")):
            det = (n + r) % 2 == 0
            extra = ["--reduction", red] + (["--deterministic"] if det else [])
            what = f"{np.dtype(dtype).name} {red}{' deterministic' if det else ''}"
            data = reduce_values(dtype, (5, 3), red, not det, n)
            # ScatterND: 12 row indices into 5 rows, negative and out of range too.
            idx = rng.integers(-7, 7, (12, 1)).astype(np.int64)
            upd = reduce_values(dtype, (12, 3), red, not det, n + 100)
            p, got = run_op("scatter-nd", data, idx, upd, extra)
            expect_ok(f"scatter-nd {what}", p, got, ref_scatter_reduce(data, idx, upd, red))
            # ScatterElements along axis 1: 8 updates per row into 3 columns.
            idx = rng.integers(-3, 3, (5, 8)).astype(np.int32)
            upd = reduce_values(dtype, (5, 8), red, not det, n + 200)
            p, got = run_op("scatter-elements", data, idx, upd, extra + ["--axis", "1"])
            expect_ok(f"scatter-elements {what}", p, got,
                      ref_scatter_reduce(data, idx, upd, red, axis=1))
    # --include-self false: targets start from the reduction's identity (torch's include_self).
    for n, dtype in share(enumerate((np.float32, np.int16, np.uint8, np.float16))):
        for red in ("add", "mul", "max", "min"):
            data = reduce_values(dtype, (5, 3), red, False, n)
            idx = rng.integers(-5, 5, (6, 1)).astype(np.int64)
            upd = reduce_values(dtype, (6, 3), red, False, n + 300)
            p, got = run_op("scatter-nd", data, idx, upd, ["--reduction", red, "--deterministic",
                                                          "--include-self", "false"])
            expect_ok(f"scatter-nd {np.dtype(dtype).name} {red} --include-self false", p, got,
                      ref_scatter_reduce(data, idx, upd, red, include_self=False))
    # --reduction mean: the sum divided once (floats rounded once, integers toward -infinity),
    # with the input (and without: --include-self false).
    for n, dtype in share(enumerate((np.float16, np.float32, np.float64, np.int8, np.int64,
                                     np.uint16))):
        for det in (True, False):
            for self_ in ("true", "false"):
                data = reduce_values(dtype, (5, 3), "mean", not det, n)
                idx = rng.integers(-5, 5, (9, 3)).astype(np.int32)
                upd = reduce_values(dtype, (9, 3), "mean", not det, n + 400)
                extra = ["--reduction", "mean", "--axis", "0", "--include-self", self_]
                p, got = run_op("scatter-elements", data, idx, upd,
                                extra + (["--deterministic"] if det else []))
                expect_ok(f"scatter-elements {np.dtype(dtype).name} mean --include-self {self_}"
                          f"{' --deterministic' if det else ''}", p, got,
                          ref_scatter_reduce(data, idx, upd, "mean", axis=0,
                                             include_self=self_ == "true"))
    p, got = run_op("scatter-nd", np.zeros((3, 2), np.bool_), np.zeros((1, 1), np.int64),
                    np.ones((1, 2), np.bool_), ["--reduction", "mean"])
    expect_error("--reduction mean on bool", p, 2, "(mean divides: not on bool)")
    p, got = run_op("scatter-nd", data, idx, upd, ["--include-self", "false"])
    expect_error("--include-self false without a reduction", p, 2,
                 "--include-self false applies to a reduction")
    p, got = run_op("scatter-nd", data, idx, upd, ["--reduction", "add", "--include-self", "no"])
    expect_error("--include-self no", p, 2, "--include-self is 'no', expected true or false")
    # Without a reduction, --deterministic makes the last of the duplicate updates win.
    data = np.zeros((4, 2), np.float32)
    idx = np.array([[1], [3], [1], [1]], np.int64)
    upd = np.arange(8, dtype=np.float32).reshape(4, 2)
    p, got = run_op("scatter-nd", data, idx, upd, ["--deterministic"])
    expect_ok("scatter-nd deterministic without a reduction", p, got,
              ref_scatter_nd(data, idx, upd))


def group_out_of_range():
    """`vkdml run ... --out-of-range fill|drop|error [--fill-value V]` against the NumPy
    references: every operator, signed and unsigned indices, a fill value of each kind of dtype,
    drop with and without a reduction; and the options' refusals."""
    rng = np.random.default_rng(28)
    data = sample(np.float32, (5, 4), seed=3)
    for it in share(INDEX_TYPES):
        name = np.dtype(it).name
        signed = np.issubdtype(it, np.signedinteger)
        vals = rng.integers(-8 if signed else 0, 8, (6,))
        idx = vals.astype(it)
        fill = ["--out-of-range", "fill", "--fill-value", "-2.5"]
        p, got = run_op("gather", data, idx, extra=fill)
        expect_ok(f"gather fill {name}", p, got, ref_gather(data, idx, 0, fill=np.float32(-2.5)))
        p, got = run_op("gather", data, idx.reshape(2, 3), extra=fill + ["--axis", "1"])
        expect_ok(f"gather fill axis 1 {name}", p, got,
                  ref_gather(data, idx.reshape(2, 3), 1, fill=np.float32(-2.5)))
        nd = rng.integers(-6 if signed else 0, 6, (7, 2)).astype(it)
        p, got = run_op("gather-nd", data, nd, extra=fill)
        expect_ok(f"gather-nd fill {name}", p, got, ref_gather_nd(data, nd, fill=np.float32(-2.5)))
        el = rng.integers(-7 if signed else 0, 7, (3, 4)).astype(it)
        p, got = run_op("gather-elements", data, el, extra=fill)
        expect_ok(f"gather-elements fill {name}", p, got,
                  ref_gather_elements(data, el, 0, fill=np.float32(-2.5)))
        upd = sample(np.float32, (7, 4), seed=5)
        rows = rng.integers(-7 if signed else 0, 7, (7, 1)).astype(it)
        for red in ("none", "add", "max"):
            extra = ["--out-of-range", "drop", "--reduction", red, "--deterministic"]
            p, got = run_op("scatter-nd", data, rows, upd, extra)
            want = (ref_scatter_nd(data, rows, upd, drop=True) if red == "none" else
                    ref_scatter_reduce(data, rows, upd, red, drop=True))
            expect_ok(f"scatter-nd drop {red} {name}", p, got, want)
        cols = unique_indices(rng, (5, 3), 1, 4, np.int64)
        cols[0, 0] = 9 if not signed else -9
        cols[3, 2] = 4
        cols = cols.astype(it)
        su = sample(np.float32, (5, 3), seed=6)
        p, got = run_op("scatter-elements", data, cols, su, ["--axis", "1", "--out-of-range",
                                                             "drop"])
        expect_ok(f"scatter-elements drop {name}", p, got,
                  ref_scatter_elements(data, cols, su, 1, drop=True))
    # A fill value of each kind of dtype, parsed as the input's dtype.
    idx = np.array([0, 9, -1], np.int64)
    for dtype, text, value in ((np.float16, "0.1", np.float16(0.1)), (np.int8, "-128", -128),
                               (np.uint64, str(2**64 - 1), 2**64 - 1), (np.bool_, "true", True),
                               (np.float64, "nan", np.nan), (np.int64, "-9", -9)):
        d = sample(dtype, (4, 3), seed=2)
        p, got = run_op("gather", d, idx, extra=["--out-of-range", "fill", "--fill-value", text])
        expect_ok(f"gather fill {np.dtype(dtype).name} {text}", p, got,
                  ref_gather(d, idx, 0, fill=np.asarray(value, dtype)))
    p, got = run_op("gather", data, idx, extra=["--out-of-range", "fill"])
    expect_ok("gather fill without --fill-value: 0", p, got, ref_gather(data, idx, 0, fill=0))
    p, got = run_op("gather", data, idx, extra=["--out-of-range", "error"])
    expect_error("gather --out-of-range error", p, 2,
                 "idx.npy: indices[1] is 9, outside the valid range [-5, 4]")
    p, got = run_op("gather", data, np.array([1, -5], np.int64), extra=["--out-of-range", "error"])
    expect_ok("gather --out-of-range error, in range", p, got, data[[1, 0]])
    refusals = [
        ("gather", ["--out-of-range", "wrap"],
         "--out-of-range is 'wrap', expected clamp, fill, drop or error"),
        ("gather", ["--out-of-range", "drop"], "--out-of-range drop does not apply to gather (a "
         "gather writes --fill-value for out-of-range indices with --out-of-range fill)"),
        ("scatter-nd", ["--out-of-range", "fill"], "--out-of-range fill does not apply to "
         "scatter-nd (a scatter skips out-of-range updates with --out-of-range drop)"),
        ("gather", ["--fill-value", "1"], "--fill-value applies with --out-of-range fill only"),
        ("gather", ["--out-of-range", "fill", "--fill-value", "1e40x"],
         "--fill-value is '1e40x', expected a number"),
    ]
    for op, extra, text in refusals:
        upd = np.zeros((3, 4), np.float32) if op == "scatter-nd" else None
        p, got = run_op(op, data, idx.reshape(3, 1) if upd is not None else idx, upd, extra)
        expect_error(f"{op} {' '.join(extra)}", p, 2, text)
    for dtype, text, expected in ((np.int8, "128", "an integer in [-128, 127] for a int8 input"),
                                  (np.uint16, "-1", "an integer in [0, 65535] for a uint16 input"),
                                  (np.int32, "1.5", "an integer in [-2147483648, 2147483647]"),
                                  (np.bool_, "2", "true, false, 1 or 0 for a bool input")):
        p, got = run_op("gather", sample(dtype, (4, 3)), idx,
                        extra=["--out-of-range", "fill", "--fill-value", text])
        expect_error(f"--fill-value {text} for {np.dtype(dtype).name}", p, 2,
                     f"--fill-value is '{text}', expected {expected}")


def group_output():
    """A plain file is replaced whole; links, FIFOs and files with other names are written
    through, so that they stay what they are; nothing is left behind by a signal."""
    data = np.arange(6, dtype=np.float32).reshape(3, 2)
    base = ["--input", save("o_in.npy", data), "--indices",
            save("o_idx.npy", np.array([[1], [0]], np.int64))]
    want = data[[1, 0]]

    def run_to(out):
        return vkdml("run", "gather-nd", *base, "--output", out)

    def temps(before):
        return sorted(set(os.listdir(TMP)) - before)

    def loads(p):
        try:
            return np.load(p)
        except (OSError, ValueError):
            return None

    # Success says one line on stdout (operator, shapes, dtypes, output, device, time), nothing
    # with --quiet; a run without device work names the host.
    plain = path("o_plain.npy")
    p = run_to(plain)
    check(p.returncode == 0 and re.fullmatch(
        r"vkdml run: gather-nd: input \(3, 2\) float32, indices \(2, 1\) int64 -> "
        + re.escape(plain) + r" \(2, 2\) on .+ in \d+\.\d ms\n", p.stdout) is not None
          and p.stderr == "", f"the success line: {p.stdout!r} {p.stderr!r}")
    p = vkdml("run", "gather-nd", *base, "--output", plain, "--quiet")
    check(p.returncode == 0 and p.stdout == "" and p.stderr == "" and same(loads(plain), want),
          f"--quiet: {p.stdout!r} {p.stderr!r}")
    p = vkdml("run", "scatter-nd", *base[:3], save("o_none.npy", np.zeros((0, 1), np.int64)),
              "--updates", save("o_upd.npy", np.zeros((0, 2), np.float32)), "--output", plain)
    check(p.returncode == 0 and " on the host (no device work) in " in p.stdout,
          f"the success line without device work: {p.stdout!r} {p.stderr!r}")
    os.remove(plain)

    # A symbolic link is followed (as np.save does): the link stays, its target gets the array.
    link, target = path("o_link.npy"), path("o_target.npy")
    os.symlink("o_target.npy", link)
    p = run_to(link)
    check(p.returncode == 0 and os.path.islink(link) and same(loads(target), want),
          f"output through a symbolic link: exit {p.returncode} {p.stderr!r}, link kept: "
          f"{os.path.islink(link)}")
    for f in (link, target):
        if os.path.lexists(f):
            os.remove(f)

    # A file with two names: both names see the new array.
    a, b = path("o_a.npy"), path("o_b.npy")
    with open(a, "wb") as f:
        f.write(b"old")
    os.link(a, b)
    p = run_to(b)
    check(p.returncode == 0 and os.stat(a).st_ino == os.stat(b).st_ino and
          same(loads(a), want), f"output with a second hard link: exit {p.returncode}")
    for f in (a, b):
        os.remove(f)

    # A FIFO stays a FIFO, and its reader gets the array.
    fifo, got = path("o_fifo"), []
    os.mkfifo(fifo)

    def reader():
        with open(fifo, "rb") as f:
            got.append(f.read())

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    p = run_to(fifo)
    t.join(60)
    check(p.returncode == 0 and stat.S_ISFIFO(os.stat(fifo).st_mode) and got and
          same(np.load(io.BytesIO(got[0])), want),
          f"output to a FIFO: exit {p.returncode} {p.stderr!r}, still a FIFO: "
          f"{stat.S_ISFIFO(os.stat(fifo).st_mode)}, read {len(got[0]) if got else None} bytes")
    os.remove(fifo)

    # A replaced plain file keeps its permissions; a read-only one is replaced only by root.
    mode = path("o_mode.npy")
    with open(mode, "wb") as f:
        f.write(b"old")
    os.chmod(mode, 0o640)
    p = run_to(mode)
    check(p.returncode == 0 and stat.S_IMODE(os.stat(mode).st_mode) == 0o640 and
          same(loads(mode), want), f"a replaced file keeps mode 0640: "
          f"{oct(stat.S_IMODE(os.stat(mode).st_mode))}")
    os.chmod(mode, 0o444)
    p = run_to(mode)
    if os.geteuid() == 0:
        check(p.returncode == 0 and stat.S_IMODE(os.stat(mode).st_mode) == 0o444,
              "root replaces a read-only output and keeps it read-only")
    else:
        expect_error("a read-only output", p, 2, "o_mode.npy: cannot write: Permission denied")
    os.chmod(mode, 0o644)
    os.remove(mode)

    # A name of 250 characters: the temporary file's name does not grow with it.
    long = path("L" * 246 + ".npy")
    p = run_to(long)
    check(p.returncode == 0 and same(loads(long), want),
          f"a 250-character output name: exit {p.returncode} {p.stderr!r}")
    if os.path.exists(long):
        os.remove(long)

    expect_error("a directory as the input",
                 vkdml("run", "gather-nd", "--input", TMP, *base[2:], "--output", path("o.npy")),
                 2, "cannot read: Is a directory")
    expect_error("a directory as the output", run_to(TMP), 2, ": is a directory")

    # A signal while the output's temporary file is open (seen through /proc/PID/fd: unnamed,
    # O_TMPFILE's "#inode (deleted)", where the file system has it): SIGINT removes a named one;
    # an unnamed one is gone even after SIGKILL, which no handler sees (as a crash inside a
    # driver). The output never appears, nothing is left behind.
    big = save("o_big.npy", np.ones((512, 512), np.float32))
    bidx = save("o_bidx.npy", np.zeros((512, 512), np.int64))
    out = path("o_sig.npy")

    def temp_fd(pid):
        """The target of pid's descriptor of a temporary file in TMP, or None."""
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith(TMP + "/") and ("/.vkdml-" in target or
                                                      target.endswith("(deleted)")):
                    return target
        except OSError:
            pass
        return None

    for sig in (signal.SIGINT, signal.SIGKILL):
        before, target = set(os.listdir(TMP)), None
        for _ in range(3):
            proc = subprocess.Popen([VKDML, "run", "gather-elements", "--input", big,
                                     "--indices", bidx, "--output", out],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.time() + 60
            while proc.poll() is None and time.time() < deadline and not target:
                target = temp_fd(proc.pid)
                if not target:
                    time.sleep(0.001)
            if target:
                proc.send_signal(sig)
            proc.wait()
            if target:
                check(proc.returncode == -sig,
                      f"run ended by {sig.name}: exit {proc.returncode}, expected {-sig}")
                break
            if os.path.exists(out):
                os.remove(out)
        check(target, f"{sig.name}: the temporary file of a running command was never seen")
        if sig == signal.SIGKILL and target and "/.vkdml-" in target:
            try:  # a file system without O_TMPFILE: a named file, which SIGKILL leaves
                os.close(os.open(TMP, os.O_TMPFILE | os.O_RDWR))
                check(False, f"{TMP} has O_TMPFILE, yet the temporary file is named: {target}")
            except OSError:
                print(f"cli.output: {TMP} has no O_TMPFILE: SIGKILL leaves the temporary file")
            for name in temps(before):
                os.remove(path(name))
            continue
        check(temps(before) == [], f"a run ended by {sig.name} leaves {temps(before)}")


def group_bench():
    """`vkdml bench` at small sizes: one JSON object per case with the issue's fields, every
    output checked against the CPU, and its usage errors."""
    p = vkdml("bench", "--list")
    names = [line.split()[0] for line in p.stdout.splitlines() if line.strip()]
    check(p.returncode == 0 and "rows-f32" in names and "latency" in names,
          f"bench --list: {p.stdout!r}")
    # The cases a plain `vkdml bench` runs (not the diagnostics), or a share of them.
    default = [line.split()[0] for line in p.stdout.splitlines()
               if line.strip() and "(diagnostic" not in line]
    chosen = share(default)
    named = ["--case", ",".join(chosen)] if chosen != default else []
    p = vkdml("bench", "--size", "small", "--runs", "3", "--warmup", "1", "--latency-calls",
              "200", "--json", "--no-progress", *named)
    check(p.returncode == 0, f"bench --size small: exit {p.returncode}, stderr {p.stderr!r}")
    rows = [json.loads(line) for line in p.stdout.splitlines() if line.strip()]
    fields = ["case", "op", "dtype", "index_dtype", "input_shape", "indices_shape",
              "updates_shape", "axis", "batch_dims", "median_ms", "gbps", "copy_gbps", "device"]
    cases = {r.get("case") for r in rows}
    for c in ("rows-f32", "rows-f16", "tuples-f32", "elements-axis1-f32", "elements-axis0-f32",
              "elements-axis1-i32idx", "elements-axis1-f16", "scatter-rows-f32",
              "scatter-rows-inplace", "scatter-elements-axis1-f32", "q4_0-rows", "q8_0-rows",
              "q8_0-quantize-rows", "gbq-uint4-rows", "bag-sum-f32", "bag-mean-f32-det",
              "segment-csr-sum-f32", "segment-coo-max-f32", "segment-csr-max-f32-powerlaw",
              "latency-run",
              "latency-replay"):
        if c.split("-")[0] in chosen or c in chosen:
            check(c in cases, f"bench: no row for {c}")
    for r in rows:
        if "skipped" in r:  # refused by the device: only for a feature it lacks
            check(refused_for_lack(r["skipped"]),
                  f"bench {r.get('case')}: skipped ({r['skipped']})")
            continue
        missing = [f for f in fields if f not in r]
        check(not missing, f"bench {r.get('case')}: missing {missing}")
        check(r.get("median_ms", 0) > 0, f"bench {r.get('case')}: median_ms {r.get('median_ms')}")
        if r.get("timing") != "host":
            check(r.get("verified", 0) > 0 and r.get("mismatches") == 0,
                  f"bench {r.get('case')}: verified {r.get('verified')}, mismatches "
                  f"{r.get('mismatches')}")
        if r.get("case", "")[:4] in ("q4_0", "q8_0"):
            check(r.get("format") == r["case"][:4], f"bench {r['case']}: format {r.get('format')}")
        if r.get("op") == "GatherBlockQuantized":
            check(r.get("block_size") == 32 and r.get("width") == 4096,
                  f"bench {r['case']}: block_size {r.get('block_size')}, width {r.get('width')}")
        if r.get("op") == "SegmentReduce":
            parts = r["case"].split("-")
            check(r.get("reduce") == parts[2] and r.get("segments") == 1024
                  and r.get("sorted_ids") == (parts[1] == "coo")
                  and r.get("lengths") == ("powerlaw" if parts[-1] == "powerlaw" else "uniform"),
                  f"bench {r['case']}: {r}")
        if r.get("op") == "EmbeddingBag":
            check(r.get("mode") == r["case"].split("-")[1] and r.get("bag_size") == 20,
                  f"bench {r['case']}: mode {r.get('mode')}, bag_size {r.get('bag_size')}")
    # --compile: one row per kind, cold and warm CompileOperator times, the cache's size.
    p = vkdml("bench", "--compile", "--runs", "1", "--json")
    check(p.returncode == 0, f"bench --compile: exit {p.returncode}, stderr {p.stderr!r}")
    rows = [json.loads(line) for line in p.stdout.splitlines() if line.strip()]
    for c in ("rows-f32", "elements-axis1-f32", "scatter-rows-f32", "scatter-elements-axis1-f32",
              "scatter-add-rows-f32", "scatter-add-rows-f32-det"):
        check("compile-" + c in {r.get("case") for r in rows}, f"bench --compile: no row for {c}")
    for r in rows:
        check(r.get("cold_ms", 0) > 0 and r.get("warm_ms", 0) > 0 and r.get("runs") == 1
              and r.get("cache_bytes", 0) >= 32 and "error" not in r,
              f"bench --compile: {r}")
    expect_error("bench unknown case", vkdml("bench", "--case", "nope"), 2,
                 "unknown case 'nope'")
    expect_error("bench --device out of range", vkdml("bench", "--device", "99", "--case",
                                                      "rows-f32", "--size", "small"), 2,
                 "--device is 99, expected 0 to")


def npy_header(descr, shape, fortran=False):
    """A version 1.0 header (magic to newline) for a file written by hand."""
    d = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, shape)
    d += " " * ((64 - (10 + len(d) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + len(d).to_bytes(2, "little") + d.encode()


def sparse(name, header, size):
    """A file of `size` bytes that starts with `header`: sparse, costing no disk past it."""
    with open(path(name), "wb") as f:
        f.write(header)
    os.truncate(path(name), size)
    return path(name)


MEASURE = """import resource, subprocess, sys, time
t = time.monotonic()
p = subprocess.run(sys.argv[1:], capture_output=True, text=True)
sys.stderr.write(p.stderr)
print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, time.monotonic() - t)
"""


def measured(*args):
    """Runs vkdml in a process of its own: (exit status, stderr, peak RSS in MiB, seconds)."""
    p = subprocess.run([sys.executable, "-c", MEASURE, VKDML, *args], capture_output=True,
                       text=True)
    rc, rss, secs = p.stdout.split()
    return int(rc), p.stderr, int(rss) / 1024, float(secs)


def group_limits():
    """What a hostile caller or file can send: sizes that lie, files far larger than memory,
    devices, outputs too large for the device, memory running out. Each is one line, an exit
    status, no output file, and costs neither time nor memory."""
    idx = save("l_idx.npy", np.array([1, 0], np.int64))
    out = path("l_out.npy")

    def refused(what, args, status, text, max_rss_mib=1024, max_secs=30):
        before = sorted(os.listdir(TMP))
        rc, err, rss, secs = measured("run", *args)
        if rc != status and device_refused(subprocess.CompletedProcess(args, rc, "", err)):
            return
        if isinstance(text, tuple):  # any of them
            text = next((t for t in text if t in err), text[0])
        check(rc == status and text in err and err.count("\n") == 1,
              f"{what}: expected exit {status} and one stderr line containing {text!r}; got exit "
              f"{rc}, stderr {err!r}")
        check(rss < max_rss_mib and secs < max_secs,
              f"{what}: took {rss:.0f} MiB and {secs:.1f} s, expected under {max_rss_mib} MiB "
              f"and {max_secs} s")
        check(sorted(os.listdir(TMP)) == before and not os.path.exists(out),
              f"{what}: left files behind: {sorted(set(os.listdir(TMP)) - set(before))}")

    def gather(inp, indices=idx, op="gather", extra=()):
        return [op, "--input", inp, "--indices", indices, "--output", out, *extra]

    # Files whose size does not match their header: refused by the size alone, nothing read.
    hdr = npy_header("<f4", "(2,)")
    big = sparse("l_64g.npy", hdr, 64 << 30)
    refused("a 64 GiB sparse file", gather(big), 2,
            f"l_64g.npy: trailing data: {(64 << 30) - len(hdr)} bytes of data, expected 8 "
            "(shape (2,), float32)")
    lie_header = npy_header("<f8", "(1099511627776,)")
    lie = sparse("l_lie.npy", lie_header, len(lie_header) + 4096)
    refused("a header that claims 8 TiB", gather(lie), 2,
            "l_lie.npy: truncated data: 4096 bytes of data, expected 8796093022208 (shape "
            "(1099511627776,), float64)")
    cut = sparse("l_cut.npy", npy_header("<f4", "(2,)")[:30], 30)
    refused("a header cut short", gather(cut), 2,
            "l_cut.npy: truncated header: HEADER_LEN is 118 but only 20 bytes follow")
    over = sparse("l_over.npy", npy_header("<f8", "(4294967296, 4294967296)"), 128)
    refused("a shape past 2^64 bytes", gather(over), 2,
            "l_over.npy: shape (4294967296, 4294967296) of float64 is too large: more than 2^64 "
            "bytes")
    refused("/dev/zero as input", gather("/dev/zero"), 2,
            "/dev/zero: not a .npy file: the first bytes are not \\x93NUMPY")
    refused("/dev/zero as indices", gather(save("l_x.npy", np.zeros(3, np.float32)),
                                           "/dev/zero"), 2, "/dev/zero: not a .npy file")
    os.remove(path("l_x.npy"))
    # More than 2^32 elements, and 4 GiB of data that matches its header: mapped, not read,
    # valid (VKDML_TENSOR_FLAG_LARGE), and refused by lavapipe's vkCreateBuffer (buffers of at
    # most 2^32 bytes), or where the buffer is made (SwiftShader) by vkdml for want of a heap
    # that large, before any output is written.
    n = 2 * 2147483649
    huge = sparse("l_huge.npy", npy_header("|u1", "(2, 2147483649)"), 128 + n)
    refused("4 GiB, more than 2^32 elements", gather(huge), 3,
            ("vkCreateBuffer failed: VK_ERROR_OUT_OF_DEVICE_MEMORY (a buffer of 4294967300 bytes)",
             "bytes are more than the whole memory heap the buffer needs ("))
    # A stride past DirectML's 32 bits, where the view would be small enough.
    wide = sparse("l_wide.npy", npy_header("|u1", "(2, 2, 2147483648)"), 128 + (8 << 30))
    refused("a stride past 2^32 elements",
            gather(wide, save("l_i3.npy", np.zeros((2, 1, 1), np.int64)), "gather-elements"), 2,
            "l_wide.npy: the stride of dimension 0 (shape (2, 2, 2147483648)) is 4294967296 "
            "elements, more than DirectML's strides hold (4294967295)")
    os.remove(path("l_i3.npy"))
    # An output of 32 GiB: valid (the large path), refused by lavapipe's vkCreateBuffer (buffers
    # of at most 2^32 bytes), or where the buffer is made (SwiftShader) by vkdml for want of a
    # heap that large, before any output is written, in little memory and time.
    data = save("l_data.npy", np.zeros((2, 65536), np.float64))
    many = save("l_many.npy", np.zeros(65535, np.int64))
    refused("a 32 GiB gather output", gather(data, many), 3,
            ("vkCreateBuffer failed: VK_ERROR_OUT_OF_DEVICE_MEMORY (a buffer of 34359214080 bytes)",
             "bytes are more than the whole memory heap the buffer needs ("),
            max_secs=20)
    for name in ("l_64g.npy", "l_lie.npy", "l_cut.npy", "l_over.npy", "l_huge.npy", "l_wide.npy",
                 "l_data.npy", "l_many.npy"):
        os.remove(path(name))

    # A FIFO: read up to what its header says.
    fifo = path("l_fifo.npy")
    os.mkfifo(fifo)
    values = np.arange(6, dtype=np.float32).reshape(3, 2)
    blob = io.BytesIO()
    np.save(blob, values)

    def writer(payload):
        with open(fifo, "wb") as f:
            f.write(payload)

    for payload, want in ((blob.getvalue(), "ok"), (blob.getvalue() + b"x", "trailing")):
        t = threading.Thread(target=writer, args=(payload,))
        t.start()
        p = vkdml("run", "gather", "--input", fifo, "--indices", idx, "--output", out)
        t.join()
        if want == "ok":
            check(p.returncode == 0 and same(np.load(out), values[[1, 0]]),
                  f"input through a FIFO: exit {p.returncode} {p.stderr!r}")
            os.remove(out)
        else:
            expect_error("a FIFO with trailing data", p, 2,
                         "l_fifo.npy: trailing data: more than 24 bytes of data, expected 24")
    os.remove(fifo)

    # Memory running out (an address-space limit): exit 3, one line, nothing written. The
    # sanitizers reserve terabytes of address space, so there the limit cannot apply.
    with open(VKDML, "rb") as f:
        sanitized = b"AddressSanitizer" in f.read()
    if sanitized:
        print("memory exhaustion: not tried under AddressSanitizer")
    else:
        import resource
        inp = save("l_m_in.npy", np.zeros(30_000_000, np.float32))
        ind = save("l_m_idx.npy", np.arange(30_000_000, dtype=np.int32)[::-1].copy())
        # Too little for the output's 120 MB or the device's copies of it (which runs out first
        # depends on the address space the driver's threads took), then too little for the
        # device's copies (the inputs and output, 360 MB, and 64 MiB of staging; with 1500 MiB
        # it runs). Under 500 MiB lavapipe's vkCreateDevice itself may fail, or abort (a double
        # free in Mesa 22.3's error path).
        for limit_mib in (1000, 1200):
            def limit(lim=limit_mib << 20):
                resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
            before = sorted(os.listdir(TMP))
            p = subprocess.run([VKDML, "run", "gather-elements", "--input", inp, "--indices", ind,
                                "--output", out], capture_output=True, text=True,
                               preexec_fn=limit)
            named = ("out of memory: cannot have 120000128 bytes of memory for " in p.stderr or
                     "vkAllocateMemory failed: VK_ERROR_OUT_OF_" in p.stderr)
            if (p.returncode == 0 and limit_mib > 1000 and
                    "llvmpipe" not in features().get("driver", "")):
                # A driver that keeps fewer copies than lavapipe (SwiftShader) runs it here: then
                # the output must be right.
                got = np.load(out, mmap_mode="r")
                check(p.stderr == "" and got.shape == (30_000_000,) and not got.any(),
                      f"memory limited to {limit_mib} MiB: ran, but {p.stderr!r}, {got.shape}")
                del got
                os.remove(out)
                continue
            check(p.returncode == 3 and named and p.stderr.count("\n") == 1,
                  f"memory limited to {limit_mib} MiB: expected exit 3 and one line naming the "
                  f"output's mapping or vkAllocateMemory, got exit {p.returncode}, {p.stderr!r}")
            check(sorted(os.listdir(TMP)) == before and not os.path.exists(out),
                  f"memory limited to {limit_mib} MiB: left files behind")
        os.remove(inp)
        os.remove(ind)
    os.remove(idx)


def group_quantized():
    """`vkdml run dequantize-rows --format q8_0|q4_0 [--dtype float16]`, quantize-rows and
    gather-block-quantized against NumPy references (clamped, negative and out-of-range indices,
    fill and error), and their refusals."""
    rng = np.random.default_rng(27)
    for fmt, size in (("q8_0", 34), ("q4_0", 18)):
        table = rng.integers(0, 256, (9, 2 * size), dtype=np.uint8)
        table[:, 1::size] &= 0xBB  # finite scales
        values = ref_dequantize(table, fmt)
        for it in share(INDEX_TYPES):
            signed = np.issubdtype(it, np.signedinteger)
            idx = rng.integers(-11 if signed else 0, 11, (2, 3)).astype(it)
            rows = np.clip(idx.astype(np.int64), -9, 8) % 9
            for dt in ("float32", "float16"):
                p, got = run_op("dequantize-rows", table, idx, extra=["--format", fmt, "--dtype", dt])
                expect_ok(f"dequantize-rows {fmt} {np.dtype(it).name} {dt}", p, got,
                          values[rows].astype(dt))
        p, got = run_op("dequantize-rows", table, np.array([1, 12]),
                        extra=["--format", fmt, "--out-of-range", "fill", "--fill-value", "-3"])
        want = values[[1, 8]].copy()
        want[1] = -3
        expect_ok(f"dequantize-rows {fmt} fill", p, got, want)
        p, _ = run_op("dequantize-rows", table, np.array([[0, 12]]),
                      extra=["--format", fmt, "--check-indices"])
        expect_error(f"dequantize-rows {fmt} --check-indices", p, 2, "is 12, outside")
    table = np.zeros((3, 34), np.uint8)
    idx = np.array([0])
    for extra, text in (([], "--format is required for dequantize-rows"),
                        (["--format", "q5_1"], "format is 'q5_1', expected q8_0 or q4_0"),
                        (["--format", "q4_0"], "expected (rows, a multiple of 18 bytes)"),
                        (["--format", "q8_0", "--dtype", "int8"],
                         "--dtype is 'int8', expected float32 or float16"),
                        (["--format", "q8_0", "--axis", "1"],
                         "--axis does not apply to dequantize-rows")):
        p, _ = run_op("dequantize-rows", table, idx, extra=extra)
        expect_error(f"dequantize-rows refuses {extra}", p, 2, text)
    p, _ = run_op("dequantize-rows", table.astype(np.int8), idx, extra=["--format", "q8_0"])
    expect_error("dequantize-rows int8 table", p, 2, "dtype is int8, expected uint8")
    p, _ = run_op("gather", table, idx, extra=["--format", "q8_0"])
    expect_error("gather --format", p, 2, "--format does not apply to gather")
    # quantize-rows: rows quantized into the table as ggml's reference quantizer does.
    for fmt, size in (("q8_0", 34), ("q4_0", 18)):
        table = rng.integers(0, 256, (5, 2 * size), dtype=np.uint8)
        rows = (rng.standard_normal((3, 64)) * 3).astype(np.float32)
        idx = np.array([4, -1, 1])  # -1 is row 4 again: the later one stays
        p, got = run_op("quantize-rows", table, idx, rows, extra=["--format", fmt])
        want = table.copy()
        q = ref_quantize(rows, fmt)
        want[4], want[1] = q[1], q[2]
        expect_ok(f"quantize-rows {fmt}", p, got, want)
        if p.returncode == 0:
            back = ref_dequantize(got, fmt)[[4, 1]]
            check(np.abs(back - rows[1:]).max() <= np.abs(rows).max() / 4,
                  f"quantize-rows {fmt}: the table does not dequantize near the rows")
    p, _ = run_op("quantize-rows", table, idx, rows.astype(np.float64), extra=["--format", "q4_0"])
    expect_error("quantize-rows float64 rows", p, 2, "dtype is float64, expected float32")
    p, _ = run_op("quantize-rows", table, idx, rows, extra=["--format", "q4_0", "--dtype", "float16"])
    expect_error("quantize-rows --dtype", p, 2, "--dtype does not apply to quantize-rows")
    p, _ = run_op("quantize-rows", table, idx, rows, extra=["--format", "q4_0", "--reduction", "add"])
    expect_error("quantize-rows --reduction", p, 2, "reduction does not apply to quantize-rows")
    # gather-block-quantized: ONNX Runtime's GatherBlockQuantized, every type and bits.
    for kind, bits in share([("int4", 4), ("uint4", 4), ("uint8", 4), ("uint8", 8)]):
        data = rng.integers(0, 256, (3, 7, 24 * bits // 8), dtype=np.uint8)  # 24 values a row
        scales = rng.standard_normal((3, 1, 24)).astype(np.float16)  # quantize axis 1, block 16
        zeros = rng.integers(0, 256, (3, 1, 24 * bits // 8), dtype=np.uint8)
        idx = np.array([[6, -7], [9, 0]])  # 9: out of range
        for z in (None, zeros):
            extra = ["--scales", save("scales.npy", scales), "--type", kind, "--bits", str(bits),
                     "--axis", "1", "--block-size", "16"]
            if z is not None:
                extra += ["--zero-points", save("zeros.npy", z)]
            p, got = run_op("gather-block-quantized", data, idx, extra=extra)
            want = ref_gather_block_quantized(data, idx, scales, z, kind, bits, 1, 1, 16)
            expect_ok(f"gather-block-quantized {kind} bits {bits} zero points {z is not None}",
                      p, got, want)
        p, got = run_op("gather-block-quantized", data, idx,
                        extra=extra + ["--out-of-range", "fill", "--fill-value", "0.5"])
        want = ref_gather_block_quantized(data, idx, scales, zeros, kind, bits, 1, 1, 16, fill=0.5)
        expect_ok(f"gather-block-quantized {kind} fill", p, got, want)
        p, _ = run_op("gather-block-quantized", data, idx, extra=extra + ["--check-indices"])
        expect_error(f"gather-block-quantized {kind} --check-indices", p, 2, "is 9, outside")
    # int4 and uint4 zero points are ONNX's tensors, packed whole: where the scales' last
    # dimension is odd (3 blocks of 16 values), 1-D; a row a byte is refused.
    data = rng.integers(0, 256, (2, 24), dtype=np.uint8)  # 48 int4 values a row
    scales = rng.standard_normal((2, 3)).astype(np.float32)
    for z, ok in ((rng.integers(0, 256, 3, dtype=np.uint8), True),
                  (rng.integers(0, 256, (2, 2), dtype=np.uint8), False)):
        extra = ["--scales", save("scales.npy", scales), "--type", "int4", "--block-size", "16",
                 "--zero-points", save("zeros.npy", z)]
        p, got = run_op("gather-block-quantized", data, np.array([1, 0]), extra=extra)
        if ok:
            want = ref_gather_block_quantized(data, np.array([1, 0]), scales, z, "int4", 4, 0, 1,
                                              16)
            expect_ok("gather-block-quantized int4 zero points packed whole", p, got, want)
        else:
            expect_error("gather-block-quantized int4 zero points a row a byte", p, 2,
                         "shape is (2, 2), expected (3,) (the zero points, two a byte, packed "
                         "whole as ONNX's int4 tensors)")
    # --values-shape: ONNX's uint4 tensor of shape (3, 2, 5), 30 values packed whole in 15
    # bytes (rows of 5 do not start on a byte), gathered on axis 2 (with --check-indices: a
    # value's index within a row of 5); a uint8 type or a wrong byte count is refused.
    data = rng.integers(0, 256, 15, dtype=np.uint8)
    scales = rng.standard_normal((3, 2, 1)).astype(np.float32)
    idx = np.array([4, 0, -1])
    extra = ["--scales", save("scales.npy", scales), "--type", "uint4", "--block-size", "16",
             "--quantize-axis", "2", "--axis", "2", "--values-shape", "3,2,5"]
    p, got = run_op("gather-block-quantized", data, idx, extra=extra + ["--check-indices"])
    want = ref_gather_block_quantized(data, idx, scales, None, "uint4", 4, 2, 2, 16,
                                      values_shape=(3, 2, 5))
    expect_ok("gather-block-quantized --values-shape 3,2,5", p, got, want)
    p, _ = run_op("gather-block-quantized", data, np.array([5]), extra=extra + ["--check-indices"])
    expect_error("gather-block-quantized --values-shape --check-indices", p, 2, "is 5, outside")
    p, _ = run_op("gather-block-quantized", data[:14], idx, extra=extra)
    expect_error("gather-block-quantized --values-shape, 14 bytes", p, 2,
                 "shape is (14,), expected (15,) (two 4-bit values a byte, packed whole as "
                 "ONNX's uint4 tensors)")
    p, _ = run_op("gather-block-quantized", data, idx, extra=extra + ["--type", "uint8"])
    expect_error("gather-block-quantized uint8 --values-shape", p, 2,
                 "values_shape is given, expected none for uint8 data")
    p, _ = run_op("gather-block-quantized", data, idx, extra=extra + ["--values-shape", "3,,5"])
    expect_error("gather-block-quantized --values-shape 3,,5", p, 2,
                 "--values-shape is '3,,5', expected sizes separated by commas")
    p, _ = run_op("gather", data, idx, extra=["--values-shape", "15"])
    expect_error("gather --values-shape", p, 2, "--values-shape does not apply to gather")
    data, scales = np.zeros((4, 8), np.uint8), save("scales.npy", np.ones((4, 1), np.float32))
    for extra, text in (([], "--scales is required for gather-block-quantized"),
                        (["--scales", scales, "--type", "int8"],
                         "type is 'int8', expected int4, uint4 or uint8"),
                        (["--scales", scales, "--block-size", "20"],
                         "block_size is 20, expected a power of 2, at least 16"),
                        (["--scales", scales, "--quantize-axis", "0"],
                         "expected (1, 16) (the values' shape (4, 16), quantize_axis 0 in blocks "
                         "of 128)"),
                        (["--scales", scales, "--quantize-axis", "-3"],
                         "quantize_axis is -3, expected -2 to 1")):
        p, _ = run_op("gather-block-quantized", data, np.array([0]), extra=extra)
        expect_error(f"gather-block-quantized refuses {extra}", p, 2, text)
    p, _ = run_op("gather", data, np.array([0]), extra=["--scales", scales])
    expect_error("gather --scales", p, 2, "--scales does not apply to gather")


def group_bag():
    """`vkdml run embedding-bag` against the NumPy reference (float32, float16 and Q4_0 tables,
    each mode, weights, include-last-offset, padding, drop and fill), and its refusals."""
    rng = np.random.default_rng(28)
    offsets = np.array([0, 3, 3, 7])
    for j, layout in enumerate(("float32", "float16", "q4_0")):
        if layout == "q4_0":
            table = rng.integers(0, 256, (9, 36), dtype=np.uint8)
            table[:, 1::18] &= 0xBB  # finite scales
            values, out, fmt = ref_dequantize(table, "q4_0"), "float16", ["--format", "q4_0",
                                                                         "--dtype", "float16"]
        else:
            table = rng.standard_normal((9, 5)).astype(layout)
            values, out, fmt = table.astype(np.float32), layout, []
        # Each mode with an index type in turn (each run compiles its own pipelines: few runs).
        for k, mode in share(enumerate(("sum", "mean", "max"))):
            it = INDEX_TYPES[(k + j) % len(INDEX_TYPES)]
            signed = np.issubdtype(it, np.signedinteger)
            idx = rng.integers(-11 if signed else 0, 11, 10).astype(it)
            off = offsets.astype(it)
            args = ["--offsets", save("off.npy", off), "--mode", mode, *fmt]
            p, got = run_op("embedding-bag", table, idx, extra=args)
            expect_ok(f"embedding-bag {layout} {np.dtype(it).name} {mode}", p, got,
                      ref_embedding_bag(values, idx, off, mode).astype(out))
        w = rng.standard_normal(10).astype(out)
        idx = rng.integers(0, 9, 10)
        args = ["--offsets", save("off.npy", offsets), "--per-sample-weights", save("w.npy", w),
                "--include-last-offset", "--padding-idx", "-2", *fmt]
        p, got = run_op("embedding-bag", table, idx, extra=args)
        expect_ok(f"embedding-bag {layout} weights", p, got,
                  ref_embedding_bag(values, idx, offsets, "sum", w, True, 7).astype(out))
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    idx, off = np.array([1, 9, 2, -7]), save("off.npy", np.array([0, 2]))
    p, got = run_op("embedding-bag", table, idx, extra=["--offsets", off, "--out-of-range", "drop",
                                                       "--mode", "mean"])
    expect_ok("embedding-bag drop", p, got, np.array([[3, 4, 5], [6, 7, 8]], np.float32))
    p, got = run_op("embedding-bag", table, idx, extra=["--offsets", off, "--out-of-range", "fill",
                                                       "--fill-value", "-1"])
    expect_ok("embedding-bag fill", p, got, np.array([[2, 3, 4], [5, 6, 7]], np.float32))
    p, _ = run_op("embedding-bag", table, idx, extra=["--offsets", off, "--check-indices"])
    expect_error("embedding-bag --check-indices", p, 2,
                 "indices[1] is 9, outside the valid range [-4, 3]")
    p, got = run_op("embedding-bag", table, np.zeros(0, np.int64),
                    extra=["--offsets", save("off.npy", np.zeros(3, np.int64))])
    expect_ok("embedding-bag without entries", p, got, np.zeros((3, 3), np.float32))
    for extra, text in (([], "--offsets is required for embedding-bag"),
                        (["--offsets", off, "--mode", "min"],
                         "mode is 'min', expected sum, mean or max"),
                        (["--offsets", off, "--mode", "max", "--per-sample-weights",
                          save("w.npy", np.ones(4, np.float32))],
                         "apply to mode sum only, not max"),
                        (["--offsets", save("off32.npy", np.array([0], np.int32))],
                         "dtype is int32, expected int64 (the dtype of"),
                        (["--offsets", off, "--padding-idx", "4"],
                         "padding_idx is 4, expected -4 to 3"),
                        (["--offsets", off, "--axis", "0"],
                         "--axis does not apply to embedding-bag")):
        p, _ = run_op("embedding-bag", table, idx, extra=extra)
        expect_error(f"embedding-bag refuses {extra}", p, 2, text)
    p, _ = run_op("gather", table, idx, extra=["--mode", "sum"])
    expect_error("gather --mode", p, 2, "--mode does not apply to gather (only to embedding-bag)")


def group_moe():
    """`vkdml run moe-permute` and `moe-unpermute` against the NumPy reference (a stable argsort
    of the ids, dropped ones last; each token's weighted rows in j order in float32 steps), on
    float16 rows of an odd width (rows off 32-bit words), and their refusals."""
    rng = np.random.default_rng(51)
    tokens, k, experts = 37, 3, 5
    x = rng.standard_normal((tokens, 5)).astype(np.float16)
    ids = rng.integers(-1, experts + 1, (tokens, k)).astype(np.int32)  # -1 and 5: dropped
    flat = ids.reshape(-1).astype(np.int64)
    key = np.where((flat >= 0) & (flat < experts), flat, experts)
    order = np.argsort(key, kind="stable")
    kept = int((key < experts).sum())
    want_offsets = np.searchsorted(key[order], np.arange(experts + 1))
    want_perm = np.where(np.arange(flat.size) < kept, order, -1)
    want_rows = np.zeros((flat.size, 5), np.float16)
    want_rows[:kept] = x[order[:kept] // k]
    want_inv = np.full(flat.size, -1, np.int64)
    want_inv[order[:kept]] = np.arange(kept)
    want_inv = want_inv.reshape(tokens, k)
    outs = [path(f"moe{i}.npy") for i in range(4)]
    p = vkdml("run", "moe-permute", "--input", save("x.npy", x), "--indices",
              save("ids.npy", ids), "--experts", str(experts), "--output", outs[0],
              "--offsets-output", outs[1], "--permutation-output", outs[2],
              "--inverse-output", outs[3], "--quiet")
    check(p.returncode == 0 and p.stdout == "" and p.stderr == "",
          f"moe-permute: exit {p.returncode}, {p.stdout!r} {p.stderr!r}")
    if p.returncode == 0:
        got = [np.load(o) for o in outs]
        for name, g, w in zip(("rows", "offsets", "permutation", "inverse"), got,
                              (want_rows, want_offsets, want_perm, want_inv)):
            check(same(g, w.astype(g.dtype)) and (name == "rows" or g.dtype == np.int64),
                  f"moe-permute {name}: got {g!r}, expected {w!r}")
    # Each token's rows back, weighted, in float32 steps.
    y = rng.standard_normal((flat.size, 5)).astype(np.float32)
    w = rng.random((tokens, k)).astype(np.float32)
    want = np.zeros((tokens, 5), np.float32)
    for j in range(k):
        r = want_inv[:, j]
        ok = r >= 0
        want = np.where(ok[:, None], (want + (w[:, j:j + 1] * y[np.where(ok, r, 0)])
                                      .astype(np.float32)).astype(np.float32), want)
    out = path("moe_out.npy")
    p = vkdml("run", "moe-unpermute", "--input", save("y.npy", y), "--indices",
              save("inv.npy", want_inv), "--weights", save("w.npy", w), "--output", out,
              "--dtype", "float16")
    check(p.returncode == 0 and "vkdml run: moe-unpermute" in p.stdout,
          f"moe-unpermute: exit {p.returncode}, {p.stdout!r} {p.stderr!r}")
    if p.returncode == 0:
        got = np.load(out)
        check(same(got, want.astype(np.float16)), f"moe-unpermute: got {got!r}, expected {want!r}")
    p = vkdml("run", "moe-permute", "--help")
    check(p.returncode == 0 and "usage: vkdml run moe-permute" in p.stdout, "moe-permute --help")
    for args, text in ((["--experts", "0"], "--experts is '0', expected an integer from 1"),
                       ([], "moe-permute needs --experts N"),
                       (["--experts", "5", "--weights", "w.npy"],
                        "unknown option --weights for moe-permute"),
                       (["--experts", "5", "--index-dtype", "uint8"],
                        "--index-dtype is 'uint8', expected int64 or int32")):
        p = vkdml("run", "moe-permute", "--input", path("x.npy"), "--indices", path("ids.npy"),
                  "--output", outs[0], *args)
        expect_error(f"moe-permute {args}", p, 2, text)
    p = vkdml("run", "moe-unpermute", "--input", path("y.npy"), "--indices", path("inv.npy"),
              "--output", out)
    expect_error("moe-unpermute without weights", p, 2, "moe-unpermute needs --weights")
def group_paged():
    """`vkdml paged-cache-write` and `vkdml paged-gather` against NumPy: a float32 NHD cache and a
    Q8_0 HND one (ggml's quantizer), a negative and a duplicate slot, lengths and cumulative
    lengths with token offsets; their errors (a slot past the cache, bad options)."""
    rng = np.random.default_rng(51)
    out = path("paged.npy")

    def write(cache, slots, values, *extra):
        if os.path.exists(out):
            os.remove(out)
        p = vkdml("paged-cache-write", "--cache", save("cache.npy", cache), "--slot-mapping",
                  save("slots.npy", slots), "--values", save("values.npy", values), "-o", out,
                  "--quiet", *extra)
        return p, np.load(out) if p.returncode == 0 else None

    def row(c, layout, slot, h):
        b, r = divmod(int(slot), c.shape[1] if layout == "NHD" else c.shape[2])
        return c[b, r, h] if layout == "NHD" else c[b, h, r]

    for layout, fmt in (("NHD", None), ("HND", "q8_0")):
        heads, head_size, bs = 2, 32 if fmt else 8, 4
        if fmt:
            cache = rng.integers(0, 256, (3, heads, bs, 34), dtype=np.uint8)
            cache[..., 1] &= 0xBB
        else:
            cache = rng.standard_normal((3, bs, heads, head_size)).astype(np.float32)
        values = rng.standard_normal((4, heads, head_size)).astype(np.float32)
        slots = np.array([2, 9, -1, 2])
        want = cache.copy()
        for t, s in enumerate(slots):
            for h in range(heads):
                if s >= 0:
                    row(want, layout, s, h)[...] = ref_quantize(values[t, h], fmt) if fmt \
                        else values[t, h]
        extra = ["--layout", layout] + (["--format", fmt] if fmt else [])
        p, got = write(cache, slots, values, *extra)
        expect_ok(f"paged-cache-write {layout} {fmt}", p, got, want)
        # the gather of that cache: two sequences, the second from token offset 1
        table = np.array([[2, 0], [1, 2]], np.int64)
        lens, offsets = np.array([5, 6], np.int64), np.array([0, 1], np.int64)
        rows = []
        for b in range(2):
            for i in range(lens[b]):
                p_ = i + offsets[b]
                r = [row(got if got is not None else want, layout, table[b, p_ // bs] * bs
                         + p_ % bs, h) for h in range(heads)]
                rows.append([ref_dequantize(x[None], fmt)[0] if fmt else x for x in r])
        want_g = np.array(rows, np.float32)
        for how in (["--seq-lens", save("lens.npy", lens)],
                    ["--cu-seq-lens", save("cu.npy", np.array([0, 5, 11], np.int64))]):
            if os.path.exists(out):
                os.remove(out)
            p = vkdml("paged-gather", "--cache", save("cache2.npy", want), "--block-table",
                      save("table.npy", table), "--token-offsets", save("off.npy", offsets),
                      "-o", out, "--quiet", *how, *extra)
            expect_ok(f"paged-gather {layout} {fmt} {how[0]}", p,
                      np.load(out) if p.returncode == 0 else None, want_g)
    cache = np.zeros((2, 4, 1, 4), np.float32)
    p, _ = write(cache, np.array([1, 8]), np.ones((2, 1, 4), np.float32))
    expect_error("paged-cache-write slot past the cache", p, 2,
                 "SlotMappingTensor[1] is 8, outside the valid range [0, 7]")
    p, got = write(cache, np.array([1, 8]), np.ones((2, 1, 4), np.float32), "--out-of-range",
                   "drop")
    want = cache.copy()
    want[0, 1] = 1
    expect_ok("paged-cache-write drop", p, got, want)
    p, _ = write(cache, np.array([1]), np.ones((1, 1, 4), np.float32), "--layout", "XYZ")
    expect_error("paged-cache-write --layout", p, 2, "--layout is 'XYZ', expected NHD or HND")
    p, _ = write(cache, np.array([1]), np.ones((1, 1, 4), np.float32), "--out-of-range", "clamp")
    expect_error("paged-cache-write clamp", p, 2, "a cache write never clamps")
    p, _ = write(cache, np.array([1]), np.ones((1, 1, 8), np.float32))
    expect_error("paged-cache-write shapes", p, 2, "UpdatesTensor.Sizes[2] is 8, expected 4")
    p = vkdml("paged-gather", "--cache", save("c.npy", cache), "--block-table",
              save("t.npy", np.array([[0, 3]], np.int32)), "--seq-lens",
              save("l.npy", np.array([6], np.int32)), "-o", out)
    expect_error("paged-gather block past the cache", p, 2,
                 "BlockTableTensor[0,1] is 3, outside the valid range [0, 1]")
    p = vkdml("paged-gather", "--help")
    check(p.returncode == 0 and "usage: vkdml paged-gather" in p.stdout, "paged-gather --help")
def group_segment():
    """`vkdml run segment-csr`, `segment-coo` and `segment-reduce` on small integers (every
    result exact, so NumPy's own reductions are the reference), and their refusals."""
    src = np.arange(24, dtype=np.float32).reshape(8, 3) - 7
    indptr = np.array([0, 3, 3, 8])
    index = np.array([0, 0, 0, 2, 2, 2, 2, 2])
    segments = [src[0:3], src[3:3], src[3:8]]
    for red, fn, empty in (("sum", np.sum, 0), ("mean", np.mean, 0), ("max", np.max, 0),
                           ("prod", np.prod, 1)):
        want = np.stack([fn(s, axis=0) if len(s) else np.full(3, empty) for s in segments])
        for op, idx in (("segment-csr", indptr), ("segment-coo", index)):
            p, got = run_op(op, src, idx, extra=["--reduction", red])
            expect_ok(f"{op} {red}", p, got, want.astype(np.float32))
    p, got = run_op("segment-csr", src, indptr, extra=["--reduction", "argmin"])
    expect_ok("segment-csr argmin", p, got, np.array([[0, 0, 0], [8, 8, 8], [3, 3, 3]]))
    p, got = run_op("segment-coo", src, index, extra=["--reduction", "argmax", "--dim-size", "4"])
    expect_ok("segment-coo argmax --dim-size", p, got,
              np.array([[2, 2, 2], [8, 8, 8], [7, 7, 7], [8, 8, 8]]))
    p, got = run_op("segment-reduce", src, indptr, extra=["--reduction", "max"])
    expect_ok("segment-reduce max (torch's -inf)", p, got,
              np.stack([src[0:3].max(0), np.full(3, -np.inf), src[3:].max(0)]).astype(np.float32))
    p, got = run_op("segment-reduce", src, indptr, extra=["--reduction", "sum", "--initial", "2"])
    expect_ok("segment-reduce --initial", p, got,
              np.stack([src[0:3].sum(0) + 2, np.full(3, 2), src[3:].sum(0) + 2]).astype(np.float32))
    p, _ = run_op("segment-csr", src, np.array([0, 5, 3, 8]), extra=["--check-indices"])
    expect_error("segment-csr --check-indices", p, 2,
                 "indices[2] is 3, expected offsets in [0, 8] (the rows)")
    p, _ = run_op("segment-coo", src, np.array([0, 0, 2, 1, 2, 2, 2, 2]), extra=["--check-indices"])
    expect_error("segment-coo --check-indices", p, 2, "indices[3] is 1, expected segment ids")
    for op, extra, text in (
            ("segment-csr", ["--reduction", "median"], "reduction is 'median', expected sum"),
            ("segment-csr", ["--dim-size", "3"], "--dim-size does not apply to segment-csr"),
            ("segment-coo", ["--initial", "1"], "--initial does not apply to segment-coo"),
            ("segment-csr", ["--axis", "0"], "--axis (the last dimension of --indices is it)"),
            ("segment-reduce", ["--reduction", "argmax", "--initial", "1"],
             "--initial does not apply to --reduction argmax")):
        p, _ = run_op(op, src, indptr, extra=extra)
        expect_error(f"{op} refuses {extra}", p, 2, text)
    p, _ = run_op("segment-csr", src, np.zeros((2, 4), np.int64))
    expect_error("segment-csr batch sizes", p, 2, "'s sizes before the reduced axis 1")


GROUPS = {"help": group_help, "roundtrip": group_roundtrip, "shapes": group_shapes,
          "errors": group_errors, "indices": group_indices, "output": group_output,
          "bench": group_bench, "reduce": group_reduce, "limits": group_limits,
          "out_of_range": group_out_of_range, "quantized": group_quantized, "bag": group_bag,
          "moe": group_moe, "paged": group_paged, "segment": group_segment}

if __name__ == "__main__":
    GROUPS[sys.argv[2]]()
    for name in os.listdir(TMP):
        os.remove(os.path.join(TMP, name))
    os.rmdir(TMP)
    if skips:
        # Never silently, and never on a device with every type.
        check(not has_every_type(), f"cases skipped on a device with every type: {skips}")
        print(f"cli.{sys.argv[2]}: skipped " +
              ", ".join(f"{n} case(s) that need {f}" for f, n in sorted(skips.items())) +
              f", which {features().get('driver', 'the device')} lacks")
    if failures:
        print(f"{len(failures)} check(s) failed")
        sys.exit(validation.finish(1))
    if validation.finish(0):
        sys.exit(1)
    print(f"cli.{sys.argv[2]}: all checks passed")
