// The dashboard of `coderig serve` in a real browser: Debian's chromium,
// driven by playwright-core, against a real server (the binary the build
// made: CODERIG_BIN) on loopback with a real SQLite store, a real git
// project with a failing test, scripted contestants and judges, and a
// registered flow with an approval step.
//
// Screenshots of every page go to $CODERIG_SCREENSHOTS (default
// target/dashboard-screenshots): the test's artifacts.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync, existsSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createServer } from "node:net";
import { chromium } from "playwright-core";

const ROOT = resolve(import.meta.dirname, "../..");
const BIN = process.env.CODERIG_BIN || join(ROOT, "target/debug/coderig");
const SHOTS = process.env.CODERIG_SCREENSHOTS || join(ROOT, "target/dashboard-screenshots");
const CHROMIUM = process.env.CODERIG_CHROMIUM
  || ["/usr/lib/chromium/chromium", "/usr/bin/chromium"].find((p) => existsSync(p));
const TIMEOUT = 30_000;

const FIXED = 'add() { echo $(($1 + $2)); }\n';
const CONFIG = `
[agents.fixer]
kind = "scripted"
script = [ { text = "no script for this model" } ]
scripts.good = [ { sleep_ms = 1500 }, { text = "reading calc.sh" }, { tool_call = { name = "write_file", input = { path = "calc.sh" } } }, { write = { path = "calc.sh", content = ${JSON.stringify(FIXED)} } }, { text = "fixed add" } ]
scripts.big = [ ${Array.from({ length: 40 }, (_, i) => `{ text = ${JSON.stringify(`chunk ${i} `.padEnd(50_000, "x"))} }`).join(", ")}, { sleep_ms = 1500 }, { text = "big done" } ]
scripts.html = [ { sleep_ms = 1500 }, { text = "<script>window.__pwned = 1</script><img src=x onerror=\\"window.__pwned = 2\\"><b>not bold</b>" }, { write = { path = "calc.sh", content = "add() { echo 0; }\\n" } }, { text = "done" } ]

[agents.judge]
kind = "scripted"
scripts.j = [ { text = "The first is cleaner.\\nWINNER: fixer/good" } ]
scripts.examiner = [ { text = "I checked the evidence.\\nVERDICT: fixer/good" } ]
`;
const FLOW = `
name: approve-me
description: A command, a human's approval, a command.
steps:
  - id: prepare
    kind: command
    shell: "echo preparing {{ input.what }}"
  - id: gate
    kind: approval
    deps: [prepare]
    message: "Ship {{ input.what }}?"
  - id: finish
    kind: command
    deps: [gate]
    shell: "echo shipped"
`;

let work, servers = [], browser;

/** Starts `coderig serve` (on a free port unless `port` is given, on a
 * fresh data dir unless `data` is); resolves to its base URL. */
async function serve(extra = [], { data = mkdtempSync(join(work, "data-")), port = 0 } = {}) {
  const child = spawn(BIN, ["serve", "--port", String(port), "--data-dir", data, "--config", join(work, "coderig.toml"),
    "--project-root", join(work, "projects"), "--flows", join(work, "flows"), ...extra],
  { stdio: ["ignore", "pipe", "pipe"] });
  servers.push(child);
  let log = "";
  return await new Promise((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`coderig serve did not start:\n${log}`)), TIMEOUT);
    const read = (chunk) => {
      log += chunk;
      const m = log.match(/http:\/\/127\.0\.0\.1:(\d+)/);
      if (m) { clearTimeout(timer); ok(`http://127.0.0.1:${m[1]}`); }
    };
    child.stdout.on("data", read);
    child.stderr.on("data", read);
    child.on("exit", (code) => fail(new Error(`coderig serve exited ${code}:\n${log}`)));
  });
}

function git(dir, ...args) {
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd: dir, stdio: "pipe" });
}

async function page(base) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const p = await context.newPage();
  p.setDefaultTimeout(TIMEOUT);
  const foreign = [];
  p.on("request", (r) => { if (!r.url().startsWith(base)) foreign.push(r.url()); });
  p.foreign = foreign;
  p.errors = [];
  p.on("pageerror", (e) => p.errors.push(e.message));
  return p;
}

async function shot(p, name) {
  await p.evaluate(() => window.scrollTo(0, 0));
  await p.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

before(async () => {
  assert.ok(CHROMIUM, "Debian's chromium is missing (apt-get install chromium): the dashboard tests need a real browser");
  assert.ok(existsSync(BIN), `no coderig binary at ${BIN} (CODERIG_BIN)`);
  mkdirSync(SHOTS, { recursive: true });
  work = realpathSync(mkdtempSync(join(tmpdir(), "coderig-dashboard-")));
  const project = join(work, "projects", "calc");
  mkdirSync(project, { recursive: true });
  writeFileSync(join(project, "calc.sh"), 'add() { echo $(($1 - $2)); }\n');
  writeFileSync(join(project, "test.sh"), '. ./calc.sh\n[ "$(add 2 3)" = 5 ] || { echo "add 2 3 gave $(add 2 3)"; exit 1; }\necho ok\n');
  git(project, "init", "-q");
  git(project, "add", ".");
  git(project, "commit", "-qm", "calc with a bug");
  mkdirSync(join(work, "flows"));
  writeFileSync(join(work, "flows", "approve-me.yaml"), FLOW);
  writeFileSync(join(work, "coderig.toml"), CONFIG);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
});

after(async () => {
  if (browser) await browser.close();
  for (const s of servers) s.kill("SIGTERM");
});

test("a battle launched from the form finishes live; its diff, its output as text, a winner picked by hand", async () => {
  const base = await serve();
  const p = await page(base);
  let transferred = 0;
  p.on("response", async (r) => { const b = await r.body().catch(() => null); if (b) transferred += b.length; });
  await p.goto(base);
  await p.getByRole("heading", { name: "Battles" }).waitFor();
  assert.ok(transferred < 150 * 1024, `first load ${transferred} bytes`);
  await shot(p, "battles-empty");

  // A form the API refuses shows the refusal at its field and creates nothing.
  await p.click("#new-battle");
  await p.fill("#f-prompt", "Fix add in calc.sh");
  await p.getByRole("checkbox", { name: "fixer/good" }).check();
  await p.selectOption("#f-judge", { label: "judge/j" });
  await p.fill("#f-project", "calc");
  await p.getByRole("button", { name: "Start battle" }).click();
  const contestantsError = p.locator('[data-error-for="contestants"]');
  await contestantsError.filter({ hasText: /\S/ }).waitFor();
  assert.match(await contestantsError.textContent(), /contestant|2/i);
  const listed = await (await fetch(`${base}/api/battles`)).json();
  assert.equal(listed.battles.length, 0, "a refused form created nothing");

  await p.getByRole("checkbox", { name: "fixer/html" }).check();
  await p.fill("#f-repro", "sh test.sh");
  await p.getByRole("button", { name: "Start battle" }).click();
  await p.waitForURL(/#\/battles\/.+/);
  // Live: the contestants' output arrives while they run, as text.
  const htmlLane = p.locator('[data-contestant]').filter({ hasText: "fixer/html" });
  await htmlLane.locator(".output").filter({ hasText: "<script>" }).waitFor();
  await p.locator("h1 .status", { hasText: "completed" }).waitFor({ timeout: 60_000 });
  assert.equal(await p.evaluate(() => window.__pwned), undefined, "a contestant's HTML never runs");
  assert.equal(await htmlLane.locator(".output b").count(), 0, "nor is it parsed");
  assert.match(await htmlLane.locator(".output").textContent(), /<b>not bold<\/b>/);
  const goodLane = p.locator('[data-contestant]').filter({ hasText: "fixer/good" });
  assert.match(await goodLane.locator(".output").textContent(), /⚙ write_file/, "a tool call folded to one line");
  assert.match(await p.locator("#winner").textContent(), /fixer\/good/);
  await shot(p, "battle");

  // The diff, per file, unified then side by side.
  await goodLane.getByRole("button", { name: "Diff" }).click();
  await p.locator(".diff .file", { hasText: "calc.sh" }).waitFor();
  assert.equal(await p.locator(".diff tr.add").count(), 1);
  await p.click("#diff-mode");
  await p.locator(".diff td.add").first().waitFor();
  await shot(p, "battle-diff");

  // A winner picked by hand.
  await htmlLane.getByRole("button", { name: "Pick as winner" }).click();
  await p.locator("#winner", { hasText: "fixer/html" }).waitFor();
  assert.match(await p.locator("#winner").textContent(), /human/);

  // An action the API refuses (409) says why and leaves the page as it was.
  const id = decodeURIComponent(p.url().split("#/battles/")[1]);
  const stop = await p.evaluate(async (id) => {
    const r = await fetch(`/api/battles/${id}/stop`, { method: "POST", headers: { "X-Coderig-Dashboard": "1" } });
    return r.status;
  }, id);
  assert.equal(stop, 409);

  // Cross-examine with a chosen agent: its verdict appears live.
  await p.selectOption("#examiner", { label: "judge/examiner" });
  await p.click("#cross-examine");
  await p.locator("#battle-message .notice", { hasText: "Cross-examination started" }).waitFor();
  await p.locator("tr", { hasText: "judge/examiner" }).filter({ hasText: "fixer/good" }).filter({ hasText: "done" }).waitFor();
  // Apply the winner's patch; a second time it no longer applies and the
  // page says why.
  await p.click("#apply");
  await p.locator("#battle-message .notice:not(.error)", { hasText: "applied" }).waitFor();
  await p.click("#apply");
  await p.locator("#battle-message .notice.error").waitFor();
  // Re-analyze with force: the hand-picked winner gives way to the judge's.
  await p.check("#force");
  await p.click("#reanalyze");
  await p.locator("#winner", { hasText: "fixer/good" }).waitFor();

  await p.goto(`${base}/#/leaderboard`);
  await p.getByRole("heading", { name: "Leaderboard" }).waitFor();
  // The battle's winner is rated, its interval drawn as a bar.
  await p.locator("tr", { hasText: "fixer/good" }).locator(".ci").waitFor();
  await p.getByText("No rated battles of this type yet.").waitFor();
  await shot(p, "leaderboard");
  await p.goto(`${base}/#/agents`);
  await p.getByRole("cell", { name: "fixer", exact: true }).waitFor();
  assert.match(await p.locator("tr", { hasText: "fixer" }).first().textContent(), /none \(no process\)/, "a scripted agent starts no process");
  await shot(p, "agents");
  await p.goto(`${base}/#/battles`);
  await p.locator("tbody tr a").first().waitFor();
  await shot(p, "battles");
  assert.deepEqual(p.foreign, [], "no request to any other host");
  assert.deepEqual(p.errors, [], "no script error");
});

test("a flow launched from the form waits for its approval, is approved and completes live", async () => {
  const base = await serve();
  const p = await page(base);
  await p.goto(`${base}/#/runs`);
  await p.click("#new-run");
  await p.locator("#f-flow option", { hasText: "approve-me" }).waitFor({ state: "attached" });
  await p.fill("#f-input-what", "v1.2");
  await p.getByRole("button", { name: "Start run" }).click();
  await p.waitForURL(/#\/runs\/.+/);
  await p.locator(".dag .node").first().waitFor();
  // The DAG's edges are drawn: prepare → gate → finish.
  await p.locator('.dag path[data-edge="prepare>gate"]').waitFor({ state: "attached" });
  await p.locator('.dag path[data-edge="gate>finish"]').waitFor({ state: "attached" });
  const approve = p.locator('tr[data-step="gate"] button.approve');
  await approve.waitFor();
  await shot(p, "run-waiting");
  await p.fill('tr[data-step="gate"] .approval-comment', "looks good");
  await approve.click();
  await p.locator("h1 .status", { hasText: "completed" }).waitFor();
  assert.match(await p.locator('tr[data-step="gate"]').textContent(), /approved: looks good/);
  assert.match(await p.locator('tr[data-step="finish"]').textContent(), /done/);
  await shot(p, "run");
  await p.goto(`${base}/#/runs`);
  await p.locator("tbody tr a").first().waitFor();
  await shot(p, "runs");
  assert.deepEqual(p.errors, []);
});

test("with --token the dashboard asks for the token once and refuses cross-site writes", async () => {
  const base = await serve(["--token", "s3cret-token"]);
  const p = await page(base);
  await p.goto(base);
  await p.locator("#token-form").waitFor();
  await shot(p, "token");
  await p.fill("#token", "wrong");
  await p.getByRole("button", { name: "Open the dashboard" }).click();
  await p.locator("#token-error", { hasText: /not this server's token/ }).waitFor();
  await p.fill("#token", "s3cret-token");
  await p.getByRole("button", { name: "Open the dashboard" }).click();
  await p.getByRole("heading", { name: "Battles" }).waitFor();
  // Kept for the session: a reload does not ask again.
  await p.reload();
  await p.getByRole("heading", { name: "Battles" }).waitFor();
  const cookies = await p.context().cookies();
  const session = cookies.find((c) => c.name === "coderig_session");
  assert.ok(session && session.httpOnly && session.sameSite === "Strict", JSON.stringify(cookies));
  // The cookie alone does not make a write: another site's page cannot
  // send the dashboard's header, and a foreign Origin is refused.
  const cookie = `coderig_session=${session.value}`;
  const bare = await fetch(`${base}/api/runs`, { method: "POST", headers: { cookie, "content-type": "application/json" }, body: JSON.stringify({ flow: "approve-me" }) });
  assert.equal(bare.status, 401);
  const foreign = await fetch(`${base}/api/runs`, { method: "POST", headers: { cookie, origin: "http://evil.example", "x-coderig-dashboard": "1", "content-type": "application/json" }, body: JSON.stringify({ flow: "approve-me" }) });
  assert.equal(foreign.status, 401);
  assert.match((await foreign.json()).error.message, /cross-site/);
  // Signing out forgets the cookie: the prompt again.
  await p.click("#sign-out");
  await p.locator("#token-form").waitFor();
  assert.deepEqual(p.errors, []);
});

/** A port free right now. */
async function freePort() {
  return await new Promise((ok) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => ok(port));
    });
  });
}

test("a lost connection says it is reconnecting and resumes where it left off", async () => {
  const port = await freePort();
  const data = mkdtempSync(join(work, "data-"));
  const base = await serve([], { data, port });
  const p = await page(base);
  await p.goto(`${base}/#/runs`);
  await p.locator("#live", { hasText: /^live$/ }).waitFor();
  const server = servers.at(-1);
  server.kill("SIGKILL");
  await p.locator("#live", { hasText: "reconnecting" }).waitFor();
  await shot(p, "reconnecting");
  await serve([], { data, port });
  await p.locator("#live", { hasText: /^live$/ }).waitFor({ timeout: 20_000 });
  // Live again: a run started elsewhere appears without a reload.
  const created = await fetch(`${base}/api/runs`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ flow: "approve-me", input: { what: "after" } }) });
  assert.equal(created.status, 201);
  const { run_id } = await created.json();
  await p.locator(`a[href="#/runs/${run_id}"]`).waitFor();
  assert.deepEqual(p.errors, []);
});

test("keyboard reachable and readable in a narrow window", async () => {
  const base = await serve();
  const context = await browser.newContext({ viewport: { width: 420, height: 800 } });
  const p = await context.newPage();
  p.setDefaultTimeout(TIMEOUT);
  await p.goto(base);
  await p.getByRole("heading", { name: "Battles" }).waitFor();
  // Tab from the top reaches "New battle"; Enter opens the form.
  let reached = false;
  for (let i = 0; i < 12 && !reached; i++) {
    await p.keyboard.press("Tab");
    reached = await p.evaluate(() => document.activeElement && document.activeElement.id === "new-battle");
  }
  assert.ok(reached, "New battle is reachable with Tab");
  await p.keyboard.press("Enter");
  await p.locator("#battle-form").waitFor();
  const overflow = await p.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 1, `no sideways scrolling at 420 px (${overflow} px over)`);
  await shot(p, "battles-narrow");
  await context.close();
});

test("a contestant with megabytes of output leaves the page small and responsive", async () => {
  const base = await serve();
  const p = await page(base);
  await p.goto(base);
  await p.click("#new-battle");
  await p.fill("#f-prompt", "Say a lot");
  await p.selectOption("#f-battle_type", "qa");
  await p.getByRole("checkbox", { name: "fixer/big" }).check();
  await p.getByRole("checkbox", { name: "fixer/html" }).check();
  await p.selectOption("#f-judge", { label: "judge/j" });
  await p.getByRole("button", { name: "Start battle" }).click();
  await p.waitForURL(/#\/battles\/.+/);
  const lane = p.locator("[data-contestant]").filter({ hasText: "fixer/big" });
  await lane.locator(".output").filter({ hasText: "big done" }).waitFor({ timeout: 60_000 });
  const shown = await lane.locator(".output").evaluate((box) => box.textContent.length);
  assert.ok(shown < 200_000, `2 MB of output shown as ${shown} characters`);
  // A finished contestant's answer is read back from its result.md, capped
  // too (its 2 MB answer: the first 200,000 characters and a note).
  await p.locator("h1 .status", { hasText: "completed" }).waitFor({ timeout: 60_000 });
  await lane.getByRole("button", { name: "Result" }).click();
  await p.locator("#result", { hasText: "chunk 0" }).waitFor();
  await p.locator("#result .notice", { hasText: "more characters" }).waitFor();
  const resultChars = await p.locator("#result").evaluate((el) => el.textContent.length);
  assert.ok(resultChars < 250_000, `the result shown as ${resultChars} characters`);
  // Still usable: navigation answers.
  await p.click('nav a[href="#/runs"]');
  await p.getByRole("heading", { name: "Runs" }).waitFor();
  assert.deepEqual(p.errors, []);
});
