#!/usr/bin/env python3
"""kb-eval's entry point: the container's ENTRYPOINT and `python entrypoint.py ARGS`.

It runs exactly the code of the `kb-eval` console script (`scanner.cli.main`).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scanner.cli import main

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
