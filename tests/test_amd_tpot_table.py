"""Issue 32, "Done when" item 1 (TPOT): ``scripts/amd_tpot_table.py``, the closed-loop
identities of the measured serving runs and the held-out TPOT error tables."""

from __future__ import annotations

import importlib.util
import math
import sys

import pandas as pd
import pytest
from _benchmark_rows import schema_row
from conftest import REPO_ROOT
from hypothesis import given
from hypothesis import strategies as st

SCRIPT = REPO_ROOT / "scripts" / "amd_tpot_table.py"


@pytest.fixture(scope="module")
def at():
    spec = importlib.util.spec_from_file_location("amd_tpot_table", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["amd_tpot_table"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_identities_of_a_published_run(at):
    """dstack's SGLang 0.4.2.post4 MI300X run at 4 clients, 3,200 / 800 tokens (rows amd-0100
    to amd-0103: output 108.254 tok/s, TTFT 1,644.593 ms, TPOT 34.937 ms, E2E 29,559.158 ms,
    all means):

    * TTFT + 799 x TPOT = 1,644.593 + 27,914.663 = 29,559.256 ms; 29,559.158 / 29,559.256 =
      0.999997;
    * 108.254 tok/s x 29.559158 s = 3,199.90 tokens per client cycle of 4 x 800 = 3,200:
      0.99997."""
    e2e_id, loop_id = at.identities(1644.593, 34.937, 29559.158, 108.254, 4, 800)
    assert e2e_id == pytest.approx(29559.158 / 29559.256, rel=1e-9)
    assert e2e_id == pytest.approx(0.999997, abs=1e-6)
    assert loop_id == pytest.approx(108.254 * 29.559158 / 3200, rel=1e-9)
    assert loop_id == pytest.approx(0.99997, abs=1e-5)


def test_mean_output_tokens(at):
    """``osl`` when stated; else InferenceX's uniform lengths between 0.8 x 1,024 and 1,024:
    1,024 x 1.8 / 2 = 921.6; range ratio 1 (or unstated): the length itself; nothing: NaN."""
    assert at.mean_output_tokens("800", "random_output_len=1024") == 800.0
    notes = "random_input_len=1024; random_output_len=1024; random_range_ratio=0.8; 40 requests"
    assert at.mean_output_tokens("", notes) == pytest.approx(921.6)
    assert at.mean_output_tokens("", "random_output_len=1024; random_range_ratio=1") == 1024.0
    assert at.mean_output_tokens("", "random_output_len=512") == 512.0
    assert math.isnan(at.mean_output_tokens("", "no lengths"))


def _run(metrics: dict[str, float], **kw) -> list[dict[str, str]]:
    return [
        schema_row(
            id=f"t-{i}",
            metric=m,
            value=v,
            concurrency="4",
            osl="800",
            isl="3200",
            notes=f"{m} = the client's {m}; run R",
            **kw,
        )  # fmt: skip
        for i, (m, v) in enumerate(metrics.items())
    ]


def test_runs_are_grouped_by_their_notes_without_the_metric_part(at):
    """Two runs that differ only in a metric's own note segment are one run; a run missing a
    metric has no identities; the values come back as read."""
    one = {"ttft_ms_mean": 1644.593, "tpot_ms_mean": 34.937, "e2e_ms_mean": 29559.158,
           "output_tok_s_total": 108.254}  # fmt: skip
    rows = _run(one) + _run({"ttft_ms_mean": 1.0, "tpot_ms_mean": 1.0}, hardware="amd-mi300x")
    out = at.run_identities(pd.DataFrame(rows))
    assert len(out) == 1
    r = out.iloc[0]
    assert (r["ttft"], r["tpot"], r["e2e"], r["out_tok_s"]) == (1644.593, 34.937, 29559.158,
                                                                 108.254)  # fmt: skip
    assert r["tpot_metric"] == "tpot_ms_mean" and r["n_out"] == 800.0
    assert r["e2e_identity"] == pytest.approx(0.999997, abs=1e-6)


def test_amd_runs_hold_both_identities():
    """The finding of changes/s8-amdtpot.md, on the data: every closed-loop AMD run that
    states the four metrics (InferenceX MI300X / MI325X / MI355X medians, dstack MI300X means)
    has E2E within 6% of TTFT + (n - 1) TPOT and its throughput x E2E within 10% of C x n:
    no run mixes TPOT definitions or phases, so the AMD TPOT misses are the step model's."""
    spec = importlib.util.spec_from_file_location("amd_tpot_table_data", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    from planner.calibration.fit import public_files_default

    df = pd.concat(
        [pd.read_csv(f, dtype=str, keep_default_na=False) for f in public_files_default()]
    )
    runs = mod.run_identities(df)
    amd = runs[runs["vendor"] == "amd"]
    assert len(amd) >= 150  # 39 + 33 + 90 InferenceX open results, 6 + 9 history, 18 dstack
    assert amd["e2e_identity"].between(0.94, 1.06).mean() >= 0.98
    assert amd["loop_identity"].between(0.90, 1.03).all()


def test_error_table_by_hand(at):
    """Two groups: errors +10% and -30% (MdAPE 20%, bias -10%, ratio median (1.1, 0.7) =
    0.9), and one row at +50%."""
    rows = pd.DataFrame({
        "metric_class": ["tpot/itl"] * 3 + ["ttft"], "g": ["a", "a", "b", "a"],
        "measured": [10.0, 10.0, 10.0, 10.0], "predicted": [11.0, 7.0, 15.0, 99.0],
        "err_pct": [10.0, -30.0, 50.0, 890.0],
    })  # fmt: skip
    t = at.error_table(rows, ["g"])
    assert t.loc["a"].tolist() == [2, 20.0, -10.0, 0.9]
    assert t.loc["b"].tolist() == [1, 50.0, 50.0, 1.5]


@given(
    ttft=st.floats(1.0, 1e5), tpot=st.floats(0.1, 500.0), n=st.integers(2, 20000),
    c=st.integers(1, 512),
)  # fmt: skip
def test_a_consistent_run_scores_one(at, ttft, tpot, n, c):
    """A run whose E2E is TTFT + (n - 1) TPOT and whose clients never wait (throughput
    C x n / E2E) scores 1 on both identities."""
    e2e = ttft + (n - 1) * tpot
    e2e_id, loop_id = at.identities(ttft, tpot, e2e, c * n / (e2e / 1e3), c, n)
    assert e2e_id == pytest.approx(1.0, rel=1e-9)
    assert loop_id == pytest.approx(1.0, rel=1e-9)
