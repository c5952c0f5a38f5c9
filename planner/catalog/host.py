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

A serving engine's own iteration log is the most direct host record of the machine that
served (:func:`serving_log_host`): the host time of every CUDA-graph decode iteration
(scheduling, building the inputs, launching the graph, book-keeping) and the launch time per
layer of every eager mixed iteration. Two machines that served the same traces give the ratios
that move the scheduler terms and the eager dispatch from one to the other
(:func:`serving_host_ratios`, applied by :func:`scale_host_terms`).

Only the reference engine's transfer uses this (``scripts/h100_transfer.py``): a public
engine's serving host is unknown, so no public transfer or fit reads these records.
"""

from __future__ import annotations

import csv
import gzip
import statistics
from collections.abc import Iterable, Mapping, Sequence
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


#: a run of a serving log: (model, trace scenario, rate as ``f"{rate:g}"``)
RunKey = tuple[str, str, str]
#: scenario labels of a repeat run -> the trace it replays (``chatb``: the chat trace again,
#: in the same process on the same machine; ``reference_h100_repeat_serving.csv``)
REPEAT_OF = {"chatb": "chat"}


def serving_log_host(
    path: Path, layers: Mapping[str, int]
) -> dict[RunKey, tuple[tuple[float, ...], tuple[float, ...]]]:
    """A serving machine's host record from its engine's iteration log (``bench/serve_ref.py``,
    columns as ``planner.calibration.iterations.ITERATION_COLUMNS``).

    Returns run (model, trace, rate) -> (host time of each CUDA-graph decode iteration,
    ``sched_s + prep_launch_s + book_s`` [s]; launch time per layer of each eager iteration,
    ``prep_launch_s / layers[model]`` [s]). The repeats of a trace (:data:`REPEAT_OF`) join
    its run. ``layers``: model -> decoder layers."""
    out: dict[RunKey, tuple[list[float], list[float]]] = {}
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", newline="") as f:
        for r in csv.DictReader(f):
            m = r["model"]
            if m not in layers:
                raise PlannerError(f"{path.name}: model {m!r} has no layer count")
            key = (m, REPEAT_OF.get(r["scenario"], r["scenario"]), f"{float(r['rate']):g}")
            graph, eager = out.setdefault(key, ([], []))
            if int(r["graph_batch"]) > 0 and int(r["n_prefill_seqs"]) == 0:
                graph.append(float(r["sched_s"]) + float(r["prep_launch_s"]) + float(r["book_s"]))
            elif int(r["graph_batch"]) == 0:
                eager.append(float(r["prep_launch_s"]) / layers[m])
    return {k: (tuple(g), tuple(e)) for k, (g, e) in out.items()}


def serving_host_ratios(
    target: Mapping[RunKey, tuple[Sequence[float], Sequence[float]]],
    donor: Mapping[RunKey, tuple[Sequence[float], Sequence[float]]],
    exclude: Iterable[RunKey] = (),
) -> tuple[float, float]:
    """(scheduler ratio, eager-dispatch ratio): host time on ``target`` / on ``donor`` for the
    same traces (records of :func:`serving_log_host`).

    Over the runs both machines served, less ``exclude`` (a run scored with the ratio: leave
    it out), the median host time of a graph decode iteration on ``target`` over the one on
    ``donor``, and likewise the median eager launch time per layer."""
    keys = sorted((set(target) & set(donor)) - set(exclude))
    if not keys:
        raise PlannerError("the two serving logs share no run (model, trace, rate)")
    ratios = []
    for i, what in ((0, "graph decode"), (1, "eager")):
        t = [v for k in keys for v in target[k][i]]
        d = [v for k in keys for v in donor[k][i]]
        if not t or not d:
            raise PlannerError(f"the shared runs have no {what} iteration on both machines")
        ratios.append(statistics.median(t) / statistics.median(d))
    return ratios[0], ratios[1]


def scale_host_terms(params, ratio: float, eager_ratio: float | None = None):
    """``params`` with the scheduler terms (per iteration, per sequence) times ``ratio`` and
    the eager dispatch per layer (serving and step) times ``eager_ratio`` (``ratio`` when
    None); both > 0; the GPU terms untouched."""
    eager = ratio if eager_ratio is None else eager_ratio
    for name, v in (("host ratio", ratio), ("eager ratio", eager)):
        if not v > 0:
            raise PlannerError(f"{name} must be > 0, got {v}")
    return params.with_(**{k: getattr(params, k) * (ratio if k.startswith("sched") else eager)
                           for k in HOST_TERMS})  # fmt: skip
