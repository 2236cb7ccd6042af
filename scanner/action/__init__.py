"""Action mode: the INPUT_ variables turned into a run, and its annotations, summary, comment and outputs.

`main` is what entrypoint.py calls under the runner.
"""

from scanner.action.mode import main

__all__ = ["main"]
