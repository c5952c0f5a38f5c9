"""vLLM's API-server process as a queue ahead of the engine (issue 32, TTFT). OFF.

vLLM's OpenAI server parses, templates and tokenises each request in one Python process
before the engine core gets it (vLLM PR #12287, #17546: ``--api-server-count`` exists
because one such process limits request throughput). Modelled here as a FIFO queue with
a fixed service time per request and ``servers`` identical servers ahead of admission:
a request reaches the engine when the front end has served it, and its TTFT still counts
from the moment the client sent it.

**OFF** (:data:`FRONTEND_QUEUE` False). No public source gives the single API server's
service time per request; the published figures are whole-run request rates on ShareGPT
(70.8-80 req/s in PR #12287, 76.5 req/s achieved at 120 req/s offered in PR #17546), which
mix the per-request cost with per-token streaming. :data:`SERVICE_S_PER_REQUEST` is a value
chosen for the experiment of docs/changes/2026-12-10/apiserver.md (scored there held out: it does not
improve TTFT and cannot, since an ingest queue keeps a burst's mean TTFT at half the run's
length). Nothing is fitted from it.
"""

from __future__ import annotations

import numpy as np

#: the switch (docs/changes/2026-12-10/apiserver.md: scored held out, not better: OFF)
FRONTEND_QUEUE = False
#: per-request service time of one API-server process [s]: CHOSEN, not published. 4 ms is
#: the most GPUStack's fastest vLLM burst allows (1000 requests in 4.05 s); the experiment
#: of docs/changes/2026-12-10/apiserver.md also tried 1, 2, 8.3 (PR #17546's 120 req/s) and 13 ms
#: (PR #12287's ShareGPT request rate)
SERVICE_S_PER_REQUEST = 0.004
#: engines whose OpenAI server is modelled (vLLM's ``vllm serve`` / api_server)
ENGINES = frozenset({"vllm"})
#: the launch text that says the run went through the OpenAI server (not the offline LLM
#: class or a harness)
_SERVER_MARKS = ("vllm server", "vllm serve", "api_server", "openai")


def ingest_departures(arrival_s, service_s: float, servers: int = 1) -> np.ndarray:
    """Times [s] at which a FIFO front end of ``servers`` servers has served each request.

    Deterministic service ``service_s`` [s] per request; request k (arrival order) takes the
    server freed first, so with equal service times d_k = max(a_k, d_{k-servers}) + s.

    Parameters
    ----------
    arrival_s : array of arrival times [s], non-decreasing
    service_s : service time per request [s], >= 0
    servers : API-server processes (vLLM ``--api-server-count``), >= 1

    Returns
    -------
    numpy.ndarray
        departure times [s], same order as ``arrival_s``
    """
    a = np.asarray(arrival_s, float)
    if servers < 1 or service_s < 0:
        raise ValueError("servers must be >= 1 and service_s >= 0")
    d = np.empty_like(a)
    for k in range(len(a)):
        free = d[k - servers] if k >= servers else -np.inf
        d[k] = max(a[k], free) + service_s
    return d


def frontend_service_s(fw_id: str | None, launch_text: str | None) -> float | None:
    """The front end's service time per request [s] for a row, None where not modelled
    (switch off, another engine, or a launch that does not name the OpenAI server)."""
    if not FRONTEND_QUEUE or (fw_id or "").lower() not in ENGINES:
        return None
    text = (launch_text or "").lower()
    if not any(k in text for k in _SERVER_MARKS):
        return None
    return float(SERVICE_S_PER_REQUEST) if SERVICE_S_PER_REQUEST > 0 else None
