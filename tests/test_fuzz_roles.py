"""Every role against a server that keeps to no format: 1,000 fuzzed completions (empty, truncated, wrong marks,
unicode, huge, JSON-shaped, null content) from a scripted OpenAI-compatible server that offers no structured
outputs. Nothing crashes; each answer that does not parse is recorded as a repair, then as a fallback.

The server is a stand-in on purpose: it stands for a remote server that ignores `structured_outputs`, which the
real `scalehop serve-model` does not (tests/test_models.py checks that it honours it)."""

from __future__ import annotations

import io
import json
import random
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from explorer.models import ModelConfig, OpenAIModel
from explorer.pages import SitePages
from explorer.records import Action, Element, Observation, Prediction
from explorer.roles import RoleStats, act, predict, select
from explorer.roles.judger import llm_verdict
from explorer.transition import diff

CALLS = 1000


def fuzzed(rng: random.Random) -> str | None:
    """One completion a careless server might send."""
    valid = rng.choice(["MARK: 3\nREASON: ok", ' Navigates to "Boots"', " click [3]\nREASON: go", " yes"])
    kind = rng.randrange(9)
    if kind == 0:
        return ""
    if kind == 1:
        return valid[: rng.randrange(len(valid))]  # truncated
    if kind == 2:
        return f"MARK: {rng.randint(100, 10**6)}\nACTION: click [{rng.randint(-5, 10**9)}]"  # marks not shown
    if kind == 3:
        return "".join(
            chr(rng.choice([0x202E, 0x200B, 0x1F600, 0x4E2D, 0xFEFF, 0x0])) for _ in range(rng.randint(1, 40))
        )
    if kind == 4:
        return rng.choice(["x", "MARK: ", "\n"]) * rng.randint(10_000, 60_000)  # huge
    if kind == 5:
        return json.dumps({"mark": rng.randint(0, 9), "action": "click", "reason": None, "nested": [[[{}]]]})
    if kind == 6:
        return None  # "content": null
    if kind == 7:
        return rng.choice(['"', "[", 'ACTION: type [3] "', 'OUTCOME: Navigates to "', "REASON:", "CORRECT: maybe"])
    return valid


class _Fuzzing(BaseHTTPRequestHandler):
    rng = random.Random(0)
    served = 0

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        assert "structured_outputs" not in body  # the client was told the server offers none
        type(self).served += 1
        message = {"role": "assistant", "content": fuzzed(self.rng)}
        reply = {"choices": [{"message": message, "finish_reason": "stop"}], "usage": {}}
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def model():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Fuzzing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    config = ModelConfig(backend="openai", base_url=f"http://127.0.0.1:{server.server_port}/v1", model="fuzz")
    client = OpenAIModel(config.model_copy(update={"structured_outputs": "off", "max_retries": 0}))
    yield client
    client.close()
    server.shutdown()


def _element(mark: int, role: str, name: str, options=()) -> Element:
    return Element(
        mark=mark, tag=role, role=role, name=name, options=options, bbox=(0, 0, 1, 1), point=(0, 0), key=name
    )


ELEMENTS = [
    _element(3, "link", "Boots"),
    _element(5, "searchbox", "Search"),
    _element(8, "combobox", "Sort", ("A", "B")),
]


def _png() -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (64, 40), "white").save(out, format="PNG")
    return out.getvalue()


OBS = Observation(
    url="http://shop.test/",
    title="Shop",
    status=200,
    elements=ELEMENTS,
    screenshot=_png(),
    som_screenshot=_png(),
    text="",
    viewport=(640, 400),
)


def test_a_thousand_fuzzed_answers_crash_nothing_and_are_all_accounted(model):
    stats, rng = RoleStats(), random.Random(1)
    prediction = Prediction(navigates=False, change="Nothing visible changes.")
    transition = diff(OBS, OBS)
    answered = 0
    while _Fuzzing.served < CALLS:
        role = answered % 4
        if role == 0:
            picked = select(model, OBS, ELEMENTS, [], rng, stats)
            assert picked.action.mark in (3, 5, 8)
        elif role == 1:
            predicted = predict(model, OBS, Action.on(ELEMENTS[0]), ELEMENTS[0], "why", stats)
            assert predicted.change
        elif role == 2:
            choice = act(model, "find boots", OBS, ELEMENTS, ["click [3]"], stats)
            assert choice.action.kind in ("click", "type", "select", "hover", "scroll", "back", "stop")
            assert choice.action.mark in (None, 3, 5, 8)
        else:
            verdict = llm_verdict(
                model, Action.on(ELEMENTS[0]), prediction, transition, lambda a, b: 1.0, stats, SitePages()
            )
            assert verdict.correct in (True, False)
        answered += 1
    report = stats.report()
    assert set(report) == {"selector", "predictor", "actor", "judger"}
    for role, counts in report.items():
        assert counts["constrained"] == 0  # nothing enforced the grammar here
        assert counts["fallbacks"] <= counts["repairs"] <= counts["calls"], (role, counts)
        assert counts["repairs"] > 0 and counts["fallbacks"] > 0, (role, counts)  # the fuzz reached both paths
    assert sum(c["calls"] for c in report.values()) == answered
