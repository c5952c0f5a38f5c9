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
SRT_REPO = "/work/.mirror/NVIDIA+srt-slurm/repo"
SRT = "NVIDIA/srt-slurm"
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
#: before amd_utils/ existed (2026-02-19) the MI355X launcher cloned an external fork of the
#: launch scripts; where its DECODE_MTP_SIZE line is read, per fork version:
#: (repository mirror, commit, file, the line, K: "N" = DECODE_MTP_SIZE, else that number)
_FORK_SCRIPT = "benchmarks/dsr1_{prec}_mi355x_sglang-disagg.sh"
_CLONE = re.compile(r"^git clone --branch (\S+) https://github.com/(\S+?)\.git", re.M)
_COMMIT_ID = re.compile(r'^COMMIT_ID="([0-9a-f]{40})"', re.M)
_NEW = 'mtp_config="${MODEL_MTP_FLAGS} --speculative-num-steps ${decode_mtp_size} '
_OLD = "--speculative-num-steps 1 --speculative-eagle-topk 1 --speculative-num-draft-tokens"
FORKS = {
    # InferenceX's copies of the fork at the commit the launcher fetched ("update to commit
    # 21c60a1" / "... 14606ff" on the multinode_reorg branch, merged as #666)
    "21c60a1f979f78e0459913bc37dd88a19344cea8": (
        "IX", "50cfcdbc15241eeec15341807dd6cbc17e83f964",
        "benchmarks/multi_node/amd_utils/server.sh", _NEW, "N",
    ),
    "14606ff7c8a91bad1df816bb92a1d595b05ac541": (
        "IX", "ef6531dfe8f4e43fe3ad99a5a3934dd26001fd47",
        "benchmarks/multi_node/amd_utils/server.sh", _NEW, "N",
    ),
    # the branch itself (cquil11/sglang_disagg mirror)
    "cquil11/sglang_disagg@cam/sa-260114": (
        "/work/.mirror/cquil11+sglang_disagg/repo", "e86a160ace7164d83e0df8c11cb9bb1371f6bf74",
        "sglang_disagg_server.sh", _OLD, "1",
    ),
    # billishyahao/sglang_disagg@sa-260203 is in no mirror: InferenceX's first copy of the
    # fork (multinode_reorg "initial", 2026-02-06, while both launchers cloned sa-260203)
    "billishyahao/sglang_disagg@sa-260203": (
        "IX", "6a2e4f5f0cd2044c6d168f8ae732c51387fd1069",
        "benchmarks/multi_node/amd_utils/models.yaml",
        "--speculative-algorithm NEXTN --speculative-num-steps 1 --speculative-eagle-topk 1",
        "1",
        # ... which its server.sh passes with the draft tokens only
        ("benchmarks/multi_node/amd_utils/server.sh",
         'mtp_config="${MODEL_MTP_FLAGS} --speculative-num-draft-tokens ${decode_mtp_size}"'),
    ),
}  # fmt: skip


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
    hits = [
        (key, e, conc in (e.get("conc-list") or []))
        for key, e in dsr1_disagg_entries(cfg, hw, frameworks, prec, (isl, osl), want)
        if e.get("spec-decoding") == "mtp"
    ]
    exact = [(k, e) for k, e, c in hits if c]
    if len(exact) == 1:
        return name, commit, exact[0][0], exact[0][1], day.group(1)
    if not exact and hits:  # the row's concurrency is in no entry: all with its pools
        return name, commit, hits[0][0], [e for _, e, _ in hits], day.group(1)
    return f"{len(exact)} matching MTP entries in {name} @ {commit[:12]}"


def dsr1_disagg_entries(cfg: dict, hw: str, frameworks, prec: str, lens: tuple, want: tuple):
    """(config key, search-space entry) of every disaggregated DeepSeek-R1 entry of an
    InferenceX master config on runner ``hw`` (or ``hw-*``), engine in ``frameworks``,
    precision ``prec``, lengths ``lens`` = (isl, osl), whose pools (workers, tp, ep, dp-attn of
    prefill then decode, lower-cased text) equal ``want``."""
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
        for sq in seqs:
            if (sq.get("isl"), sq.get("osl")) != lens:
                continue
            for e in sq.get("search-space") or []:
                p, d = e.get("prefill") or {}, e.get("decode") or {}
                got = tuple(
                    str(x.get(k)).lower()
                    for x in (p, d)
                    for k in ("num-worker", "tp", "ep", "dp-attn")
                )
                if got == want:
                    yield key, e


def _settings(pool: dict) -> dict[str, str]:
    return dict(s.split("=", 1) for s in pool.get("additional-settings") or [] if "=" in s)


def _fork(mirror: Mirror, prec: str, day: str) -> tuple[str, str] | str:
    """(fork version, the InferenceX commit of the launcher) the MI355X launcher of
    ``prec`` cloned at the end of ``day``: a ``COMMIT_ID`` or ``<repo>@<branch>``."""
    rel = _FORK_SCRIPT.format(prec=prec)
    c = mirror.git("log", "-1", f"--before={day}T23:59:59Z", "--format=%H", "HEAD", "--", rel)
    txt = mirror.show(c.strip(), rel) if c.strip() else ""
    if m := _COMMIT_ID.search(txt):
        return m.group(1), c.strip()
    if m := _CLONE.search(txt):
        return f"{m.group(2)}@{m.group(1)}", c.strip()
    return f"no fork clone in {rel} @ {c.strip()[:12] or 'none'}"


def _amd(row: dict, mirror: Mirror, commit: str, entry: dict) -> tuple[int, str, str] | str:
    n = _settings(entry.get("decode") or {}).get("DECODE_MTP_SIZE")
    if n is None or int(n) < 1:
        return "no DECODE_MTP_SIZE >= 1 in the decode settings"
    n = int(n)
    for server in ("server.sh", "server_sglang.sh"):
        server = f"benchmarks/multi_node/amd_utils/{server}"
        txt = mirror.show(commit, server)
        if _AMD_MTP in txt and _AMD_DECODE_ONLY in txt:
            line = f"DECODE_MTP_SIZE={n}: --speculative-num-steps {n} --speculative-num-draft-tokens {n + 1}"
            return n, line, f"{server} @ {commit[:12]}: MTP on the decode server only"
    day = _DAY.search(row["notes"]).group(1)  # type: ignore[union-attr]
    prec = _FW.search(row["notes"]).group(2)  # type: ignore[union-attr]
    fork = _fork(mirror, prec, day)
    if isinstance(fork, str):
        return fork
    version, launcher = fork
    if version not in FORKS:
        return f"fork {version} of the launcher has no known DECODE_MTP_SIZE meaning"
    repo, c, path, want, k, *also = FORKS[version]
    src = mirror if repo == "IX" else Mirror(repo)
    for pth, line in ((path, want), *also):
        if line not in src.show(c, pth):
            return f"{pth} @ {c[:12]} lacks the DECODE_MTP_SIZE line"
    if k == "N":
        line = f"DECODE_MTP_SIZE={n}: --speculative-num-steps {n} --speculative-num-draft-tokens {n + 1}"
        where = f"InferenceX's copy of it: {path} @ {c[:12]}"
    else:
        line = (
            f"DECODE_MTP_SIZE={n}: --speculative-num-steps 1 --speculative-eagle-topk 1 "
            f"--speculative-num-draft-tokens {n}, which SGLang sets to num-steps + 1 = 2 "
            "for topk 1"
        )
        src = repo.split("/")[-2].replace("+", "/") if repo != "IX" else IX
        where = f"{src} {path} @ {c[:12]}" + (
            " (the branch itself is in no mirror: InferenceX's first copy of the fork, 2026-02-06)"
            if repo == "IX"
            else ""
        )
        n = int(k)
    launch = f"{_FORK_SCRIPT.format(prec=prec)} @ {launcher[:12]} clones fork {version[:12] if len(version) == 40 else version}"
    return n, line, f"{launch}; {where}: MTP on the decode server only"


def _recipe_k(text: str, engine: str) -> dict[str, tuple[int, str]] | str:
    """{pool: (K, the line)} of a recipe's text (pools without speculation left out)."""
    try:
        doc = yaml.safe_load(text) or {}
    except yaml.YAMLError:
        return "recipe is not YAML"
    model = str((doc.get("model") or {}).get("path", "")).lower()
    sec = (doc.get("backend") or {}).get(f"{engine}_config") or {}
    served = {str((sec.get(p) or {}).get("served-model-name", "")).lower() for p in sec}
    if (
        "dsr1" not in model
        and "deepseek-r1" not in model
        and not any("deepseek-r1" in m for m in served)
    ):
        return f"model {model!r} is not DeepSeek-R1"
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


def _srt_slurm(
    cf: str, engine: str, base: str, run_day: str, srt: Mirror | None
) -> tuple[dict, str, str] | str:
    """K of ``cf`` read in the NVIDIA/srt-slurm mirror (the launchers cloned a branch of it,
    ``ishandhanani/srt-slurm`` ``sa-submission-q1-2026`` in Feb-Mar 2026, that is in no
    mirror): every version of the path the mirror holds must give the same K; the note
    cites the last one on or before the run, else the first (flagged as after the run)."""
    if srt is None or not Path(srt.repo).exists():
        return f"no InferenceX copy of {cf}"
    log = srt.git("log", "--all", "--format=%H %cs", "--", cf).split()
    vers = [(c, d) for c, d in zip(log[::2], log[1::2], strict=True) if srt.show(c, cf)]
    if not vers:
        return f"no InferenceX copy of {cf} and none in {SRT}"
    ks = {}
    for c, _ in vers:
        got = _recipe_k(srt.show(c, cf), engine)
        if isinstance(got, str):
            return f"{SRT} {cf} @ {c[:12]}: {got}"
        ks[c] = got
    if len({tuple(sorted((p, v[0]) for p, v in g.items())) for g in ks.values()}) != 1:
        return f"versions of {cf} in {SRT} disagree on K"
    before = [v for v in vers if v[1] <= run_day]
    c, day = max(before, key=lambda v: v[1]) if before else min(vers, key=lambda v: v[1])
    got = ks[c]
    m = re.search(r"_mtp(\d+)", base)
    if engine == "trtllm" and (m is None or int(m.group(1)) != got["decode"][0]):
        return f"{cf}: file name and num_nextn_predict_layers disagree"
    late = "" if before else " (after the run: the earliest text the mirror holds)"
    n = len(vers)
    return (
        got,
        cf,
        f"{SRT} {cf} @ {c[:12]}, {day}{late}; {n} version(s) in the mirror, all with this K",
    )


def _nvidia(
    row: dict, mirror: Mirror, entry: dict, run_day: str, srt: Mirror | None = None
) -> tuple[dict, str, str] | str:
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
        return _srt_slurm(cf, engine, base, run_day, srt)
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
    return got, cf, f"{IX} {first} @ {c[:12]}, added {day}{late}"


def note_for(row: dict, mirror: Mirror, srt: Mirror | None = None) -> str:
    """The note to append to one row, or the reason (starting with ``-``) it gets none."""
    notes = row["notes"]
    if "disaggregated prefill/decode" not in notes or "spec 'mtp'" not in notes:
        return "-not a disaggregated MTP row"
    if TAG in notes:
        return "-already annotated"
    e = _entry(row, mirror)
    if isinstance(e, str):
        return "-" + e
    name, commit, key, entries, day = e
    where = (
        f"{IX} .github/configs/{name} @ {commit[:12]} key {key}, the last commit on or before {day}"
    )
    if isinstance(entries, list):  # the row's concurrency is in no entry with its pools
        concs = ", ".join(str(x.get("conc-list")) for x in entries)
        where += (
            f"; concurrency {int(float(row['concurrency']))} is in no entry: the "
            f"entries with the row's pools ({len(entries)}: conc-list {concs}) all give this K"
        )
    else:
        entries = [entries]
    got = [
        _amd(row, mirror, commit, x)
        if row["hardware"].startswith("amd")
        else _nvidia(row, mirror, x, day, srt)
        for x in entries
    ]
    if bad := next((g for g in got if isinstance(g, str)), None):
        return "-" + bad
    if row["hardware"].startswith("amd"):
        if len({g[0] for g in got}) != 1:
            return "-the entries with the row's pools disagree on K"
        k, line, meaning = got[0]
        return f"{TAG}{where}; {meaning}): method mtp, K {k} on decode ({line}); prefill K none"
    if len({tuple(sorted((p, v[0]) for p, v in g[0].items())) for g in got}) != 1:
        return "-the entries with the row's pools disagree on K"
    ks, cf, copy = got[0]
    pre = ks.get("prefill")
    return (
        f"{TAG}{where}: CONFIG_FILE={cf}; recipe text: {copy}): method mtp, "
        f"K {ks['decode'][0]} on decode ({ks['decode'][1]}); prefill K "
        + (f"{pre[0]} ({pre[1]})" if pre else "none")
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="only count the rows to annotate")
    ap.add_argument("--repo", default=IX_REPO, help="local git mirror of SemiAnalysisAI/InferenceX")
    ap.add_argument("--srt-repo", default=SRT_REPO, help="local git mirror of NVIDIA/srt-slurm")
    a = ap.parse_args(argv)
    if not Path(a.repo).exists():
        print(f"no InferenceX mirror at {a.repo}: nothing annotated")
        return 0
    mirror, srt = Mirror(a.repo), Mirror(a.srt_repo)

    def note(row: dict) -> str | None:
        extra = note_for(row, mirror, srt)
        return None if extra == "-not a disaggregated MTP row" else extra

    annotate(FILES, note, a.check)
    return 0


if __name__ == "__main__":
    sys.exit(main())
