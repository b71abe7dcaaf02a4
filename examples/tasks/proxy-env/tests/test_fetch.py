import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from fetch import get_bytes, get_json


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"ok": True, "path": self.path}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    srv = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_port}"
    srv.shutdown()


def test_get_bytes(server):
    assert b'"ok": true' in get_bytes(server + "/x")


def test_get_json(server):
    assert get_json(server + "/y") == {"ok": True, "path": "/y"}
