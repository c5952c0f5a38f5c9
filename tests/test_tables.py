"""app_pages/tables.py: the app's HTML result tables (issue 18), checked by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from app_pages import tables as T
from planner import fmt


def _one(text: str) -> T.Table:
    (t,) = T.parse_tables(text)
    return t


def test_numbers_are_formatted_by_the_column_and_keep_their_raw_value():
    rows = [
        {"gpu": "nvidia-h100-sxm", "n": 12966, "usd_h": 31.7149, "usd_m": 17510.4, "ms": 723.45},
        {"gpu": "amd-mi300x", "n": np.int64(4), "usd_h": 0.0875, "usd_m": 1e7, "ms": 0.05},
    ]
    cols = [
        T.Col(key="gpu", label="GPU"),
        T.Col(key="n", label="GPUs"),
        T.Col(key="usd_h", label="fleet [$/h]", fmt=fmt.usd),
        T.Col(key="usd_m", label="fleet [$/month]", fmt=fmt.usd),
        T.Col(key="ms", label="TTFT P99 [ms]", fmt=T.decimals(1)),
    ]
    t = _one(T.html_table(rows, cols))
    assert list(t.shown.columns) == ["GPU", "GPUs", "fleet [$/h]", "fleet [$/month]", "TTFT P99 [ms]"]  # fmt: skip
    assert t.shown.values.tolist() == [
        ["nvidia-h100-sxm", "12,966", "$31.71", "$17,510", "723.5"],
        ["amd-mi300x", "4", "$0.0875", "$10,000,000", "0.1"],  # no exponent, no cut
    ]
    v = t.values
    assert v["GPUs"].tolist() == [12966, 4] and all(type(x) is int for x in v["GPUs"])
    assert v["fleet [$/h]"].tolist() == [31.7149, 0.0875]  # exact: repr round-trips
    assert v["fleet [$/month]"].tolist() == [17510.4, 1e7]
    assert v["GPU"].tolist() == ["nvidia-h100-sxm", "amd-mi300x"]


def test_default_formats_alignment_and_tabular_figures():
    text = T.html_table([{"name": "a", "whole": 1234.0, "x": 2.70149, "flag": True}])
    t = _one(text)
    assert t.shown.values.tolist() == [["a", "1,234", "2.701", "yes"]]  # fmt.count, fmt.num
    # numbers right-aligned (class n: text-align right, tabular-nums), text left
    assert '<th scope="col">name</th>' in text and '<th scope="col" class="n">whole</th>' in text
    assert '<td class="n" data-v="2.70149">2.701</td>' in text and "<td>a</td>" in text
    assert ".pl-table .n{text-align:right;font-variant-numeric:tabular-nums}" in T.CSS


def test_missing_values_are_a_dash_and_none_in_the_values():
    df = pd.DataFrame(
        {"gpu": ["a", "b", "c"], "usd": [1.5, float("nan"), None], "why": ["x", None, pd.NA]}
    )
    t = _one(T.html_table(df, ["gpu", T.Col(key="usd", fmt=fmt.usd), "why"]))
    assert t.shown["usd"].tolist() == ["$1.50", "-", "-"]
    assert t.shown["why"].tolist() == ["x", "-", "-"]
    assert t.values["usd"].tolist()[0] == 1.5 and t.values["usd"].tolist()[1:] == [None, None]
    assert t.values["why"].tolist() == ["x", None, None]
    # a column of numbers with gaps is still a numeric one; one of text with gaps is not
    text = T.html_table(df, ["usd", "why"])
    assert '<th scope="col" class="n">usd</th>' in text and '<th scope="col">why</th>' in text
    assert '<td class="n na">-</td>' in text and '<td class="na">-</td>' in text


def test_hostile_text_is_escaped_everywhere():
    evil = '<script>alert("x")</script> & "quoted" \'single\''
    text = T.html_table(
        [{evil: evil, "n": 1}], [T.Col(key=evil, label=evil, help=evil), "n"], sortable=False
    )
    assert "<script>" not in text and "</script>" not in text
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &quot;quoted&quot;" in text
    t = _one(text)
    assert t.shown.columns.tolist() == [evil, "n"]  # read back exactly
    assert t.shown[evil].tolist() == [evil] and t.help == {evil: evil}
    # sortable: a class only (the one sort script is on the page once, not in the table)
    text = T.html_table([{"x": evil}])
    assert "<script" not in text and '<table class="pl-table s">' in text
    assert "<" not in T.SORT_JS  # nothing in it can end its <script> element


def test_header_help_is_a_tooltip_and_units_stay_in_the_text():
    text = T.html_table(
        [{"p": "fit", "ms": 5.0}],
        [
            T.Col(key="p", label="provenance", help="fit: calibrated; prior: none"),
            T.Col(key="ms", label="TTFT P99 [ms]"),
        ],
    )
    assert '<th scope="col" title="fit: calibrated; prior: none">provenance</th>' in text
    t = _one(text)
    assert t.help == {"provenance": "fit: calibrated; prior: none"}
    assert "TTFT P99 [ms]" in t.shown.columns


def test_box_scrolls_never_cuts_and_header_sticks():
    text = T.html_table([{"a": 1}], max_height_rem=20)
    assert text.startswith('<div class="pl-tw" style="max-height:20rem;')
    css = T.CSS
    assert ".pl-tw{overflow:auto;" in css  # wide tables scroll sideways, long ones down
    assert "position:sticky;top:0" in css
    assert "text-overflow" not in css and "overflow:hidden" not in css  # nothing is cut
    # a hyphenated header word stays whole: "[$/GPU-h]" does not break at its hyphen
    text = T.html_table([{"p": 2.0}], [T.Col(key="p", label="price [$/GPU-h]")])
    assert '>price <span class="nw">[$/GPU-h]</span></th>' in text
    assert _one(text).shown.columns.tolist() == ["price [$/GPU-h]"]


def test_rows_as_dataframe_or_dicts_and_columns_default_to_every_key():
    a = T.html_table([{"x": 1, "y": "a"}, {"y": "b", "z": 2.5}])
    t = _one(a)
    assert t.shown.columns.tolist() == ["x", "y", "z"]
    assert t.shown.values.tolist() == [["1", "a", "-"], ["-", "b", "2.5"]]
    b = T.html_table(pd.DataFrame({"x": [1, 2]}, index=[10, 20]))
    assert _one(b).values["x"].tolist() == [1, 2]  # the index is not shown
    empty = _one(T.html_table([], ["x", "y"]))
    assert empty.shown.columns.tolist() == ["x", "y"] and len(empty.shown) == 0


def test_formatter_applies_to_numbers_only():
    t = _one(T.html_table([{"v": 2.0}, {"v": "n/a"}], [T.Col(key="v", fmt=fmt.usd)]))
    assert t.shown["v"].tolist() == ["$2.00", "n/a"]


def test_parse_tables_reads_several_and_skips_scripts():
    text = T.html_table([{"a": 1}]) + "<p>between</p>" + T.html_table([{"b": math.pi}])
    one, two = T.parse_tables(text)
    assert one.values["a"].tolist() == [1]
    assert two.values["b"].tolist() == [math.pi] and two.shown["b"].tolist() == ["3.142"]


def test_col_is_frozen_and_rejects_unknown_fields():
    c = T.Col(key="a")
    with pytest.raises(Exception, match="frozen"):
        c.key = "b"  # type: ignore[misc]
    with pytest.raises(Exception, match="extra"):
        T.Col(key="a", colour="red")  # type: ignore[call-arg]


def test_cols_give_each_key_its_format_and_tooltip():
    money = T.decimals(2)
    got = T.cols(["GPU", "fleet [$/h]", "provenance"], {"fleet [$/h]": money}, {"GPU": "id"})
    assert [c.key for c in got] == ["GPU", "fleet [$/h]", "provenance"]
    assert [c.help for c in got] == ["id", None, T.PROVENANCE_HELP]
    assert got[0].fmt is None and got[1].fmt is money
    # drawn: the format applies to the cell, the tooltip to its header
    t = _one(T.html_table([{"GPU": "b200", "fleet [$/h]": 7.1534, "provenance": "fit"}], got))
    assert t.shown.iloc[0].tolist() == ["b200", "7.15", "fit"]
    assert t.help == {"GPU": "id", "provenance": T.PROVENANCE_HELP}


def test_csv_has_the_shown_columns_raw_under_their_headers():
    rows = [{"gpu": "b200", "usd": 7.1534, "extra": 1}, {"gpu": "h100", "usd": None}]
    cols = ["gpu", T.Col(key="usd", label="fleet [$/h]", fmt=T.decimals(2))]
    # raw values (not the shown "7.15"), the shown headers, no column the table leaves out
    assert T.csv_text(rows, cols).splitlines() == ["gpu,fleet [$/h]", "b200,7.1534", "h100,"]
    # without columns: every key, in order of first appearance
    assert T.csv_text(rows).splitlines()[0] == "gpu,usd,extra"
