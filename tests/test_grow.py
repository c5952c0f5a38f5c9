"""``planner grow``: monthly traffic, the month-by-month sizing, its agreement with
``planner recommend``, the traffic series files and their errors, and the command line."""

from __future__ import annotations

import json
import math
import shlex

import pytest
from conftest import REPO_ROOT

from planner import cli
from planner.cli.grow import GROW_EXAMPLE
from planner.errors import PlannerError
from planner.recommend.grow import size_months
from planner.workload import Traffic
from planner.workload.growth import (
    MonthTraffic,
    grown_traffic,
    read_traffic_series,
    series_notes,
    series_traffic,
)

try:
    from hypothesis import given, settings
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover - the dev extra has it
    given = None

CHAT = str(REPO_ROOT / "examples" / "chat-8b.yaml")


def run(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(code, err, *parts):
    assert code == 2, (code, err)
    assert err.startswith("planner: error: ") and err.count("\n") == 1, err
    for p in parts:
        assert p in err, (p, err)


# --------------------------------------------------------------------------- traffic
def test_grown_traffic_compounds_from_the_scenario():
    t = Traffic(mean_rps=25, peak_rps=60, daily_profile=(1.0,) * 12 + (3.0,) * 12)
    months = grown_traffic(t, 0.1, 12)
    assert len(months) == 12 and months[0] is t  # month 1 is the scenario's own traffic
    # month 12: 60 x 1.1^11 = 60 x 2.853116706 = 171.187 req/s; mean 25 x 2.853 = 71.328
    assert months[11].peak_rps == pytest.approx(171.187, abs=1e-3)
    assert months[11].base_mean_rps() == pytest.approx(71.328, abs=1e-3)
    # the profile is kept: busiest hour = mean x 3 / 2 (profile mean 2)
    assert months[11].hourly_rps().max() == pytest.approx(71.328 * 1.5, abs=1e-3)
    assert [m.peak() for m in months] == sorted(m.peak() for m in months)


def test_grown_traffic_rejects_bad_rates():
    t = Traffic(mean_rps=1, peak_rps=2)
    for g in (-1.0, 11.0, math.nan, math.inf):
        with pytest.raises(PlannerError, match="growth_per_month"):
            grown_traffic(t, g, 3)
    with pytest.raises(PlannerError, match="months"):
        grown_traffic(t, 0.1, 0)
    # x11 a month: month 8's mean is 1 x 11^7 = 1.95e7 req/s, beyond the 1e7 rule, named
    with pytest.raises(
        PlannerError, match=r"month 8 .*mean_rps 1.949e\+07 req/s is outside \[1e-06, 1e\+07\]"
    ):
        grown_traffic(t, 10.0, 12)


def test_series_rows_scale_or_set_the_traffic():
    t = Traffic(mean_rps=20, peak_rps=40)
    rows = [MonthTraffic(month=1, peak_rps=40), MonthTraffic(month=2, peak_rps=80),
            MonthTraffic(month=3, peak_rps=90, mean_rps=60)]  # fmt: skip
    m = series_traffic(t, rows, "f.csv")
    assert (m[1].peak(), m[1].base_mean_rps()) == (80, 40)  # x2: mean follows the peak
    assert (m[2].peak(), m[2].base_mean_rps()) == (90, 60)  # both given: both set
    # a profile whose busiest hour (x2 the mean) is above the row's peak: planned for that hour
    tp = Traffic(mean_rps=20, peak_rps=40, daily_profile=(0.0,) * 12 + (2.0,) * 12)
    rows2 = [MonthTraffic(month=1, peak_rps=50, mean_rps=30)]  # busiest hour 30 x 2 = 60 > 50
    m2 = series_traffic(tp, rows2, "f.csv")
    assert m2[0].peak() == 60
    assert "months 1:" in series_notes(rows2, m2)[0]
    assert series_notes(rows[:2], m[:2]) == []
    with pytest.raises(PlannerError, match=r"f.csv: month 1: mean_rps \(9\) is above peak_rps"):
        series_traffic(t, [MonthTraffic(month=1, peak_rps=5, mean_rps=9)], "f.csv")


# --------------------------------------------------------------------------- series files
def test_series_csv_and_yaml_read_alike(tmp_path):
    c = tmp_path / "t.csv"
    c.write_text("month,peak_rps,mean_rps\n1,60,25\n2,66,\n3,72.5,30\n")
    y = tmp_path / "t.yaml"
    y.write_text(
        "months:\n  - {peak_rps: 60, mean_rps: 25}\n  - 66\n  - {month: 3, peak_rps: 72.5, mean_rps: 30}\n"
    )
    want = [(1, 60.0, 25.0), (2, 66.0, None), (3, 72.5, 30.0)]
    for p in (c, y):
        assert [(r.month, r.peak_rps, r.mean_rps) for r in read_traffic_series(p)] == want


@pytest.mark.parametrize(
    ("name", "text", "parts"),
    [
        ("a.csv", "month,peak_rps,peak_rps\n1,5,6\n", ["a.csv", "'peak_rps' appears 2 times"]),
        ("a.csv", "peak_rps,rate\n1,2\n", ["a.csv", "unknown column 'rate'"]),
        ("a.csv", "month,mean_rps\n1,2\n", ["a.csv", "no peak_rps column"]),
        ("a.csv", "peak_rps\nfast\n", ["month 1", "peak_rps must be a number", "'fast'"]),
        ("a.csv", "peak_rps\nnan\n", ["month 1", "peak_rps must be a finite number > 0"]),
        ("a.csv", "peak_rps\n-3\n", ["month 1", "peak_rps must be a finite number > 0"]),
        ("a.csv", "month,peak_rps\n1,5\n3,6\n", ["month 2", "month must be 2", "got 3"]),
        ("a.csv", "peak_rps\n5,6\n", ["month 1", "2 cells for 1 columns"]),
        ("a.csv", "", ["a.csv", "empty"]),
        ("a.csv", "peak_rps,mean_rps\n,4\n", ["month 1", "peak_rps is missing"]),
        (
            "a.yaml",
            "months: [{peak_rps: true}]\n",
            ["month 1", "peak_rps must be a number", "True"],
        ),
        ("a.yaml", "months: [{peak_rps: '5'}]\n", ["month 1", "peak_rps must be a number", "'5'"]),
        ("a.yaml", "months: [{peak_rps: 5, rps: 3}]\n", ["month 1", "unknown field 'rps'"]),
        ("a.yaml", "months: [5]\ncurrency: EUR\n", ["a.yaml", "unknown key 'currency'"]),
        ("a.yaml", "months: 5\n", ["a.yaml", "expected 'months:'"]),
        ("a.yaml", "months: [[5]]\n", ["month 1", "expected a peak"]),
        ("a.yaml", "months: [{peak_rps: 2.0e+7}]\n", ["month 1", "at most 1e7"]),
        ("a.yaml", "months: [{peak_rps: 2e7}]\n", ["month 1", "'2e7'", "write 2.0e+7"]),
        ("a.yaml", "months: []\n", ["a.yaml", "no months"]),
        ("a.txt", "peak_rps\n5\n", ["a.txt", ".csv, .yaml or .yml"]),
        ("a.csv", "peak_rps\n5\x00\n", ["month 1", "peak_rps must be a number"]),
        ("a.csv", "peak_rps\n" + "9" * 200_000 + "\n", ["a.csv", "not a readable CSV file"]),
    ],
)
def test_series_file_errors_name_the_field(tmp_path, name, text, parts):
    p = tmp_path / name
    p.write_text(text)
    with pytest.raises(PlannerError) as e:
        read_traffic_series(p)
    msg = str(e.value)
    assert "\n" not in msg
    for part in parts:
        assert part in msg, (part, msg)


def test_series_file_too_many_months_and_not_a_file(tmp_path):
    p = tmp_path / "long.yaml"
    p.write_text("months: [" + ", ".join(["5"] * 121) + "]\n")
    with pytest.raises(PlannerError, match="121 months; at most 120"):
        read_traffic_series(p)
    with pytest.raises(PlannerError, match="not found"):
        read_traffic_series(tmp_path / "missing.csv")
    (tmp_path / "dir.csv").mkdir()
    with pytest.raises(PlannerError, match="folder"):
        read_traffic_series(tmp_path / "dir.csv")


# --------------------------------------------------------------------------- sizing
def _flat(peaks, mean_frac=0.5):
    return [Traffic(mean_rps=p * mean_frac, peak_rps=p) for p in peaks]


def test_size_months_by_hand_rented_and_owned():
    """10 req/s per replica of 2 GPUs, headroom 0.2, $2/GPU-h, lead time 3 months.

    peaks 10, 20, 15, 30 req/s -> planned 12, 24, 18, 36 -> replicas ceil(1.2, 2.4, 1.8,
    3.6) = 2, 3, 2, 4 -> GPUs 4, 6, 4, 8. Means are half the peaks (flat day): the hourly
    autoscaler runs ceil(6, 12, 9, 18 / 10) = 1, 2, 1, 2 replicas = 2, 4, 2, 4 GPUs all day.
    """
    tr = _flat([10, 20, 15, 30])
    kw = dict(max_rate_rps=10.0, gpus_per_replica=2, headroom=0.2, usd_per_gpu_hour=2.0,
              lead_time_months=3, band=(0.5, 2.0))  # fmt: skip
    rent = size_months(tr, owned=False, **kw)
    assert [m.num_gpus for m in rent] == [4, 6, 4, 8]
    assert [m.gpus_held for m in rent] == [4, 6, 4, 8]
    assert [m.gpus_added for m in rent] == [4, 2, 0, 4]
    assert [m.gpus_released for m in rent] == [0, 0, 2, 0]
    assert [m.order_by for m in rent] == [-2, -1, None, 1]  # month - 3 where cards are added
    # $/month = GPUs x $2 x 730 h: 4 -> 5,840; 6 -> 8,760; 8 -> 11,680
    assert [m.usd_per_month for m in rent] == pytest.approx([5840, 8760, 5840, 11680])
    # autoscaled: GPUs all day x $2 x 730 h: 2 -> 2,920; 4 -> 5,840
    assert [m.usd_per_month_autoscaled for m in rent] == pytest.approx([2920, 5840, 2920, 5840])
    # band (capacity x 0.5 .. x 2): month 1 planned 12 -> ceil(12/20)=1, ceil(12/5)=3 replicas
    assert (rent[0].num_gpus_low, rent[0].num_gpus_high) == (2, 6)
    own = size_months(tr, owned=True, **kw)
    assert [m.num_gpus for m in own] == [4, 6, 4, 8]  # the need is the same
    assert [m.gpus_held for m in own] == [4, 6, 6, 8]  # kept: never released
    assert [m.gpus_added for m in own] == [4, 2, 0, 2]
    assert [m.gpus_released for m in own] == [0, 0, 0, 0]
    # owned cards cost every month, busy or idle: held x $2 x 730; autoscaling saves nothing
    assert [m.usd_per_month for m in own] == pytest.approx([5840, 8760, 8760, 11680])
    assert [m.usd_per_month_autoscaled for m in own] == [m.usd_per_month for m in own]


def test_size_months_without_price_or_band_and_labels():
    import datetime as dt

    m = size_months(_flat([10]), max_rate_rps=10.0, gpus_per_replica=1, headroom=0.0,
                    usd_per_gpu_hour=None, owned=False, lead_time_months=2,
                    start=dt.date(2027, 1, 1))  # fmt: skip
    assert m[0].usd_per_month is None and m[0].num_gpus_low is None
    assert (m[0].date, m[0].order_by, m[0].order_by_date) == ("2027-01", -1, "2026-11")
    with pytest.raises(PlannerError, match="lead_time_months"):
        size_months(_flat([10]), max_rate_rps=1.0, gpus_per_replica=1, headroom=0.0,
                    usd_per_gpu_hour=None, owned=False, lead_time_months=-1)  # fmt: skip


def _check_months(peaks, rate, gpr, headroom, owned):
    tr = _flat(peaks)
    ms = size_months(tr, max_rate_rps=rate, gpus_per_replica=gpr, headroom=headroom,
                     usd_per_gpu_hour=1.5, owned=owned, lead_time_months=1,
                     band=(0.6, 1.4))  # fmt: skip
    need = [m.num_gpus for m in ms]
    held = [m.gpus_held for m in ms]
    for a, b, pa, pb in zip(need, need[1:], peaks, peaks[1:], strict=False):
        if pb >= pa:
            assert b >= a  # more traffic never needs fewer cards
    for m in ms:
        assert m.num_gpus_low <= m.num_gpus <= m.num_gpus_high
        assert m.num_gpus % gpr == 0 and m.gpus_held >= (m.num_gpus if owned else 0)
        assert m.usd_per_month_autoscaled <= m.usd_per_month * (1 + 1e-12)
    if owned:
        assert held == sorted(held) and sum(m.order_gpus for m in ms) == held[-1]
    else:
        assert held == need
        assert sum(m.gpus_added - m.gpus_released for m in ms) == held[-1]


if given is not None:

    @settings(max_examples=150, deadline=None)
    @given(
        st.lists(st.floats(0.01, 1e4), min_size=1, max_size=24),
        st.floats(0.05, 500),
        st.sampled_from([1, 2, 4, 8]),
        st.floats(0, 2),
        st.booleans(),
        st.booleans(),
    )
    def test_cards_never_fall_as_traffic_grows(peaks, rate, gpr, headroom, owned, grow):
        _check_months(sorted(peaks) if grow else peaks, rate, gpr, headroom, owned)

else:  # pragma: no cover

    def test_cards_never_fall_as_traffic_grows():
        for g in (0.0, 0.03, 0.1, 0.5):
            _check_months([7.0 * (1 + g) ** i for i in range(24)], 3.3, 2, 0.2, False)


# --------------------------------------------------------------------------- end to end
def _json(capsys, *argv):
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize(
    ("name", "peak", "headroom"), [("chat-8b", 60, 0.2), ("rag-70b", 10, 0.25)]
)
def test_month_one_is_recommends_answer(capsys, name, peak, headroom):
    """The done-when of issue 33: 12 months, cards non-decreasing, month 1 = recommend
    (the scenarios' peaks and headrooms are read from examples/*.yaml)."""
    path = str(REPO_ROOT / "examples" / f"{name}.yaml")
    g = _json(capsys, "grow", path, "--growth-per-month", "0.1", "--months", "12",
              "--format", "json")  # fmt: skip
    ms = g["months"]
    assert [m["month"] for m in ms] == list(range(1, 13))
    cards = [m["num_gpus"] for m in ms]
    assert cards == sorted(cards) and cards[-1] > cards[0]
    for m in ms:
        for k in ("peak_rps", "num_gpus", "num_gpus_low", "num_gpus_high", "usd_per_month",
                  "usd_per_month_autoscaled", "order_by"):  # fmt: skip
            assert k in m
        assert m["usd_per_month"] > 0 and m["usd_per_month_autoscaled"] > 0
    assert ms[11]["peak_rps"] == pytest.approx(peak * 1.1**11)
    assert g["headroom"] == headroom
    rec = _json(capsys, "recommend", path, "--format", "json")["recommendations"][0]
    exact = _json(capsys, "recommend", path, "--exact", "--format", "json")["recommendations"][0]
    o, m1 = g["option"], ms[0]
    assert (o["gpu"], o["framework"], o["precision"], o["tp"], o["pp"]) == (
        rec["gpu"], rec["framework"], rec["precision"], rec["tp"], rec["pp"])  # fmt: skip
    assert m1["num_gpus"] == rec["num_gpus"] == exact["num_gpus"]
    assert m1["usd_per_month"] == rec["usd_per_month"]
    assert m1["replicas"] == rec["replicas"]
    # the capacity the later months need is the bisected one: recommend --exact's numbers
    assert o["max_rate_per_replica"] == exact["max_rate_per_replica"]
    assert (m1["num_gpus_low"], m1["num_gpus_high"]) == (
        exact["num_gpus_low"],
        exact["num_gpus_high"],
    )
    assert m1["usd_per_month_autoscaled"] == pytest.approx(exact["usd_per_month_autoscaled"])
    # every month's cards from that one rate: ceil(peak x (1 + headroom) / rate) x GPUs per replica
    for m in ms:
        k = math.ceil(m["peak_rps"] * (1 + headroom) / o["max_rate_per_replica"] * (1 - 1e-9))
        assert m["num_gpus"] == k * o["gpus_per_replica"]
    t = g["totals"]
    assert t["usd_total"] == pytest.approx(sum(m["usd_per_month"] for m in ms))
    assert t["num_gpus_max"] == cards[-1]
    assert t["usd_total_autoscaled"] < t["usd_total"]  # rented, with a daily profile or mean < peak


def test_size_for_final_equals_recommend_at_the_last_month():
    from planner.catalog import load_catalog
    from planner.recommend import recommend
    from planner.recommend.grow import plan_growth
    from planner.scenario import load_scenario

    sc = load_scenario(CHAT)
    cat = load_catalog()
    tr = grown_traffic(sc.workload.traffic, 0.2, 6)
    kw = dict(catalog=cat, constraints=sc.constraints, engine=sc.serving.kwargs())
    plan = plan_growth(sc.model, sc.workload, sc.slo, tr, size_for="final", **kw)
    assert plan.sized_at_month == 6
    wl = sc.workload.model_copy(update={"traffic": tr[-1]})
    r = recommend(sc.model, wl, sc.slo, refine=True, **kw).recommendations[0]
    assert plan.months[-1].num_gpus == r["num_gpus"]
    assert plan.option["gpu"] == r["gpu"] and plan.option["tp"] == r["tp"]
    assert "month 1 may differ" in " ".join(plan.notes)


def test_owned_cards_are_kept_and_ordered_ahead(capsys):
    g = _json(capsys, "grow", CHAT, "--traffic", str(REPO_ROOT / "examples" / "traffic-chat-8b.csv"),
              "--price-basis", "own", "--gpus", "h100", "--format", "json")  # fmt: skip
    ms = g["months"]
    assert g["price_basis"] == "own" and g["lead_time_months"] == 3  # the owned default
    held = [m["gpus_held"] for m in ms]
    assert held == sorted(held) and all(m["gpus_released"] == 0 for m in ms)
    assert ms[0]["order_by"] == 1 - 3  # the first fleet: 3 months before month 1
    assert all(m["usd_per_month_autoscaled"] == m["usd_per_month"] for m in ms)
    p = g["option"]["usd_per_gpu_hour"]
    for m in ms:  # held x amortised $/GPU-h x 730 h
        assert m["usd_per_month"] == pytest.approx(m["gpus_held"] * p * 730)


def test_table_output_reads(capsys):
    code, out, err = run(capsys, "grow", CHAT, "--growth-per-month", "0.1", "--months", "3",
                         "--start", "2027-11")  # fmt: skip
    assert code == 0, err
    for part in ("option", "gpus_needed", "2027-11", "2028-01", "usd_total", "notes:"):
        assert part in out, part


@pytest.mark.parametrize(
    ("argv", "parts"),
    [
        ((), ["--growth-per-month", "--traffic"]),
        (("--growth-per-month", "0.1", "--traffic", "x.csv"), ["not both"]),
        (("--traffic", "examples/traffic-chat-8b.csv", "--months", "3"), ["--months goes with"]),
        (("--growth-per-month", "2e9"), ["--growth-per-month", "between"]),
        (("--growth-per-month", "0.1", "--months", "0"), ["--months", "from 1 to 120"]),
        (("--growth-per-month", "0.1", "--lead-time-months", "-1"), ["--lead-time-months"]),
        (("--growth-per-month", "0.1", "--start", "2027-13"), ["--start", "YYYY-MM"]),
        (("--growth-per-month", "0.1", "--start", "0001-01"), ["--start", "from 1970 to 2200"]),
        (("--growth-per-month", "0.1", "--headroom", "nan"), ["--headroom", "finite"]),
        (("--traffic", "nothere.csv"), ["traffic series file not found"]),
    ],
)
def test_bad_flags_are_one_line_errors(capsys, argv, parts):
    code, _, err = run(capsys, "grow", CHAT, *argv)
    one_line_error(code, err, *parts)


def test_request_classes_are_refused(capsys):
    code, _, err = run(capsys, "grow", str(REPO_ROOT / "examples" / "mixed-70b.yaml"),
                       "--growth-per-month", "0.1")  # fmt: skip
    one_line_error(code, err, "single workload", "request classes")


def test_help_examples_run_from_the_repo_root(capsys, monkeypatch):
    monkeypatch.chdir(REPO_ROOT)
    lines = GROW_EXAMPLE.split("\n\n")[0].replace("\\\n", " ").splitlines()
    cmds = [shlex.split(x)[1:] for x in lines if x.strip().startswith("planner ")]
    assert len(cmds) == 4
    for argv in cmds:
        code, out, err = run(capsys, *argv)
        assert code == 0, (argv, err)
        assert out


def test_months_beyond_the_fleet_limit_are_named(capsys):
    # cards 4, 4, 5, 5, 6, 6, 7, 8, ... (test above): from month 7 above --max-gpus 6
    g = _json(capsys, "grow", CHAT, "--growth-per-month", "0.1", "--months", "12",
              "--max-gpus", "6", "--format", "json")  # fmt: skip
    over = [m["month"] for m in g["months"] if m["num_gpus"] > 6]
    assert over and over == list(range(over[0], 13))
    assert f"months {over[0]}-12 need more than max_total_gpus=6 GPUs" in g["notes"]
