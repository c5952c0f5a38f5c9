#!/usr/bin/env python3
"""All-reduce cost on N GPUs through torch.distributed + NCCL (tensor-parallel communication).

Checks the planner's TP communication model (planner/perf.py): one all-reduce of S bytes over
tp GPUs costs ``2 (tp-1)/tp * S / (link_bw * comm_eff) + comm_latency_s``.

For each message size S (bf16, in-place ``dist.all_reduce(SUM)``):
  * eager:  groups of ``inner`` back-to-back all-reduces, each group between two CUDA events;
            groups are queued back to back, time per all-reduce = group time / inner
            (inner = 100 for small messages, 10 or 1 for large ones);
  * graph:  the same ``inner`` all-reduces captured once in a ``torch.cuda.CUDAGraph``, the replay
            timed with CUDA events (sizes up to --graph-max-bytes; skipped if capture fails).
Before every group the buffer is reset from a pristine random copy (outside the timed window), so
values never overflow (<= 100 doublings of randn). Median / p10 / p90 over the groups, algbw = S/t,
busbw = algbw * 2(n-1)/n (nccl-tests' convention). Results are rank 0's; rank 1's median is in
``notes``. A correctness check (fresh random data per rank, compared with the fp32 sum) runs
before timing.

NVLink multicast (NVLS) is forced off: NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1,
NVSHMEM_DISABLE_NVLS=1.

Launch (GPU):  torchrun --standalone --nproc_per_node=2 bench/nccl_allreduce.py --out-dir OUT
  or, without torchrun:  python3 bench/nccl_allreduce.py --nproc 2 --out-dir OUT  (mp.spawn)
CPU smoke test (gloo):  python bench/nccl_allreduce.py --nproc 2 --dry-run --out-dir bench_out/smoke
Fit a CSV (no torch needed):  python bench/nccl_allreduce.py --fit data/benchmarks/nccl_h200_x2_micro.csv
"""

from __future__ import annotations

import argparse
import csv
import datetime as _dt
import math
import os
import shlex
import statistics
import subprocess
import sys
import threading
import time

# Keep NVLink multicast off everywhere (shared hosts: see the device README / KINDS.md).
for _k, _v in (
    ("NCCL_NVLS_ENABLE", "0"),
    ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
    ("NVSHMEM_DISABLE_NVLS", "1"),
):
    os.environ[_k] = _v

COLUMNS = [
    "bench",
    "dtype",
    "n_gpus",
    "size_bytes",
    "median_s",
    "p10_s",
    "p90_s",
    "iters",
    "algbw_gbs",
    "busbw_gbs",
    "graph",
    "hardware",
    "gpu_name",
    "torch_version",
    "nccl_version",
    "driver",
    "as_of",
    "command",
    "notes",
]

KIB = 1024
MIB = 1024 * 1024
LINK_BW_DEFAULT = 450e9  # H200 NVLink 4, B/s per direction (catalog interconnect_gbs_unidir)


# ---------------------------------------------------------------- sizes
def planner_sizes(hiddens, tokens, elem_bytes=2):
    """{size_bytes: [labels]} for tokens x hidden x elem_bytes (the TP all-reduce of one layer)."""
    out: dict[int, list[str]] = {}
    for h in hiddens:
        for t in tokens:
            out.setdefault(t * h * elem_bytes, []).append(f"h{h}xt{t}")
    return out


def build_sizes(min_bytes, max_bytes, hiddens, tokens, elem_bytes=2):
    if min_bytes <= 0 or max_bytes < min_bytes:
        raise ValueError("need 0 < min_bytes <= max_bytes")
    labels = planner_sizes(hiddens, tokens, elem_bytes)
    sizes = set()
    s = 1 << max(0, math.ceil(math.log2(min_bytes)))
    while s <= max_bytes:
        sizes.add(s)
        s *= 2
    sizes.update(S for S in labels if min_bytes <= S <= max_bytes)
    sizes = sorted(x for x in sizes if x % elem_bytes == 0)
    return sizes, labels


def pick_inner(t_est_s):
    if t_est_s < 50e-6:
        return 100
    if t_est_s < 500e-6:
        return 10
    return 1


def pick_samples(t_est_s, inner, target_s, lo, hi):
    n = int(target_s / max(t_est_s * inner, 1e-9))
    return max(lo, min(hi, n))


def quantile(sorted_vals, q):
    if len(sorted_vals) == 1:
        return sorted_vals[0]
    pos = q * (len(sorted_vals) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


def parse_int_list(s):
    return [int(x) for x in s.split(",") if x.strip()]


# ---------------------------------------------------------------- fit (pure Python)
def fit_linear_rel(points):
    """Fit t = a + S/b minimising sum(((a + S*c) - t)/t)^2, c = 1/b. points: [(S, t)]."""
    # linear least squares in (a, c) with rows (1/t, S/t) and target 1
    s11 = s12 = s22 = r1 = r2 = 0.0
    for S, t in points:
        x1, x2 = 1.0 / t, S / t
        s11 += x1 * x1
        s12 += x1 * x2
        s22 += x2 * x2
        r1 += x1
        r2 += x2
    det = s11 * s22 - s12 * s12
    a = (r1 * s22 - r2 * s12) / det
    c = (s11 * r2 - s12 * r1) / det
    return a, 1.0 / c


def fit_report(rows, link_bw=LINK_BW_DEFAULT, fit_min_bytes=4 * MIB):
    """Text report: latency, plateau, fitted comm_eff / comm_latency_s per graph mode."""
    lines = []
    n = int(rows[0]["n_gpus"])
    factor = 2 * (n - 1) / n
    for g in sorted({r["graph"] for r in rows}):
        sel = [r for r in rows if r["graph"] == g]
        by_size: dict[int, list[float]] = {}
        for r in sel:
            by_size.setdefault(int(r["size_bytes"]), []).append(float(r["median_s"]))
        pts = sorted((S, statistics.median(v)) for S, v in by_size.items())
        mode = "graph" if g in ("1", "true", "True") else "eager"
        small = [t for S, t in pts if S <= 64 * KIB]
        big = [(S, t) for S, t in pts if S >= 64 * MIB]
        lines.append(f"== {mode} (n={n}, {len(pts)} sizes {pts[0][0]}..{pts[-1][0]} B)")
        if small:
            lines.append(
                f"  small-message latency (S<=64KiB): median {statistics.median(small) * 1e6:.2f} us, "
                f"min {min(small) * 1e6:.2f} us"
            )
        if big:
            bus = [factor * S / t / 1e9 for S, t in big]
            lines.append(f"  busbw for S>=64MiB: {', '.join(f'{b:.0f}' for b in bus)} GB/s")
        if len(pts) >= 2:
            a, b = fit_linear_rel(pts)
            eff = b * factor / link_bw
            lines.append(
                f"  fit t = a + S/b (relative LSQ, all sizes): a = {a * 1e6:.2f} us, "
                f"b = {b / 1e9:.1f} GB/s -> comm_latency_s = {a:.3g}, comm_eff = {eff:.3f} "
                f"(link {link_bw / 1e9:.0f} GB/s, 2(n-1)/n = {factor:g})"
            )
            worst = max(abs((a + S / b) / t - 1) for S, t in pts)
            lines.append(f"  fit max |rel err| = {worst * 100:.1f}%")
            big_pts = [(S, t) for S, t in pts if fit_min_bytes <= S]
            if len(big_pts) >= 2 and {S for S, _ in big_pts} != {S for S, _ in pts}:
                a2, b2 = fit_linear_rel(big_pts)
                w2 = max(abs((a2 + S / b2) / t - 1) for S, t in big_pts)
                lines.append(
                    f"  same fit on S>={fit_min_bytes} B only ({len(big_pts)} sizes): "
                    f"a = {a2 * 1e6:.2f} us, b = {b2 / 1e9:.1f} GB/s -> comm_eff = "
                    f"{b2 * factor / link_bw:.3f}, max |rel err| {w2 * 100:.1f}%"
                )
            for S_q, lab in (
                (64 * 8192 * 2, "70B decode b=64"),
                (4096 * 8192 * 2, "70B prefill 4096"),
            ):
                near = [t for S, t in pts if S_q == S]
                meas = f"measured {near[0] * 1e6:.1f} us" if near else "not measured"
                lines.append(
                    f"  S={S_q} ({lab}): fit {(a + S_q / b) * 1e6:.1f} us, {meas}; "
                    f"x2 per layer = {2 * (near[0] if near else a + S_q / b) * 1e6:.1f} us"
                )
    return "\n".join(lines)


# ---------------------------------------------------------------- environment
def sh(cmd, timeout=30):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return (r.stdout + r.stderr).strip()
    except Exception as e:
        return f"{cmd[0]} unavailable ({type(e).__name__})"


def topo_link(topo_text):
    """GPU0<->GPU1 entry of `nvidia-smi topo -m` (e.g. 'NV18'), or '?'."""
    for line in topo_text.splitlines():
        parts = line.split()
        if parts and parts[0] == "GPU0" and len(parts) > 2:
            return parts[2]
    return "?"


# ---------------------------------------------------------------- worker
def worker(rank, world, args, command):
    import torch
    import torch.distributed as dist

    use_cuda = torch.cuda.is_available() and not args.cpu
    backend = "nccl" if use_cuda else "gloo"
    if use_cuda:
        local = int(os.environ.get("LOCAL_RANK", rank))
        torch.cuda.set_device(local)
        dev = torch.device("cuda", local)
    else:
        dev = torch.device("cpu")
    kw = {"backend": backend, "timeout": _dt.timedelta(seconds=args.pg_timeout_s)}
    if use_cuda:
        try:
            kw["device_id"] = dev  # eager NCCL comm init (torch >= 2.3)
            dist.init_process_group(rank=rank, world_size=world, **kw)
        except TypeError:
            kw.pop("device_id")
            dist.init_process_group(rank=rank, world_size=world, **kw)
    else:
        dist.init_process_group(rank=rank, world_size=world, **kw)

    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args.dtype]
    elem = torch.tensor([], dtype=dtype).element_size()
    t0 = time.time()

    def log(*a):
        if rank == 0:
            print(f"[{time.time() - t0:7.1f}s]", *a, flush=True)

    def sync():
        if use_cuda:
            torch.cuda.synchronize()

    # ---- environment
    info = {"torch": torch.__version__, "nccl": "none", "gpu": "cpu", "driver": "none"}
    if use_cuda:
        try:
            info["nccl"] = ".".join(str(x) for x in torch.cuda.nccl.version())
        except Exception as e:
            info["nccl"] = f"unknown ({type(e).__name__})"
        names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        info["gpu"] = names[dev.index]
        drv = sh(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
        info["driver"] = drv.splitlines()[0] if drv else "?"
    topo = sh(["nvidia-smi", "topo", "-m"]) if use_cuda else "cpu run"
    link = topo_link(topo) if use_cuda else "cpu"
    if rank == 0:
        os.makedirs(args.out_dir, exist_ok=True)
        with open(os.path.join(args.out_dir, args.env_name), "w") as f:
            f.write(f"command: {command}\n")
            f.write(f"torch {info['torch']} nccl {info['nccl']} driver {info['driver']}\n")
            f.write(f"backend {backend}, world {world}, dtype {args.dtype}\n")
            for k in sorted(os.environ):
                if k.startswith(("NCCL_", "TORCH_NCCL", "TORCH_SYMM", "NVSHMEM_", "CUDA_")):
                    f.write(f"env {k}={os.environ[k]}\n")
            if use_cuda:
                f.write("gpus: " + "; ".join(names) + "\n")
                f.write("\n$ nvidia-smi topo -m\n" + topo + "\n")
                f.write("\n$ nvidia-smi nvlink -s\n" + sh(["nvidia-smi", "nvlink", "-s"]) + "\n")
                f.write(
                    "\n$ nvidia-smi (clocks/power)\n"
                    + sh(
                        [
                            "nvidia-smi",
                            "--query-gpu=index,name,clocks.sm,clocks.mem,power.draw,"
                            "power.limit,temperature.gpu,memory.used",
                            "--format=csv",
                        ]
                    )
                    + "\n"
                )
        log(
            f"backend {backend} world {world} torch {info['torch']} nccl {info['nccl']} "
            f"driver {info['driver']} gpu {info['gpu']} link GPU0-GPU1 {link}"
        )

    sizes, labels = build_sizes(args.min_bytes, args.max_bytes, args.hiddens, args.tokens, elem)
    max_numel = max(sizes) // elem

    # ---- buffers (random, never zeros); reset from `pristine` before each timed group
    gen = torch.Generator(device=dev).manual_seed(1234 + rank)
    pristine = torch.randn(max_numel, generator=gen, device=dev, dtype=torch.float32).to(dtype)
    buf = torch.empty_like(pristine)

    # ---- correctness check: fresh random data per rank vs fp32 sum of all ranks' inputs
    def check(numel, seed):
        xs = []
        for r in range(world):
            g = torch.Generator(device=dev).manual_seed(seed * 1000 + r)
            xs.append(torch.randn(numel, generator=g, device=dev, dtype=torch.float32).to(dtype))
        mine = xs[rank].clone()
        dist.all_reduce(mine)
        ref = torch.stack([x.float() for x in xs]).sum(0)
        return float((mine.float() - ref).norm() / ref.norm())

    check_sizes = [
        n for n in (4 * KIB // elem + 3, 1 * MIB // elem + 7, 64 * MIB // elem) if n <= max_numel
    ]
    errs = [check(n, i + 1) for i, n in enumerate(check_sizes)]
    sync()
    max_err = max(errs)
    tol = 1e-2 if dtype != torch.float32 else 1e-5
    log(f"correctness: rel L2 err {[f'{e:.2e}' for e in errs]} (tol {tol:g})")
    if not (max_err <= tol):  # NaN fails too
        raise SystemExit(f"all-reduce check failed: rel err {max_err}")

    def bcast_max(vals):
        t = torch.tensor(vals, dtype=torch.float64, device=dev)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return t.tolist()

    def gather3(vals):
        t = torch.tensor(vals, dtype=torch.float64, device=dev)
        out = [torch.empty_like(t) for _ in range(world)]
        dist.all_gather(out, t)
        return [o.tolist() for o in out]

    # ---- timing primitives
    class Timer:
        """Times a sequence of groups back to back: events on CUDA, perf_counter on CPU."""

        def __init__(self, n):
            self.n = n
            if use_cuda:
                self.ev = [
                    (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                    for _ in range(n)
                ]
            self.cpu = []

        def start(self, i):
            if use_cuda:
                self.ev[i][0].record()
            else:
                self._t = time.perf_counter()

        def stop(self, i):
            if use_cuda:
                self.ev[i][1].record()
            else:
                self.cpu.append(time.perf_counter() - self._t)

        def seconds(self):
            sync()
            if use_cuda:
                return [a.elapsed_time(b) / 1e3 for a, b in self.ev]
            return self.cpu

    def run_groups(x, n_groups, inner, body):
        tm = Timer(n_groups)
        for i in range(n_groups):
            x.copy_(pristine[: x.numel()])
            tm.start(i)
            body(inner)
            tm.stop(i)
        return [s / inner for s in tm.seconds()]

    def eager_body(x):
        def body(k):
            for _ in range(k):
                dist.all_reduce(x)

        return body

    rows_written = 0
    out_path = os.path.join(args.out_dir, args.csv_name or f"nccl_h200_x{world}_micro.csv")
    f = None
    wr = None
    if rank == 0:
        f = open(out_path, "w", newline="")
        wr = csv.DictWriter(f, fieldnames=COLUMNS)
        wr.writeheader()
        f.flush()
    as_of = _dt.date.today().isoformat()
    factor = 2 * (world - 1) / world
    summary = []

    def emit(S, per_op, inner, graph, pass_i, extra=""):
        nonlocal rows_written
        sv = sorted(per_op)
        med, p10, p90 = statistics.median(sv), quantile(sv, 0.1), quantile(sv, 0.9)
        allst = gather3([med, p10, p90])
        if rank != 0:
            return
        others = " ".join(f"rank{r} median {allst[r][0]:.4g}" for r in range(1, world))
        lab = ",".join(labels.get(S, []))
        notes = (
            f"pass {pass_i}; {'cuda graph replay' if graph else 'eager'}; in-place "
            f"all_reduce SUM; {len(sv)} groups x {inner} ops; rank0 stats, {others}; "
            f"link GPU0-GPU1 {link}; NCCL_NVLS_ENABLE={os.environ.get('NCCL_NVLS_ENABLE')}; "
            f"backend {backend}; check rel err {max_err:.1e}"
            + (f"; planner size {lab}" if lab else "")
            + (f"; {extra}" if extra else "")
        )
        algbw = S / med / 1e9
        wr.writerow(
            {
                "bench": "allreduce",
                "dtype": args.dtype,
                "n_gpus": world,
                "size_bytes": S,
                "median_s": f"{med:.6g}",
                "p10_s": f"{p10:.6g}",
                "p90_s": f"{p90:.6g}",
                "iters": len(sv) * inner,
                "algbw_gbs": f"{algbw:.2f}",
                "busbw_gbs": f"{algbw * factor:.2f}",
                "graph": int(graph),
                "hardware": args.hardware,
                "gpu_name": info["gpu"],
                "torch_version": info["torch"],
                "nccl_version": info["nccl"],
                "driver": info["driver"],
                "as_of": as_of,
                "command": command,
                "notes": notes,
            }
        )
        f.flush()
        rows_written += 1
        summary.append((pass_i, "graph" if graph else "eager", S, med, algbw * factor))

    graph_ok = use_cuda and not args.no_graph
    deadline = t0 + args.budget_s
    stopped = False
    for pass_i in range(1, args.passes + 1):
        for S in sizes:
            # budget check agreed by all ranks
            if bcast_max([1.0 if time.time() > deadline else 0.0])[0] > 0:
                log(f"budget {args.budget_s}s reached: stopping before pass {pass_i} S={S}")
                stopped = True
                break
            x = buf[: S // elem]
            # warm-up + estimate
            for _ in range(args.warmup):
                dist.all_reduce(x)
            sync()
            est = run_groups(x, 3, 10, eager_body(x))
            t_est = bcast_max([statistics.median(est)])[0]
            inner = pick_inner(t_est)
            n_groups = pick_samples(t_est, inner, args.target_s, args.min_groups, args.max_groups)
            per_op = run_groups(x, n_groups, inner, eager_body(x))
            emit(S, per_op, inner, False, pass_i)

            if graph_ok and args.graph_max_bytes >= S:
                ok, extra = 1.0, ""
                try:
                    s = torch.cuda.Stream()
                    s.wait_stream(torch.cuda.current_stream())
                    with torch.cuda.stream(s):
                        for _ in range(3):
                            dist.all_reduce(x)
                    torch.cuda.current_stream().wait_stream(s)
                    sync()
                    g = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(g):
                        for _ in range(inner):
                            dist.all_reduce(x)
                    sync()
                except Exception as e:  # capture failed: skip graph variant from now on
                    ok, extra = 0.0, f"{type(e).__name__}: {e}"
                ok_all = -bcast_max([-ok])[0]
                if ok_all < 1:
                    log(f"graph capture failed ({extra or 'on another rank'}); graph variant off")
                    graph_ok = False
                else:
                    for _ in range(3):
                        g.replay()
                    sync()
                    if pass_i == 1 and sizes[0] == S:
                        # graph correctness: replay of `inner` ops on fresh data, compare
                        x.copy_(pristine[: x.numel()])
                        g.replay()
                        # every rank's input differs; after `inner` in-place sums the value
                        # is (sum_r x_r) * world^(inner-1): compare in float64 (no overflow)
                        scale = float(world) ** (inner - 1)
                        mine = x.double() / scale
                        allx = [torch.empty_like(pristine[: x.numel()]) for _ in range(world)]
                        dist.all_gather(allx, pristine[: x.numel()].contiguous())
                        ref = torch.stack([a.double() for a in allx]).sum(0)
                        gerr = float((mine - ref).norm() / ref.norm())
                        log(f"graph correctness: rel L2 err {gerr:.2e}")
                        if not (gerr <= 5e-2):
                            raise SystemExit(f"graph all-reduce check failed: {gerr}")

                    def gbody(k, g=g):
                        g.replay()

                    per_op = run_groups(x, n_groups, inner, gbody)
                    emit(S, per_op, inner, True, pass_i)
                    del g, gbody
            if rank == 0 and summary:
                p, mode, SS, med, bus = summary[-1]
                log(f"pass {p} S={SS:>10d} done; last {mode} {med * 1e6:9.2f} us busbw {bus:7.1f}")
        if stopped:
            break

    if rank == 0:
        f.close()
        print("\npass mode       size_bytes     median_us   busbw_GB/s")
        for p, mode, S, med, bus in summary:
            print(f"{p:>4} {mode:<6} {S:>15d} {med * 1e6:12.2f} {bus:11.1f}")
        print(f"\nwrote {rows_written} rows to {out_path}")
        try:
            with open(out_path) as fh:
                rows = list(csv.DictReader(fh))
            if rows:
                print(fit_report(rows, args.link_bw, args.fit_min_bytes))
        except Exception as e:  # pragma: no cover
            print(f"fit failed: {e}")
    # Teardown guard. On the 2026-11-30 H200 x2 run every row was on disk 19 s in, but the
    # process then hung in barrier/destroy_process_group (after CUDA-graph capture of NCCL ops;
    # cause not established) until the 450 s shell timeout. The results are already written,
    # so exit if teardown stalls instead of holding the GPUs.
    sync()

    def _stalled():
        print(f"rank {rank}: teardown stalled > {args.teardown_s:g}s; exiting", flush=True)
        os._exit(0)

    guard = threading.Timer(args.teardown_s, _stalled)
    guard.daemon = True
    guard.start()
    dist.barrier()
    dist.destroy_process_group()
    guard.cancel()


def _spawn_entry(rank, world, args, command):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(args.port))
    worker(rank, world, args, command)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out-dir", default="bench_out")
    ap.add_argument(
        "--csv-name", default=None, help="default nccl_h200_x<N>_micro.csv for N processes"
    )
    ap.add_argument("--env-name", default="nccl_env.txt")
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "fp16", "fp32"])
    ap.add_argument("--min-bytes", type=int, default=8 * KIB)
    ap.add_argument("--max-bytes", type=int, default=1024 * MIB)
    ap.add_argument(
        "--hiddens",
        type=parse_int_list,
        default=[4096, 8192, 5120],
        help="hidden sizes for planner-shaped messages tokens*hidden*elem",
    )
    ap.add_argument("--tokens", type=parse_int_list, default=[1, 8, 64, 256, 1024, 4096, 8192])
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--target-s", type=float, default=0.25, help="timed seconds per size/mode")
    ap.add_argument("--min-groups", type=int, default=20)
    ap.add_argument("--max-groups", type=int, default=200)
    ap.add_argument("--passes", type=int, default=2, help="full sweeps (run-to-run spread)")
    ap.add_argument("--graph-max-bytes", type=int, default=64 * MIB)
    ap.add_argument("--no-graph", action="store_true")
    ap.add_argument("--budget-s", type=float, default=300.0, help="stop the sweep after this")
    ap.add_argument("--pg-timeout-s", type=float, default=180.0)
    ap.add_argument(
        "--teardown-s", type=float, default=20.0, help="force exit if teardown stalls this long"
    )
    ap.add_argument("--hardware", default="nvidia-h200-sxm")
    ap.add_argument("--link-bw", type=float, default=LINK_BW_DEFAULT, help="B/s, for the fit")
    ap.add_argument(
        "--nproc",
        type=int,
        default=0,
        help="without torchrun: spawn this many processes (0 = all GPUs)",
    )
    ap.add_argument("--port", type=int, default=29511)
    ap.add_argument("--cpu", action="store_true", help="gloo on CPU even if CUDA is there")
    ap.add_argument(
        "--dry-run",
        action="store_true",
        help="CPU-sized smoke test: <= 1 MiB, few groups, fp32 unless --dtype given",
    )
    ap.add_argument("--fit", metavar="CSV", help="only print the fit of an existing CSV")
    ap.add_argument(
        "--fit-min-bytes", type=int, default=4 * MIB, help="second fit on sizes >= this"
    )
    args = ap.parse_args(argv)

    if args.fit:
        with open(args.fit) as fh:
            rows = list(csv.DictReader(fh))
        print(fit_report(rows, args.link_bw, args.fit_min_bytes))
        return 0

    if args.dry_run:
        args.max_bytes = min(args.max_bytes, 1 * MIB)
        args.tokens = [t for t in args.tokens if t <= 64]
        args.target_s, args.min_groups, args.max_groups = 0.02, 3, 10
        args.warmup, args.passes = 2, 1

    under_torchrun = "RANK" in os.environ and "WORLD_SIZE" in os.environ
    script = "bench/nccl_allreduce.py"
    argstr = " ".join(shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))
    if under_torchrun:
        world = int(os.environ["WORLD_SIZE"])
        command = (
            f"NCCL_NVLS_ENABLE=0 torchrun --standalone --nproc_per_node={world} {script} {argstr}"
        )
        worker(int(os.environ["RANK"]), world, args, command.strip())
        return 0

    import torch
    import torch.multiprocessing as mp

    world = args.nproc or (torch.cuda.device_count() if torch.cuda.is_available() else 2)
    command = f"NCCL_NVLS_ENABLE=0 python3 {script} {argstr}".strip()
    mp.spawn(_spawn_entry, args=(world, args, command), nprocs=world, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
