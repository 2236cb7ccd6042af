"""A search server over a folder of Markdown, for the per-side server tests: started by
--serve-command with the side's {kb} and {port}, it answers POST /search {"query", "limit"} with
the files sharing the most words with the query. It also says which folder it indexed
(GET /folder), so a test can tell which side's tree answered.

    python folder_search_server.py KB PORT [--exit-at-once | --never-listen | --pid-file FILE]
"""

from __future__ import annotations

import json
import re
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

WORD = re.compile(r"[a-z0-9]+")


def main() -> int:
    kb, port, *options = sys.argv[1:]
    if "--exit-at-once" in options:
        sys.stderr.write("error: SEARCH_API_KEY is not set\nfatal: cannot start\n")
        return 3
    if "--never-listen" in options:
        time.sleep(3600)
        return 0
    if "--pid-file" in options:
        Path(options[options.index("--pid-file") + 1]).write_text(str(__import__("os").getpid()))
    root = Path(kb)
    documents = {
        path.relative_to(root).as_posix(): set(WORD.findall(path.read_text(encoding="utf-8").lower()))
        for path in sorted(root.rglob("*.md"))
    }

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            self._answer({"folder": str(root)})

        def do_POST(self) -> None:
            asked = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            words = set(WORD.findall(str(asked["query"]).lower()))
            scored = sorted(
                ((len(words & document), path) for path, document in documents.items() if words & document),
                key=lambda item: (-item[0], item[1]),
            )
            self._answer({"results": [{"path": path, "score": score} for score, path in scored[: int(asked["limit"])]]})

        def _answer(self, body: object) -> None:
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    ThreadingHTTPServer(("127.0.0.1", int(port)), Handler).serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
