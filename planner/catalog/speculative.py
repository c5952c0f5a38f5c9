"""Speculative decoding settings and their published acceptance data (``data/speculative.yaml``).

A decode step with speculative decoding drafts ``K`` tokens per sequence (``spec_tokens``),
verifies the ``K + 1`` positions in one forward pass of the target model and keeps the
accepted prefix plus the target's own next token: on average ``acceptance_length`` (AL)
tokens per step, ``1 <= AL <= K + 1``. AL is read from published measurements per model x
method x K (:class:`AcceptanceRecord`); a combination without data is refused with the list
of what exists, unless the user gives AL. :func:`spec_decode` turns loose values (CLI,
scenario, recommend) into one checked :class:`SpecDecode`.

Methods: ``mtp`` (the model's own MTP / NextN modules, ``num_nextn_predict_layers > 0``),
``eagle3`` (an EAGLE-3 one-layer draft head), ``draft`` (a separate small catalog model),
``ngram`` (prompt lookup: no draft compute).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from planner.catalog.catalog import DATA_DIR
from planner.catalog.records import Framework, Frozen, ModelArch, Sourced
from planner.errors import PlannerError, shown
from planner.files import load_yaml

__all__ = [
    "METHODS",
    "NATURAL_WORKLOADS",
    "WORKLOADS",
    "AcceptanceRecord",
    "EngineSpecSupport",
    "SpecDecode",
    "acceptance_records",
    "chain_acceptance_length",
    "chain_rate",
    "cite_of",
    "engine_support",
    "published_specs",
    "replica_kwargs",
    "spec_decode",
]

#: speculative decoding methods the planner models (``none`` turns it off)
METHODS = ("mtp", "eagle3", "draft", "ngram")
Method = Literal["mtp", "eagle3", "draft", "ngram"]
#: what a source measured acceptance on: natural text (chat: MT-Bench / ShareGPT, code:
#: HumanEval / MBPP, math: GSM8K / MATH, mixed: a mean over several), ``random`` (random token
#: ids wrapped in the model's chat template, the InferenceX / SA-bench convention for
#: speculative runs) and ``random-raw`` (random token ids without a template)
WORKLOADS = ("chat", "code", "math", "mixed", "random", "random-raw")
Workload = Literal["chat", "code", "math", "mixed", "random", "random-raw"]
#: natural-text workloads: a row that does not name its prompts counts as one of these
NATURAL_WORKLOADS = ("chat", "code", "math", "mixed")


class AcceptanceRecord(Sourced):
    """One published acceptance length: model x method x K (x task, temperature)."""

    model: str
    method: Method
    spec_tokens: int = Field(ge=1)
    acceptance_length: float = Field(ge=1.0)
    acceptance_length_range: tuple[float, float] | None = None
    acceptance_length_std: float | None = Field(None, ge=0.0)
    task: str | None = None
    workload: Workload | None = None
    temperature: float | None = Field(None, ge=0.0)
    draft_model: str | None = None

    @property
    def natural(self) -> bool:
        """Measured on natural text (a named natural workload, or prompts not named)."""
        return self.workload is None or self.workload in NATURAL_WORKLOADS

    @property
    def spread(self) -> float:
        """Half-width of the published spread [tokens/step]: the std where printed, else
        half the range, else 0."""
        if self.acceptance_length_std is not None:
            return float(self.acceptance_length_std)
        if self.acceptance_length_range is not None:
            lo, hi = self.acceptance_length_range
            return (hi - lo) / 2.0
        return 0.0

    @property
    def band(self) -> tuple[float, float]:
        """(low, high) AL of the row: the printed range, else AL -/+ std, else AL."""
        if self.acceptance_length_range is not None:
            return self.acceptance_length_range
        return (self.acceptance_length - self.spread, self.acceptance_length + self.spread)

    def label(self) -> str:
        on = f", {self.workload}" if self.workload else ""
        return (
            f"{self.model} {self.method} K={self.spec_tokens} (AL {self.acceptance_length:.2f}{on})"
        )


class EngineSpecSupport(Sourced):
    """Speculative decoding methods one serving engine runs."""

    framework: str
    methods: tuple[Method, ...]


class SpecDecode(Frozen):
    """Speculative decoding of one deployment (checked by :func:`spec_decode`).

    Attributes
    ----------
    method : ``mtp``, ``eagle3``, ``draft`` or ``ngram``
    spec_tokens : draft tokens verified per step, K
    acceptance_length : mean tokens per verify step incl. the bonus token [tokens/step]
    spread : published spread of AL (std or half range) [tokens/step]; 0 for a user value
    draft_model : catalog id of the draft model (method ``draft``)
    basis : where AL came from (a source, or "given")
    cite : the sources of AL, short (e.g. ``TensorRT-LLM tech blog 1``), or "given"
    workload : the workload kind AL was chosen for (:data:`WORKLOADS`); None: natural text
    graph_max_seqs : the engine's CUDA-graph capture limit for verify steps (SGLang
        ``--cuda-graph-max-bs``): a verify step of more sequences runs eager; None: no limit
    engine : the framework id that verifies (its attention kernel sets how often a verify
        step reads the KV, :mod:`planner.engine.spec_kv`); None: not given
    """

    method: Method
    spec_tokens: int = Field(ge=1)
    acceptance_length: float = Field(ge=1.0)
    spread: float = Field(0.0, ge=0.0)
    draft_model: str | None = None
    basis: str = "given"
    cite: str = "given"
    workload: Workload | None = None
    graph_max_seqs: int | None = Field(None, ge=1)
    engine: str | None = None

    @property
    def al_band(self) -> tuple[float, float]:
        """(low, high) acceptance length of the spread, clipped to [1, K + 1]."""
        k1 = self.spec_tokens + 1.0
        lo = max(1.0, self.acceptance_length - self.spread)
        return lo, min(k1, self.acceptance_length + self.spread)

    def label(self) -> str:
        """The setting, its acceptance length and where that came from, e.g.
        ``MTP k=2, AL 2.17 (random, SemiAnalysisAI/InferenceX PR #649)``,
        ``MTP k=1, AL 1.90±0.05 (natural text, DeepSeek-V3 Technical Report; ...)`` or
        ``MTP k=3, AL 2.40 (given)`` for a user's value."""
        pm = f"±{self.spread:.2f}" if self.spread else ""
        name = {"mtp": "MTP", "eagle3": "EAGLE-3", "draft": "draft", "ngram": "n-gram"}
        drafted = f" {self.draft_model}" if self.draft_model else ""
        if self.cite == "given":
            why = "given"
        else:
            why = f"{self.workload or 'natural text'}, {self.cite}"
        return (
            f"{name[self.method]}{drafted} k={self.spec_tokens}, "
            f"AL {self.acceptance_length:.2f}{pm} ({why})"
        )


@lru_cache(maxsize=4)
def _load(data_dir: Path) -> tuple[tuple[AcceptanceRecord, ...], tuple[EngineSpecSupport, ...]]:
    path = data_dir / "speculative.yaml"
    if not path.exists():
        return (), ()
    raw = load_yaml(path.read_text(encoding="utf-8"), path) or {}
    try:
        recs = tuple(AcceptanceRecord(**r) for r in raw.get("acceptance") or ())
        eng = tuple(EngineSpecSupport(**r) for r in raw.get("engines") or ())
    except (ValidationError, TypeError) as e:
        first = str(e).splitlines()
        raise PlannerError(f"{path}: {first[0] if first else e}") from None
    return recs, eng


def acceptance_records(data_dir: Path | None = None) -> tuple[AcceptanceRecord, ...]:
    """Every published acceptance length in ``data/speculative.yaml``."""
    return _load(Path(data_dir or DATA_DIR))[0]


def engine_support(data_dir: Path | None = None) -> dict[str, tuple[str, ...]]:
    """framework id -> the speculative methods a source says it runs."""
    return {e.framework: tuple(e.methods) for e in _load(Path(data_dir or DATA_DIR))[1]}


def _whole(name: str, v) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v) or v < 1:
        raise PlannerError(f"{name} must be a whole number >= 1, got {shown(v)}")
    return int(v)


#: the largest vocabulary-size difference between a draft model and its target that an
#: engine accepts: llama.cpp common/speculative.cpp SPEC_VOCAB_MAX_SIZE_DIFFERENCE (the most
#: lenient check found; a draft proposes token ids the target verifies, so both share one
#: tokenizer)
DRAFT_VOCAB_MAX_DIFFERENCE = 128


def _check_draft(model: ModelArch, draft_model: str | None, data_dir: Path | None) -> None:
    """One line naming ``draft_model`` for an id the catalog does not have, the target itself,
    or a model whose vocabulary is not the target's (:data:`DRAFT_VOCAB_MAX_DIFFERENCE`)."""
    from planner.catalog.catalog import load_catalog

    try:
        dm = load_catalog(data_dir).model(str(draft_model))
    except PlannerError as e:
        raise PlannerError(f"draft_model: {e}") from None
    if dm.id == model.id:
        raise PlannerError(
            f"draft_model: {dm.id} is the target model itself; a draft model is a smaller model "
            "that shares its tokenizer (e.g. llama-3.1-8b for llama-3.1-70b)"
        )
    if abs(dm.vocab_size - model.vocab_size) > DRAFT_VOCAB_MAX_DIFFERENCE:
        raise PlannerError(
            f"draft_model: {dm.id}'s vocabulary ({dm.vocab_size:,} tokens) is not {model.id}'s "
            f"({model.vocab_size:,}): the target verifies the draft's token ids, so both must "
            f"share one tokenizer (llama.cpp refuses a difference above "
            f"{DRAFT_VOCAB_MAX_DIFFERENCE} tokens)"
        )


def spec_decode(
    model: ModelArch,
    method: str | None,
    spec_tokens: int | None = None,
    acceptance_length: float | None = None,
    draft_model: str | None = None,
    framework: Framework | None = None,
    data_dir: Path | None = None,
    workload: str | None = None,
) -> SpecDecode | None:
    """Check a deployment's speculative decoding settings; None when off.

    Parameters
    ----------
    model : the target model
    method : ``none`` / None (off), ``mtp``, ``eagle3``, ``draft`` or ``ngram``
    spec_tokens : K, draft tokens per step (default: for ``mtp`` the model's own MTP module
        count when published, else the published K when only one exists)
    acceptance_length : mean tokens per verify step [tokens/step]; default: the published
        value for ``model`` x ``method`` x K (mean of the rows, spread over their ranges)
    draft_model : catalog id of the draft model (method ``draft`` only)
    framework : the serving engine, which must run ``method`` (``data/speculative.yaml``)
    workload : the prompts' kind (:data:`WORKLOADS`): the prior comes from rows measured on
        it (``random``: random tokens in the chat template, as InferenceX runs), carried down
        from a larger K by the chain rate where none is at K; natural-text kinds fall back to
        the general natural-text rows at K (prompts not named or mixed; else every natural
        one). None: that general natural-text prior (random rows never join it).

    Raises
    ------
    PlannerError
        one line naming the field: an unknown method, AL outside [1, K + 1], MTP on a model
        without MTP modules, a method the engine does not run, no published AL.
    """
    if method is None or method == "none":
        for name, v in (("spec_tokens", spec_tokens), ("acceptance_length", acceptance_length)):
            if v is not None:
                raise PlannerError(f"{name} is set but spec_method is none; set spec_method too")
        return None
    if method not in METHODS:
        raise PlannerError(
            f"spec_method must be one of none, {', '.join(METHODS)}; got {shown(method)}"
        )
    if method == "mtp" and not model.num_nextn_predict_layers:
        raise PlannerError(
            f"spec_method: mtp needs a model with MTP / NextN modules "
            f"(num_nextn_predict_layers > 0); {model.id} has none"
        )
    if method == "draft" and not draft_model:
        raise PlannerError("draft_model: spec_method draft needs a draft model (a catalog id)")
    if method != "draft" and draft_model:
        raise PlannerError(f"draft_model is only for spec_method draft, not {method}")
    if method == "draft":
        _check_draft(model, draft_model, data_dir)
    if framework is not None:
        runs = engine_support(data_dir)
        if method not in runs.get(framework.id, ()):
            known = ", ".join(f"{f}: {'/'.join(m)}" for f, m in sorted(runs.items()))
            raise PlannerError(
                f"spec_method: no source says {framework.id} runs {method} speculative decoding "
                f"(data/speculative.yaml lists {known or 'none'})"
            )
    rows = [r for r in acceptance_records(data_dir) if r.model == model.id and r.method == method]
    if spec_tokens is None:
        ks = sorted({r.spec_tokens for r in rows})
        if method == "mtp" and model.num_nextn_predict_layers in ks:
            ks = [model.num_nextn_predict_layers]  # the MTP modules the model ships, once each
        if len(ks) != 1:
            raise PlannerError(
                f"spec_tokens: give K, the draft tokens per step, for {model.id} {method}"
                + (f" (published: K = {', '.join(map(str, ks))})" if ks else "")
            )
        spec_tokens = ks[0]
    k = _whole("spec_tokens", spec_tokens)
    if acceptance_length is not None:
        al = acceptance_length
        if isinstance(al, bool) or not isinstance(al, (int, float)) or not 1.0 <= al <= k + 1:
            raise PlannerError(
                f"acceptance_length must be in [1, K + 1] = [1, {k + 1}] tokens per step "
                f"(K = spec_tokens = {k}), got {shown(al)}"
            )
        return SpecDecode(
            method=method,
            spec_tokens=k,
            acceptance_length=float(al),
            draft_model=draft_model,
            engine=framework.id if framework is not None else None,
        )
    hits, derived = _prior_rows(rows, k, workload)
    if not hits:
        have = "; ".join(r.label() for r in acceptance_records(data_dir)) or "none"
        on = f" on {workload} prompts" if workload else ""
        raise PlannerError(
            f"acceptance_length: no published acceptance length for {model.id} with {method} "
            f"K={k}{on} (data/speculative.yaml has: {have}); pass --acceptance-length "
            "(scenario deployment.acceptance_length)"
        )
    if derived:  # the workload's rows at another K, carried to K by their chain rate
        als = [
            chain_acceptance_length(chain_rate(r.acceptance_length, r.spec_tokens), k) for r in hits
        ]
        los = [chain_acceptance_length(chain_rate(r.band[0], r.spec_tokens), k) for r in hits]
        his = [chain_acceptance_length(chain_rate(r.band[1], r.spec_tokens), k) for r in hits]
    else:
        als = [r.acceptance_length for r in hits]
        los = [r.band[0] for r in hits]
        his = [r.band[1] for r in hits]
    mean = sum(als) / len(als)
    spread = max(mean - min(los), max(his) - mean)
    basis = "; ".join(sorted({r.source.split(",")[0] for r in hits}))
    cite = "; ".join(sorted({cite_of(r.source) for r in hits}))
    if derived:
        ks = ", ".join(sorted({str(r.spec_tokens) for r in hits}))
        basis = f"chain rate of K={ks} ({basis})"
        cite = f"{cite}, carried from K={ks}"
    return SpecDecode(
        method=method,
        spec_tokens=k,
        acceptance_length=min(mean, k + 1.0),
        spread=spread,
        draft_model=draft_model,
        basis=basis,
        cite=cite,
        workload=workload,
        engine=framework.id if framework is not None else None,
    )


def cite_of(source: str) -> str:
    """A source's short name: its text before the first title quote, parenthesis, comma or
    colon, e.g. ``SemiAnalysisAI/InferenceX PR #649`` for ``SemiAnalysisAI/InferenceX PR
    #649 '[AMD] fix: ...' (description): ...``."""
    cut = len(source)
    for mark in (" '", ' "', " (", ",", ": "):
        i = source.find(mark)
        if 0 < i < cut:
            cut = i
    return source[:cut].strip()


def _prior_rows(
    rows: list[AcceptanceRecord], k: int, workload: str | None
) -> tuple[list[AcceptanceRecord], bool]:
    """The rows a prior for ``workload`` at K comes from, and whether they are at another K
    (to be carried over by their chain rate). In order: the named workload's own rows at K;
    for a natural-text workload (or None) the general rows at K (prompts not named, or
    ``mixed``), else every natural-text row at K (a task row, e.g. MT-Bench, informs the
    general prior only where no general row exists); the named workload's rows at the
    nearest larger K; none."""
    if workload is not None and workload not in WORKLOADS:
        raise PlannerError(
            f"spec_workload must be one of {', '.join(WORKLOADS)}; got {shown(workload)}"
        )
    natural = workload is None or workload in NATURAL_WORKLOADS
    own = [r for r in rows if (r.workload == workload if workload else r.natural)]
    at_k = [r for r in own if r.spec_tokens == k]
    if at_k and workload not in (None, "mixed"):
        return at_k, False
    if natural:
        nat = [r for r in rows if r.natural and r.spec_tokens == k]
        general = [r for r in nat if r.workload in (None, "mixed")]
        if general or nat:
            return general or nat, False
    if not own or workload is None:  # no named workload: published K only
        return [], False
    # only down to a smaller K: a chain fitted at K' > K counts the later positions at the
    # mean rate, a lower bound where per-position acceptance falls (reused MTP modules);
    # carrying it up to a larger K would overstate them
    above = [r for r in own if r.spec_tokens > k]
    if not above:
        return [], False
    near = min(r.spec_tokens for r in above)
    return [r for r in above if r.spec_tokens == near], True


def chain_acceptance_length(rate: float, spec_tokens: int) -> float:
    """Mean tokens per verify step of a chain of K drafts, each accepted with probability
    ``rate`` given the previous ones [tokens/step]: ``sum_{i=0..K} rate^i`` (the bonus token
    included), e.g. rate 0.5, K = 2: 1 + 0.5 + 0.25 = 1.75."""
    return float(sum(rate**i for i in range(spec_tokens + 1)))


def chain_rate(acceptance_length: float, spec_tokens: int) -> float:
    """The per-position rate of a chain of K drafts with mean ``acceptance_length``
    (the inverse of :func:`chain_acceptance_length`, by bisection; 0 at AL 1, 1 at K + 1)."""
    al = min(max(float(acceptance_length), 1.0), spec_tokens + 1.0)
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if chain_acceptance_length(mid, spec_tokens) < al:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def published_specs(
    model: ModelArch,
    framework: Framework,
    data_dir: Path | None = None,
    workload: str | None = None,
    acceptance_length: float | None = None,
) -> list[SpecDecode]:
    """Every speculative setting with a published acceptance length that ``framework`` runs
    for ``model`` (one per method x K; ``draft`` needs a draft model and is left to the
    user): what the recommender searches besides speculation off.

    Parameters
    ----------
    workload : the prompts' kind (:data:`WORKLOADS`): each setting's AL is the prior for it
        (:func:`spec_decode`); a setting with no prior for it is left out
    acceptance_length : the user's AL [tokens/step]: it replaces the prior of every setting
        whose K allows it (AL <= K + 1); the others are left out
    """
    runs = engine_support(data_dir).get(framework.id, ())
    keys = sorted(
        {
            (r.method, r.spec_tokens)
            for r in acceptance_records(data_dir)
            if r.model == model.id and r.method in runs and r.method != "draft"
        }
    )
    if workload is not None and workload not in WORKLOADS:
        raise PlannerError(
            f"spec_workload must be one of {', '.join(WORKLOADS)}; got {shown(workload)}"
        )
    if acceptance_length is not None:
        al = acceptance_length
        if isinstance(al, bool) or not isinstance(al, (int, float)) or not al >= 1.0:
            raise PlannerError(f"acceptance_length must be >= 1 tokens per step, got {shown(al)}")
        keys = [(m, k) for m, k in keys if al <= k + 1]
    out = []
    for method, k in keys:
        try:
            out.append(
                spec_decode(
                    model,
                    method,
                    k,
                    acceptance_length=acceptance_length,
                    framework=framework,
                    data_dir=data_dir,
                    workload=workload,
                )
            )
        except PlannerError:
            continue
    return out


def replica_kwargs(spec: SpecDecode | None) -> dict[str, Any]:
    """:func:`planner.serving.build_replica`'s speculative decoding arguments that rebuild
    ``spec`` (empty when off): the recommender's options and ``capacity --compare-tp``'s
    other TP sizes. ``spec_workload`` goes with a published AL; with the AL given, as here,
    :func:`spec_decode` keeps the AL and reads no workload."""
    if spec is None:
        return {}
    return {
        "spec_method": spec.method,
        "spec_tokens": spec.spec_tokens,
        "acceptance_length": spec.acceptance_length,
        "draft_model": spec.draft_model,
        "spec_workload": spec.workload,
    }
