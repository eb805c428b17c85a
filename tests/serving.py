"""`scalehop serve-model` on a background thread, for tests of the openai backend (the stand-in for vLLM)."""

from __future__ import annotations

import contextlib
import threading
import time

import httpx
import uvicorn

from explorer.models import ModelConfig
from explorer.models.server import build_server


@contextlib.contextmanager
def running(server: uvicorn.Server):
    """Run a uvicorn server on a background thread; yields its base URL."""
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        assert thread.is_alive(), "server failed to start"
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def bare_server() -> uvicorn.Server:
    """serve-model with no adapter at start, on a free port."""
    server = build_server(ModelConfig(dtype="float32"), host="127.0.0.1", port=0)
    server.config.log_level = "warning"
    return server


def served(base_url: str) -> dict[str, dict]:
    """The server's /v1/models cards by id."""
    return {card["id"]: card for card in httpx.get(f"{base_url}/models").json()["data"]}
