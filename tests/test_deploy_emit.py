"""``planner recommend --emit``: serve.sh flags of the named release, valid manifests,
bench.sh at the scenario's lengths and rate, expected.json, and the refusals."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
import yaml

from planner.catalog.layout import hosts_spanned, layout_of
from planner.deploy import flags as F
from planner.deploy.bench import bench_plan, bench_source
from planner.deploy.emit import check_target, emit_all, parse_emit_release
from planner.deploy.expected import read_expected, write_expected
from planner.deploy.serve import ENGINES, Knobs, launch
from planner.errors import PlannerError

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ["batch-offline", "chat-8b", "code-completion", "moe-r1", "rag-70b"]
OBJECTIVES = ["cost", "latency", "tokens-per-dollar", "gpus", "energy"]


def serve_flags(text: str) -> list[str]:
    """Every ``--flag`` of the exec line of a serve.sh (values and positionals dropped)."""
    cmd = text[text.index("exec ") + 5 :].split(" \\\n", 1)[1].replace("\\\n", " ")
    return [t for t in shlex.split(cmd) if t.startswith("-") and not t.lstrip("-").isdigit()]


def _command(text: str) -> str:
    return text[text.index("exec ") + 5 :].split(" \\\n")[0].replace(' "$MODEL"', "")


@pytest.fixture(scope="module")
def recs():
    """Recommendations per (scenario, objective), computed once (2 options each)."""
    from planner.catalog.catalog import load_catalog
    from planner.recommend.search import recommend
    from planner.scenario import load_scenario

    cat = load_catalog()
    cache: dict = {}

    def get(name: str, objective: str):
        if (name, objective) not in cache:
            sc = load_scenario(ROOT / "examples" / f"{name}.yaml")
            res = recommend(sc.model, sc.workload, sc.slo, catalog=cat,
                            constraints=sc.constraints, objective=objective, top_n=2,
                            engine=sc.serving.kwargs())  # fmt: skip
            cache[name, objective] = (sc, res, cat)
        return cache[name, objective]

    return get


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("name", EXAMPLES)
def test_emit_every_example(recs, tmp_path, name, objective):
    import kubernetes_validate

    sc, res, cat = recs(name, objective)
    assert res.recommendations, f"{name}/{objective}: nothing ranked"
    done = emit_all(res, sc, cat, tmp_path / "out")
    assert len(done) == len(res.recommendations)
    for folder, r in zip(done, res.recommendations, strict=True):
        f = Path(folder)
        assert {"bench.sh", "expected.json", "README.md"} <= {p.name for p in f.iterdir()}
        multi_host = hosts_spanned(layout_of(r["tp"], r["pp"], r["ep"], r["attention_dp"]),
                                   cat.gpu(r["gpu"])) > 1  # fmt: skip
        if multi_host and r["framework"] not in ("vllm", "sglang", "lmdeploy"):
            # no multi-host launcher is emitted for it (MPI / RPC): the README says why
            assert not (f / "serve.sh").exists()
            assert "no serve.sh or k8s/" in (f / "README.md").read_text()
        elif r["framework"] in ENGINES:
            text = (f / "serve.sh").read_text()
            eng = r["framework"]
            read = re.search(r"# flags read at: (\S+)", text).group(1)
            allowed = F.all_flags(eng, read)
            assert set(serve_flags(text)) <= allowed, set(serve_flags(text)) - allowed
            assert _command(text) in allowed
            for m in (f / "k8s").glob("*.yaml"):
                obj = yaml.safe_load(m.read_text())
                if obj["kind"] == "LeaderWorkerSet":
                    for t in ("leaderTemplate", "workerTemplate"):
                        tpl = obj["spec"]["leaderWorkerTemplate"][t]
                        kubernetes_validate.validate({"apiVersion": "v1", "kind": "PodTemplate",
                            "metadata": {"name": "x"}, "template": tpl}, "1.33.0", strict=True)  # fmt: skip
                else:
                    kubernetes_validate.validate(obj, "1.33.0", strict=True)
                if obj["kind"] == "Deployment":
                    assert obj["spec"]["replicas"] == r["replicas"]
                    lim = obj["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
                    assert sum(lim.values()) == r["gpus_per_replica"]
        exp = read_expected(f / "expected.json")
        bench = (f / "bench.sh").read_text()
        rate = float(re.search(r"--request-rate (\S+)", bench).group(1))
        assert rate == pytest.approx(r["latency_at_rps"], rel=1e-5)
        assert exp.workload.rate_rps_per_replica == pytest.approx(rate, rel=1e-5)
        assert exp.predicted.ttft_p99_s.value == pytest.approx(r["ttft_p99_s"])


def test_bench_fixed_lengths_and_poisson():
    """moe-r1.yaml: input and output fixed at 1000 tokens, poisson -> range ratio 0,
    burstiness 1; at 12 req/s the prompts are 12 x 300 s = 3600."""
    from planner.scenario import load_scenario

    sc = load_scenario(ROOT / "examples" / "moe-r1.yaml")
    p = bench_plan(sc.workload, 12.0)
    assert (p.input_tokens, p.output_tokens, p.range_ratio, p.burstiness) == (1000, 1000, 0, 1)
    assert p.num_prompts == 3600


def test_bench_cites_where_the_client_flags_are_defined():
    """bench.sh's flags (--random-input-len, --request-rate, --burstiness, ...) are
    ``vllm bench serve``'s, defined in vllm/benchmarks/serve.py and datasets.py; the header
    cited vllm/engine/arg_utils.py, the server's flags."""
    from planner.deploy.bench import bench_script
    from planner.workload import preset

    script = bench_script(bench_plan(preset("chat"), 2.0), "vllm", [])
    head = [x for x in script.splitlines() if x.startswith("# client:")][0]
    assert "/vllm/benchmarks/serve.py" in head and "arg_utils" not in head
    assert bench_source("x/blob/v0.13.0/vllm/engine/arg_utils.py") == (
        "x/blob/v0.13.0/vllm/benchmarks/serve.py (random dataset: vllm/benchmarks/datasets.py)"
    )


def test_bench_gamma_arrivals():
    """code-completion.yaml: gamma arrivals with cv 2 -> vllm bench's gamma shape
    (burstiness) 1 / cv^2 = 0.25; lognormal lengths run at their mean (ratio 0)."""
    from planner.scenario import load_scenario

    sc = load_scenario(ROOT / "examples" / "code-completion.yaml")
    p = bench_plan(sc.workload, 0.5)
    assert p.burstiness == pytest.approx(0.25)
    assert p.range_ratio == 0
    assert p.input_tokens == round(sc.workload.input_tokens.mean_tokens())
    assert p.num_prompts == 200  # 0.5 x 300 = 150 prompts, raised to the floor of 200
    assert any("mean" in n for n in p.notes)


# --------------------------------------------------------------------------- per engine
def _knobs(engine: str, **kw) -> Knobs:
    base = dict(model_id="llama-3.1-8b", hf_repo="meta-llama/Llama-3.1-8B", framework=engine,
                precision="bf16", kv_precision="fp8" if engine != "lmdeploy" else "int8",
                max_num_seqs=256, max_num_batched_tokens=8192, memory_utilization=0.9,
                max_model_len=8192, chunked_prefill=True, prefix_caching=True)  # fmt: skip
    if engine == "llama.cpp":
        base.update(precision="gguf-q4_k_m", kv_precision="int8")
    shape = {k: kw.pop(k) for k in ("tp", "pp", "ep", "attention_dp") if k in kw}
    base.update(kw, layout=layout_of(**shape))
    return Knobs(**base)


@pytest.mark.parametrize("engine", ENGINES)
def test_launch_uses_only_flags_of_each_read_release(engine):
    """Every read release of every engine: the launch command's flags are that release's."""
    for rel in F.load_engine_flags().engines[engine].releases:
        res = F.resolve(engine, rel.release, "test")
        if engine == "vllm" and not F.has(res, "chunked_prefill"):
            continue
        kv = {"lmdeploy": "int8", "llama.cpp": "int8"}.get(engine, "bf16")
        kw = {}
        if engine == "trtllm" and not F.has(res, "extra_options"):
            # trtllm 0.18.2: no YAML file, so no chunked prefill or block reuse to set
            # (tests/test_trtllm_flags.py has that refusal)
            kw = dict(chunked_prefill=None, prefix_caching=None)
        la = launch(_knobs(engine, kv_precision=kv, **kw), res)
        allowed = F.all_flags(engine, rel.release)
        assert set(la.flags()) <= allowed
        assert la.command in allowed


def test_vllm_renames_serve_and_speculative_flags():
    """vLLM 0.4.3 has no `vllm serve` (the API server module) and spells speculative
    decoding --speculative-model / --num-speculative-tokens; 0.10.1: --speculative-config."""
    k = _knobs("vllm", spec_method="ngram", spec_tokens=3)
    old = launch(k, F.resolve("vllm", "0.4.3", "test"))
    assert old.command == "python -m vllm.entrypoints.openai.api_server"
    assert "--model" in old.flags() and "--speculative-model" in old.flags()
    new = launch(k, F.resolve("vllm", "0.10.1", "test"))
    assert new.command == "vllm serve" and "--speculative-config" in new.flags()
    assert "--speculative-model" not in new.flags()


def test_sglang_dep_layout():
    """DEP8 on SGLang: tp-size counts all 8 ranks, dp attention 8, ep 8."""
    la = launch(_knobs("sglang", tp=1, attention_dp=8, ep=8), F.resolve("sglang", "0.5.12", "t"))
    args = dict(la.args)
    assert args["--tp-size"] == "8" and args["--dp-size"] == "8" and args["--ep-size"] == "8"
    assert "--enable-dp-attention" in args


def test_sglang_dep_chunk_and_dispatch():
    """With DP attention SGLang divides --chunked-prefill-size by dp-size (0.5.12
    server_args.py _handle_data_parallelism), so the launch passes the planner's chunk per
    rank x dp: 8,192 x 8 = 65,536; no --moe-a2a-backend (SGLang's gather)."""
    k = _knobs("sglang", tp=1, attention_dp=8, ep=8)
    la = launch(k, F.resolve("sglang", "0.5.12", "t"))
    args = dict(la.args)
    assert k.max_num_batched_tokens == 8_192
    assert args["--chunked-prefill-size"] == "65536"
    assert "--moe-a2a-backend" not in args
    assert any("moe_dispatch.yaml" in c for c in la.comments)
    # TP: the chunk as it is
    plain = dict(launch(_knobs("sglang"), F.resolve("sglang", "0.5.12", "t")).args)
    assert plain["--chunked-prefill-size"] == "8192"


def test_disaggregated_pools_launch_the_rows_speculative_decoding():
    """An xPyD answer sized with MTP (planner/recommend/disagg.py runs the option's MTP in
    both pools) launches both pools with it: SGLang --speculative-algorithm EAGLE with K."""
    from planner.catalog import load_catalog
    from planner.deploy.emit import _pool_knobs

    cat = load_catalog()
    row = {"spec_method": "mtp", "spec_tokens": 2, "acceptance_length": 2.58}
    pool = {"gpu": "nvidia-b200", "framework": "sglang", "precision": "fp8",
            "kv_precision": "fp8", "tp": 1, "ep": 8, "attention_dp": 8}  # fmt: skip
    for role in ("prefill", "decode"):
        k = _pool_knobs(pool, cat, "deepseek-r1", role, row)
        assert (k.spec_method, k.spec_tokens, k.role) == ("mtp", 2, role)
        args = dict(launch(k, F.resolve("sglang", "0.5.12", "t")).args)
        assert args["--speculative-algorithm"] == "EAGLE"
    # without speculative decoding in the row: no speculative flag
    k = _knobs("sglang")
    assert "--speculative-algorithm" not in dict(launch(k, F.resolve("sglang", "0.5.12", "t")).args)


# --------------------------------------------------------------------------- refusals
def test_ep_before_the_engine_had_it():
    with pytest.raises(PlannerError, match=r"vllm 0.7.3 has no flag for expert parallelism"):
        launch(_knobs("vllm", tp=8, ep=8), F.resolve("vllm", "0.7.3", "t"))


def test_a_value_the_release_lacks():
    """SGLang's fp8_e4m3 KV dtype is first in 0.4.2.post4 among the read releases."""
    with pytest.raises(PlannerError, match=r"sglang 0.4.1 has no value 'fp8_e4m3'"):
        launch(_knobs("sglang"), F.resolve("sglang", "0.4.1", "t"))
    la = launch(_knobs("sglang"), F.resolve("sglang", "0.4.2.post4", "t"))
    assert dict(la.args)["--kv-cache-dtype"] == "fp8_e4m3"


def test_unknown_release_lists_known():
    with pytest.raises(PlannerError, match=r"unknown vllm release '0.99.0'; known: .*0.10.1"):
        F.resolve("vllm", "0.99.0", "t", ("0.10.1",))


def test_release_older_than_every_read_one():
    with pytest.raises(PlannerError, match="older than every release whose flags were read"):
        F.resolve("vllm", "0.4.0", "t", ("0.4.0",))


def test_emit_release_syntax():
    assert parse_emit_release("vllm@0.10.1") == ("vllm", "0.10.1")
    with pytest.raises(PlannerError, match="ENGINE@RELEASE"):
        parse_emit_release("vllm")


def test_non_empty_folder_needs_force(tmp_path):
    (tmp_path / "keep.txt").write_text("x")
    with pytest.raises(PlannerError, match="not empty; add --force"):
        check_target(tmp_path, force=False)
    assert check_target(tmp_path, force=True) == tmp_path
    assert (tmp_path / "keep.txt").read_text() == "x"


def test_unwritable_folder(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(PlannerError, match="--emit .*(not a folder|cannot write)"):
        check_target(f / "sub", force=False)
    with pytest.raises(PlannerError, match="exists and is not a folder"):
        check_target(f, force=False)


def test_cli_refuses_before_searching(tmp_path, capsys):
    from planner.cli.main import main

    (tmp_path / "x").write_text("x")
    rc = main(["recommend", "examples/moe-r1.yaml", "--emit", str(tmp_path)])
    assert rc != 0
    err = capsys.readouterr().err
    assert "not empty; add --force" in err and len(err.strip().splitlines()) == 1
    rc = main(["recommend", "examples/moe-r1.yaml", "--emit", str(tmp_path / "n"),
               "--emit-release", "vllm@0.99.0"])  # fmt: skip
    assert rc != 0 and "unknown vllm release '0.99.0'" in capsys.readouterr().err


# --------------------------------------------------------------------------- expected.json
def test_expected_round_trip_and_bad_file(tmp_path, recs):
    sc, res, cat = recs("moe-r1", "cost")
    done = emit_all(res, sc, cat, tmp_path / "o", top=1)
    exp = read_expected(Path(done[0]) / "expected.json")
    d = json.loads((Path(done[0]) / "expected.json").read_text())
    assert d["schema"] == "planner-expected/1" and set(d) == {
        "schema", "planner_version", "option", "workload", "predicted", "provenance"
    }  # fmt: skip
    # throughput at the offered rate: rate x answer length (1000 tokens fixed)
    assert exp.predicted.output_throughput_tok_s.value == pytest.approx(
        exp.workload.rate_rps_per_replica * 1000
    )
    write_expected(exp, tmp_path / "again.json")
    assert read_expected(tmp_path / "again.json") == exp
    d["option"].pop("tp")
    (tmp_path / "bad.json").write_text(json.dumps(d))
    with pytest.raises(PlannerError, match="option.tp: field required"):
        read_expected(tmp_path / "bad.json")


# --------------------------------------------------------------------------- multi-node, xPyD
def test_multi_node_sglang_is_a_valid_leaderworkerset(tmp_path):
    """TP16 over two 8-GPU nodes: a LeaderWorkerSet of size 2, 8 GPUs per pod, every pod
    running serve.sh with its rank from the LWS environment; pod templates valid."""
    from planner.deploy.emit import launch_files

    k = _knobs("sglang", tp=16, nodes=2)
    res = F.resolve("sglang", "0.5.12", "t")
    files, notes = launch_files(k, res, "x", 3, 16, "nvidia", ["t"])
    lws = yaml.safe_load(files["k8s/leaderworkerset.yaml"])
    assert lws["apiVersion"] == "leaderworkerset.x-k8s.io/v1" and lws["spec"]["replicas"] == 3
    t = lws["spec"]["leaderWorkerTemplate"]
    assert t["size"] == 2
    for key in ("leaderTemplate", "workerTemplate"):
        c = t[key]["spec"]["containers"][0]
        assert c["resources"]["limits"]["nvidia.com/gpu"] == 8  # 16 GPUs / 2 nodes
        assert c["command"] == ["/planner/serve.sh"]
    flags = serve_flags(files["serve.sh"])
    assert {"--nnodes", "--node-rank", "--dist-init-addr"} <= set(flags)
    assert "deployment.yaml" not in " ".join(files)


def test_multi_node_vllm_uses_ray():
    k = _knobs("vllm", tp=8, pp=2, nodes=2)
    la = launch(k, F.resolve("vllm", "0.10.1", "t"))
    assert dict(la.args)["--distributed-executor-backend"] == "ray"
    assert la.workers == "ray" and la.before[0].startswith("ray start --head")


def test_layout_the_engine_cannot_launch_gets_a_reason_not_a_script(tmp_path):
    """TRT-LLM over two nodes (MPI launcher not emitted): the folder has bench.sh,
    expected.json and a README saying why, and no serve.sh. (Since data/model_support.yaml
    the option is DeepSeek's first TensorRT-LLM release, 0.19.0, whose flags file has no
    KV-cache dtype key either: the README gives the first reason found.)"""
    from planner.cli.main import main

    out = tmp_path / "o"
    rc = main(["recommend", "examples/moe-r1.yaml", "--gpus", "h100", "--precisions", "fp8",
               "--frameworks", "trtllm", "--emit", str(out), "--emit-top", "1",
               "--disagg", "off", "--format", "json"])  # fmt: skip
    assert rc == 0
    (folder,) = out.iterdir()
    names = {p.name for p in folder.iterdir()}
    assert "serve.sh" not in names and {"bench.sh", "expected.json", "README.md"} <= names
    text = (folder / "README.md").read_text()
    assert "no serve.sh or k8s/: trtllm 0.19.0" in text
    assert "multi-node launcher" in text or "has no flag for the KV-cache dtype" in text


def test_disaggregated_pools_that_pay_get_a_folder(tmp_path, capsys):
    """moe-r1 on H100 fp8 with SGLang: xPyD pays (the run says so); its folder holds a
    prefill/ and a decode/ serve.sh with the disaggregation role and the transfer backend."""
    from planner.cli.main import main

    out = tmp_path / "o"
    rc = main(["recommend", "examples/moe-r1.yaml", "--gpus", "h100", "--precisions", "fp8",
               "--frameworks", "sglang", "--emit", str(out), "--emit-top", "1",
               "--format", "json"])  # fmt: skip
    assert rc == 0
    rows = json.loads(capsys.readouterr().out)["summary"]["disaggregated"]
    paying = [r for r in rows if r.get("pays")]
    folders = sorted(p.name for p in out.iterdir() if p.name.startswith("disagg-"))
    assert len(folders) == len(paying) >= 1
    for role in ("prefill", "decode"):
        text = (out / folders[0] / role / "serve.sh").read_text()
        args = serve_flags(text)
        assert "--disaggregation-mode" in args and "--disaggregation-transfer-backend" in args
        assert f"--disaggregation-mode {role}" in text
        assert set(args) <= F.all_flags("sglang", re.search(r"flags read at: (\S+)", text)[1])


def test_expected_time_bands_follow_the_error_band(tmp_path, recs):
    """A time measured r x slower is a speed ratio 1/r: with the option's speed band
    [low, high], TPOT P99 lies in [tpot / high, tpot / low]."""
    sc, res, cat = recs("moe-r1", "cost")
    r = res.recommendations[0]
    eb = r["error_band"]
    exp = read_expected(Path(emit_all(res, sc, cat, tmp_path / "o", top=1)[0]) / "expected.json")
    b = exp.predicted.tpot_p99_s
    assert b.low == pytest.approx(r["tpot_p99_s"] / eb["high_ratio"])
    assert b.high == pytest.approx(r["tpot_p99_s"] / eb["low_ratio"])
    assert b.low < b.value < b.high or eb["low_ratio"] == eb["high_ratio"] == 1


def test_emit_zip_holds_the_folders(recs):
    import io
    import zipfile

    from planner.deploy import emit_zip

    sc, res, cat = recs("moe-r1", "cost")
    z = zipfile.ZipFile(io.BytesIO(emit_zip(res, sc, cat, top=1)))
    names = z.namelist()
    assert any(n.endswith("/serve.sh") for n in names)
    assert any(n.endswith("/expected.json") for n in names)
    info = next(i for i in z.infolist() if i.filename.endswith("serve.sh"))
    assert (info.external_attr >> 16) & 0o111  # executable


def test_image_is_one_the_release_ran_in():
    """SGLang 0.5.12 rows name their images: an NVIDIA GPU gets a non-ROCm one, an MI300X
    the ROCm mi30x build, both as written in data/benchmarks; a release no row names an
    image for gets the engine's repository tag, said to be assumed."""
    import csv

    from planner.deploy.emit import image_for

    texts = ""
    for p in sorted((ROOT / "data" / "benchmarks").glob("*.csv")):
        with open(p, encoding="utf-8") as fh:
            for row in csv.DictReader(fh):
                if row.get("framework") == "sglang":
                    texts += " " + (row.get("framework_version") or "")
    nv, why = image_for("sglang", "0.5.12", "nvidia", gpu="nvidia-h200-sxm")
    assert nv in texts and "rocm" not in nv and "benchmark rows" in why
    amd, _ = image_for("sglang", "0.5.12", "amd", gpu="amd-mi300x")
    assert amd in texts and "mi30x" in amd
    img, why = image_for("vllm", "0.4.3", "nvidia")
    assert img == "vllm/vllm-openai:v0.4.3" and "assumed" in why


def test_an_old_fit_whose_release_lacks_the_layout_flag_launches_the_first_release_with_it():
    """vLLM 0.7.3.dev138 (the MI300X fit's build) has no --data-parallel-size, read from
    0.8.5 (data/engine_flags.yaml): a DEP8 option fitted on it is launched with 0.8.5, the
    first read release whose flags express the layout, and the header says the prediction
    is for 0.7.3.dev138. DeepSeek-V3 ships fp8 weights: no online quantization flag."""
    from planner.catalog import load_catalog
    from planner.deploy.emit import _newer_release_with_flags, knobs_of

    cat = load_catalog()
    r = {"gpu": "amd-mi325x", "framework": "vllm", "precision": "fp8", "kv_precision": "fp8",
         "tp": 1, "pp": 1, "ep": 8, "attention_dp": 8,
         "engine_settings": {"max_num_seqs": 128, "max_num_batched_tokens": 8192}}  # fmt: skip
    old = F.resolve("vllm", "0.7.3.dev138", "the option's release", ("0.7.3.dev138",))
    k = knobs_of(r, cat, "deepseek-v3")
    with pytest.raises(PlannerError, match="data-parallel"):
        launch(k, old)
    rel, why = _newer_release_with_flags(r, old, cat, "deepseek-v3", "no flag")
    assert why is None and rel.release == rel.read == "0.8.5"
    assert "the prediction is for 0.7.3.dev138" in rel.note()
    la = launch(k, rel)
    assert ("--data-parallel-size", "8") in la.args
    assert not any(f == "--quantization" for f, _ in la.args)
    assert any("own release" in c for c in la.comments)


def test_a_precision_with_a_named_checkpoint_launches_that_checkpoint():
    """DeepSeek-V3 ships fp8 weights; its fp4 option on Blackwell loads NVIDIA's NVFP4
    checkpoint (data/models.yaml checkpoints: nvidia/DeepSeek-R1-0528-FP4-v2, archs
    [blackwell], the one InferenceX's B200 TensorRT-LLM fp4 runs serve): MODEL defaults to it,
    not to the fp8 release. On Hopper no fp4 checkpoint is named: MODEL stays the release and
    the script says to set it."""
    from planner.catalog import load_catalog
    from planner.deploy.emit import knobs_of
    from planner.deploy.serve import serve_script

    cat = load_catalog()
    rel = F.resolve("trtllm", "1.2.0rc1", "the option's release", ("1.2.0rc1",))
    r = {"gpu": "nvidia-b300", "framework": "trtllm", "precision": "fp4", "kv_precision": "fp8",
         "tp": 2, "pp": 1, "ep": 1, "attention_dp": 1, "engine_settings": {}}  # fmt: skip
    k = knobs_of(r, cat, "deepseek-v3")
    assert k.checkpoint_repo == "nvidia/DeepSeek-R1-0528-FP4-v2"
    la = launch(k, rel)
    script = serve_script(la, k, [])
    assert 'MODEL="${MODEL:-nvidia/DeepSeek-R1-0528-FP4-v2}"' in script
    assert not any("names none" in c for c in la.comments)
    hopper = knobs_of({**r, "gpu": "nvidia-h200-sxm"}, cat, "deepseek-v3")
    assert hopper.checkpoint_repo is None
    assert any("names none" in c for c in launch(hopper, rel).comments)


def test_a_precision_without_a_checkpoint_needs_model_set():
    """gpt-oss-120b ships MXFP4 (fp4) weights; its fp8 option on an H200 with TensorRT-LLM
    has no checkpoint in data/models.yaml and TensorRT-LLM quantizes nothing on load. serve.sh
    defaulted MODEL to openai/gpt-oss-120b: run as emitted (or from k8s/, which sets no MODEL)
    it served the MXFP4 weights where the plan predicted fp8. Now it stops, naming what to set;
    the fp4 option (the release's own format) keeps the release as its default."""
    from planner.catalog import load_catalog
    from planner.deploy.emit import knobs_of
    from planner.deploy.serve import serve_script

    cat = load_catalog()
    rel = F.resolve("trtllm", "1.0.0", "the option's release", ("1.0.0",))
    r = {"gpu": "nvidia-h200-sxm", "framework": "trtllm", "precision": "fp8",
         "kv_precision": "fp8", "tp": 4, "pp": 1, "ep": 1, "attention_dp": 1,
         "engine_settings": {}}  # fmt: skip
    k = knobs_of(r, cat, "gpt-oss-120b")
    script = serve_script(launch(k, rel), k, [])
    assert 'MODEL="${MODEL:?set MODEL to a fp8 checkpoint of gpt-oss-120b}"' in script
    native = knobs_of({**r, "precision": "fp4"}, cat, "gpt-oss-120b")
    assert 'MODEL="${MODEL:-openai/gpt-oss-120b}"' in serve_script(launch(native, rel), native, [])


def test_a_model_asked_by_an_alias_launches_the_weights_asked_for():
    """models.yaml lists DeepSeek-R1 as an alias of deepseek-v3 (the same architecture, other
    weights); a question about deepseek-r1 emitted MODEL=deepseek-ai/DeepSeek-V3. MODEL is the
    alias that is a Hugging Face id named as asked; the catalog id keeps its hf_repo, and an
    alias that names no Hugging Face id (llama3.1-70b) keeps it too."""
    from planner.catalog import load_catalog
    from planner.deploy.emit import asked_repo, knobs_of

    cat = load_catalog()
    r = {"gpu": "nvidia-h200-sxm", "framework": "vllm", "precision": "fp8", "kv_precision": "fp8",
         "tp": 8, "pp": 1, "ep": 1, "attention_dp": 1, "engine_settings": {}}  # fmt: skip
    assert knobs_of(r, cat, "deepseek-r1").model_repo == "deepseek-ai/DeepSeek-R1"
    assert knobs_of(r, cat, "deepseek-ai/DeepSeek-R1-0528").model_repo == (
        "deepseek-ai/DeepSeek-R1-0528"
    )
    assert knobs_of(r, cat, "deepseek-v3").model_repo == "deepseek-ai/DeepSeek-V3"
    m70 = cat.model("llama-3.1-70b")
    assert asked_repo(m70, "llama3.1-70b") is None
    assert asked_repo(m70, "meta-llama/Llama-3.1-70B-Instruct") == (
        "meta-llama/Llama-3.1-70B-Instruct"
    )
