"""``planner recommend --emit DIR``: one folder per ranked option with ``serve.sh``, ``k8s/``,
``bench.sh``, ``expected.json`` and a ``README.md`` of what was assumed."""

from __future__ import annotations

import csv
import functools
import math
import os
import re
import shlex
from pathlib import Path
from typing import Any

import yaml

from planner.catalog.layout import hosts_spanned, layout_of
from planner.catalog.releases import parse_release
from planner.deploy import flags as F
from planner.deploy.bench import bench_plan, bench_script
from planner.deploy.expected import (
    Band,
    Expected,
    ExpectedOption,
    ExpectedWorkload,
    Predicted,
    write_expected,
)
from planner.deploy.k8s import manifests, validate
from planner.deploy.serve import (
    ENGINES,
    HEALTH,
    PORT,
    RAY_PORT,
    Knobs,
    launch,
    names_no_checkpoint,
    serve_script,
)
from planner.errors import PlannerError

#: container images whose tag is the engine's release (as benchmark rows name them,
#: planner/catalog/releases.py ENGINE_IMAGES); other engines get IMAGE to fill in
_IMAGES = {
    "vllm": "vllm/vllm-openai:v{r}",
    "sglang": "lmsysorg/sglang:v{r}",
    "trtllm": "nvcr.io/nvidia/tensorrt-llm/release:{r}",
}


class _NoAliases(yaml.SafeDumper):
    """Writes a shared object twice instead of as a YAML anchor and alias."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


@functools.lru_cache(maxsize=2)
def data_releases(data_dir: str | None = None) -> dict[str, tuple[str, ...]]:
    """Per engine, the releases named by benchmark rows (oldest first)."""
    from planner.catalog.catalog import DATA_DIR

    d = Path(data_dir or DATA_DIR) / "benchmarks"
    have: dict[str, dict[Any, str]] = {}
    for p in sorted(d.glob("*.csv")):
        with open(p, newline="", encoding="utf-8") as fh:
            for row in csv.DictReader(fh):
                rel = parse_release(row.get("framework") or "", row.get("framework_version"))
                if rel is not None:
                    have.setdefault(rel.engine, {})[rel.key] = rel.release
    return {
        e: tuple(sorted(v.values(), key=lambda r: F.release_order(r) or ((0,),)))
        for e, v in have.items()
    }


@functools.lru_cache(maxsize=2)
def data_images(data_dir: str | None = None) -> dict[tuple[str, str], tuple[str, ...]]:
    """Per (engine, release), the engine's own container images benchmark rows name
    (``image lmsysorg/sglang:v0.5.12-cu130 | ...``)."""
    from planner.catalog.catalog import DATA_DIR

    out: dict[tuple[str, str], set[str]] = {}
    for p in sorted((Path(data_dir or DATA_DIR) / "benchmarks").glob("*.csv")):
        with open(p, newline="", encoding="utf-8") as fh:
            for row in csv.DictReader(fh):
                text = row.get("framework_version") or ""
                rel = parse_release(row.get("framework") or "", text)
                m = re.match(r"image\s+(\S+)", text)
                if rel is not None and m:
                    out.setdefault((rel.engine, rel.release), set()).add(m.group(1).rstrip(")"))
    return {k: tuple(sorted(v)) for k, v in out.items()}


def image_for(
    engine: str, release: str, vendor: str, data_dir: str | None = None, gpu: str = ""
) -> tuple[str, str]:
    """(image, where it comes from): an image benchmark rows of this release ran (a ROCm
    build for AMD GPUs, another for the rest), else the engine's repository tagged with the
    release (assumed), else ``IMAGE`` to fill in."""
    seen = data_images(data_dir).get((engine, release), ())
    amd = [i for i in seen if "rocm" in i]
    other = [i for i in seen if "rocm" not in i and not i.endswith(":dev")]
    pick = amd if vendor == "amd" else other
    if vendor == "amd":  # ROCm images built per Instinct generation (mi30x: MI300X/MI325X)
        fam = "mi35x" if "mi35" in gpu else "mi30x"
        pick = [i for i in pick if fam in i] or [i for i in pick if "mi3" not in i]
    if pick:
        return pick[-1], "named by benchmark rows of this release"
    if engine in _IMAGES and vendor != "amd":
        return _IMAGES[engine].format(
            r=release
        ), "the engine's repository tagged with the release (tag assumed: check it exists)"
    return "IMAGE", "no image known for this engine, release and GPU vendor: set it"


def pick_release(
    framework: str, option_release: str | None, asked: dict[str, str], data_dir: str | None
) -> F.Resolved:
    """The release to emit for: asked (``--emit-release``), the option's, the newest with
    benchmark rows, else the newest whose flags were read."""
    known = data_releases(data_dir).get(framework, ())
    # a release the package index lists (data/engine_releases.yaml) is real too
    from planner.catalog.releases import published_releases

    real = (*known, *(r.release for r in published_releases(data_dir).get(framework, ())))
    if framework in asked:
        return F.resolve(framework, asked[framework], "named with --emit-release", real)
    if option_release:  # recommend writes it as ENGINE@RELEASE (vllm@0.11.0)
        rel = option_release.split("@", 1)[-1]
        try:
            return F.resolve(framework, rel, "the option's release", real)
        except PlannerError as e:
            if "older than every release" not in str(e):
                raise
            return F.resolve(  # a fit of an old build: launch the newest read release
                framework,
                None,
                f"the option's release {rel} is older than every release whose flags were "
                "read: the newest read release, whose speed the prediction does not cover",
            )
    if known:
        try:
            return F.resolve(framework, known[-1], "the newest release with benchmark rows", known)
        except PlannerError:  # rows only of releases older than every read one
            return F.resolve(
                framework,
                None,
                f"the newest read release: benchmark rows name only {framework} releases older "
                f"than every read one (newest {known[-1]})",
            )
    return F.resolve(framework, None, "no benchmark row names a release: the newest read")


def check_target(out: str | os.PathLike[str], force: bool) -> Path:
    """The output folder: refuse a non-empty one unless ``force``, and an unwritable one."""
    p = Path(out)
    if p.exists() and not p.is_dir():
        raise PlannerError(f"--emit {out}: exists and is not a folder")
    if p.is_dir() and any(p.iterdir()) and not force:
        raise PlannerError(
            f"--emit {out}: folder exists and is not empty; add --force to overwrite, "
            "or pick another folder"
        )
    try:
        p.mkdir(parents=True, exist_ok=True)
        probe = p / ".planner-write-test"
        probe.write_text("", encoding="utf-8")
        probe.unlink()
    except OSError as e:
        raise PlannerError(f"--emit {out}: cannot write there ({e.strerror or e})") from None
    return p


def _slug(r: dict[str, Any]) -> str:
    parts = [r["gpu"], r["framework"], r["precision"], r["layout"]]
    return re.sub(r"[^a-z0-9._]+", "-", "-".join(str(x) for x in parts).lower()).strip("-")


def knobs_of(r: dict[str, Any], catalog: Any, model: str) -> Knobs:
    """What the planner assumed for recommendation row ``r``."""
    es = r.get("engine_settings") or {}
    m = catalog.model(model)
    lay = layout_of(
        r["tp"], r.get("pp") or 1, r.get("ep") or 1, r.get("attention_dp") or 1,
        attention_dp_balance=r.get("attention_dp_balance"),
    )  # fmt: skip
    return Knobs(
        model_id=m.id,
        hf_repo=asked_repo(m, model) or m.hf_repo,
        framework=r["framework"],
        precision=r["precision"],
        kv_precision=r["kv_precision"],
        layout=lay,
        max_num_seqs=es.get("max_num_seqs"),
        max_num_batched_tokens=es.get("max_num_batched_tokens"),
        memory_utilization=es.get("memory_utilization"),
        max_model_len=es.get("max_model_len"),
        chunked_prefill=es.get("chunked_prefill"),
        prefix_caching=es.get("prefix_caching"),
        spec_method=r.get("spec_method"),
        spec_tokens=r.get("spec_tokens"),
        nodes=hosts_spanned(lay, catalog.gpu(r["gpu"])),
        native_precision=m.native_precision,
        checkpoint_repo=_checkpoint_repo(m, r["precision"], catalog.gpu(r["gpu"])),
    )


def asked_repo(m: Any, asked: str) -> str | None:
    """The Hugging Face id the question named where it named the model by an alias of
    ``data/models.yaml``, else None (MODEL then defaults to the entry's ``hf_repo``).

    An alias is the same architecture, not the same weights: DeepSeek-R1 is an alias of
    ``deepseek-v3``, whose ``hf_repo`` is deepseek-ai/DeepSeek-V3; a question about
    ``deepseek-r1`` serves deepseek-ai/DeepSeek-R1 (the alias that is a Hugging Face id whose
    name is the one asked, or the Hugging Face id asked itself)."""
    a = (asked or "").strip().lower()
    if not a or a == m.id.lower():
        return None
    for repo in (x for x in getattr(m, "aliases", ()) if "/" in x):
        if a in (repo.lower(), repo.split("/", 1)[1].lower()):
            return repo
    return None


def _checkpoint_repo(m: Any, precision: str, gpu: Any) -> str | None:
    """The checkpoint ``data/models.yaml`` names for ``precision`` on ``gpu``, or None."""
    ck = m.checkpoint_for(precision, gpu.arch)
    return ck.repo if ck is not None else None


def _band(v: Any, eb: dict[str, Any]) -> Band:
    """A predicted time with the option's error band: the band is the p10-p90 of the speed
    ratio measured / predicted over held-out rows (planner/calibration/bands.py), and a time
    measured r times slower is a speed ratio 1/r, so the time lies in [v / high, v / low]."""
    v = float(v)
    lo, hi = eb.get("low_ratio"), eb.get("high_ratio")
    if not lo or not hi:
        return Band(value=v)
    return Band(value=v, low=v / float(hi), high=v / float(lo))


def expected_of(r: dict[str, Any], k: Knobs, plan: Any, release: str | None) -> Expected:
    """The prediction at the benchmark's rate: the planner's latencies at its planned load
    per replica (``latency_at_rps``, the rate bench.sh runs); throughput = rate x answer."""
    from planner import __version__

    rate = plan.rate_rps
    for key in ("ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "e2e_p99_s"):
        if r.get(key) is None or not math.isfinite(float(r[key])):
            raise PlannerError(f"option {r['rank']}: no predicted {key} to write")
    es = r.get("engine_settings") or {}
    eb = r.get("error_band") or {}
    prov = str(r.get("provenance") or "")
    if eb.get("low_ratio") and eb.get("high_ratio"):
        prov += (
            f"; time bands: the speed ratio measured/predicted {eb['low_ratio']}-"
            f"{eb['high_ratio']} (p10-p90 of held-out throughput rows, {eb.get('tier')}, "
            f"{eb.get('group')}) applied as time / ratio; queueing near saturation can "
            "exceed them"
        )
    return Expected(
        planner_version=__version__,
        option=ExpectedOption(
            label=f"{r['gpu']} {r['framework']} {r.get('precision_label') or r['precision']} "
            f"kv={r['kv_precision']} {r['layout']}",
            gpu=r["gpu"],
            framework=r["framework"],
            release=release,
            precision=r["precision"],
            kv_precision=r["kv_precision"],
            tp=k.layout.tp,
            pp=k.layout.pp,
            ep=k.layout.ep,
            attention_dp=k.layout.attention_dp,
            replicas=r["replicas"],
            max_num_seqs=es.get("max_num_seqs"),
            max_num_batched_tokens=es.get("max_num_batched_tokens"),
            gpu_memory_utilization=es.get("memory_utilization"),
        ),  # fmt: skip
        workload=ExpectedWorkload(
            model=k.model_id,
            input_tokens=plan.input_tokens,
            output_tokens=plan.output_tokens,
            rate_rps_per_replica=rate,
            num_prompts=plan.num_prompts,
            arrival=plan.arrival,
        ),
        predicted=Predicted(
            output_throughput_tok_s=Band(value=rate * plan.output_tokens),
            request_throughput_rps=Band(value=rate),
            ttft_p50_s=_band(r["ttft_p50_s"], eb),
            ttft_p99_s=_band(r["ttft_p99_s"], eb),
            tpot_p50_s=_band(r["tpot_p50_s"], eb),
            tpot_p99_s=_band(r["tpot_p99_s"], eb),
            e2e_p99_s=_band(r["e2e_p99_s"], eb),
        ),
        provenance=prov,
    )


def launch_files(
    k: Knobs, release: F.Resolved, slug: str, replicas: int, gpus: int, vendor: str,
    head: list[str], gpu_id: str = "",
) -> tuple[dict[str, str], list[str]]:  # fmt: skip
    """serve.sh (+ its YAML, worker.sh) and the checked k8s/ manifests of ``replicas``
    copies of ``k``; the files (name -> text) and notes for the README."""
    head = [*head, "engine: " + release.note(), f"flags read at: {release.read}"]
    la = launch(k, release)
    written = {"serve.sh": serve_script(la, k, head), **la.files}
    notes: list[str] = []
    image, why = image_for(k.framework, release.release, vendor, gpu=gpu_id)
    notes.append(f"k8s image {image}: {why}")
    files = dict(written)
    worker = None
    if k.nodes > 1 and la.workers == "ray":
        written["worker.sh"] = files["worker.sh"] = (
            "#!/usr/bin/env bash\n# a worker pod of a multi-node vLLM replica: joins the "
            "leader's Ray cluster\nset -euo pipefail\n"
            f'exec ray start --block --address="${{LWS_LEADER_ADDRESS}}:{RAY_PORT}"\n'
        )
        worker = ["/planner/worker.sh"]
        notes.append(
            f"the replica spans {k.nodes} nodes: a LeaderWorkerSet whose leader starts a Ray "
            "head and vLLM (--distributed-executor-backend ray), the workers join it"
        )
    elif k.nodes > 1:
        worker = ["/planner/serve.sh"]
        notes.append(
            f"the replica spans {k.nodes} nodes: a LeaderWorkerSet; every pod runs serve.sh, "
            "its rank and the leader's address from LWS_WORKER_INDEX / LWS_LEADER_ADDRESS"
        )
    for name, obj in manifests(
        slug, replicas, gpus, k.nodes, vendor, image, HEALTH[k.framework], PORT, files, worker
    ).items():
        validate(obj, f"k8s/{name}")
        written[f"k8s/{name}"] = yaml.dump(obj, Dumper=_NoAliases, sort_keys=False)
    return written, notes


def _write(folder: Path, written: dict[str, str]) -> None:
    for name, text in written.items():
        p = folder / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
        if name.endswith(".sh"):
            p.chmod(0o755)


def emit_option(
    r: dict[str, Any],
    scenario: Any,
    catalog: Any,
    folder: Path,
    release: F.Resolved | None,
    reason: str | None = None,
) -> list[str]:
    """Write one option's folder; the files written (relative to ``folder``). ``reason``:
    why no launch command is written (the option's layout is not one the engine's flags
    express); None with a release: serve.sh and k8s/ are written."""
    k = knobs_of(r, catalog, scenario.model)
    gpu = catalog.gpu(r["gpu"])
    plan = bench_plan(scenario.workload, float(r["latency_at_rps"]))
    label = (
        f"rank {r['rank']}: {r['gpu']} {r['framework']} {r['precision']} "
        f"kv={r['kv_precision']} {r['layout']}, {r['replicas']} replica(s) x "
        f"{r['gpus_per_replica']} GPU(s)"
    )
    head = [f"planner recommend --emit, {label}"]
    written: dict[str, str] = {}
    notes: list[str] = []
    folder.mkdir(parents=True, exist_ok=True)
    if release is not None and reason is None:
        written, notes = launch_files(
            k, release, _slug(r), r["replicas"], r["gpus_per_replica"], gpu.vendor, head, gpu.id
        )
    elif release is not None:
        notes.append(f"no serve.sh or k8s/: {reason}")
    else:
        notes.append(
            f"no serve.sh or k8s/: no launch command for {k.framework} "
            f"(engines with one: {', '.join(ENGINES)})"
        )
    written["bench.sh"] = bench_script(plan, k.framework, head)
    exp = expected_of(r, k, plan, release.release if release else None)
    _write(folder, written)
    write_expected(exp, folder / "expected.json")
    (folder / "README.md").write_text(_readme(r, k, plan, release, notes), encoding="utf-8")
    return sorted([*written, "expected.json", "README.md"])


def _readme(r, k: Knobs, plan, release, notes: list[str]) -> str:
    es = r.get("engine_settings") or {}
    lines = [
        f"# Rank {r['rank']}: {r['gpu']} {r['framework']} {r['precision']} {r['layout']}",
        "",
        f"* replicas: {r['replicas']} x {r['gpus_per_replica']} GPU(s) ({r['num_gpus']} GPUs), "
        f"{k.nodes} node(s) per replica",
        f"* engine release: {release.note() if release else 'none (no launch command)'}",
        f"* model: set MODEL to a {k.precision} checkpoint of {k.model_id} (the planner names none)"
        if names_no_checkpoint(k)
        else f"* model: {k.model_repo or k.model_id} ({'data/models.yaml checkpoints' if k.checkpoint_repo else 'data/models.yaml hf_repo, or the alias asked' if k.hf_repo else 'no Hugging Face id in data/models.yaml: set MODEL'})",
        f"* weights {k.precision}, KV cache {k.kv_precision}; layout tp={k.layout.tp} pp={k.layout.pp} "
        f"ep={k.layout.ep} attention_dp={k.layout.attention_dp}",
        f"* engine settings assumed: {', '.join(f'{a}={b}' for a, b in es.items()) or '-'}",
        f"* benchmark: {plan.num_prompts} prompts of {plan.input_tokens} tokens -> "
        f"{plan.output_tokens} tokens (range ratio {plan.range_ratio:g}), {plan.arrival} "
        f"arrivals at {plan.rate_rps:.4g} req/s per replica (the planner's planned load, "
        "peak x headroom / replicas)",
        f"* provenance of the prediction: {r.get('provenance')}",
        f"* reproduce: `{r.get('reproduce')}`",
        "",
        "Run: `MODEL=... ./serve.sh` on a node with the GPUs (or `kubectl apply -f k8s/`), "
        "then `MODEL=... ./bench.sh`; compare `result.json` with `expected.json`.",
    ]
    lines += [""] + [f"* {n}" for n in [*notes, *plan.notes]]
    return "\n".join(lines).rstrip() + "\n"


def emit_all(
    result: Any,
    scenario: Any,
    catalog: Any,
    out: str | os.PathLike[str],
    *,
    force: bool = False,
    top: int | None = None,
    releases: dict[str, str] | None = None,
    data_dir: str | None = None,
) -> list[str]:
    """Write ``out/<rank>-<slug>/`` for the first ``top`` ranked options; the folders.

    Everything is built and checked before the first file is written, so a refusal leaves
    no partial output.
    """
    if scenario.workload is None:
        raise PlannerError("--emit takes a scenario with one workload, not request classes")
    recs = list(result.recommendations)[: top or None]
    if not recs:
        raise PlannerError("--emit: no ranked option to write")
    asked = dict(releases or {})
    picked = []
    for r in recs:
        rel, reason = None, None
        if r["framework"] in ENGINES:
            rel = pick_release(r["framework"], r.get("release"), asked, data_dir)
            try:  # every flag checked before the first file is written
                launch(knobs_of(r, catalog, scenario.model), rel)
            except PlannerError as e:
                if r["framework"] in asked:  # the release the user named lacks a flag
                    raise
                rel, reason = _newer_release_with_flags(r, rel, catalog, scenario.model, str(e))
        picked.append((r, rel, reason))
    pools = _disagg_pools(result, scenario, catalog, asked, data_dir)
    root = check_target(out, force)
    done = []
    for r, rel, reason in picked:
        name = f"{r['rank']}-{_slug(r)}"
        emit_option(r, scenario, catalog, root / name, rel, reason)
        done.append(str(root / name))
    for name, (row, built) in pools.items():
        _emit_disagg(row, built, root / name)
        done.append(str(root / name))
    return done


def _newer_release_with_flags(
    r: dict[str, Any], rel: F.Resolved, catalog: Any, model: str, why: str
) -> tuple[F.Resolved, str | None]:
    """The first read release newer than ``rel`` whose flags express option ``r`` (e.g. a
    fit of vLLM 0.7.3 whose DEP layout needs ``--data-parallel-size``, read from 0.8.5), with
    a header that says the prediction is for the older build; ``(rel, why)`` when none does."""
    eng = F.load_engine_flags().engines[r["framework"]]
    names = [x.release for x in eng.releases]
    start = names.index(rel.read) + 1 if rel.read in names else len(names)
    k = knobs_of(r, catalog, model)
    for x in eng.releases[start:]:
        how = (
            f"the first read release whose flags express this layout: the option's release "
            f"{rel.release} lacks one ({why.split(' (')[0]}); the prediction is for "
            f"{rel.release}, not for this build: measure it with bench.sh"
        )
        newer = F.Resolved(
            engine=rel.engine, release=x.release, read=x.release, how=how, source=x.source
        )
        try:
            launch(k, newer)
        except PlannerError:
            continue
        return newer, None
    return rel, why


def _pool_knobs(
    pool: dict[str, Any], catalog: Any, model: str, role: str, row: dict[str, Any]
) -> Knobs:
    """One pool's launch knobs; the row's speculative decoding runs in both pools, as the
    xPyD comparison sized them (planner/recommend/disagg.py)."""
    m = catalog.model(model)
    lay = layout_of(pool["tp"], pool.get("pp") or 1, pool.get("ep") or 1,
                    pool.get("attention_dp") or 1)  # fmt: skip
    return Knobs(
        model_id=m.id, hf_repo=asked_repo(m, model) or m.hf_repo, framework=pool["framework"],
        precision=pool["precision"], kv_precision=pool.get("kv_precision") or "bf16",
        layout=lay,
        max_num_seqs=pool.get("max_num_seqs"),
        max_num_batched_tokens=pool.get("max_num_batched_tokens"),
        spec_method=row.get("spec_method"), spec_tokens=row.get("spec_tokens"),
        nodes=hosts_spanned(lay, catalog.gpu(pool["gpu"])), role=role,
        native_precision=m.native_precision,
        checkpoint_repo=_checkpoint_repo(m, pool["precision"], catalog.gpu(pool["gpu"])),
    )  # fmt: skip


def _disagg_pools(result, scenario, catalog, asked, data_dir) -> dict[str, tuple]:
    """The xPyD deployments the run compared (``summary["disaggregated"]``) that pay: per
    folder name, the row and per pool (knobs, release, count) - built and checked now."""
    out: dict[str, tuple] = {}
    for i, row in enumerate((result.summary or {}).get("disaggregated") or [], 1):
        if not row.get("pays") or "prefill" not in row:
            continue
        built = []
        for role in ("prefill", "decode"):
            pool = row[role]
            if pool["framework"] not in ("vllm", "sglang"):
                built = []
                break
            k = _pool_knobs(pool, catalog, scenario.model, role, row)
            rel = pick_release(pool["framework"], None, asked, data_dir)
            launch(k, rel)
            built.append((k, rel, int(pool["count"]), catalog.gpu(pool["gpu"])))
        if built:
            label = row["option"].lower().removeprefix("disagg")
            out[f"disagg-{i}-{re.sub(r'[^a-z0-9.]+', '-', label).strip('-')}"] = (
                row,
                built,
            )
    return out


def _emit_disagg(row: dict[str, Any], built: list, folder: Path) -> None:
    """One folder per pool (prefill/, decode/) with serve.sh and k8s/, and a README."""
    notes = []
    for k, rel, count, g in built:
        head = [f"planner recommend --emit, disaggregated {row['option']}: {k.role} pool, "
                f"{count} replica(s)"]  # fmt: skip
        gpus = k.layout.num_gpus
        written, n = launch_files(k, rel, f"{k.role}-{g.id}", count, gpus, g.vendor, head, g.id)
        (folder / k.role).mkdir(parents=True, exist_ok=True)
        _write(folder / k.role, written)
        notes += [f"{k.role}: {x}" for x in n]
    lines = [
        f"# Disaggregated: {row['option']} on {row['gpu']}",
        "",
        f"* {row['num_gpus']} GPUs in {row['groups']} group(s) instead of the aggregated "
        f"{row['aggregated']} ({row['aggregated_gpus']} GPUs): " + "; ".join(row.get("why") or []),
        f"* KV transfer per request (planner's estimate): {row.get('transfer_s', float('nan')):.3g} s",
        "* KV connector assumed: vLLM NixlConnector (--kv-transfer-config), SGLang mooncake "
        "(--disaggregation-transfer-backend); both need RDMA between the pools",
        "* not emitted: the router in front of the pools (vLLM's proxy, sgl-router) and a "
        "benchmark of the pair (bench.sh of the aggregated options targets one server)",
    ]
    lines += [f"* {n}" for n in notes]
    (folder / "README.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def parse_emit_release(text: str) -> tuple[str, str]:
    """``ENGINE@RELEASE`` (``vllm@0.10.1``) of ``--emit-release``."""
    engine, at, rel = text.partition("@")
    if not at or not engine.strip() or not rel.strip():
        raise PlannerError(
            f"--emit-release {shlex.quote(text)}: write ENGINE@RELEASE, e.g. vllm@0.10.1"
        )
    return engine.strip(), rel.strip()


def emit_zip(result: Any, scenario: Any, catalog: Any, **kw: Any) -> bytes:
    """The folders of :func:`emit_all` as one zip archive (for a download button)."""
    import io
    import tempfile
    import zipfile

    buf = io.BytesIO()
    with tempfile.TemporaryDirectory(prefix="planner-emit-") as tmp:
        root = Path(tmp) / "planner-deploy"
        emit_all(result, scenario, catalog, root, **kw)
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
            for p in sorted(root.rglob("*")):
                if p.is_file():
                    info = zipfile.ZipInfo(str(p.relative_to(root.parent)))
                    info.external_attr = (0o755 if p.suffix == ".sh" else 0o644) << 16
                    z.writestr(info, p.read_bytes())
    return buf.getvalue()
