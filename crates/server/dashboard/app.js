// The dashboard's frame: DOM building (text only), the API client, the
// live event stream and the hash router. The pages live in views.js.
//
// Every node is built with textContent: untrusted text (agent output,
// diffs, prompts, judge text) is never parsed as HTML.

import * as views from "./views.js";

/** h("div", {class: "x", onclick: f}, "text", child, [more]) → an element. */
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "class") el.className = value;
    else if (key === "text") el.textContent = value;
    else if (key === "value") el.value = value;
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

/** Replaces el's children (arrays flattened, null/false skipped). */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** A status as a coloured badge. */
export function badge(status) {
  return h("span", { class: `status s-${String(status || "unknown").replace(/[^a-z_]/g, "")}` }, status || "—");
}

/** "3 s ago", "2 h ago" from epoch milliseconds. */
export function ago(ms) {
  if (!ms) return "—";
  const s = Math.max(0, (Date.now() - ms) / 1000);
  if (s < 60) return `${Math.round(s)} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

/** Milliseconds as "1.2 s" / "3 min 4 s". */
export function duration(ms) {
  if (ms === undefined || ms === null) return "—";
  if (ms < 1000) return `${ms} ms`;
  const s = ms / 1000;
  if (s < 120) return `${s.toFixed(1)} s`;
  return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
}

/** Calls the API; resolves to {ok, status, data} (data: JSON, or text). */
export async function api(method, path, body) {
  const headers = { "X-Coderig-Dashboard": "1" };
  const init = { method, headers, credentials: "same-origin" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (e) {
    return { ok: false, status: 0, data: { error: { kind: "io", message: `the server cannot be reached: ${e.message}` } } };
  }
  const type = response.headers.get("content-type") || "";
  const data = type.includes("json") ? await response.json().catch(() => null) : await response.text();
  if (response.status === 401 && path !== "/ui/session") showLogin();
  return { ok: response.ok, status: response.status, data };
}

/** The error message of a failed call, for a notice. */
export function errorText(result) {
  const e = result.data && result.data.error;
  if (!e) return `the server answered ${result.status}`;
  return `${e.message}${e.kind ? ` (${e.kind})` : ""}`;
}

/** A notice element: info or error. */
export function notice(text, error) {
  return h("div", { class: error ? "notice error" : "notice", role: error ? "alert" : "status" }, text);
}

// ----- the live stream -----

const STREAM_TYPES = ["battle_started", "contestant_updated", "battle_updated", "run_updated",
  "step_updated", "agent_output", "task_rescued", "gap", "reset"];
let source = null;
let current = null;

function startStream() {
  if (source) source.close();
  const live = document.getElementById("live");
  // EventSource resumes by itself after a drop, sending Last-Event-ID:
  // the server replays what was missed (or says gap / reset).
  source = new EventSource("/api/events");
  source.onopen = () => { live.textContent = "live"; live.classList.remove("down"); };
  source.onerror = () => { live.textContent = "reconnecting…"; live.classList.add("down"); };
  for (const type of STREAM_TYPES) {
    source.addEventListener(type, (message) => {
      let data = {};
      try { data = JSON.parse(message.data); } catch { return; }
      if (current && current.onEvent) current.onEvent(type, data);
    });
  }
}

// ----- login (with --token) -----

function showLogin() {
  if (document.getElementById("token-form")) return;
  if (source) { source.close(); source = null; }
  const main = document.getElementById("main");
  const input = h("input", { type: "password", id: "token", name: "token", autocomplete: "current-password", required: true });
  const error = h("div", { class: "field-error", id: "token-error", role: "alert" });
  const form = h("form", { class: "card token-prompt", id: "token-form", onsubmit: async (event) => {
    event.preventDefault();
    const result = await api("POST", "/ui/session", { token: input.value });
    if (result.ok) { route(); startStream(); } else { error.textContent = errorText(result); input.classList.add("invalid"); }
  } },
  h("h1", {}, "This server needs its token"),
  h("label", { for: "token" }, "Token (the one given to --token)", input),
  error,
  h("button", { class: "primary", type: "submit" }, "Open the dashboard"));
  main.replaceChildren(form);
  input.focus();
}

// ----- the router -----

const PAGES = [
  [/^#\/battles\/([^/]+)$/, (m) => views.battle(decodeURIComponent(m[1]))],
  [/^#\/battles$/, () => views.battles()],
  [/^#\/leaderboard$/, () => views.leaderboard()],
  [/^#\/runs\/([^/]+)$/, (m) => views.run(decodeURIComponent(m[1]))],
  [/^#\/runs$/, () => views.runs()],
  [/^#\/agents$/, () => views.agents()],
];

async function route() {
  const hash = location.hash || "#/battles";
  if (current && current.dispose) current.dispose();
  current = null;
  for (const link of document.querySelectorAll("nav a")) {
    link.classList.toggle("active", hash.startsWith(link.getAttribute("href")));
  }
  const main = document.getElementById("main");
  for (const [pattern, page] of PAGES) {
    const m = hash.match(pattern);
    if (!m) continue;
    const view = page(m);
    current = view;
    main.replaceChildren(view.el);
    if (view.load) await view.load();
    return;
  }
  main.replaceChildren(notice(`No page at ${hash}.`, true));
}

async function boot() {
  const session = await api("GET", "/ui/session");
  window.addEventListener("hashchange", route);
  if (session.ok && session.data && session.data.token_required) {
    document.querySelector(".top").append(h("button", { type: "button", id: "sign-out", onclick: async () => {
      await api("DELETE", "/ui/session");
      location.reload();
    } }, "Sign out"));
  }
  if (session.ok && session.data && !session.data.authenticated) { showLogin(); return; }
  startStream();
  route();
}

boot();
