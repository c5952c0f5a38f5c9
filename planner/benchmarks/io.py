"""Reading and writing benchmark rows: CSV (dict rows or a validated DataFrame), the JSON
that ``vllm bench serve`` writes, CSV out.
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from planner.benchmarks.schema import REQUIRED_COLUMNS, SCHEMA_COLUMNS, TIME_UNITS_S
from planner.catalog.catalog import Catalog, check_layout, compute_dtype_for, load_catalog
from planner.catalog.compat import check_framework_gpu
from planner.errors import DATA_READ_LIMIT, PlannerError, UnknownIdError, read_text
from planner.files import iter_lines, load_json


# =========================================================================== measurements
def _hash_files(paths: Iterable[Path]) -> str:
    h = hashlib.sha256()
    for p in sorted(Path(x) for x in paths):
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def read_vllm_bench_json(
    path: str | os.PathLike[str],
    *,
    gpu: str,
    model: str | None = None,
    precision: str = "bf16",
    tp: int = 1,
    framework: str = "vllm",
):
    """Rows in the benchmark schema from one ``vllm bench serve --save-result`` JSON.

    Keys read: ``model_id``, ``num_prompts``, ``request_rate``, ``max_concurrency``,
    ``completed``, ``total_input_tokens``, ``total_output_tokens``,
    ``request_throughput``, ``output_throughput``, ``total_token_throughput``,
    ``mean/median/p99_ttft_ms``, ``mean/median_tpot_ms``, ``mean/median_itl_ms``,
    ``mean/median_e2el_ms``, ``date``. The JSON does not record the GPU, the TP size
    or the precision, so they are arguments. Prompt and answer lengths become their
    means (``total_*_tokens / completed``), i.e. the replay uses fixed lengths.
    """
    p = Path(path)
    text = read_text(p, "vllm bench JSON", "JSON file")
    d = load_json(text, p)
    try:
        return _vllm_rows(p, d, gpu, model, precision, tp, framework)
    except (TypeError, ValueError, OverflowError, ZeroDivisionError) as e:
        if isinstance(e, PlannerError):
            raise
        raise PlannerError(f"{p}: a number in the vllm bench JSON is not usable ({e})") from None


def _vllm_rows(p: Path, d: Any, gpu, model, precision, tp, framework):
    import pandas as pd

    if not isinstance(d, dict):
        raise PlannerError(f"{p}: expected a JSON object from `vllm bench serve`")
    need = ("completed", "total_input_tokens", "total_output_tokens", "output_throughput")
    miss = [k for k in need if k not in d]
    if miss:
        raise PlannerError(f"{p}: not a `vllm bench serve` result: missing keys {', '.join(miss)}")
    n = float(d["completed"])
    if not (math.isfinite(n) and n > 0):
        raise PlannerError(f"{p}: completed must be > 0")
    rate = d.get("request_rate", "inf")
    rate_f = float("inf") if str(rate).lower() in ("inf", "none") else float(rate)
    conc = d.get("max_concurrency")
    mode = "rate" if math.isfinite(rate_f) else ("concurrency" if conc else "offline")
    isl = round(float(d["total_input_tokens"]) / n)
    osl = round(float(d["total_output_tokens"]) / n)
    base = {
        "source": f"vllm bench serve result {p.name}",
        "source_detail": str(p),
        "as_of": str(d.get("date", ""))[:8],
        "hardware": gpu,
        "n_gpus": tp,
        "tp": tp,
        "pp": 1,
        "model": model or d.get("model_id", ""),
        "precision": precision,
        "kv_precision": "",
        "framework": framework,
        "framework_version": str(d.get("backend", "")),
        "mode": mode,
        "isl": isl,
        "osl": osl,
        "batch": np.nan,
        "concurrency": conc if conc else np.nan,
        "request_rate": rate_f,
        "context_len": isl + osl,
        "notes": f"{int(n)} requests; lengths are means of the run",
    }
    metric_keys = {
        "output_tok_s_total": ("output_throughput", "tok/s"),
        "total_tok_s": ("total_token_throughput", "tok/s"),
        "req_s": ("request_throughput", "req/s"),
        "ttft_ms_mean": ("mean_ttft_ms", "ms"),
        "ttft_ms_median": ("median_ttft_ms", "ms"),
        "ttft_ms_p99": ("p99_ttft_ms", "ms"),
        "tpot_ms_mean": ("mean_tpot_ms", "ms"),
        "tpot_ms_median": ("median_tpot_ms", "ms"),
        "itl_ms_mean": ("mean_itl_ms", "ms"),
        "itl_ms_median": ("median_itl_ms", "ms"),
        "e2e_ms_mean": ("mean_e2el_ms", "ms"),
        "e2e_ms_median": ("median_e2el_ms", "ms"),
    }
    rows = []
    for i, (metric, (key, unit)) in enumerate(metric_keys.items()):
        if d.get(key) is None:
            continue
        rows.append(
            {
                **base,
                "id": f"{p.stem}-{i:02d}",
                "metric": metric,
                "value": float(d[key]),
                "unit": unit,
            }
        )
    return pd.DataFrame(rows, columns=list(SCHEMA_COLUMNS))


def _check_vllm_setup(p: Path, row: Any, cat: Catalog) -> None:
    """The flags a vllm bench JSON needs (it does not record GPU, TP, precision) must describe
    a deployment that can run: the TP size divides the model's heads, the precision runs on
    the GPU, the framework runs on its vendor. Otherwise the file is refused with the reason
    instead of fitting rows that no prediction can use."""
    try:
        m = cat.model_ref(str(row["model"]), p.parent)
        g = cat.gpu(str(row["hardware"]))
        prec = cat.precision(str(row["precision"]))
        check_layout(m, int(row["tp"]), 1)
        compute_dtype_for(prec, g)
        check_framework_gpu(cat.framework(str(row["framework"])), g)
    except PlannerError as e:
        raise PlannerError(
            f"{p}: the flags given for this vllm bench JSON do not run: {e}"
        ) from None


def load_measurements(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    catalog: Catalog | None = None,
    **vllm_kw: Any,
):
    """Load and validate measurement files (benchmark-schema CSV or vLLM bench JSON).

    Raises
    ------
    PlannerError
        On a missing file or column, an unknown hardware/framework id, a model that is
        neither a catalog id nor a readable config.json, or a non-positive value. The
        message names the rows (by ``id``) so nothing is fitted from a partly valid file.
    """
    import pandas as pd

    cat = catalog or load_catalog()
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    frames = []
    for path in paths:
        p = Path(path)
        if not p.exists():
            raise PlannerError(f"measurement file not found: {p}")
        if p.suffix.lower() == ".json":
            if "gpu" not in vllm_kw:
                raise PlannerError(
                    f"{p}: a vllm bench JSON needs --gpu (the JSON does not record it)"
                )
            df = read_vllm_bench_json(p, **vllm_kw)
            _check_vllm_setup(p, df.iloc[0], cat)
        else:
            try:
                text = read_text(p, "measurement file", "CSV file", limit=DATA_READ_LIMIT)
                # bytes, not io.StringIO: StringIO holds 4 bytes per character
                df = pd.read_csv(
                    io.BytesIO(text.encode("utf-8")),
                    encoding="utf-8",
                    dtype={"id": str, "precision": str, "kv_precision": str},
                )
            except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as e:
                raise PlannerError(f"{p}: not a readable CSV ({str(e).splitlines()[0]})") from None
        missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
        if missing:
            raise PlannerError(
                f"{p}: missing columns {', '.join(missing)} (schema: {', '.join(SCHEMA_COLUMNS)})"
            )
        for c in SCHEMA_COLUMNS:
            if c not in df.columns:
                df[c] = np.nan
        if df["id"].isna().any():
            df["id"] = [f"{p.stem}-{i:04d}" if pd.isna(v) else v for i, v in enumerate(df["id"])]
        if df["source"].isna().any():
            # an all-empty column is float64: fill as text (fillna would warn, then fail)
            df["source"] = df["source"].astype(object).where(df["source"].notna(), p.name)
        df["_file"] = str(p)
        df["_dir"] = str(p.parent)
        frames.append(df)
    df = pd.concat(frames, ignore_index=True)
    problems: list[str] = []
    vals = pd.to_numeric(df["value"], errors="coerce")
    bad = df.loc[~((vals > 0) & np.isfinite(vals)), "id"].tolist()
    if bad:
        problems.append(f"non-positive, infinite or missing value in rows {_few(bad)}")
    dup = df.loc[df["id"].duplicated(keep=False), "id"].unique().tolist()
    if dup:
        problems.append(f"duplicate row ids {_few(dup)} (ids must be unique across files)")
    for col in (
        "n_gpus", "tp", "pp", "ep", "attention_dp", "moe_tp",
        "isl", "osl", "batch", "concurrency", "context_len",
    ):  # fmt: skip
        raw = df[col]
        v = pd.to_numeric(raw, errors="coerce")
        badc = df.loc[v.notna() & (v <= 0), "id"].tolist()
        if badc:
            problems.append(f"non-positive {col} in rows {_few(badc)}")
        text = raw.notna() & raw.astype(str).str.strip().ne("") & v.isna()
        if text.any():
            problems.append(f"{col} is not a number in rows {_few(df.loc[text, 'id'].tolist())}")
        frac = v.notna() & np.isfinite(v) & (v != np.floor(v))
        if frac.any():
            problems.append(
                f"{col} must be a whole number in rows {_few(df.loc[frac, 'id'].tolist())}"
            )
    tp_ = pd.to_numeric(df["tp"], errors="coerce")
    pp_ = pd.to_numeric(df["pp"], errors="coerce").fillna(1)
    # attention data-parallel ranks multiply the GPUs of a replica (schema.layout)
    dp_ = pd.to_numeric(df["attention_dp"], errors="coerce").fillna(1)
    ng_ = pd.to_numeric(df["n_gpus"], errors="coerce")
    per_ = tp_ * pp_ * dp_
    uneven = ng_.notna() & tp_.notna() & (per_ > 0) & ((ng_ % per_) != 0)
    if uneven.any():
        what = "tp x pp" if (dp_[uneven] == 1).all() else "tp x attention_dp x pp"
        problems.append(
            f"n_gpus is not a multiple of {what} in rows {_few(df.loc[uneven, 'id'].tolist())}"
        )
    for col, finder in (("precision", cat.precision), ("kv_precision", cat.kv_precision)):
        unknown_p: dict[str, list[str]] = {}
        for rid, v in zip(df["id"], df[col], strict=True):
            if pd.isna(v) or not str(v).strip():
                continue  # empty = not stated by the source: a reason at prediction time
            try:
                finder(str(v))
            except UnknownIdError:
                unknown_p.setdefault(str(v), []).append(rid)
        for v, rids in unknown_p.items():
            problems.append(f"unknown {col} '{v}' in rows {_few(rids)}")
    # units: step metrics in a time unit (converted to seconds), *_ms_* metrics in ms
    units = df["unit"].astype(str).str.strip()
    metric = df["metric"].astype(str)
    is_step = metric.isin(["prefill_s", "decode_step_s"])
    scale = units.map(TIME_UNITS_S)
    bad_step = is_step & scale.isna()
    if bad_step.any():
        problems.append(
            f"step metrics need a time unit ({', '.join(TIME_UNITS_S)}) in rows "
            f"{_few(df.loc[bad_step, 'id'].tolist())}"
        )
    bad_ms = metric.str.contains("_ms_") & units.ne("ms")
    if bad_ms.any():
        problems.append(
            f"*_ms_* metrics need unit ms in rows {_few(df.loc[bad_ms, 'id'].tolist())}"
        )
    for col, finder in (("hardware", cat.gpu), ("framework", cat.framework)):
        unknown: dict[str, list[str]] = {}
        for rid, v in zip(df["id"], df[col], strict=True):
            if pd.isna(v) or not str(v).strip():
                unknown.setdefault("(empty)", []).append(rid)
                continue
            try:
                finder(str(v))
            except UnknownIdError as e:
                unknown.setdefault(
                    f"{v}" + (f" (did you mean {e.suggestions[0]}?)" if e.suggestions else ""), []
                ).append(rid)
        for v, rids in unknown.items():
            problems.append(f"unknown {col} '{v}' in rows {_few(rids)}")
    unknown_models: dict[str, list[str]] = {}
    for rid, v, d in zip(df["id"], df["model"], df["_dir"], strict=True):
        try:
            cat.model_ref(str(v), d)
        except PlannerError:
            unknown_models.setdefault(str(v), []).append(rid)
    for v, rids in unknown_models.items():
        problems.append(
            f"unknown model '{v}' (not a catalog id nor a config.json) in rows {_few(rids)}"
        )
    if problems:
        raise PlannerError("invalid measurements: " + "; ".join(problems))
    df["value"] = vals
    step = df["metric"].isin(["prefill_s", "decode_step_s"])
    if step.any():  # step values in seconds from here on
        df.loc[step, "value"] = df.loc[step, "value"] * df.loc[step, "unit"].astype(
            str
        ).str.strip().map(TIME_UNITS_S)
        df.loc[step, "unit"] = "s"
    return df


def _few(ids: list[Any], n: int = 5) -> str:
    ids = [str(i) for i in ids]
    return ", ".join(ids[:n]) + (f" and {len(ids) - n} more" if len(ids) > n else "")


# --------------------------------------------------------------------------- files
#: key of a row dict (``iter_rows(keep_text=True)``) holding ``(text, columns)``: the row's
#: cells for ``columns`` as the file wrote them, so :func:`write_rows` copies them instead of
#: quoting every cell again (half the time of ``planner predict`` on a large file)
ROW_TEXT = "\x00row_text"


def iter_rows(
    path: str | os.PathLike[str], *, keep_text: bool = False
) -> tuple[list[str], int, Iterator[dict[str, str]]]:
    """A benchmark CSV as (column names, number of data lines, rows one at a time).

    The rows are parsed as they are consumed, so a file of a million rows never holds a
    million dicts (``planner predict`` streams its output the same way). ``keep_text``: each
    row also holds its text under :data:`ROW_TEXT` (rows with surplus cells do not)."""
    p = Path(path)
    text = read_text(p, "input file", "CSV file", limit=DATA_READ_LIMIT)
    consumed: list[str] = []

    def lines() -> Iterator[str]:
        for line in iter_lines(text):
            consumed.append(line)
            yield line

    try:
        reader = csv.reader(lines() if keep_text else iter_lines(text))
        cols = next(reader, [])
    except csv.Error as e:
        raise PlannerError(f"{p}: not a valid CSV file ({e})") from None
    if not cols:
        raise PlannerError(f"{p}: empty file (expected a header row in the benchmark schema)")
    if "metric" not in cols:
        raise PlannerError(f"{p}: no 'metric' column; is this a file in the benchmark schema?")
    n = max(text.count("\n") - 1, 0)
    ncol = len(cols)
    key = tuple(cols)
    consumed.clear()

    def rows() -> Iterator[dict[str, str]]:
        # csv.DictReader's rules, without its per-row overhead: blank lines are skipped,
        # missing cells are None, surplus cells are dropped
        try:
            for cells in reader:
                if not cells:
                    consumed.clear()
                    continue
                d = dict(zip(cols, cells, strict=False))
                if len(cells) < ncol:
                    for c in cols[len(cells) :]:
                        d[c] = None  # type: ignore[assignment]
                if keep_text:
                    # the reader has consumed exactly this row's lines (it reads no further)
                    raw = "".join(consumed) if len(consumed) > 1 else consumed[0]
                    consumed.clear()
                    if len(cells) <= ncol:
                        raw = raw[:-1] if raw.endswith("\n") else raw
                        d[ROW_TEXT] = (raw + "," * (ncol - len(cells)), key)  # type: ignore[assignment]
                yield d
        except csv.Error as e:
            raise PlannerError(f"{p}: not a valid CSV file ({e})") from None

    return cols, n, rows()


def read_rows(path: str | os.PathLike[str]) -> tuple[list[dict[str, str]], list[str]]:
    """Read a benchmark CSV into (rows as dicts of strings, column names)."""
    cols, _, rows = iter_rows(path)
    return list(rows), cols


def format_value(v: Any) -> str:
    """CSV text of a predicted value: 6 significant digits, empty for missing."""
    if v is None or v == "":
        return ""
    return f"{float(v):.6g}"


def _csv_cell(v: Any) -> str:
    """One cell as ``csv.writer`` (excel dialect, minimal quoting) writes it."""
    if v is None:
        return ""
    s = v if isinstance(v, str) else str(v)
    if "," in s or '"' in s or "\n" in s or "\r" in s:
        return '"' + s.replace('"', '""') + '"'
    return s


def write_rows(rows: Iterable[dict[str, Any]], columns: list[str], stream) -> None:
    """Write predicted rows as CSV (``predicted`` with 6 significant digits), as they come.

    A row read with ``iter_rows(keep_text=True)`` whose columns lead ``columns`` keeps its
    cells as the file wrote them; only the cells after them are quoted here."""
    w = csv.writer(stream, lineterminator="\n")
    w.writerow(columns)
    i_pred = columns.index("predicted") if "predicted" in columns else -1
    lead: tuple | None = None  # the column tuple whose rows may be copied as text
    tail: list[str] = []  # the columns after it
    cells: dict[str, str] = {}  # quoted text of repeated cells (provenance, reason)

    def quoted(v: Any) -> str:
        if v.__class__ is not str:
            return _csv_cell(v)
        q = cells.get(v)
        if q is None:
            q = _csv_cell(v)
            if len(cells) < 10_000:
                cells[v] = q
        return q

    write = stream.write
    for r in rows:
        text = r.get(ROW_TEXT)
        if text is not None and (text[1] is lead or _leads(text[1], columns)):
            if text[1] is not lead:
                lead, tail = text[1], columns[len(text[1]) :]
            parts = [text[0]]
            for c in tail:
                v = r.get(c)
                parts.append(format_value(v) if c == "predicted" else quoted(v))
            write(",".join(parts) + "\n")
            continue
        out = [r.get(c, "") for c in columns]
        if i_pred >= 0:
            out[i_pred] = format_value(out[i_pred])
        w.writerow(out)


def _leads(cols: tuple[str, ...], columns: list[str]) -> bool:
    return len(cols) <= len(columns) and tuple(columns[: len(cols)]) == cols
