"""Engine admission gates a public run states in its notes, and the TTFT wait they add.

Some engines do not look at new requests at every iteration: while decoders run, a
request that has arrived waits for the next *admission* iteration before its prompt is
scheduled. The serving simulator admits at every iteration, so the rows whose run sets
such a gate add the wait here (:func:`admission_wait`). The wait is counted in decode
iterations and converted with the row's predicted ITL median: a request arriving at a
uniformly random point of a window of ``W`` iterations waits ``W / 2`` of them on average
and up to ``W`` (the P99 takes ``W``).

Gates (each read from the run's notes; absent: no gate):

* **SGLang ``--num-continuous-decode-steps k``**: the scheduler runs ``k`` decode
  iterations before it looks at new requests ("may also increase time-to-first-token
  latency. The default value is 1", SGLang server arguments,
  docs/advanced_features/server_arguments.md).
* **SGLang ``--scheduler-recv-interval k``**: ``SchedulerRecvSkipper`` (sglang
  ``srt/managers/scheduler_recv_skipper.py``) adds the weight of the last forward mode to
  a counter (decode: 1; a prefill: 1000) and receives new requests only when the counter
  reaches ``k``: while decoding, every ``k`` iterations (default 1: at every one).
* Both at once (no public row sets both): receives every ``k_recv`` scheduler passes of
  ``k_cds`` decode iterations each, a window of ``k_cds x k_recv`` iterations.
  SGLang's window is ``W = k_cds x k_recv - 1`` iterations of waiting at most.
* **TensorRT-LLM ``batch_wait_timeout_iters n`` / ``batch_wait_max_tokens_ratio r``**
  (PyExecutor ``_waiting_requests``, tensorrt_llm/_torch/pyexecutor/py_executor.py; the
  LLM API fields "Iterations to wait before scheduling context even if token budget not
  reached" and "Threshold ratio of max_num_tokens for token accumulation before
  scheduling context"): while generation requests run, context requests are held until
  the iteration's scheduled tokens (waiting prompt tokens + one per running decoder)
  reach ``r x max_num_tokens``, or ``n`` iterations have passed. With ``C`` decoders,
  arrivals at ``lambda`` req/s of mean prompt ``I`` tokens and an iteration of ``s``
  seconds, the waiting prompt tokens grow ``lambda s I`` per iteration, so the window is
  ``W = min(n, ceil((r B - C) / (lambda s I)))`` (0 when ``C >= r B``).
* **TensorRT-LLM attention-DP balance** (``attention_dp_config: {enable_balance: true,
  timeout_iters T, batching_wait_iters b}``; PyExecutor ``_balance_adp_requests``): with
  ``R`` attention-DP ranks, context requests are held until every rank has one (or ``T``
  iterations have passed), then ``b`` more iterations while every rank decodes. New
  requests go to the ranks in turn, so ``R`` arrivals cover them: at ``lambda s``
  arrivals per iteration the window is ``W = min(T, ceil(R / (lambda s))) + b``.
  Gates of both kinds add their windows.

Not gates, but waits of the engine's loop that the simulator's loop does not have: an
overlap scheduler forms the next iteration before it receives new requests
(:func:`overlap_wait`, one iteration), and a closed-loop client's next request lands inside
an iteration already formed, where the simulator's closed loop sends it at the iteration
boundary (:func:`rearrival_wait`, half an iteration on average).

Not a gate, but a first-token cost of the engine's configuration that the throughput fit
cannot see: **trtllm-serve on TensorRT-LLM's PyTorch backend delivers the first token a
near-constant time later than the simulated engine** (InferenceX B200 / H200, DeepSeek-R1
fp4 / fp8, TP4 / TP8, 1.2.0rc6 and 1.3.0rc14: +115 to +140 ms at 1k prompts, at 4 to 64
clients, with TPOT from 8 to 25 ms). It does not occupy the engine: the same runs' TPOT
is predicted within 11-16% (MdAPE) without it, and a per-iteration cost of that size (the eager
dispatch of prompt iterations, ``ScheduledRequests.can_run_cuda_graph = not
self.context_requests`` in tensorrt_llm/_torch/pyexecutor/scheduler.py, tried at 0.25-3 ms
per layer) would raise TPOT at high concurrency by 10-15 points where it is measured
unchanged. So it is modelled as a latency of the first-token path outside the engine loop
(:func:`first_token_wait`), added to TTFT and E2E only, its value fitted on public rows
leave-one-source-out (:func:`planner.calibration.latency_fit.fit_grid_value`). The
mechanism in the source is not identified (``stream_interval`` is not it: the constant
does not scale with the ITL). :func:`trtllm_pytorch_backend` says which rows run that path:
the TensorRT backend (a compiled engine: the perf-overview tables via Triton, the C++
benchmarks, 52 rows within 9%) shows no such excess.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace

from planner.catalog.records import Frozen

_CDS = re.compile(r"num[-_]continuous[-_]decode[-_]steps[\"' =:]+(\d+)")
_RECV = re.compile(r"scheduler[-_]recv[-_]interval[\"' =:]+(\d+)")
_BW_ITERS = re.compile(r"batch_wait_timeout_iters[\"' =:]+(\d+)")
_BW_RATIO = re.compile(r"batch_wait_max_tokens_ratio[\"' =:]+([0-9.]+)")
_ADP = re.compile(r"enable_balance[\"' =:]+true", re.IGNORECASE)
_ADP_T = re.compile(r"(?<!batch_wait_)timeout_iters[\"' =:]+(\d+)")
_ADP_B = re.compile(r"batching_wait_iters[\"' =:]+(\d+)")


_PYTORCH = re.compile(r"pytorch backend|backend[\"' =:]+pytorch", re.IGNORECASE)
_ENGINE_PATH = re.compile(
    r"c\+\+ engine|tensorrtllm_backend|triton|gptmanagerbenchmark|gptsessionbenchmark"
    r"|trtllm-build|tensorrt backend|backend[\"' =:]+tensorrt\b",
    re.IGNORECASE,
)
_TRT_RELEASE = re.compile(
    r"tensorrt-llm/release[:/](\d+)\.(\d+)|^v?(\d+)\.(\d+)|^release/(\d+)\.(\d+)"
    r"|^tensorrt-llm (\d+)\.(\d+)",
    re.IGNORECASE,
)
#: first TensorRT-LLM release whose LLM API (trtllm-serve, trtllm-bench) defaults to the
#: PyTorch backend (1.0: ``from tensorrt_llm import LLM`` is the PyTorch flow, the engine
#: flow moved to ``tensorrt_llm._tensorrt_engine``; TensorRT-LLM docs 1.0.0rc2 and
#: 1.1.0rc3 torch.html); the PyTorch backend exists from 0.17
PYTORCH_DEFAULT_SINCE = (1, 0)
PYTORCH_FIRST = (0, 17)


def trtllm_pytorch_backend(framework_version: str, notes: str) -> bool | None:
    """Whether a TensorRT-LLM run serves from the PyTorch backend.

    True: the notes name the PyTorch backend, or the release is 1.0 or later and nothing
    names the engine path. False: the engine path is named (C++ engine, Triton's
    tensorrtllm_backend, gptManagerBenchmark, trtllm-build) or the release predates the
    PyTorch backend (< 0.17). None: the row does not say (an MLPerf harness, a 0.17-0.21
    release with no backend named, no release).
    """
    text = f"{framework_version} {notes}"
    if _PYTORCH.search(text):
        return True
    if _ENGINE_PATH.search(text):
        return False
    m = _TRT_RELEASE.search((framework_version or "").strip())
    if m is None:
        return None
    g = [int(x) for x in m.groups() if x is not None]
    rel = (g[0], g[1])
    if rel >= PYTORCH_DEFAULT_SINCE:
        return True
    if rel < PYTORCH_FIRST:
        return False
    return None


#: the first SGLang release whose scheduler no longer reads ``--num-continuous-decode-steps``:
#: the loop it set (``for _ in range(self.server_args.num_continuous_decode_steps - 1)``, PR
#: #1652) left the event loop with "Make constrained decoding work for overlap scheduler"
#: (sgl-project/sglang PR #2095, November 2024, before v0.4.0); the argument is still parsed
#: and has no reader: in the sglang 0.5.7 wheel from PyPI (sglang-0.5.7-py3-none-any.whl,
#: sha256 b77f9e5ca5a2ab19...) the name occurs only in srt/server_args.py (the field, line 560,
#: and its argparse entry), and ``Scheduler.event_loop_overlap`` has no decode-steps loop; read
#: 2026-12-07 (also public code index id 60259430089, an argument reference of the current tree).
#: InferenceX's AMD DeepSeek-R1 scripts (SGLang 0.5.7-0.5.12) pass ``=4``: no gate.
CONTINUOUS_DECODE_STEPS_UNREAD_SINCE = (0, 4, 0)
#: whether a run's release decides if the flag gates (False: every stated value gates, as
#: before). ON since 2026-12-07 (tenth pass), always together with the overlap scheduler's
#: one-iteration lag (``serving_rows.OVERLAP_LAG``): both are what SGLang's source runs. Held
#: out (latency_rows.py --no-scale, 566 TTFT rows): both off 22.9% / -10.5%, 268 rows within
#: 20%; both on 20.3% / -11.7%, 279 rows, band coverage 80.0%, TPOT unchanged. Alone it makes
#: SGLang AMD TTFT too fast (28.1% / -24.0%): the dead 4-step gate's wait (1.5 iterations)
#: stood in for the lag (docs/changes/2026-12-07f/sglttft.md);
#: ``scripts/latency_rows.py --sglang-release-gates`` measures it
CONTINUOUS_DECODE_STEPS_BY_RELEASE = True
_LEAD_RELEASE = re.compile(r"^\s*v?(\d+)\.(\d+)(?:\.(\d+))?")


def continuous_decode_steps(notes: str, framework_version: str = "") -> int:
    """SGLang's ``--num-continuous-decode-steps`` of a run (its notes; 1 when unstated, and
    1 when ``framework_version`` names a release that no longer reads it:
    :data:`CONTINUOUS_DECODE_STEPS_UNREAD_SINCE`)."""
    m = _CDS.search(notes)
    if m is None:
        return 1
    r = _LEAD_RELEASE.search(framework_version or "")
    if CONTINUOUS_DECODE_STEPS_BY_RELEASE and r is not None:
        rel = tuple(int(x or 0) for x in r.groups())
        if rel >= CONTINUOUS_DECODE_STEPS_UNREAD_SINCE:
            return 1
    return max(1, int(m.group(1)))


def recv_interval(notes: str) -> int:
    """SGLang's ``--scheduler-recv-interval`` of a run (its notes; 1 when unstated)."""
    m = _RECV.search(notes)
    return max(1, int(m.group(1))) if m else 1


def batch_wait(notes: str) -> tuple[int, float]:
    """TensorRT-LLM's ``(batch_wait_timeout_iters, batch_wait_max_tokens_ratio)`` of a run
    (its notes; ``(0, 0.0)``, i.e. off, when unstated)."""
    n = _BW_ITERS.search(notes)
    r = _BW_RATIO.search(notes)
    return (int(n.group(1)) if n else 0, float(r.group(1)) if r else 0.0)


def adp_balance(notes: str) -> tuple[int, int]:
    """TensorRT-LLM's attention-DP balance ``(timeout_iters, batching_wait_iters)`` of a
    run (its notes; ``(0, 0)``, i.e. off, unless ``enable_balance`` is true; TensorRT-LLM's
    defaults 50 / 10 when the run enables it without stating them)."""
    if not _ADP.search(notes):
        return 0, 0
    t = _ADP_T.search(notes)
    b = _ADP_B.search(notes)
    return (int(t.group(1)) if t else 50, int(b.group(1)) if b else 10)


class AdmissionGate(Frozen):
    """The admission gate a run states (all off: every iteration admits)."""

    continuous_decode_steps: int = 1
    recv_interval: int = 1
    batch_wait_iters: int = 0
    batch_wait_ratio: float = 0.0
    adp_timeout_iters: int = 0
    adp_batching_wait_iters: int = 0

    @property
    def off(self) -> bool:
        return (
            self.continuous_decode_steps == 1
            and self.recv_interval == 1
            and self.batch_wait_iters == 0
            and self.batch_wait_ratio == 0.0
            and self.adp_timeout_iters == 0
            and self.adp_batching_wait_iters == 0
        )

    def describe(self) -> str:
        """The gate in words (a prediction's note), e.g. 'receives every 10 iterations'."""
        parts = []
        if self.continuous_decode_steps > 1:
            parts.append(f"{self.continuous_decode_steps} decode steps per schedule")
        if self.recv_interval > 1:
            parts.append(f"receives every {self.recv_interval} iterations")
        if self.batch_wait_iters or self.batch_wait_ratio:
            parts.append(
                f"batch wait {self.batch_wait_iters} iterations / {self.batch_wait_ratio:g} of "
                "the token budget"
            )
        if self.adp_timeout_iters or self.adp_batching_wait_iters:
            parts.append(
                f"attention-DP balance, timeout {self.adp_timeout_iters} / batching wait "
                f"{self.adp_batching_wait_iters} iterations"
            )
        return ", ".join(parts)


#: run TensorRT-LLM's attention-DP balance gate inside the simulated loop
#: (``planner.serving._phases.gate_closed``: prompts held, then run whole on their ranks) in
#: place of the wait added after it (:func:`admission_wait`). OFF: a what-if
#: (changes/s14-mlperfr1.md; ``scripts/mlperf_adp_gate.py`` at the measured batch).
ADP_GATE_IN_LOOP = False


def loop_gated(rep, notes: str, fw_id: str):
    """``rep`` with the run's attention-DP balance gate in its loop (``EngineConfig.adp_gate``
    = (timeout, batching wait, ranks)) and each prompt whole on its rank (prompt share 1:
    ``_balance_requests_across_ranks`` gives a request to one rank), while
    :data:`ADP_GATE_IN_LOOP` is on, for a TensorRT-LLM attention-DP replica whose notes
    enable the balance; else ``rep`` itself."""
    t, b = adp_balance(notes)
    dp = rep.sm.attention_dp
    if not ADP_GATE_IN_LOOP or fw_id != "trtllm" or dp <= 1 or (t, b) == (0, 0):
        return rep
    sm = replace(rep.sm, adp_balanced=False, params=rep.sm.params.with_(adp_prompt_imbalance=1.0))
    return replace(rep, sm=sm, engine=replace(rep.engine, adp_gate=(t, b, dp)))


def admission_gate(notes: str, framework_version: str = "") -> AdmissionGate:
    """The gate of a run, from its notes (flags of the engine it names) and its release
    (``framework_version``: a flag the release no longer reads does not gate). With
    :data:`ADP_GATE_IN_LOOP` the attention-DP balance runs in the loop, not here."""
    n, r = batch_wait(notes)
    t, b = (0, 0) if ADP_GATE_IN_LOOP else adp_balance(notes)
    return AdmissionGate(
        continuous_decode_steps=continuous_decode_steps(notes, framework_version),
        recv_interval=recv_interval(notes),
        batch_wait_iters=n,
        batch_wait_ratio=r,
        adp_timeout_iters=t,
        adp_batching_wait_iters=b,
    )


def window_iterations(
    gate: AdmissionGate,
    *,
    decoders: float = 0.0,
    arrivals_per_iteration_tokens: float = 0.0,
    max_num_tokens: int = 0,
    dp_ranks: int = 1,
    arrivals_per_iteration: float = 0.0,
) -> float:
    """``W``: the most decode iterations a request waits for admission [iterations].

    Parameters
    ----------
    gate
        The run's gate (:func:`admission_gate`).
    decoders
        Running decoders ``C`` (TensorRT-LLM's token count includes one per decoder).
    arrivals_per_iteration_tokens
        Prompt tokens arriving per iteration, ``lambda s I`` [tokens/iteration].
    max_num_tokens
        The engine's per-iteration token budget ``B`` [tokens].
    dp_ranks
        Attention data-parallel ranks ``R`` of the replica.
    arrivals_per_iteration
        Requests arriving per iteration, ``lambda s`` [requests/iteration].
    """
    w = float(gate.continuous_decode_steps * gate.recv_interval - 1)
    if gate.batch_wait_iters > 0 or gate.batch_wait_ratio > 0:
        n = gate.batch_wait_iters if gate.batch_wait_iters > 0 else math.inf
        need = gate.batch_wait_ratio * max_num_tokens - decoders
        if gate.batch_wait_ratio <= 0:
            k = math.inf  # no token threshold: the timeout alone ends the wait
        elif need <= 0:
            k = 0.0
        elif arrivals_per_iteration_tokens > 0:
            k = float(math.ceil(need / arrivals_per_iteration_tokens))
        else:
            k = math.inf
        tw = min(n, k)
        w += 0.0 if math.isinf(tw) else tw
    if (gate.adp_timeout_iters > 0 or gate.adp_batching_wait_iters > 0) and dp_ranks > 1:
        fill = (
            math.ceil(dp_ranks / arrivals_per_iteration) if arrivals_per_iteration > 0 else math.inf
        )
        w += min(gate.adp_timeout_iters, fill) + gate.adp_batching_wait_iters
    return w


def admission_wait(
    gate: AdmissionGate,
    itl_ms: float,
    *,
    decoders: float = 0.0,
    arrivals_per_iteration_tokens: float = 0.0,
    max_num_tokens: int = 0,
    dp_ranks: int = 1,
    arrivals_per_iteration: float = 0.0,
    busy: float = 1.0,
) -> tuple[float, float]:
    """``(mean wait, P99 wait)`` [ms] a run's admission gate adds to TTFT and E2E.

    Arrivals are spread over the window, so a request waits ``W / 2`` iterations on
    average and up to ``W`` (the P99); one iteration lasts the predicted ITL median
    ``itl_ms``. Every gate holds new requests only while others decode (an idle engine
    polls at once; TensorRT-LLM: "if no generation requests, no need to wait"), so the
    mean wait is weighted by ``busy``, the share of arrivals that find a decoder running
    (closed loop: 1 from two clients, 0 for one; Poisson arrivals: ``1 - exp(-C)`` with
    ``C`` running decoders); the P99 takes ``W`` when at least 2 % of arrivals wait. Example: ``--scheduler-recv-interval 10`` alone, ITL 20 ms: ``W = 9``,
    mean 9 / 2 x 20 = 90 ms, P99 9 x 20 = 180 ms.
    """
    if gate.off or not math.isfinite(itl_ms) or itl_ms <= 0:
        return 0.0, 0.0
    w = window_iterations(
        gate,
        decoders=decoders,
        arrivals_per_iteration_tokens=arrivals_per_iteration_tokens,
        max_num_tokens=max_num_tokens,
        dp_ranks=dp_ranks,
        arrivals_per_iteration=arrivals_per_iteration,
    )
    busy = min(max(busy, 0.0), 1.0)
    return busy * w / 2 * itl_ms, (w * itl_ms if busy >= 0.02 else 0.0)


def burst_wait(
    window_s: float, arrivals_per_s: float, prefill_s: float, busy: float = 1.0
) -> tuple[float, float]:
    """``(mean wait, P99 wait)`` [ms] behind the other prompts an admission gate releases
    with a request.

    A gate (:func:`admission_wait`) does not only delay each request by part of its window:
    the requests that arrived during one window are received together, so their prompts
    queue behind each other, where arrivals spread over the window would mostly have found
    the prompts before them done. With arrivals at ``arrivals_per_s`` (Poisson) and a window
    of ``window_s`` seconds, a request arriving uniformly in the window finds on average
    ``arrivals_per_s x window_s / 2`` requests released before it, and their prompts run
    first (each ``prefill_s``: a prompt's prefill alone). Those that arrived more than one
    prefill before it would have been served without the gate as well, so the window counts
    less one prefill: mean ``busy x lambda x (window - prefill) / 2 x prefill``; the P99
    takes the whole window's arrivals ahead. The total prefill work is the same, only
    bunched, so the decoders' time (TPOT) does not change. ``prefill_s`` and
    ``arrivals_per_s`` are the replica's: under attention data parallelism the ranks share
    the prompts ahead, but each prompt's attention runs on its own rank (the replica's step
    model spreads it over all ranks), so the work ahead, divided by the replica's prefill
    rate, is the same. The gate holds requests only
    while others run: weighted by ``busy`` as :func:`admission_wait`. Example: a window of
    1.0 s, 2.4 requests/s, prefill 0.2 s: 2.4 x 0.8 / 2 = 0.96 prompts ahead, + 192 ms mean,
    P99 2.4 x 0.8 x 0.2 = 384 ms.
    """
    vals = (window_s, arrivals_per_s, prefill_s)
    if not all(math.isfinite(v) and v > 0 for v in vals) or window_s <= prefill_s:
        return 0.0, 0.0
    busy = min(max(busy, 0.0), 1.0)
    ahead = arrivals_per_s * (window_s - prefill_s)
    return busy * ahead / 2 * prefill_s * 1e3, (ahead * prefill_s * 1e3 if busy >= 0.02 else 0.0)


def overlap_wait(itl_ms: float, busy: float = 1.0) -> tuple[float, float]:
    """``(mean wait, P99 wait)`` [ms] an overlap scheduler adds to TTFT and E2E: one iteration.

    An engine that prepares iteration ``n + 1`` on the CPU while the GPU runs ``n`` (SGLang's
    overlap scheduler, TensorRT-LLM's on the PyTorch backend, vLLM's async scheduling:
    :meth:`planner.catalog.records.Framework.overlaps_host`) has already formed ``n + 1``
    when a request arriving during ``n`` is received, so that request's prompt joins
    ``n + 2`` at the earliest, one iteration later than in an engine that schedules after
    each step (the simulator's loop). SGLang's ``Scheduler.event_loop_overlap``
    (python/sglang/srt/managers/scheduler.py): ``recv_requests()``,
    ``get_next_batch_to_run()``, ``run_batch(batch)`` (a non-blocking launch), then
    ``process_batch_result`` of the *last* batch, which waits for its GPU work; the next
    ``recv_requests()`` comes after that. The idle engine polls at once, so the wait is
    weighted by ``busy``, the share of arrivals that find an iteration running (as
    :func:`admission_wait`); one iteration lasts the predicted ITL median ``itl_ms``.
    Example: ITL 20 ms, a closed loop of 8 clients (busy 1): +20 ms mean and P99.
    """
    if not math.isfinite(itl_ms) or itl_ms <= 0:
        return 0.0, 0.0
    busy = min(max(busy, 0.0), 1.0)
    return busy * itl_ms, (itl_ms if busy >= 0.02 else 0.0)


#: where in the running iteration a closed-loop client's next request lands, on average, as a
#: share of the iteration (:func:`rearrival_wait`): 0.5, a phase spread uniformly
REARRIVAL_PHASE = 0.5


def rearrival_wait(itl_ms: float, busy: float = 1.0) -> tuple[float, float]:
    """``(mean wait, P99 wait)`` [ms] a closed-loop client's next request waits for the
    iteration it lands in.

    The simulator's closed loop sends a client's next request at the instant its last one
    finishes, which is an iteration boundary, so the new prompt joins the very next
    iteration with no wait. A real client sends it only after the last token has reached it
    (the engine's output path, detokenisation, HTTP streaming) and the server has received
    and tokenised the new prompt: it lands inside an iteration the engine has already
    formed, and waits for that iteration to end (then, on an overlap scheduler, one more:
    :func:`overlap_wait`). That delay is a few ms to tens of ms against iterations of 8-95 ms,
    and varies with the prompt's length, so the landing phase is taken as spread uniformly:
    a mean wait of ``REARRIVAL_PHASE`` (0.5) iterations, at most one (the P99). Poisson
    arrivals land at random times in the simulation already, and an idle engine takes the
    request at once, so only a closed loop of two or more clients per replica (``busy`` 1)
    waits. One iteration lasts the predicted ITL median ``itl_ms``. Example: ITL 20 ms,
    8 clients: +10 ms mean, +20 ms P99.
    """
    if not math.isfinite(itl_ms) or itl_ms <= 0:
        return 0.0, 0.0
    busy = min(max(busy, 0.0), 1.0)
    return busy * REARRIVAL_PHASE * itl_ms, (itl_ms if busy >= 0.02 else 0.0)


def first_token_wait(
    framework: str, framework_version: str, notes: str, first_token_s: float | None
) -> float:
    """Latency of the first-token path outside the engine loop [s]: ``first_token_s`` for
    a TensorRT-LLM run on the PyTorch backend (:func:`trtllm_pytorch_backend` True), else
    0 (other engines, the TensorRT backend, rows that do not say, no fitted value)."""
    if not first_token_s or framework != "trtllm":
        return 0.0
    return float(first_token_s) if trtllm_pytorch_backend(framework_version, notes) else 0.0
