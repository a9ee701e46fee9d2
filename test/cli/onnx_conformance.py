#!/usr/bin/python3
"""Runs the ONNX backend node tests for Gather, GatherElements, GatherND, ScatterElements (and
the deprecated Scatter) and ScatterND through `vkdml run` and compares the outputs exactly.

usage: onnx_conformance.py --vkdml PATH [--data DIR]

The cases come from Debian's libonnx-testdata (found with `dpkg -L libonnx-testdata`, or --data:
the directory holding the test_* case directories); each has model.onnx and
test_data_set_N/{input,output}_M.pb, read with python3-onnx. Every case prints one line: PASS,
FAIL or SKIP with the reason (a SKIP is an operator or reduction that `vkdml run` says is not
supported, and only one listed in UNSUPPORTED: any other operator that says so fails). Indices
are checked (--check-indices): ONNX calls out-of-range indices an error, so a case without
expected outputs must fail with exit status 2. Exit status 1 on any FAIL, on fewer passes than
--min-pass, or on a validation message (test/cli/validation.py, where ctest asks).
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import validation  # noqa: E402
from onnx import numpy_helper

# ONNX operator -> (vkdml run OP, the attributes it takes as options)
OPERATORS = {
    "Gather": ("gather", ["axis"]),
    "GatherElements": ("gather-elements", ["axis"]),
    "GatherND": ("gather-nd", ["batch_dims"]),
    "Scatter": ("scatter-elements", ["axis"]),  # deprecated alias of ScatterElements
    "ScatterElements": ("scatter-elements", ["axis", "reduction"]),
    "ScatterND": ("scatter-nd", ["reduction"]),
}
OPTION = {"axis": "--axis", "batch_dims": "--batch-dims", "reduction": "--reduction"}
# What `vkdml run` refuses as not supported: ONNX operators, and the reduction attribute's
# values (of ScatterElements and ScatterND). Nothing, since vkdml has the reductions.
UNSUPPORTED = {"operators": set(), "reductions": set()}


def find_cases(data_dir):
    if data_dir:
        dirs = glob.glob(os.path.join(data_dir, "test_*"))
    else:
        listing = subprocess.run(["dpkg", "-L", "libonnx-testdata"], capture_output=True,
                                 text=True, check=True).stdout.split()
        dirs = {os.path.dirname(p) for p in listing if p.endswith("/model.onnx")}
    pattern = re.compile(r"/test_(gather|scatter)[^/]*$", re.IGNORECASE)
    return sorted(d for d in dirs if pattern.search(d) and
                  os.path.exists(os.path.join(d, "model.onnx")))


def load_tensors(dataset, kind):
    files = glob.glob(os.path.join(dataset, f"{kind}_*.pb"))
    files.sort(key=lambda f: int(re.search(r"_(\d+)\.pb$", f).group(1)))
    return [numpy_helper.to_array(onnx.load_tensor(f)) for f in files]


def exactly_equal(got, want):
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    return np.array_equal(got, want, equal_nan=got.dtype.kind == "f")


def run_case(vkdml, case, tmp):
    """Returns (status, reason) for one case directory."""
    model = onnx.load(os.path.join(case, "model.onnx"))
    if len(model.graph.node) != 1:
        return "SKIP", f"{len(model.graph.node)} nodes, expected one operator"
    node = model.graph.node[0]
    if node.op_type not in OPERATORS:
        return "SKIP", f"operator {node.op_type} is not one vkdml implements"
    op, attr_names = OPERATORS[node.op_type]
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    options = []
    for name, value in attrs.items():
        if name not in attr_names:
            return "FAIL", f"unexpected attribute {name}={value!r}"
        if isinstance(value, bytes):
            value = value.decode()
            attrs[name] = value
        options += [OPTION[name], str(value)]
    may_skip = (node.op_type in UNSUPPORTED["operators"] or
                attrs.get("reduction", "none") in UNSUPPORTED["reductions"])
    datasets = sorted(glob.glob(os.path.join(case, "test_data_set_*")))
    if not datasets:
        return "FAIL", "no test_data_set_* directory"
    for dataset in datasets:
        inputs = load_tensors(dataset, "input")
        expected = load_tensors(dataset, "output")
        if len(inputs) != (3 if op.startswith("scatter") else 2):
            return "FAIL", f"{os.path.basename(dataset)}: {len(inputs)} inputs"
        paths = []
        for role, array in zip(["input", "indices", "updates"], inputs):
            paths += [f"--{role}", os.path.join(tmp, f"{role}.npy")]
            np.save(paths[-1], array)
        out = os.path.join(tmp, "output.npy")
        if os.path.exists(out):
            os.remove(out)
        cmd = [vkdml, "run", op, *paths, *options, "--output", out, "--check-indices"]
        p = subprocess.run(cmd, capture_output=True, text=True)
        message = p.stderr.strip()
        where = os.path.basename(dataset)
        if p.returncode == 2 and "is not supported" in message:
            if may_skip:
                return "SKIP", message.replace("vkdml run: ", "")
            return "FAIL", f"{where}: {node.op_type} should be supported: {message}"
        if not expected:  # the case expects an error
            if p.returncode != 2:
                return "FAIL", f"{where}: expected an error (exit 2), got exit {p.returncode}"
            continue
        if p.returncode != 0:
            return "FAIL", f"{where}: exit {p.returncode}: {message}"
        got = np.load(out)
        if not exactly_equal(got, expected[0]):
            return "FAIL", (f"{where}: got {got.dtype}{list(got.shape)} {got.tolist()}, expected "
                            f"{expected[0].dtype}{list(expected[0].shape)} "
                            f"{expected[0].tolist()}")
    return "PASS", ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vkdml", required=True, help="path of the vkdml binary")
    parser.add_argument("--data", help="directory of the ONNX node test cases")
    parser.add_argument("--min-pass", type=int, default=1,
                        help="fail unless at least this many cases pass")
    args = parser.parse_args()
    validation.install()  # every `vkdml run` under the validation layer, where ctest asks
    cases = find_cases(args.data)
    if not cases:
        print("no ONNX gather/scatter test cases found (is libonnx-testdata installed?)",
              file=sys.stderr)
        return 2
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    with tempfile.TemporaryDirectory(prefix="vkdml_onnx_") as tmp:
        for case in cases:
            status, reason = run_case(os.path.abspath(args.vkdml), case, tmp)
            counts[status] += 1
            name = os.path.basename(case)
            print(f"{status} {name}" + (f": {reason}" if reason else ""), flush=True)
    print(f"{counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped")
    if counts["PASS"] < args.min_pass:
        print(f"FAIL: {counts['PASS']} cases passed, fewer than --min-pass {args.min_pass}")
        return validation.finish(1)
    return validation.finish(1 if counts["FAIL"] else 0)


if __name__ == "__main__":
    sys.exit(main())
