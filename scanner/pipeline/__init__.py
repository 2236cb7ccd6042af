"""One run in order: read the inputs, evaluate the head and the base, compare, gate, build the report, write."""
