"""The record every output renders: a run, what it was compared with, and the gate's verdict.

It lives above the comparison and the gate rather than beside the run record, so the run record
never refers up to what is computed from it.
"""

from __future__ import annotations

from dataclasses import dataclass

from scanner.compare.comparison import Comparison
from scanner.compare.gate import GateResult
from scanner.evaluation.records import RunRecord


@dataclass(frozen=True, slots=True)
class Report:
    """A run, what it was compared with, and the gate's verdict: what every output renders."""

    run: RunRecord
    comparison: Comparison
    gate: GateResult
