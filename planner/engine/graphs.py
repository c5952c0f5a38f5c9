"""CUDA graphs off: a step model whose every step runs eagerly.

An engine that captures no CUDA (HIP) graphs (vLLM's ``enforce_eager``, SGLang's
``--disable-cuda-graph``, NVIDIA's MLPerf harness, ...) dispatches every kernel of every step
from the host, decode-only steps included: each step pays at least the eager dispatch floor
``eager_layer_s x layers`` (:attr:`~planner.catalog.efficiency.EfficiencyParams.eager_layer_s`,
the smooth maximum of :meth:`planner.engine.step.StepModel.step`). With graphs, only steps
that hold prompt tokens, or more sequences than the captured limit, are eager.
"""

from __future__ import annotations

from dataclasses import replace

from planner.engine.step import StepModel

#: the captured-batch limit that makes every step of one or more sequences eager
#: (``StepModel.spec_graph_max``: a step of more sequences than this is eager)
NO_GRAPH_MAX_SEQS = 0.5


def without_graphs(sm: StepModel) -> StepModel:
    """The same step model with no captured graphs: every step of >= 1 sequence is eager.

    Parameters
    ----------
    sm : the step model of the deployment (any layout, precision, parameters).

    Returns
    -------
    StepModel
        ``sm`` with ``spec_graph_max`` = :data:`NO_GRAPH_MAX_SEQS`, what
        ``planner.serving.replica.build_replica(graphs_off=True)`` runs.
    """
    return replace(sm, spec_graph_max=NO_GRAPH_MAX_SEQS)
