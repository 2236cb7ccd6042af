"""Outputs, one module per format, each a pure function of the run's records.

- `json_report`: the JSON report, history entries and baselines (one serialiser for every file);
- `text`: the report people read on stdout;
- `markdown`: the step summary and the pull-request comment;
- `annotations`: GitHub annotations;
- `console`: stderr lines (warnings, findings, errors) and the one path every printed line takes;
- `phrases`: every sentence more than one output uses, written once.

A new output format is a new module here that takes a `scanner.evaluation.records.Report`.
"""
