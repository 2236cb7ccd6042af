"""The JSON files kb-eval writes and reads back: the report and its schema, history entries and baselines, the one serialiser."""
