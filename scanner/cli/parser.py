"""The argument parser every kb-eval command uses: a usage error is exit 2, in the command's name."""

from __future__ import annotations

import argparse
import difflib
import sys

from scanner.foundation.errors import ExitCode


class Parser(argparse.ArgumentParser):
    """argparse's parser with its error exit (2, argparse's too) named by the exit-code table and
    its message prefixed with the command (`kb-eval init: error: ...`)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        sys.stderr.write(f"{self.prog}: error: {message}{self.suggestion(message)}\n")
        raise SystemExit(ExitCode.BAD_INPUT)

    def suggestion(self, message: str) -> str:
        """`; did you mean --kb-path?` for each unknown flag close to a declared one (argparse's
        own suggestions arrive with Python 3.14; the flags are the parser's, so the declaration's)."""
        if not message.startswith("unrecognized arguments: "):
            return ""
        declared = [flag for action in self._actions for flag in action.option_strings if flag.startswith("--")]
        meant = []
        for word in message.removeprefix("unrecognized arguments: ").split():
            if not word.startswith("--"):
                continue
            near = difflib.get_close_matches(word.split("=", 1)[0], declared, n=1, cutoff=0.75)
            if near:
                meant.append(near[0])
        return f"; did you mean {' or '.join(dict.fromkeys(meant))}?" if meant else ""
