"""Command-line interface (``planner = "planner.cli:main"``); see :mod:`planner.cli.main`."""

from planner.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
