"""A real HTTP server on 127.0.0.1 for tests: replies come from `respond(method, path, body)`."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# a reply's body: bytes, or pieces sent one by one as they are made (a stream: no length, the connection closed after)
Respond = Callable[[str, str, bytes], tuple[int, bytes | Iterable[bytes]]]


class LocalServer:
    def __init__(self, respond: Respond) -> None:
        self.headers: list[dict[str, str]] = []  # each request's headers, in order
        self._local = local = threading.local()
        seen = self.headers

        class Handler(BaseHTTPRequestHandler):
            def _handle(self, method: str) -> None:
                local.headers = dict(self.headers)
                seen.append(local.headers)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status, data = respond(method, self.path, body)
                self.send_response(status)
                if not isinstance(data, bytes):
                    self.send_header("Content-Type", "text/event-stream")
                    self.end_headers()
                    for piece in data:
                        self.wfile.write(piece)
                        self.wfile.flush()
                    return
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._handle("GET")

            def do_POST(self) -> None:
                self._handle("POST")

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def request_headers(self) -> dict[str, str]:
        """The headers of the request `respond` is answering (called from inside it)."""
        return self._local.headers

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
