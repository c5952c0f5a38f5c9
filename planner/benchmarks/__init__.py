"""Rows of the benchmark schema (``planner/benchmarks/README.md``): reading, validating and
predicting them (step rows with the engine, serving rows with the simulator)."""

from planner.benchmarks.io import load_measurements, read_rows, read_vllm_bench_json, write_rows
from planner.benchmarks.predict import Predictor, predict_file, register_metric, summarize
from planner.benchmarks.serving_rows import predict_serving_row, serving_row_details
from planner.benchmarks.step_rows import row_predictor

__all__ = [
    "Predictor",
    "load_measurements",
    "predict_file",
    "predict_serving_row",
    "read_rows",
    "read_vllm_bench_json",
    "register_metric",
    "row_predictor",
    "serving_row_details",
    "summarize",
    "write_rows",
]
