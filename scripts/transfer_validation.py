#!/usr/bin/env python3
"""Leave-one-GPU-out transfers to a sibling GPU (planner.calibration.transfer) on the bundled
measurements: the error of the ``sibling`` rule against the pooled rule it replaced, per
group, and the ``sibling`` tier's band.

Usage::

    python scripts/transfer_validation.py --details transfer.csv       # print the tables
    python scripts/transfer_validation.py --write     # also replace its section of docs/accuracy.md
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from planner.benchmarks.io import load_measurements  # noqa: E402
from planner.calibration.fit import data_files_default, prepare_rows  # noqa: E402
from planner.calibration.sections import put_section  # noqa: E402
from planner.calibration.transfer import transfer_band, transfer_validation  # noqa: E402
from planner.catalog import load_catalog  # noqa: E402
from planner.catalog.profile import load_profile  # noqa: E402

BEGIN, END = "<!-- sibling-transfer:begin -->", "<!-- sibling-transfer:end -->"


def table(df: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """MdAPE / P90 / bias [%] of both rules per group."""
    out = []
    for key, g in df.groupby(by, dropna=False):
        rec = dict(zip(by, key if isinstance(key, tuple) else (key,), strict=True))
        rec["n"] = len(g)
        for rule, col in (("sibling", "predicted"), ("pooled", "predicted_pooled")):
            r = (g[col] / g["measured"]).to_numpy()
            r = r[np.isfinite(r) & (r > 0)]
            ape = np.abs(r - 1)
            rec[f"{rule}_mdape_pct"] = round(100 * float(np.median(ape)), 1) if len(r) else None
            rec[f"{rule}_p90_pct"] = (
                round(100 * float(np.quantile(ape, 0.9)), 1) if len(r) else None
            )
            rec[f"{rule}_bias_pct"] = (
                round(100 * float(np.expm1(np.median(np.log(r)))), 1) if len(r) else None
            )
        out.append(rec)
    return pd.DataFrame(out)


def md(df: pd.DataFrame) -> str:
    """A Markdown table."""
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(v) for v in r) + " |" for r in df.itertuples(index=False)]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--details", help="write every held-out transfer to this CSV")
    ap.add_argument("--from-details", help="read the transfers from this CSV instead of refitting")
    ap.add_argument("--write", action="store_true", help="replace its section of docs/accuracy.md")
    args = ap.parse_args()
    if args.from_details:
        df = pd.read_csv(args.from_details)
    else:
        cat = load_catalog()
        rows = prepare_rows(load_measurements(data_files_default(), cat), cat)
        df = transfer_validation(rows, cat)
        if args.details:
            df.to_csv(args.details, index=False)
    df = df.assign(transfer=[f"{p.split('/')[1]} -> {g}" for p, g in
                             zip(df["provenance"].str.removeprefix("transferred from "), df["gpu"], strict=True)])  # fmt: skip
    from planner.calibration.bands import metric_class

    df["metric_class"] = [metric_class(m) for m in df["metric"]]
    band = transfer_band(df)
    bundled = load_profile()
    stored = bundled.error_bands.get("sibling") if bundled is not None else None
    text = "\n".join(
        [
            "## Transfer to a sibling GPU: leave-one-GPU-out on public and own rows",
            "",
            "An unfitted (GPU, framework, precision) takes the same framework and precision fitted "
            "on the nearest GPU of its architecture (`planner.catalog.profile.nearest_sibling`: "
            "smallest |ln bandwidth ratio| + |ln bf16 peak ratio| by the datasheets; the "
            "efficiencies transfer, the peaks and bandwidth are the target's own) before any "
            "pooled level. Evidence: for every (vendor, framework, architecture, precision) "
            "fitted on two or more GPUs, each GPU's rows of it are held out in turn, the profile "
            "is refitted without them and they are predicted by the sibling rule and by the "
            "pooled rule it replaced (the GPU's own node of every precision, else the "
            "architecture's node). Fitted row kinds only (step, static, offline, closed-loop "
            "throughput); the serving simulator is not run here. Regenerate with "
            "`python scripts/transfer_validation.py --write` (about 2.5 minutes).",
            "",
            md(table(df.assign(all="all"), ["all"])),
            "",
            md(table(df, ["metric_class"])),
            "",
            "By held-out transfer (donor -> target):",
            "",
            md(table(df, ["framework", "precision", "transfer"])),
            "",
            (
                f"p10-p90 of measured / predicted throughput over these transfers: "
                f"{band.ratio_p10:.2f}x-{band.ratio_p90:.2f}x, {band.n_rows} rows from "
                f"{band.n_sources} sources. The `sibling` tier's band in the profile "
                "(`planner.calibration.transfer.sibling_band`, what `planner calibrate` stores) "
                "pools them with the leave-one-source-out rows that land on the tier"
                + (
                    f": {stored.ratio_p10:.2f}x-{stored.ratio_p90:.2f}x, {stored.n_rows} rows "
                    f"from {stored.n_sources} sources"
                    if stored is not None
                    else ""
                )
                + "; `error_band` also spans the nearer `fit` tier's band."
                if band is not None
                else "No throughput transfer: no band."
            ),
            "",
        ]
    )
    print(text)
    if args.write:
        put_section(ROOT / "docs" / "accuracy.md", f"{BEGIN}\n{text}{END}\n", (BEGIN, END))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
