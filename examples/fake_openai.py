"""A stand-in for an OpenAI-compatible model server, on loopback, so the recipes run offline.

It speaks the real Chat Completions protocol (`POST /v1/chat/completions`, JSON or a
server-sent-event stream), so the frameworks use their ordinary OpenAI clients against it. Its
"model" is one rule: it answers a ticket with priority `urgent` when its instructions carry
Lore's learned rule about many customers, and `normal` otherwise, so a recipe can show the
agent changing after a correction.

    python examples/fake_openai.py 8088        # serve until stopped
    from fake_openai import start; url = start()  # or in-process, on a free port
"""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

RULE = "priority must be urgent"


def answer(messages: list) -> str:
    said = " ".join(
        part.get("text", "") if isinstance(part, dict) else str(part)
        for m in messages
        for part in (m.get("content") if isinstance(m.get("content"), list) else [m.get("content") or ""])
    )
    priority = "urgent" if RULE in said else "normal"
    return json.dumps({"summary": "Checkout fails for EU customers.", "priority": priority})


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:  # quiet: the recipe prints what matters
        pass

    def _json(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": "fake-model", "object": "model", "owned_by": "lore-examples"}]})
        else:
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        request = json.loads(self.rfile.read(length) or b"{}")
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})
            return
        text = answer(request.get("messages", []))
        created = int(time.time())
        model = request.get("model", "fake-model")
        usage = {"prompt_tokens": 50, "completion_tokens": 12, "total_tokens": 62}
        if request.get("stream"):
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": created, "model": model}
            chunks = [
                {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None}]},
                {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            ]
            if (request.get("stream_options") or {}).get("include_usage"):
                chunks.append({**base, "choices": [], "usage": usage})
            for chunk in chunks:
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")
            return
        self._json(
            200,
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": usage,
            },
        )


def start(port: int = 0) -> str:
    """Serves in a background thread; returns the base URL (ending in /v1)."""
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/v1"


if __name__ == "__main__":
    url = start(int(sys.argv[1]) if len(sys.argv) > 1 else 8088)
    print(f"fake OpenAI-compatible model at {url}", flush=True)
    threading.Event().wait()
