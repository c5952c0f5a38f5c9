"""Own, rent or buy tokens: the break-even utilisation, the API crossover volume, the
hosted-API price table, the buyer segments, and what recommend says about them.

Every number is derived by hand in a comment; recommend searches are kept to one GPU and
one framework (well under a second each)."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.catalog import RentalPrice, load_catalog
from planner.cli import main
from planner.cost import (
    ApiPrice,
    api_crossover,
    api_reference,
    apply_price_rows,
    blended_usd_per_mtok,
    breakeven_utilization,
    load_api_prices,
    load_ownership,
    load_segments,
    own_cost,
    quote_price,
    segment,
)
from planner.errors import PlannerError
from planner.recommend import recommend
from planner.workload import SLO, preset

CAT = load_catalog()
DATA = Path(__file__).resolve().parent.parent / "data"
DAY = dt.date(2026, 12, 6)  # the reading date of the rows below
CHAT = preset("chat", traffic={"peak_rps": 10.0, "mean_rps": 5.0})
SLO_CHAT = SLO.model_validate({"ttft": {"max_s": 2.0}, "tpot": {"max_s": 0.08}, "attainment": 0.99})


# --------------------------------------------------------------------------- own vs rent
def test_breakeven_utilization_by_hand():
    # own $1.20 per GPU-hour of the year = $10,512 a year (x 8,760 h); renting the busy
    # hours at $3.00: u x 3.00 x 8,760. Equal at u = 10,512 / 26,280 = 0.4.
    assert breakeven_utilization(1.20, 3.00) == pytest.approx(0.4)
    # owning dearer per hour than renting: renting wins at any utilisation (u* > 1)
    assert breakeven_utilization(5.0, 4.0) == pytest.approx(1.25)
    with pytest.raises(PlannerError, match="rent_usd_per_gpu_hour must be > 0"):
        breakeven_utilization(1.0, 0.0)
    with pytest.raises(PlannerError, match="own_usd_per_gpu_hour must be a number"):
        breakeven_utilization(True, 1.0)


@settings(max_examples=200, deadline=None)
@given(
    own=st.floats(0.05, 50.0),
    rent=st.floats(0.05, 50.0),
    u=st.floats(0.0, 1.0),
)
def test_owning_wins_exactly_above_the_breakeven(own, rent, u):
    """A year of owning (own x 8,760) against renting the busy hours (u x rent x 8,760)."""
    ustar = breakeven_utilization(own, rent)
    own_year, rent_year = own * 8760, u * rent * 8760
    if u > ustar * (1 + 1e-9):
        assert own_year < rent_year
    elif u < ustar * (1 - 1e-9):
        assert own_year > rent_year


def test_h200_owning_terms_and_breakeven_by_hand():
    """H200 from the catalog: purchase $35,000 (estimate), TDP 700 W, defaults of
    data/ownership.yaml: overhead 0.441, 5 years at 11 %, host factor 1.82, PUE 1.58,
    $0.1194/kWh, ops 10 % of capex a year, power at full use.

    capex = 35,000 x 1.441 = $50,435; crf = 0.11 / (1 - 1.11^-5) = 0.11 / 0.406549 = 0.270570
    capital = 50,435 x 0.270570 / 8,760 = $1.55779/h
    power = 0.7 kW x 1.82 x 1.58 x 0.1194 = $0.240342/h
    ops = 50,435 x 0.10 / 8,760 = $0.575742/h;  own = $2.37387/h
    on-demand rent: 6 trusted rows (RunPod pods $6.35 is low confidence, set aside), sorted
    4.50 4.54 4.59 5.00 6.305 7.912 -> median (4.59 + 5.00) / 2 = $4.795
    u* = 2.37387 / 4.795 = 0.49507"""
    d = load_ownership()
    assert (d.server_overhead_fraction.value, d.amortisation_years.value) == (0.441, 5)
    assert (d.cost_of_capital_per_year.value, d.pue.value) == (0.11, 1.58)
    oc = own_cost(CAT, "nvidia-h200-sxm")
    t = {x.name: x.usd_per_gpu_hour for x in oc.terms}
    assert oc.param("purchase_usd").value == 35000
    assert t["capital"] == pytest.approx(1.55779, rel=1e-5)
    assert t["power"] == pytest.approx(0.240342, rel=1e-5)
    assert t["ops"] == pytest.approx(0.575742, rel=1e-5)
    assert oc.usd_per_gpu_hour == pytest.approx(2.37387, rel=1e-5)
    rent = quote_price(CAT, "nvidia-h200-sxm", "on_demand", today=DAY)
    assert rent.usd_per_gpu_hour == pytest.approx(4.795) and rent.price_rows == 6
    assert breakeven_utilization(oc.usd_per_gpu_hour, rent.usd_per_gpu_hour) == pytest.approx(
        0.49507, rel=1e-4
    )


def test_every_gpu_with_a_purchase_row_has_an_owning_cost():
    for gid in sorted({p.gpu for p in CAT.purchase_prices}):
        q = quote_price(CAT, gid, "own")
        assert q.usd_per_gpu_hour > 0 and q.basis == "own", gid
    for gid in ("nvidia-h200-sxm", "nvidia-b200", "amd-mi300x"):  # added for issue 33
        assert any(p.gpu == gid for p in CAT.purchase_prices), gid


# --------------------------------------------------------------------------- API crossover
def test_blended_api_price_by_hand():
    # 800 input x $0.23 + 200 output x $0.40 = 184 + 80 = 264 per 1,000 tokens -> $0.264/M
    assert blended_usd_per_mtok(0.23, 0.40, 800, 200) == pytest.approx(0.264)
    with pytest.raises(PlannerError, match="must be > 0"):
        blended_usd_per_mtok(0.23, 0.40, 0, 0)


def test_api_crossover_by_hand():
    # a rented fleet: 4 GPUs x $0.60 x 730 h = $1,752 a month, no marginal cost;
    # API $0.03/M -> V* = 1,752 / 0.03 = 58,400 M tokens a month
    cx = api_crossover(4 * 0.60 * 730, 0.03)
    assert cx.mtok_per_month == pytest.approx(58400)
    # an owned fleet: F = $5,000, power $0.05 per M tokens, API $0.25/M:
    # V* = 5,000 / (0.25 - 0.05) = 25,000; within a capacity of 30,000 it stands
    cx = api_crossover(5000, 0.25, 0.05, capacity_mtok_per_month=30000)
    assert cx.mtok_per_month == pytest.approx(25000)
    # the fleet carries only 20,000 M a month: at full load it costs 5,000 / 20,000 + 0.05
    # = $0.30/M > $0.25/M, so the API is cheaper at every volume it can carry
    cx = api_crossover(5000, 0.25, 0.05, capacity_mtok_per_month=20000)
    assert cx.mtok_per_month is None and "even at full load ($0.3/M" in cx.reason
    # an API no dearer than the marginal cost: self-hosting never wins
    cx = api_crossover(5000, 0.05, 0.05)
    assert cx.mtok_per_month is None and "never wins" in cx.reason


@settings(max_examples=200, deadline=None)
@given(f=st.floats(1.0, 1e6), p=st.floats(0.01, 20.0), m=st.floats(0.0, 0.99))
def test_self_hosting_wins_exactly_above_the_crossover(f, p, m):
    m = m * p  # marginal below the API price
    v = api_crossover(f, p, m).mtok_per_month
    assert v is not None
    for vol, self_cheaper in ((v * 1.01, True), (v * 0.99, False)):
        assert (f + m * vol < p * vol) == self_cheaper


# --------------------------------------------------------------------------- API price table
def test_api_table_rows_are_catalog_models_with_provenance():
    rows = load_api_prices()
    models = {m.id for m in CAT.models}
    assert len(rows) >= 20
    for r in rows:
        assert r.model in models, r.model
        assert r.source.startswith("http") and r.as_of <= dt.date.today()
    covered = {r.model for r in rows}
    # the examples' models have an API row
    assert {"llama-3.1-8b", "llama-3.3-70b", "llama-3.1-70b", "gpt-oss-120b"} <= covered


def _api(provider, p_in, p_out, as_of=DAY, low=False):
    return ApiPrice(
        model="llama-3.1-8b", provider=provider, provider_model="m", usd_per_mtok_input=p_in,
        usd_per_mtok_output=p_out, source="test", as_of=as_of, low_confidence=low,
    )  # fmt: skip


def test_api_reference_is_the_cheapest_trusted_row():
    old = dt.date(2025, 8, 1)  # 492 days before DAY: older than 12 months
    rows = (
        _api("A", 0.05, 0.08, as_of=old),  # cheapest, but stale: set aside
        _api("B", 0.01, 0.01, low=True),  # low confidence: set aside
        _api("C", 0.10, 0.30),  # 900 in / 100 out: (90 + 30) / 1000 = $0.12/M
        _api("D", 0.20, 0.10),  # (180 + 10) / 1000 = $0.19/M
    )
    q = api_reference("llama-3.1-8b", 900, 100, prices=rows, today=DAY)
    assert q.provider == "C" and q.usd_per_mtok_blended == pytest.approx(0.12)
    assert q.rows == 4 and q.rows_set_aside == 2 and q.warnings == ()
    # only untrusted rows: every row counts, the cheapest is named with its warning
    q = api_reference("llama-3.1-8b", 900, 100, prices=rows[:2], today=DAY)
    assert q.provider == "B" and q.warnings == ("low confidence",)
    assert api_reference("llama-3.1-70b", 900, 100, prices=rows, today=DAY) is None


@pytest.mark.parametrize(
    "text, expect",
    [
        ("api_prices:\n  - {model: m, provider: P, provider_model: x, usd_per_mtok_input: '0.1',"
         " usd_per_mtok_output: 0.2, source: abc, as_of: 2026-01-01}\n",
         "api_prices[0] (m): field 'usd_per_mtok_input'"),
        ("api_prices:\n  - {model: m, provider: P, provider_model: x, usd_per_mtok_input: 0.1,"
         " usd_per_mtok_output: 0.2, source: abc, as_of: 2026-01-01, colour: red}\n",
         "unknown field"),
        ("api_prices: []\ncurrency: EUR\n", "unknown top-level key 'currency'"),
        ("prices: []\n", "a list 'api_prices'"),
    ],
)  # fmt: skip
def test_bad_api_price_files_name_the_field(tmp_path, text, expect):
    (tmp_path / "api_prices.yaml").write_text(text)
    with pytest.raises(PlannerError, match=re.escape(expect)):
        load_api_prices(tmp_path)


# --------------------------------------------------------------------------- segments
def test_segments_are_the_three_inferencex_buyers():
    segs = {s.id: s for s in load_segments()}
    assert set(segs) == {"hyperscaler-owned", "neocloud-owned", "rented-3y"}
    gpus = {a.id for a in CAT.accelerators}
    for s in segs.values():
        assert s.source.startswith("https://github.com/SemiAnalysisAI/InferenceX-app")
        assert {p.gpu for p in s.prices} <= gpus
        # B300 / GB300 are placeholders in the source (1.2 x B200 / GB200)
        assert {p.gpu for p in s.prices if p.low_confidence} == {"nvidia-b300", "nvidia-gb300"}
    # InferenceX: hyperscaler H100 $1.30, neocloud $1.69, 3-year rental $1.30 per GPU-hour
    assert [segs[k].price("nvidia-h100-sxm").usd_per_gpu_hour for k in sorted(segs)] == [
        1.30, 1.69, 1.30,
    ]  # fmt: skip
    assert segs["hyperscaler-owned"].life_years == 4
    with pytest.raises(PlannerError, match="unknown buyer segment 'cloud'.*hyperscaler-owned"):
        segment("cloud")


def test_bad_segment_files_name_the_field(tmp_path):
    seg = ("segments:\n  - {id: s, name: n, basis: lease, life_years: 4, source: abc,"
           " as_of: 2025-08-01, prices: [{gpu: nvidia-h100-sxm, usd_per_gpu_hour: 1.3}]}\n")  # fmt: skip
    (tmp_path / "segments.yaml").write_text(seg)
    with pytest.raises(PlannerError, match=re.escape("segments[0] (s): field 'basis'")):
        load_segments(tmp_path)
    (tmp_path / "segments.yaml").write_text("segments: []\ncurrency: EUR\n")
    with pytest.raises(PlannerError, match="unknown top-level key 'currency'"):
        load_segments(tmp_path)


# --------------------------------------------------------------------------- recommend
def _rec(cat=CAT, **kw):
    args = dict(catalog=cat, top_n=2, n_requests=400, frameworks=("vllm",), precisions=("fp8",),
                tps=(1,))  # fmt: skip
    args.update(kw)
    return recommend("llama-3.1-8b", CHAT, SLO_CHAT, **args)


def test_recommend_own_basis_reports_breakeven_and_crossover():
    res = _rec(gpus=("nvidia-h200-sxm", "amd-mi355x"), price_basis="own")
    w = res.recommendations[0]
    assert w["gpu"] == "nvidia-h200-sxm"
    # the formula on the option's own numbers: u* = own / rent
    assert w["own_usd_per_gpu_hour"] == pytest.approx(w["usd_per_gpu_hour"])
    assert w["breakeven_utilization"] == pytest.approx(
        w["own_usd_per_gpu_hour"] / w["rent_usd_per_gpu_hour"]
    )
    lo, hi = w["breakeven_utilization_low"], w["breakeven_utilization_high"]
    assert lo <= w["breakeven_utilization"] <= hi
    # the crossover: F / (p_api - m) with F = $/month less the owned power, m = power / capacity
    ref = w["api_reference"]
    assert ref["provider"] and ref["usd_per_mtok_blended"] > 0
    if w["api_crossover_mtok_per_month"] is not None:
        assert w["self_hosting_beats_api"] == (
            w["planned_mtok_per_month"] >= w["api_crossover_mtok_per_month"]
        )
    assert w["planned_mtok_per_month"] == pytest.approx(
        5.0 * 3600 * 730 * (CHAT.mean_input_tokens() + CHAT.mean_output_tokens()) / 1e6
    )
    # MI355X has no purchase price: it is named, with the reason, not dropped silently
    assert "no purchase price for amd-mi355x" in w["unpriced_gpus"]["amd-mi355x"]
    assert "could not be priced on the own basis" in res.why and "amd-mi355x" in res.why
    assert "owning beats renting above" in res.why


def test_rented_fleet_crossover_is_the_month_over_the_api_price():
    res = _rec(gpus=("nvidia-h100-sxm",), usd_per_gpu_hour={"nvidia-h100-sxm": 2.0})
    w = res.recommendations[0]
    # rented: no marginal cost, F = num_gpus x $2.00 x 730 h; V* = F / p_api
    f = w["num_gpus"] * 2.0 * 730
    v = f / w["api_reference"]["usd_per_mtok_blended"]
    if w["api_crossover_mtok_per_month"] is None:
        assert "never wins" in w["api_crossover_note"]
    else:
        assert w["api_crossover_mtok_per_month"] == pytest.approx(v)
        n, lo = w["num_gpus"], w["num_gpus_low"]
        assert w["api_crossover_mtok_per_month_low"] == pytest.approx(v * lo / n)


def test_a_low_confidence_row_never_decides_the_winner_silently():
    row = RentalPrice(
        gpu="nvidia-l40s", provider="Shaky", kind="on_demand", usd_per_gpu_hour=0.50,
        source="test row", as_of=DAY, low_confidence=True,
    )  # fmt: skip
    cat = apply_price_rows(CAT, (row,), (), "replace")
    res = _rec(cat, gpus=("nvidia-l40s", "nvidia-h100-sxm"))
    w = res.recommendations[0]
    assert w["gpu"] == "nvidia-l40s" and "low confidence" in w["price_warnings"]
    assert "not trusted silently (1 price row, low confidence)" in res.why
    assert (
        w["winner_with_trusted_prices"] is None
        or "nvidia-h100-sxm" in (w["winner_with_trusted_prices"])
    )


def test_cli_own_basis_json_and_segment_errors(capsys):
    code = main(["recommend", "--model", "llama-3.1-8b", "--preset", "chat", "--peak-rps", "5",
                 "--tpot-p99", "0.08", "--gpus", "h200", "--frameworks", "vllm", "--precisions", "fp8", "--tp", "1",
                 "--price-basis", "own", "--format", "json"])  # fmt: skip
    assert code == 0
    w = json.loads(capsys.readouterr().out)["recommendations"][0]
    for k in ("breakeven_utilization", "api_crossover_mtok_per_month", "api_reference",
              "own_usd_per_gpu_hour", "rent_usd_per_gpu_hour", "unpriced_gpus"):  # fmt: skip
        assert k in w, k
    code = main(["recommend", "examples/chat-8b.yaml", "--segment", "cloud"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "unknown buyer segment 'cloud'" in err
    code = main(["recommend", "examples/chat-8b.yaml", "--segment", "rented-3y",
                 "--price-basis", "spot"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "--segment sets the prices: drop --price-basis" in err


def test_prices_views(capsys):
    assert main(["prices", "--own", "--gpu", "h200", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["gpu"] == "nvidia-h200-sxm" and rows[0]["own_usd_per_gpu_hour"] > 0
    assert {t["name"] for t in rows[0]["terms"]} >= {
        "amortisation_years", "cost_of_capital_per_year", "pue", "server_overhead_fraction",
        "ops_fraction_of_capex_per_year", "electricity_usd_per_kwh", "host_power_factor",
    }  # fmt: skip
    assert main(["prices", "--coverage", "--format", "json"]) == 0
    cov = {r["gpu"]: r for r in json.loads(capsys.readouterr().out)}
    # Gaudi 2 has no public on-demand price; MI355X has 3 rows, 2 trusted (Vultr, OCI; TensorWave's
    # 'starting at' rate is low confidence)
    assert cov["intel-gaudi2"]["on_demand"] == "-" and cov["amd-mi355x"]["on_demand"] == "2/3"
    assert cov["nvidia-h200-sxm"]["purchase"] == "yes"
    assert main(["prices", "--api", "llama-3.3-70b", "--format", "json"]) == 0
    assert all(r["model"] == "llama-3.3-70b" for r in json.loads(capsys.readouterr().out))
    assert main(["prices", "--own", "--gpu", "l4"]) == 2
    assert "no purchase price for nvidia-l4" in capsys.readouterr().err


def test_a_losers_untrusted_price_is_named():
    # the L40S priced only by one low-confidence row, dear enough to lose to the H100
    row = RentalPrice(
        gpu="nvidia-l40s", provider="Shaky", kind="on_demand", usd_per_gpu_hour=9.0,
        source="test row", as_of=DAY, low_confidence=True,
    )  # fmt: skip
    cat = apply_price_rows(CAT, (row,), (), "replace")
    res = _rec(cat, gpus=("nvidia-l40s", "nvidia-h100-sxm"), top_n=3)
    gpus = [r["gpu"] for r in res.recommendations]
    assert gpus[0] == "nvidia-h100-sxm" and not res.recommendations[0]["price_warnings"]
    assert "nvidia-l40s" in gpus
    assert "among the other options shown: nvidia-l40s (1 price row, low confidence)" in res.why
