"""Issue 30's disaggregated / speculative rows held out by source (``scripts/issue30_holdout.py``):
the profile reaches the disaggregated prediction, a missing held-out profile leaves the row
unpredicted, publishers are held out as one, and the tables' arithmetic by hand."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

from planner.benchmarks.disagg_rows import disagg_accuracy, predict_disagg_row
from planner.benchmarks.io import read_rows
from planner.catalog.catalog import load_catalog
from planner.catalog.profile import load_profile

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import issue30_holdout as h  # noqa: E402

CAT = load_catalog()
IX = {r["id"]: r for r in read_rows(ROOT / "data/benchmarks/public_inferencex.csv")[0]}


def _slower(profile, extra_s: float):
    """The profile with ``extra_s`` more fixed cost per forward step on every node and every
    release node (a row naming a release is predicted from the release level)."""

    def slow(ns):
        return tuple(
            n.model_copy(update={"params": n.params.model_copy(
                update={"step_overhead_s": n.params.step_overhead_s + extra_s})})
            for n in ns
        )  # fmt: skip

    return profile.model_copy(
        update={"nodes": slow(profile.nodes), "release_nodes": slow(profile.release_nodes)}
    )


def test_the_profile_reaches_the_disaggregated_prediction():
    """ixm-1347 (InferenceX, DeepSeek-R1 xPyD, no MTP, total tok/s): the bundled profile passed
    explicitly gives the bundled answer (same parameters, same seeded run); one whose every
    node pays 20 ms more per forward step gives a lower throughput (a closed loop of C
    clients: rate = C / mean E2E, and every decode step of every request is 20 ms longer)."""
    row = IX["ixm-1347"]
    base = predict_disagg_row(row, CAT)
    same = predict_disagg_row(row, CAT, profile=load_profile())
    slow = predict_disagg_row(row, CAT, profile=_slower(load_profile(), 0.020))
    assert not isinstance(base, str) and not isinstance(slow, str), (base, slow)
    assert same[0] == pytest.approx(base[0], rel=1e-12)
    assert slow[0] < 0.95 * base[0]


def test_a_row_without_a_held_out_profile_is_not_predicted():
    rows = [IX["ixm-1347"], IX["ixm-1365"]]
    got = disagg_accuracy(rows, CAT, profile_for=lambda source: None)
    assert [g["id"] for g in got] == ["ixm-1347", "ixm-1365"]
    assert all("predicted" not in g for g in got)
    assert all(g["reason"] == "no profile fitted without this row's source" for g in got)


def test_inferencex_files_are_one_publisher():
    names = {r["source"] for f in ("public_inferencex.csv", "public_inferencex_history.csv")
             for r in read_rows(ROOT / "data/benchmarks" / f)[0]}  # fmt: skip
    assert len(names) == 2
    assert {h.publisher(s) for s in names} == {"SemiAnalysis InferenceX"}
    assert h.publisher("MLPerf Inference v6.0 DeepSeek-R1") == "MLPerf Inference v6.0 DeepSeek-R1"


def test_dstack_benchmarks_are_one_publisher():
    """dstack's disaggregated gpt-oss-120b rows (public_blogs_moe.csv) are held out with its
    two fitted benchmarks of public_amd.csv: three source names, one publisher."""
    names = {r["source"] for f in ("public_blogs_moe.csv", "public_amd.csv")
             for r in read_rows(ROOT / "data/benchmarks" / f)[0] if "dstack" in r["source"]}  # fmt: skip
    assert len(names) == 3
    assert {h.publisher(s) for s in names} == {"dstack"}


def test_tables_by_hand():
    """Three TPOT rows measured 100 ms, predicted 110 / 80 / 95: errors +10 %, -20 %, -5 %;
    MdAPE = median(10, 20, 5) = 10 %, median signed = -5 %; two InferenceX files and MLPerf
    are 2 publishers. One throughput row unpredicted: 0 predicted, no MdAPE."""
    ix1, ix2 = sorted(k for k, v in h.PUBLISHERS.items() if v == "SemiAnalysis InferenceX")
    df = pd.DataFrame(
        {
            "id": ["a", "b", "c", "d"],
            "source": [ix1, ix2, "MLPerf Inference v6.0 DeepSeek-R1", ix1],
            "kind": ["disaggregated + MTP", "speculative", "disaggregated", "disaggregated"],
            "metric": ["TPOT", "TPOT", "TPOT", "throughput"],
            "measured": [100.0, 100.0, 100.0, 50.0],
            "held out": [110.0, 80.0, 95.0, None],
        }
    )
    t = h.tables(df, ["held out"])
    tpot = t["total"].set_index("all speculative + disaggregated").loc["TPOT"]
    assert tpot["rows"] == 3 and tpot["predicted (held out)"] == 3
    assert tpot["publishers (held out)"] == 2
    assert tpot["MdAPE % (held out)"] == pytest.approx(10.0)
    assert tpot["median signed % (held out)"] == pytest.approx(-5.0)
    thr = t["total"].set_index("all speculative + disaggregated").loc["throughput"]
    assert thr["predicted (held out)"] == 0 and pd.isna(thr["MdAPE % (held out)"])
    kinds = set(t["kind"]["kind"])
    assert kinds == {"disaggregated + MTP", "aggregated + MTP/EAGLE", "disaggregated"}


def test_per_user_speed_read_as_tpot():
    """trtb1-0002 (TensorRT-LLM tech blog 1, 'MTP 1': TPS/User 198 at batch 1) predicted at
    200 tok/s: TPOT measured 1000 / 198 = 5.0505 ms, predicted 1000 / 200 = 5.0 ms.
    trtbp-0001 (the guide) prints 'Per User Output Throughput 274.7188': 1000 / 274.7188 =
    3.6401 ms (its value column is the total, 274.4168). A row at batch 3072 is not read."""
    df = pd.DataFrame(
        {
            "id": ["trtb1-0002", "trtbp-0001", "trtbp-0003"],
            "source": ["blog", "guide", "guide"],
            "kind": ["speculative", "speculative", "speculative"],
            "metric": ["throughput"] * 3,
            "measured": [198.0, 274.4168, 36384.0838],
            "held out": [200.0, 250.0, 30000.0],
        }
    )
    t = h.per_user_tpot(df, ["held out"]).set_index("id")
    assert list(t.index) == ["trtb1-0002", "trtbp-0001"]
    assert t.loc["trtb1-0002", "measured"] == pytest.approx(5.050505, rel=1e-6)
    assert t.loc["trtb1-0002", "held out"] == pytest.approx(5.0)
    assert t.loc["trtbp-0001", "measured"] == pytest.approx(3.640084, rel=1e-6)
    assert set(t["metric"]) == {"TPOT (1000 / tok/s/user)"}


def test_cache_writes_the_held_out_profiles_once_and_reads_them_back(tmp_path, monkeypatch):
    """``--cache``: the first run fits (``holdout_profiles``) and pickles the profiles; the
    second reads the pickle and fits nothing; the rows are predicted with the same profiles."""
    prof = load_profile()
    fits, seen = [], []
    monkeypatch.setattr(h, "issue30_sources", lambda: ["S"])
    monkeypatch.setattr(h, "holdout_profiles", lambda s: fits.append(s) or {"S": prof})

    def rows(disagg_history, profile_for):
        seen.append(profile_for("S"))
        return pd.DataFrame(
            [{"id": "x", "source": "S", "kind": "speculative", "metric": "TPOT",
              "measured": 10.0, "predicted": 11.0}]
        )  # fmt: skip

    monkeypatch.setattr(h, "issue30_rows", rows)
    monkeypatch.setattr(h, "per_user_tpot", lambda df, cols: df.iloc[0:0])
    cache = tmp_path / "p.pkl"
    assert h.main(["--cache", str(cache)]) == 0
    assert fits == [["S"]] and cache.exists()
    assert h.main(["--cache", str(cache)]) == 0
    assert fits == [["S"]]  # not fitted again
    assert seen[1].model_dump() == seen[0].model_dump() == prof.model_dump()
