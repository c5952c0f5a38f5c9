"""From a recommended option to a running deployment, and back: its benchmark results."""
