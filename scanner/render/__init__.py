"""Outputs, one module per format, each a pure function of the run's records.

- `text`: the report people read on stdout;
- `markdown`: the step summary and the pull-request comment;
- `annotations`: GitHub annotations;
- `console`: stderr lines (warnings, findings, errors) and the one path every printed line takes;
- `phrases`: every sentence more than one output uses, written once.

The JSON files (report, history, baseline) are scanner/report's. A new output format is a new
module here that takes a `scanner.compare.report.Report`.
"""
