"""What every part stands on: the error type and exit codes, diagnostics, text from untrusted input made safe to show, progress lines, worker processes, YAML node checks."""
