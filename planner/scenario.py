"""Scenario files: model, workload, SLOs, constraints and engine settings in one YAML.

The same format serves the CLI (``planner simulate|capacity SCENARIO.yaml``), the app and
the Python API (:func:`load_scenario`, :func:`scenario_from_dict`). Unknown keys are
errors that name the field path (``workload.traffic.peak_rsp: unknown field; did you mean
peak_rps?``). Example::

    name: chat-8b
    model: llama-3.1-8b
    workload:
      preset: chat                 # chat | rag | code | summarization | batch
      traffic: {mean_rps: 20, peak_rps: 60, arrival: poisson}
      output_tokens: {kind: lognormal, mean: 250, p90: 500}   # overrides the preset
    slo:
      ttft: {max_s: 1.0, percentile: p99}
      tpot: {max_s: 0.05, percentile: p99}
      attainment: 0.99
    constraints: {headroom: 0.2}
    deployment: {gpu: nvidia-h100-sxm, framework: vllm, precision: bf16, tp: 1}
    # or disaggregated prefill/decode (xPyD, planner.serving.disagg):
    # deployment:
    #   disaggregated:
    #     prefill: {gpu: nvidia-b200, framework: sglang, precision: fp8, tp: 4}
    #     decode: {gpu: nvidia-b200, framework: sglang, precision: fp8, tp: 8}
    #     x: 1
    #     y: 2

Relative paths (``traffic.trace_path``, histogram ``path``) resolve against the folder of
the scenario file.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, model_validator

from planner.catalog.layout import Layout, layout_of
from planner.catalog.records import Frozen, field_error
from planner.catalog.releases import parse_release_text
from planner.errors import PlannerError, read_text, shown
from planner.files import load_yaml
from planner.recommend.constraints import Constraints
from planner.serving.disagg import Disaggregated, DisaggReplicas, Pool, build_disagg
from planner.serving.replica import build_replica
from planner.workload.slo import SLO
from planner.workload.workload import Workload, resolve_path

__all__ = [
    "Constraints",
    "Deployment",
    "EngineOverrides",
    "Scenario",
    "load_scenario",
    "scenario_from_dict",
]


class Deployment(Frozen):
    """Default hardware / software combination (the CLI's --gpu etc. override it)."""

    gpu: str | None = None
    framework: str | None = None
    release: str | None = Field(
        None,
        description="engine release (0.11.0; or framework: vllm@0.11.0); none: the newest "
        "release with a fit on the GPU family",
    )
    precision: str | None = None
    kv_precision: str | None = None
    tp: int = Field(1, gt=0)
    pp: int = Field(1, gt=0)
    ep: int = Field(1, gt=0, description="expert-parallel size (MoE models)")
    attention_dp: int = Field(1, gt=0, description="attention data-parallel ranks (MoE models)")
    attention_dp_balance: bool | None = Field(
        None,
        description="balance prompt work over the attention-DP ranks (TensorRT-LLM "
        "attention_dp_config.enable_balance); none: the engine's default (off)",
    )
    disaggregated: Disaggregated | None = Field(
        None, description="prefill and decode pools (xPyD) instead of one replica kind"
    )
    spec_method: str | None = Field(None, description="speculative decoding: none, mtp, ...")
    spec_tokens: int | None = Field(None, gt=0, description="draft tokens per step, K")
    acceptance_length: float | None = Field(None, description="tokens per verify step, AL")
    draft_model: str | None = Field(None, description="draft model id (spec_method draft)")
    spec_workload: str | None = Field(
        None, description="prompts' kind for the acceptance prior: chat, code, math, random, ..."
    )

    @model_validator(mode="after")
    def _width_rule(self) -> Deployment:
        if self.disaggregated is not None:
            # the pools name their own GPU, engine and layout: a field of one aggregated
            # replica beside them would be dropped without a word
            fields = type(self).model_fields
            beside = [k for k in _AGGREGATED_ONLY if getattr(self, k) != fields[k].default]
            if beside:
                raise ValueError(
                    f"{beside[0]} is given beside disaggregated: a disaggregated deployment "
                    "names the GPU, framework, precision and layout per pool (deployment."
                    f"disaggregated.prefill / decode); move {beside[0]} there or drop it "
                    "(speculative decoding fields stay here: they apply to both pools)"
                )
        try:
            self.layout  # noqa: B018 (the width rule and the balance rule)
        except PlannerError as e:
            raise ValueError(str(e)) from None
        return self

    @model_validator(mode="before")
    @classmethod
    def _framework_at_release(cls, data: Any) -> Any:
        """``framework: vllm@0.11.0`` is ``framework: vllm`` + ``release: 0.11.0``; a release
        must read as a version (which releases have data is checked where it is used)."""
        if not isinstance(data, dict):
            return data
        fw, rel = data.get("framework"), data.get("release")
        if isinstance(fw, str) and "@" in fw:
            fw, _, at = fw.partition("@")
            if rel not in (None, at.strip()):
                raise ValueError(f"framework {data['framework']} and release {rel} disagree")
            data = {**data, "framework": fw.strip(), "release": at.strip()}
        rel = data.get("release")
        if rel is not None and (
            not isinstance(rel, str) or parse_release_text(str(fw), rel) is None
        ):
            raise ValueError(
                f"release {rel!r} is not a version (write X.Y[.Z][rcN|.postN], e.g. 0.11.0)"
            )
        return data

    def spec_over(
        self,
        spec_method: str | None = None,
        spec_tokens: int | None = None,
        acceptance_length: float | None = None,
        draft_model: str | None = None,
        spec_workload: str | None = None,
    ) -> dict[str, Any]:
        """The speculative decoding fields with the given ones (the command line's) over
        this deployment's. A method other than this one's replaces its whole setting (its K,
        AL and draft were chosen for its own method: ``--spec-method none`` turns it off);
        another K drops its AL (measured or chosen at its own K)."""
        k, al, draft = self.spec_tokens, self.acceptance_length, self.draft_model
        if spec_method is not None and spec_method != (self.spec_method or "none"):
            k = al = draft = None
        elif spec_tokens is not None and spec_tokens != self.spec_tokens:
            al = None
        return {
            "spec_method": spec_method or self.spec_method,
            "spec_tokens": spec_tokens or k,
            "acceptance_length": acceptance_length or al,
            "draft_model": draft_model or draft,
            "spec_workload": spec_workload or self.spec_workload,
        }

    @property
    def layout(self) -> Layout:
        """The deployment's :class:`~planner.catalog.layout.Layout`."""
        return layout_of(
            self.tp, self.pp, self.ep, self.attention_dp,
            attention_dp_balance=self.attention_dp_balance,
        )  # fmt: skip


#: Deployment fields of one aggregated replica (not taken beside ``disaggregated``)
_AGGREGATED_ONLY = (
    "gpu", "framework", "release", "precision", "kv_precision", "tp", "pp", "ep",
    "attention_dp", "attention_dp_balance",
)  # fmt: skip


class EngineOverrides(Frozen):
    """Serving-engine settings that replace the framework's defaults."""

    max_num_seqs: int | None = Field(None, gt=0)
    max_num_batched_tokens: int | None = Field(None, gt=0)
    memory_utilization: float | None = Field(None, gt=0, le=1)
    context_len: int | None = Field(None, gt=1, description="max_model_len [tokens]")
    block_size: int | None = Field(None, gt=0)
    chunked_prefill: bool | None = None
    prefix_caching: bool | None = None
    continuous_batching: bool | None = None

    def kwargs(self) -> dict[str, Any]:
        return {k: v for k, v in self.model_dump().items() if v is not None}


class RequestClassSpec(Frozen):
    """One request class of a multi-class scenario: its traffic and lengths, and its SLO."""

    name: str = Field(min_length=1)
    workload: Workload
    slo: SLO = SLO()


class Scenario(Frozen):
    """Everything that defines a capacity question except the hardware choice.

    Either one ``workload`` (and ``slo``), or several ``classes`` (each with its workload and
    SLO; ``planner recommend`` then compares one shared pool with a pool per class)."""

    name: str | None = None
    description: str | None = None
    model: str = Field(min_length=1)
    workload: Workload | None = None
    classes: tuple[RequestClassSpec, ...] = ()
    slo: SLO = SLO()
    constraints: Constraints = Constraints()
    serving: EngineOverrides = EngineOverrides()
    deployment: Deployment = Deployment()

    @model_validator(mode="after")
    def _one_shape(self) -> Scenario:
        if (self.workload is None) == (not self.classes):
            raise ValueError(
                "give either 'workload' (one request class) or 'classes' (several, each with "
                "name, workload and slo)"
            )
        if self.classes and len(self.classes) < 2:
            raise ValueError("'classes' needs at least two classes (or use 'workload')")
        return self

    def build_disagg(self, catalog=None, **engine: Any) -> DisaggReplicas:
        """Both pools of the scenario's ``deployment.disaggregated`` (one-line errors name
        the pool: ``deployment.disaggregated.decode: ...``)."""
        spec = self.deployment.disaggregated
        if spec is None:
            raise PlannerError("the scenario's deployment has no 'disaggregated' section")
        kw = {**self.serving.kwargs(), **{k: v for k, v in engine.items() if v is not None}}
        kw.setdefault("first_token_s", None)  # the product: the bundled first-token path
        return build_disagg(self.model, spec, catalog=catalog, **kw)

    def check_spec(self, catalog, data_dir: str | os.PathLike[str] | None = None) -> None:
        """Check the file's ``deployment:`` speculative fields as ``simulate`` checks them, for
        a command that does not build the file's deployment (``recommend`` searches every
        one), so a file that ``simulate`` refuses is refused there too; one line naming
        ``deployment.<field>``."""
        from planner.catalog.speculative import spec_decode

        d = self.deployment
        if d.spec_method is None and d.spec_tokens is None and d.acceptance_length is None:
            return
        fw = catalog.framework(d.framework) if d.framework else None
        try:
            spec_decode(
                catalog.model(self.model), d.spec_method, d.spec_tokens, d.acceptance_length,
                d.draft_model, framework=fw, data_dir=Path(data_dir) if data_dir else None,
                workload=d.spec_workload,
            )  # fmt: skip
        except PlannerError as e:
            raise PlannerError(f"deployment.{e}") from None

    def require_workload(self) -> Workload:
        """The single workload; a clear error for a multi-class scenario."""
        if self.workload is None:
            raise PlannerError(
                f"scenario{f' {self.name}' if self.name else ''} has request classes "
                f"({', '.join(c.name for c in self.classes)}); 'planner recommend' compares one "
                "shared pool with a pool per class, while simulate and capacity take one workload"
            )
        return self.workload

    def resolve_deployment(
        self,
        gpu: str | None = None,
        framework: str | None = None,
        precision: str | None = None,
        tp: int | None = None,
        pp: int | None = None,
        kv_precision: str | None = None,
        ep: int | None = None,
        attention_dp: int | None = None,
        spec_method: str | None = None,
        spec_tokens: int | None = None,
        acceptance_length: float | None = None,
        draft_model: str | None = None,
        release: str | None = None,
        spec_workload: str | None = None,
        attention_dp_balance: bool | None = None,
        *,
        flags_replace_layout: bool = False,
    ) -> Deployment:
        """The deployment with explicit arguments taking precedence over the file's (the
        file's ``release`` only goes with the file's framework).

        ``flags_replace_layout`` (the CLI's rule): when any of ``tp``, ``ep``,
        ``attention_dp`` is given, the three come from the arguments alone, the ones not
        given being 1: ``--tp 8`` on a DEP8 scenario is TP8, not TP8 x DEP8 (64 GPUs).
        :meth:`layout_replaced` says so in the output."""
        d = self.deployment
        if release is None and (framework is None or framework == d.framework):
            release = d.release
        given = flags_replace_layout and any((tp, ep, attention_dp))
        if given:
            tp, ep, attention_dp = (int(v) if v else 1 for v in (tp, ep, attention_dp))
            if attention_dp == 1 and attention_dp_balance is None:
                attention_dp_balance = None if d.attention_dp_balance is None else False
        try:
            lay = layout_of(
                int(tp) if tp else d.tp,
                int(pp) if pp else d.pp,
                int(ep) if ep else d.ep,
                int(attention_dp) if attention_dp else d.attention_dp,
            )
        except PlannerError as e:
            if not given:
                raise
            raise PlannerError(
                f"{e} (the command line's --tp {tp} --ep {ep} --attention-dp {attention_dp}: "
                f"layout flags replace the scenario's {self._file_layout()}, the ones not "
                "given are 1)"
            ) from None
        spec = d.spec_over(spec_method, spec_tokens, acceptance_length, draft_model,
                           spec_workload)  # fmt: skip
        out = Deployment(
            gpu=gpu or d.gpu,
            framework=framework or d.framework,
            release=release,
            precision=precision or d.precision,
            kv_precision=kv_precision or d.kv_precision,
            tp=lay.tp,
            pp=lay.pp,
            ep=lay.ep,
            attention_dp=lay.attention_dp,
            attention_dp_balance=(
                d.attention_dp_balance if attention_dp_balance is None else attention_dp_balance
            ),
            **spec,
        )
        missing = [k for k in ("gpu", "framework", "precision") if getattr(out, k) is None]
        if missing:
            raise PlannerError(
                f"scenario{f' {self.name}' if self.name else ''}: no {', '.join(missing)} given; pass "
                + " ".join(f"--{k} ..." for k in missing)
                + " or add them under 'deployment:' in the scenario file"
            )
        return out

    def _file_layout(self) -> str:
        """The scenario file's layout name (``DEP8``, ``TP8``)."""
        d = self.deployment
        return layout_of(d.tp, d.pp, d.ep, d.attention_dp).label

    def layout_replaced(
        self, tp: int | None, ep: int | None, attention_dp: int | None, dep: Deployment
    ) -> str | None:
        """A line for the output when the command line's layout flags dropped a value of the
        file's layout (:meth:`resolve_deployment` with ``flags_replace_layout``): ``layout
        from the command line: TP8 (the scenario's DEP8 replaced; ...)``; None otherwise."""
        d = self.deployment
        if not any((tp, ep, attention_dp)):
            return None
        dropped = [
            flag
            for flag, v, f in (("--tp", tp, d.tp), ("--ep", ep, d.ep),
                               ("--attention-dp", attention_dp, d.attention_dp))
            if not v and f != 1
        ]  # fmt: skip
        if not dropped:
            return None
        return (
            f"layout from the command line: {dep.layout.label} (the scenario's "
            f"{self._file_layout()} replaced; layout flags not given are 1, add "
            f"{' / '.join(dropped)} to keep the file's)"
        )

    def build_replica(
        self,
        gpu: str | None = None,
        framework: str | None = None,
        precision: str | None = None,
        tp: int | None = None,
        pp: int | None = None,
        kv_precision: str | None = None,
        *,
        ep: int | None = None,
        attention_dp: int | None = None,
        attention_dp_balance: bool | None = None,
        catalog=None,
        params=None,
        params_source: str = "prior",
        spec: dict[str, Any] | None = None,
        **engine: Any,
    ):
        """A :class:`planner.serving.replica.Replica` for this scenario's model and engine
        settings; ``spec``: speculative decoding fields (spec_method, spec_tokens,
        acceptance_length, draft_model, spec_workload) over the file's."""
        d = self.resolve_deployment(
            gpu, framework, precision, tp, pp, kv_precision, ep=ep, attention_dp=attention_dp,
            attention_dp_balance=attention_dp_balance, **(spec or {}),
        )  # fmt: skip
        kw = {**self.serving.kwargs(), **{k: v for k, v in engine.items() if v is not None}}
        kw.setdefault("release", d.release)  # the first-token path depends on it
        return build_replica(
            self.model,
            d.gpu,
            d.precision,
            d.framework,
            layout=d.layout,
            kv_precision=d.kv_precision,
            params=params,
            params_source=params_source,
            catalog=catalog,
            spec_method=d.spec_method,
            spec_tokens=d.spec_tokens,
            acceptance_length=d.acceptance_length,
            draft_model=d.draft_model,
            spec_workload=d.spec_workload,
            **kw,
        )


# --------------------------------------------------------------------------- loading
def _known_fields() -> set[str]:
    """Every field name a scenario file may hold: its sections' (:func:`_sections`) and the
    length distributions'."""
    import planner.workload as wl

    names: set[str] = set()
    lengths = (
        wl.FixedLength, wl.NormalLength, wl.LognormalLength, wl.UniformLength,
        wl.HistogramLength, wl.QuantileLength, wl.TraceLength,
    )  # fmt: skip
    for cls in (*(c for _, c in _sections()), *lengths):
        names.update(cls.model_fields)
    return names


def _loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for p in loc:
        if isinstance(p, int):
            out += f"[{p}]"
        elif str(p).startswith("function-") or str(p) in ("", "__root__"):
            continue
        else:
            out += f".{p}" if out else str(p)
    return out


def _format_error(e: ValidationError, where: str) -> PlannerError:
    errs = e.errors()
    # a misspelt key gives two errors, "unknown field" for the typo and "required field
    # missing" for the field it meant: the typo is the one to name (slo.ttft.max_secs ->
    # "unknown field; did you mean max_s?")
    err = field_error(next((x for x in errs if x["type"] == "extra_forbidden"), errs[0]))
    loc = _loc(tuple(err["loc"]))
    if err["type"] == "extra_forbidden":
        field = str(err["loc"][-1])
        close = difflib.get_close_matches(field, sorted(_known_fields()), n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]}?" if close else ""
        if close and close[0] == field:  # a field of another section, not a typo
            hint = _misplaced_hint(field, loc)
        return PlannerError(f"{where}: {loc}: unknown field{hint}")
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] == "missing":
        return PlannerError(f"{where}: {loc}: required field missing")
    if err["type"] == "union_tag_invalid":
        ctx = err.get("ctx") or {}
        return PlannerError(
            f"{where}: {loc}: unknown kind {ctx.get('tag')!r} (kinds: {ctx.get('expected_tags')})"
        )
    if err["type"] == "union_tag_not_found":
        return PlannerError(
            f"{where}: {loc}: needs 'kind' (fixed, normal, lognormal, uniform, "
            "histogram, quantiles, trace)"
        )
    got = err.get("input")
    got_text = f" (got {shown(got)})" if got is not None and not isinstance(got, dict) else ""
    return PlannerError(f"{where}: {loc or '<scenario>'}: {msg}{got_text}")


def _sections() -> tuple[tuple[str, Any], ...]:
    """The sections of a scenario file, each with the model that reads it."""
    import planner.workload as wl

    return (
        ("the top level", Scenario), ("deployment", Deployment),
        ("deployment.disaggregated", Disaggregated),
        ("deployment.disaggregated.prefill / decode", Pool), ("serving", EngineOverrides),
        ("constraints", Constraints), ("slo", SLO), ("slo.ttft / tpot / e2e", wl.SloTarget),
        ("workload", Workload), ("workload.traffic", wl.Traffic),
        ("workload.prefix", wl.PrefixReuse),
    )  # fmt: skip


def _misplaced_hint(field: str, loc: str) -> str:
    """The hint for a known field written in a section that does not take it: the sections
    that do (``deployment.speculative`` -> "speculative is a field of constraints")."""
    if ".disaggregated." in f".{loc}" and field in Deployment.model_fields:
        return f"; {field} is a field of deployment (it applies to both pools), not of one pool"
    here = loc.rsplit(".", 1)[0] if "." in loc else ""
    where = [name for name, cls in _sections() if field in cls.model_fields and name != here]
    if not where:
        return f"; {field} is a field of another section of a scenario, not of this one"
    return f"; {field} is a field of {' and of '.join(where)}, not of {here or 'the top level'}"


def _resolve_paths(d: dict[str, Any], base_dir: str | None) -> dict[str, Any]:
    wl = d.get("workload")
    if not isinstance(wl, dict) or base_dir is None:
        return d
    wl = dict(wl)
    tr = wl.get("traffic")
    if isinstance(tr, dict) and tr.get("trace_path"):
        wl["traffic"] = {**tr, "trace_path": resolve_path(str(tr["trace_path"]), base_dir)}
    for key in ("input_tokens", "output_tokens"):
        dist = wl.get(key)
        if isinstance(dist, dict) and dist.get("path"):
            wl[key] = {**dist, "path": resolve_path(str(dist["path"]), base_dir)}
    return {**d, "workload": wl}


def scenario_from_dict(
    data: dict[str, Any], where: str = "scenario", base_dir: str | os.PathLike[str] | None = None
) -> Scenario:
    """Validate a scenario given as a dict; errors are one-line :class:`PlannerError`."""
    if not isinstance(data, dict):
        raise PlannerError(
            f"{where}: expected a mapping at the top level, got {type(data).__name__}"
        )
    data = _resolve_paths(data, str(base_dir) if base_dir is not None else None)
    try:
        return Scenario.model_validate(data)
    except ValidationError as e:
        raise _format_error(e, where) from None


def load_scenario(path: str | os.PathLike[str]) -> Scenario:
    """Read and validate a scenario YAML file."""
    p = Path(path)
    text = read_text(p, "scenario file", "scenario file")
    data = load_yaml(text, p)
    if data is None:
        raise PlannerError(f"{p}: empty scenario file")
    return scenario_from_dict(data, where=p.name, base_dir=p.parent)
