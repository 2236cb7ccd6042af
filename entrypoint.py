#!/usr/bin/env python3
"""kb-eval's entry point: the container's ENTRYPOINT and `python entrypoint.py ARGS`.

With arguments, or outside GitHub Actions, it runs exactly the code of the
`kb-eval` console script (`scanner.cli.main`). Without arguments under the
runner (GITHUB_ACTIONS set, as it is for every step), it runs Action mode,
which reads the `INPUT_*` variables and calls the same CLI code in-process.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scanner.cli import main
from scanner.foundation.workers import keep_freed_memory

if __name__ == "__main__":
    keep_freed_memory()  # the program's allocator setting, in Action mode as on the command line
    if os.environ.get("GITHUB_ACTIONS") and not sys.argv[1:]:
        from scanner.action import main as action_main

        raise SystemExit(action_main())
    raise SystemExit(main(sys.argv[1:]))
