"""Prices a buyer can trust (issue 17) and hostile price inputs (issue 19).

The quote is the true median of the trusted rows (the mean of the two middle rows for an
even count), the same number in ``planner prices`` and ``recommend``; low-confidence rows
and rows older than 12 months are set aside; a buyer's own rows replace or extend the
catalog for one run; every bad price row ends in one line on stderr with exit 2.
Hand-derived values have their arithmetic in the comments.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import shutil
from pathlib import Path

import pytest
from conftest import DATA_DIR
from hypothesis import given
from hypothesis import strategies as st

from planner.catalog import RentalPrice, load_catalog
from planner.cli.main import main
from planner.cost import (
    apply_price_rows,
    check_providers,
    load_price_file,
    median_usd_per_gpu_hour,
    quote_price,
)
from planner.errors import PlannerError

CAT = load_catalog()
TODAY = dt.date(2026, 12, 1)


def _rent(provider, price, *, as_of=dt.date(2026, 6, 1), low=False, kind="on_demand"):
    return RentalPrice(
        gpu="nvidia-h200-sxm",
        provider=provider,
        kind=kind,
        usd_per_gpu_hour=price,
        source=f"test row {provider}",
        as_of=as_of,
        low_confidence=low,
    )


def _with(rows, cat=CAT):
    """The bundled catalog with the H200's rental rows replaced by ``rows``."""
    return apply_price_rows(cat, tuple(rows), (), "replace")


# --------------------------------------------------------------------------- the median
def test_median_odd_and_even_by_hand():
    assert median_usd_per_gpu_hour([3.0, 1.0, 2.0]) == 2.0  # sorted 1, 2, 3 -> the 2nd
    assert median_usd_per_gpu_hour([1.5, 6.0, 1.85, 6.0]) == pytest.approx(3.925)
    # sorted 1.5, 1.85, 6.0, 6.0 -> (1.85 + 6.0) / 2 = 3.925 (the old MI300X quote was 1.85)
    with pytest.raises(PlannerError):
        median_usd_per_gpu_hour([])


@given(st.lists(st.floats(0.01, 200), min_size=1, max_size=30), st.randoms())
def test_median_is_order_free_and_between_min_and_max(prices, rnd):
    m = median_usd_per_gpu_hour(prices)
    shuffled = list(prices)
    rnd.shuffle(shuffled)
    assert median_usd_per_gpu_hour(shuffled) == m
    assert min(prices) <= m <= max(prices)


def test_mi300x_quote_is_the_median_of_its_on_demand_rows():
    q = quote_price(CAT, "mi300x", today=TODAY)
    # on-demand rows: TensorWave 1.50, Vultr 1.85, DigitalOcean 1.99, Azure 6.00, Oracle 6.00
    # 5 rows, none low-confidence or older than 12 months -> the 3rd: $1.99
    prices = sorted(r.usd_per_gpu_hour for r in CAT.rental_prices
                    if r.gpu == "amd-mi300x" and r.kind == "on_demand")  # fmt: skip
    assert prices == [1.50, 1.85, 1.99, 6.00, 6.00]
    assert q.usd_per_gpu_hour == 1.99 and q.median_usd_per_gpu_hour == 1.99
    assert (q.price_rows, q.min_usd_per_gpu_hour, q.max_usd_per_gpu_hour) == (5, 1.50, 6.00)
    assert q.provider == "DigitalOcean" and q.warnings == ()


def test_prices_command_quotes_what_recommend_uses(capsys):
    assert main(["prices", "--gpu", "mi300x", "--quote", "--format", "json"]) == 0
    quotes = {r["kind"]: r for r in json.loads(capsys.readouterr().out)}
    for kind, row in quotes.items():
        q = quote_price(CAT, "amd-mi300x", kind)
        assert row["median"] == q.usd_per_gpu_hour  # one function behind both
        assert row["price_rows"] == q.price_rows


# --------------------------------------------------------------------------- rows set aside
def test_low_confidence_row_is_set_aside_while_others_remain():
    cat = _with([_rent("A", 4.0), _rent("B", 5.0), _rent("C", 6.0), _rent("X", 20.0, low=True)])
    q = quote_price(cat, "h200", today=TODAY)
    # trusted 4, 5, 6 -> $5.00; with X it would be (5 + 6) / 2 = $5.50
    assert q.usd_per_gpu_hour == 5.0 and q.price_rows == 3 and q.rows_set_aside == 1
    assert "1 row set aside (1 low confidence)" in q.rule
    # the spread covers the rows the quote uses: its median is the quote wherever it is shown
    assert (q.spread.n_rows, q.spread.median_usd_per_gpu_hour, q.spread.max_usd_per_gpu_hour) == (
        3,
        5.0,
        6.0,
    )


def test_a_single_low_confidence_row_is_never_silent():
    q = quote_price(_with([_rent("X", 6.35, low=True)]), "h200", today=TODAY)
    assert q.usd_per_gpu_hour == 6.35
    assert q.warnings == ("1 price row", "low confidence")
    assert "[1 price row, low confidence]" in q.rule


def test_rows_older_than_12_months_age_against_an_injected_today():
    old = _rent("Old", 10.0, as_of=dt.date(2025, 1, 1))
    cat = _with([old, _rent("New", 4.0, as_of=dt.date(2025, 12, 1))])
    # on 2025-06-01 both rows are younger than 365 days: (4 + 10) / 2 = $7.00
    assert quote_price(cat, "h200", today=dt.date(2025, 6, 1)).usd_per_gpu_hour == 7.0
    # on 2026-06-01 the 2025-01-01 row is 516 days old: set aside -> $4.00
    q = quote_price(cat, "h200", today=dt.date(2026, 6, 1))
    assert q.usd_per_gpu_hour == 4.0 and q.rows_set_aside == 1
    assert "1 row set aside (1 older than 12 months)" in q.rule
    only_old = quote_price(_with([old]), "h200", today=dt.date(2026, 6, 1))
    assert only_old.warnings == ("1 price row", "older than 12 months")


def test_major_gpus_have_three_trusted_on_demand_rows():
    for gpu in ("nvidia-h100-sxm", "nvidia-h200-sxm", "nvidia-b200", "amd-mi300x",
                "nvidia-a100-80gb-sxm", "nvidia-l40s", "nvidia-l4"):  # fmt: skip
        q = quote_price(CAT, gpu, today=TODAY)
        assert q.price_rows >= 3 and not q.warnings, (gpu, q.rule)
    # MI325X: TensorWave $1.95, Vultr $2.00 (8-GPU VM), DigitalOcean $3.80 -> median $2.00
    q = quote_price(CAT, "amd-mi325x", today=TODAY)
    assert (q.price_rows, q.usd_per_gpu_hour, q.warnings) == (3, 2.0, ())
    # GB300: one sourced row (OCI $18.00); the quote says so instead of hiding it
    assert "1 price row" in quote_price(CAT, "nvidia-gb300", today=TODAY).warnings


def test_blackwell_and_mi355x_quotes_are_the_median_of_their_rows():
    # B300 on-demand, sorted: Hyperstack 7.40, Nebius 7.85, RunPod Secure 7.89, OCI 15.00,
    # AWS p6-b300.48xlarge 142.416 / 8 = 17.802 -> the middle of 5 rows is $7.89
    b300 = quote_price(CAT, "nvidia-b300", today=TODAY)
    assert (b300.price_rows, b300.usd_per_gpu_hour, b300.max_usd_per_gpu_hour) == (5, 7.89, 17.802)
    # GB200: Spheron 9.08 / 2 = 4.54, CoreWeave 42.00 / 4 = 10.50, OCI 16.00 -> $10.50;
    # Azure's $27.04 is low confidence (not re-pulled by its source) and set aside
    gb200 = quote_price(CAT, "nvidia-gb200", today=TODAY)
    assert (gb200.price_rows, gb200.usd_per_gpu_hour, gb200.rows_set_aside) == (3, 10.5, 1)
    # MI355X: Vultr 20.72 / 8 = 2.59 and OCI 8.60 -> mean of the two = (2.59 + 8.60) / 2 = 5.595;
    # TensorWave's 'starting at' $2.95 (tier not stated) is set aside
    mi355x = quote_price(CAT, "amd-mi355x", today=TODAY)
    assert (mi355x.price_rows, mi355x.rows_set_aside) == (2, 1)
    assert mi355x.usd_per_gpu_hour == pytest.approx(5.595)
    # TPU v6e: Google's $2.70 per chip-hour (one chip = one catalog device) dates from 2024-12-12,
    # so on 2026-12-01 it is the only row and the quote carries both warnings
    tpu = quote_price(CAT, "google-tpu-v6e", today=TODAY)
    assert tpu.usd_per_gpu_hour == 2.70
    assert tpu.warnings == ("1 price row", "older than 12 months")


def test_aws_h100_is_the_post_june_2025_rate():
    aws = [r for r in CAT.rental_prices
           if r.gpu == "nvidia-h100-sxm" and r.provider == "AWS" and r.kind == "on_demand"]  # fmt: skip
    # p5.48xlarge $55.04/h after the June 2025 cut (was $98.32): $55.04 / 8 = $6.88 per GPU-hour
    assert [(r.usd_per_instance_hour, r.gpus_per_instance, r.usd_per_gpu_hour) for r in aws] == [
        (55.04, 8, 6.88)
    ]


# --------------------------------------------------------------------------- --prices FILE
def _write(tmp_path, name, text) -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_price_file_replaces_the_gpus_kind_and_keeps_the_rest(tmp_path, capsys):
    f = _write(tmp_path, "ours.yaml", "rental:\n  - {gpu: h200, provider: Our deal, kind: "
               "on_demand, usd_per_gpu_hour: 3.10, source: contract 42, as_of: 2026-11-01}\n")  # fmt: skip
    rental, purchase = load_price_file(f, CAT)
    cat = apply_price_rows(CAT, rental, purchase, "replace")
    q = quote_price(cat, "h200", today=TODAY)
    assert (q.usd_per_gpu_hour, q.provider, q.warnings) == (3.10, "Our deal", ("1 price row",))
    assert quote_price(cat, "h200", "spot") == quote_price(CAT, "h200", "spot")  # untouched
    ext = apply_price_rows(CAT, rental, purchase, "extend")
    n = quote_price(CAT, "h200", today=TODAY).price_rows
    assert quote_price(ext, "h200", today=TODAY).price_rows == n + 1
    assert main(["prices", "--gpu", "h200", "--prices", f, "--quote", "--format", "json"]) == 0
    on_demand = [r for r in json.loads(capsys.readouterr().out) if r["kind"] == "on_demand"]
    assert on_demand[0]["median"] == 3.10


def test_price_file_csv(tmp_path):
    f = _write(tmp_path, "ours.csv",
               "gpu,provider,kind,usd_per_instance_hour,gpus_per_instance,usd_per_gpu_hour,"
               "source,as_of,low_confidence\n"
               "mi300x,Neo,on_demand,16.0,8,2.0,quote 7,2026-10-01,false\n")  # fmt: skip
    (row,), () = load_price_file(f, CAT)
    # $16.00 / 8 GPUs = $2.00 per GPU-hour, as the row says
    assert (row.gpu, row.usd_per_gpu_hour, row.gpus_per_instance) == ("amd-mi300x", 2.0, 8)


def test_the_prices_table_as_csv_reads_back_as_a_price_file(tmp_path, capsys):
    # `planner prices --format csv` writes derived columns (flags) and purchase rows (usd,
    # usd_range); read back with --prices it must give the catalog's own quotes: every rental
    # row, its low-confidence flag and every purchase row survive the round trip
    assert main(["prices", "--format", "csv"]) == 0
    f = _write(tmp_path, "all.csv", capsys.readouterr().out)
    rental, purchase = load_price_file(f, CAT)
    assert len(rental) == len(CAT.rental_prices) and len(purchase) == len(CAT.purchase_prices)
    assert {r.dedup_key() for r in rental} == {r.dedup_key() for r in CAT.rental_prices}
    assert sum(r.low_confidence for r in rental) == sum(r.low_confidence for r in CAT.rental_prices)
    assert {(p.gpu, p.usd, p.usd_range) for p in purchase} == {
        (p.gpu, p.usd, p.usd_range) for p in CAT.purchase_prices
    }
    cat = apply_price_rows(CAT, rental, purchase, "replace")
    for gpu in sorted({r.gpu for r in CAT.rental_prices if r.kind == "on_demand"}):
        # the table has no notes column: everything else of the quote is the same
        got, want = (quote_price(c, gpu, today=TODAY).model_dump() for c in (cat, CAT))
        assert {**got, "notes": None} == {**want, "notes": None}, gpu


# --------------------------------------------------------------------------- hostile rows
ROW = "{gpu: h200, provider: P, kind: on_demand, source: src1, as_of: 2026-11-01, %s}"
BAD_ROWS = [
    ("usd_per_gpu_hour: true", "usd_per_gpu_hour", "valid number"),  # a bool is no price
    ('usd_per_gpu_hour: "2.5"', "usd_per_gpu_hour", "valid number"),  # nor a string
    ("usd_per_gpu_hour: -1", "usd_per_gpu_hour", "outside the plausible band: a GPU-hour"),
    ("usd_per_gpu_hour: .nan", "usd_per_gpu_hour", ""),
    ("usd_per_gpu_hour: 1000000000.0", "usd_per_gpu_hour", "1e+09 USD per GPU-hour is outside"),
    ("usd_per_gpu_hour_range: [4.0, 2.0]", "<entry>", "low <= high"),
    (
        "usd_per_gpu_hour: 5.0, usd_per_instance_hour: 50.0, gpus_per_instance: 8",
        "<entry>",
        "50.0 / 8 = 6.2500",
    ),  # fmt: skip
]


@pytest.mark.parametrize("cells,field,expect", BAD_ROWS)
def test_bad_price_rows_are_one_line_exit_2(tmp_path, capsys, cells, field, expect):
    f = _write(tmp_path, "bad.yaml", "rental:\n  - " + ROW % cells + "\n")
    before = hashlib.sha256(Path(f).read_bytes()).hexdigest()
    assert main(["prices", "--gpu", "h200", "--prices", f]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "bad.yaml: rental[0]" in err and f"field '{field}'" in err
    assert expect in err
    assert hashlib.sha256(Path(f).read_bytes()).hexdigest() == before  # nothing written


@pytest.mark.parametrize(
    "text,expect",
    [
        ("rental: 3\n", "'rental' must be a list"),
        ("purchase: x\n", "'purchase' must be a list"),
        ("rental: [3]\n", "rental[0]"),
        ("[1, 2]\n", "expected a mapping with a 'rental' and/or 'purchase' list"),
        ("rental: []\n", "no price rows"),
    ],
)
def test_malformed_price_files_are_one_line_exit_2(tmp_path, capsys, text, expect):
    f = _write(tmp_path, "m.yaml", text)
    assert main(["prices", "--prices", f]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and expect in err and "internal error" not in err


def test_future_as_of_and_reversed_purchase_range(tmp_path, capsys):
    f = _write(tmp_path, "p.yaml", "purchase:\n  - {gpu: h100, kind: quote, usd_range: "
               "[30000, 20000], source: vendor quote, as_of: 2026-10-01}\n")  # fmt: skip
    assert main(["prices", "--prices", f]) == 2
    assert "usd_range must be [low, high] with low <= high" in capsys.readouterr().err
    f2 = _write(tmp_path, "q.yaml", "purchase:\n  - {gpu: h100, kind: quote, usd: 25000, "
                "source: vendor quote, as_of: 2999-01-01}\n")  # fmt: skip
    assert main(["prices", "--prices", f2]) == 2
    assert "as_of 2999-01-01 is in the future" in capsys.readouterr().err


def test_duplicate_rows_are_errors(tmp_path, capsys):
    row = "  - " + ROW % "usd_per_gpu_hour: 3.0"
    f = _write(tmp_path, "dup.yaml", f"rental:\n{row}\n{row}\n")
    assert main(["prices", "--prices", f]) == 2
    err = capsys.readouterr().err
    assert "dup.yaml: rental[1] (nvidia-h200-sxm) duplicates rental[0]" in err
    # extend mode: a copy of a catalog row would shift the median too
    r0 = next(r for r in CAT.rental_prices if r.gpu == "amd-mi300x")
    with pytest.raises(PlannerError, match="duplicates a row of data/prices.yaml"):
        apply_price_rows(CAT, (r0,), (), "extend")


def test_unknown_gpu_in_price_file_names_the_valid_ids(tmp_path, capsys):
    f = _write(tmp_path, "u.yaml", "rental:\n  - " + ROW.replace("h200", "h999")
               % "usd_per_gpu_hour: 3.0" + "\n")  # fmt: skip
    assert main(["prices", "--prices", f]) == 2
    err = capsys.readouterr().err
    assert "u.yaml: rental[0]: field 'gpu': unknown GPU 'h999'" in err
    assert "nvidia-h200-sxm" in err and "amd-mi300x" in err


def test_catalog_rows_follow_the_same_rules(tmp_path, capsys):
    d = tmp_path / "data"
    shutil.copytree(DATA_DIR, d)
    text = (d / "prices.yaml").read_text()
    (d / "prices.yaml").write_text(
        text.replace("usd_per_gpu_hour: 1.99,", "usd_per_gpu_hour: true,", 1)
    )
    assert main(["prices", "--data-dir", str(d)]) == 2
    err = capsys.readouterr().err
    assert "prices.yaml: rental[" in err and "field 'usd_per_gpu_hour'" in err


def test_unknown_provider_and_empty_gpu_refuse(capsys):
    with pytest.raises(PlannerError, match=r"unknown provider 'No Such Cloud' \(valid: .*AWS"):
        check_providers(CAT, ["No Such Cloud"])
    check_providers(CAT, ["aws", "digitalocean"])  # case-insensitive, as quote_price matches
    assert main(["recommend", "examples/chat-8b.yaml", "--providers", "No Such Cloud"]) == 2
    assert "unknown provider 'No Such Cloud'" in capsys.readouterr().err
    assert main(["prices", "--gpu", ""]) == 2
    assert "--gpu: expected a GPU id" in capsys.readouterr().err


def test_price_override_outside_the_band_refuses(capsys):
    with pytest.raises(PlannerError, match="plausible band"):
        quote_price(CAT, "h100", usd_per_gpu_hour=1e-300)
    assert main(["recommend", "examples/chat-8b.yaml", "--usd-per-gpu-hour", "1e-300"]) == 2
    assert "plausible band" in capsys.readouterr().err


@pytest.mark.parametrize(
    "text,expect",
    [
        ("", "empty CSV file"),
        ("gpu,provider,price\nh200,P,3\n", "unknown column 'price'"),
        ("gpu,provider,kind,usd_per_gpu_hour,source,as_of\nh200,P,on_demand,true,src1,2026-11-01\n",
         "rental[0]: field 'usd_per_gpu_hour': expected a number, got 'true'"),
        ("gpu,provider,kind,usd_per_gpu_hour,source,as_of\nh200,P,on_demand,nan,src1,2026-11-01\n",
         "expected a finite number"),
    ],
)  # fmt: skip
def test_malformed_csv_price_files(tmp_path, capsys, text, expect):
    f = _write(tmp_path, "m.csv", text)
    assert main(["prices", "--prices", f]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and expect in err
