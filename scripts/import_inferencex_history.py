"""InferenceX (SemiAnalysis InferenceMAX) dashboard records -> benchmark rows of the layouts
issues 29 and 30 need: expert parallel (TP+EP), attention data-parallel (DEP), speculative
decoding (MTP) and disaggregated prefill/decode (xPyD), with TPOT, TTFT and E2E medians beside
the throughputs.

Input: the dashboard API as captured by SemiAnalysisAI/InferenceX-app
(``packages/app/cypress/fixtures/api/benchmarks-history.json`` and ``benchmarks.json``, the
``/api/v1/benchmarks[/history]`` answers for DeepSeek-R1-0528, written by
``packages/app/scripts/capture-cypress-fixtures.ts``). Each record is one measured point: a
config (hardware, framework, precision, spec_method, disagg, prefill/decode tp, ep,
dp_attention, workers and GPUs), the nominal isl/osl, the client concurrency, the run date,
the GitHub Actions run and ``metrics`` (``tput_per_gpu``, ``output_tput_per_gpu``,
``median_tpot``/``ttft``/``e2el`` in seconds, ...).

Rules (the same as ``public_inferencex.csv``'s, sources.yaml):

* Only runs dated from 2026-01-21 (the client ``utils/bench_serving/benchmark_serving.py``
  is in the InferenceX repository from then; before it was cloned at run time, version not
  recorded). Only configs that are not plain TP (plain TP points are in
  ``public_inferencex.csv``). The AMD ATOM engine is left out (not in frameworks.yaml).
* Throughputs: InferenceX divides the client's token throughput by the TP GPUs on one node and
  by prefill + decode GPUs for disaggregated runs, but their output throughput by the decode
  GPUs only (``utils/process_result.py`` @ 450d834a9 .. 843c6254f), so the row multiplies
  ``tput_per_gpu`` / ``output_tput_per_gpu`` back (the fixture's ``num_decode_gpu`` of a single-node EP run
  is tp x ep, not the GPUs used, and is not read).
* Layout columns: ``DP-attention=true`` -> DEP (tp 1, attention_dp = TP, ep = EP); else
  tp = TP, ep = EP. Disaggregated rows leave tp/ep empty and state the pools in the notes
  (``planner.benchmarks.disagg_rows`` reads them); speculative and disaggregated rows carry
  ``layout_unsupported`` (read by ``speculative_rows`` / ``disagg_rows``; the generic predictor
  declines them).
* Framework version: the record's ``image`` (benchmarks.json); for history records the image of
  the config (``dsr1-<precision>-<hw>-<framework>[-mtp]``) in the InferenceX repository's
  ``.github/configs`` or ``configs/{nvidia,amd}-master.yaml`` at the last commit on or before
  the run date (``--inferencex-git``: a git directory of SemiAnalysisAI/InferenceX).
* Duplicates: a row is the same as another when (gpu, framework, version, layout, concurrency,
  isl, osl, mtp, disagg, metric) agree; rows already in ``--existing`` files are not written,
  and among the new records the latest run is kept.

Usage (from the repository root; the committed file was made from four fixtures: both files at
the upstream commits 528c4146b8f5 (PR #458) and cac6246e9fef (PR #318), read from a clone that
holds them, e.g. the vngcloud/InferenceX-app fork)::

    G=<InferenceX-app git dir>; A=packages/app/cypress/fixtures/api
    C1=528c4146b8f502fcbce8df7870a935a970cbae25; C0=cac6246e9fef70841e48e1434cbf10bb9a2802a8
    for c in $C1 $C0; do for f in benchmarks-history benchmarks; do
        git --git-dir=$G show $c:$A/$f.json > /tmp/$f-$c.json; done; done
    python scripts/import_inferencex_history.py \\
        --fixture /tmp/benchmarks-history-$C1.json $C1 benchmarks-history.json \\
        --fixture /tmp/benchmarks-$C1.json $C1 benchmarks.json \\
        --fixture /tmp/benchmarks-history-$C0.json $C0 benchmarks-history.json \\
        --fixture /tmp/benchmarks-$C0.json $C0 benchmarks.json \\
        --inferencex-git <SemiAnalysisAI/InferenceX git dir> \\
        --existing data/benchmarks/public_inferencex.csv \\
        -o data/benchmarks/public_inferencex_history.csv

The fixture order matters only for which fixture a row's source_detail names when the same run
is in several (the first given).
"""

from __future__ import annotations

import argparse
import collections
import csv
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import yaml

from planner.benchmarks.schema import SCHEMA_COLUMNS

SOURCE = "SemiAnalysis InferenceX benchmarks history (InferenceX-app fixtures)"
REPO = "SemiAnalysisAI/InferenceX-app"
FIXTURE_DIR = "packages/app/cypress/fixtures/api"
FIRST_DAY = "2026-01-21"
#: the row schema's columns (planner/benchmarks/schema.py); these files state no moe_tp
COLUMNS = [c for c in SCHEMA_COLUMNS if c != "moe_tp"]
HARDWARE = {
    "h100": "nvidia-h100-sxm",
    "h200": "nvidia-h200-sxm",
    "b200": "nvidia-b200",
    "b300": "nvidia-b300",
    "gb200": "nvidia-gb200",
    "gb300": "nvidia-gb300",
    "mi300x": "amd-mi300x",
    "mi325x": "amd-mi325x",
    "mi355x": "amd-mi355x",
}
#: InferenceX framework -> (planner framework, words for framework_version, config suffix)
FRAMEWORK = {
    "sglang": ("sglang", "SGLang", "sglang"),
    "trt": ("trtllm", "TensorRT-LLM", "trt"),
    "dynamo-sglang": ("sglang", "SGLang workers under NVIDIA Dynamo", "dynamo-sglang"),
    "dynamo-trt": ("trtllm", "TensorRT-LLM workers under NVIDIA Dynamo", "dynamo-trt"),
    "mori-sglang": ("sglang", "SGLang disaggregated serving with AMD MoRI", "sglang-disagg"),
}
#: (metric, unit, metrics key, factor, how) in the order rows are written
METRICS = (
    ("total_tok_s", "tok/s", "tput_per_gpu", None, "tput_per_gpu"),
    ("output_tok_s_total", "tok/s", "output_tput_per_gpu", None, "output_tput_per_gpu"),
    ("tpot_ms_median", "ms", "median_tpot", 1000.0, "median_tpot"),
    ("ttft_ms_median", "ms", "median_ttft", 1000.0, "median_ttft"),
    ("e2e_ms_median", "ms", "median_e2el", 1000.0, "median_e2el"),
)


def precision(hw: str, p: str) -> str:
    """fp4 is NVFP4 (nvidia/DeepSeek-R1-0528-FP4*) on NVIDIA, MXFP4 (amd/...-MXFP4) on AMD."""
    if p == "fp4":
        return "mxfp4" if hw.startswith("mi") else "nvfp4"
    return p


def layout_kind(r: dict) -> str:
    """TP, TP+EP, DEP, disagg, each with +MTP when speculative."""
    if r["disagg"]:
        k = "disagg"
    elif r["decode_dp_attention"]:
        k = "DEP"
    elif r["decode_ep"] > 1:
        k = "TP+EP"
    else:
        k = "TP"
    return k + ("+MTP" if r["spec_method"] != "none" else "")


class Images:
    """The image of an InferenceX config at the last commit on or before a date."""

    def __init__(self, git_dir: str | None):
        self.git = git_dir
        self._docs: dict[str, dict] = {}

    def _run(self, *args: str) -> str:
        return subprocess.run(
            ["git", f"--git-dir={self.git}", *args], capture_output=True, text=True, check=False
        ).stdout

    def __call__(self, name: str, vendor: str, day: str) -> tuple[str, str] | None:
        if not self.git:
            return None
        commit = self._run("rev-list", "-1", f"--before={day} 23:59:59 +0000", "HEAD").strip()
        if not commit:
            return None
        if commit not in self._docs:
            doc: dict = {}
            for path in (".github/configs", "configs"):
                text = self._run("show", f"{commit}:{path}/{vendor}-master.yaml")
                if text:
                    doc = yaml.safe_load(text) or {}
                    doc["_path"] = f"{path}/{vendor}-master.yaml"
                    break
            self._docs[commit] = doc
        doc = self._docs[commit]
        for n in (name, name.removesuffix("-mtp")):  # multi-node MTP sweeps share a config
            cfg = doc.get(n)
            if isinstance(cfg, dict) and "image" in cfg:
                # enroot's "registry#image" spelling is the same image as "registry/image"
                image = str(cfg["image"]).replace("#", "/", 1)
                return image, f"{doc['_path']} @ {commit[:12]}, key {n}"
        return None


def config_name(r: dict) -> str:
    fw = FRAMEWORK[r["framework"]][2]
    return f"dsr1-{r['precision']}-{r['hardware']}-{fw}" + (
        "-mtp" if r["spec_method"] != "none" else ""
    )


def pool_text(r: dict, side: str) -> str:
    gpus = r[f"num_{side}_gpu"]
    dpa = "true" if r[f"{side}_dp_attention"] else "false"
    return f"{side} TP={r[f'{side}_tp']} EP={r[f'{side}_ep']} DP-attention={dpa} x {gpus} GPUs"


def layout_key(r: dict) -> str:
    """The layout part of the duplicate key, as the notes state it."""
    if r["disagg"]:
        return (
            f"{r['prefill_num_workers']}P/{r['decode_num_workers']}D; {pool_text(r, 'prefill')}; "
            f"{pool_text(r, 'decode')}"
        )
    dpa = "true" if r["decode_dp_attention"] else "false"
    return f"TP={r['decode_tp']}, EP={r['decode_ep']}, DP-attention={dpa}"


def image_of(notes_version: str) -> str:
    m = re.search(r"image (\S+)", notes_version)
    return m.group(1) if m else notes_version


def existing_keys(paths: list[Path]) -> set[tuple]:
    """Duplicate keys of the rows already in the repository's InferenceX files."""
    keys = set()
    pool = re.compile(r"(prefill|decode) TP=\d+ EP=\d+ DP-attention=(?:true|false) x \d+ GPUs")
    for p in paths:
        with open(p, newline="") as f:
            for row in csv.DictReader(f):
                n = row["notes"]
                if "InferenceX" not in row["source"]:
                    continue
                disagg = "disaggregated prefill/decode" in n
                if disagg:
                    w = re.search(r"(\d+)P/(\d+)D workers", n)
                    lay = f"{w.group(1)}P/{w.group(2)}D; " + "; ".join(
                        m.group(0) for m in pool.finditer(n)
                    )
                else:
                    m = re.search(r"TP=(\d+), EP=(\d+), DP-attention=(true|false)", n)
                    if m:
                        lay = m.group(0)
                    else:  # plain TP rows: "TP=4, EP=1, no attention data-parallel"
                        m = re.search(r"TP=(\d+), EP=(\d+)", n)
                        lay = f"{m.group(0)}, DP-attention=false" if m else ""
                isl = re.search(r"nominal input (\d+)", n) or re.search(
                    r"random_input_len=(\d+)", n
                )
                osl = re.search(r"output (\d+) tokens", n) or re.search(
                    r"random_output_len=(\d+)", n
                )
                mtp = "spec 'mtp'" in n or "speculative decoding (MTP)" in n
                keys.add(
                    (
                        row["hardware"],
                        row["framework"],
                        image_of(row["framework_version"]),
                        lay,
                        int(row["concurrency"] or 0),
                        int(isl.group(1)) if isl else None,
                        int(osl.group(1)) if osl else None,
                        mtp,
                        disagg,
                        row["metric"],
                    )
                )
    return keys


_IDENT = [
    "run_url",
    "hardware",
    "framework",
    "precision",
    "spec_method",
    "disagg",
    "prefill_tp",
    "prefill_ep",
    "prefill_dp_attention",
    "prefill_num_workers",
    "decode_tp",
    "decode_ep",
    "decode_dp_attention",
    "decode_num_workers",
    "num_prefill_gpu",
    "num_decode_gpu",
    "isl",
    "osl",
]


def run_ident(r: dict) -> tuple:
    """A config within one run (every concurrency point of it ran on the same image)."""
    return tuple(r[k] for k in _IDENT)


def sha12(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


def convert(fixtures, images: Images, existing: set[tuple]) -> tuple[list[dict], dict]:
    """Rows and the counts of what was skipped (by reason)."""
    stats: collections.Counter = collections.Counter()
    chosen: dict[tuple, tuple] = {}
    dupes: set[tuple] = set()
    seen: dict[tuple, set[str]] = {}
    # the image a benchmarks.json record states for its run, for the same run's history points
    stated = {
        run_ident(r): r["image"]
        for path, _, _ in fixtures
        for r in json.loads(Path(path).read_text())
        if r.get("image")
    }
    for path, commit, name in fixtures:
        detail = (
            f"https://github.com/{REPO}/blob/{commit}/{FIXTURE_DIR}/{name} "
            f"(/api/v1/{'benchmarks/history' if 'history' in name else 'benchmarks'}, "
            f"DeepSeek-R1-0528; sha256 {sha12(Path(path))}; captured from the production API "
            f"https://inferencex.semianalysis.com by packages/app/scripts/capture-cypress-fixtures.ts)"
        )
        for r in json.loads(Path(path).read_text()):
            stats["records"] += 1
            if r["model"] != "dsr1" or r["hardware"] not in HARDWARE:
                stats["skipped: model or hardware"] += 1
                continue
            if r["framework"] not in FRAMEWORK:
                stats[f"skipped: framework {r['framework']} (not in frameworks.yaml)"] += 1
                continue
            if layout_kind(r) == "TP":
                stats["skipped: plain TP (public_inferencex.csv)"] += 1
                continue
            if r["date"] < FIRST_DAY:
                stats["skipped: run before 2026-01-21 (client version not recorded)"] += 1
                continue
            vendor = "amd" if r["hardware"].startswith("mi") else "nvidia"
            if r.get("image") or run_ident(r) in stated:
                img = r.get("image") or stated[run_ident(r)]
                where = "the run's record in benchmarks.json (image)"
            else:
                got = images(config_name(r), vendor, r["date"])
                if got is None:
                    stats["skipped: no image for the config at the run date"] += 1
                    continue
                img, where = (
                    got[0],
                    f"config {config_name(r)} in SemiAnalysisAI/InferenceX {got[1]}",
                )
            fw, words, _ = FRAMEWORK[r["framework"]]
            hw = HARDWARE[r["hardware"]]
            for metric, *_ in METRICS:
                key = (hw, fw, img, layout_key(r), r["conc"], r["isl"], r["osl"],
                       r["spec_method"] != "none", bool(r["disagg"]), metric)  # fmt: skip
                if key in existing:
                    dupes.add(key)
                    continue
                seen.setdefault(key, set()).add(r["run_url"])
                old = chosen.get(key)
                if old is not None and (old[0]["date"], old[0]["run_url"]) >= (
                    r["date"],
                    r["run_url"],
                ):
                    continue
                chosen[key] = (r, detail, img, where, words)
    for metric, *_ in METRICS:
        stats[f"rows already in the existing files, not written ({metric})"] = sum(
            1 for k in dupes if k[9] == metric
        )
        stats[f"older runs of a written key, not written ({metric})"] = sum(
            len(v) - 1 for k, v in seen.items() if k[9] == metric
        )
    rows = []
    for key in sorted(chosen, key=lambda k: tuple(str(x) for x in k[:9]) + (_order(k[9]),)):
        r, detail, img, where, words = chosen[key]
        rows.append(_row(r, key[9], detail, img, where, words))
    for i, row in enumerate(rows, 1):
        row["id"] = f"ixh-{i:04d}"
    return rows, dict(stats)


def _order(metric: str) -> int:
    return [m[0] for m in METRICS].index(metric)


def _row(r: dict, metric: str, detail: str, img: str, where: str, words: str) -> dict:
    hw = HARDWARE[r["hardware"]]
    fw = FRAMEWORK[r["framework"]][0]
    _, unit, mkey, factor, _ = next(m for m in METRICS if m[0] == metric)
    raw = r["metrics"][mkey]
    spec = r["spec_method"]
    tags: list[str] = []
    unsupported: list[str] = []
    out = dict.fromkeys(COLUMNS, "")
    if r["disagg"]:
        gpus = r["num_prefill_gpu"] + r["num_decode_gpu"]
        what = "prefill + decode GPUs"
        unsupported.append(
            f"disaggregated prefill/decode ({r['num_prefill_gpu']} prefill + "
            f"{r['num_decode_gpu']} decode GPUs, {r['prefill_num_workers']}P/"
            f"{r['decode_num_workers']}D workers)"
        )
        if r["is_multinode"]:
            unsupported.append("multi-node")
        lay_note = f"{pool_text(r, 'prefill')}; {pool_text(r, 'decode')}"
    else:
        tp, ep, dpa = r["decode_tp"], r["decode_ep"], r["decode_dp_attention"]
        gpus = tp
        what = "TP GPUs"
        if dpa:
            out.update(tp="1", pp="1", ep=str(ep), attention_dp=str(tp))
            label = f"DEP{tp}" if ep == tp else f"attention DP {tp} EP{ep}"
        else:
            out.update(tp=str(tp), pp="1", ep=str(ep), attention_dp="1")
            label = f"TP{tp} EP{ep}" if ep > 1 else f"TP{tp}"
        lay_note = (
            f"layout {label} (tp={out['tp']}, ep={ep}, attention_dp={out['attention_dp']}; "
            f"from InferenceX TP={tp}, EP={ep}, DP-attention={'true' if dpa else 'false'}); "
            f"TP={tp}, EP={ep}, DP-attention={'true' if dpa else 'false'}"
        )
        lo, li = r["osl"], r["isl"]
        tags = [
            "client: InferenceX utils/bench_serving/benchmark_serving.py closed loop (run date "
            "after 2026-01-21, when the client moved into the repository; sources.yaml)",
            f"random_input_len={li}",
            f"random_output_len={lo}",
            "random_range_ratio=0.8",
            f"{10 * r['conc']} requests (10 x concurrency prompts, the harness rule in sources.yaml)",
        ]
    if spec != "none":
        unsupported.append(f"speculative decoding ({spec.upper()})")
    if factor is None and r["disagg"] and metric == "output_tok_s_total":
        # utils/process_result.py (multi-node, from 450d834a9 2025-11-05 to 843c6254f):
        # output_tput_per_gpu = output_throughput / decode_gpus
        value = raw * r["num_decode_gpu"]
        how = (
            f"{metric} = {mkey} {raw!r} x {r['num_decode_gpu']} decode GPUs (InferenceX "
            "divides the client's output throughput by the decode GPUs)"
        )
    elif factor is None:
        value = raw * gpus
        how = (
            f"{metric} = {mkey} {raw!r} x {gpus} GPUs (InferenceX divides the client's "
            f"token throughput by the {what})"
        )
    else:
        value = raw * factor
        how = f"{metric} = {mkey} {raw!r} s x 1000"
    notes = []
    if unsupported:
        notes.append("layout_unsupported: " + ", ".join(unsupported))
    notes += [
        how,
        f"InferenceX {'multi' if r['is_multinode'] else 'single'}-node fixed-seq-len sweep, "
        f"framework '{r['framework']}', precision '{r['precision']}', spec '{spec}'",
        lay_note,
        *tags,
        f"run {r['run_url']}",
        f"run date {r['date']}",
        f"image from {where}",
        f"random dataset: nominal input {r['isl']} / output {r['osl']} tokens, range ratio 0.8 "
        f"(benchmark-tmpl.yml RANDOM_RANGE_RATIO), concurrency {r['conc']}",
        "model DeepSeek-R1-0528 (DeepSeek-V3 architecture)",
    ]
    out.update(
        source=SOURCE,
        source_detail=detail,
        as_of=r["date"],
        hardware=hw,
        n_gpus=str(gpus),
        model="deepseek-v3",
        precision=precision(r["hardware"], r["precision"]),
        framework=fw,
        framework_version=f"image {img} | {words}",
        mode="concurrency",
        concurrency=str(r["conc"]),
        request_rate="inf",
        metric=metric,
        value=f"{value:.2f}" if factor is None else f"{value:.3f}",
        unit=unit,
        notes="; ".join(notes),
    )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example (the committed file; see the module docstring for the fixtures):\n"
        + __doc__[__doc__.index("    G=<") :],
    )
    ap.add_argument("--fixture", nargs=3, action="append", required=True,
                    metavar=("PATH", "COMMIT", "NAME"),
                    help="a fetched fixture JSON, the InferenceX-app commit it was read at, and "
                    "its file name under packages/app/cypress/fixtures/api")  # fmt: skip
    ap.add_argument("--inferencex-git", help="git directory of SemiAnalysisAI/InferenceX")
    ap.add_argument("--existing", nargs="*", default=[], type=Path)
    ap.add_argument("-o", "--output", type=Path, required=True)
    a = ap.parse_args(argv)
    rows, stats = convert(a.fixture, Images(a.inferencex_git), existing_keys(a.existing))
    with open(a.output, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    for k, v in sorted(stats.items()):
        print(f"{k}: {v}", file=sys.stderr)
    kinds = collections.Counter()
    for row in rows:
        n = row["notes"]
        spec = "+MTP" if "spec 'mtp'" in n else ""
        if "disaggregated" in n:
            k = "disagg"
        elif row["attention_dp"] not in ("", "1"):
            k = "DEP"
        else:
            k = "TP+EP" if row["ep"] not in ("", "1") else "TP"
        kinds[(k + spec, row["metric"])] += 1
    for k, v in sorted(kinds.items()):
        print(f"rows {k[0]:12s} {k[1]:20s} {v}", file=sys.stderr)
    print(f"wrote {len(rows)} rows to {a.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
