"""A held-out row that names no release is predicted as of its date (issue 31,
``planner.calibration.release_fit.AsOfFits``): its fold's fit leaves out its engine's rows
that name a release and are dated after it."""

from __future__ import annotations

import datetime as dt
import math

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.calibration.fit import PreparedRow, fit_profile
from planner.calibration.release_fit import (
    ASOF_GRACE_DAYS,
    AsOfFits,
    as_of_days,
    params_for,
    predict_rows_by_release,
    row_day,
)
from planner.catalog import load_catalog

CAT = load_catalog()
H100 = "nvidia-h100-sxm"
#: a step row's value is K x mem_eff (a memory-bound step: bytes moved / (peak x efficiency))
K = 1000.0
HELD_DAY = dt.date(2024, 9, 20)


def _row(i, source, fw="vllm", release="", mem_eff=0.5, kind="step", scale=1.0):
    return PreparedRow(
        id=f"{source}-{i}", source=source, framework=fw, gpu=H100, arch="hopper",
        precision="bf16", metric="output_tok_s_total", mode="static", value=K * scale * mem_eff,
        predict=lambda p, s=scale: K * s * p.mem_eff, fit_kind=kind, model="m",
        vendor="nvidia", family="dense", release=release,
    )  # fmt: skip


def _rows(source, n, **kw):
    # scales 1.0, 1.1, ...: rows of one setup at different sizes, all at the same mem_eff
    return [_row(i, source, scale=1 + 0.1 * i, **kw) for i in range(n)]


# 2024: vLLM 0.6.0 rows at mem_eff 0.5 (dated before the held-out row); 2025: vLLM 0.10.0
# rows at 0.9 (dated after it); the held-out row names no release and is dated 2024-09-20
EARLY = _rows("early", 10, release="0.6.0", mem_eff=0.5)
LATE = _rows("late", 10, release="0.10.0", mem_eff=0.9)
HELD = _row(0, "held", mem_eff=0.5)
DAYS = {
    **{r.id: dt.date(2024, 6, 1) for r in EARLY},
    **{r.id: dt.date(2025, 9, 1) for r in LATE},
    HELD.id: HELD_DAY,
}
FIT_KW = {"max_nfev": 100, "prior_scale": 10.0}  # a weak prior: the rows decide


def _predicted(train, days=DAYS, held=HELD):
    """The held-out row's prediction through the leave-one-source-out hook."""
    asof = AsOfFits(days, **FIT_KW)
    prof = fit_profile(train, **FIT_KW)
    asof.fit_fold("held", [held], train)
    ((_, value, prov, _, _),) = predict_rows_by_release([held], prof, CAT, asof, "held")
    return value, prov, asof


def test_row_day_reads_dates_and_refuses_the_rest():
    assert row_day("2024-09-20") == HELD_DAY
    assert row_day(pd.Timestamp("2024-09-20 13:00")) == HELD_DAY
    assert row_day(dt.datetime(2024, 9, 20, 13)) == HELD_DAY
    assert row_day(HELD_DAY) == HELD_DAY
    for bad in ("", "nan", float("nan"), None, "2024-13-01", "not stated"):
        assert row_day(bad) is None, bad
    df = pd.DataFrame({"id": ["a", "b", "c"], "as_of": ["2024-09-20", float("nan"), ""]})
    assert as_of_days(df) == {"a": HELD_DAY}
    assert as_of_days(pd.DataFrame({"id": ["a"]})) == {}


def test_later_release_rows_do_not_move_an_earlier_release_free_row():
    """Hand-derived: the fold's fit without the 2025 rows is the fit of the 2024 rows alone,
    all generated at mem_eff 0.5, so the prediction is K x 0.5 = 500 (within 2 %: the weak
    prior still pulls the fit a little towards its mem_eff)."""
    assert ASOF_GRACE_DAYS == 0
    value, prov, asof = _predicted(EARLY + LATE)
    alone = fit_profile(EARLY, **FIT_KW)
    p, _, _, _ = params_for(H100, "vllm", "bf16", "", alone, CAT, "dense")
    assert value == pytest.approx(K * p.mem_eff, rel=1e-12)
    assert value == pytest.approx(K * 0.5, rel=0.02)
    assert prov.endswith("; as of 2024-09-20 (10 later vllm release rows left out)")
    # the fold's own fit (every row) is pulled towards the 2025 rows' 0.9: the rule matters
    every = fit_profile(EARLY + LATE, **FIT_KW)
    p_all, _, _, _ = params_for(H100, "vllm", "bf16", "", every, CAT, "dense")
    assert K * p_all.mem_eff > 1.2 * value
    assert set(asof.plans) == {("held", "vllm", HELD_DAY)}


def test_what_is_kept():
    """Rows of another engine, rows without a date, rows naming no release and rows dated on
    the held-out row's day stay in the fit: nothing is left out, so no second fit."""
    other = _rows("trt", 5, fw="trtllm", release="1.0.0", mem_eff=0.9)
    undated = _rows("undated", 5, release="0.10.0", mem_eff=0.9)
    unnamed = _rows("unnamed", 5, mem_eff=0.9)
    same_day = _rows("sameday", 5, release="0.6.1", mem_eff=0.9)
    days = {**DAYS, **{r.id: dt.date(2025, 9, 1) for r in other + unnamed},
            **{r.id: HELD_DAY for r in same_day}}  # fmt: skip
    value, prov, asof = _predicted(EARLY + other + undated + unnamed + same_day, days)
    assert asof.plans == {}
    assert "as of" not in prov


def test_a_row_naming_a_release_keeps_the_fold_fit():
    named = _row(0, "held", release="0.6.0")
    days = {**DAYS, named.id: HELD_DAY}
    _, prov, asof = _predicted(EARLY + LATE, days, named)
    assert asof.plans == {}
    assert "as of" not in prov


@settings(max_examples=8, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(0.2, 1.0),  # the added row's mem_eff
            st.integers(1, 900),  # days after the held-out row
            st.sampled_from(["0.6.3", "0.10.0", "0.11.0"]),  # the release it names
        ),
        min_size=1,
        max_size=6,
    )
)
def test_adding_later_release_rows_never_changes_the_prediction(extra):
    """Property: rows of the engine that name a release and are dated after a release-free
    row never change its held-out prediction (whatever their values)."""
    base, _, _ = _predicted(EARLY + LATE)
    added = [_row(i, f"added{i}", release=rel, mem_eff=m) for i, (m, _, rel) in enumerate(extra)]
    days = {**DAYS, **{r.id: HELD_DAY + dt.timedelta(days=d)
                       for r, (_, d, _) in zip(added, extra, strict=True)}}  # fmt: skip
    value, _, _ = _predicted(EARLY + LATE + added, days)
    assert math.isclose(value, base, rel_tol=0, abs_tol=0)


def test_dates_that_leave_out_the_same_rows_share_one_fit_made_on_first_use():
    """Two release-free rows dated 2024-09-20 and 2024-12-01 both leave out the 10 rows of
    2025 and nothing else: one fit serves both, and it is made only when a row is predicted
    (leave-one-source-out stays cheap)."""
    later = _row(1, "held")
    days = {**DAYS, later.id: dt.date(2024, 12, 1)}
    asof = AsOfFits(days, **FIT_KW)
    asof.fit_fold("held", [HELD, later], EARLY + LATE)
    plan = asof.plans[("held", "vllm", HELD_DAY)]
    assert asof.plans[("held", "vllm", dt.date(2024, 12, 1))] is plan
    assert "fit" not in plan
    a, note_a = asof.profile_for("held", "vllm", HELD.id, None)
    b, note_b = asof.profile_for("held", "vllm", later.id, None)
    assert a is b and a is not None
    assert note_a == "; as of 2024-09-20 (10 later vllm release rows left out)"
    assert note_b == "; as of 2024-12-01 (10 later vllm release rows left out)"
