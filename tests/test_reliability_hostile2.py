"""Hostile inputs of issue 33, generated: one rule per cause, and the variants of each.

Every case ends in an answer or in one line ``planner: error: ...`` (or a per-row
``reason``) that names the field, flag or variable at fault; :func:`run_cli` of
``test_reliability_hostile`` checks the one-line contract, the time and the memory bound.
The YAML parse cache's attacks are in ``test_parse_cache.py``.

Causes:

1. a value of the wrong type accepted as a price (``true``, ``"2.5"``);
2. a CSV price column given twice (the last one won);
3. an unknown top-level key in a price file (``currency: EUR`` read as USD);
4. scenario limits wider than the flag's (``max_total_gpus: 1e9``);
5. a flag that works only with another, ignored without a word;
6. a unit that contradicts the metric in ``predict`` (a TTFT in ``s`` answered 1000x off);
7. a date with a time of day in a dated record (an internal error);
8. an empty or wrong ``PLANNER_DATA_DIR`` not named;
9. a large honest YAML file called an alias bomb;
10. unbounded work: ``--latency-cost-cap``, ``--top``, ``predict`` rows that each need
    a simulation, a row with a huge concurrency among valid rows;
11. messages that mislead: a failing request class without its name and SLO, a heading that
    says "every one" above a few.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import itertools
import json
import math
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from test_reliability_hostile import _settings, bounded, run_cli

from planner import files
from planner.catalog.catalog import check_data_dir_env
from planner.catalog.prices import PurchasePrice, RentalPrice
from planner.cost.data import OwnershipParam, QualityRow
from planner.errors import PlannerError
from planner.recommend import limits
from planner.recommend.constraints import Constraints

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"
EX = ROOT / "examples"
_n = itertools.count()

#: a valid rental row of a price file (every test below changes one thing of it)
ROW = {
    "gpu": "h100",
    "provider": "Example Cloud",
    "kind": "on_demand",
    "usd_per_gpu_hour": 2.5,
    "source": "https://example.com/pricing",
    "as_of": dt.date(2026, 1, 2),
}
#: the cheapest valid recommend: one GPU, one framework, one precision
REC = [
    "recommend", "--model", "llama-3.1-8b", "--peak-rps", "5", "--input-tokens", "500",
    "--output-tokens", "100", "--tpot-p99", "0.05", "--gpus", "h100", "--frameworks", "vllm",
    "--precisions", "bf16", "--tp", "1",
]  # fmt: skip


def _file(tmp_path: Path, text: str, suffix: str = ".yaml") -> Path:
    p = tmp_path / f"f{next(_n)}{suffix}"
    p.write_text(text)
    return p


def _refused(argv: list, *names: str) -> str:
    """``planner argv`` ends in one error line that names every one of ``names``."""
    rc, _, err = run_cli(argv)
    assert rc == 2, (argv, err)
    for name in names:
        assert name in err, (name, err)
    return err


# ------------------------------------------------------------------ 1. the type of a price
NOT_A_NUMBER = [True, False, "2.5", "", "2,5", None, [2.5], {"usd": 2.5}]


@pytest.mark.parametrize("value", NOT_A_NUMBER, ids=repr)
@pytest.mark.parametrize("field", ["usd_per_gpu_hour", "usd_per_instance_hour"])
def test_a_price_that_is_not_a_number_is_refused_in_a_price_file(tmp_path, field, value):
    row = {**ROW, field: value}
    if field == "usd_per_instance_hour":
        row["gpus_per_instance"] = 1
    if value is None and field == "usd_per_instance_hour":
        row.pop("gpus_per_instance")  # an empty optional field is no price at all: valid
        run_cli(["prices", "--prices", _file(tmp_path, yaml.safe_dump({"rental": [row]}))])
        return
    p = _file(tmp_path, yaml.safe_dump({"rental": [row]}))
    _refused(["prices", "--prices", p], "rental[0]", field)


@pytest.mark.parametrize("value", [v for v in NOT_A_NUMBER if v is not None], ids=repr)
def test_a_price_that_is_not_a_number_is_refused_in_a_scenario(value):
    with pytest.raises(PlannerError, match="usd_per_gpu_hour"):
        from planner.recommend.constraints import constraints_of

        constraints_of(None, {"usd_per_gpu_hour": {"nvidia-h100-sxm": value}})


@pytest.mark.parametrize("value", NOT_A_NUMBER[:5], ids=repr)
def test_a_purchase_price_that_is_not_a_number_is_refused(tmp_path, value):
    row = {k: v for k, v in ROW.items() if k not in ("provider", "usd_per_gpu_hour")}
    row.update(kind="msrp", usd=value)
    p = _file(tmp_path, yaml.safe_dump({"purchase": [row]}))
    _refused(["prices", "--prices", p], "purchase[0]", "usd")


# ------------------------------------------------------------------ 2. a CSV column twice
CSV_COLUMNS = ["gpu", "provider", "kind", "usd_per_gpu_hour", "source", "as_of"]


@pytest.mark.parametrize("twice", CSV_COLUMNS)
def test_a_csv_price_column_given_twice_is_refused(tmp_path, twice):
    cols = [*CSV_COLUMNS, twice]
    cells = {**ROW, "as_of": "2026-01-02"}
    row = [str(cells[c]) for c in CSV_COLUMNS] + ["9.99" if twice == "usd_per_gpu_hour" else "x"]
    buf = io.StringIO()
    csv.writer(buf).writerows([cols, row])
    p = _file(tmp_path, buf.getvalue(), ".csv")
    _refused(["prices", "--prices", p], p.name, f"'{twice}'", "twice")


# ------------------------------------------------------------------ 3. unknown top-level keys
@pytest.mark.parametrize(
    "key, value",
    [("currency", "EUR"), ("Currency", "USD"), ("rental_prices", []), ("purchases", []),
     ("notes", "from our broker"), ("1", 1)],
)  # fmt: skip
def test_an_unknown_top_level_key_in_a_price_file_is_refused(tmp_path, key, value):
    p = _file(tmp_path, yaml.safe_dump({"rental": [ROW], key: value}))
    _refused(["prices", "--prices", p], p.name, f"'{key}'", "rental, purchase")


# ------------------------------------------------------------------ 4. one limit per constraint
#: Constraints field -> (recommend flag, the largest value the flag takes)
FLAG_OF = {
    "max_total_gpus": ("--max-gpus", limits.MAX_GPUS),
    "max_gpus_per_replica": ("--max-gpus-per-replica", limits.MAX_GPUS),
    "headroom": ("--headroom", limits.MAX_HEADROOM),
    "min_weight_bits": ("--min-weight-bits", limits.MAX_WEIGHT_BITS),
    "max_usd_per_hour": ("--budget-usd-per-hour", limits.MAX_USD_BUDGET),
    "max_usd_per_month": ("--budget-usd-per-month", limits.MAX_USD_BUDGET),
    "latency_cost_cap": ("--latency-cost-cap", limits.MAX_LATENCY_COST_CAP),
}


def _parse(argv: list[str]):
    from planner.cli.main import build_parser

    return build_parser().parse_args(argv)


@pytest.mark.parametrize("field", sorted(FLAG_OF))
def test_a_scenario_and_its_flag_take_the_same_values(field, capsys):
    flag, top = FLAG_OF[field]
    over = top * 10 if isinstance(top, int) else top * 1.5
    at = int(top) if isinstance(top, int) else top
    # the flag takes the limit and refuses above it
    assert getattr(_parse(["recommend", flag, str(at)]), flag[2:].replace("-", "_")) == at
    with pytest.raises(SystemExit):
        _parse(["recommend", flag, str(over)])
    assert flag in capsys.readouterr().err
    # the scenario's constraints alike, naming the field
    assert getattr(Constraints.model_validate({field: at}), field) == at
    with pytest.raises(ValueError, match=field):
        Constraints.model_validate({field: over})


def test_a_scenario_beyond_the_flag_limit_is_refused_by_the_command(tmp_path):
    d = yaml.safe_load((EX / "chat-8b.yaml").read_text())
    d["constraints"] = {"max_total_gpus": 10**9}
    p = _file(tmp_path, yaml.safe_dump(d))
    _refused(["recommend", p], "max_total_gpus")


def test_tp_sizes_share_the_limit():
    assert Constraints.model_validate({"tps": [limits.MAX_GPUS]}).tps == (limits.MAX_GPUS,)
    with pytest.raises(ValueError, match="TP sizes"):
        Constraints.model_validate({"tps": [limits.MAX_GPUS + 1]})


# ------------------------------------------------------------------ 5. flags that need another
SIM = ["simulate", EX / "chat-8b.yaml", "--requests", "50"]
PAIRS = [
    pytest.param([*REC, "--latency-cost-cap", "3"], "--latency-cost-cap", id="cap-without-latency"),
    pytest.param([*REC, "--objective", "gpus", "--latency-cost-cap", "1.5"], "--latency-cost-cap",
                 id="cap-with-gpus"),
    pytest.param([*REC, "--rejected", "all", "--show-rejected", "2"], "--show-rejected",
                 id="show-with-all"),
    pytest.param([*REC, "--format", "csv", "--show-rejected", "2"], "--show-rejected",
                 id="show-with-csv"),
    pytest.param([*REC, "--price-basis", "own", "--providers", "AWS"], "--providers",
                 id="providers-own"),
    pytest.param([*REC, "--prices-mode", "extend"], "--prices-mode", id="mode-without-prices"),
    pytest.param(["prices", "--prices-mode", "replace"], "--prices-mode", id="prices-mode-alone"),
    pytest.param([*SIM, "--replicas", "2", "--rate", "3"], "--replicas", id="replicas-rate"),
    pytest.param([*SIM, "--replicas", "2", "--concurrency", "3"], "--replicas",
                 id="replicas-concurrency"),
    pytest.param([*SIM, "--replicas", "2", "--offline"], "--replicas", id="replicas-offline"),
    pytest.param(["capacity", EX / "chat-8b.yaml", "--no-curve", "--format", "csv"], "--no-curve",
                 id="no-curve-csv"),
]  # fmt: skip


@pytest.mark.parametrize("argv, flag", PAIRS)
def test_a_flag_that_would_be_ignored_is_refused(argv, flag):
    _refused(argv, flag)


def test_the_flags_alone_still_answer():
    # the same flags where they take effect: an answer
    assert run_cli([*REC, "--objective", "latency", "--latency-cost-cap", "3"])[0] == 0
    assert run_cli([*REC, "--rejected", "all"])[0] == 0
    assert run_cli([*SIM, "--replicas", "2"])[0] == 0


# ------------------------------------------------------------------ 6. unit against metric
def _serving_row(metric: str, unit: str) -> dict:
    return {
        "id": f"u{next(_n)}", "hardware": "nvidia-h100-sxm", "model": "llama-3.1-8b",
        "precision": "bf16", "framework": "vllm", "mode": "rate", "isl": "500", "osl": "100",
        "request_rate": "2", "n_gpus": "1", "tp": "1", "metric": metric, "value": "50",
        "unit": unit, "source": "test", "as_of": "2026-01-02",
    }  # fmt: skip


def _predict_rows(rows: list[dict]) -> list[dict]:
    from planner.benchmarks.predict import Predictor

    with bounded(60):
        return Predictor().predict_rows(rows)


@given(
    st.sampled_from(["ttft_ms_p99", "tpot_ms_mean", "e2e_ms_median", "output_tok_s_total",
                     "req_s", "output_tok_s_per_gpu"]),
    st.sampled_from(["s", "us", "µs", "", "MS", "tok/s", "req/s", "tok/s/gpu", "ms"]),
)  # fmt: skip
@_settings(30)
def test_a_unit_that_contradicts_the_metric_is_a_reason(metric, unit):
    from planner.benchmarks.serving_rows import SERVING_METRICS

    (out,) = _predict_rows([_serving_row(metric, unit)])
    if unit == SERVING_METRICS[metric]:
        return  # the right unit: predicted or refused for another reason, not for its unit
    assert out["predicted"] == "" and "does not match metric" in out["reason"]
    assert metric in out["reason"] and SERVING_METRICS[metric] in out["reason"]


def test_the_right_unit_is_predicted():
    (ms,) = _predict_rows([_serving_row("ttft_ms_p99", "ms")])
    assert ms["reason"] == "" and ms["predicted"] > 0


# ------------------------------------------------------------------ 7. a date with a time of day
DATED = [
    (RentalPrice, {k: v for k, v in ROW.items() if k != "gpu"} | {"gpu": "nvidia-h100-sxm"}),
    (PurchasePrice, {"gpu": "nvidia-h100-sxm", "kind": "msrp", "usd": 25000.0,
                     "source": "https://example.com", "as_of": dt.date(2026, 1, 2)}),
    (QualityRow, {"models": ["llama-3.1-8b"], "precision": "fp8", "benchmark": "mmlu",
                  "recovery_pct": 99.0, "source": "https://example.com",
                  "as_of": dt.date(2026, 1, 2)}),
    (OwnershipParam, {"value": 4.0, "unit": "years", "kind": "sourced",
                      "source": "https://example.com", "as_of": dt.date(2026, 1, 2)}),
]  # fmt: skip


@given(
    st.sampled_from(range(len(DATED))),
    st.datetimes(dt.datetime(2000, 1, 1), dt.datetime(2026, 1, 1)),
    st.sampled_from([None, dt.timezone.utc, dt.timezone(dt.timedelta(hours=-7))]),
)
@_settings(40)
def test_a_datetime_in_a_dated_record_is_its_day(which, when, tz):
    cls, base = DATED[which]
    when = when.replace(tzinfo=tz)
    rec = cls.model_validate({**base, "as_of": when})
    assert rec.as_of == when.date() and type(rec.as_of) is dt.date


@pytest.mark.parametrize("cls, base", DATED, ids=lambda x: getattr(x, "__name__", ""))
def test_a_future_datetime_is_refused_naming_as_of(cls, base):
    later = dt.datetime.combine(dt.date.today() + dt.timedelta(days=30), dt.time(10))
    with pytest.raises(ValueError, match="as_of"):
        cls.model_validate({**base, "as_of": later})


def test_a_datetime_in_a_price_file_answers(tmp_path):
    p = _file(
        tmp_path,
        "rental:\n- "
        + json.dumps({**ROW, "as_of": "X"}).replace('"X"', "2026-01-01T10:00:00")
        + "\n",
    )
    rc, out, _ = run_cli(["prices", "--prices", p, "--format", "json"])
    assert rc == 0 and "2026-01-01" in out


# ------------------------------------------------------------------ 8. PLANNER_DATA_DIR
@pytest.mark.parametrize("value", ["", " ", "/nonexistent/planner-data", "FILE"])
def test_a_bad_planner_data_dir_is_named(value, tmp_path, monkeypatch):
    if value == "FILE":
        value = str(_file(tmp_path, "x"))
    monkeypatch.setenv("PLANNER_DATA_DIR", value)
    with pytest.raises(PlannerError, match="PLANNER_DATA_DIR"):
        check_data_dir_env()
    _refused(["gpus"], "PLANNER_DATA_DIR")


# ------------------------------------------------------------------ 9. aliases, not size
@given(st.integers(1, 40), st.integers(2, 6))
@_settings(20)
def test_only_what_aliases_add_counts(rows_k, fan):
    """With the limit at 1,000 values: a file of up to ~12,000 values written out parses;
    a file whose aliases add more than 1,000 is refused, however small its text."""
    limit = 1000
    old = files.YAML_MAX_NODES
    files.YAML_MAX_NODES = limit
    try:
        honest = "rows:\n" + "".join(f"- {{a: {i}, b: x, c: [1, 2]}}\n" for i in range(rows_k * 50))
        assert len(files.load_yaml(honest, "big.yaml")["rows"]) == rows_k * 50
        # a chain of aliases: each level holds `fan` copies of the one before
        levels = math.ceil(math.log(limit * 2, fan)) + 1
        bomb = "l0: &l0 [x]\n" + "".join(
            f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * fan)}]\n" for i in range(1, levels + 1)
        )
        with pytest.raises(PlannerError, match="aliases expand it"):
            files.load_yaml(bomb, "bomb.yaml")
    finally:
        files.YAML_MAX_NODES = old


# ------------------------------------------------------------------ 10. unbounded work
@pytest.mark.parametrize(
    "flag, value", [("--top", limits.MAX_TOP + 1), ("--latency-cost-cap", 1e6)]
)
def test_the_work_flags_are_capped(flag, value):
    _refused([*REC, "--objective", "latency", flag, value], flag)


def test_top_per_gpu_is_capped():
    _refused([*REC, "--per-gpu", "--top", limits.MAX_TOP_PER_GPU + 1], "--top", "--per-gpu")


def test_predict_simulates_at_most_its_budget_and_keeps_the_valid_rows(tmp_path):
    """A file whose rows each need their own simulation: the first N distinct setups are
    simulated, the others get a reason naming the limit; a row with a concurrency of 10^9
    among them ends in a number or a reason, never in the loss of the file."""
    rows = [_serving_row("ttft_ms_p99", "ms") for _ in range(6)]
    for i, r in enumerate(rows):
        r["notes"] = f"max_num_seqs={64 + i}"
    huge = {**_serving_row("ttft_ms_p99", "ms"), "mode": "concurrency", "concurrency": "1e9"}
    huge.pop("request_rate")
    rows.insert(1, huge)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=sorted({k for r in rows for k in r}))
    w.writeheader()
    w.writerows(rows)
    src = _file(tmp_path, buf.getvalue(), ".csv")
    out = tmp_path / "out.csv"
    rc, _, err = run_cli(["predict", src, "-o", out, "--max-simulations", "4"])
    assert rc == 0, err
    got = list(csv.DictReader(out.open()))
    assert len(got) == 7
    over = [r for r in got if "distinct serving setups" in r["reason"]]
    assert len(over) == 3 and all("--max-simulations" in r["reason"] for r in over)
    done = [r for r in got if r["predicted"]]
    assert len(done) >= 3  # the valid rows within the budget (the huge one may be a reason)
    assert got[1]["predicted"] or got[1]["reason"]


# ------------------------------------------------------------------ 11. messages
def test_a_failing_request_class_is_named_with_its_slo(tmp_path):
    text = (EX / "mixed-70b.yaml").read_text()
    text = text.replace("e2e: {max_s: 60, percentile: p99}", "e2e: {max_s: 0.5, percentile: p99}")
    p = _file(tmp_path, text)
    err = _refused(
        ["recommend", p, "--gpus", "h100", "--frameworks", "vllm", "--precisions", "fp8"],
        "class 'batch'",
        "E2E p99 <= 0.5 s",
    )
    assert "class 'chat'" not in err and "class 'rag'" not in err


def test_the_rejected_heading_counts_what_it_shows():
    rc, out, _ = run_cli(["recommend", EX / "chat-8b.yaml", "--show-rejected", "1"])
    assert rc == 0
    (head,) = [ln for ln in out.splitlines() if ln.startswith("rejected")]
    # 'rejected: N options by reason, M shown (...)': M rows follow, one per reason
    total = int(head.split()[1].replace(",", ""))
    shown = int(head.split(", ")[1].split()[0])
    body = out.split(head, 1)[1].split("\nassumptions:")[0]
    rows = [ln for ln in body.splitlines()[3:] if ln.strip()]
    assert len(rows) == shown < total
    assert "every one" not in head or "--rejected all" in head
