"""coderig.Rig with a kind = "openai" agent (the binding is built with the
core's `http` feature), against a small OpenAI-compatible server on
127.0.0.1: real HTTP, a streamed chat completion, a provider error."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import coderig


class Provider(BaseHTTPRequestHandler):
    """GET /v1/models; POST /v1/chat/completions streams "hello world" with
    usage, or answers 429 when the model is "busy"."""

    requests = []

    def log_message(self, *args):
        pass

    def _send(self, status, body, content_type="application/json"):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/v1/models":
            self._send(200, json.dumps({"object": "list", "data": [
                {"id": "tiny-coder", "object": "model"}, {"id": "busy", "object": "model"}]}))
        else:
            self._send(404, "{}")

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Provider.requests.append(body)
        if body.get("model") == "busy":
            self._send(429, json.dumps({"error": {
                "message": "Rate limit reached for requests", "type": "rate_limit_error"}}))
            return
        chunks = [
            {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "hello"}}]},
            {"choices": [{"index": 0, "delta": {"content": " world"}}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 2,
                                      "total_tokens": 9}},
        ]
        stream = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
        self._send(200, stream, "text/event-stream")


@pytest.fixture(scope="module")
def base_url():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Provider)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_an_openai_agent_streams_a_turn_over_http(base_url):
    rig = coderig.Rig(agents={"local": {"kind": "openai", "base_url": base_url, "lane": "local"}})
    (info,) = rig.agents()
    assert (info["kind"], info["lane"], info["reachable"]) == ("openai", "local", True)
    assert info["models"] == ["tiny-coder", "busy"]
    turn = rig.run_turn("local", "tiny-coder", "say hello", system="be brief", timeout=10)
    events = list(turn.events())
    texts = [e["text"] for e in events if e["type"] == "text_delta"]
    assert "".join(texts) == "hello world"
    assert events[-1]["type"] == "finished"
    outcome = turn.wait()
    assert outcome["final_text"] == "hello world"
    assert (outcome["usage"]["input"], outcome["usage"]["output"]) == (7, 2)
    sent = Provider.requests[-1]
    assert sent["model"] == "tiny-coder" and sent["stream"] is True
    assert sent["messages"][0] == {"role": "system", "content": "be brief"}


def test_a_provider_error_raises_agent_error_with_status_and_class(base_url):
    rig = coderig.Rig(agents={"local": {"kind": "openai", "base_url": base_url}})
    with pytest.raises(coderig.AgentError) as raised:
        rig.run_turn("local", "busy", "hi", timeout=10).wait()
    details = raised.value.details
    assert details["agent_error"] == "provider"
    assert (details["http_status"], details["class"]) == (429, "retry")


def test_an_unreachable_server_is_listed_as_such():
    rig = coderig.Rig(agents={"gone": {"kind": "openai", "base_url": "http://127.0.0.1:9/v1"}})
    (info,) = rig.agents(probe_timeout=2)
    assert info["reachable"] is False and info["error"]
