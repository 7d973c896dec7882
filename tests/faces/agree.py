"""The four faces follow a run and a battle the same way: same events, same
order, same end.

One flow spec and one battle spec, each run once through each face on its
own real SQLite store:

- HTTP: `coderig serve`, `POST /api/runs` / `POST /api/battles`, then
  `GET /api/events?run_id=` / `?battle_id=` (SSE) read until the subject's
  final update;
- CLI: `coderig run FLOW.json --json` / `coderig battle run ... --json`
  (every stored event as a JSON line, then the final view);
- Python: `Rig.run_flow(...)` / `Rig.start_battle(...)`, `.events()`
  (sync) and `wait()`;
- Node: `rig.runFlow(...)` / `rig.startBattle(...)`, `for await (... of
  .events())`.

The streams are compared as (type, step or contestant, status, attempt,
skip reason) tuples: equal in every face. A second scenario of each cancels
(stops) the subject while its first step or contestant works: every face's
stream has each member's `cancelled` update before the subject's, and the
first read after the cancel returned (HTTP, Python, Node) shows no live
member. The battle is a qa battle of scripted agents (the local lane runs
its contestants one at a time, so its order is the same everywhere). Real
processes, real HTTP on loopback, no mock.

The faces also refuse alike: each bad flow spec and battle spec of
`BAD_FLOWS` and `BAD_BATTLES` is refused by every face that can be given it
(the CLI takes a flow spec as a file and a battle as flags, so it is given
the flow specs and the battles its flags can say) with the same kind, code,
message, `path` and `problems`, and nothing is created.

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
FINAL = {"completed", "failed", "cancelled"}


class Subject:
    """What differs between following a run and a battle."""

    def __init__(self, name, final_type, member_type, member_key, members, live):
        self.name, self.final_type = name, final_type
        self.member_type, self.member_key = member_type, member_key
        # The members' list in the subject's view, and their live statuses.
        self.members, self.live = members, live

    def is_final(self, event):
        return event.get("type") == self.final_type and event.get("status") in FINAL

    def starts_work(self, event):
        return event.get("type") == self.member_type and event.get("status") == "running"

    def member(self, event):
        """A step's id, or a contestant's place (`c1`): its id holds the battle's."""
        value = event.get(self.member_key)
        return value.rsplit("-", 1)[-1] if value and self.name == "battle" else value


RUN = Subject("run", "run_updated", "step_updated", "step_id", "steps",
              {"pending", "running", "waiting"})
BATTLE = Subject("battle", "battle_updated", "contestant_updated", "contestant_id", "contestants",
                 {"queued", "running"})

# Scripted agents: alice answers at once ("slow" never returns, for the stop);
# bob answers too. The judge is alice.
AGENTS = """[agents.alice]
kind = "scripted"
script = [ { text = "done" } ]
scripts = { slow = [ { hang = true } ] }
[agents.bob]
kind = "scripted"
script = [ { text = "hi" } ]
"""


def battle(first_model):
    return {"battle_type": "qa", "prompt": "Say hi.",
            "contestants": [{"identity": "alice", "model": first_model},
                            {"identity": "bob", "model": "m1"}],
            "judge": {"identity": "alice", "model": "j"}}

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


# Mistakes every face must refuse alike (name, spec). A flow spec's paths are
# its own (`steps[1].deps[0]`), whichever face is given it.
BAD_FLOWS = [
    ("an unknown field", {"steps": [{"id": "a", "kind": "command", "shell": "true", "sheel": 1}]}),
    ("a field of the wrong type", {"steps": [{"id": "a", "kind": "command", "shell": 5}]}),
    ("a dependency cycle", {"steps": [
        {"id": "a", "kind": "command", "shell": "true", "deps": ["b"]},
        {"id": "b", "kind": "command", "shell": "true", "deps": ["a"]}]}),
    ("an unknown dependency and a bad condition at once", {"steps": [
        {"id": "a", "kind": "command", "shell": "true", "deps": ["nowhere"]},
        {"id": "b", "kind": "command", "shell": "true", "when": "input.x >"}]}),
    ("an unknown agent", {"steps": [{"id": "a", "kind": "agent", "agent": "nobody", "prompt": "x"}]}),
    ("a code step (no callable given)", {"steps": [{"id": "a", "kind": "code"}]}),
]


def bad_battle(**change):
    spec = battle("m0")
    spec.update(change)
    return spec


# (name, spec, whether the CLI's flags can say it)
BAD_BATTLES = [
    ("an unknown identity", bad_battle(contestants=[{"identity": "nobody", "model": "m"},
                                                    {"identity": "bob", "model": "m1"}]), True),
    ("one contestant", bad_battle(contestants=[{"identity": "bob", "model": "m1"}]), True),
    ("an unknown field", bad_battle(promt="x"), False),
    ("a prompt of the wrong type", bad_battle(prompt=5), False),
    ("an unknown battle type", bad_battle(battle_type="poker"), False),
]


def refusal(body):
    """What must agree of an error body: kind, code, message, path, problems."""
    error = body.get("error", body)
    return (error.get("kind"), error.get("code"), error.get("message"), error.get("path"),
            json.dumps(error.get("problems"), sort_keys=True))


def key(subject, event):
    """What must agree: the event's type and, for members, which, how, which attempt."""
    return (
        event["type"],
        subject.member(event),
        event.get("status"),
        event.get("attempt"),
        event.get("skip_reason"),
    )


def stored(events):
    """The stored events (live agent_output has no seq)."""
    return [e for e in events if "seq" in e]


def check_stream(subject, face, events):
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(set(seqs)), f"{face}: seqs not strictly increasing: {seqs}"
    assert subject.is_final(events[-1]), f"{face}: ends with {events[-1]}"
    finals = [e for e in events if subject.is_final(e)]
    assert len(finals) == 1, f"{face}: {len(finals)} final {subject.name} updates"
    # Every member's last update before the end is final.
    latest = {}
    for e in events:
        if e["type"] == subject.member_type:
            latest[subject.member(e)] = e["status"]
    live = {m: st for m, st in latest.items() if st in subject.live}
    assert not live, f"{face}: the stream ended with live members {live}"


def assert_no_live_member(subject, face, view):
    live = [(m["id"], m["status"]) for m in view[subject.members] if m["status"] in subject.live]
    assert not live, f"{face}: after the cancel returned, {subject.members} are still {live}"


class Server:
    def __init__(self, binary, data, root, config):
        self.log = open(os.path.join(data, "serve.log"), "w+")
        self.proc = subprocess.Popen(
            [binary, "serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", data,
             "--project-root", root, "--config", config],
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

    def events(self, subject, id, on_event=None):
        """The subject's SSE stream from the start, until its final update."""
        request = urllib.request.Request(f"{self.url}/api/events?{subject.name}_id={id}&after=0")
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
                    if subject.is_final(event):
                        return out
        raise AssertionError(f"the SSE stream closed before the {subject.name} ended")

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


def via_http(binary, base, subject, spec, cancel=False):
    data = os.path.join(base, "http")
    os.makedirs(data)
    server = Server(binary, data, base, os.path.join(base, "coderig.toml"))
    try:
        if subject is RUN:
            id = server.call("POST", "/api/runs", {"spec": spec, "input": {}})["run_id"]
        else:
            id = server.call("POST", "/api/battles", spec)["battle_id"]
        after_cancel = {}

        def on_event(event):
            if cancel and not after_cancel and subject.starts_work(event):
                action = "cancel" if subject is RUN else "stop"
                after_cancel["view"] = server.call("POST", f"/api/{subject.name}s/{id}/{action}")

        events = server.events(subject, id, on_event)
        if cancel:
            assert_no_live_member(subject, "http", after_cancel["view"])
        return events
    finally:
        server.stop()


def cli_command(binary, data, base, subject, spec):
    if subject is RUN:
        flow = os.path.join(data, "flow.json")
        with open(flow, "w") as f:
            json.dump(spec, f)
        return [binary, "run", flow, "--json", "--data-dir", data, "--project-root", base]
    command = [binary, "battle", "run", "--type", spec["battle_type"], "--prompt", spec["prompt"],
               "--judge", f"{spec['judge']['identity']}:{spec['judge']['model']}", "--json",
               "--data-dir", data, "--config", os.path.join(base, "coderig.toml")]
    for c in spec["contestants"]:
        command += ["--contestant", f"{c['identity']}:{c['model']}"]
    return command


def via_cli(binary, base, subject, spec, cancel=False):
    data = os.path.join(base, "cli")
    os.makedirs(data)
    proc = subprocess.Popen(
        cli_command(binary, data, base, subject, spec),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=base, env=clean_env(), text=True)
    events = []
    for line in proc.stdout:
        value = json.loads(line)
        if value.get("type") == subject.name:  # the final view
            continue
        events.append(value)
        if cancel and subject.starts_work(value):
            proc.send_signal(signal.SIGINT)
    proc.wait(timeout=120)
    stderr = proc.stderr.read()
    assert events, f"cli: no events; stderr:\n{stderr}"
    return events


def via_python(base, subject, spec, cancel=False):
    import coderig
    data = os.path.join(base, "py")
    rig = coderig.Rig(data_dir=data, project_roots=[base], config=os.path.join(base, "coderig.toml"))
    handle = rig.run_flow(spec, {}) if subject is RUN else rig.start_battle(spec)
    events = []
    for event in handle.events():
        events.append(event)
        if cancel and subject.starts_work(event):
            view = handle.cancel() if subject is RUN else handle.stop()
            assert_no_live_member(subject, "python", view)
    view = handle.wait(60)
    assert view["status"] in FINAL
    return events


NODE_SCRIPT = r"""
const { Rig } = require(process.argv[1])
const [data, root, config, kind, specText, cancel] = process.argv.slice(2)
const LIVE = { run: ['pending', 'running', 'waiting'], battle: ['queued', 'running'] }
;(async () => {
  const rig = new Rig({ dataDir: data, projectRoots: [root], config })
  const spec = JSON.parse(specText)
  const handle = kind === 'run' ? await rig.runFlow(spec, {}) : await rig.startBattle(spec)
  const member = kind === 'run' ? 'step_updated' : 'contestant_updated'
  for await (const event of handle.events()) {
    process.stdout.write(JSON.stringify(event) + '\n')
    if (cancel === '1' && event.type === member && event.status === 'running') {
      const view = kind === 'run' ? await handle.cancel() : await handle.stop()
      const members = kind === 'run' ? view.steps : view.contestants
      const live = members.filter((m) => LIVE[kind].includes(m.status))
      if (live.length) { console.error('live after cancel', live); process.exit(9) }
    }
  }
  process.exit(0)
})().catch((e) => { console.error(e); process.exit(1) })
"""


def via_node(base, subject, spec, cancel=False):
    data = os.path.join(base, "node")
    out = subprocess.run(
        ["node", "-e", NODE_SCRIPT, os.path.join(ROOT, "crates", "node"), data, base,
         os.path.join(base, "coderig.toml"), subject.name, json.dumps(spec), "1" if cancel else "0"],
        capture_output=True, text=True, timeout=180, cwd=base, env=clean_env())
    assert out.returncode == 0, f"node: exit {out.returncode}\n{out.stderr}"
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def refused_http(server, subject, spec):
    path, body = ("/api/runs", {"spec": spec, "input": {}}) if subject is RUN else ("/api/battles", spec)
    request = urllib.request.Request(server.url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    try:
        urllib.request.urlopen(request, timeout=30)
    except urllib.error.HTTPError as e:
        assert e.code == 400, f"http: status {e.code}"
        return refusal(json.load(e))
    raise AssertionError(f"http accepted {spec}")


def refused_cli(binary, base, subject, spec):
    data = os.path.join(base, "cli-refusals")
    os.makedirs(data, exist_ok=True)
    out = subprocess.run(cli_command(binary, data, base, subject, spec), capture_output=True,
                         text=True, timeout=120, cwd=base, env=clean_env())
    assert out.returncode != 0, f"cli accepted {spec}"
    lines = out.stdout.splitlines()
    assert len(lines) == 1, f"cli: expected one JSON error line, got {out.stdout!r} ({out.stderr})"
    kind, code, message, path, problems = refusal(json.loads(lines[0]))
    if subject is RUN:
        # The CLI says which file it read before the spec's own message.
        file = os.path.join(data, "flow.json")
        assert message.startswith(f"{file}: "), f"cli: {message!r} does not name {file}"
        message = message[len(file) + 2:]
    return kind, code, message, path, problems


def refused_python(rig, subject, spec):
    import coderig
    try:
        rig.run_flow(spec, {}) if subject is RUN else rig.start_battle(spec)
    except coderig.Error as e:
        return refusal({"kind": e.kind, "code": e.code, "message": e.message, **e.details})
    raise AssertionError(f"python accepted {spec}")


REFUSALS_SCRIPT = r"""
const { Rig } = require(process.argv[1])
const [data, root, config, casesText] = process.argv.slice(2)
;(async () => {
  const rig = new Rig({ dataDir: data, projectRoots: [root], config })
  const out = []
  for (const [kind, spec] of JSON.parse(casesText)) {
    try {
      await (kind === 'run' ? rig.runFlow(spec, {}) : rig.startBattle(spec))
      out.push(null)
    } catch (e) {
      out.push({ kind: e.kind, code: e.code, message: e.message, ...e.details })
    }
  }
  process.stdout.write(JSON.stringify(out))
  process.exit(0)
})().catch((e) => { console.error(e); process.exit(1) })
"""


def refusals(binary):
    """Every bad spec, through every face that can be given it: the same refusal."""
    import coderig
    base = os.path.realpath(tempfile.mkdtemp(prefix="coderig-agree-"))
    with open(os.path.join(base, "coderig.toml"), "w") as f:
        f.write(AGENTS)
    cases = [(RUN, name, spec, True) for name, spec in BAD_FLOWS]
    cases += [(BATTLE, name, spec, cli) for name, spec, cli in BAD_BATTLES]
    try:
        os.makedirs(os.path.join(base, "http"))
        server = Server(binary, os.path.join(base, "http"), base, os.path.join(base, "coderig.toml"))
        try:
            answers = {"http": [refused_http(server, subject, spec) for subject, _, spec, _ in cases]}
            for subject in (RUN, BATTLE):
                listed = server.call("GET", f"/api/{subject.name}s")[f"{subject.name}s"]
                assert listed == [], f"http created {listed}"
        finally:
            server.stop()
        answers["cli"] = [refused_cli(binary, base, subject, spec) if cli else None
                          for subject, _, spec, cli in cases]
        rig = coderig.Rig(data_dir=os.path.join(base, "py"), project_roots=[base],
                          config=os.path.join(base, "coderig.toml"))
        try:
            answers["python"] = [refused_python(rig, subject, spec) for subject, _, spec, _ in cases]
            assert rig.runs()["runs"] == [] and rig.battles()["battles"] == [], "python created some"
        finally:
            rig.close()
        out = subprocess.run(
            ["node", "-e", REFUSALS_SCRIPT, os.path.join(ROOT, "crates", "node"),
             os.path.join(base, "node"), base, os.path.join(base, "coderig.toml"),
             json.dumps([[subject.name, spec] for subject, _, spec, _ in cases])],
            capture_output=True, text=True, timeout=180, cwd=base, env=clean_env())
        assert out.returncode == 0, f"node: exit {out.returncode}\n{out.stderr}"
        answers["node"] = [refusal(e) if e else None for e in json.loads(out.stdout)]
    finally:
        shutil.rmtree(base, ignore_errors=True)
    differences = []
    for i, (subject, name, _, _) in enumerate(cases):
        reference = answers["http"][i]
        assert reference[0] == "invalid_input", f"{subject.name} with {name}: http says {reference}"
        for face, got in answers.items():
            if got[i] is None and face == "cli":
                continue
            if got[i] != reference:
                differences.append(f"{subject.name} with {name}: {face} differs from http:\n"
                                   f"  {face}: {got[i]}\n  http: {reference}")
    assert not differences, "\n".join(differences)
    return len(cases)


def scenario(binary, subject, spec, cancel):
    base = os.path.realpath(tempfile.mkdtemp(prefix="coderig-agree-"))
    with open(os.path.join(base, "coderig.toml"), "w") as f:
        f.write(AGENTS)
    try:
        streams = {
            "http": via_http(binary, base, subject, spec, cancel),
            "cli": via_cli(binary, base, subject, spec, cancel),
            "python": via_python(base, subject, spec, cancel),
            "node": via_node(base, subject, spec, cancel),
        }
    finally:
        shutil.rmtree(base, ignore_errors=True)
    keys = {}
    for face, events in streams.items():
        events = stored(events)
        check_stream(subject, face, events)
        keys[face] = [key(subject, e) for e in events]
    reference = keys["http"]
    for face, seq in keys.items():
        assert seq == reference, (
            f"{face} differs from http:\n  {face}: {seq}\n  http: {reference}")
    if cancel:
        cancelled = {k[1] for k in reference if k[0] == subject.member_type and k[2] == "cancelled"}
        members = {s["id"] for s in spec["steps"]} if subject is RUN else {"c1", "c2"}
        assert cancelled == members, reference
        assert reference[-1][:3] == (subject.final_type, None, "cancelled"), reference
    return reference


def main():
    binary = os.path.abspath(os.path.join(sys.argv[1], "coderig"))
    for subject, spec, cancel, what in [
        (RUN, FLOW, False, "a finished run"),
        (RUN, SLOW, True, "a cancelled run"),
        (BATTLE, battle("m0"), False, "a finished battle"),
        (BATTLE, battle("slow"), True, "a stopped battle"),
    ]:
        done = scenario(binary, subject, spec, cancel)
        print(f"faces agree on {what}: {len(done)} events, ending {done[-1][:3]}")
    print(f"faces refuse alike: {refusals(binary)} bad specs")


if __name__ == "__main__":
    main()
