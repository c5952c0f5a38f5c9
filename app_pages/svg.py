"""Charts as SVG text, drawn on the server (issue 18: the browser only inserts DOM).

Vega-Lite charts cost the browser most of a page's work on the 2-core machine (loading the
vega bundle, compiling each spec, running its dataflow). The app's charts are simple, so
they are drawn here as inline SVG strings: pure functions, no streamlit, no new dependency.

Every chart

* fills its column (``viewBox`` and ``width="100%"``), its text in the page's font and colour
  (``currentColor``, so a dark theme works too);
* has "nice" ticks (1, 2, 5 x 10^k; 1-2-5 per decade on a log axis) labelled with thousands
  separators and never an exponent (:func:`tick_text`, :func:`planner.fmt.num`), and axis
  titles with their units (the caller's text);
* computes its margins from the lengths of its labels (:func:`text_width_px`), so no tick
  label, axis title or point label is cut at the edge;
* carries a tooltip on each mark (an SVG ``<title>``), ``role="img"`` and an ``aria-label``;
* escapes every text it is given (:func:`html.escape`).

The app inserts them with ``st.markdown(..., unsafe_allow_html=True)``
(``app_pages.widgets.svg_chart``): ``st.html`` sanitises with DOMPurify's HTML-only profile,
which removes any ``<svg>`` (checked in chromium with Streamlit 1.67), while Markdown's raw
HTML keeps the SVG with its ``<title>``, ``<style>``, ``role`` and ``aria-*``.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from planner import fmt

BLUE, ORANGE, RED, GREEN, GREY = "#4c78a8", "#f58518", "#d62728", "#54a24b", "#9d9d9d"
#: Vega's default categorical colours (tableau10), for charts coloured by a category
CATEGORY = ("#4c78a8", "#f58518", "#e45756", "#72b7b2", "#54a24b", "#eeca3b", "#b279a2",
            "#ff9da6", "#9d755d", "#bab0ac")  # fmt: skip
AXIS = "#808495"  # Streamlit's grey: axis lines, grid
FONT_PX = 12  # tick labels, legend, point labels [px of the viewBox]
TITLE_PX = 13  # axis titles [px]
PAD = 8  # space between a label and what it labels [px]


# --------------------------------------------------------------------------- text
def esc(text: object) -> str:
    """``text`` as SVG/HTML text or attribute value (``&``, ``<``, ``>``, quotes escaped)."""
    return html.escape(str(text), quote=True)


def text_width_px(text: str, size_px: float = FONT_PX, bold: bool = False) -> float:
    """An upper estimate of the width of ``text`` in a sans-serif font [px].

    Parameters
    ----------
    text : the text
    size_px : font size [px]
    bold : bold text is ~5 % wider

    Returns
    -------
    float
        Width [px]: 0.62 em per character, 0.68 em per capital or wide glyph (W, M, m, w,
        %, @), 0.3 em per narrow one (``.,:;'|!il1 ``); generous, so a margin computed from it
        does not cut the text.
    """
    em = 0.0
    for ch in text:
        if ch in ".,:;'|!il ()[]":
            em += 0.3
        elif ch.isupper() or ch in "WMmw%@#$":
            em += 0.68
        else:
            em += 0.58
    return em * size_px * (1.05 if bold else 1.0)


def tick_text(value: float, prefix: str = "", sig: int = 4) -> str:
    """A tick label: ``value`` with thousands separators and no exponent, ``prefix`` before it.

    Parameters
    ----------
    value : the tick's value
    prefix : e.g. ``"$"`` for money
    sig : significant digits kept (:func:`planner.fmt.num`)

    Returns
    -------
    str
        ``"1,000"``, ``"0.05"``, ``"$2.5"``; ``"0"`` for a value within 1e-12 of zero.
    """
    if abs(value) < 1e-12:
        value = 0.0
    text = fmt.num(value, sig)
    if text.startswith("-"):
        return "-" + prefix + text[1:]
    return prefix + text


def _num(v: float) -> str:
    """A coordinate [px] with at most one decimal."""
    return f"{v:.1f}".rstrip("0").rstrip(".") if math.isfinite(v) else "0"


# --------------------------------------------------------------------------- ticks and scales
def nice_step(span: float, count: int = 5) -> float:
    """The step of about ``count`` ticks over ``span``: 1, 2 or 5 x 10^k (``span`` > 0)."""
    raw = span / max(count, 1)
    k = math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if m * 10.0**k >= raw * 0.999:
            return m * 10.0**k
    return 10.0 ** (k + 1)


def linear_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Ticks at the multiples of :func:`nice_step` from ``lo`` to ``hi`` (both included when
    they are multiples). ``lo == hi`` gives that one value."""
    if not hi > lo:
        return [lo]
    step = nice_step(hi - lo, count)
    first = math.ceil(lo / step - 1e-9)
    last = math.floor(hi / step + 1e-9)
    return [round(i * step, 12) for i in range(first, last + 1)]


def nice_linear_domain(lo: float, hi: float, count: int = 5) -> tuple[float, float]:
    """``[lo, hi]`` widened to the multiples of its :func:`nice_step` (as Vega's ``nice``)."""
    if not hi > lo:
        lo, hi = (lo - 1, hi + 1) if lo == 0 else (lo - abs(lo) * 0.1, hi + abs(hi) * 0.1)
    step = nice_step(hi - lo, count)
    return math.floor(lo / step + 1e-9) * step, math.ceil(hi / step - 1e-9) * step


LOG_STEPS = ((1,), (1, 2, 5), (1, 2, 3, 4, 5, 6, 7, 8, 9))


def log_ticks(lo: float, hi: float, min_ticks: int = 3) -> list[float]:
    """Ticks of a log axis from ``lo`` to ``hi`` (> 0): the powers of 10 within, or 1-2-5
    x 10^k where those are fewer than ``min_ticks``, or every 1..9 x 10^k where still fewer."""
    if not (lo > 0 and hi >= lo):
        raise ValueError(f"a log axis needs 0 < lo <= hi, got {lo}, {hi}")
    ticks: list[float] = []
    for mults in LOG_STEPS:
        ticks = []
        for k in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1):
            for m in mults:
                v = float(f"{m}e{k}")
                if lo * (1 - 1e-9) <= v <= hi * (1 + 1e-9):
                    ticks.append(v)
        if len(ticks) >= min_ticks:
            break
    return ticks


def nice_log_domain(lo: float, hi: float) -> tuple[float, float]:
    """``[lo, hi]`` (> 0) widened to the nearest 1, 2 or 5 x 10^k around it."""

    def down(v: float) -> float:
        k = math.floor(math.log10(v))
        return max(m * 10.0**k for m in (1, 2, 5) if m * 10.0**k <= v * (1 + 1e-9))

    def up(v: float) -> float:
        k = math.floor(math.log10(v))
        return min(m * 10.0**k for m in (1, 2, 5, 10) if m * 10.0**k >= v * (1 - 1e-9))

    return down(lo), up(hi)


@dataclass(frozen=True)
class Scale:
    """A map from data values to pixels: ``domain`` (lo, hi) onto ``range_px`` (a, b),
    linear or logarithmic (``log``)."""

    domain: tuple[float, float]
    range_px: tuple[float, float]
    log: bool = False

    def __call__(self, v: float) -> float:
        (d0, d1), (r0, r1) = self.domain, self.range_px
        if self.log:
            v, d0, d1 = (math.log10(max(x, 1e-300)) for x in (v, d0, d1))
        t = 0.5 if d1 == d0 else (v - d0) / (d1 - d0)
        return r0 + t * (r1 - r0)


@dataclass(frozen=True)
class Axis:
    """One axis of a chart: its ``title`` (with the unit), ``log`` or linear, ``prefix`` of
    the tick labels (``"$"``), ``zero`` (a linear axis from 0), ``nice`` (domain widened to
    the ticks), ``pad`` (a linear domain widened by this fraction of its span on each side)."""

    title: str
    log: bool = False
    prefix: str = ""
    zero: bool = False
    nice: bool = True
    pad: float = 0.0
    count: int = 5


def axis_domain(axis: Axis, values: Sequence[float]) -> tuple[float, float]:
    """The domain of ``axis`` covering the finite ``values`` (positive ones on a log axis)."""
    vals = [v for v in values if math.isfinite(v) and (v > 0 or not axis.log)]
    if not vals:
        return (1.0, 10.0) if axis.log else (0.0, 1.0)
    lo, hi = min(vals), max(vals)
    if axis.log:
        return nice_log_domain(lo, hi) if axis.nice else (lo, hi)
    if axis.zero:
        lo, hi = min(lo, 0.0), max(hi, 0.0)
    span = (hi - lo) or abs(hi) or 1.0
    lo, hi = lo - axis.pad * span, hi + axis.pad * span
    if axis.zero and min(vals) >= 0:
        lo = max(lo, 0.0)
    return nice_linear_domain(lo, hi, axis.count) if axis.nice else (lo, hi)


def axis_ticks(axis: Axis, domain: tuple[float, float]) -> list[float]:
    """The ticks of ``axis`` within ``domain``."""
    if axis.log:
        return log_ticks(*domain)
    return linear_ticks(*domain, axis.count)


# --------------------------------------------------------------------------- drawing
def svg_open(width: float, height: float, label: str, kind: str) -> str:
    """The ``<svg>`` start tag: ``viewBox`` 0 0 ``width`` ``height`` [px], 100 % of the
    column wide, ``role="img"`` with ``aria-label`` ``label``, ``data-chart`` ``kind``."""
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_num(width)} {_num(height)}" '
        f'width="100%" role="img" aria-label="{esc(label)}" data-chart="{esc(kind)}" '
        f'font-size="{FONT_PX}" fill="currentColor" style="max-width:100%;height:auto;'
        f'overflow:visible">'
    )


def text(x: float, y: float, s: str, *, anchor: str = "start", size: float = FONT_PX,
         bold: bool = False, colour: str | None = None, baseline: str = "middle",
         rotate: float = 0.0, cls: str = "") -> str:  # fmt: skip
    """One ``<text>`` at (``x``, ``y``) [px], escaped."""
    attrs = [f'x="{_num(x)}"', f'y="{_num(y)}"', f'text-anchor="{anchor}"']
    if baseline != "auto":
        attrs.append(f'dominant-baseline="{baseline}"')
    if size != FONT_PX:
        attrs.append(f'font-size="{_num(size)}"')
    if bold:
        attrs.append('font-weight="600"')
    if colour:
        attrs.append(f'fill="{colour}"')
    if rotate:
        attrs.append(f'transform="rotate({_num(rotate)} {_num(x)} {_num(y)})"')
    if cls:
        attrs.append(f'class="{cls}"')
    if cls == "tk":  # tick labels a little lighter than titles
        attrs.append('fill-opacity="0.75"')
    return f"<text {' '.join(attrs)}>{esc(s)}</text>"


def tip(s: str | None) -> str:
    """A tooltip: an escaped ``<title>`` (nothing for ``None``); a newline starts a line."""
    return f"<title>{esc(s).replace(chr(10), '&#10;')}</title>" if s else ""


def marker(x: float, y: float, shape: str, r: float, colour: str, tooltip: str | None,
           cls: str = "pt") -> str:  # fmt: skip
    """A point mark: ``shape`` "circle" or "diamond" of radius ``r`` [px] at (``x``, ``y``)."""
    if shape == "diamond":
        d = r * 1.35
        pts = f"{_num(x)},{_num(y - d)} {_num(x + d)},{_num(y)} {_num(x)},{_num(y + d)} {_num(x - d)},{_num(y)}"  # fmt: skip
        return f'<polygon class="{cls}" points="{pts}" fill="{colour}" stroke="white" stroke-width="1">{tip(tooltip)}</polygon>'  # fmt: skip
    return f'<circle class="{cls}" cx="{_num(x)}" cy="{_num(y)}" r="{_num(r)}" fill="{colour}" stroke="white" stroke-width="1">{tip(tooltip)}</circle>'  # fmt: skip


def band_points(xs: Sequence[float], lo: Sequence[float], hi: Sequence[float],
                sx: Callable[[float], float], sy: Callable[[float], float]) -> str:  # fmt: skip
    """The ``points`` of a band's polygon: along ``hi`` left to right, back along ``lo``
    (pixels through the scales ``sx``, ``sy``)."""
    top = [f"{_num(sx(x))},{_num(sy(h))}" for x, h in zip(xs, hi, strict=True)]
    bottom = [f"{_num(sx(x))},{_num(sy(v))}" for x, v in zip(xs, lo, strict=True)]
    return " ".join(top + bottom[::-1])


@dataclass
class Frame:
    """The plot area of an x-y chart and its scales, laid out from the label sizes:
    ``left`` = widest y tick label + the rotated y title, ``bottom`` = x tick labels + the
    x title; ``top``/``right`` as given (room for labels above or beside the plot)."""

    width: float
    height: float
    x: Scale
    y: Scale
    x_ticks: list[float]
    y_ticks: list[float]
    x_axis: Axis
    y_axis: Axis
    left: float
    top: float
    right: float
    bottom: float

    @classmethod
    def fit(cls, width: float, plot_height: float, x_axis: Axis, x_domain: tuple[float, float],
            y_axis: Axis, y_domain: tuple[float, float], *, top: float = PAD,
            right: float = 12.0, x_inset: float = 0.0) -> Frame:  # fmt: skip
        """A frame ``width`` [px] wide whose plot area is ``plot_height`` [px] high;
        ``x_inset`` [px] keeps the data this far from the plot's left and right edges."""
        xt, yt = axis_ticks(x_axis, x_domain), axis_ticks(y_axis, y_domain)
        y_lab = max((text_width_px(tick_text(v, y_axis.prefix)) for v in yt), default=0.0)
        left = y_lab + PAD + (TITLE_PX + 1.5 * PAD if y_axis.title else 0.0)
        # the first and last x tick labels are centred on their tick: half hangs outside
        x_lab = [text_width_px(tick_text(v, x_axis.prefix)) for v in xt] or [0.0]
        right = max(right, x_lab[-1] / 2 + 2)
        left = max(left, x_lab[0] / 2 + 2)
        bottom = FONT_PX + PAD + (TITLE_PX + PAD if x_axis.title else 0.0) + 4
        height = top + plot_height + bottom
        xs = Scale(x_domain, (left + x_inset, width - right - x_inset), x_axis.log)
        ys = Scale(y_domain, (top + plot_height, top), y_axis.log)
        return cls(width, height, xs, ys, xt, yt, x_axis, y_axis, left, top, right, bottom)

    @property
    def plot_bottom(self) -> float:
        return self.height - self.bottom

    def axes(self) -> str:
        """Grid lines, tick labels, the axis lines and titles."""
        out = ['<g class="axes">']
        x0, x1, y0, y1 = self.left, self.width - self.right, self.plot_bottom, self.top
        for v in self.y_ticks:
            py = self.y(v)
            out.append(f'<line x1="{_num(x0)}" x2="{_num(x1)}" y1="{_num(py)}" y2="{_num(py)}" stroke="{AXIS}" stroke-opacity="0.25"/>')  # fmt: skip
            out.append(text(x0 - PAD / 2, py, tick_text(v, self.y_axis.prefix), anchor="end", cls="tk"))  # fmt: skip
        for v in self.x_ticks:
            px = self.x(v)
            out.append(f'<line x1="{_num(px)}" x2="{_num(px)}" y1="{_num(y0)}" y2="{_num(y0 + 4)}" stroke="{AXIS}"/>')  # fmt: skip
            out.append(text(px, y0 + 6, tick_text(v, self.x_axis.prefix), anchor="middle", baseline="hanging", cls="tk"))  # fmt: skip
        out.append(f'<line x1="{_num(x0)}" x2="{_num(x1)}" y1="{_num(y0)}" y2="{_num(y0)}" stroke="{AXIS}"/>')  # fmt: skip
        out.append(f'<line x1="{_num(x0)}" x2="{_num(x0)}" y1="{_num(y0)}" y2="{_num(y1)}" stroke="{AXIS}"/>')  # fmt: skip
        if self.x_axis.title:
            out.append(text((x0 + x1) / 2, self.height - 4, self.x_axis.title, anchor="middle", size=TITLE_PX, baseline="auto"))  # fmt: skip
        if self.y_axis.title:
            cy = (y0 + y1) / 2
            out.append(text(TITLE_PX - 2, cy, self.y_axis.title, anchor="middle", size=TITLE_PX, rotate=-90))  # fmt: skip
        out.append("</g>")
        return "".join(out)


def clamp_label(x: float, label: str, anchor: str, width: float, size: float = FONT_PX,
                bold: bool = False) -> tuple[float, str]:  # fmt: skip
    """(x, anchor) of a label at ``x`` moved inside 0..``width`` [px] where it would stick out."""
    w = text_width_px(label, size, bold)
    start = {"start": x, "middle": x - w / 2, "end": x - w}[anchor]
    if start < 2:
        return 2.0, "start"
    if start + w > width - 2:
        return width - 2, "end"
    return x, anchor


# --------------------------------------------------------------------------- charts
@dataclass(frozen=True)
class Point:
    """A highlighted or categorised point: position, look (``shape`` "circle" or "diamond",
    radius ``r`` [px], ``colour``), its ``tooltip`` and an optional ``label`` (drawn above,
    or at ``label_anchor`` "end": above and to the left) in ``label_colour``."""

    x: float
    y: float
    colour: str = BLUE
    shape: str = "circle"
    r: float = 5.0
    tooltip: str | None = None
    label: str = ""
    label_colour: str | None = None
    label_anchor: str = "middle"
    bold: bool = True


def line_chart(x: Sequence[float], y: Sequence[float], *, x_axis: Axis, y_axis: Axis,
               label: str, width: float = 680, plot_height: float = 260,
               tooltips: Sequence[str] | None = None, band: tuple | None = None,
               hrule: tuple[float, str] | None = None, vrule: tuple[float, str] | None = None,
               highlights: Sequence[Point] = (), colour: str = BLUE,
               points: bool | str = True) -> str:  # fmt: skip
    """A line (with a point per row) over linear or log axes.

    Parameters
    ----------
    x, y : the line's points, in data units (rows with a non-finite value, or a value <= 0
        on a log axis, are left out)
    x_axis, y_axis : the axes (titles with units)
    label : the chart's description (``aria-label``)
    width : viewBox width [px]; the chart is scaled to its column
    plot_height : height of the plot area [px]
    tooltips : one tooltip per point
    band : ``(xs, lo, hi)``: a shaded band between ``lo`` and ``hi`` at ``xs``
    hrule : ``(y, text)``: a dashed red horizontal rule (an SLO) labelled at its left end
    vrule : ``(x, text)``: a dashed red vertical rule (a limit) labelled to its left, at top
    highlights : points drawn over the line (a knee)
    colour : the line's colour
    points : a dot on every point of the line; ``"hidden"``: invisible ones, for the tooltips

    Returns
    -------
    str
        The SVG element. Its line is ``<polyline class="line">`` with ``data-n`` = the
        number of points, each point a ``class="pt"`` mark.
    """
    tips = list(tooltips) if tooltips is not None else [None] * len(x)
    rows = [
        (a, b, t)
        for a, b, t in zip(x, y, tips, strict=True)
        if math.isfinite(a) and math.isfinite(b) and (b > 0 or not y_axis.log)
        and (a > 0 or not x_axis.log)
    ]  # fmt: skip
    xv = [r[0] for r in rows] + [p.x for p in highlights]
    yv = [r[1] for r in rows] + [p.y for p in highlights]
    if band is not None:
        bx, blo, bhi = (list(v) for v in band)
        keep = [i for i in range(len(bx)) if all(math.isfinite(v) for v in (bx[i], blo[i], bhi[i]))]  # fmt: skip
        bx, blo, bhi = ([v[i] for i in keep] for v in (bx, blo, bhi))
        band = (bx, blo, bhi) if bx else None
        if band:
            xv += bx
            yv += blo + bhi
    if hrule is not None:
        yv.append(hrule[0])
    if vrule is not None:
        xv.append(vrule[0])
    xd, yd = axis_domain(x_axis, xv), axis_domain(y_axis, yv)
    top = FONT_PX + 2 * PAD if (highlights or vrule) else PAD
    f = Frame.fit(width, plot_height, x_axis, xd, y_axis, yd, top=top, x_inset=0)
    out = [svg_open(width, f.height, label, "line"), f.axes()]
    if band:
        bx, blo, bhi = band
        tip_band = "band (x: low to high)\n" + "\n".join(
            f"{fmt.num(a, 4)}: {fmt.num(lo_, 3)} to {fmt.num(hi_, 3)}"
            for a, lo_, hi_ in zip(bx, blo, bhi, strict=True)
        )
        out.append(f'<polygon class="band" points="{band_points(bx, blo, bhi, f.x, f.y)}" fill="{colour}" fill-opacity="0.18" stroke="none">{tip(tip_band)}</polygon>')  # fmt: skip
    if hrule is not None:
        py = f.y(hrule[0])
        out.append(f'<line class="hrule" x1="{_num(f.left)}" x2="{_num(f.width - f.right)}" y1="{_num(py)}" y2="{_num(py)}" stroke="{RED}" stroke-width="2" stroke-dasharray="6 3">{tip(hrule[1])}</line>')  # fmt: skip
        out.append(text(f.left + 4, py - 9, hrule[1], colour=RED))
    if vrule is not None:
        px = f.x(vrule[0])
        out.append(f'<line class="vrule" x1="{_num(px)}" x2="{_num(px)}" y1="{_num(f.top)}" y2="{_num(f.plot_bottom)}" stroke="{RED}" stroke-width="2" stroke-dasharray="5 3">{tip(vrule[1])}</line>')  # fmt: skip
        lx, anchor = clamp_label(px - 6, vrule[1], "end", f.width)
        out.append(text(lx, f.top - PAD, vrule[1], anchor=anchor, colour=RED))
    pts = " ".join(f"{_num(f.x(a))},{_num(f.y(b))}" for a, b, _ in rows)
    out.append(f'<polyline class="line" data-n="{len(rows)}" points="{pts}" fill="none" stroke="{colour}" stroke-width="2.5" stroke-linejoin="round"/>')  # fmt: skip
    if points == "hidden":  # no dots, but each point's tooltip where the pointer is
        out.append('<g class="points" fill-opacity="0" stroke="none">')
        out += [f'<circle class="pt" cx="{_num(f.x(a))}" cy="{_num(f.y(b))}" r="5">{tip(t)}</circle>' for a, b, t in rows]  # fmt: skip
        out.append("</g>")
    elif points:
        out.append('<g class="points">')
        out += [marker(f.x(a), f.y(b), "circle", 3.5, colour, t) for a, b, t in rows]
        out.append("</g>")
    out += [_highlight(f, p) for p in highlights]
    out.append("</svg>")
    return "".join(out)


def _highlight(f: Frame, p: Point) -> str:
    """A highlighted point of frame ``f`` with its label."""
    px, py = f.x(p.x), f.y(p.y)
    out = marker(px, py, p.shape, p.r, p.colour, p.tooltip, cls="hl")
    if p.label:
        gap = p.r * 1.35 + 3
        lx = px - gap if p.label_anchor == "end" else px
        lx, anchor = clamp_label(lx, p.label, p.label_anchor, f.width, bold=p.bold)
        out += text(lx, py - gap, p.label, anchor=anchor, bold=p.bold,
                    colour=p.label_colour or p.colour, baseline="auto", cls="pl")  # fmt: skip
    return out


def legend_row(items: Sequence[tuple[str, str, str]], x: float, y: float, width: float) -> tuple[str, float]:  # fmt: skip
    """A legend of (label, colour, shape "circle"/"diamond"/"square") items in rows from
    (``x``, ``y``) [px], wrapped at ``width``; returns (SVG, height used [px])."""
    out, cx, cy = ['<g class="legend">'], x, y
    for name, colour, shape in items:
        w = 18 + text_width_px(name) + 16
        if cx > x and cx + w > width:
            cx, cy = x, cy + FONT_PX + 8
        if shape == "square":
            out.append(f'<rect x="{_num(cx)}" y="{_num(cy - 6)}" width="12" height="12" fill="{colour}"/>')  # fmt: skip
        else:
            out.append(marker(cx + 6, cy, shape, 5, colour, None, cls="lg"))
        out.append(text(cx + 18, cy, name))
        cx += w
    out.append("</g>")
    return "".join(out), cy - y + FONT_PX + 4


def scatter_chart(points: Sequence[Point], *, x_axis: Axis, y_axis: Axis, label: str,
                  width: float = 1300, plot_height: float = 300,
                  step_line: tuple[Sequence[float], Sequence[float], str] | None = None,
                  error_bars: Sequence[tuple[float, float, float, str]] = (),
                  legend: Sequence[tuple[str, str, str]] = (),
                  domain: tuple[float, float] | None = None,
                  band: tuple[Sequence[float], Sequence[float], Sequence[float], str] | None = None,
                  diagonal: bool = False) -> str:  # fmt: skip
    """Points in categories, with labels, an optional step line and vertical error bars.

    Parameters
    ----------
    points : the points (drawn in order: put the highlighted ones last)
    x_axis, y_axis : the axes
    label : the chart's description (``aria-label``)
    width : viewBox width [px]
    plot_height : height of the plot area [px]
    step_line : ``(xs, ys, colour)``: a dashed line through the points, stepping after each
        (``xs`` ascending)
    error_bars : ``(x, y_low, y_high, tooltip)``: a vertical bar from ``y_low`` to ``y_high``
    legend : (label, colour, shape) items below the plot
    domain : both axes' domain (lo, hi), instead of one from the points
    band : ``(xs, lo, hi, tooltip)``: a grey band between ``lo`` and ``hi`` at ``xs``
    diagonal : a dashed line y = x

    Returns
    -------
    str
        The SVG element; each point is a ``class="pt"`` mark, each label ``class="pl"``.
    """
    xv = [p.x for p in points]
    yv = [p.y for p in points] + [v for _, lo, hi, _ in error_bars for v in (lo, hi)]
    xd, yd = (domain, domain) if domain else (axis_domain(x_axis, xv), axis_domain(y_axis, yv))
    top = FONT_PX + 2 * PAD if any(p.label for p in points) else PAD
    inset = 0 if domain else 24
    f = Frame.fit(width, plot_height, x_axis, xd, y_axis, yd, top=top, x_inset=inset)
    leg, leg_h = legend_row(legend, f.left, 0, width) if legend else ("", 0.0)
    height = f.height + (leg_h + PAD + FONT_PX / 2 if legend else 0)
    out = [svg_open(width, height, label, "scatter"), f.axes()]
    if band is not None:
        out.append(f'<polygon class="band" points="{band_points(band[0], band[1], band[2], f.x, f.y)}" fill="#888" fill-opacity="0.15" stroke="none">{tip(band[3])}</polygon>')  # fmt: skip
    if diagonal:
        (a, b) = xd
        out.append(f'<line class="diag" x1="{_num(f.x(a))}" y1="{_num(f.y(a))}" x2="{_num(f.x(b))}" y2="{_num(f.y(b))}" stroke="#444" stroke-dasharray="4 3"/>')  # fmt: skip
    if step_line is not None and len(step_line[0]):
        xs, ys, colour = step_line
        d = [f"M{_num(f.x(xs[0]))},{_num(f.y(ys[0]))}"]
        for i in range(1, len(xs)):
            d.append(f"H{_num(f.x(xs[i]))}V{_num(f.y(ys[i]))}")
        out.append(f'<path class="step" d="{"".join(d)}" fill="none" stroke="{colour}" stroke-width="1.5" stroke-dasharray="4 3"/>')  # fmt: skip
    for x, lo, hi, t in error_bars:
        px = f.x(x)
        out.append(f'<g class="err" stroke="#555" stroke-width="1.2"><line x1="{_num(px)}" x2="{_num(px)}" y1="{_num(f.y(lo))}" y2="{_num(f.y(hi))}"/><line x1="{_num(px - 4)}" x2="{_num(px + 4)}" y1="{_num(f.y(lo))}" y2="{_num(f.y(lo))}"/><line x1="{_num(px - 4)}" x2="{_num(px + 4)}" y1="{_num(f.y(hi))}" y2="{_num(f.y(hi))}"/>{tip(t)}</g>')  # fmt: skip
    for p in points:
        px, py = f.x(p.x), f.y(p.y)
        out.append(marker(px, py, p.shape, p.r, p.colour, p.tooltip))
    for p in points:
        if p.label:  # above the point; beside its error bar's line where it has one
            gap = p.r * 1.35 + 3
            x0, a0 = (f.x(p.x) + p.r + 2, "start") if error_bars else (f.x(p.x), "middle")
            lx, anchor = clamp_label(x0, p.label, a0, width, bold=p.bold)
            out.append(text(lx, f.y(p.y) - gap, p.label, anchor=anchor, bold=p.bold, colour=p.label_colour, baseline="auto", cls="pl"))  # fmt: skip
    if legend:
        out.append(f'<g transform="translate(0 {_num(f.height + PAD + FONT_PX / 2)})">{leg}</g>')
    out.append("</svg>")
    return "".join(out)


@dataclass(frozen=True)
class Bar:
    """One bar of :func:`hbar_chart`: its category ``name``, ``value``, ``colour``,
    ``tooltip``, and an optional error bar from ``low`` to ``high`` (``None``: none)."""

    name: str
    value: float
    colour: str = BLUE
    tooltip: str | None = None
    low: float | None = None
    high: float | None = None
    band_tooltip: str | None = None


def hbar_chart(bars: Sequence[Bar], *, x_axis: Axis, label: str, width: float = 680,
               step: float = 26.0) -> str:  # fmt: skip
    """Horizontal bars, one row of ``step`` [px] per bar in the given order, from 0, with
    black error bars where a bar has ``low``/``high``; the category names on the left (the
    margin is the longest name's width: none is cut).

    Returns
    -------
    str
        The SVG element; each bar is a ``<rect class="bar">``, each error bar a
        ``<line class="err">``.
    """
    vals = [b.value for b in bars] + [v for b in bars for v in (b.low, b.high) if v is not None]
    ax = Axis(x_axis.title, prefix=x_axis.prefix, zero=True, count=x_axis.count)
    xd = axis_domain(ax, vals)
    names = max((text_width_px(b.name) for b in bars), default=0.0)
    xt = axis_ticks(ax, xd)
    last = text_width_px(tick_text(xt[-1], ax.prefix)) / 2 + 4 if xt else 12.0
    left = names + PAD + 4
    plot_h = step * len(bars)
    top = PAD
    xs = Scale(xd, (left, width - max(last, 12.0)))
    ys = Scale((0, 1), (top, top + plot_h))
    f = Frame(width, top + plot_h + FONT_PX + 2 * PAD + TITLE_PX + 8, xs, ys, xt, [], ax,
              Axis(""), left, top, max(last, 12.0), FONT_PX + 2 * PAD + TITLE_PX + 8)  # fmt: skip
    out = [svg_open(width, f.height, label, "hbar"), f.axes()]
    x0 = xs(0.0)
    for i, b in enumerate(bars):
        yc = top + step * (i + 0.5)
        out.append(text(left - PAD / 2 - 2, yc, b.name, anchor="end"))
        x1 = xs(b.value) if math.isfinite(b.value) else x0
        out.append(f'<rect class="bar" x="{_num(min(x0, x1))}" y="{_num(yc - step * 0.4)}" width="{_num(abs(x1 - x0))}" height="{_num(step * 0.8)}" fill="{b.colour}">{tip(b.tooltip)}</rect>')  # fmt: skip
        if b.low is not None and b.high is not None:
            out.append(f'<line class="err" x1="{_num(xs(b.low))}" x2="{_num(xs(b.high))}" y1="{_num(yc)}" y2="{_num(yc)}" stroke="#222" stroke-width="1.5">{tip(b.band_tooltip)}</line>')  # fmt: skip
    out.append("</svg>")
    return "".join(out)


def stacked_hbar_chart(rows: Sequence[tuple[str, Sequence[tuple[str, float, str, str]]]], *,
                       x_axis: Axis, label: str, legend: Sequence[tuple[str, str]],
                       rule: tuple[float, str, str] | None = None, legend_right: bool = True,
                       width: float = 680, bar_px: float = 36.0) -> str:  # fmt: skip
    """Horizontal stacked bars with a legend, and an optional dashed red vertical rule.

    Parameters
    ----------
    rows : (row name, segments) with segments (part, value, colour, tooltip), stacked from 0
        in order
    x_axis : the value axis (from 0, not widened to a nice tick: ``nice=False`` honoured)
    label : the chart's description (``aria-label``)
    legend : (part, colour) items: beside the bars (``legend_right``) or below them
    rule : ``(x, tooltip, text)``: a dashed red line at ``x`` (a capacity) with an optional
        ``text`` (empty: none) above the bars, to its left
    width : viewBox width [px]
    bar_px : the height of one bar [px]

    Returns
    -------
    str
        The SVG element; each segment is a ``<rect class="seg">``.
    """
    totals = [sum(v for _, v, _, _ in segs) for _, segs in rows]
    vals = totals + ([rule[0]] if rule else []) + [0.0]
    ax = Axis(x_axis.title, zero=True, nice=x_axis.nice, count=x_axis.count)
    xd = axis_domain(ax, vals)
    xt = axis_ticks(ax, xd)
    names = max((text_width_px(n) for n, _ in rows), default=0.0)
    left = max(names + PAD + 4, text_width_px(tick_text(xt[0])) / 2 + 2 if xt else 0)
    leg_w = max((text_width_px(p) for p, _ in legend), default=0.0) + 18 + 2 * PAD
    right = leg_w + PAD if legend_right and legend else 12.0
    right = max(right, text_width_px(tick_text(xt[-1])) / 2 + 4 if xt else 0)
    top = FONT_PX + 2 * PAD if rule and rule[2] else PAD
    step = bar_px + 12
    plot_h = step * len(rows)
    if legend_right:  # the legend beside the bars may be taller than they are
        plot_h = max(plot_h, len(legend) * (FONT_PX + 6) - top - 2)
    xs = Scale(xd, (left, width - right))
    bottom = FONT_PX + 2 * PAD + TITLE_PX + 8
    f = Frame(width, top + plot_h + bottom, xs, Scale((0, 1), (0, 1)), xt, [], ax, Axis(""),
              left, top, right, bottom)  # fmt: skip
    leg_svg, leg_h = "", 0.0
    if legend and not legend_right:
        leg_svg, leg_h = legend_row([(p, c, "square") for p, c in legend], left, 0, width)
    height = f.height + (leg_h + PAD + FONT_PX / 2 if leg_svg else 0)
    out = [svg_open(width, height, label, "stacked"), f.axes()]
    y_bars = top + (plot_h - step * len(rows)) / 2  # the bars centred beside a tall legend
    for i, (name, segs) in enumerate(rows):
        yc = y_bars + step * (i + 0.5)
        out.append(text(left - PAD / 2 - 2, yc, name, anchor="end"))
        acc = 0.0
        for part, v, colour, t in segs:
            a, b = xs(acc), xs(acc + v)
            out.append(f'<rect class="seg" data-part="{esc(part)}" x="{_num(a)}" y="{_num(yc - bar_px / 2)}" width="{_num(max(b - a, 0))}" height="{_num(bar_px)}" fill="{colour}">{tip(t)}</rect>')  # fmt: skip
            acc += v
    if rule is not None:
        px = xs(rule[0])
        out.append(f'<line class="rule" x1="{_num(px)}" x2="{_num(px)}" y1="{_num(top - 4)}" y2="{_num(top + plot_h)}" stroke="{RED}" stroke-width="2.5" stroke-dasharray="5 3">{tip(rule[1])}</line>')  # fmt: skip
        if rule[2]:
            lx, anchor = clamp_label(px - 4, rule[2], "end", width - right, bold=True)
            out.append(text(lx, top - PAD - 2, rule[2], anchor=anchor, bold=True, colour=RED))
    if legend_right and legend:
        lx = width - right + 2 * PAD
        out.append('<g class="legend">')
        for j, (p, c) in enumerate(legend):
            ly = top + j * (FONT_PX + 6) + 6
            out.append(f'<rect x="{_num(lx)}" y="{_num(ly - 6)}" width="12" height="12" fill="{c}"/>')  # fmt: skip
            out.append(text(lx + 18, ly, p))
        out.append("</g>")
    if leg_svg:
        out.append(
            f'<g transform="translate(0 {_num(f.height + PAD + FONT_PX / 2)})">{leg_svg}</g>'
        )
    out.append("</svg>")
    return "".join(out)


def histogram_chart(starts: Sequence[float], ends: Sequence[float], counts: Sequence[float], *,
                    x_axis: Axis, y_axis: Axis, title: str, label: str, colour: str = BLUE,
                    width: float = 400, plot_height: float = 130,
                    tooltip: Callable[[float, float, float], str] | None = None) -> str:  # fmt: skip
    """A histogram of pre-binned counts: a bar from ``starts[i]`` to ``ends[i]`` of height
    ``counts[i]``, a ``title`` above the plot.

    Returns
    -------
    str
        The SVG element; each bar is a ``<rect class="bar">`` (empty bins too, of height 0).
    """
    xd = (min(starts), max(ends)) if len(starts) else (0.0, 1.0)
    ya = Axis(y_axis.title, zero=True, count=4)
    yd = axis_domain(ya, list(counts))
    top = TITLE_PX + 2 * PAD
    f = Frame.fit(width, plot_height, Axis(x_axis.title, nice=False, count=x_axis.count), xd, ya, yd, top=top)  # fmt: skip
    out = [svg_open(width, f.height, label, "histogram"), f.axes()]
    out.append(text(f.left, TITLE_PX / 2 + 4, title, size=TITLE_PX, bold=True))
    y0 = f.y(0.0)
    for a, b, c in zip(starts, ends, counts, strict=True):
        x0, x1, yc = f.x(a), f.x(b), f.y(c)
        t = tooltip(a, b, c) if tooltip else None
        out.append(f'<rect class="bar" x="{_num(x0 + 0.5)}" y="{_num(yc)}" width="{_num(max(x1 - x0 - 1, 0.5))}" height="{_num(max(y0 - yc, 0))}" fill="{colour}" fill-opacity="0.85">{tip(t)}</rect>')  # fmt: skip
    out.append("</svg>")
    return "".join(out)
