"""Write the speculative-decoding settings of InferenceX's disaggregated MTP runs into the
rows' notes, read in the recipe each run used (issue 30: the multi-node records say
``spec 'mtp'`` but not K, the number of draft tokens).

Where they are read (SemiAnalysisAI/InferenceX, local mirror ``IX_REPO``):

1. the sweep config ``.github/configs/nvidia-master.yaml`` / ``amd-master.yaml`` at the last
   commit on or before the row's run date (as the importer dates images and scripts); the
   entry is the one whose key is a DeepSeek-R1 (``model-prefix: dsr1``) disaggregated config
   of the row's GPU (runner), precision and framework, and whose search-space point has
   ``spec-decoding: mtp``, the row's concurrency in ``conc-list`` and the row's pools (workers,
   TP, EP, DP-attention of prefill and decode) at the row's ISL / OSL. Exactly one entry,
   or the row is left as it is;
2. K from that entry:

   * **AMD (MI355X SGLang)**: ``DECODE_MTP_SIZE=N`` in the decode pool's settings. Its
     meaning is read in ``benchmarks/multi_node/amd_utils/server.sh`` at the same commit:
     ``--speculative-num-steps N --speculative-num-draft-tokens N+1`` on the decode server
     only (``mtp config (decode only)``). Before that script existed (2026-02-19) the
     launcher cloned an external branch (cquil11/sglang_disagg) whose versions gave
     ``--speculative-num-steps 1 --speculative-num-draft-tokens ${DECODE_MTP_SIZE}``: the
     meaning of N is not pinned at those dates, so those rows are left as they are;
   * **NVIDIA (Dynamo + TensorRT-LLM or SGLang)**: ``CONFIG_FILE=recipes/...`` names an
     srt-slurm recipe. Its text is read in InferenceX's own copies of those recipes
     (``benchmarks/multi_node/srt-slurm-recipes/dsr1/{trtllm,sglang}/<gpu>-<precision>/
     <isl>k<osl>k|<isl>k/<osl>k/disagg/mtp/<same file name>``, each at the commit that added
     it); every copy must give the same K. TensorRT-LLM: ``speculative_config:
     num_nextn_predict_layers`` of the decode and prefill sections (and the ``mtp<N>`` of
     the file name must agree); SGLang: ``speculative-num-steps`` (chain, ``topk 1``).

The note appended is ``speculative recipe (<where>): method mtp, K <n> on decode
(<the line>); prefill K <n>|none``. Running twice changes nothing (a row with the tag is
skipped). Rows whose recipe cannot be identified are counted by reason and left as they are.

Usage: ``python scripts/annotate_spec_recipes.py [--check] [--repo PATH]``
"""

from __future__ import annotations

import argparse
import functools
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from annotate_harness_flags import annotate  # noqa: E402  (the shared CSV rewriter)

FILES = ("data/benchmarks/public_inferencex.csv", "data/benchmarks/public_inferencex_history.csv")
TAG = "speculative recipe ("
IX_REPO = "/work/.mirror/SemiAnalysisAI+InferenceX/repo"
IX = "SemiAnalysisAI/InferenceX"
COPIES = "benchmarks/multi_node/srt-slurm-recipes/"
RUNNER = {
    "nvidia-b200": "b200",
    "nvidia-b300": "b300",
    "nvidia-gb200": "gb200",
    "nvidia-gb300": "gb300",
    "nvidia-h100-sxm": "h100",
    "nvidia-h200-sxm": "h200",
    "amd-mi355x": "mi355x",
}
_POOLS = re.compile(
    r"prefill TP=(\d+) EP=(\d+) DP-attention=(\w+) x \d+ GPUs; "
    r"decode TP=(\d+) EP=(\d+) DP-attention=(\w+) x \d+ GPUs"
)
_WORKERS = re.compile(r"(\d+)P/(\d+)D workers")
_FW = re.compile(r"framework '([^']+)', precision '([^']+)', spec 'mtp'")
_LENS = re.compile(r"nominal input (\d+) / output (\d+) tokens")
_DAY = re.compile(r"run date (\d{4}-\d\d-\d\d)")
_AMD_MTP = "--speculative-num-steps ${decode_mtp_size}"
_AMD_DECODE_ONLY = 'if [[ -n "$mtp_config" ]] && [[ "$mode" == "decode" ]]'


class Mirror:
    """Reads of the InferenceX mirror (git), cached."""

    def __init__(self, repo: str) -> None:
        self.repo = repo

    def git(self, *args: str) -> str:
        return subprocess.run(
            ["git", "-C", self.repo, *args], capture_output=True, text=True, check=False
        ).stdout

    @functools.cache  # noqa: B019 - one mirror per run
    def config_at(self, name: str, day: str) -> tuple[str, dict]:
        """(commit, parsed file) of ``.github/configs/<name>`` at the last commit on or
        before the end of ``day`` (UTC) on the mirror's main line."""
        rel = f".github/configs/{name}"
        c = self.git("log", "-1", f"--before={day}T23:59:59Z", "--format=%H", "HEAD", "--", rel)
        c = c.strip()
        return c, (yaml.safe_load(self.git("show", f"{c}:{rel}")) if c else {}) or {}

    @functools.cache  # noqa: B019
    def show(self, commit: str, path: str) -> str:
        return self.git("show", f"{commit}:{path}")

    @functools.cache  # noqa: B019
    def copies(self) -> dict[str, tuple[str, str]]:
        """Recipe copies under :data:`COPIES`: path -> (commit that added it, its date)."""
        out: dict[str, tuple[str, str]] = {}
        log = self.git(
            "log", "--all", "--reverse", "--no-renames", "--diff-filter=A", "--format=@%H %cs",
            "--name-only",
            "--", COPIES,
        )  # fmt: skip
        commit = day = ""
        for line in log.splitlines():
            if line.startswith("@"):
                commit, day = line[1:].split()
            elif line.strip() and line not in out:
                out[line] = (commit, day)
        return out


def _entry(row: dict, mirror: Mirror) -> tuple[str, str, str, dict, str] | str:
    """(config file, commit, key, search-space entry, run date) of the row, or the reason."""
    notes = row["notes"]
    fw, day, lens = _FW.search(notes), _DAY.search(notes), _LENS.search(notes)
    pools, workers = _POOLS.search(notes), _WORKERS.search(notes)
    if not (fw and day and lens and pools and workers):
        return "notes lack the framework, run date, lengths or pools"
    hw = RUNNER.get(row["hardware"])
    if hw is None:
        return f"no runner for {row['hardware']}"
    name = "amd-master.yaml" if row["hardware"].startswith("amd") else "nvidia-master.yaml"
    commit, cfg = mirror.config_at(name, day.group(1))
    framework, prec = fw.groups()
    frameworks = {framework} | ({"sglang-disagg"} if framework == "mori-sglang" else set())
    isl, osl = (int(v) for v in lens.groups())
    conc = int(float(row["concurrency"]))
    want = (int(workers.group(1)), *pools.groups()[:3], int(workers.group(2)), *pools.groups()[3:])
    want = tuple(str(v).lower() for v in want)
    hits = []
    for key, c in cfg.items():
        if not isinstance(c, dict) or not c.get("disagg") or c.get("model-prefix") != "dsr1":
            continue
        runner = str(c.get("runner", ""))
        if c.get("framework") not in frameworks or c.get("precision") != prec:
            continue
        if runner != hw and not runner.startswith(hw + "-"):
            continue
        seqs = (c.get("seq-len-configs") or []) + (
            (c.get("scenarios") or {}).get("fixed-seq-len") or []
        )
        for s in seqs:
            if (s.get("isl"), s.get("osl")) != (isl, osl):
                continue
            for e in s.get("search-space") or []:
                if e.get("spec-decoding") != "mtp" or conc not in (e.get("conc-list") or []):
                    continue
                p, d = e.get("prefill") or {}, e.get("decode") or {}
                got = tuple(
                    str(x.get(k)).lower()
                    for x in (p, d)
                    for k in ("num-worker", "tp", "ep", "dp-attn")
                )
                if got == want:
                    hits.append((key, e))
    if len(hits) != 1:
        return f"{len(hits)} matching MTP entries in {name} @ {commit[:12]}"
    return name, commit, hits[0][0], hits[0][1], day.group(1)


def _settings(pool: dict) -> dict[str, str]:
    return dict(s.split("=", 1) for s in pool.get("additional-settings") or [] if "=" in s)


def _amd(row: dict, mirror: Mirror, commit: str, entry: dict) -> tuple[int, str, str] | str:
    n = _settings(entry.get("decode") or {}).get("DECODE_MTP_SIZE")
    if n is None or int(n) < 1:
        return "no DECODE_MTP_SIZE >= 1 in the decode settings"
    for server in ("server.sh", "server_sglang.sh"):
        server = f"benchmarks/multi_node/amd_utils/{server}"
        txt = mirror.show(commit, server)
        if _AMD_MTP in txt and _AMD_DECODE_ONLY in txt:
            break
    else:
        return f"amd_utils/server*.sh @ {commit[:12]} does not state DECODE_MTP_SIZE's meaning"
    k = int(n)
    line = (
        f"DECODE_MTP_SIZE={k}: --speculative-num-steps {k} --speculative-num-draft-tokens {k + 1}"
    )
    return k, line, f"{server} @ {commit[:12]}: MTP on the decode server only"


def _recipe_k(text: str, engine: str) -> dict[str, tuple[int, str]] | str:
    """{pool: (K, the line)} of a recipe's text (pools without speculation left out)."""
    try:
        doc = yaml.safe_load(text) or {}
    except yaml.YAMLError:
        return "recipe is not YAML"
    model = str((doc.get("model") or {}).get("path", "")).lower()
    if "dsr1" not in model and "deepseek-r1" not in model:
        return f"model {model!r} is not DeepSeek-R1"
    sec = (doc.get("backend") or {}).get(f"{engine}_config") or {}
    out = {}
    for pool in ("prefill", "decode"):
        c = sec.get(pool) or {}
        if engine == "trtllm":
            sp = c.get("speculative_config") or {}
            if sp:
                if str(sp.get("decoding_type", "")).upper() != "MTP":
                    return f"{pool}: decoding_type {sp.get('decoding_type')}"
                k = int(sp["num_nextn_predict_layers"])
                out[pool] = (k, f"num_nextn_predict_layers: {k}")
        elif "speculative-num-steps" in c:
            if int(c.get("speculative-eagle-topk", 1)) != 1:
                return f"{pool}: speculative-eagle-topk is not 1"
            k = int(c["speculative-num-steps"])
            line = f"speculative-num-steps: {k}"
            if "speculative-num-draft-tokens" in c:
                line += f", speculative-num-draft-tokens: {c['speculative-num-draft-tokens']}"
            out[pool] = (k, line)
    return out if "decode" in out else "no speculative settings in the decode section"


def _nvidia(row: dict, mirror: Mirror, entry: dict, run_day: str) -> tuple[dict, str, str] | str:
    cf = _settings(entry.get("prefill") or {}).get("CONFIG_FILE")
    if cf is None:
        return "no CONFIG_FILE in the prefill settings"
    engine = "trtllm" if "/trtllm/" in cf else "sglang"
    parts = cf.split("/")
    gpu_dir = next((x for x in parts if re.match(r"[a-z]*\d{3}", x)), "?")
    base = parts[-1]
    lens = _LENS.search(row["notes"])
    isl, osl = (int(v) // 1024 for v in lens.groups())  # type: ignore[union-attr]
    seq = {f"/{isl}k{osl}k/", f"/{isl}k/{osl}k/"}
    same = COPIES + cf.removeprefix("recipes/")
    cands = [
        p
        for p in mirror.copies()
        if p == same
        or p.endswith("/" + base)
        and f"/{engine}/" in p
        and "/mtp/" in p
        and f"/{gpu_dir}" in p
        and any(s in p for s in seq)
    ]
    if not cands:
        return f"no InferenceX copy of {cf}"
    ks = {}
    for p in cands:
        c, _ = mirror.copies()[p]
        got = _recipe_k(mirror.show(c, p), engine)
        if isinstance(got, str):
            return f"{p}: {got}"
        ks[p] = got
    vals = {tuple(sorted((k, v[0]) for k, v in g.items())) for g in ks.values()}
    if len(vals) != 1:
        return f"copies of {cf} disagree on K"
    m = re.search(r"_mtp(\d+)", base)
    first = min(cands, key=lambda p: mirror.copies()[p][1])
    if same in cands:  # the config names InferenceX's own copy: read it there
        first = same
    got = ks[first]
    if engine == "trtllm" and (m is None or int(m.group(1)) != got["decode"][0]):
        return f"{cf}: file name and num_nextn_predict_layers disagree"
    c, day = mirror.copies()[first]
    late = (
        " (after the run: this is the earliest text the mirror holds; "
        + ("the file name's mtp<N> agrees" if engine == "trtllm" else "not checked by name")
        + ")"
        if day > run_day
        else ""
    )
    return got, cf, f"{first} @ {c[:12]}, added {day}{late}"


def note_for(row: dict, mirror: Mirror) -> str:
    """The note to append to one row, or the reason (starting with ``-``) it gets none."""
    notes = row["notes"]
    if "disaggregated prefill/decode" not in notes or "spec 'mtp'" not in notes:
        return "-not a disaggregated MTP row"
    if TAG in notes:
        return "-already annotated"
    e = _entry(row, mirror)
    if isinstance(e, str):
        return "-" + e
    name, commit, key, entry, day = e
    where = (
        f"{IX} .github/configs/{name} @ {commit[:12]} key {key}, the last commit on or before {day}"
    )
    if row["hardware"].startswith("amd"):
        got = _amd(row, mirror, commit, entry)
        if isinstance(got, str):
            return "-" + got
        k, line, meaning = got
        return f"{TAG}{where}; {meaning}): method mtp, K {k} on decode ({line}); prefill K none"
    got = _nvidia(row, mirror, entry, day)
    if isinstance(got, str):
        return "-" + got
    ks, cf, copy = got
    pre = ks.get("prefill")
    return (
        f"{TAG}{where}: CONFIG_FILE={cf}; recipe text: {IX} {copy}): method mtp, "
        f"K {ks['decode'][0]} on decode ({ks['decode'][1]}); prefill K "
        + (f"{pre[0]} ({pre[1]})" if pre else "none")
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
        return None if extra == "-not a disaggregated MTP row" else extra

    annotate(FILES, note, a.check)
    return 0


if __name__ == "__main__":
    sys.exit(main())
