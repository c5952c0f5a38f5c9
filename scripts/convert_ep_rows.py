"""Give the benchmark rows of expert-parallel / attention data-parallel layouts their layout.

Rows tagged ``layout_unsupported:`` (planner/benchmarks/schema.py) because the planner could
not express expert parallel (EP), attention data-parallel ("DP attention", DEP) or a TP group
across two nodes get ``tp`` / ``ep`` / ``attention_dp`` read from the launch command or the
table label their own ``notes`` quote, and lose the tag. The rule of each source:

* TensorRT-LLM perf-overview ``DEPn`` columns ("enable_attention_dp with ep = n"):
  ``tp=1, attention_dp=n, ep=n`` (attention data-parallel over every GPU, experts over every GPU).
* ``trtllm-serve --tp_size T --ep_size E`` without ``enable_attention_dp`` (off by default):
  ``tp=T, ep=E`` (moe_tp = T / E by the width rule: TensorRT-LLM's Mapping splits each expert
  over the tp ranks of one EP group).
* ``sglang.launch_server --tp T --enable-dp-attention`` without ``--dp``: the server's own
  rule in the release the row names, read in the PyPI wheels (``sglang/srt/server_args.py``):
  0.4.1 and 0.4.3.post2 set ``dp_size = tp_size`` (``tp=1, attention_dp=T``, experts split T
  ways, no EP); 0.5.3 turns DP attention off when ``dp_size == 1`` (a plain ``TP T``).
  Releases between those two are not converted (the tag stays, saying why).
* InferenceX records (``TP=a, EP=b, DP-attention=true|false``, spec 'none', single node):
  DP attention on = ``tp=1, attention_dp=a, ep=b`` (the harness's DEP: ``--tp a --dp a
  --enable-dp-attention --ep-size b`` / TensorRT-LLM ``enable_attention_dp``); off = ``tp=a,
  ep=b``. Their notes gain the client tags the other InferenceX rows of the same snapshot carry
  (the run dates are after 2026-01-21, when the client moved into the repository, and the
  harness sends 10 x concurrency prompts: data/benchmarks/sources.yaml), so the simulator can
  replay them.
* SGLang ``--tp 16 --nnodes 2`` (two 8-GPU nodes over InfiniBand): ``tp=16``; whether a replica
  spans scale-up domains is the catalog's (``nvlink_domain_gpus``), not the row's.

Left tagged, with their reason: disaggregated prefill/decode and speculative decoding (MTP,
EAGLE) rows (a later issue), and rows whose EP size the source does not state.

Run from the repository root; it rewrites the CSVs in place and is idempotent (a second run
changes nothing)::

    python scripts/convert_ep_rows.py          # rewrite data/benchmarks/public_*.csv
    python scripts/convert_ep_rows.py --check  # exit 1 if a file would change
"""

from __future__ import annotations

import argparse
import csv
import io
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILES = ("public_amd.csv", "public_inferencex.csv", "public_nvidia.csv")
TAG = "layout_unsupported:"
#: layout columns inserted after ``pp`` (empty = 1)
NEW_COLUMNS = ("ep", "attention_dp")
#: reasons that keep the tag (a later issue, or the source does not say)
KEEP = ("disaggregated", "speculative", "not stated")


def _reason(notes: str) -> str | None:
    i = notes.find(TAG)
    if i < 0:
        return None
    return notes[i + len(TAG) :].split(";")[0].strip()


def _sglang_version(text: str) -> tuple[int, ...] | None:
    m = re.search(r"(?:SGLang |^v?)(\d+)\.(\d+)\.(\d+)(?:\.post(\d+))?", text.strip())
    if not m:
        return None
    return tuple(int(g) if g else 0 for g in m.groups())


def convert(row: dict[str, str]) -> tuple[int, int, int, str] | str | None:
    """(tp, ep, attention_dp, rule) for a tagged row the notes let us convert; a reason
    string when the tag must stay; None for an untagged row."""
    notes = row["notes"]
    why = _reason(notes)
    if why is None:
        return None
    low = why.lower()
    if any(k in low for k in KEEP):
        return why
    n_gpus = int(row["n_gpus"]) if row["n_gpus"].strip() else None
    # TensorRT-LLM perf-overview: DEPn = enable_attention_dp with ep = n
    m = re.search(r"DEP(\d+): enable_attention_dp with ep = (\d+)", why)
    if m:
        n = int(m.group(1))
        if int(m.group(2)) != n or (n_gpus is not None and n_gpus % n):
            return f"{why} (DEP{n} does not match n_gpus={n_gpus})"
        return 1, n, n, f"DEP{n} column: attention data-parallel {n} x expert parallel {n}"
    # trtllm-serve --tp_size T --ep_size E (attention DP off by default)
    m = re.search(r"trtllm-serve[^;]*?--tp_size (\d+) --ep_size (\d+)", notes)
    if m and "enable_attention_dp" not in notes:
        t, e = int(m.group(1)), int(m.group(2))
        return t, e, 1, f"trtllm-serve --tp_size {t} --ep_size {e} (attention DP off)"
    # sglang.launch_server --tp T --enable-dp-attention (no --dp)
    m = re.search(r"sglang\.launch_server[^;]*?--tp (\d+)[^;]*--enable-dp-attention", notes)
    if m and not re.search(r"--dp(?:-size)? \d", notes):
        t = int(m.group(1))
        ver = _sglang_version(row["framework_version"])
        if ver is None:
            return f"{why} (SGLang release not stated: the meaning of --dp's default changed)"
        if ver <= (0, 4, 3, 2):
            return (
                1,
                1,
                t,
                (
                    f"SGLang {'.'.join(map(str, ver[:3]))}: --enable-dp-attention sets dp_size = "
                    f"tp_size = {t} (server_args.py), experts split {t} ways"
                ),
            )
        if ver >= (0, 5, 3, 0):
            return (
                t,
                1,
                1,
                (
                    f"SGLang {'.'.join(map(str, ver[:3]))}: --enable-dp-attention without --dp "
                    "is turned off (dp_size 1, server_args.py), a plain TP group"
                ),
            )
        return f"{why} (SGLang release between 0.4.3.post2 and 0.5.3 not checked)"
    # InferenceX: TP=a, EP=b, DP-attention=true|false
    m = re.search(r"TP=(\d+), EP=(\d+), DP-attention=(true|false)", notes)
    if m and "spec 'none'" in notes:
        a, b, on = int(m.group(1)), int(m.group(2)), m.group(3) == "true"
        if on:
            return 1, b, a, f"InferenceX TP={a}, EP={b}, DP-attention=true"
        return a, b, 1, f"InferenceX TP={a}, EP={b}, DP-attention=false"
    # SGLang --tp 16 --nnodes 2
    m = re.search(r"--tp (\d+) --nnodes (\d+)", notes)
    if m and "tensor parallel" in low:
        t = int(m.group(1))
        return t, 1, 1, f"--tp {t} --nnodes {m.group(2)}"
    return f"{why} (no conversion rule matches its notes)"


def _label(tp: int, ep: int, dp: int) -> str:
    if ep == 1 and dp == 1:
        return f"TP{tp}"
    w = tp * dp
    if tp == 1 and dp == w and ep == w:
        return f"DEP{w}"
    parts = [f"TP{tp}"] if tp > 1 else []
    if dp > 1:
        parts.append(f"DP{dp}")
    if ep > 1:
        parts.append(f"EP{ep}")
    return " ".join(parts)


_IX_CLIENT = re.compile(
    r"random dataset: nominal input (\d+) / output (\d+) tokens, range ratio ([\d.]+)"
    r" \(benchmark-tmpl\.yml RANDOM_RANGE_RATIO\), concurrency (\d+)"
)


def _new_notes(row: dict[str, str], tp: int, ep: int, dp: int, rule: str) -> str:
    notes = row["notes"]
    i = notes.find(TAG)
    j = notes.find(";", i)
    old = notes[i : j if j >= 0 else len(notes)]
    why = old[len(TAG) :].strip()
    text = (
        f"layout {_label(tp, ep, dp)} (tp={tp}, ep={ep}, attention_dp={dp}; from the notes: "
        f"{rule}; formerly tagged unsupported as: {why}; scripts/convert_ep_rows.py)"
    )
    # the tag text itself may carry engine settings (dstack TensorRT-LLM rows)
    extra = []
    mb = re.search(r"max_batch_size (\d+)", why)
    mt = re.search(r"max_num_tokens (\d+)", why)
    if mb and "max_num_seqs=" not in notes:
        extra.append(f"max_num_seqs={mb.group(1)}")
    if mt and "max_num_batched_tokens=" not in notes:
        extra.append(f"max_num_batched_tokens={mt.group(1)}")
    m = _IX_CLIENT.search(notes)
    if m and "random_input_len=" not in notes:
        conc = int(m.group(4))
        extra.append(
            "client: InferenceX utils/bench_serving/benchmark_serving.py closed loop (run date "
            "after 2026-01-21, when the client moved into the repository; sources.yaml)"
        )
        extra += [
            f"random_input_len={m.group(1)}",
            f"random_output_len={m.group(2)}",
            f"random_range_ratio={m.group(3)}",
            f"{10 * conc} requests (10 x concurrency prompts, the harness rule in sources.yaml)",
        ]
    text = "; ".join([text, *extra])
    return notes.replace(old, text, 1)


def rewrite(path: Path) -> tuple[str, dict[str, int]]:
    """The converted text of one CSV and counts (converted, kept)."""
    src = path.read_text(encoding="utf-8")
    rows = list(csv.DictReader(io.StringIO(src)))
    fields = list(csv.DictReader(io.StringIO(src)).fieldnames or [])
    if "ep" not in fields:
        k = fields.index("pp") + 1
        fields[k:k] = list(NEW_COLUMNS)
    counts = {"converted": 0, "kept": 0}
    for r in rows:
        for c in NEW_COLUMNS:
            r.setdefault(c, "")
        got = convert(r)
        if got is None:
            continue
        if isinstance(got, str):
            counts["kept"] += 1
            continue
        tp, ep, dp, rule = got
        r["notes"] = _new_notes(r, tp, ep, dp, rule)
        r["tp"], r["ep"], r["attention_dp"] = str(tp), str(ep), str(dp)
        if not r["pp"].strip():
            r["pp"] = "1"
        counts["converted"] += 1
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return out.getvalue(), counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if a file would change")
    ap.add_argument("--data", default=str(ROOT / "data" / "benchmarks"))
    a = ap.parse_args(argv)
    changed = False
    for name in FILES:
        p = Path(a.data) / name
        text, counts = rewrite(p)
        old = p.read_text(encoding="utf-8")
        print(f"{name}: {counts['converted']} rows converted, {counts['kept']} keep their tag")
        if text != old:
            changed = True
            if not a.check:
                p.write_text(text, encoding="utf-8")
    return 1 if (a.check and changed) else 0


if __name__ == "__main__":
    sys.exit(main())
