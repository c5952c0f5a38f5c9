"""recommend's "beyond measurements" lines: the options whose predicted output tok/s per GPU is
far above the best published measurement of their GPU and model
(:func:`planner.catalog.ceiling.ceiling_check`), or whose GPU and model have none; and the
options ranked at their band's pessimistic edge because their engine has no fit on their
GPU's architecture (:func:`planner.recommend.beyond.transfer_text`); and the options
predicted from an older generation of their engine than its newest release
(``generation_note``, :func:`planner.catalog.release_gap.generation_fields`)."""

from __future__ import annotations

from typing import Any

from planner.cli.speculative import with_spec
from planner.recommend.beyond import transfer_text

__all__ = ["ceiling_lines", "ceiling_warning", "md_ceiling"]


def ceiling_lines(recs: list[dict[str, Any]]) -> str:
    """One line per shown option whose predicted output tok/s per GPU is far above the best
    published measurement of its GPU and model (``ceiling_note``), and one line naming the
    options whose GPU and model have no published measurement at all."""
    lines, unmeasured, edge = [], {}, []
    for i, r in enumerate(recs):
        note, rank = r.get("ceiling_note"), r.get("rank") or i + 1
        if not note:
            continue
        if r.get("measured_ceiling_tok_s_per_gpu") is None:
            # "no published measurement ... (MODEL on GPU)", and where the option is ranked
            # at its band's edge for that, "; ranked at ... (capacity x0.56: 160 GPUs), ...":
            # the key is the first sentence's "MODEL on GPU", the rest its own line
            first, _, rest = note.partition("; ")
            unmeasured.setdefault(first.split("(")[-1].rstrip(")"), []).append(f"#{rank}")
            if rest and not transfer_text(r):
                edge.append(
                    f"  #{rank} {r['gpu']} {r.get('release') or r['framework']} "
                    f"{r.get('precision_label') or r['precision']}: {rest}"
                )
            continue
        lines.append(
            f"  #{rank} {r['gpu']} {r.get('release') or r['framework']} "
            f"{r.get('precision_label') or r['precision']} {with_spec(r)}: {note}"
        )
    if unmeasured:
        lines.append(
            "  no published measurement of this model on this GPU: "
            + "; ".join(f"{k} ({', '.join(v)})" for k, v in unmeasured.items())
        )
        lines += edge
    moved = [
        f"  #{r.get('rank') or i + 1} {r['gpu']} {r.get('release') or r['framework']} "
        f"{r.get('precision_label') or r['precision']}: {transfer_text(r)}"
        for i, r in enumerate(recs)
        if transfer_text(r)
    ]
    head = (
        "\nbeyond measurements (data/calibration/measured_ceiling.csv, the best published "
        "output tok/s per GPU):\n" + "\n".join(lines) + "\n"
        if lines
        else ""
    )
    older = [
        f"  #{r.get('rank') or i + 1} {r['gpu']} {r.get('release') or r['framework']} "
        f"{r.get('precision_label') or r['precision']}: {r['generation_note']}"
        for i, r in enumerate(recs)
        if r.get("generation_note")
    ]
    if older:
        head += (
            "\npredicted from an older engine generation (data/release_gaps.yaml):\n"
            + "\n".join(older)
            + "\n"
        )
    if moved:
        head += (
            "\nno fit of the engine on the GPU's architecture (ranked at the low edge of the band "
            "of held-out predictions transferred that way):\n" + "\n".join(moved) + "\n"
        )
    return head


def md_ceiling(recs: list[dict[str, Any]]) -> list[str]:
    """:func:`ceiling_lines` as a Markdown paragraph and list (nothing when empty)."""
    out: list[str] = []
    for ln in ceiling_lines(recs).strip().splitlines():
        if ln.startswith("  "):
            out.append(f"* {ln.strip()}")
        elif ln.strip():  # a block's heading
            out += ["", ln, ""]
    return out


def ceiling_warning(rec: dict[str, Any]) -> tuple[str, str] | None:
    """The "beyond measurements" line of one option for a page next to it: ``("beyond",
    text)`` when its predicted output tok/s per GPU is far above the best published
    measurement of its GPU and model (the ratio, the measured best, its row, source and
    date), ``("unmeasured", text)`` when nothing of the GPU and model is published, None
    when the prediction is within the measurements (:func:`ceiling_lines` for every option).
    """
    from planner.catalog.ceiling import ceiling_of_row

    note = rec.get("ceiling_note")
    if not note:
        return None
    if rec.get("measured_ceiling_tok_s_per_gpu") is None:
        return "unmeasured", f"No published measurement to check this against: {note}."
    c = ceiling_of_row(str(rec.get("ceiling_row") or ""))
    src = f" Source of that measurement: {c.source} ({c.as_of})." if c else ""
    return "beyond", f"Beyond measurements: {note}.{src}"
