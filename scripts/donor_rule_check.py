"""Which held-out rows change donor under a release-donor rule (docs/changes/2026-12-07e/donor.md).

Reads the fold profiles of a ``scripts/latency_rows.py --cache`` pickle (keys ``("release",
SOURCE)``: each fold's profile with its release nodes, fitted without SOURCE) and resolves
every prepared row of each fold's source (``release_params_for_row``, as ``planner
validate`` does) twice: with the release-donor rule off and on
(``planner.catalog.release_donor``: ``PLANNER_DONOR_VENDOR_FIRST``). Prints the rows whose
provenance changes, grouped. No simulation: a quick look at what a rule reaches before
scoring it with ``latency_rows.py`` / ``planner validate --holdout``.

Usage::

    PYTHONPATH=$PWD python scripts/donor_rule_check.py --cache base_cache.pkl
"""

from __future__ import annotations

import argparse
import os
import pickle
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planner.benchmarks.io import load_measurements  # noqa: E402
from planner.calibration.fit import prepare_rows, public_files_default  # noqa: E402
from planner.calibration.release_fit import release_params_for_row  # noqa: E402
from planner.catalog.catalog import load_catalog  # noqa: E402
from planner.catalog.release_donor import VENDOR_FIRST_ENV  # noqa: E402
from planner.errors import PlannerError  # noqa: E402


def provenance(r, prof, cat) -> str:
    """The provenance label of row ``r`` under fold profile ``prof`` (no as-of fits)."""
    try:
        return release_params_for_row(r, prof, cat)[1]
    except PlannerError as e:
        return f"error: {e}"


def changed(rows, profiles, cat, env: str = VENDOR_FIRST_ENV) -> Counter:
    """(source, gpu, framework, precision, before, after) -> rows whose provenance differs
    between ``env`` = 0 and ``env`` = 1 (restored afterwards)."""
    old = os.environ.get(env)
    out: Counter = Counter()
    try:
        for r in rows:
            if not r.release or ("release", r.source) not in profiles:
                continue
            prof = profiles[("release", r.source)]
            if prof is None:
                continue
            os.environ[env] = "0"
            a = provenance(r, prof, cat)
            os.environ[env] = "1"
            b = provenance(r, prof, cat)
            if a != b:
                out[(r.source[:40], r.gpu, r.framework, r.precision, a, b)] += 1
    finally:
        if old is None:
            os.environ.pop(env, None)
        else:
            os.environ[env] = old
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", required=True, help="latency_rows.py --cache pickle (read only)")
    a = ap.parse_args(argv)
    cat = load_catalog()
    rows = prepare_rows(load_measurements(public_files_default(), cat), cat)
    profiles = pickle.loads(Path(a.cache).read_bytes())
    out = changed(rows, profiles, cat)
    if not out:
        print("no row changes donor")
    for (src, gpu, fw, prec, b, c), n in sorted(out.items()):
        print(f"{n:4d}  {src} | {gpu} {fw} {prec}\n      off: {b}\n      on:  {c}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
