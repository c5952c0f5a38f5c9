"""Write the batch limits of each pool of InferenceX's NVIDIA disaggregated runs into the
rows' notes, read in the srt-slurm recipe each run used (issue 30: a disaggregated row's TTFT
and TPOT depend on how many requests each pool runs at once; the records do not say).

Where they are read (SemiAnalysisAI/InferenceX, local mirror ``IX_REPO``), as
``annotate_spec_recipes.py`` reads K:

1. the sweep config ``.github/configs/nvidia-master.yaml`` at the last commit on or before the
   row's run date; the entry is the one DeepSeek-R1 disaggregated config of the row's GPU,
   precision and framework whose search-space point has the row's ``spec-decoding`` (``mtp``
   or not), concurrency, ISL / OSL and both pools (workers, TP, EP, DP-attention). Exactly one
   entry, or the row is left as it is;
2. its ``CONFIG_FILE=recipes/...`` (an srt-slurm recipe), read in InferenceX's own copies
   (``benchmarks/multi_node/srt-slurm-recipes/**``): the config's own path where it exists,
   else every copy of the same file name for the same engine, GPU, precision and ISL / OSL;
   all copies must agree; for TensorRT-LLM the file name's ``batch<N>`` must equal the decode
   pool's ``max_batch_size`` (it pins the value where the copy is dated after the run);
3. per pool, the limits **per attention rank** (the planner's meaning of ``max_num_seqs``
   and ``max_num_batched_tokens`` under attention DP, ``build_replica``):

   * **TensorRT-LLM** (``trtllm_config.<pool>``): ``max_batch_size`` and ``max_num_tokens``.
     Both are per rank (per attention-DP rank with ``enable_attention_dp``), as the planner
     reads them;
   * **SGLang** (``sglang_config.<pool>``): ``max-running-requests`` is the server's total:
     with ``enable-dp-attention`` each of the ``data-parallel-size`` schedulers gets
     ``max-running-requests // dp`` (sglang ``srt/model_executor/pool_configurator.py``:
     ``requested_max_running_requests_per_worker``, i.e. ``max_running_requests // dp_size``,
     in public copies of the source read through the code index); the
     per-step token budget is ``min(max-prefill-tokens, chunked-prefill-size)``, where
     ``chunked-prefill-size`` is likewise divided by ``dp`` under DP attention
     (``ServerArgs``: ``chunked_prefill_size // dp_size``). A limit the recipe does not set
     is left to the engine's default (not written).

The note appended is ``pool limits (<where>): prefill max_num_seqs <n>, max_num_batched_tokens
<t> per rank (<lines>); decode max_num_seqs <n>, ... per rank (<lines>)`` (a pool with no
limit set says ``engine defaults``). Running twice changes nothing (a row with the tag is
skipped). AMD (MI355X) rows are not read: their launcher derives the limits from
``models.yaml`` through a three-way branch and a DP+EP override to the benchmark's maximum
concurrency, which this script does not reproduce.

Usage: ``python scripts/annotate_pool_limits.py [--check] [--repo PATH]``
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from annotate_harness_flags import annotate  # noqa: E402  (the shared CSV rewriter)
from annotate_spec_recipes import (  # noqa: E402
    _DAY,
    _LENS,
    _POOLS,
    _WORKERS,
    COPIES,
    FILES,
    IX,
    IX_REPO,
    RUNNER,
    Mirror,
    _settings,
    dsr1_disagg_entries,
)

TAG = "pool limits ("
_FW = re.compile(r"framework '([^']+)', precision '([^']+)', spec '(\w+)'")


def _entry(row: dict, mirror: Mirror) -> tuple[str, str, dict, str] | str:
    """(commit, key, search-space entry, run date) of an NVIDIA row, or the reason."""
    notes = row["notes"]
    fw, day, lens = _FW.search(notes), _DAY.search(notes), _LENS.search(notes)
    pools, workers = _POOLS.search(notes), _WORKERS.search(notes)
    if not (fw and day and lens and pools and workers):
        return "notes lack the framework, run date, lengths or pools"
    hw = RUNNER.get(row["hardware"])
    if hw is None or row["hardware"].startswith("amd"):
        return f"not an NVIDIA runner ({row['hardware']})"
    commit, cfg = mirror.config_at("nvidia-master.yaml", day.group(1))
    framework, prec, spec = fw.groups()
    isl, osl = (int(v) for v in lens.groups())
    conc = int(float(row["concurrency"]))
    want = (int(workers.group(1)), *pools.groups()[:3], int(workers.group(2)), *pools.groups()[3:])
    want = tuple(str(v).lower() for v in want)
    hits = [
        (key, e)
        for key, e in dsr1_disagg_entries(cfg, hw, {framework}, prec, (isl, osl), want)
        if (e.get("spec-decoding") == "mtp") == (spec == "mtp")
        and conc in (e.get("conc-list") or [])
    ]
    if len(hits) != 1:
        return f"{len(hits)} matching entries in nvidia-master.yaml @ {commit[:12]}"
    return commit, hits[0][0], hits[0][1], day.group(1)


def _int(v) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def recipe_limits(text: str, engine: str) -> dict[str, dict[str, int]] | str:
    """``{pool: {max_num_seqs, max_num_batched_tokens}}`` per attention rank from a recipe's
    text (a limit the recipe leaves unset is absent), or the reason it cannot be read."""
    try:
        doc = yaml.safe_load(text) or {}
    except yaml.YAMLError:
        return "recipe is not YAML"
    model = str((doc.get("model") or {}).get("path", "")).lower()
    if "dsr1" not in model and "deepseek-r1" not in model:
        return f"model {model!r} is not DeepSeek-R1"
    sec = (doc.get("backend") or {}).get(f"{engine}_config") or {}
    out: dict[str, dict[str, int]] = {}
    for pool in ("prefill", "decode"):
        c = sec.get(pool) or {}
        lim: dict[str, int] = {}
        if engine == "trtllm":
            for k, mine in (("max_batch_size", "max_num_seqs"), ("max_num_tokens", "max_num_batched_tokens")):  # fmt: skip
                if _int(c.get(k)):
                    lim[mine] = int(c[k])
        else:
            dp = _int(c.get("data-parallel-size")) or 1
            dp = dp if c.get("enable-dp-attention") else 1
            if _int(c.get("max-running-requests")):
                lim["max_num_seqs"] = max(int(c["max-running-requests"]) // dp, 1)
            budget = [
                v
                for v in (
                    _int(c.get("max-prefill-tokens")),
                    (_int(c.get("chunked-prefill-size")) or 0) // dp or None,
                )
                if v and v > 0
            ]
            if budget:
                lim["max_num_batched_tokens"] = min(budget)
        out[pool] = lim
    return out


def _fmt(lim: dict[str, int]) -> str:
    if not lim:
        return "engine defaults"
    return ", ".join(f"{k} {v}" for k, v in sorted(lim.items(), key=lambda kv: kv[0] != "max_num_seqs")) + " per rank"  # fmt: skip


def note_for(row: dict, mirror: Mirror) -> str:
    """The note to append to one row, or the reason (starting with ``-``) it gets none."""
    notes = row["notes"]
    if "disaggregated prefill/decode" not in notes:
        return "-not a disaggregated row"
    if TAG in notes:
        return "-already annotated"
    e = _entry(row, mirror)
    if isinstance(e, str):
        return "-" + e
    commit, key, entry, day = e
    cf = _settings(entry.get("prefill") or {}).get("CONFIG_FILE")
    if cf is None:
        return "-no CONFIG_FILE in the prefill settings"
    engine = "trtllm" if "/trtllm/" in cf else "sglang"
    parts = cf.split("/")
    gpu_dir = next((x for x in parts if re.match(r"[a-z]*\d{3}", x)), "?")
    base = parts[-1]
    lens = _LENS.search(notes)
    isl, osl = (int(v) // 1024 for v in lens.groups())  # type: ignore[union-attr]
    seq = {f"/{isl}k{osl}k/", f"/{isl}k/{osl}k/"}
    same = COPIES + cf.removeprefix("recipes/")
    copies = mirror.copies()
    cands = [p for p in copies if p == same]
    if not cands:
        cands = [
            p
            for p in copies
            if p.endswith("/" + base)
            and f"/{engine}/" in p
            and f"/{gpu_dir}" in p
            and any(s in p for s in seq)
        ]
    if not cands:
        return f"-no InferenceX copy of {cf}"
    got = {}
    for p in cands:
        c, _ = copies[p]
        lim = recipe_limits(mirror.show(c, p), engine)
        if isinstance(lim, str):
            return f"-{p}: {lim}"
        got[p] = lim
    if len({repr(v) for v in got.values()}) != 1:
        return f"-copies of {cf} disagree on the limits"
    lim0 = next(iter(got.values()))
    nb = re.search(r"_batch(\d+)_", base)
    if engine == "trtllm" and nb and int(nb.group(1)) != lim0["decode"].get("max_num_seqs"):
        return f"-{cf}: file name and the decode max_batch_size disagree"
    first = min(cands, key=lambda p: copies[p][1])
    c, added = copies[first]
    late = " (after the run: the earliest text the mirror holds)" if added > day else ""
    lim = got[first]
    keys = (
        "max_batch_size / max_num_tokens"
        if engine == "trtllm"
        else "max-running-requests // dp, min(max-prefill-tokens, chunked-prefill-size // dp)"
    )
    return (
        f"{TAG}{IX} .github/configs/nvidia-master.yaml @ {commit[:12]} key {key}, the last "
        f"commit on or before {day}: CONFIG_FILE={cf}; recipe text: {IX} {first} @ {c[:12]}, "
        f"added {added}{late}; {engine} {keys}): prefill {_fmt(lim['prefill'])} (recipe "
        f"prefill section); decode {_fmt(lim['decode'])} (recipe decode section)"
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="only count the rows to annotate")
    ap.add_argument("--repo", default=IX_REPO, help="local git mirror of SemiAnalysisAI/InferenceX")
    a = ap.parse_args(argv)
    if not Path(a.repo).exists():
        print(f"no InferenceX mirror at {a.repo}: nothing annotated")
        return 0
    mirror = Mirror(a.repo)

    def note(row: dict) -> str | None:
        extra = note_for(row, mirror)
        return None if extra == "-not a disaggregated row" else extra

    annotate(FILES, note, a.check)
    return 0


if __name__ == "__main__":
    sys.exit(main())
