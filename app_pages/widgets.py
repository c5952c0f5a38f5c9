"""Shared pieces of the app pages, re-exported from the modules that hold them (pages use
``from app_pages import widgets as w``):

* :mod:`app_pages.catalogs`: the session's catalog (bundled + custom entries);
* :mod:`app_pages.deployment`: the Memory / What-if pickers and their cached computations;
* :mod:`app_pages.blocks`: number cards, SVG charts, tables, definitions, formatting;
* :mod:`app_pages.scenario_state`: the shared scenario's defaults, kept values, a loaded file;
* :mod:`app_pages.scenario_form`: the scenario form in the sidebar;
* :mod:`app_pages.runs`: cached planner runs, the default Plan answer and the warm-up.

Pages import from here and from the top-level ``planner`` namespace only. Every number
shown comes from ``planner``.
"""

from __future__ import annotations

from app_pages.blocks import (  # noqa: F401
    _CARD_RE,
    DEFINITIONS_MD,
    DEFINITIONS_PAGE,
    GLOSSARY,
    HTML_CSS,
    Card,
    cards,
    cards_html,
    cards_of,
    definitions_expander,
    dominated_note,
    fmt_money,
    glossary_md,
    gpu_name,
    html_block,
    html_css,
    link_terms_html,
    md,
    option_label,
    svg_chart,
    svg_of,
    table,
    table_sort,
    term_anchor,
    term_link,
    value_size,
)
from app_pages.catalogs import (  # noqa: F401
    CUSTOM_GPUS,
    CUSTOM_MODELS,
    CUSTOM_PRICES,
    _catalog_with,
    add_custom,
    base_catalog,
    catalog_for,
    custom_key,
    session_catalog,
    validation_message,
)
from app_pages.deployment import (  # noqa: F401
    DEFAULTS,
    GB,
    MEMORY_COLORS,
    NO_FRAMEWORK,
    PP_OPTIONS,
    TP_OPTIONS,
    Setup,
    _index,
    decode_curve,
    memory_bar,
    memory_command,
    memory_parts,
    memory_plan,
    memory_split,
    setup_sidebar,
)
from app_pages.runs import (  # noqa: F401
    _DEFAULT_LOCK,
    _NO_CUSTOM,
    COMPILE_NOTE,
    REJECTED_COLUMNS,
    REJECTED_SHOWN,
    WARM_UP_DELAY_S,
    _fingerprint,
    _recommend_dict,
    _run_recommend,
    _store_default,
    build_scenario,
    canonical,
    cli_command,
    command_line,
    default_plan,
    default_scenario_json,
    deploy_zip,
    kernel_cached,
    length_histogram,
    nice_bins,
    recommend_kwargs,
    run_classes,
    run_compare,
    run_recommend,
    warm_up,
    warm_up_in_background,
)
from app_pages.scenario_form import (  # noqa: F401
    _providers,
    model_upload,
    scenario_sidebar,
    scenario_yaml,
)
from app_pages.scenario_state import (  # noqa: F401
    _BASE,
    _CONSTRAINT_WIDGETS,
    _LOADED,
    _STASH,
    _UPLOAD_ERROR,
    ANY_PROVIDER,
    BASES,
    CUSTOM_LENGTHS,
    DAILY_SHAPES,
    MEAN_SET,
    PLAN_GPUS,
    PRESET_NAMES,
    SCENARIO_DEFAULTS,
    SHARED_FILE,
    SHARED_MAX_BYTES,
    SHARED_NAME,
    UPLOAD,
    ScenarioForm,
    _default,
    _form_values,
    _keep,
    _length_to_form,
    _merged,
    _restore,
    _set_form,
    _stash,
    accept_scenario_upload,
    apply_scenario,
    decode_scenario,
    encode_scenario,
    forget_scenario,
    loaded_base,
    read_uploaded_scenario,
)
