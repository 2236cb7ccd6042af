"""CPU time of each phase of one kb-eval run: this process and every worker it waited for.

    python bench/phase_cpu.py --kb-path DIR --golden FILE --no-history --output OUT.json

Runs kb-eval's command line in this process (every argument is kb-eval's) and prints, at the end
of each phase the run's own clock marks (scanner.pipeline.evaluate.PhaseClock), the user + system
seconds spent since the previous mark by this process and by the worker processes it has waited
for (os.times), then what came after the last phase (intervals, comparison, report written). On a
machine shared with other work, CPU compares where wall time does not. `walk_parse` includes
reading the golden file, which is planned before the KB is read.
"""

from __future__ import annotations

import os
import sys

from scanner.cli.main import main
from scanner.foundation.workers import keep_freed_memory
from scanner.pipeline import evaluate


def _cpu(times: os.times_result) -> float:
    return times.user + times.system + times.children_user + times.children_system


def run(argv: list[str]) -> int:
    marks: list[tuple[str, float]] = []
    lap = evaluate.PhaseClock.lap

    def timed(clock: evaluate.PhaseClock, phase: str) -> None:
        marks.append((phase, _cpu(os.times())))
        lap(clock, phase)

    evaluate.PhaseClock.lap = timed  # type: ignore[method-assign]
    started = _cpu(os.times())
    keep_freed_memory()  # as the program sets it (scanner.cli.main.run)
    try:
        code = main(argv)
    finally:
        evaluate.PhaseClock.lap = lap  # type: ignore[method-assign]
    ended = _cpu(os.times())
    previous = started
    for phase, at in [*marks, ("after", ended)]:
        print(f"{phase:<11} {at - previous:8.2f} s CPU", file=sys.stderr)
        previous = at
    print(f"{'total':<11} {ended - started:8.2f} s CPU (interpreter start and imports not included)", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
