"""planner.cost: price choice, owning, fleet money, $/M tokens, energy, quantization quality.

Goldens are written so that a reader can check them by hand; the arithmetic is in the
comments. Synthetic price rows (on real catalog GPUs) keep the goldens independent of
data/prices.yaml; a few tests read the bundled data to check that it loads and is used.
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.catalog import PurchasePrice, RentalPrice
from planner.cost import (
    ENERGY_LABEL,
    HOURS_PER_MONTH,
    NOT_MEASURED,
    capital_recovery_factor,
    energy_per_token,
    fleet_cost,
    gpu_power_w,
    load_ownership,
    load_quality,
    own_cost_per_gpu_hour,
    price_options,
    quality_delta,
    quote_price,
    token_costs,
    usd_per_mtok,
)
from planner.errors import PlannerError

DATA_DIR = Path(__file__).resolve().parent.parent / "data"
D = dt.date.today() - dt.timedelta(days=30)  # recent: no row here is older than 12 months


def _rent(gpu: str, provider: str, kind: str, price=None, rng=None) -> RentalPrice:
    return RentalPrice(
        gpu=gpu,
        provider=provider,
        offering=f"{provider} {gpu}",
        kind=kind,
        usd_per_gpu_hour=price,
        usd_per_gpu_hour_range=rng,
        source=f"test row {provider}",
        as_of=D,
    )


@pytest.fixture(scope="module")
def cat(catalog):
    """The bundled catalog with synthetic, hand-checkable price rows."""
    rows = (
        _rent("nvidia-h100-sxm", "A", "on_demand", 2.00),
        _rent("nvidia-h100-sxm", "B", "on_demand", 3.00),
        _rent("nvidia-h100-sxm", "C", "on_demand", rng=(3.00, 5.00)),  # midpoint 4.00
        _rent("nvidia-h100-sxm", "D", "on_demand", 6.00),
        _rent("nvidia-h100-sxm", "E", "on_demand", 10.00),
        _rent("nvidia-h100-sxm", "B", "spot", 1.50),
        _rent("nvidia-h100-sxm", "F", "spot", 1.00),
        _rent("nvidia-a100-80gb-sxm", "A", "spot", 0.80),
        _rent("nvidia-a100-80gb-sxm", "B", "spot", 1.20),
    )
    purchase = (
        PurchasePrice(
            gpu="nvidia-h100-sxm", kind="estimate", usd_range=(25000, 30000), source="test", as_of=D
        ),
    )
    return catalog.model_copy(update={"rental_prices": rows, "purchase_prices": purchase})


# --------------------------------------------------------------------------- price choice
def test_median_of_five_rows_is_the_quote(cat):
    q = quote_price(cat, "nvidia-h100-sxm")
    # on-demand rows sorted: 2.00 (A), 3.00 (B), 4.00 (C, midpoint of 3-5), 6.00 (D), 10.00 (E)
    # 5 rows -> the 3rd: C at $4.00/h
    assert q.usd_per_gpu_hour == pytest.approx(4.00)
    assert q.provider == "C"
    assert q.usd_per_gpu_hour_range == (3.00, 5.00)
    assert q.rule == "median of 5 on-demand rows"
    assert q.source == "test row C" and q.as_of == D
    s = q.spread
    assert (
        s.n_rows,
        s.min_usd_per_gpu_hour,
        s.median_usd_per_gpu_hour,
        s.max_usd_per_gpu_hour,
    ) == (
        5,
        2.00,
        4.00,
        10.00,
    )


def test_even_count_takes_the_mean_of_the_two_middle_rows(cat):
    q = quote_price(cat, "nvidia-h100-sxm", basis="spot")
    # spot rows: 1.00 (F), 1.50 (B) -> median (1.00 + 1.50) / 2 = $1.25, no single row
    assert q.usd_per_gpu_hour == pytest.approx(1.25) and q.provider == "F / B"
    assert q.spread.median_usd_per_gpu_hour == pytest.approx(1.25)
    assert "mean of the two middle rows $1.00 and $1.50" in q.rule
    assert (q.price_rows, q.min_usd_per_gpu_hour, q.max_usd_per_gpu_hour) == (2, 1.00, 1.50)


def test_provider_choice_and_options_sorted(cat):
    q = quote_price(cat, "nvidia-h100-sxm", provider="d")  # case-insensitive
    assert q.usd_per_gpu_hour == 6.00 and q.provider == "D" and q.rule == "provider D"
    assert q.spread.n_rows == 5  # the spread still covers every on-demand row
    opts = price_options(cat, "h100")  # alias of nvidia-h100-sxm
    assert [o.usd_per_gpu_hour for o in opts] == [2.0, 3.0, 4.0, 6.0, 10.0]


def test_user_override_keeps_the_spread(cat):
    q = quote_price(cat, "nvidia-h100-sxm", usd_per_gpu_hour=2.5)
    assert q.usd_per_gpu_hour == 2.5 and q.source == "user override" and q.rule == "user override"
    assert q.spread.n_rows == 5
    # a GPU without any price row still takes an override
    q2 = quote_price(cat, "nvidia-l4", usd_per_gpu_hour=0.7)
    assert q2.usd_per_gpu_hour == 0.7 and q2.spread is None


def test_missing_kind_names_what_exists(cat):
    with pytest.raises(PlannerError) as e:
        quote_price(cat, "nvidia-a100-80gb-sxm")
    msg = str(e.value)
    assert "no on-demand price for nvidia-a100-80gb-sxm in data/prices.yaml" in msg
    assert "kinds available: spot (2 rows)" in msg and "--usd-per-gpu-hour" in msg
    with pytest.raises(PlannerError, match="kinds available: none"):
        quote_price(cat, "nvidia-l4", basis="reserved")


def test_unknown_provider_lists_valid_providers(cat):
    with pytest.raises(PlannerError) as e:
        quote_price(cat, "nvidia-h100-sxm", provider="Nobody")
    assert "providers with on-demand prices for nvidia-h100-sxm: A, B, C, D, E" in str(e.value)


def test_unknown_gpu_lists_valid_ids(cat):
    with pytest.raises(PlannerError) as e:
        quote_price(cat, "nvidia-h1000")
    assert "unknown gpu 'nvidia-h1000'" in str(e.value) and "nvidia-h100-sxm" in str(e.value)


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), "cheap", True])
def test_price_must_be_a_positive_number(cat, bad):
    with pytest.raises(PlannerError, match="usd_per_gpu_hour"):
        quote_price(cat, "nvidia-h100-sxm", usd_per_gpu_hour=bad)
    with pytest.raises(PlannerError, match="usd_per_gpu_hour"):
        fleet_cost(4, bad)


def test_unknown_basis(cat):
    with pytest.raises(PlannerError, match="unknown price basis 'hourly'"):
        quote_price(cat, "nvidia-h100-sxm", basis="hourly")
    with pytest.raises(PlannerError, match="own_cost_per_gpu_hour"):
        price_options(cat, "nvidia-h100-sxm", basis="own")


def test_bundled_prices_quote_every_priced_gpu(catalog):
    """Every GPU with an on-demand row in data/prices.yaml gets a quote with source and date."""
    gpus = {p.gpu for p in catalog.rental_prices if p.kind == "on_demand"}
    assert len(gpus) >= 10
    for g in gpus:
        q = quote_price(catalog, g)
        assert q.usd_per_gpu_hour > 0 and q.source and q.as_of is not None
        assert q.spread.min_usd_per_gpu_hour <= q.usd_per_gpu_hour <= q.spread.max_usd_per_gpu_hour


# --------------------------------------------------------------------------- fleet money
def test_fleet_cost_golden():
    f = fleet_cost(4, 2.50)
    # 4 GPUs × $2.50/h = $10/h; × 24 h = $240/day; × 730 h/month = $7,300/month
    assert f.usd_per_hour == pytest.approx(10.0)
    assert f.usd_per_day == pytest.approx(240.0)
    assert f.usd_per_month == pytest.approx(7300.0)
    assert HOURS_PER_MONTH == 730


def test_fleet_cost_autoscaled_golden():
    f = fleet_cost(4, 2.50, gpu_hours_per_day=60)
    # 60 GPU-h/day × $2.50 = $150/day; × 730/24 days/month = $4,562.50/month
    assert f.usd_per_day_autoscaled == pytest.approx(150.0)
    assert f.usd_per_month_autoscaled == pytest.approx(4562.5)
    with pytest.raises(PlannerError, match="exceeds 4 GPUs × 24 h = 96"):
        fleet_cost(4, 2.50, gpu_hours_per_day=97)


def test_fleet_cost_from_quote_names_the_source(cat):
    f = fleet_cost(8, quote_price(cat, "nvidia-h100-sxm"))
    # 8 × $4.00/h = $32/h; × 730 = $23,360/month
    assert f.usd_per_month == pytest.approx(23360.0)
    assert "test row C" in f.price_source and "median of 5" in f.price_source


@pytest.mark.parametrize("n", [0, -2, 2.5, True])
def test_fleet_needs_whole_gpus(n):
    with pytest.raises(PlannerError, match="num_gpus"):
        fleet_cost(n, 2.0)


def test_usd_per_mtok_golden():
    # $10/h ÷ (1,000 tok/s × 3,600 s/h) × 1e6 = $2.777.../M tokens
    assert usd_per_mtok(10.0, 1000.0) == pytest.approx(10 / 3.6e6 * 1e6)
    assert usd_per_mtok(10.0, 1000.0) == pytest.approx(2.7777778)
    # half the hours busy: the same tokens cost twice as much -> $5.555.../M
    assert usd_per_mtok(10.0, 1000.0, utilisation=0.5) == pytest.approx(5.5555556)
    with pytest.raises(PlannerError, match="tokens_per_s must be > 0"):
        usd_per_mtok(10.0, 0)
    with pytest.raises(PlannerError, match="utilisation"):
        usd_per_mtok(10.0, 100, utilisation=1.5)


def test_token_costs_golden():
    f = fleet_cost(4, 2.50, gpu_hours_per_day=60)
    t = token_costs(
        f,
        output_tokens_per_s_full_load=2000,
        total_tokens_per_s_full_load=12000,
        output_tokens_per_day=50e6,
        total_tokens_per_day=300e6,
    )
    # full load: $10/h ÷ (2,000 tok/s × 3,600) × 1e6 = $1.3889/M output; ÷ 12,000 tok/s -> $0.23148/M total
    assert t.usd_per_mtok_output_full_load == pytest.approx(1.3888889)
    assert t.usd_per_mtok_total_full_load == pytest.approx(0.2314815)
    # planned (autoscaled): $150/day ÷ 50M output tokens × 1e6 = $3.00/M; ÷ 300M total = $0.50/M
    assert t.usd_per_mtok_output_planned == pytest.approx(3.0)
    assert t.usd_per_mtok_total_planned == pytest.approx(0.5)
    assert t.planned_cost_basis == "autoscaled"
    # fixed fleet: $240/day ÷ 50M = $4.80/M output
    fixed = token_costs(fleet_cost(4, 2.50), output_tokens_per_day=50e6)
    assert fixed.usd_per_mtok_output_planned == pytest.approx(4.8)
    assert fixed.planned_cost_basis == "fixed" and fixed.usd_per_mtok_total_planned is None


# --------------------------------------------------------------------------- owning
def test_own_cost_golden(cat):
    gpu = cat.gpu("nvidia-h100-sxm")  # TDP 700 W
    o = own_cost_per_gpu_hour(
        gpu,
        30000.0,
        amortisation_years=5,
        cost_of_capital_per_year=0.0,
        server_overhead_fraction=0.5,
        host_power_factor=1.0,
        pue=1.5,
        electricity_usd_per_kwh=0.10,
        ops_fraction_of_capex_per_year=0.10,
        utilisation=1.0,
        idle_power_fraction=0.0,
    )
    t = {x.name: x.usd_per_gpu_hour for x in o.terms}
    # capex = $30,000 × 1.5 = $45,000; capital = 45,000 / (5 × 8,760 h) = $1.02740/h
    assert t["capital"] == pytest.approx(45000 / 43800)
    # power = 0.700 kW × 1.0 × 1.0 × PUE 1.5 × $0.10/kWh = $0.105/h
    assert t["power"] == pytest.approx(0.105)
    # ops = 45,000 × 0.10 / 8,760 h = $0.51370/h
    assert t["ops"] == pytest.approx(4500 / 8760)
    assert o.usd_per_gpu_hour == pytest.approx(45000 / 43800 + 0.105 + 4500 / 8760)
    assert gpu.tdp_w == 700
    assert o.param("purchase_usd").kind == "user override"
    assert o.param("tdp_w").kind == "catalog"
    assert o.assumptions == ()  # every default was overridden


def test_own_cost_defaults_are_labelled(cat):
    d = load_ownership()
    row = cat.purchase_prices[0]  # $25,000-30,000 -> midpoint $27,500
    o = own_cost_per_gpu_hour(cat.gpu("nvidia-h100-sxm"), row)
    assert o.param("purchase_usd").value == 27500 and o.purchase_usd_range == (25000, 30000)
    assert o.param("pue").kind == "sourced" and o.param("pue").value == d.pue.value
    assert set(o.assumptions) == {
        n for n in type(d).model_fields if getattr(d, n).kind == "assumption"
    }
    # capital with the defaults: 27,500 × (1 + overhead) × r / (1 − (1 + r)^−years) / 8,760
    r, n = d.cost_of_capital_per_year.value, d.amortisation_years.value
    capital = 27500 * (1 + d.server_overhead_fraction.value) * r / (1 - (1 + r) ** -n) / 8760
    assert o.terms[0].usd_per_gpu_hour == pytest.approx(capital)


def test_cost_of_capital_annuity(cat):
    """Capital recovered as an annuity: r = 10 %, n = 2 years, capex $21,000.

    crf = 0.1 / (1 − 1.1^−2) = 0.1 / (1 − 1/1.21) = 0.1 × 1.21 / 0.21 = 0.576190...; two
    payments of 21,000 × 0.576190 = $12,100 each repay $21,000 with interest (12,100 / 1.1
    + 12,100 / 1.21 = 11,000 + 10,000 = 21,000). Per hour: 12,100 / 8,760 = $1.38128/h."""
    assert capital_recovery_factor(0.1, 2) == pytest.approx(1.21 * 0.1 / 0.21)
    assert capital_recovery_factor(0.0, 4) == 0.25  # straight line
    o = own_cost_per_gpu_hour(
        cat.gpu("nvidia-h100-sxm"), 21000.0, amortisation_years=2, cost_of_capital_per_year=0.1,
        server_overhead_fraction=0.0, ops_fraction_of_capex_per_year=0.0,
    )  # fmt: skip
    assert o.terms[0].usd_per_gpu_hour == pytest.approx(12100 / 8760)
    assert o.param("cost_of_capital_per_year").kind == "user override"
    with pytest.raises(PlannerError, match="cost_of_capital_per_year must be in"):
        own_cost_per_gpu_hour(cat.gpu("nvidia-h100-sxm"), 21000.0, cost_of_capital_per_year=1.5)


def test_own_quote_via_quote_price(cat):
    q = quote_price(cat, "nvidia-h100-sxm", basis="own", pue=1.2)
    o = own_cost_per_gpu_hour(cat.gpu("nvidia-h100-sxm"), cat.purchase_prices[0], pue=1.2)
    assert q.basis == "own" and q.usd_per_gpu_hour == pytest.approx(o.usd_per_gpu_hour)
    assert "capital" in q.notes and "power" in q.notes
    with pytest.raises(PlannerError, match="no purchase price for nvidia-l4.*--prices FILE"):
        quote_price(cat, "nvidia-l4", basis="own")
    q2 = quote_price(cat, "nvidia-l4", basis="own", purchase_usd=2500)
    assert q2.usd_per_gpu_hour > 0
    with pytest.raises(PlannerError, match="unknown ownership parameters: colour"):
        quote_price(cat, "nvidia-h100-sxm", basis="own", colour=1.0)


def test_own_cost_missing_tdp_says_what_is_missing(catalog):
    gpu = next(a for a in catalog.accelerators if a.tdp_w is None)
    with pytest.raises(PlannerError, match=f"{gpu.id}: no TDP .*tdp_w"):
        own_cost_per_gpu_hour(gpu, 10000.0)
    assert own_cost_per_gpu_hour(gpu, 10000.0, tdp_w=500).usd_per_gpu_hour > 0


@pytest.mark.parametrize(
    "kw",
    [
        {"pue": 0.9},
        {"utilisation": 1.2},
        {"amortisation_years": 0},
        {"electricity_usd_per_kwh": -0.1},
    ],
)
def test_own_cost_rejects_bad_overrides(cat, kw):
    with pytest.raises(PlannerError):
        own_cost_per_gpu_hour(cat.gpu("nvidia-h100-sxm"), 30000.0, **kw)
    with pytest.raises(PlannerError, match="purchase_usd must be > 0"):
        own_cost_per_gpu_hour(cat.gpu("nvidia-h100-sxm"), 0.0)


# --------------------------------------------------------------------------- energy
def test_energy_golden():
    e = energy_per_token(700, 0.5, 1000, pue=1.5)
    # P = 700 W × 0.5 = 350 W; × PUE 1.5 = 525 W; ÷ 1,000 tok/s = 0.525 J/token
    assert e.power_w_per_gpu == pytest.approx(350)
    assert e.joules_per_token == pytest.approx(0.525)
    # kWh/day = 525 W × 24 h / 1000 = 12.6 kWh/day per GPU
    assert e.kwh_per_day == pytest.approx(12.6)
    assert e.label == ENERGY_LABEL == "estimate from TDP × utilisation"
    # with idle draw 10%: P = 700 × (0.1 + 0.9 × 0.5) = 385 W
    assert gpu_power_w(700, 0.5, idle_power_fraction=0.1) == pytest.approx(385)
    # 8 GPUs, host factor 2: 350 W × 2 × 8 × 24 / 1000 = 134.4 kWh/day
    assert energy_per_token(
        700, 0.5, 1000, host_power_factor=2, num_gpus=8
    ).kwh_per_day == pytest.approx(134.4)


def test_energy_bad_input():
    with pytest.raises(PlannerError, match="no TDP"):
        energy_per_token(None, 0.5, 100)
    with pytest.raises(PlannerError, match="tokens_per_s_per_gpu"):
        energy_per_token(700, 0.5, 0)
    with pytest.raises(PlannerError, match="utilisation"):
        energy_per_token(700, 1.5, 100)
    with pytest.raises(PlannerError, match="pue"):
        energy_per_token(700, 0.5, 100, pue=0.8)


# --------------------------------------------------------------------------- properties
money = st.floats(min_value=0.01, max_value=1000, allow_nan=False)
rate = st.floats(min_value=0.1, max_value=1e6, allow_nan=False)
frac = st.floats(min_value=0.01, max_value=1.0, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(p1=money, p2=money, n=st.integers(1, 64), tps=rate)
def test_higher_price_never_lowers_usd_per_mtok(p1, p2, n, tps):
    lo, hi = sorted((p1, p2))
    a = usd_per_mtok(fleet_cost(n, lo).usd_per_hour, tps)
    b = usd_per_mtok(fleet_cost(n, hi).usd_per_hour, tps)
    assert b >= a


@settings(max_examples=200, deadline=None)
@given(cost=money, tps=rate, u1=frac, u2=frac)
def test_more_utilisation_never_raises_usd_per_mtok(cost, tps, u1, u2):
    lo, hi = sorted((u1, u2))
    assert usd_per_mtok(cost, tps, utilisation=hi) <= usd_per_mtok(cost, tps, utilisation=lo) * (
        1 + 1e-12
    )


@settings(max_examples=200, deadline=None)
@given(
    tdp=st.floats(min_value=1, max_value=2000),
    u=st.floats(min_value=0, max_value=1),
    tps=rate,
    idle=st.floats(min_value=0, max_value=1),
    pue=st.floats(min_value=1, max_value=3),
)
def test_energy_per_token_is_non_negative(tdp, u, tps, idle, pue):
    e = energy_per_token(tdp, u, tps, pue=pue, idle_power_fraction=idle)
    assert e.joules_per_token >= 0 and e.kwh_per_day >= 0
    assert e.power_w_per_gpu <= tdp * (1 + 1e-12)


@settings(max_examples=100, deadline=None)
@given(e1=st.floats(0, 1), e2=st.floats(0, 1))
def test_own_cost_monotone_in_electricity(cat, e1, e2):
    lo, hi = sorted((e1, e2))
    g = cat.gpu("nvidia-h100-sxm")
    a = own_cost_per_gpu_hour(g, 30000.0, electricity_usd_per_kwh=lo).usd_per_gpu_hour
    b = own_cost_per_gpu_hour(g, 30000.0, electricity_usd_per_kwh=hi).usd_per_gpu_hour
    assert b >= a


# --------------------------------------------------------------------------- quality
def test_quality_hit_with_scores(catalog):
    r = quality_delta("llama-3.1-405b", "int4-gptq", cat=catalog)
    assert r.status == "measured" and len(r.rows) == 1
    row = r.rows[0]
    # 86.01 − 86.63 = −0.62 points; 86.01 / 86.63 = 99.28% -> −0.72%
    assert row.delta_points == pytest.approx(-0.62)
    assert row.delta_pct == pytest.approx(86.01 / 86.63 * 100 - 100)
    assert row.benchmark == "OpenLLM v1" and row.source.startswith("huggingface.co/") and row.as_of


def test_quality_hit_with_recovery_only_and_alias(catalog):
    r = quality_delta("llama-3.1-8b", "w8a8", cat=catalog)  # w8a8 is an alias of int8
    assert r.precision == "int8" and r.measured
    benches = {row.benchmark: row for row in r.rows}
    assert benches["OpenLLM v1"].delta_points is None
    assert benches["OpenLLM v1"].delta_pct == pytest.approx(0.3)  # 100.3% recovery
    assert r.worst_delta_pct == pytest.approx(0.3)


def test_quality_miss_and_baseline(catalog):
    r = quality_delta("llama-3.1-70b", "awq", cat=catalog)
    assert r.status == "not_measured" and r.rows == () and NOT_MEASURED in r.message
    assert r.precision == "int4-awq"
    b = quality_delta("llama-3.1-70b", "bf16", cat=catalog)
    assert b.status == "baseline"
    # a row never spreads to another size: 70B int4-gptq is measured, 8B int4-gptq is not
    assert quality_delta("llama-3.1-70b", "int4-gptq").status == "measured"
    assert quality_delta("llama-3.1-8b", "int4-gptq").status == "not_measured"
    with pytest.raises(PlannerError, match="unknown model"):
        quality_delta("llama-9-1t", "fp8", cat=catalog)


def test_quality_data_ids_exist_in_catalog(catalog):
    rows = load_quality().rows
    assert len(rows) >= 10
    prec = {p.id for p in catalog.precisions}
    models = {m.id for m in catalog.models}
    for r in rows:
        assert r.precision in prec and r.baseline_precision in prec
        for m in r.models:
            # deepseek-r1 is named on purpose (not in the catalog; see the row's notes)
            assert m in models or m == "deepseek-r1", m


def test_ownership_data_provenance():
    d = load_ownership()
    for name in type(d).model_fields:
        p = getattr(d, name)
        assert p.kind in ("sourced", "derived", "assumption")
        if p.kind == "assumption":
            assert p.notes
        else:
            assert p.source and p.as_of
    assert d.pue.value == 1.58 and d.amortisation_years.value == 5


# --------------------------------------------------------------------------- loaders
def _copy_data(tmp_path: Path, sub: str) -> Path:
    d = tmp_path / sub
    d.mkdir()
    for f in ("ownership.yaml", "quality.yaml"):
        shutil.copy(DATA_DIR / f, d / f)
    return d


def _write(d: Path, name: str, raw) -> Path:
    (d / name).write_text(yaml.safe_dump(raw, sort_keys=False))
    return d


def test_quality_loader_names_the_field(tmp_path):
    d = _copy_data(tmp_path, "a")
    raw = yaml.safe_load((d / "quality.yaml").read_text())
    raw["quality"][2]["recovery_pct"] = -5
    _write(d, "quality.yaml", raw)
    with pytest.raises(
        PlannerError,
        match=r"quality.yaml: quality\[2\] \(llama-3.1-405b fp8\): field 'recovery_pct'",
    ):
        load_quality(d)


def test_quality_loader_rejects_unknown_field_and_missing_scores(tmp_path):
    raw = yaml.safe_load((DATA_DIR / "quality.yaml").read_text())
    raw["quality"][0]["delta"] = 1
    d = _write(_copy_data(tmp_path, "a"), "quality.yaml", raw)
    with pytest.raises(PlannerError, match=r"field 'delta': unknown field \(allowed: .*benchmark"):
        load_quality(d)
    raw["quality"][0].pop("delta")
    raw["quality"][0].pop("quantized_score")
    d = _write(_copy_data(tmp_path, "b"), "quality.yaml", raw)
    with pytest.raises(
        PlannerError, match="give baseline_score and quantized_score, or recovery_pct"
    ):
        load_quality(d)
    raw = yaml.safe_load((DATA_DIR / "quality.yaml").read_text())
    raw["quality"][0]["recovery_pct"] = 90.0  # 84.29 / 84.40 is 99.87%
    d = _write(_copy_data(tmp_path, "c"), "quality.yaml", raw)
    with pytest.raises(PlannerError, match="recovery_pct 90.0 disagrees with the scores"):
        load_quality(d)


def test_ownership_loader_errors(tmp_path):
    raw = yaml.safe_load((DATA_DIR / "ownership.yaml").read_text())
    raw["ownership"]["pue"]["source"] = None
    d = _write(_copy_data(tmp_path, "a"), "ownership.yaml", raw)
    with pytest.raises(
        PlannerError, match="ownership.pue: field '<entry>': .*sourced value needs a source"
    ):
        load_ownership(d)
    raw = yaml.safe_load((DATA_DIR / "ownership.yaml").read_text())
    raw["ownership"]["pue"]["value"] = 0.5
    d = _write(_copy_data(tmp_path, "b"), "ownership.yaml", raw)
    with pytest.raises(PlannerError, match="pue.value must be >= 1"):
        load_ownership(d)
    raw["ownership"]["colour"] = raw["ownership"].pop("pue")
    d = _write(_copy_data(tmp_path, "c"), "ownership.yaml", raw)
    with pytest.raises(PlannerError, match="ownership.colour: unknown parameter"):
        load_ownership(d)
    raw = yaml.safe_load((DATA_DIR / "ownership.yaml").read_text())
    del raw["ownership"]["pue"]
    d = _write(_copy_data(tmp_path, "d"), "ownership.yaml", raw)
    with pytest.raises(PlannerError, match="missing parameters: pue"):
        load_ownership(d)
    with pytest.raises(PlannerError, match="catalog file not found"):
        load_ownership(tmp_path / "nowhere")
    d = _copy_data(tmp_path, "e")
    (d / "quality.yaml").write_text("quality: [unclosed\n")
    with pytest.raises(PlannerError, match="not valid YAML"):
        load_quality(d)


def test_edited_file_is_reread(tmp_path):
    d = _copy_data(tmp_path, "a")
    assert load_ownership(d).pue.value == 1.58
    raw = yaml.safe_load((d / "ownership.yaml").read_text())
    raw["ownership"]["pue"]["value"] = 1.234
    _write(d, "ownership.yaml", raw)
    assert load_ownership(d).pue.value == 1.234
