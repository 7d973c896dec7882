"""The four faces follow a run the same way: same events, same order, same end.

One flow spec, run once through each face on its own real SQLite store:

- HTTP: `coderig serve`, `POST /api/runs`, then `GET /api/events?run_id=`
  (SSE) read until the run's final `run_updated`;
- CLI: `coderig run FLOW.json --json` (every stored event as a JSON line,
  then the final view);
- Python: `Rig.run_flow(...)`, `run.events()` (sync) and `wait()`;
- Node: `new Rig(...).runFlow(...)`, `for await (... of run.events())`.

The streams are compared as (type, step, status, attempt, skip reason)
tuples: equal in every face. A second scenario cancels a run while its
first step sleeps: every face's stream has each step's `cancelled` update
before the run's, and the first read after the cancel returned (HTTP and
Python) shows no live step. Real processes, real HTTP on loopback, no mock.

Usage: python tests/faces/agree.py BIN_DIR  (the cargo build's directory
of binaries, holding `coderig`; the Python module importable; crates/node
built).
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIVE_STEP = {"pending", "running", "waiting"}
FINAL_RUN = {"completed", "failed", "cancelled"}

# A chain with a failure, a skip and an all_done join: deterministic order.
FLOW = {
    "name": "agree",
    "steps": [
        {"id": "first", "kind": "command", "shell": "echo one"},
        {"id": "broken", "kind": "command", "deps": ["first"], "shell": "exit 3"},
        {"id": "skipped", "kind": "command", "deps": ["broken"], "shell": "echo never"},
        {"id": "cleanup", "kind": "command", "deps": ["skipped"], "trigger_rule": "all_done",
         "shell": "echo done"},
    ],
}
# The first step sleeps until it is cancelled.
SLOW = {
    "name": "slow",
    "steps": [
        {"id": "sleep", "kind": "command", "shell": "sleep 60"},
        {"id": "after", "kind": "command", "deps": ["sleep"], "shell": "echo after"},
    ],
}


def key(event):
    """What must agree: the event's type and, for steps, which, how, which attempt."""
    return (
        event["type"],
        event.get("step_id"),
        event.get("status"),
        event.get("attempt"),
        event.get("skip_reason"),
    )


def stored(events):
    """The stored events (live agent_output has no seq)."""
    return [e for e in events if "seq" in e]


def check_stream(face, events):
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(set(seqs)), f"{face}: seqs not strictly increasing: {seqs}"
    last = events[-1]
    assert last["type"] == "run_updated" and last["status"] in FINAL_RUN, f"{face}: ends with {last}"
    finals = [e for e in events if e["type"] == "run_updated" and e["status"] in FINAL_RUN]
    assert len(finals) == 1, f"{face}: {len(finals)} final run updates"
    # Every step's last update before the end is final.
    latest = {}
    for e in events:
        if e["type"] == "step_updated":
            latest[e["step_id"]] = e["status"]
    live = {s: st for s, st in latest.items() if st in LIVE_STEP}
    assert not live, f"{face}: the stream ended with live steps {live}"


def assert_no_live_step(face, view):
    live = [(s["id"], s["status"]) for s in view["steps"] if s["status"] in LIVE_STEP]
    assert not live, f"{face}: after the cancel returned, steps are still {live}"


class Server:
    def __init__(self, binary, data, root):
        self.log = open(os.path.join(data, "serve.log"), "w+")
        self.proc = subprocess.Popen(
            [binary, "serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", data,
             "--project-root", root],
            stdout=self.log, stderr=subprocess.STDOUT, cwd=root, env=clean_env())
        deadline = time.time() + 60
        self.url = None
        while time.time() < deadline and self.url is None:
            self.log.seek(0)
            for line in self.log.read().splitlines():
                if line.startswith("coderig listening on "):
                    self.url = line.split("coderig listening on ", 1)[1].strip()
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        if self.url is None:
            self.log.seek(0)
            raise SystemExit("coderig serve did not start:\n" + self.log.read())

    def call(self, method, path, body=None):
        request = urllib.request.Request(
            self.url + path, method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.load(response)

    def events(self, run_id, on_event=None):
        """The run's SSE stream from the start, until its final run_updated."""
        request = urllib.request.Request(f"{self.url}/api/events?run_id={run_id}&after=0")
        out = []
        with urllib.request.urlopen(request, timeout=120) as response:
            data = []
            for raw in response:
                line = raw.decode().rstrip("\n").rstrip("\r")
                if line.startswith("data:"):
                    data.append(line[5:].lstrip())
                elif line == "" and data:
                    event = json.loads("\n".join(data))
                    data = []
                    out.append(event)
                    if on_event:
                        on_event(event)
                    if event.get("type") == "run_updated" and event.get("status") in FINAL_RUN:
                        return out
        raise AssertionError("the SSE stream closed before the run ended")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


def clean_env():
    env = dict(os.environ)
    env.pop("DATABASE_URL", None)
    env.pop("CODERIG_CONFIG", None)
    return env


def via_http(binary, base, spec, cancel=False):
    data = os.path.join(base, "http")
    os.makedirs(data)
    server = Server(binary, data, base)
    try:
        run_id = server.call("POST", "/api/runs", {"spec": spec, "input": {}})["run_id"]
        after_cancel = {}

        def on_event(event):
            if cancel and not after_cancel and event.get("type") == "step_updated" \
                    and event.get("status") == "running":
                after_cancel["view"] = server.call("POST", f"/api/runs/{run_id}/cancel")

        events = server.events(run_id, on_event)
        if cancel:
            assert_no_live_step("http", after_cancel["view"])
        return events
    finally:
        server.stop()


def via_cli(binary, base, spec, cancel=False):
    data = os.path.join(base, "cli")
    os.makedirs(data)
    flow = os.path.join(data, "flow.json")
    with open(flow, "w") as f:
        json.dump(spec, f)
    proc = subprocess.Popen(
        [binary, "run", flow, "--json", "--data-dir", data, "--project-root", base],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=base, env=clean_env(), text=True)
    events = []
    for line in proc.stdout:
        value = json.loads(line)
        if value.get("type") == "run":
            continue
        events.append(value)
        if cancel and value.get("type") == "step_updated" and value.get("status") == "running":
            proc.send_signal(signal.SIGINT)
    proc.wait(timeout=120)
    stderr = proc.stderr.read()
    assert events, f"cli: no events; stderr:\n{stderr}"
    return events


def via_python(base, spec, cancel=False):
    import coderig
    data = os.path.join(base, "py")
    rig = coderig.Rig(data_dir=data, project_roots=[base])
    run = rig.run_flow(spec, {})
    events = []
    for event in run.events():
        events.append(event)
        if cancel and event.get("type") == "step_updated" and event.get("status") == "running":
            view = run.cancel()
            assert_no_live_step("python", view)
    view = run.wait(60)
    assert view["status"] in FINAL_RUN
    return events


NODE_SCRIPT = r"""
const { Rig } = require(process.argv[1])
const [data, root, specText, cancel] = process.argv.slice(2)
;(async () => {
  const rig = new Rig({ dataDir: data, projectRoots: [root] })
  const run = await rig.runFlow(JSON.parse(specText), {})
  for await (const event of run.events()) {
    process.stdout.write(JSON.stringify(event) + '\n')
    if (cancel === '1' && event.type === 'step_updated' && event.status === 'running') {
      const view = await run.cancel()
      const live = view.steps.filter((s) => ['pending', 'running', 'waiting'].includes(s.status))
      if (live.length) { console.error('live after cancel', live); process.exit(9) }
    }
  }
  process.exit(0)
})().catch((e) => { console.error(e); process.exit(1) })
"""


def via_node(base, spec, cancel=False):
    data = os.path.join(base, "node")
    out = subprocess.run(
        ["node", "-e", NODE_SCRIPT, os.path.join(ROOT, "crates", "node"), data, base,
         json.dumps(spec), "1" if cancel else "0"],
        capture_output=True, text=True, timeout=180, cwd=base, env=clean_env())
    assert out.returncode == 0, f"node: exit {out.returncode}\n{out.stderr}"
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def scenario(binary, spec, cancel):
    base = os.path.realpath(tempfile.mkdtemp(prefix="coderig-agree-"))
    try:
        streams = {
            "http": via_http(binary, base, spec, cancel),
            "cli": via_cli(binary, base, spec, cancel),
            "python": via_python(base, spec, cancel),
            "node": via_node(base, spec, cancel),
        }
    finally:
        shutil.rmtree(base, ignore_errors=True)
    keys = {}
    for face, events in streams.items():
        events = stored(events)
        check_stream(face, events)
        keys[face] = [key(e) for e in events]
    reference = keys["http"]
    for face, seq in keys.items():
        assert seq == reference, (
            f"{face} differs from http:\n  {face}: {seq}\n  http: {reference}")
    if cancel:
        cancelled = [k for k in reference if k[0] == "step_updated" and k[2] == "cancelled"]
        assert {k[1] for k in cancelled} == {s["id"] for s in spec["steps"]}, reference
        assert reference[-1][:3] == ("run_updated", None, "cancelled"), reference
    return reference


def main():
    binary = os.path.abspath(os.path.join(sys.argv[1], "coderig"))
    done = scenario(binary, FLOW, cancel=False)
    print(f"faces agree on a finished run: {len(done)} events, ending {done[-1][:3]}")
    cancelled = scenario(binary, SLOW, cancel=True)
    print(f"faces agree on a cancelled run: {len(cancelled)} events, ending {cancelled[-1][:3]}")


if __name__ == "__main__":
    main()
