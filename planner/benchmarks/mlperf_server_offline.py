"""MLPerf Llama-2-70B Server / Interactive against Offline on the same GPU and round: where a
Server miss comes from (issue 32, "Done when" item 3).

A Server prediction is (predicted Server / predicted Offline) x predicted Offline. Its error
against the result therefore splits, exactly, into

* the **Offline error**: predicted Offline of the Server row's deployment over the round's
  measured Offline result (the saturation throughput: the step at the largest batch), and
* the **ratio error**: predicted Server / Offline over measured Server / Offline (how the
  planner finds the operating point under the scenario's latency limits: the Poisson search,
  its bound, the engine caps).

``(1 + server error) = (1 + Offline error) x (1 + ratio error)``. A ratio near the measured
one and a large Offline error says the step is wrong at the Offline batch, not the search;
the reverse says the search is.
"""

from __future__ import annotations

import math
from typing import Any


def measured_offline_per_gpu(df):
    """Median measured MLPerf Llama-2-70B Offline output tok/s per GPU per (round, GPU).

    Parameters
    ----------
    df
        benchmark rows (:func:`planner.benchmarks.io.load_measurements`).

    Returns
    -------
    dict
        ``{(round, gpu): (median tok/s per GPU, systems)}``; ``round`` as in
        :func:`planner.benchmarks.mlperf_latency.tight_tpot_records` (``"v5.1"``).
    """
    import pandas as pd

    d = df[
        df["source"].astype(str).str.startswith("MLPerf Inference")
        & (df["model"] == "llama-2-70b")
        & (df["mode"] == "offline")
        & (df["metric"] == "output_tok_s_total")
    ]
    n = pd.to_numeric(d["n_gpus"], errors="coerce")
    d = d.assign(per_gpu=pd.to_numeric(d["value"], errors="coerce") / n)
    d = d[d["per_gpu"].notna() & (n > 0)]
    d = d.assign(round=d["source"].astype(str).str.replace("MLPerf Inference ", "", regex=False))
    g = d.groupby(["round", "hardware"])["per_gpu"]
    return {k: (float(m), int(c)) for (k, m), c in zip(g.median().items(), g.size(), strict=True)}


def limited_by(provenance: str) -> str:
    """What set a Server / Interactive prediction, read from its provenance
    (:func:`planner.benchmarks.mlperf_latency.predict_per_gpu`): ``"offline cap"`` or the
    search's own limit (``"TPOT p99"``, ``"TTFT p99"``, ``"throughput ..."``)."""
    if "limited by the Offline throughput" in provenance:
        return "offline cap"
    i = provenance.find("limited by ")
    if i < 0:
        return ""
    return provenance[i + len("limited by ") :].split(";")[0].split(" (")[0]


def server_offline_table(
    records, offline_measured: dict, offline_predicted: dict[tuple[str, str, str], float]
):
    """Per (scenario, round, GPU): the Server (or Interactive) / Offline ratio measured and
    predicted, and the split of the Server error into the Offline error and the ratio error.

    Parameters
    ----------
    records
        :func:`planner.benchmarks.mlperf_latency.tight_tpot_records` (mode, round, gpu,
        measured, predicted [tok/s per GPU], provenance).
    offline_measured
        ``{(round, gpu): (tok/s per GPU, systems)}`` (:func:`measured_offline_per_gpu`).
    offline_predicted
        ``{(mode, round, gpu): tok/s per GPU}``: the simulated Offline throughput of the
        scenario rows' own deployment (:func:`planner.benchmarks.mlperf_latency.offline_per_gpu`).

    Returns
    -------
    DataFrame
        mode, round, gpu, measured and predicted [tok/s per GPU, medians over the round's
        systems], measured_offline, predicted_offline [tok/s per GPU], measured_ratio,
        predicted_ratio, error_pct, offline_error_pct, ratio_error_pct [%], limited_by (the
        most common limit of the group's predictions). NaN where the round has no Offline
        result for the GPU.
    """
    import pandas as pd

    out: list[dict[str, Any]] = []
    for (mode, rnd, gpu), g in records.groupby(["mode", "round", "gpu"], sort=False):
        meas, pred = float(g["measured"].median()), float(g["predicted"].median())
        mo = offline_measured.get((rnd, gpu), (math.nan, 0))[0]
        po = offline_predicted.get((mode, rnd, gpu), math.nan)
        mr, pr = meas / mo, pred / po
        out.append(
            {
                "mode": mode, "round": rnd, "gpu": gpu, "measured": meas, "predicted": pred,
                "measured_offline": mo, "predicted_offline": po,
                "measured_ratio": mr, "predicted_ratio": pr,
                "error_pct": 100 * (pred / meas - 1),
                "offline_error_pct": 100 * (po / mo - 1),
                "ratio_error_pct": 100 * (pr / mr - 1),
                "limited_by": g["provenance"].map(limited_by).mode().iloc[0],
            }
        )  # fmt: skip
    return pd.DataFrame(out).sort_values(
        ["mode", "round", "measured"], ascending=[True, True, False]
    )
