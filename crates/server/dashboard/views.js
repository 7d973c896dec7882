// The dashboard's pages. Each returns {el, load?, onEvent?, dispose?}:
// `el` is shown at once, `load` fills it, `onEvent` gets the live stream.

import { h, fill, badge, ago, duration, api, errorText, notice } from "./app.js";

const BATTLE_STATUSES = ["running", "judging", "completed", "failed", "cancelled"];
const RUN_STATUSES = ["running", "waiting", "completed", "failed", "cancelled"];
const PAGE = 25;
const SVG = "http://www.w3.org/2000/svg";
/** Events of live output kept per contestant or step (older ones drop),
 * and the characters shown of one event: a battle with megabytes of
 * output stays a few hundred kilobytes of page. */
const OUTPUT_LINES = 1500;
const OUTPUT_CHARS = 4000;

/** Calls `fn` at most once per `ms`, with the last call's arguments. */
function debounce(fn, ms = 150) {
  let timer = null;
  return (...args) => { clearTimeout(timer); timer = setTimeout(() => fn(...args), ms); };
}

const q = (params) => {
  const search = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) search.set(k, v);
  const s = search.toString();
  return s ? `?${s}` : "";
};

/** A form field: its input and the place its error goes. */
function field(label, input, name) {
  const error = h("span", { class: "field-error", "data-error-for": name, role: "alert" });
  input.name = name;
  input.id = `f-${name}`;
  return h("label", { for: input.id }, label, input, error);
}

/**
 * Shows an API refusal at its field: `path` (and each of
 * `details.problems`) names the field; what names none goes to `general`.
 */
function showErrors(form, general, result, fieldOf) {
  for (const el of form.querySelectorAll("[data-error-for]")) el.textContent = "";
  for (const el of form.querySelectorAll(".invalid")) el.classList.remove("invalid");
  fill(general);
  const e = (result.data && result.data.error) || {};
  const problems = Array.isArray(e.problems) ? e.problems : [{ path: e.path, message: e.message }];
  let unplaced = [];
  for (const p of problems) {
    const name = p.path !== undefined && p.path !== null ? fieldOf(String(p.path)) : null;
    const slot = name && form.querySelector(`[data-error-for="${name}"]`);
    if (slot) {
      slot.textContent = p.message || e.message || "invalid";
      const input = form.querySelector(`[name="${name}"]`);
      if (input) input.classList.add("invalid");
    } else unplaced.push(p.message || e.message);
  }
  if (unplaced.length || !problems.length) general.append(notice(unplaced.join("; ") || errorText(result), true));
}

// ----- battles -----

export function battles() {
  const table = h("tbody");
  const more = h("button", { type: "button", hidden: true }, "More");
  const status = h("select", { name: "status", id: "filter-status" }, h("option", { value: "" }, "any"),
    BATTLE_STATUSES.map((s) => h("option", { value: s }, s)));
  const project = h("input", { name: "project", id: "filter-project", placeholder: "any project" });
  const message = h("div");
  const launch = h("div");
  let cursor = null;

  async function load(append) {
    const result = await api("GET", `/api/battles${q({ status: status.value, project: project.value, limit: PAGE, cursor: append ? cursor : null })}`);
    if (!result.ok) { fill(message, notice(errorText(result), true)); return; }
    fill(message);
    cursor = result.data.next_cursor;
    more.hidden = !cursor;
    const rows = result.data.battles.map((b) => h("tr", {},
      h("td", {}, h("a", { href: `#/battles/${encodeURIComponent(b.id)}` }, b.id)),
      h("td", {}, badge(b.status)),
      h("td", {}, b.battle_type),
      h("td", { class: "hide-narrow" }, b.project || "—"),
      h("td", {}, (b.contestants || []).map((c) => `${c.identity}/${c.model}`).join(", ")),
      h("td", {}, winnerName(b) || "—"),
      h("td", { class: "hide-narrow" }, ago(b.created_at_ms))));
    if (append) table.append(...rows); else fill(table, ...rows);
    if (!rows.length && !append) fill(table, h("tr", {}, h("td", { colspan: 7, class: "muted" }, "No battles yet.")));
  }
  more.addEventListener("click", () => load(true));
  const reload = debounce(() => load(false), 300);

  const el = h("section", {},
    h("div", { class: "bar" }, h("h1", {}, "Battles"),
      h("button", { type: "button", class: "primary", id: "new-battle", onclick: () => fill(launch, battleForm(() => fill(launch))) }, "New battle")),
    launch,
    h("form", { class: "bar", onsubmit: (e) => { e.preventDefault(); load(false); } },
      h("label", { for: "filter-status" }, "Status", status),
      h("label", { for: "filter-project" }, "Project", project),
      h("button", { type: "submit" }, "Filter")),
    message,
    h("table", {}, h("thead", {}, h("tr", {}, ["Battle", "Status", "Type", "Project", "Contestants", "Winner", "Started"]
      .map((t, i) => h("th", { class: i === 3 || i === 6 ? "hide-narrow" : null }, t)))), table),
    more);
  return {
    el, load: () => load(false),
    onEvent: (type) => { if (type === "battle_started" || type === "battle_updated" || type === "reset" || type === "gap") reload(); },
  };
}

function winnerName(b) {
  const w = (b.contestants || []).find((c) => c.id === b.winner_contestant_id);
  return w ? `${w.identity}/${w.model}` : null;
}

/** Every configured (identity, model) pair, from GET /api/agents (asked
 * once a minute at most: the configuration changes only with a restart). */
let pairsAsked = null;
function agentPairs() {
  if (!pairsAsked || Date.now() - pairsAsked.at > 60_000) pairsAsked = { at: Date.now(), pairs: askPairs() };
  return pairsAsked.pairs;
}

async function askPairs() {
  const result = await api("GET", "/api/agents");
  if (!result.ok) return [];
  const agents = Array.isArray(result.data) ? result.data : result.data.agents || [];
  const pairs = [];
  for (const a of agents) for (const m of a.models || []) pairs.push({ identity: a.identity, model: m });
  return pairs;
}

function battleForm(close) {
  const general = h("div");
  const type = h("select", {}, h("option", { value: "coding" }, "coding"), h("option", { value: "qa" }, "qa"));
  const prompt = h("textarea", { required: true });
  const project = h("input", { placeholder: "a git repository under a project root" });
  const repro = h("input", { placeholder: "fails before the fix, passes after" });
  const suite = h("input", { placeholder: "the project's tests" });
  const timeout = h("input", { placeholder: "20m" });
  const picks = h("fieldset", { id: "f-contestants" }, h("legend", {}, "Contestants (2–6)"));
  const judge = h("select", {});
  const contestantsError = h("span", { class: "field-error", "data-error-for": "contestants", role: "alert" });
  const form = h("form", { class: "card", id: "battle-form", onsubmit: submit },
    h("h2", {}, "New battle"), general,
    field("Type", type, "battle_type"),
    field("Prompt", prompt, "prompt"),
    picks, contestantsError,
    field("Judge", judge, "judge"),
    field("Project", project, "project"),
    field("Oracle: repro command", repro, "repro"),
    field("Oracle: suite command", suite, "suite"),
    field("Contestant timeout", timeout, "contestant_timeout"),
    h("div", { class: "bar" }, h("button", { class: "primary", type: "submit" }, "Start battle"),
      h("button", { type: "button", onclick: close }, "Cancel")));
  agentPairs().then((pairs) => {
    if (!pairs.length) general.append(notice("No agents are configured (coderig.toml).", true));
    pairs.forEach((p, i) => {
      const id = `pick-${i}`;
      picks.append(h("label", { for: id, class: "pick" },
        h("span", {}, h("input", { type: "checkbox", id, value: JSON.stringify(p) }), ` ${p.identity}/${p.model}`)));
      judge.append(h("option", { value: JSON.stringify(p) }, `${p.identity}/${p.model}`));
    });
  });
  async function submit(event) {
    event.preventDefault();
    const spec = {
      battle_type: type.value,
      prompt: prompt.value,
      contestants: [...picks.querySelectorAll("input:checked")].map((c) => JSON.parse(c.value)),
      judge: judge.value ? JSON.parse(judge.value) : null,
    };
    if (project.value) spec.project = project.value;
    if (timeout.value) spec.contestant_timeout = timeout.value;
    if (repro.value || suite.value) {
      spec.oracle = {};
      if (repro.value) spec.oracle.repro = repro.value;
      if (suite.value) spec.oracle.suite = suite.value;
    }
    const result = await api("POST", "/api/battles", spec);
    if (result.ok) { location.hash = `#/battles/${encodeURIComponent(result.data.battle_id)}`; return; }
    showErrors(form, general, result, (path) => {
      const p = path.replace(/^\//, "").replace(/\//g, ".");
      if (p.startsWith("oracle.repro")) return "repro";
      if (p.startsWith("oracle.suite")) return "suite";
      if (p.startsWith("oracle")) return "repro";
      return p.split(/[.[]/)[0];
    });
  }
  return form;
}

// ----- one battle -----

export function battle(id) {
  const base = `/api/battles/${encodeURIComponent(id)}`;
  const head = h("div");
  const actions = h("div", { class: "bar" });
  const message = h("div", { id: "battle-message" });
  const lanes = h("div", { class: "lanes" });
  const diffs = h("div", { id: "diffs" });
  const analysis = h("div");
  const exams = h("div");
  const outputs = new Map();
  let view = null;

  function outputOf(cid) {
    if (!outputs.has(cid)) outputs.set(cid, h("div", { class: "output", tabindex: 0, "aria-label": `live output of ${cid}` }));
    return outputs.get(cid);
  }

  async function act(method, path, body, done) {
    const result = await api(method, `${base}${path}`, body);
    fill(message, result.ok ? notice(done) : notice(errorText(result), true));
    await load();
    return result;
  }

  async function load() {
    const result = await api("GET", base);
    if (!result.ok) { fill(head, notice(errorText(result), true)); return; }
    view = result.data;
    const b = view;
    const live = b.status === "running" || b.status === "judging";
    fill(head,
      h("h1", {}, `Battle ${b.id} `, badge(b.status)),
      h("dl", { class: "kv" },
        h("dt", {}, "Type"), h("dd", {}, b.battle_type),
        h("dt", {}, "Project"), h("dd", {}, b.project || "—"),
        h("dt", {}, "Prompt"), h("dd", {}, h("pre", {}, b.prompt || "")),
        h("dt", {}, "Judge"), h("dd", {}, b.judge ? `${b.judge.identity}/${b.judge.model}` : "—"),
        h("dt", {}, "Winner"), h("dd", { id: "winner" }, winnerName(b) ? `${winnerName(b)} (${b.winner_source || "?"})` : "—"),
        b.error ? [h("dt", {}, "Error"), h("dd", {}, b.error.message || JSON.stringify(b.error))] : null));
    const force = h("input", { type: "checkbox", id: "force" });
    const examiner = h("select", { id: "examiner", "aria-label": "examiner" });
    agentPairs().then((pairs) => pairs.forEach((p) => examiner.append(h("option", { value: JSON.stringify(p) }, `${p.identity}/${p.model}`))));
    fill(actions,
      live ? h("button", { type: "button", class: "danger", id: "stop", onclick: () => act("POST", "/stop", undefined, "Stopped.") }, "Stop") : null,
      !live ? [h("button", { type: "button", id: "reanalyze", onclick: () => act("POST", "/analyze", { force: force.checked }, "Analysis restarted.") }, "Re-analyze"),
        h("label", { for: "force" }, h("span", {}, force, " force (replace a hand-picked winner)"))] : null,
      b.status === "completed" ? [examiner, h("button", { type: "button", id: "cross-examine", onclick: () => {
        if (!examiner.value) return;
        act("POST", "/cross-examine", JSON.parse(examiner.value), "Cross-examination started.");
      } }, "Cross-examine")] : null,
      b.status === "completed" && b.battle_type === "coding" && b.winner_contestant_id
        ? h("button", { type: "button", id: "apply", onclick: () => act("POST", "/apply", {}, "The winner's patch is applied to the project.") }, "Apply the winner's patch") : null);
    fill(lanes, ...(b.contestants || []).map((c) => lane(b, c)));
    if (b.analysis_ready) {
      const text = await api("GET", `${base}/analysis`);
      if (text.ok) fill(analysis, h("h2", {}, "Analysis"), markdown(text.data.text || ""));
    } else fill(analysis);
    fill(exams, ...((b.cross_exams || []).length ? [h("h2", {}, "Cross-examinations"),
      h("table", {}, h("tbody", {}, b.cross_exams.map((x) => h("tr", {},
        h("td", {}, `${x.identity}/${x.model}`), h("td", {}, badge(x.status)), h("td", {}, x.verdict || "—"),
        h("td", {}, h("pre", {}, x.text || (x.error && x.error.message) || "")))))) ] : []));
  }

  function lane(b, c) {
    const elapsed = c.duration_ms ?? (c.started_at_ms ? Date.now() - c.started_at_ms : null);
    const ticking = c.duration_ms === undefined || c.duration_ms === null;
    const ev = c.evidence || {};
    const evidence = ["repro", "suite"].filter((k) => ev[k]).map((k) => h("details", {},
      h("summary", {}, `${k}: exit ${ev[k].exit_code ?? "—"}${ev[k].timed_out ? " (timed out)" : ""}`),
      h("pre", {}, ev[k].output_tail || "")));
    const done = !["queued", "running"].includes(c.status);
    return h("article", { class: "card lane", "data-contestant": c.id },
      h("h3", {}, `${c.identity}/${c.model} `, badge(c.status), b.winner_contestant_id === c.id ? h("span", { class: "winner-mark" }, " ★ winner") : null),
      h("dl", { class: "kv" },
        h("dt", {}, "Elapsed"), h("dd", { class: "elapsed", "data-started": ticking && c.started_at_ms ? c.started_at_ms : null }, duration(elapsed)),
        h("dt", {}, "Tokens/s"), h("dd", {}, c.tokens_per_sec ? c.tokens_per_sec.toFixed(1) : "—"),
        h("dt", {}, "Tier"), h("dd", {}, c.tier || "—"),
        c.error ? [h("dt", {}, "Error"), h("dd", {}, c.error.message || JSON.stringify(c.error))] : null),
      evidence,
      outputOf(c.id),
      h("div", { class: "bar" },
        done ? h("button", { type: "button", class: "show-result", onclick: () => showResult(c) }, "Result") : null,
        done && b.battle_type === "coding" ? h("button", { type: "button", class: "show-diff", onclick: () => showDiff(c) }, "Diff") : null,
        b.status === "completed" && b.winner_contestant_id !== c.id
          ? h("button", { type: "button", class: "pick-winner", onclick: () => act("PATCH", "/winner", { contestant_id: c.id }, `${c.identity}/${c.model} is the winner.`) }, "Pick as winner") : null));
  }

  async function showResult(c) {
    const result = await api("GET", `${base}/contestants/${encodeURIComponent(c.id)}/result`);
    if (!result.ok) { fill(diffs, notice(errorText(result), true)); return; }
    // Capped like live output: a contestant's answer may be megabytes.
    let text = String(result.data);
    const cap = 200_000;
    const more = text.length > cap ? text.length - cap : 0;
    if (more) text = text.slice(0, cap);
    fill(diffs, h("section", { id: "result" }, h("h2", {}, `Result of ${c.identity}/${c.model}`), markdown(text),
      more ? notice(`… ${more} more characters: the whole file is GET ${base}/contestants/${c.id}/result`) : null));
    diffs.scrollIntoView({ block: "start" });
  }

  async function showDiff(c) {
    const result = await api("GET", `${base}/contestants/${encodeURIComponent(c.id)}/diff`);
    if (!result.ok) { fill(diffs, notice(errorText(result), true)); return; }
    fill(diffs, diffView(`${c.identity}/${c.model}`, String(result.data)));
    diffs.scrollIntoView({ block: "start" });
  }

  const reload = debounce(load, 200);
  // A running contestant's elapsed time counts up without a reload.
  const ticker = setInterval(() => {
    for (const dd of lanes.querySelectorAll(".elapsed[data-started]")) dd.textContent = duration(Date.now() - Number(dd.dataset.started));
  }, 1000);
  const el = h("section", {}, h("p", {}, h("a", { href: "#/battles" }, "← Battles")), head, actions, message, lanes, diffs, analysis, exams);
  return {
    el, load,
    dispose: () => clearInterval(ticker),
    onEvent(type, data) {
      if (type === "gap" || type === "reset") { reload(); return; }
      if (data.battle_id !== id) return;
      if (type === "agent_output") appendOutput(outputOf(data.contestant_id), data);
      else reload();
    },
  };
}

/** Appends one live agent event to an output box, folding tool calls to one line. */
function appendOutput(box, data) {
  const stick = box.scrollTop + box.clientHeight >= box.scrollHeight - 4;
  let text = data.text || "";
  if (data.kind === "tool_call" || data.kind === "tool_result") text = `⚙ ${text.split("\n")[0].slice(0, 200)}`;
  else if (text.length > OUTPUT_CHARS) text = `${text.slice(0, OUTPUT_CHARS)}… (${text.length - OUTPUT_CHARS} more characters)`;
  box.append(h("div", { class: `o-${data.kind || "text"}` }, text));
  while (box.childElementCount > OUTPUT_LINES) box.firstElementChild.remove();
  if (stick) box.scrollTop = box.scrollHeight;
}

// ----- diffs -----

/** A unified diff as one table per file, unified or side by side. */
function diffView(title, patch) {
  const files = parseDiff(patch);
  const box = h("div");
  let split = false;
  const toggle = h("button", { type: "button", id: "diff-mode", onclick: () => { split = !split; draw(); } });
  function draw() {
    toggle.textContent = split ? "Unified" : "Side by side";
    fill(box, ...(files.length ? files.map((f) => h("div", { class: "diff" },
      h("div", { class: "file" }, f.name), split ? splitTable(f) : unifiedTable(f))) : [h("p", { class: "muted" }, "No changes.")]));
  }
  draw();
  return h("section", {}, h("div", { class: "bar" }, h("h2", {}, `Diff of ${title}`), toggle), box);
}

function parseDiff(patch) {
  const files = [];
  let file = null, oldNo = 0, newNo = 0;
  for (const line of patch.split("\n")) {
    if (line.startsWith("diff --git ")) {
      file = { name: line.replace(/^diff --git a\/(.*) b\/.*$/, "$1"), lines: [] };
      files.push(file);
    } else if (!file) continue;
    else if (line.startsWith("+++ ") || line.startsWith("--- ") || /^(index|new file|deleted file|similarity|rename|old mode|new mode)/.test(line)) {
      if (line.startsWith("+++ b/")) file.name = line.slice(6);
    } else if (line.startsWith("@@")) {
      const m = line.match(/^@@ -(\d+)(?:,\d+)? \+(\d+)/);
      if (m) { oldNo = +m[1]; newNo = +m[2]; }
      file.lines.push({ kind: "hunk", text: line });
    } else if (line.startsWith("+")) file.lines.push({ kind: "add", text: line.slice(1), n: newNo++ });
    else if (line.startsWith("-")) file.lines.push({ kind: "del", text: line.slice(1), o: oldNo++ });
    else if (line.startsWith(" ")) file.lines.push({ kind: "ctx", text: line.slice(1), o: oldNo++, n: newNo++ });
  }
  return files;
}

const KEYWORDS = new Set(("as async await break case catch class const continue def do elif else enum export extends false fn for from " +
  "function if impl import in interface let loop match mod mut new None null pub return self static struct switch trait true try type " +
  "use var while with yield").split(" "));

/** One code line as spans: keywords, strings and comments coloured. */
function code(text) {
  const out = h("span");
  const re = /(\/\/.*$|#.*$|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`|\b[A-Za-z_]+\b)/g;
  let last = 0, m;
  while ((m = re.exec(text))) {
    if (m.index > last) out.append(text.slice(last, m.index));
    const t = m[0];
    const cls = t.startsWith("//") || t.startsWith("#") ? "com" : /^["'`]/.test(t) ? "str" : KEYWORDS.has(t) ? "kw" : null;
    out.append(cls ? h("span", { class: cls }, t) : t);
    last = m.index + t.length;
  }
  out.append(text.slice(last));
  return out;
}

function unifiedTable(f) {
  return h("table", {}, h("tbody", {}, f.lines.map((l) => l.kind === "hunk"
    ? h("tr", { class: "hunk" }, h("td", { colspan: 3 }, l.text))
    : h("tr", { class: l.kind === "ctx" ? null : l.kind },
      h("td", { class: "n" }, l.o ?? ""), h("td", { class: "n" }, l.n ?? ""),
      h("td", {}, l.kind === "add" ? "+" : l.kind === "del" ? "-" : " ", code(l.text))))));
}

function splitTable(f) {
  const rows = [];
  let dels = [], adds = [];
  const flush = () => {
    for (let i = 0; i < Math.max(dels.length, adds.length); i++) {
      const d = dels[i], a = adds[i];
      rows.push(h("tr", {},
        h("td", { class: "n" }, d ? d.o : ""), h("td", { class: d ? "del" : null }, d ? code(d.text) : ""),
        h("td", { class: "n" }, a ? a.n : ""), h("td", { class: a ? "add" : null }, a ? code(a.text) : "")));
    }
    dels = []; adds = [];
  };
  for (const l of f.lines) {
    if (l.kind === "del") dels.push(l);
    else if (l.kind === "add") adds.push(l);
    else {
      flush();
      rows.push(l.kind === "hunk" ? h("tr", { class: "hunk" }, h("td", { colspan: 4 }, l.text))
        : h("tr", {}, h("td", { class: "n" }, l.o), h("td", {}, code(l.text)), h("td", { class: "n" }, l.n), h("td", {}, code(l.text))));
    }
  }
  flush();
  return h("table", {}, h("tbody", {}, rows));
}

/** A small Markdown reading: headings, lists, code blocks, tables. */
function markdown(text) {
  const box = h("div", { class: "markdown card" });
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line.startsWith("```")) {
      const block = [];
      for (i++; i < lines.length && !lines[i].startsWith("```"); i++) block.push(lines[i]);
      box.append(h("pre", {}, block.join("\n")));
    } else if (/^#{1,6} /.test(line)) box.append(h("h3", {}, line.replace(/^#+ /, "")));
    else if (line.startsWith("|")) {
      const block = [line];
      while (i + 1 < lines.length && lines[i + 1].startsWith("|")) block.push(lines[++i]);
      const cells = (row) => row.replace(/^\|/, "").replace(/\|\s*$/, "").split("|").map((c) => c.trim());
      const rows = block.filter((row) => !/^\|[\s:|-]+\|?\s*$/.test(row)).map(cells);
      const [headRow, ...bodyRows] = rows;
      box.append(h("table", { class: "md-table" },
        h("thead", {}, h("tr", {}, (headRow || []).map((c) => h("th", {}, c)))),
        h("tbody", {}, bodyRows.map((r) => h("tr", {}, r.map((c) => h("td", {}, c)))))));
    } else if (/^\s*[-*] /.test(line)) box.append(h("div", {}, "• ", line.replace(/^\s*[-*] /, "")));
    else if (line.trim()) box.append(h("p", {}, line));
  }
  return box;
}

// ----- leaderboard -----

export function leaderboard() {
  const boards = h("div");
  const type = h("select", { id: "lb-type" }, h("option", { value: "" }, "every type"), h("option", { value: "coding" }, "coding"), h("option", { value: "qa" }, "qa"));
  const project = h("input", { id: "lb-project", placeholder: "any project" });
  async function load() {
    const result = await api("GET", `/api/leaderboard${q({ battle_type: type.value, project: project.value })}`);
    if (!result.ok) { fill(boards, notice(errorText(result), true)); return; }
    const list = result.data || [];
    if (!list.length) { fill(boards, h("p", { class: "muted" }, "No rated battles yet: a battle counts once it completed with a winner.")); return; }
    fill(boards, ...list.map((board) => {
      const title = h("h2", {}, `${board.battle_type} — ${board.n_battles} ${board.n_battles === 1 ? "battle" : "battles"}`);
      if (!board.entries.length) return h("section", {}, title, h("p", { class: "muted" }, "No rated battles of this type yet."));
      const lo = Math.min(...board.entries.map((e) => e.ci_low)), hi = Math.max(...board.entries.map((e) => e.ci_high));
      const x = (v) => `${(100 * (v - lo)) / Math.max(1, hi - lo)}%`;
      return h("section", {}, title,
        h("table", {}, h("thead", {}, h("tr", {}, ["Contestant", "Score", "95 % interval", "", "Battles"].map((t) => h("th", {}, t)))),
          h("tbody", {}, board.entries.map((e) => h("tr", {},
            h("td", {}, e.name), h("td", {}, e.score.toFixed(0)),
            h("td", {}, `${e.ci_low.toFixed(0)} – ${e.ci_high.toFixed(0)}`),
            h("td", {}, ciBar(x(e.ci_low), x(e.ci_high), x(e.score))),
            h("td", {}, String(e.n_battles)))))));
    }));
  }
  function ciBar(from, to, at) {
    const bar = h("div", { class: "ci", role: "img", "aria-label": "interval" });
    const span = h("span");
    span.style.left = from; span.style.right = `calc(100% - ${to})`;
    const mark = h("i");
    mark.style.left = at;
    bar.append(span, mark);
    return bar;
  }
  const reload = debounce(load, 500);
  return {
    el: h("section", {}, h("h1", {}, "Leaderboard"),
      h("form", { class: "bar", onsubmit: (e) => { e.preventDefault(); load(); } },
        h("label", { for: "lb-type" }, "Battle type", type), h("label", { for: "lb-project" }, "Project", project),
        h("button", { type: "submit" }, "Show")), boards),
    load,
    onEvent: (t, d) => { if (t === "battle_updated" && d.status === "completed") reload(); },
  };
}

// ----- runs -----

export function runs() {
  const table = h("tbody");
  const more = h("button", { type: "button", hidden: true }, "More");
  const status = h("select", { id: "run-status" }, h("option", { value: "" }, "any"), RUN_STATUSES.map((s) => h("option", { value: s }, s)));
  const message = h("div");
  const launch = h("div");
  let cursor = null;
  async function load(append) {
    const result = await api("GET", `/api/runs${q({ status: status.value, limit: PAGE, cursor: append ? cursor : null })}`);
    if (!result.ok) { fill(message, notice(errorText(result), true)); return; }
    cursor = result.data.next_cursor;
    more.hidden = !cursor;
    const rows = result.data.runs.map((r) => h("tr", {},
      h("td", {}, h("a", { href: `#/runs/${encodeURIComponent(r.id)}` }, r.id)),
      h("td", {}, r.name || "—"), h("td", {}, badge(r.status)), h("td", {}, ago(r.created_at))));
    if (append) table.append(...rows); else fill(table, ...rows);
    if (!rows.length && !append) fill(table, h("tr", {}, h("td", { colspan: 4, class: "muted" }, "No runs yet.")));
  }
  more.addEventListener("click", () => load(true));
  const reload = debounce(() => load(false), 300);
  return {
    el: h("section", {},
      h("div", { class: "bar" }, h("h1", {}, "Runs"),
        h("button", { type: "button", class: "primary", id: "new-run", onclick: () => fill(launch, runForm(() => fill(launch))) }, "New run")),
      launch,
      h("form", { class: "bar", onsubmit: (e) => { e.preventDefault(); load(false); } },
        h("label", { for: "run-status" }, "Status", status), h("button", { type: "submit" }, "Filter")),
      message,
      h("table", {}, h("thead", {}, h("tr", {}, ["Run", "Flow", "Status", "Started"].map((t) => h("th", {}, t)))), table), more),
    load: () => load(false),
    onEvent: (t) => { if (t === "run_updated" || t === "reset" || t === "gap") reload(); },
  };
}

function runForm(close) {
  const general = h("div");
  const flow = h("select", {});
  const input = h("textarea", { placeholder: "{}" });
  const fields = h("div");
  const form = h("form", { class: "card", id: "run-form", onsubmit: submit },
    h("h2", {}, "New run"), general,
    field("Flow", flow, "flow"), fields,
    field("Input (JSON object; the fields above fill it)", input, "input"),
    h("div", { class: "bar" }, h("button", { class: "primary", type: "submit" }, "Start run"),
      h("button", { type: "button", onclick: close }, "Cancel")));
  api("GET", "/api/flows").then((result) => {
    const flows = (result.ok && result.data.flows) || [];
    if (!flows.length) general.append(notice("No flows are registered (coderig serve --flows DIR).", true));
    for (const f of flows) flow.append(h("option", { value: f.name }, f.description ? `${f.name} — ${f.description}` : f.name));
    drawInputs();
    flow.addEventListener("change", drawInputs);
    function drawInputs() {
      // The input keys a flow's templates name (`input.key`), as fields.
      const spec = flows.find((f) => f.name === flow.value);
      const keys = [...new Set([...JSON.stringify(spec || {}).matchAll(/input\.([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]))];
      fill(fields, ...keys.map((k) => field(`input.${k}`, h("input", { "data-input": k }), `input-${k}`)));
    }
  });
  async function submit(event) {
    event.preventDefault();
    let value = {};
    if (input.value.trim()) {
      try { value = JSON.parse(input.value); } catch (e) {
        showErrors(form, general, { data: { error: { path: "input", message: `not JSON: ${e.message}` } } }, (p) => p);
        return;
      }
    }
    for (const el of fields.querySelectorAll("[data-input]")) if (el.value) value[el.dataset.input] = el.value;
    const result = await api("POST", "/api/runs", { flow: flow.value, input: value });
    if (result.ok) { location.hash = `#/runs/${encodeURIComponent(result.data.run_id)}`; return; }
    showErrors(form, general, result, (p) => p.replace(/^\//, "").split(/[./[]/)[0]);
  }
  return form;
}

export function run(id) {
  const base = `/api/runs/${encodeURIComponent(id)}`;
  const head = h("div");
  const message = h("div", { id: "run-message" });
  const dag = h("div", { class: "dag", "aria-label": "the flow's steps by dependency depth" });
  const steps = h("div");
  const report = h("div");
  const outputs = new Map();

  async function load() {
    const result = await api("GET", base);
    if (!result.ok) { fill(head, notice(errorText(result), true)); return; }
    const r = result.data;
    const live = r.status === "running" || r.status === "waiting";
    fill(head, h("h1", {}, `Run ${r.id} `, badge(r.status)),
      h("dl", { class: "kv" }, h("dt", {}, "Flow"), h("dd", {}, r.name || "(inline)"),
        h("dt", {}, "Input"), h("dd", {}, h("pre", {}, JSON.stringify(r.input ?? {}, null, 1))),
        r.error ? [h("dt", {}, "Error"), h("dd", {}, r.error.message || JSON.stringify(r.error))] : null),
      live ? h("div", { class: "bar" }, h("button", { type: "button", class: "danger", id: "cancel-run", onclick: async () => {
        const res = await api("POST", `${base}/cancel`);
        fill(message, res.ok ? notice("Cancelled.") : notice(errorText(res), true));
        load();
      } }, "Cancel run")) : null);
    drawDag(r);
    fill(steps, h("h2", {}, "Steps"), h("table", {},
      h("thead", {}, h("tr", {}, ["Step", "Kind", "Status", "Attempts", "Timing", "Detail"].map((t) => h("th", {}, t)))),
      h("tbody", {}, (r.steps || []).map((s) => stepRow(r, s)))));
    fill(report, ...(r.report ? [h("h2", {}, "Report"), markdown(r.report)] : []));
  }

  function drawDag(r) {
    const deps = new Map(((r.spec && r.spec.steps) || []).map((s) => [s.id, s.deps || []]));
    const depth = new Map();
    const depthOf = (sid, seen = new Set()) => {
      if (depth.has(sid)) return depth.get(sid);
      if (seen.has(sid)) return 0;
      seen.add(sid);
      const d = Math.max(-1, ...(deps.get(sid) || []).map((p) => depthOf(p, seen))) + 1;
      depth.set(sid, d);
      return d;
    };
    const layers = [];
    for (const s of r.steps || []) (layers[depthOf(s.id)] ||= []).push(s);
    fill(dag, ...layers.map((layer) => h("div", { class: "layer" }, layer.map((s) =>
      h("div", { class: `node s-${s.status}`, "data-step": s.id, title: (deps.get(s.id) || []).length ? `after ${deps.get(s.id).join(", ")}` : "first" },
        h("div", { class: "id" }, s.id), h("div", {}, `${s.kind} · ${s.status}`),
        (deps.get(s.id) || []).length ? h("div", { class: "muted deps" }, `after ${deps.get(s.id).join(", ")}`) : null)))));
    // The edges, once the nodes have their places: a line from each
    // dependency's right side to its dependent's left side, under the nodes.
    requestAnimationFrame(() => {
      const box = dag.getBoundingClientRect();
      const at = new Map([...dag.querySelectorAll(".node")].map((n) => [n.dataset.step, n.getBoundingClientRect()]));
      const svg = document.createElementNS(SVG, "svg");
      svg.setAttribute("class", "edges");
      svg.setAttribute("width", dag.scrollWidth);
      svg.setAttribute("height", dag.scrollHeight);
      svg.setAttribute("aria-hidden", "true");
      for (const [sid, before] of deps) {
        const to = at.get(sid);
        for (const dep of before) {
          const from = at.get(dep);
          if (!from || !to) continue;
          const x1 = from.right - box.left + dag.scrollLeft, y1 = from.top + from.height / 2 - box.top;
          const x2 = to.left - box.left + dag.scrollLeft, y2 = to.top + to.height / 2 - box.top;
          const path = document.createElementNS(SVG, "path");
          const mid = (x1 + x2) / 2;
          path.setAttribute("d", `M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}`);
          path.setAttribute("data-edge", `${dep}>${sid}`);
          svg.append(path);
        }
      }
      dag.prepend(svg);
    });
  }

  function stepRow(r, s) {
    const detail = [];
    if (s.skip_reason) detail.push(h("div", {}, `skipped: ${s.skip_reason}`));
    if (s.switch) detail.push(h("div", {}, `chose ${s.switch.chosen}`));
    if (s.iteration) detail.push(h("div", {}, `iteration ${s.iteration}`));
    if (s.message) detail.push(h("div", {}, s.message));
    if (s.error) detail.push(h("div", { class: "field-error" }, s.error.message || JSON.stringify(s.error)));
    if (s.output !== undefined && s.output !== null) {
      const text = typeof s.output === "string" ? s.output : JSON.stringify(s.output, null, 1);
      detail.push(h("details", {}, h("summary", {}, "output"), h("pre", {}, text.length > 20000 ? `${text.slice(0, 20000)}\n… (${text.length} characters)` : text)));
    }
    if (outputs.has(s.id) && s.status === "running") detail.push(outputs.get(s.id));
    if (s.status === "waiting" && s.kind === "approval") {
      const comment = h("input", { placeholder: "comment", "aria-label": `comment on ${s.id}`, class: "approval-comment" });
      const decide = async (verb) => {
        const res = await api("POST", `${base}/steps/${encodeURIComponent(s.id)}/${verb}`, { comment: comment.value || null });
        fill(message, res.ok ? notice(`${s.id}: ${verb === "approve" ? "approved" : "rejected"}.`) : notice(errorText(res), true));
        load();
      };
      detail.push(h("div", { class: "bar" }, comment,
        h("button", { type: "button", class: "primary approve", onclick: () => decide("approve") }, "Approve"),
        h("button", { type: "button", class: "danger reject", onclick: () => decide("reject") }, "Reject")));
    }
    if (s.approval) detail.push(h("div", {}, `${s.approval.approved ? "approved" : "rejected"}${s.approval.by ? ` by ${s.approval.by}` : ""}${s.approval.comment ? `: ${s.approval.comment}` : ""}`));
    const timing = [s.started_at ? `started ${ago(s.started_at)}` : null, s.finished_at && s.started_at ? `took ${duration(s.finished_at - s.started_at)}` : null,
      s.deadline_at && s.status === "running" ? `deadline in ${duration(Math.max(0, s.deadline_at - Date.now()))}` : null,
      s.available_at && s.status === "pending" ? `retry in ${duration(Math.max(0, s.available_at - Date.now()))}` : null].filter(Boolean).join(" · ");
    return h("tr", { "data-step": s.id }, h("td", {}, s.id), h("td", {}, s.kind), h("td", {}, badge(s.status)),
      h("td", {}, String(s.attempt || 0), (s.attempts || []).length ? h("details", {}, h("summary", {}, "history"),
        (s.attempts || []).map((a) => h("div", {}, `#${a.attempt}: ${a.outcome}${a.error ? ` — ${a.error.message || ""}` : ""}`))) : null),
      h("td", {}, timing || "—"), h("td", {}, detail));
  }

  const reload = debounce(load, 200);
  return {
    el: h("section", {}, h("p", {}, h("a", { href: "#/runs" }, "← Runs")), head, message, dag, steps, report),
    load,
    onEvent(type, data) {
      if (type === "gap" || type === "reset") { reload(); return; }
      if (data.run_id !== id) return;
      if (type === "agent_output") {
        if (!outputs.has(data.step_id)) outputs.set(data.step_id, h("div", { class: "output" }));
        appendOutput(outputs.get(data.step_id), data);
      } else reload();
    },
  };
}

// ----- agents -----

export function agents() {
  const body = h("tbody");
  async function load() {
    const result = await api("GET", "/api/agents");
    if (!result.ok) { fill(body, h("tr", {}, h("td", { colspan: 7 }, notice(errorText(result), true)))); return; }
    const list = Array.isArray(result.data) ? result.data : result.data.agents || [];
    fill(body, ...list.map((a) => h("tr", {},
      h("td", {}, a.identity), h("td", {}, a.kind), h("td", {}, a.lane || "—"),
      h("td", {}, (a.models || []).join(", ") || "—"),
      h("td", {}, a.installed === false ? "not installed" : a.reachable === false ? "unreachable" : "ready", a.error ? h("div", { class: "field-error" }, a.error.message || String(a.error)) : null),
      h("td", {}, a.sandbox === "none" ? "none (no process)" : a.sandbox || "—"),
      h("td", {}, a.command ? h("code", {}, a.command) : a.preset || "—"))));
  }
  return {
    el: h("section", {}, h("h1", {}, "Agents"),
      h("p", { class: "muted" }, "The agents of this server's coderig.toml. Sandbox: what confines the processes an agent's turns start — the [sandbox] mode (enforce: the kernel enforces the whole policy or nothing starts; auto: what it can; off: nothing); none for agents that start no process."),
      h("table", {}, h("thead", {}, h("tr", {}, ["Agent", "Kind", "Lane", "Models", "State", "Sandbox", "Command"].map((t) => h("th", {}, t)))), body)),
    load,
  };
}
