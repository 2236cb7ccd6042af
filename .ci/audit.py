"""Print what pip-audit says of the pinned runtime set (requirements.lock), telling apart
"vulnerable" from "could not be audited". Informational: always exits 0, because the advisory
services are not reachable from every CI machine, and an audit that could not run must say so
instead of passing as "no known vulnerabilities" or failing the build for the wrong reason."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path


def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        output = Path(folder) / "audit.json"
        completed = subprocess.run(
            [sys.executable, "-m", "pip_audit", "--no-deps", "--disable-pip", "--requirement", "requirements.lock",
             "--format", "json", "--output", str(output)],
            capture_output=True, text=True, timeout=600, check=False,
        )
        try:
            dependencies = json.loads(output.read_text(encoding="utf-8"))["dependencies"]
        except (OSError, ValueError, KeyError):
            print(f"pip-audit: COULD NOT AUDIT (exit {completed.returncode}):\n{completed.stderr.strip()[-2000:]}")
            return 0
    vulnerable = [d for d in dependencies if d.get("vulns")]
    skipped = [d for d in dependencies if d.get("skip_reason")]
    for dependency in vulnerable:
        for vuln in dependency["vulns"]:
            fixed = ", ".join(vuln.get("fix_versions") or ["-"])
            print(f"pip-audit: VULNERABLE {dependency['name']} {dependency['version']}: {vuln['id']} (fixed in {fixed})")
    for dependency in skipped:
        print(f"pip-audit: COULD NOT AUDIT {dependency['name']}: {dependency['skip_reason']}")
    audited = len(dependencies) - len(skipped)
    print(f"pip-audit: {audited} of {len(dependencies)} pinned dependencies audited, {len(vulnerable)} vulnerable")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
