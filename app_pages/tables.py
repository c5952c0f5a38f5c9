"""Tables as HTML text (issue 18): the app's result tables without Streamlit's data grid.

``st.dataframe`` draws with glide-data-grid, ~1.7 MB of JavaScript loaded on a page's first
table, that cost the browser ~0.7 s of CPU on a first load of the Plan or Compare page; it
also cut wide cells ("$17,510,...") at the column's edge. :func:`html_table` writes one
plain ``<table>`` instead (sent by ``app_pages.widgets.table`` as one ``st.html`` element):

* every cell is formatted by :mod:`planner.fmt` (the formatter of the CLI and the report),
  per column (:class:`Col`); numbers are right-aligned with tabular figures, text left;
  ``None``/NaN are ``"-"``;
* a header's help is its ``title`` (a tooltip); units stay in the header text;
* nothing is cut: the table scrolls sideways in its box, and downwards under a sticky
  header past a maximum height;
* every text is escaped (:func:`html.escape`);
* a click on a header sorts the rows (numbers on their raw value, ``data-v``; missing
  values last), through one listener on the document for every table (:data:`SORT_JS`,
  added once per page); each table is plain HTML without a script, the same without it.

:func:`parse_tables` reads the tables back (stdlib ``html.parser``): the tests and tools
check what the page shows. This module never imports streamlit.
"""

from __future__ import annotations

import html
import math
import numbers
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from html.parser import HTMLParser
from typing import Any, NamedTuple

import pandas as pd
from pydantic import BaseModel, ConfigDict

from planner import fmt

MISSING = fmt.MISSING
WRAP_CLASS = "pl-tw"  # the scrolling box around a table
TABLE_CLASS = "pl-table"


class Col(BaseModel):
    """How one column is shown.

    Parameters
    ----------
    key : the field of each row (a dict key or a DataFrame column)
    label : the header text, units included (default: ``key``)
    fmt : text of a number (e.g. ``planner.fmt.usd``); default :func:`planner.fmt.count` for
        whole numbers, :func:`planner.fmt.num` otherwise. Applied to numbers only: a text
        value is shown as it is, a missing one as ``"-"``
    help : the header's tooltip
    numeric : right-aligned with tabular figures; default: the column holds a number
    wrap : long text (reasons, SLOs) wraps at the table's ``wrap_rem`` instead of widening it
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str
    label: str | None = None
    fmt: Callable[[Any], str] | None = None
    help: str | None = None
    numeric: bool | None = None
    wrap: bool = False

    @property
    def title(self) -> str:
        return self.key if self.label is None else self.label


#: the tooltip of a "provenance" column (Plan's ranked options, Compare's side by side)
PROVENANCE_HELP = (
    "fit: calibrated on measurements of this GPU/framework/precision; "
    "transferred: from a coarser group; prior: no calibration"
)


def cols(
    keys: Iterable[str],
    formats: Mapping[str, Callable[[Any], str]] | None = None,
    helps: Mapping[str, str] | None = None,
) -> list[Col]:
    """A :class:`Col` for each key, with its formatter and tooltip where ``formats`` and
    ``helps`` have one (a "provenance" column gets :data:`PROVENANCE_HELP`)."""
    formats, helps = formats or {}, {"provenance": PROVENANCE_HELP, **(helps or {})}
    return [Col(key=k, fmt=formats.get(k), help=helps.get(k)) for k in keys]


def decimals(n: int) -> Callable[[Any], str]:
    """A formatter with exactly ``n`` decimals and thousands separators
    (:func:`planner.fmt.fixed`): what ``"%.1f"`` was in the data grid's column formats."""

    def fixed(v: Any) -> str:
        return fmt.fixed(v, n)

    return fixed


def _is_number(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _is_missing(v: Any) -> bool:
    if v is None or v is pd.NA or v is pd.NaT:
        return True
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isnan(v)


def _records(rows: pd.DataFrame | Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    if isinstance(rows, pd.DataFrame):
        return rows.to_dict("records")
    return list(rows)


def _columns(records: list[Mapping[str, Any]], columns: Sequence[Col | str] | None) -> list[Col]:
    if columns is None:
        keys: dict[str, None] = {}
        for r in records:
            keys.update(dict.fromkeys(r))
        columns = list(keys)
    return [c if isinstance(c, Col) else Col(key=c) for c in columns]


def csv_text(
    rows: pd.DataFrame | Iterable[Mapping[str, Any]], columns: Sequence[Col | str] | None = None
) -> str:
    """The raw values of the columns :func:`html_table` shows, as CSV under their headers
    (what a table's download button gives)."""
    records = _records(rows)
    cols = _columns(records, columns)
    return pd.DataFrame([{c.title: r.get(c.key) for c in cols} for r in records]).to_csv(
        index=False
    )


def _raw(v: Any) -> str:
    """The exact value of a number as text (``data-v``): ``repr`` round-trips a float."""
    if isinstance(v, numbers.Integral):
        return str(int(v))
    return repr(float(v))


def _text(v: Any, col: Col) -> str:
    if _is_missing(v):
        return MISSING
    if _is_number(v):
        if col.fmt is not None:
            return col.fmt(v)
        return fmt.count(v) if float(v).is_integer() else fmt.num(v)
    if isinstance(v, bool):
        return "yes" if v else "no"
    return str(v)


# a click on a header of a sortable table (class "s") sorts its rows by that column, ascending
# then descending; cells with a raw value (data-v) sort as numbers, the others as text
# (numeric-aware), missing cells last. One listener on the document for every table, added
# once per page (app_pages.widgets.html_css); no "<" in it, so it cannot end its script.
SORT_JS = (
    "window.plSort||(window.plSort=1,document.addEventListener('click',e=>{"
    "const h=e.target.closest&&e.target.closest('.pl-table.s th');if(!h)return;"
    "const t=h.closest('table'),i=h.cellIndex,s=h.getAttribute('aria-sort')==='ascending'?-1:1;"
    "for(const c of h.parentElement.cells)c.removeAttribute('aria-sort');"
    "h.setAttribute('aria-sort',s>0?'ascending':'descending');"
    "const k=r=>{const c=r.cells[i];return c.classList.contains('na')?null:"
    "(c.dataset.v!==undefined?+c.dataset.v:c.textContent)};"
    "const rs=[...t.tBodies[0].rows].map(r=>[k(r),r]);"
    "rs.sort((x,y)=>x[0]===null?(y[0]===null?0:1):y[0]===null?-1:s*(typeof x[0]==='number'"
    "&&typeof y[0]==='number'?x[0]-y[0]:String(x[0]).localeCompare(String(y[0]),undefined,"
    "{numeric:true})));t.tBodies[0].append(...rs.map(p=>p[1]))}))"
)

CSS = """
.pl-tw{overflow:auto;border:1px solid rgba(49,51,63,.12);border-radius:.5rem;margin:0 0 .5rem}
.pl-table{width:100%;border-collapse:separate;border-spacing:0;font-size:.875rem;
 line-height:1.35;color:inherit;margin:0}
.pl-table th,.pl-table td{padding:.3rem .65rem;text-align:left;vertical-align:top;border:0;
 border-bottom:1px solid rgba(49,51,63,.08)}
.pl-table td{white-space:nowrap}
.pl-table td.w{white-space:normal;min-width:var(--pl-wrap,24rem)}
.pl-table th{position:sticky;top:0;z-index:1;background:#f7f8fa;font-weight:600;
 color:rgba(49,51,63,.8);vertical-align:bottom;min-width:4.5rem;
 border-bottom:1px solid rgba(49,51,63,.18)}
.pl-table .n{text-align:right;font-variant-numeric:tabular-nums}
.pl-table .nw{white-space:nowrap}
.pl-table th[title]{text-decoration:underline dotted rgba(49,51,63,.45);
 text-underline-offset:.2em;cursor:help}
.pl-table.s th{cursor:pointer;user-select:none}
.pl-table.s th:hover{background:#eef0f4}
.pl-table th[aria-sort=ascending]::after{content:" \\25B2";font-size:.7em}
.pl-table th[aria-sort=descending]::after{content:" \\25BC";font-size:.7em}
.pl-table tbody tr:nth-child(even){background:rgba(49,51,63,.025)}
.pl-table tbody tr:hover{background:rgba(28,131,225,.07)}
.pl-table tbody tr:last-child td{border-bottom:0}
.pl-table td.na{color:rgba(49,51,63,.45)}
""".strip()


def _header_text(title: str) -> str:
    """The escaped header text; a word with a hyphen ("$/GPU-h") is kept on one line, so
    that a narrow header wraps at its spaces only."""
    words = [html.escape(x) for x in title.split(" ")]
    return " ".join(f'<span class="nw">{x}</span>' if "-" in x else x for x in words)


def html_table(
    rows: pd.DataFrame | Iterable[Mapping[str, Any]],
    columns: Sequence[Col | str] | None = None,
    *,
    max_height_rem: float = 32.0,
    sortable: bool = True,
    wrap_rem: float = 24.0,
) -> str:
    """One HTML table of ``rows`` in a scrolling box (style: :data:`CSS`, once per page).

    Parameters
    ----------
    rows : a DataFrame (its index is not shown) or dicts, one per row
    columns : what to show, in order: :class:`Col` or a key (default: every key of the rows
        in order of first appearance, formatted by default)
    max_height_rem : the box's height limit; a longer table scrolls under its header
    sortable : a click on a header sorts (class ``s``; :data:`SORT_JS` must be on the page)
    wrap_rem : the width of a ``wrap`` column, within which its text wraps

    Returns
    -------
    ``<div class="pl-tw">`` with the ``<table class="pl-table">``
    """
    records = _records(rows)
    cols = _columns(records, columns)
    numeric = [
        c.numeric
        if c.numeric is not None
        else any(_is_number(v) and not _is_missing(v) for v in (r.get(c.key) for r in records))
        for c in cols
    ]
    esc = html.escape
    head = []
    for c, n in zip(cols, numeric, strict=True):
        cls = ' class="n"' if n else ""
        tip = f' title="{esc(c.help)}"' if c.help else ""
        # a long header wraps to at most three lines (~0.45 rem a character at its size)
        width = (
            f' style="min-width:{0.45 * math.ceil(len(c.title) / 3):.1f}rem"'
            if len(c.title) > 30
            else ""
        )
        head.append(f'<th scope="col"{cls}{tip}{width}>{_header_text(c.title)}</th>')
    body = []
    for r in records:
        cells = []
        for c, n in zip(cols, numeric, strict=True):
            v = r.get(c.key)
            classes = (["n"] if n else []) + (["w"] if c.wrap else [])
            attr = ""
            if _is_missing(v):
                classes.append("na")
            elif _is_number(v):
                attr = f' data-v="{esc(_raw(v))}"'
            cls = f' class="{" ".join(classes)}"' if classes else ""
            cells.append(f"<td{cls}{attr}>{esc(_text(v, c))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    style = f"max-height:{max_height_rem:g}rem;--pl-wrap:{wrap_rem:g}rem"
    table_cls = TABLE_CLASS + (" s" if sortable else "")
    return (
        f'<div class="{WRAP_CLASS}" style="{style}"><table class="{table_cls}"><thead><tr>'
        + "".join(head)
        + "</tr></thead><tbody>"
        + "".join(body)
        + "</tbody></table></div>"
    )


# --------------------------------------------------------------------------- reading back
class Table(NamedTuple):
    """A table as :func:`parse_tables` reads it.

    ``shown``: the text of every cell (a DataFrame of strings, columns = header texts);
    ``values``: the raw values: the number of ``data-v`` (``int`` when whole in the source,
    else ``float``), ``None`` for a missing cell, the text otherwise; ``help``: header text ->
    its tooltip, for the headers that have one."""

    shown: pd.DataFrame
    values: pd.DataFrame
    help: dict[str, str]


_INT = re.compile(r"-?\d+")


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[Table] = []
        self._cell: list[str] | None = None
        self._skip = 0  # inside <script>/<style>

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag in ("script", "style"):
            self._skip += 1
        elif tag == "table":
            self._head: list[str] = []
            self._help: dict[str, str] = {}
            self._rows: list[list[tuple[str, Any]]] = []
            self._tip = None
        elif tag == "tr":
            self._row: list[tuple[str, Any]] = []
        elif tag in ("th", "td"):
            self._cell = []
            self._tip = a.get("title")
            classes = (a.get("class") or "").split()
            raw = a.get("data-v")
            if "na" in classes:
                self._value: Any = None
            elif raw is not None:
                self._value = int(raw) if _INT.fullmatch(raw) else float(raw)
            else:
                self._value = ...  # the text, once read

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._skip -= 1
        elif tag in ("th", "td") and self._cell is not None:
            text = "".join(self._cell)
            if tag == "th":
                self._head.append(text)
                if self._tip is not None:
                    self._help[text] = self._tip
            else:
                self._row.append((text, text if self._value is ... else self._value))
            self._cell = None
        elif tag == "tr" and self._row:
            self._rows.append(self._row)
        elif tag == "table":
            cols, rows = self._head, self._rows
            shown = pd.DataFrame([[t for t, _ in r] for r in rows], columns=cols, dtype=object)
            values = pd.DataFrame([[v for _, v in r] for r in rows], columns=cols, dtype=object)
            self.tables.append(Table(shown, values, self._help))

    def handle_data(self, data: str) -> None:
        if self._cell is not None and not self._skip:
            self._cell.append(data)


def parse_tables(text: str) -> list[Table]:
    """Every table of :func:`html_table` in the HTML ``text``, in order (see :class:`Table`)."""
    r = _Reader()
    r.feed(text)
    r.close()
    return r.tables
