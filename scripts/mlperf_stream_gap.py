"""MLPerf DeepSeek-R1, v5.1 against v6.0: where the held-out TPOT gap sits, by the harness'
``stream_interval`` and the decoding sequences per attention-DP rank (issue 29, item 1;
changes/s8-v51host.md).

Reads the MLPerf rows (``data/benchmarks/public_mlperf_moe.csv``, notes written by
``scripts/import_mlperf_moe.py``) and a held-out predictions CSV (``scripts/ep_accuracy.py
--save``, or the cached leave-one-source-out run) and prints two tables:

* **Server**, one line per (round, system, rate): the ``stream_interval`` and MoE backend the
  notes name, the decoding sequences per rank by Little's law (output tok/s x mean TPOT / GPUs;
  these layouts are DEP8, one attention-DP rank per GPU), measured and predicted mean TPOT and
  their gap [ms].
* **Offline**: output tok/s (these runs do not stream: the harness turns streaming off in
  Offline) and the step a full batch implies (``max_num_seqs`` per rank x GPUs
  / output tok/s; an upper bound on the step when the batch is not full).

Usage (repository root; seconds)::

    PYTHONPATH=$PWD python scripts/mlperf_stream_gap.py --predictions HELD_OUT.csv
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

DATA = ROOT / "data" / "benchmarks" / "public_mlperf_moe.csv"
_SI = re.compile(r"stream_interval (\d+) \(")
#: an Offline row: the harness does not stream (scripts/import_mlperf_moe.offline_front_end)
_NO_STREAM = "Offline: no streaming"
_MOE = re.compile(r"moe_backend (\w+)\)")
_SEQS = re.compile(r"max_num_seqs=(\d+)")
_SYSTEM = re.compile(r"system (\S+)")


def per_rank_sequences(output_tok_s: float, tpot_ms: float, n_ranks: int) -> float:
    """Decoding sequences per rank by Little's law: each decoding sequence emits one token
    every ``tpot_ms``, so ``output_tok_s x tpot_s`` sequences decode at once, spread over
    ``n_ranks`` ranks [sequences]."""
    if output_tok_s <= 0 or tpot_ms <= 0 or n_ranks <= 0:
        raise ValueError("output_tok_s, tpot_ms and n_ranks must be positive")
    return output_tok_s * tpot_ms / 1000.0 / n_ranks


def full_batch_step_ms(max_seqs_per_rank: int, n_ranks: int, output_tok_s: float) -> float:
    """The decode step [ms] an Offline run implies when every rank holds ``max_seqs_per_rank``
    sequences: the replica emits ``max_seqs x ranks`` tokens a step."""
    if max_seqs_per_rank <= 0 or n_ranks <= 0 or output_tok_s <= 0:
        raise ValueError("max_seqs_per_rank, n_ranks and output_tok_s must be positive")
    return max_seqs_per_rank * n_ranks / output_tok_s * 1000.0


def _field(pattern: re.Pattern, notes: str) -> str:
    m = pattern.search(notes or "")
    return m.group(1) if m else ""


def tables(rows: pd.DataFrame, pred: pd.Series) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(server, offline) tables from the MLPerf rows and predictions indexed by row id."""
    rows = rows.assign(
        round=rows["source"].str.extract(r"(v\d+\.\d+)")[0],
        system=rows["notes"].map(lambda n: _field(_SYSTEM, n)),
        stream_interval=rows["notes"].map(
            lambda n: "off (no streaming)" if _NO_STREAM in n else _field(_SI, n)
        ),
        moe_backend=rows["notes"].map(lambda n: _field(_MOE, n)),
        max_seqs=rows["notes"].map(lambda n: _field(_SEQS, n)),
    )
    server, offline = [], []
    keys = ["round", "system", "request_rate"]
    for (rnd, system, rate), g in rows[rows["mode"] == "server"].groupby(keys):
        v = dict(zip(g["metric"], g["value"].astype(float), strict=True))
        ids = dict(zip(g["metric"], g["id"], strict=True))
        if "tpot_ms_mean" not in v or "output_tok_s_total" not in v:
            continue
        n = int(g["n_gpus"].iloc[0])
        p = pred.get(ids["tpot_ms_mean"])
        server.append(
            {
                "round": rnd,
                "system": system,
                "gpu": g["hardware"].iloc[0],
                "rate": float(rate),
                "stream_interval": g["stream_interval"].iloc[0],
                "moe_backend": g["moe_backend"].iloc[0],
                "seqs_per_rank": round(per_rank_sequences(v["output_tok_s_total"], v["tpot_ms_mean"], n), 1),
                "tpot_ms": v["tpot_ms_mean"],
                "predicted_ms": None if p is None else round(float(p), 1),
                "gap_ms": None if p is None else round(v["tpot_ms_mean"] - float(p), 1),
            }
        )  # fmt: skip
    for _, r in rows[
        (rows["mode"] == "offline") & (rows["metric"] == "output_tok_s_total")
    ].iterrows():
        tok = float(r["value"])
        seqs = int(r["max_seqs"]) if r["max_seqs"] else None
        offline.append(
            {
                "round": r["round"],
                "system": r["system"],
                "gpu": r["hardware"],
                "stream_interval": r["stream_interval"],
                "moe_backend": r["moe_backend"],
                "output_tok_s": tok,
                "max_seqs_per_rank": seqs,
                "full_batch_step_ms": None if seqs is None else round(full_batch_step_ms(seqs, int(r["n_gpus"]), tok), 1),
                "predicted_tok_s": None if pred.get(r["id"]) is None else round(float(pred[r["id"]])),
            }
        )  # fmt: skip
    s = pd.DataFrame(server).sort_values(["round", "seqs_per_rank"]).reset_index(drop=True)
    o = pd.DataFrame(offline).sort_values(["round", "gpu", "output_tok_s"]).reset_index(drop=True)
    return s, o


def markdown(df: pd.DataFrame) -> str:
    """A pipe table of ``df`` (empty cells for missing values)."""
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for rec in df.itertuples(index=False):
        lines.append("| " + " | ".join("" if pd.isna(x) else str(x) for x in rec) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="example: PYTHONPATH=$PWD python scripts/mlperf_stream_gap.py "
        "--predictions ep_after.csv (from scripts/ep_accuracy.py --save ep_after.csv)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--predictions", required=True, help="held-out predictions CSV (id, predicted)")
    args = ap.parse_args(argv)
    rows = pd.read_csv(DATA, dtype=str, keep_default_na=False)
    pred = pd.read_csv(args.predictions).drop_duplicates("id").set_index("id")["predicted"]
    server, offline = tables(rows, pred)
    print(markdown(server))
    print()
    print(markdown(offline))
    return 0


if __name__ == "__main__":
    sys.exit(main())
