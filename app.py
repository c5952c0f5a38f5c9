"""Streamlit app entry point: page config and navigation only.

Run with ``streamlit run app.py``. Pages live in ``app_pages/`` (not ``pages/``, which
Streamlit would auto-discover in its old multipage mode); shared widgets and cached
computations in ``app_pages/widgets.py``. All physics is in ``planner``.

Navigation sections (issue 9): "Plan" (Plan, the landing page; What-if; Compare GPUs) on
``planner.recommend``, "Inspect" (Memory), "Data" (Catalog, Accuracy), "Help" (Definitions).
"""

from __future__ import annotations

import streamlit as st

st.set_page_config(
    page_title="planner: LLM inference capacity", page_icon=":material/memory:", layout="wide"
)

PAGES = {
    "Plan": [
        st.Page("app_pages/plan.py", title="Plan", icon=":material/checklist:", default=True),
        st.Page("app_pages/what_if.py", title="What-if", icon=":material/tune:"),
        st.Page(
            "app_pages/compare.py",
            title="Compare GPUs",
            icon=":material/compare:",
            url_path="compare",
        ),
    ],
    "Inspect": [
        st.Page("app_pages/memory.py", title="Memory", icon=":material/memory:"),
    ],
    "Data": [
        st.Page("app_pages/catalog.py", title="Catalog", icon=":material/table:"),
        st.Page("app_pages/accuracy.py", title="Accuracy", icon=":material/target:"),
    ],
    "Help": [
        st.Page("app_pages/definitions.py", title="Definitions", icon=":material/help:"),
    ],
}

try:
    st.navigation(PAGES, expanded=True).run()
finally:
    # once per server process, after the first page is drawn (not competing with it for
    # the interpreter): the simulator's kernel and the default Plan answer (widgets.warm_up);
    # imported here, so that the navigation goes to the browser before the page's imports
    from app_pages.widgets import warm_up_in_background

    warm_up_in_background()
