"""Accuracy page: how far the predictions can be trusted.

Out-of-sample error tables come from ``docs/accuracy.md`` (written by ``planner validate``);
the predicted-vs-measured scatter is computed on demand with ``planner.predict_file`` over
the bundled measurements (these rows were used to fit the bundled profile, so the scatter is
in sample and labelled so)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from app_pages import widgets as w
from planner import PlannerError, fmt, predict_file

ROOT = Path(__file__).resolve().parents[1]
ACCURACY_MD = ROOT / "docs" / "accuracy.md"
BENCH_FILES = (ROOT / "data/benchmarks/public.csv", ROOT / "data/benchmarks/pytorch_h200.csv")
BAND = 0.20


@st.cache_data(show_spinner=False)
def accuracy_tables(path: str, mtime: float) -> list[tuple[str, pd.DataFrame]]:
    """(heading path, table) for every Markdown table of the generated report."""
    out: list[tuple[str, pd.DataFrame]] = []
    heads: dict[int, str] = {}
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    i = 0
    last_text = ""
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^(#+)\s+(.*)", line)
        if m:
            level = len(m.group(1))
            heads = {k: v for k, v in heads.items() if k < level}
            heads[level] = m.group(2).strip()
            last_text = ""
        elif line.startswith("|") and i + 1 < len(lines) and lines[i + 1].startswith("|---"):
            cols = [c.strip() for c in line.strip("|").split("|")]
            rows = []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append([c.strip() for c in lines[i].strip("|").split("|")])
                i += 1
            df = pd.DataFrame(rows, columns=cols)
            for c in df.columns:
                num = pd.to_numeric(df[c], errors="coerce")
                if num.notna().all():
                    df[c] = num
            title = " / ".join(v for k, v in sorted(heads.items()) if k > 1)
            if last_text:
                title += f" - {last_text}"
            out.append((title, df))
            continue
        elif line.strip() and not line.startswith("|"):
            last_text = line.strip().rstrip(":") if line.strip().endswith(":") else last_text
        i += 1
    return out


def scatter_svg(sub: pd.DataFrame, lo: float, hi: float, unit: str) -> str:
    """Predicted against measured, both log axes from ``lo`` to ``hi`` [``unit``], a point per
    row coloured by source, the line predicted = measured and the grey band within
    +-:data:`BAND` (SVG, :func:`app_pages.svg.scatter_chart`)."""
    from app_pages import svg

    sources = sorted(sub["source"].unique())
    colour = {s: svg.CATEGORY[i % len(svg.CATEGORY)] for i, s in enumerate(sources)}
    cols = ["source", "hardware", "framework", "model", "precision", "measured", "predicted",
            "provenance"]  # fmt: skip
    pts = []
    for r in sub[[c for c in cols if c in sub.columns]].to_dict("records"):
        tip = "\n".join(
            f"{c}: {fmt.num(r[c], 4) if c in ('measured', 'predicted') else r[c]}"
            for c in cols
            if c in r
        )
        pts.append(
            svg.Point(r["measured"], r["predicted"], colour[r["source"]], r=3.5, tooltip=tip)
        )
    xs = np.geomspace(lo, hi, 50)
    return svg.scatter_chart(
        pts,
        x_axis=svg.Axis(f"measured [{unit}]", log=True),
        y_axis=svg.Axis(f"predicted [{unit}]", log=True),
        label=f"Predicted against measured [{unit}, log scales], one point per measurement row "
        f"coloured by source, with the line predicted = measured and the band within "
        f"±{BAND:.0%}",
        width=1040,
        plot_height=460,
        domain=(lo, hi),
        band=(xs, xs * (1 - BAND), xs * (1 + BAND), f"within ±{BAND:.0%} of measured"),
        diagonal=True,
        legend=[(s, colour[s], "circle") for s in sources],
    )


@st.cache_data(show_spinner=False)
def predicted_rows(files: tuple[str, ...]) -> pd.DataFrame:
    """Every bundled measurement row with planner's prediction (bundled fitted profile)."""
    frames = []
    for f in files:
        rows, _ = predict_file(f)
        frames.append(pd.DataFrame(rows))
    df = pd.concat(frames, ignore_index=True)
    df["measured"] = pd.to_numeric(df["value"], errors="coerce")
    df["predicted"] = pd.to_numeric(df["predicted"], errors="coerce")
    df = df[(df["measured"] > 0) & (df["predicted"] > 0)].copy()
    df["ratio"] = df["predicted"] / df["measured"]
    df["ape"] = (df["ratio"] - 1).abs()
    df["metric_unit"] = df["metric"] + " [" + df["unit"] + "]"
    return df


def error_table(df: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    g = df.groupby(by)
    t = pd.DataFrame(
        {
            "n": g.size(),
            "mdape_pct": g["ape"].median() * 100,
            "p90_ape_pct": g["ape"].quantile(0.9) * 100,
            "bias_pct": (g["ratio"].median() - 1) * 100,
        }
    ).reset_index()
    return t.sort_values("n", ascending=False)


PCT_COLS = {
    "n": st.column_config.NumberColumn("rows", format="%d"),
    "mdape_pct": st.column_config.NumberColumn("MdAPE [%]", format="%.1f"),
    "p90_ape_pct": st.column_config.NumberColumn("P90 APE [%]", format="%.1f"),
    "bias_pct": st.column_config.NumberColumn(
        "bias [%]", format="%+.1f", help="median(predicted / measured) - 1; > 0: over-predicts"
    ),
}

st.title("Accuracy: predicted vs measured")
st.caption(
    "APE = |predicted / measured - 1|; MdAPE = median APE; bias = median(predicted / measured) "
    "- 1 (positive: planner predicts more than measured)."
)

tab_oos, tab_scatter = st.tabs(["Out-of-sample error (report)", "Predicted vs measured (chart)"])

with tab_oos:
    if not ACCURACY_MD.exists():
        st.warning(f"{ACCURACY_MD.relative_to(ROOT)} not found: run `planner validate`.")
    else:
        tables = accuracy_tables(str(ACCURACY_MD), ACCURACY_MD.stat().st_mtime)
        gen = re.search(r"Generated (\d{4}-\d\d-\d\d)", ACCURACY_MD.read_text(encoding="utf-8"))
        st.markdown(
            "Every number here is **out of sample**: own H200 rows by 5-fold cross-validation, "
            "public rows by leaving one source out. From `docs/accuracy.md`"
            + (f", generated {gen.group(1)} by `planner validate`." if gen else ".")
        )
        wanted = ("By source", "By framework and hardware", "By metric class", "Own H200")
        for title, df in tables:
            if not any(k.lower() in title.lower() for k in wanted):
                continue
            st.markdown(f"**{title}**")
            st.dataframe(df, hide_index=True, column_config=PCT_COLS)

with tab_scatter:
    st.markdown(
        "Each point is one measured number from `data/benchmarks/` and planner's prediction "
        "of it with the bundled calibration profile. These rows were used to fit that profile, "
        "so this chart is **in sample**; the out-of-sample errors are in the first tab."
    )
    if st.button("Compute predictions for all measurements (about 3 s)", key="acc_go"):
        st.session_state["acc_requested"] = True
    if not st.session_state.get("acc_requested"):
        st.info("Press the button to predict every bundled measurement row (cached afterwards).")
    else:
        try:
            with st.status("Predicting the bundled measurements...", expanded=False) as status:
                df = predicted_rows(tuple(str(f) for f in BENCH_FILES))
                status.update(label=f"Predicted {len(df):,} measurement rows", state="complete")
        except PlannerError as e:
            st.error(f"Cannot predict the measurements: {e}")
            st.stop()
        metrics = sorted(df["metric_unit"].unique())
        n_src = df.groupby("metric_unit")["source"].nunique()
        default = metrics.index(str(n_src.idxmax()))  # the metric most sources measured
        pick = st.selectbox("Metric", metrics, index=default, key="acc_metric")
        sub = df[df["metric_unit"] == pick]
        lo = float(min(sub["measured"].min(), sub["predicted"].min())) * 0.8
        hi = float(max(sub["measured"].max(), sub["predicted"].max())) * 1.25
        unit = pick.split("[")[-1].rstrip("]")
        w.svg_chart(scatter_svg(sub, lo, hi, unit))
        inside = float((sub["ape"] <= BAND).mean() * 100)
        st.caption(
            f"{len(sub):,} rows; dashed line: predicted = measured; grey band: within "
            f"±{BAND:.0%} ({inside:.0f}% of these rows)."
        )
        st.markdown("**By source** (in sample)")
        st.dataframe(error_table(sub, ["source"]), hide_index=True, column_config=PCT_COLS)
        c2, c3 = st.columns(2)
        with c2:
            st.markdown("**By framework**")
            st.dataframe(error_table(sub, ["framework"]), hide_index=True, column_config=PCT_COLS)
        with c3:
            st.markdown("**By hardware**")
            st.dataframe(error_table(sub, ["hardware"]), hide_index=True, column_config=PCT_COLS)
