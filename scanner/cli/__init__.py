"""The kb-eval command line: argument parsing and wiring (`main`), and `kb-eval init`.

`scanner.cli:run` is the console script's entry point and `scanner.cli.main` what entrypoint.py
calls; both names stay here so installed scripts and the image keep working.
"""

from scanner.cli.main import main, run

__all__ = ["main", "run"]
