#!/usr/bin/python3
"""Per-call host time of vkdml.gather_elements on the bench's latency case (64x64 float32,
int64 indices, axis 1) against Device::Run on the same case (`vkdml bench --case latency-run`,
C++) and torch.gather on the CPU, measured side by side: each round runs the three in turn, and
the figures are medians over the rounds' medians. Target: Python at most 1.5x Device::Run.

usage: PYTHONPATH=build/python /usr/bin/python3 examples/bench/bench_python.py
           [--vkdml build/examples/vkdml] [--rounds 5] [--calls 2000] [--device N]
"""
import argparse
import json
import statistics
import subprocess
import time

import numpy as np

import vkdml


def per_call_ms(fn, calls, warm=50):
    for _ in range(warm):
        fn()
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def device_run_ms(tool, calls, device):
    args = [tool, "bench", "--case", "latency-run", "--json", "--no-progress",
            "--latency-calls", str(calls)]
    if device is not None:
        args += ["--device", str(device)]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    row = json.loads(out.splitlines()[0])
    return row["median_ms"], row["device"]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--vkdml", default="build/examples/vkdml")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--device", type=int)
    a = p.parse_args()
    try:
        import torch
    except ImportError:
        torch = None
    dev = vkdml.Device(a.device)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 64)).astype(np.float32)
    idx = rng.integers(0, 64, (64, 64))
    want = np.take_along_axis(x, idx, axis=1)
    assert np.array_equal(vkdml.gather_elements(x, idx, axis=1, device=dev), want)
    rows = {"Device::Run (C++)": [], "vkdml.gather_elements": [], "torch.gather (CPU)": []}
    name = None
    for _ in range(a.rounds):
        ms, name = device_run_ms(a.vkdml, a.calls, a.device)
        rows["Device::Run (C++)"].append(ms)
        rows["vkdml.gather_elements"].append(
            per_call_ms(lambda: vkdml.gather_elements(x, idx, axis=1, device=dev), a.calls))
        if torch is not None:
            tx, ti = torch.from_numpy(x), torch.from_numpy(idx)
            rows["torch.gather (CPU)"].append(per_call_ms(lambda: torch.gather(tx, 1, ti),
                                                          a.calls))
    print(f"vkdml Python overhead: {dev.name} (vkdml bench: {name}), gather_elements 64x64 "
          f"float32/int64 axis 1, {a.rounds} rounds of {a.calls} calls, median of the rounds' "
          f"medians")
    base = statistics.median(rows["Device::Run (C++)"])
    for label, values in rows.items():
        if not values:
            print(f"  {label:24s} (not installed)")
            continue
        ms = statistics.median(values)
        print(f"  {label:24s} {ms * 1e3:8.1f} us   {ms / base:5.2f}x Device::Run   "
              f"rounds {', '.join(f'{v * 1e3:.1f}' for v in values)}")
    ratio = statistics.median(rows["vkdml.gather_elements"]) / base
    print(f"target: vkdml.gather_elements at most 1.5x Device::Run: "
          f"{'met' if ratio <= 1.5 else 'NOT met'} ({ratio:.2f}x)")


if __name__ == "__main__":
    main()
