#!/usr/bin/env python3
"""Runs `vkdml bench --json` and the PyTorch peers (bench_torch.py) in one invocation, case by
case (vkdml, then torch, so that both see the GPU in the same state), and prints a markdown table:
case | vkdml ms | torch ms | ratio | vkdml GB/s | copy GB/s | % of copy. `--rounds N` repeats
the sequence and keeps each side's fastest median per case.

ratio = torch ms / vkdml ms: above 1 means vkdml is faster. GB/s counts the minimum bytes a case
must move (examples/bench/BENCH.md); "% of copy" compares vkdml with a plain uvec4 copy kernel moving the
same byte count, timed in the same run.

  python3 examples/bench/bench_compare.py --size full                             # GPU machine, CUDA
  /usr/bin/python3 examples/bench/bench_compare.py --size small --torch-device cpu --threads 2  # lavapipe

`--ggml EXE` also runs ggml's Vulkan get_rows/set_rows (bench_ggml from ../shared/peers/ggml, staged
as its README.txt says) on the cases it has, same table, rows and card, case by case after torch,
and adds its time by ggml's GPU timestamps (--gpu-ts) and ggml ms / vkdml ms to the table.

`--baseline EXE` also runs another vkdml build on every case, beside the one measured (the two
alternate which goes first from round to round), and adds its time and new / baseline to the
table: a before-and-after comparison taken in one run, as the project's speed reports require.
"""
import argparse
import datetime
import glob
import json
import os
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_torch  # noqa: E402


def find_vkdml():
    root = os.path.dirname(os.path.dirname(HERE))  # examples/bench -> the project root
    found = sorted(glob.glob(os.path.join(root, "build*", "examples", "vkdml")), key=os.path.getmtime)
    return found[-1] if found else "vkdml"


# vkdml bench's cases that bench_ggml has: its case name.
GGML_CASES = {"q4_0-rows": "rows-q4_0", "q8_0-rows": "rows-q8_0",
              "q8_0-quantize-rows": "scatter-rows-q8_0"}


def run_ggml(exe, spec, runs, warmup):
    """bench_ggml on the ggml counterpart of one vkdml bench case (the same table, rows and
    columns), one op a graph, timed by ggml's GPU timestamps: its JSON row, or one with "error"."""
    rows, picks = spec["input_shape"][0], spec["indices_shape"][0]
    cmd = [exe, "--case", GGML_CASES[spec["case"]], "--gpu-ts", "--chain", "0", "--rows",
           str(rows), "--nidx", str(picks), "--cols", str(spec["width"]), "--iters", str(runs),
           "--warmup", str(warmup)]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    found = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    if not found:
        return {"error": f"{shlex.join(cmd)}: exit {proc.returncode}, no result"}
    r = found[0]
    r["median_ms"] = r.get("gpu_ms") or r.get("ms")
    r["timing"] = "gpu-timestamps" if r.get("gpu_ms") else "host"
    return r


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def keep_fastest(rows, r):
    """rows[case] = r unless it already holds a lower median, a mismatch or an error: a failure
    in any round stays in the table."""
    old = rows.get(r["case"])
    if old is not None and (old.get("mismatches") or old.get("error")):
        return
    if old is None or r.get("mismatches") or r.get("error") or old.get("median_ms") is None or (
            r.get("median_ms") is not None and r["median_ms"] < old["median_ms"]):
        rows[r["case"]] = r


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    bench_torch.add_arguments(p)
    p.add_argument("--vkdml", default=None, help="the vkdml executable (default: newest build*/)")
    p.add_argument("--device", type=int, default=None, help="vkdml's Vulkan device index")
    p.add_argument("--skip-torch", action="store_true", help="vkdml only")
    p.add_argument("--out", default=None, help="also write the markdown here")
    p.add_argument("--raw", default=None, help="write both sides' JSON lines here")
    p.add_argument("--rounds", type=int, default=1,
                   help="repeat the case sequence; each side keeps its fastest median per case")
    p.add_argument("--baseline", default=None,
                   help="another vkdml executable to time beside it, case by case")
    p.add_argument("--ggml", default=None,
                   help="bench_ggml (../shared/peers/ggml): ggml's Vulkan peer where it has the case")
    args = p.parse_args()
    cases = bench_torch.case_list(args)
    exe = args.vkdml or find_vkdml()

    # Case by case, vkdml then torch, so that both sides of a row see the GPU in the same state
    # (an H100 was seen to run its memory at ~57% speed for seconds at a time). With --rounds N
    # the whole sequence repeats and each side keeps its fastest median per case.
    known = [c["case"] for c in bench_torch.specs(args.size == "small")]
    order = [c for c in known if c != "latency-host" and
             (c in cases if cases else not bench_torch.is_diagnostic(c))]
    if cases and any(c.startswith("latency") for c in cases) and "latency" not in order:
        order.insert(0, "latency")
    def run_vkdml(executable, case, label):
        """`executable bench --json` on one case: its rows and whether it exited 0."""
        cmd = [executable, "bench", "--json", "--no-progress", "--size", args.size, "--case", case,
               "--runs", str(args.runs), "--warmup", str(args.warmup),
               "--latency-calls", str(args.latency_calls)]
        if args.device is not None:
            cmd += ["--device", str(args.device)]
        print(f"[round {rnd + 1}/{args.rounds}] {label} {case}", file=sys.stderr, flush=True)
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
        rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
        return rows, proc.returncode == 0, cmd

    vk, base, torch_rows, ggml_rows, failed = {}, {}, {}, {}, False
    spec_of = {c["case"]: c for c in bench_torch.specs(args.size == "small")}
    for rnd in range(args.rounds):
        for case in order:
            sides = [(exe, vk, "vkdml")]
            if args.baseline:  # alternate which build goes first
                sides.insert(rnd % 2, (args.baseline, base, "baseline"))
            for executable, table, label in sides:
                rows, ok, cmd = run_vkdml(executable, case, label)
                if table is base:  # a baseline may not know a newer case: its row stays empty
                    for r in rows:
                        keep_fastest(base, r)
                    continue
                failed |= not ok
                if not rows:
                    sys.exit(f"bench_compare: {shlex.join(cmd)} printed no results")
                for r in rows:
                    keep_fastest(vk, r)
            if args.ggml and case in GGML_CASES:
                print(f"[round {rnd + 1}/{args.rounds}] ggml {case}", file=sys.stderr, flush=True)
                keep_fastest(ggml_rows, dict(run_ggml(args.ggml, spec_of[case], args.runs,
                                                      args.warmup), case=case))
            if args.skip_torch:
                continue
            peer_cases = [case] + (["latency-host"] if case == "latency" else [])
            for r in bench_torch.run(peer_cases, args.size == "small", args.torch_device,
                                     args.threads, args.runs, args.warmup, args.latency_calls,
                                     progress=False):
                keep_fastest(torch_rows, r)
    failed |= any(r.get("error") or r.get("verified") is False for r in ggml_rows.values())
    vk, torch_rows = list(vk.values()), list(torch_rows.values())
    peers = {r["case"]: r for r in torch_rows}

    d = vk[0]
    torch_dev = torch_rows[0]["device"] if torch_rows else "-"
    lines = [
        f"**vkdml** on {d['device']} (driver {d['driver']}, Vulkan {d.get('vulkan', '?')}); "
        f"**torch** {bench_torch.torch.__version__} on {torch_dev}; size {args.size}; "
        f"{datetime.datetime.now().astimezone().strftime('%Y-%m-%d %H:%M %Z')}",
        "",
        "Command: `" + " ".join(shlex.quote(a) for a in [os.path.basename(sys.executable)]
                                + [os.path.relpath(sys.argv[0])] + sys.argv[1:]) + "`",
        "",
        "| case | vkdml ms | torch ms | ratio | vkdml GB/s | copy GB/s | % of copy |"
        + (" baseline ms | new / baseline |" if args.baseline else "")
        + (" ggml ms | ggml / vkdml |" if args.ggml else ""),
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
        + (" ---: | ---: |" if args.baseline else "") + (" ---: | ---: |" if args.ggml else ""),
    ]
    extra_cells = (" | |" if args.baseline else "") + (" | |" if args.ggml else "")
    if args.baseline:
        lines.insert(2, f"Baseline: `{args.baseline}`, timed beside it case by case.")
        lines.insert(3, "")

    def baseline_cells(name, vms):
        if not args.baseline:
            return ""
        b = base.get(name, {}).get("median_ms")
        return f" {fmt(b, '.4f')} | {fmt(vms / b if b and vms else None, '.3f')} |"

    def ggml_cells(name, vms):
        if not args.ggml:
            return ""
        g = ggml_rows.get(name, {})
        if g.get("error") or g.get("verified") is False:
            return f" ERROR: {g.get('error') or 'not verified'} | |"
        gms = g.get("median_ms")
        return f" {fmt(gms, '.4f')} | {fmt(gms / vms if gms and vms else None, '.2f')} |"

    for r in vk:
        name = r["case"]
        peer = peers.get("latency" if name.startswith("latency") else name, {})
        if r.get("error") or r.get("skipped"):
            why = r.get("error") or r.get("skipped")
            lines.append(f"| {name} | {'skipped' if r.get('skipped') else 'ERROR'}: {why} "
                         "| | | | | |" + extra_cells)
            continue
        if r.get("mismatches"):
            name += f" (**{r['mismatches']} MISMATCHES**)"
            failed = True
        vms, tms = r["median_ms"], peer.get("median_ms")
        ratio = tms / vms if tms and vms else None
        pct = r.get("pct_of_copy")
        note = " ¹" if peer.get("peer_index_dtype") else ""
        lines.append(f"| {name} | {fmt(vms, '.4f')} | {fmt(tms, '.4f')}{note} | "
                     f"{fmt(ratio, '.2f')} | {fmt(r.get('gbps'), '.1f')} | "
                     f"{fmt(r.get('copy_gbps'), '.1f')} | "
                     f"{'-' if pct is None else format(pct, '.1f') + '%'} |"
                     + baseline_cells(r["case"], vms) + ggml_cells(r["case"], vms))
        host = peers.get("latency-host", {}).get("median_ms")
        if r["case"] == "latency-run" and host:  # Device::Run moves host data in and out too
            lines.append(f"| latency-run vs torch from/to host | {fmt(vms, '.4f')} | "
                         f"{fmt(host, '.4f')} | {fmt(host / vms, '.2f')} | | | - |"
                         + extra_cells)
    lines.append("")
    lines.append("ratio = torch ms / vkdml ms (above 1: vkdml faster). GB/s = minimum bytes "
                 "(examples/bench/BENCH.md) / median time. Latency rows: host time per call "
                 "(latency-run: Device::Run; latency-replay: one pre-recorded command buffer, "
                 "submit + wait), against torch.gather + synchronize.")
    if args.ggml:
        lines.append("ggml ms: bench_ggml's op time by ggml's GPU timestamps (--gpu-ts, one op a "
                     "graph); ggml / vkdml above 1: vkdml faster.")
    if any(r.get("peer_index_dtype") for r in torch_rows):
        lines.append("¹ torch.gather takes int64 indices only here: the peer used int64.")
    errors = [r for r in torch_rows if r.get("error")]
    for r in errors:
        lines.append(f"torch {r['case']}: ERROR {r['error']}")
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    if args.raw:
        with open(args.raw, "w") as f:
            for r in vk:
                f.write(json.dumps(dict(r, side="vkdml")) + "\n")
            for r in torch_rows:
                f.write(json.dumps(dict(r, side="torch")) + "\n")
            for r in base.values():
                f.write(json.dumps(dict(r, side="baseline")) + "\n")
            for r in ggml_rows.values():
                f.write(json.dumps(dict(r, side="ggml")) + "\n")
    return 1 if failed or errors else 0


if __name__ == "__main__":
    sys.exit(main())
