"""What a new server's first Plan page needs (issue 18, cold first load): no altair (the
charts are SVG drawn on the server, app_pages/svg.py), lengths binned on the server as
Vega-Lite bins them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("streamlit.testing.v1")

import streamlit as st  # noqa: E402

from app_pages import widgets as w  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("lo", "hi", "expected"),
    [
        # span 1000, 40 bins: level ceil(log10 40) = 2, step 10**(3 - 2) = 10 -> 100 bins, x10
        # -> 100 (10 bins); /5 = 20 gives 50 bins (> 40), /2 = 50 gives 20 bins: step 50
        (0.0, 1000.0, (0.0, 1000.0, 50.0)),
        (3.0, 997.0, (0.0, 1000.0, 50.0)),  # start and stop on multiples of the step
        # span 30988: step 10**(round(4.49) - 2) = 100 -> 310 bins, x10 -> 1000 (31 bins);
        # /5 = 200 (155 bins) and /2 = 500 (62 bins) exceed 40: step 1000, 0 to 31000
        (12.0, 31000.0, (0.0, 31000.0, 1000.0)),
        # one value: span |5| = 5, step 10**(1 - 2) = 0.1 -> 50 bins, x10 -> 1 (5 bins);
        # /5 = 0.2 (25 bins) fits, /2 = 0.1 (50) does not; one bin 5 to 5.2
        (5.0, 5.0, (5.0, 5.2, 0.2)),
    ],
)
def test_nice_bins_are_vega_lites(lo, hi, expected):
    assert w.nice_bins(lo, hi) == pytest.approx(expected)


def test_length_histogram_bins_every_drawn_request():
    key = ((), (), ())
    sc_json = w.default_scenario_json()
    h = w.length_histogram(key, sc_json)
    prompt, answer = w.build_scenario(key, sc_json).workload.sample_lengths(
        2000, np.random.default_rng(0)
    )
    for which, x in (("prompt", prompt), ("answer", answer)):
        part = h[h["which"] == which]
        assert part["count"].sum() == 2000
        width = (part["bin_end"] - part["bin_start"]).to_numpy()
        assert np.allclose(width, width[0]) and len(part) <= 40
        assert (part["bin_end"].to_numpy()[:-1] == part["bin_start"].to_numpy()[1:]).all()
        assert part["bin_start"].min() <= min(x) and part["bin_end"].max() >= max(x)
        # the fullest bin holds as many lengths as fall in its range
        top = part.loc[part["count"].idxmax()]
        inside = ((x >= top["bin_start"]) & (x < top["bin_end"])).sum()
        assert top["count"] == inside


def test_the_first_plan_page_does_not_import_altair():
    code = (
        "import sys\n"
        "from streamlit.testing.v1 import AppTest\n"
        "at = AppTest.from_file('app.py', default_timeout=120).run()\n"
        "assert not at.exception, [e.value for e in at.exception]\n"
        "assert any(s.value == 'Ranked options' for s in at.subheader)\n"
        "print('altair' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "False"


def test_an_svg_chart_cannot_end_its_script(monkeypatch):
    """widgets.svg_chart sends the SVG inside a script (st.html's sanitiser drops <svg>): a
    text that tries to close the script stays text, and the SVG comes back unchanged."""
    from app_pages import svg

    sent = []
    monkeypatch.setattr(st, "html", lambda body, **kw: sent.append((body, kw)))
    evil = "</script><script>alert(1)</script><!--"
    chart = svg.hbar_chart([svg.Bar(evil, 1.0, tooltip=evil)], x_axis=svg.Axis("v"), label=evil)
    w.svg_chart(chart)
    ((body, kw),) = sent
    assert kw == {"unsafe_allow_javascript": True}
    assert body.count("<") == 4  # <div>, <script>, </script>, </div>: the SVG has none left
    assert body.lower().count("</script") == 1 and body.endswith("</script></div>")
    assert w.svg_of(body) == chart and "<script>" not in chart
