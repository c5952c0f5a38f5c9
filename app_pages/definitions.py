"""Definitions page: the metric definitions and units of the README."""

from __future__ import annotations

import streamlit as st

from app_pages import widgets as w

st.title("Definitions")
st.caption(
    "Every term the pages and the CLI use (README.md, 'Metric definitions'); the pages link "
    "each term here."
)
st.markdown(w.glossary_md())
st.subheader("Where the numbers come from")
st.markdown(
    "- **Formulas**: `docs/formulas.md` (memory, KV cache, decode and prefill time).\n"
    "- **Catalog numbers**: `data/*.yaml`, each entry with `source` and `as_of` (Catalog page); "
    "a number nobody read in a source stays empty and the planner says what it cannot compute.\n"
    "- **Efficiencies**: fitted to measurements (`data/benchmarks/`); every time estimate names "
    "its parameters: `fit (...)`, `transferred from ...` or `prior` (Accuracy page)."
)
