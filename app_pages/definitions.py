"""Definitions page: the metric definitions and units of the README."""

from __future__ import annotations

import streamlit as st

from app_pages import widgets as w

st.title("Definitions")
st.caption("The metric definitions every page and the CLI use (README.md, 'Metric definitions').")
st.markdown(w.DEFINITIONS_MD)
st.subheader("Where the numbers come from")
st.markdown(
    "- **Formulas**: `docs/formulas.md` (memory, KV cache, decode and prefill time).\n"
    "- **Catalog numbers**: `data/*.yaml`, each entry with `source` and `as_of` (Catalog page); "
    "a number nobody read in a source stays empty and the planner says what it cannot compute.\n"
    "- **Efficiencies**: fitted to measurements (`data/benchmarks/`); every time estimate names "
    "its parameters: `fit (...)`, `transferred from ...` or `prior` (Accuracy page)."
)
