"""A partial leave-one-source-out run (``run_validation(holdout=...)``) gives a held-out row
the prediction of the full run, whichever other sources the same run holds out.

The trtllm-serve first-token latency of a fold is fitted on the held-out TTFT of the other
sources on its path (:func:`planner.calibration.latency_fit.first_token_folds`). Before
2026-12-07 a partial run fitted it on the other *held-out* sources only: InferenceX held out
alone found no other source, so its TensorRT-LLM TTFT lost the 120-140 ms (TP TTFT MdAPE
75.8 % against 10.2 % in ``scripts/ep_accuracy.py``'s full run).
"""

from __future__ import annotations

import pandas as pd
import pytest

from planner.calibration.accuracy import run_validation
from planner.calibration.fit import public_files_default
from planner.calibration.latency_fit import first_token_train_rows

IX, HIST, GPUSTACK = "InferenceMAX) open results", "InferenceX-app fixtures", "GPUStack"


def _path_rows(name: str, source: str, n: int) -> pd.DataFrame:
    """The first ``n`` TTFT rows of ``source`` in data/benchmarks/``name`` on the path."""
    f = next(p for p in public_files_default() if p.name == name)
    df = pd.read_csv(f, dtype=str, keep_default_na=False)
    df = df[df["source"].str.contains(source, regex=False)]
    ids = first_token_train_rows(df.to_dict("records"))
    keep = sorted(i for s in ids.values() for i in s)[:n]
    assert len(keep) == n, (name, source, len(keep))
    return df[df["id"].isin(keep)]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Three sources' first-token TTFT rows: 8 of InferenceX open results, 8 of the
    InferenceX history and GPUStack's 6 (a fold's latency needs 10 rows from 2 sources)."""
    d = tmp_path_factory.mktemp("holdout")
    out = []
    for name, src, n in (
        ("public_inferencex.csv", IX, 8),
        ("public_inferencex_history.csv", HIST, 8),
        ("public_nvidia.csv", GPUSTACK, 6),
    ):
        p = d / name
        _path_rows(name, src, n).to_csv(p, index=False)
        out.append(p)
    return out


def _held(files, holdout) -> pd.DataFrame:
    loso = run_validation(files, (), kfold=False, holdout=holdout)["loso"]
    return loso[loso["source"].str.contains(IX, regex=False)].set_index("id").sort_index()


def test_same_row_same_fold_same_prediction(files):
    """Open results held out alone = held out with the other two: the same 8 predictions,
    each with the fold's first-token latency (fitted on the other two sources' 14 rows)."""
    alone = _held(files, [IX])
    together = _held(files, [IX, HIST, GPUSTACK])
    assert len(alone) == 8 and list(alone.index) == list(together.index)
    assert (alone["fold"] == together["fold"]).all()
    # before the fix the alone run had no latency: predictions 120-140 ms lower
    assert alone["predicted"].tolist() == together["predicted"].tolist()
    assert alone["provenance"].str.contains("first token +").all()
    # only the held-out source is scored (the other folds are fitted, unscored)
    assert set(alone["source"]) == {"SemiAnalysis InferenceX (InferenceMAX) open results"}


def test_first_token_train_rows():
    """The rows the first-token latency is fitted on: TTFT of a TensorRT-LLM PyTorch run
    dated 2025-07-01 or later, not of an excluded source."""
    rec = {"framework": "trtllm", "framework_version": "1.2.0rc6", "notes": "",
           "mode": "concurrency", "as_of": "2025-10-01", "metric": "ttft_ms_median"}  # fmt: skip
    recs = [
        {**rec, "id": "a1", "source": "a"},
        {**rec, "id": "a2", "source": "a", "metric": "e2e_ms_median"},  # on path, not TTFT
        {**rec, "id": "a3", "source": "a", "as_of": "2025-02-01"},  # before 2025-07
        {**rec, "id": "b1", "source": "b", "framework": "vllm"},  # not on the path
        {**rec, "id": "c1", "source": "c"},
    ]
    assert first_token_train_rows(recs) == {"a": {"a1"}, "c": {"c1"}}
    assert first_token_train_rows(recs, exclude=["c"]) == {"a": {"a1"}}
    assert first_token_train_rows(recs, since=None) == {"a": {"a1", "a3"}, "c": {"c1"}}
