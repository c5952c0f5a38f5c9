"""Diagnosis: held-out latency rows when a release node taught only by offline bursts does
not predict (changes/s8-nvtpot.md, section 7).

A release node (one engine release on one GPU and precision, ``Profile.release_nodes``) is
fitted on the rows of that release. When every one of its training rows is an offline burst
(``mode`` offline: all requests sent at once), and with ``--prefill-bound`` each of them
also generates at most a tenth of its prompt tokens (GPUStack's DeepSeek H200 bursts:
128/4, 2000/100, 4000/200, 32000/100), the node sees decode only through its parent. This script removes such
nodes from every fold's release profile in a copy of ``scripts/latency_rows.py``'s
``--cache`` (no refit: the nodes are already fitted), so that the rows they predicted take
the next release node or the pooled fit, and runs ``latency_rows.py --no-scale`` on that
copy. Compare its CSV with the base run (``scripts/fold_without_rows.compare``).

This is a candidate rule for donor choice (``planner/calibration/release_fit.py`` /
``planner/catalog/release_profile.py``), measured over every source. It is not applied by
planner.

Usage::

    PYTHONPATH=$PWD python scripts/burst_donor_check.py --cache /tmp/base_cache.pkl \\
        --out-cache /tmp/burst_cache.pkl --base /tmp/base.csv -o /tmp/burst.csv
"""

from __future__ import annotations

import argparse
import pickle
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import fold_without_rows  # noqa: E402
import latency_rows  # noqa: E402

from planner.benchmarks.io import load_measurements  # noqa: E402
from planner.calibration.fit import prepare_rows, public_files_default  # noqa: E402
from planner.catalog.catalog import load_catalog  # noqa: E402


def prefill_bound(isl, osl) -> bool:
    """A burst row whose requests generate at most a tenth of their prompt tokens
    (``osl x 10 <= isl``; unknown lengths count as not prefill-bound)."""
    try:
        i, o = float(isl), float(osl)
    except (TypeError, ValueError):
        return False
    return i > 0 and o > 0 and o * 10 <= i


def burst_only(node, rows, lengths: dict | None = None) -> bool:
    """Whether every training row of release node ``node`` (same engine, release, precision,
    one of its GPUs and sources) is an offline burst; False when it has none. With
    ``lengths`` (id -> (isl, osl)), every row must also be :func:`prefill_bound`."""
    mine = [
        r
        for r in rows
        if r.framework == node.framework
        and r.release == node.release
        and (r.precision or None) == (node.precision or None)
        and r.gpu in node.gpus
        and r.source in node.sources
    ]
    if not mine or any(r.mode != "offline" for r in mine):
        return False
    return lengths is None or all(prefill_bound(*lengths.get(str(r.id), ("", ""))) for r in mine)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", required=True, help="latency_rows.py cache (read only)")
    ap.add_argument("--out-cache", required=True, help="the copy without burst-only nodes")
    ap.add_argument("--base", required=True, help="latency_rows.py CSV of the base cache")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument(
        "--prefill-bound",
        action="store_true",
        help="only nodes whose bursts all generate <= a tenth of their prompt tokens",
    )
    ap.add_argument(
        "--scale", action="store_true", help="latency_rows.py's default prefill scale, not 1"
    )
    a = ap.parse_args(argv)
    if Path(a.out_cache).resolve() == Path(a.cache).resolve():
        raise SystemExit("--out-cache must differ from --cache")
    cat = load_catalog()
    df = load_measurements(public_files_default(), cat)
    rows = prepare_rows(df, cat)
    lengths = None
    if a.prefill_bound:
        lengths = {str(i): (x, y) for i, x, y in zip(df["id"], df["isl"], df["osl"], strict=True)}
    profiles = pickle.loads(Path(a.cache).read_bytes())
    for key, prof in list(profiles.items()):
        if not (isinstance(key, tuple) and key[0] == "release") or prof is None:
            continue
        train = [r for r in rows if r.source != key[1]]
        keep = tuple(n for n in prof.release_nodes if not burst_only(n, train, lengths))
        for n in prof.release_nodes:
            if n not in keep:
                print(f"fold {key[1][:40]}: drop {n.framework}@{n.release} {n.gpu} "
                      f"{n.precision} ({n.n_rows} rows, {', '.join(n.sources)[:50]})")  # fmt: skip
        profiles[key] = prof.model_copy(update={"release_nodes": keep})
    Path(a.out_cache).write_bytes(pickle.dumps(profiles))
    latency_rows.main(
        [*([] if a.scale else ["--no-scale"]), "--cache", a.out_cache, "-o", a.output]
    )
    with pd.option_context("display.width", 250, "display.max_rows", 300):
        for mc, t in fold_without_rows.compare(pd.read_csv(a.base), pd.read_csv(a.output)).items():
            print(f"== {mc}: before (base) / after (burst-only release nodes removed)")
            print(t.to_string(), "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
