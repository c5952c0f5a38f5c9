"""The serving host's CPU: how fast one machine launches eager PyTorch ops, measured by a
micro-benchmark on that machine, and the ratio that moves the host terms of a fit (scheduler
time per iteration and per sequence, eager dispatch per layer) from the host they were fitted
on to another.

These terms belong to the machine's CPU (and its runtime), not to the GPU: the reference
engine's serving loop spends them in Python and in the CUDA launch path while the GPU waits.
A transfer between GPUs (``planner.catalog.bandwidth``) cannot know them; a host record can.

A record (:class:`HostLaunch`) holds one machine's host time per eager op [s] from
``data/benchmarks/host_launch_micro.csv`` (``bench`` rows of one machine: a chain of tiny
``torch.mm`` + add ops with no sync per op, a 1-element ``add_`` loop, ``nn.Linear`` + SiLU;
the host time per op is the wall time of enqueueing them, GPU far from busy). The ratio of two
machines is the median over the benches both ran, and its spread over them is the band (:func:`host_ratio`). A step sweep's host-bound eager prefill
rows give the same kind of record for the machine that ran it (:func:`step_sweep_host`).

Only the reference engine's transfer uses this (``scripts/h100_transfer.py``): a public
engine's serving host is unknown, so no public transfer or fit reads these records.
"""

from __future__ import annotations

import csv
import statistics
from datetime import date
from functools import lru_cache
from pathlib import Path

from pydantic import Field

from planner.catalog.catalog import DATA_DIR
from planner.catalog.records import Frozen
from planner.errors import PlannerError

HOST_FILE = DATA_DIR / "benchmarks" / "host_launch_micro.csv"
#: the bench whose host time per op defines a machine's launch time
LAUNCH_BENCH = "eager_chain"
#: the host terms of an efficiency record (all CPU time while the GPU waits)
HOST_TERMS = ("sched_overhead_s", "sched_seq_overhead_s", "serving_eager_layer_s", "eager_layer_s")


class HostLaunch(Frozen):
    """One measurement host: its host time per eager op, per bench [s]."""

    host: str = Field(description="the machine, as the record's `host` column names it")
    gpu: str = Field(description="hardware id of the GPU on it")
    cpu: str = Field(description="lscpu's model name")
    launch_s: dict[str, float] = Field(description="bench -> median host time per op [s]")
    source: str
    as_of: date
    command: str

    @property
    def launch_latency_s(self) -> float:
        """Host time per eager op of :data:`LAUNCH_BENCH` [s]."""
        if LAUNCH_BENCH not in self.launch_s:
            raise PlannerError(f"host {self.host!r}: no {LAUNCH_BENCH!r} row in {HOST_FILE.name}")
        return self.launch_s[LAUNCH_BENCH]


@lru_cache(maxsize=4)
def load_hosts(path: Path = HOST_FILE) -> dict[str, HostLaunch]:
    """host -> :class:`HostLaunch`, from the host micro-benchmark file ({} when absent)."""
    if not path.exists():
        return {}
    rows: dict[str, list[dict[str, str]]] = {}
    with path.open(encoding="utf-8") as f:
        for r in csv.DictReader(f):
            rows.setdefault(r["host"], []).append(r)
    out = {}
    for host, rs in rows.items():
        try:
            launch = {
                r["bench"]: float(r["host_s_per_op"]) for r in rs if r["bench"] != "python_loop"
            }
        except ValueError as e:
            raise PlannerError(f"{path.name}: host {host!r}: host_s_per_op is not a number") from e
        r0 = rs[0]
        out[host] = HostLaunch(host=host, gpu=r0["hardware"], cpu=r0["cpu"], launch_s=launch,
                               source=r0["source"], as_of=r0["as_of"], command=r0["command"])  # fmt: skip
    return out


def host_of_gpu(gpu: str, hosts: dict[str, HostLaunch] | None = None) -> HostLaunch | None:
    """The one measured host whose GPU is ``gpu`` (None when none is; an error when several
    are, since which one served is then unknown)."""
    hs = [h for h in (load_hosts() if hosts is None else hosts).values() if h.gpu == gpu]
    if len(hs) > 1:
        raise PlannerError(f"{HOST_FILE.name}: {len(hs)} hosts with GPU {gpu!r}; name one")
    return hs[0] if hs else None


def host_ratio(target: HostLaunch, donor: HostLaunch) -> tuple[float, float, float]:
    """Host time on ``target`` / on ``donor`` for the same eager work: (ratio, low, high).

    Over the benches both machines ran, the quotient of their host times per op: ratio =
    the median quotient, low / high = the least and largest (the spread between kinds of
    eager op, carried into a prediction's band)."""
    both = sorted(set(target.launch_s) & set(donor.launch_s))
    if not both:
        raise PlannerError(f"hosts {target.host!r} and {donor.host!r} share no bench")
    qs = sorted(target.launch_s[b] / donor.launch_s[b] for b in both)
    return statistics.median(qs), qs[0], qs[-1]


def step_sweep_host(path: Path, gpu: str, host: str, model: str = "llama-3.2-1b",
                    layers: int = 16, max_tokens: int = 512) -> HostLaunch | None:  # fmt: skip
    """A host record from the eager prefill rows of a ``bench/ref_engine.py`` step sweep:
    the rows of ``model`` (bf16, one prompt of at most ``max_tokens`` tokens, ``prefill_s``)
    are host-bound (Llama-3.2-1B's 2.5 GB of weights take about 0.6 ms on an H200, its 16
    layers' eager dispatch 3.5-4.2 ms), so each gives the host's dispatch time per layer
    [s] = time / ``layers`` (bench ``eager_prefill_<tokens>``). None when no such row."""
    launch, r0 = {}, None
    with path.open(encoding="utf-8") as f:
        for r in csv.DictReader(f):
            if (r["metric"] == "prefill_s" and r["model"] == model and r["precision"] == "bf16"
                    and r["hardware"] == gpu and float(r["isl"] or 0) <= max_tokens):  # fmt: skip
                launch[f"eager_prefill_{int(float(r['isl']))}"] = float(r["value"]) / layers
                r0 = r0 or r
    if r0 is None:
        return None
    return HostLaunch(host=host, gpu=gpu, cpu="unrecorded", launch_s=launch,
                      source=f"{path.name} ({r0['source']})", as_of=r0["as_of"],
                      command=r0["source_detail"])  # fmt: skip


def scale_host_terms(params, ratio: float):
    """``params`` with every host term (:data:`HOST_TERMS`) times ``ratio`` (> 0); the GPU
    terms untouched."""
    if not ratio > 0:
        raise PlannerError(f"host ratio must be > 0, got {ratio}")
    return params.with_(**{k: getattr(params, k) * ratio for k in HOST_TERMS})
