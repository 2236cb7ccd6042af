"""The argument parser every kb-eval command uses: a usage error is exit 2, in the command's name."""

from __future__ import annotations

import argparse
import sys

from scanner.foundation.errors import ExitCode


class Parser(argparse.ArgumentParser):
    """argparse's parser with its error exit (2, argparse's too) named by the exit-code table and
    its message prefixed with the command (`kb-eval init: error: ...`)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(ExitCode.BAD_INPUT)
