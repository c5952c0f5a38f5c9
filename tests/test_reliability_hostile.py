"""Hostile inputs, generated: every command ends in an answer or one clear line.

A generator draws hostile flag values for ``simulate``, ``capacity`` and ``recommend``,
scenarios, catalog rows of every kind (price rows included), iteration logs, calibration
profiles, and CSV files for ``predict -o``. Each case must

* end with exit 0, or exit 2 and one line ``planner: error: ...`` on stderr (never exit 1,
  an "internal error", a traceback, or "out of memory");
* finish within :data:`TIME_BOUND_S` (a SIGALRM stops it where Python code runs);
* stay within :data:`MEMORY_HEADROOM_BYTES` of extra address space (``RLIMIT_AS`` is lowered
  for the case; an allocation past it is a MemoryError, which the test reports);
* leave an existing output file and its folder untouched when it fails.

Two properties of the recommendation close the file: more traffic never needs fewer GPUs, and
a higher price for a GPU never ranks its options better on cost. The example counts keep
the file to about 40 s on two loaded cores; ``HYPOTHESIS_PROFILE``-style tuning is not
needed, each ``settings`` states its count.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import itertools
import json
import os
import resource
import signal
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.catalog import load_catalog
from planner.catalog.catalog import _validate_list
from planner.catalog.prices import PurchasePrice, RentalPrice
from planner.catalog.profile import load_profile
from planner.catalog.records import (
    Accelerator,
    Framework,
    KvPrecision,
    Precision,
)
from planner.cli.main import main
from planner.errors import PlannerError

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"
EX = ROOT / "examples"
CAT = load_catalog(DATA)
TMP = Path(tempfile.mkdtemp(prefix="planner-hostile-"))
TIME_BOUND_S = 60.0  # per case; the slowest valid case here takes ~5 s on a loaded machine
MEMORY_HEADROOM_BYTES = 3 * 1024**3


def _settings(n: int):
    # derandomized: CI runs the same cases every time (a failure is reproducible, never a
    # flake); a wider random search is `pytest --hypothesis-seed=N` with derandomize off
    return settings(
        max_examples=n,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
        derandomize=True,
    )


# ------------------------------------------------------------------------------ the bounds
def _vm_bytes() -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


@contextlib.contextmanager
def bounded(seconds: float = TIME_BOUND_S, headroom: int = MEMORY_HEADROOM_BYTES):
    """Run the body under a wall-time alarm and an address-space limit (POSIX only)."""

    def _timeout(signum, frame):
        raise TimeoutError(f"no answer within {seconds:g} s")

    vm = _vm_bytes()
    old_limit = resource.getrlimit(resource.RLIMIT_AS)
    old_handler = signal.signal(signal.SIGALRM, _timeout)
    if vm is not None:
        hard = old_limit[1]
        soft = vm + headroom if hard == resource.RLIM_INFINITY else min(vm + headroom, hard)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    signal.setitimer(signal.ITIMER_REAL, seconds)
    t0 = time.monotonic()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old_handler)
        resource.setrlimit(resource.RLIMIT_AS, old_limit)
    assert time.monotonic() - t0 < seconds


def run_cli(argv: list[str], seconds: float = TIME_BOUND_S) -> tuple[int, str, str]:
    """``planner argv`` in-process under :func:`bounded`; checks the one-line contract."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), bounded(seconds):
        rc = main([str(a) for a in argv])
    text = err.getvalue()
    lines = text.splitlines()
    assert rc in (0, 2), f"exit {rc} for {argv}: {text}"
    assert "Traceback" not in text and "internal error" not in text, (argv, text)
    assert "out of memory" not in text, f"memory bound broken by {argv}: {text}"
    assert all(ln.startswith("planner: ") or ln.startswith("fitted ") for ln in lines), text
    if rc == 2:
        assert lines and lines[-1].startswith("planner: error: "), text
        assert sum(ln.startswith("planner: error: ") for ln in lines) == 1, text
    return rc, out.getvalue(), text


pytestmark = pytest.mark.skipif(
    sys.platform == "win32" or not hasattr(signal, "setitimer"), reason="POSIX limits"
)


# ------------------------------------------------------------------------------ flag values
NUMBERS = ["0", "-1", "nan", "inf", "-inf", "1e300", "1e-300", "abc", "", " ", "2.5", "3"]
LENGTHS = [
    "0", "-3", "1e12", "2.5", "300", "lognormal:mean=800,p90=2000", "lognormal:mean=800,p90=1600",
    "lognormal:median=0,sigma=1", "normal:mean=-5,std=1", "normal:mean=500,std=1e300",
    "uniform:min_tokens=9,max_tokens=3", "uniform:min_tokens=1,max_tokens=1e15",
    "histogram:path=/nonexistent.csv", "trace", "kind:", "fixed:tokens=nan", "lognormal:",
    "lognormal:mean=800,p90=1600,max_tokens=0", "quantiles:p50=1",
]  # fmt: skip
IDS = ["", " ", "nope", "h100", "a" * 300, "\x1b[31mred", "amd-mi300x", "nvidia-l4"]
DEPLOY = {
    "--gpu": IDS,
    "--framework": ["trtllm", "llama.cpp", "", "nope", "pytorch-naive"],
    "--precision": ["fp4", "gguf-q4_0", "int4-awq", "x", ""],
    "--kv-precision": ["fp8", "nope", "fp4", ""],
    "--tp": ["0", "3", "-1", "1e9", "2.5", "8", "64"],
    "--pp": ["0", "2", "1000", "x"],
    "--max-num-seqs": ["0", "1", "1e12", "-4"],
    "--max-num-batched-tokens": ["0", "1", "1e15", "x"],
    "--seed": ["-1", "1e30", "x", "7"],
    "--peak-rps": NUMBERS + ["1e7", "0.001"],
    "--input-tokens": LENGTHS,
    "--output-tokens": LENGTHS,
    "--fit-percentile": ["0", "100", "101", "nan", "50"],
    "--calibration": ["/nonexistent.yaml", str(EX / "chat-8b.yaml"), "/dev/null"],
    "--data-dir": ["/nonexistent", str(EX)],
}
SIMULATE = {
    **DEPLOY,
    "--requests": ["0", "1", "-5", "1e12", "abc", "2", "3000001"],
    "--rate": NUMBERS,
    "--replicas": ["0", "-1", "1e9", "x", "2"],
    "--concurrency": ["0", "-1", "1e9", "x", "4"],
    "--warmup": ["-0.1", "1", "0.99", "nan", "0.5"],
    "--offline": None,
    "--static": None,
}
CAPACITY = {
    **DEPLOY,
    "--requests": ["0", "1", "-5", "1e12", "abc", "2"],
    "--headroom": ["-1", "0", "1e9", "nan", "0.5"],
    "--compare-tp": None,
}
RECOMMEND = {
    "--peak-rps": NUMBERS + ["1e7"],
    "--mean-rps": NUMBERS,
    "--input-tokens": LENGTHS,
    "--output-tokens": LENGTHS,
    "--ttft-p99": ["0", "1e-9", "nan", "1e9", "-1"],
    "--tpot-p99": ["0", "1e-9", "nan", "1e9", "x"],
    "--e2e-p99": ["0", "1e-300", "1e9"],
    "--attainment": ["0", "1", "1.5", "-1", "nan"],
    # latency has its own tests below (a larger option space is slow under hypothesis)
    "--objective": ["cost", "tokens-per-dollar", "gpus", "energy", "nope", ""],
    "--top": ["0", "-1", "1e9", "x", "3"],
    "--gpus": ["", ",", "nope", "h100,h100", "amd-mi300x", "h100," * 50],
    "--frameworks": ["trtllm", "", "nope", "vllm,trtllm"],
    "--precisions": ["fp4", "x", "", "bf16,fp8"],
    "--kv-precisions": ["fp8", "nope", ""],
    "--tp": ["0", "3", "1,2,3", "x", "", "1e9"],
    "--max-gpus": ["0", "-1", "1", "1e12"],
    "--max-gpus-per-replica": ["0", "1", "x"],
    "--min-weight-bits": ["0", "64", "nan", "-1", "16"],
    "--budget-usd-per-hour": ["1", "0", "-1", "1e300", "nan"],
    "--budget-usd-per-month": ["1", "0", "1e300"],
    "--headroom": ["-1", "0", "1e9", "nan"],
    "--price-basis": ["own", "spot", "nope", "serverless", "community"],
    "--usd-per-gpu-hour": ["1e-300", "0", "-1", "nan", "1e9", "h100=2", "x", "nvidia-h100-sxm=1e-300"],
    "--providers": ["No Such Cloud", "", ","],
    "--fit-percentile": ["0", "101", "nan"],
    "--seed": ["-1", "x"],
    "--preset": ["chat", "nope", ""],
}  # fmt: skip


@st.composite
def argv_for(draw, base: list[str], table: dict, max_flags: int = 3) -> list[str]:
    """``base`` plus 1..max_flags flags of ``table`` with drawn (mostly hostile) values."""
    argv = list(base)
    flags = draw(st.lists(st.sampled_from(sorted(table)), min_size=1, max_size=max_flags))
    for f in dict.fromkeys(flags):
        values = table[f]
        if values is None:
            argv.append(f)
        else:
            argv += [f, draw(st.sampled_from(values))]
    return argv


# the cheap valid starting points: a short simulation, one GPU type, a small option space
SIM_BASE = ["simulate", EX / "chat-8b.yaml", "--requests", "150"]
CAP_BASE = ["capacity", EX / "chat-8b.yaml", "--requests", "150", "--no-curve"]
REC_BASE = [
    "recommend", "--model", "llama-3.1-8b", "--peak-rps", "5", "--input-tokens", "500",
    "--output-tokens", "100", "--tpot-p99", "0.05", "--gpus", "h100,l40s", "--frameworks",
    "vllm", "--precisions", "bf16", "--tp", "1,2",
]  # fmt: skip


@_settings(25)
@given(argv_for(SIM_BASE, SIMULATE))
def test_simulate_flags(argv):
    run_cli(argv)


@_settings(12)
@given(argv_for(CAP_BASE, CAPACITY))
def test_capacity_flags(argv):
    run_cli(argv)


@_settings(25)
@given(argv_for(REC_BASE, RECOMMEND))
def test_recommend_flags(argv):
    run_cli(argv)


# ------------------------------------------------------------------------------ scenarios
HOSTILE = st.one_of(
    st.sampled_from([0, -1, 1e300, 1e-300, float("nan"), float("inf"), True, "", "x", None]),
    st.sampled_from([[], {}, [1, 2], {"kind": "trace"}, {"kind": "lognormal", "mean": 800, "p90": 2000}]),
    st.integers(-(2**40), 2**40),
)  # fmt: skip
TRACE = TMP / "trace.csv"
TRACE.write_text("timestamp,input_tokens,output_tokens\n0,500,50\n0.5,700,80\n2,300,20\n")
SCENARIO_KEYS = {
    ("model",): ["llama-3.1-8b", "nope", "qwen2.5-72b"],
    ("workload", "preset"): ["chat", "rag", "code", "batch", "nope"],
    ("workload", "offline"): [True, False, "yes"],
    ("workload", "traffic", "arrival"): ["poisson", "gamma", "uniform", "trace", "nope"],
    ("workload", "traffic", "trace_path"): [str(TRACE), "/nonexistent.csv", str(EX / "chat-8b.yaml")],
    ("workload", "traffic", "cv"): [2.0, 0, 1e-200],
    ("workload", "traffic", "mean_rps"): [1, 1e7, 1e-9],
    ("workload", "traffic", "daily_profile"): [[1] * 24, [0] * 24, [1] * 23],
    ("workload", "input_tokens"): [{"kind": "trace"}, {"kind": "fixed", "tokens": 10**9}],
    ("workload", "prefix", "shared_prefix_tokens"): [0, 10**9],
    ("workload", "prefix", "cache_hit_rate"): [0.99, 1.0],
    ("slo", "ttft", "max_s"): [1e-9, 0, 1e9],
    ("slo", "attainment"): [0, 1, 1.5],
    ("deployment", "gpu"): ["amd-mi300x", "nvidia-l4", "x"],
    ("deployment", "framework"): ["trtllm", "llama.cpp"],
    ("deployment", "tp"): [3, 0, 64],
    ("constraints", "headroom"): [-1, 0, 1e9],
}  # fmt: skip


@st.composite
def hostile_scenario(draw) -> dict:
    d = yaml.safe_load((EX / "chat-8b.yaml").read_text())
    for path in draw(st.lists(st.sampled_from(sorted(SCENARIO_KEYS)), min_size=1, max_size=3)):
        value = draw(st.one_of(st.sampled_from(SCENARIO_KEYS[path]), HOSTILE))
        node = d
        for k in path[:-1]:
            if not isinstance(node.get(k), dict):
                node[k] = {}
            node = node[k]
        node[path[-1]] = value
    return d


_count = itertools.count()


@_settings(25)
@given(hostile_scenario())
def test_scenarios_end_to_end(d):
    p = TMP / f"scenario{next(_count)}.yaml"
    p.write_text(yaml.safe_dump(d, allow_unicode=True))
    run_cli(["simulate", p, "--requests", "150"])


# ------------------------------------------------------------------------------ catalog rows
PRICES = yaml.safe_load((DATA / "prices.yaml").read_text())
ROWS = {
    (DATA / "hardware.yaml", "accelerators", Accelerator): None,
    (DATA / "precisions.yaml", "precisions", Precision): None,
    (DATA / "precisions.yaml", "kv_precisions", KvPrecision): None,
    (DATA / "frameworks.yaml", "frameworks", Framework): None,
    (DATA / "prices.yaml", "rental", RentalPrice): None,
    (DATA / "prices.yaml", "purchase", PurchasePrice): None,
}
for key in ROWS:
    ROWS[key] = yaml.safe_load(key[0].read_text())[key[1]]
ROW_VALUES = st.one_of(
    HOSTILE,
    st.sampled_from(["2999-01-01", "2024-02-30", [3, 1], [1, 2, 3], [True, 2], ["1", "2"], 1e9]),
)


@_settings(150)
@given(st.sampled_from(sorted(ROWS, key=str)), st.data())
def test_catalog_rows_of_every_kind(which, data):
    path, key, cls = which
    row = dict(data.draw(st.sampled_from(ROWS[which])))
    for field in data.draw(st.lists(st.sampled_from(sorted(cls.model_fields)), min_size=1, max_size=3)):  # fmt: skip
        row[field] = data.draw(ROW_VALUES)
    try:
        with bounded(10):
            _validate_list(path, key, cls, {key: [row]})
    except PlannerError as e:
        assert "\n" not in str(e) and str(e).startswith(f"{path.name}: {key}[0]")


# ------------------------------------------------------------------------------ iteration logs
with gzip.open(
    DATA / "benchmarks" / "serving_raw" / "reference_h200_iterations.csv.gz", "rt"
) as _f:
    LOG_LINES = [next(_f) for _ in range(6)]
LOG_CELLS = ["", "0", "-1", "nan", "inf", "1e300", "x", "pytorch", "vllm", "nvidia-h200-sxm"]


@_settings(60)
@given(st.data())
def test_iteration_logs(data):
    from planner.calibration.iterations import check_enough_iterations, read_iteration_log

    header, *rows = [ln.rstrip("\n").split(",") for ln in LOG_LINES]
    rows = data.draw(st.lists(st.sampled_from(rows), max_size=5))
    rows = [list(r) for r in rows]
    for r in rows:
        for _ in range(data.draw(st.integers(0, 3))):
            r[data.draw(st.integers(0, len(r) - 1))] = data.draw(st.sampled_from(LOG_CELLS))
    if data.draw(st.booleans()):
        header = header[: data.draw(st.integers(0, len(header)))]
    p = TMP / f"log{next(_count)}.csv"
    p.write_text("\n".join(",".join(r) for r in [header, *rows]) + "\n")
    try:
        with bounded(10):
            df = read_iteration_log(p)
            check_enough_iterations(df, "pytorch", "nvidia-h200-sxm")
    except PlannerError as e:
        assert "\n" not in str(e) and str(p) in str(e)
    else:
        raise AssertionError("at most 5 iterations must never be enough to fit six terms")


# ------------------------------------------------------------------------------ profiles, -o
PROFILE = yaml.safe_load((DATA / "calibration" / "profile.yaml").read_text())
PARAMS = sorted(PROFILE["nodes"][0]["params"])
PREDICT_ROWS = "\n".join((DATA / "benchmarks" / "pytorch_h200.csv").read_text().splitlines()[:4])


@st.composite
def hostile_profile(draw) -> str:
    d = json.loads(json.dumps(PROFILE))
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.sampled_from(["top", "node", "params"]))
        nodes_ok = (
            isinstance(d.get("nodes"), list) and d["nodes"] and isinstance(d["nodes"][0], dict)
        )
        if where == "top" or not nodes_ok or not isinstance(d["nodes"][0].get("params"), dict):
            d[draw(st.sampled_from(sorted(d)))] = draw(HOSTILE)
        elif where == "node":
            node = d["nodes"][0]
            node[draw(st.sampled_from(sorted(node)))] = draw(HOSTILE)
        else:
            d["nodes"][0]["params"][draw(st.sampled_from(PARAMS))] = draw(HOSTILE)
    if draw(st.booleans()):
        return yaml.safe_dump(d)
    return draw(st.sampled_from(["", "{", "- 1\n", "nodes: !!python/object:os.system x\n"]))


@_settings(20)
@given(hostile_profile(), st.sampled_from(["", "bad,row\n", "\n1,2,3\n"]))
def test_profiles_and_predict_output_untouched_on_error(profile_text, tail):
    n = next(_count)
    folder = TMP / f"predict{n}"
    folder.mkdir()
    prof = folder / "profile.yaml"
    prof.write_text(profile_text)
    rows = folder / "rows.csv"
    rows.write_text(PREDICT_ROWS + "\n" + tail)
    out = folder / "predicted.csv"
    out.write_text("old predictions\n")
    try:
        with bounded(10):
            load_profile(prof)
        loads = True
    except PlannerError as e:
        assert "\n" not in str(e) and str(prof) in str(e)
        loads = False
    before = sorted(os.listdir(folder))
    rc, _, err = run_cli(["predict", rows, "--calibration", prof, "-o", out])
    assert sorted(os.listdir(folder)) == before  # no stray temporary file
    if rc == 2:
        assert out.read_text() == "old predictions\n"
        assert not loads or "profile" not in err
    else:
        assert loads and out.read_text().startswith("id,")


# ------------------------------------------------------------------------------ properties
SLO_TPOT = {"tpot": {"max_s": 0.05, "percentile": "p99"}}
SMALL_SPACE = {
    "gpus": ("nvidia-h100-sxm", "nvidia-a100-80gb-sxm", "nvidia-l40s"),
    "frameworks": ("vllm",),
    "precisions": ("bf16",),
    "tps": (1, 2),
    "n_requests": 300,
    "top_n": 20,  # above the 12 options: nothing is cut from the list
}


def _recommend(rps: float, objective: str, prices: dict[str, float] | None = None):
    from planner.recommend.search import recommend
    from planner.workload import preset
    from planner.workload.slo import SLO

    w = preset("chat", traffic={"mean_rps": rps, "arrival": "poisson"})
    with bounded():
        r = recommend(
            "llama-3.1-8b",
            w,
            SLO.model_validate(SLO_TPOT),
            catalog=CAT,
            objective=objective,
            **({"usd_per_gpu_hour": prices} if prices else {}),
            **SMALL_SPACE,
        )
    return r.recommendations


def _key(rec: dict) -> tuple:
    return (rec["gpu"], rec["framework"], rec["precision"], rec["kv_precision"], rec["tp"])


@_settings(4)
@given(st.floats(0.5, 150), st.floats(1.2, 4))
def test_more_traffic_never_needs_fewer_gpus(rps, factor):
    low = _recommend(rps, "gpus")
    high = _recommend(rps * factor, "gpus")
    assert low and high
    assert min(r["num_gpus"] for r in high) >= min(r["num_gpus"] for r in low)
    fewer = {_key(r): r["num_gpus"] for r in low}
    for r in high:  # and option by option
        if _key(r) in fewer:
            assert r["num_gpus"] >= fewer[_key(r)], (_key(r), rps, factor)


BASE_PRICES = {"nvidia-h100-sxm": 2.0, "nvidia-a100-80gb-sxm": 1.5, "nvidia-l40s": 1.0}


@_settings(3)
@given(st.sampled_from(sorted(BASE_PRICES)), st.floats(0.2, 4), st.floats(1.05, 4))
def test_a_higher_price_never_ranks_an_option_better_on_cost(gpu, price, factor):
    cheap = _recommend(20, "cost", {**BASE_PRICES, gpu: price})
    dear = _recommend(20, "cost", {**BASE_PRICES, gpu: price * factor})
    pos_cheap = {_key(r): i for i, r in enumerate(cheap)}
    cost_cheap = {_key(r): r["usd_per_hour"] for r in cheap}
    for i, r in enumerate(dear):
        k = _key(r)
        if k[0] == gpu and k in pos_cheap:
            assert i >= pos_cheap[k], (k, price, factor)
            assert r["usd_per_hour"] >= cost_cheap[k]
        elif k in cost_cheap:  # other GPUs' costs do not move
            assert r["usd_per_hour"] == pytest.approx(cost_cheap[k])


# ------------------------------------------------------------------------------ issue 19's recommend cases
# The recommend-objective cases of issue 19 (fixed on the `recommend` branch, merged): each
# answers within a bound, on a small option space.
# small option spaces: ~3 s of CPU each once fixed; the bound catches a runaway search (the
# bug took minutes), not speed, which scripts/bench_recommend.py measures. 8 s failed under a
# load average of 7.5 on the 2-core machine, so it allows a loaded runner.
KNOWN_OPEN_BOUND_S = 30.0
MIXED = [EX / "mixed-70b.yaml", "--gpus", "h100,mi300x", "--frameworks", "vllm", "--precisions", "fp8"]  # fmt: skip
KNOWN_OPEN = [
    pytest.param(
        [
            "recommend",
            EX / "rag-70b.yaml",
            "--objective",
            "latency",
            "--top",
            "1",
            "--gpus",
            "h100,mi300x",
        ],
        id="latency on rag-70b (KeyError 0.5)",
    ),
    pytest.param(
        [
            "recommend",
            "--model",
            "llama-3.1-8b",
            "--peak-rps",
            "10",
            "--input-tokens",
            "500",
            "--output-tokens",
            "100",
            "--tpot-p99",
            "0.05",
            "--objective",
            "latency",
            "--gpus",
            "h100,l40s",
            "--top",
            "1",
        ],
        id="latency flags-only",
    ),  # fmt: skip
]


@pytest.mark.parametrize("argv", KNOWN_OPEN)
def test_recommend_objective_latency_answers(argv):
    run_cli(argv, seconds=KNOWN_OPEN_BOUND_S)


def test_request_class_objectives_change_the_answer():
    # with two GPU types to choose from, "cheapest", "fewest GPUs" and
    # "lowest latency" are not all the same fleet (every objective once printed the cost answer)
    outs = set()
    for obj in ("cost", "gpus", "latency"):
        argv = ["recommend", *MIXED, "--objective", obj, "--format", "json"]
        rc, out, _ = run_cli(argv, seconds=KNOWN_OPEN_BOUND_S)
        assert rc == 0
        outs.add(out)
    assert len(outs) > 1


def test_request_class_budget_is_kept():
    argv = ["recommend", *MIXED, "--budget-usd-per-hour", "1"]
    rc, out, err = run_cli(argv, seconds=KNOWN_OPEN_BOUND_S)
    assert rc == 2 and "budget" in err, out[:300]


def test_ten_million_rps_is_answered_within_the_bound():
    # the fleet search gallops down from its estimate: O(log k) simulations (a one-by-one
    # walk from a high estimate took one simulation per replica, ~640,000 here, and 11 GB)
    argv = [a for a in REC_BASE]
    argv[argv.index("--peak-rps") + 1] = "1e7"
    rc, out, _ = run_cli([*argv, "--format", "json"], seconds=30)
    assert rc == 0
    best = json.loads(out)["recommendations"][0]
    # the fleet carries the peak with the default 20% headroom: replicas x the simulated
    # per-replica rate = 1e7 x 1.2 req/s, with a logarithmic number of simulations
    assert best["replicas"] * best["max_rate_per_replica"] >= 1e7 * 1.2 * (1 - 1e-9)
    assert best["num_gpus"] == best["replicas"] * best["tp"] * best["pp"]
    assert best["simulations"] < 100
