//! The native agent's time per tool step, the model excluded, beside a
//! naive tool loop, in one run: request building, parsing the streamed
//! reply, and running `read_file` / `edit_file` / `grep` on a generated
//! 10,000-line Python repository, after a transcript of 30 prior steps.
//!
//! - `coderig`: what [`NativeAgent`](coderig::agent::native::NativeAgent)
//!   does per step — [`context::shape`] of the transcript (old outputs
//!   elided), [`wire::request_body`] for Chat Completions, `serde_json::to_vec`
//!   (what reqwest's `.json` does); the reply's SSE bytes through
//!   [`SseDecoder`], [`WireStream::feed`] and [`CallAccumulator::finish`]
//!   (schema coercion included); the call through [`ToolBox::call`] on a
//!   current-thread tokio runtime.
//! - `naive`: a loop that keeps the chat messages as `serde_json::Value`s
//!   and serializes the whole history every step (borrowed, no clone — the
//!   cheapest naive form); parses each SSE event into a `Value` and joins
//!   the argument strings, then `serde_json::from_str`; reads whole files
//!   and numbers every line; edits by exact `replacen` + `fs::write`; greps
//!   by walking every file (std recursion, no ignore rules) and matching
//!   every line.
//!
//! The naive edit is given the exact old text (it cannot match drifted
//! text); coderig's is drifted (indentation and quotes). Edits alternate
//! between two edits that undo each other, so every iteration edits.
//!
//! Also printed (not timed): the request size at steps 0–300 for both.
//! Results: `benches/RESULTS-native.md`.
//!
//! `cargo bench -p coderig --features http --bench native_step -- --warm-up-time 1 --measurement-time 3`
//! (the repository is created under `TMPDIR`; `TMPDIR=/dev/shm` takes the
//! disk's fsync out of coderig's edit, which syncs the file and its folder).

use coderig::agent::native::calls::{CallAccumulator, IdMinter};
use coderig::agent::native::context::{self, Budget};
use coderig::agent::native::tools::{ToolBox, ToolSettings};
use coderig::agent::native::wire::{self, WireStream};
use coderig::agent::native::{
    prompt, Api, FinishReason, Message, Piece, Request, ToolCall, ToolSpec, ToolsMode,
};
use coderig::agent::openai_sse::SseDecoder;
use coderig::agent::Access;
use coderig::sandbox::NetworkPolicy;
use criterion::{criterion_group, criterion_main, Criterion};
use regex::Regex;
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::fs;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const MODEL: &str = "qwen3-coder-30b-a3b";
/// A common local server setting (llama.cpp `-c 32768`).
const WINDOW: u32 = 32_768;
/// Prior steps before the measured one.
const STEPS: usize = 30;
/// Steps of the size table.
const MAX_STEPS: usize = 300;
/// Network reads per streamed reply.
const NET_CHUNKS: usize = 20;

const BIG_FILES: usize = 4;
const BIG_LINES: usize = 1_000;
const SMALL_FILES: usize = 40;
const SMALL_LINES: usize = 150;
const PACKAGES: [&str; 5] = ["io", "model", "util", "api", "cli"];

// ---- the repository ----

/// Lines of one parser function of module `id` (10 with the blank line).
fn block(id: usize, f: usize) -> String {
    format!(
        "def parse_{id}_{f}(value, limit={f}):\n    \"\"\"Parse the records of kind {id}.{f}.\"\"\"\n    total = 0\n    for item in value[:limit]:\n        if item is None:\n            continue\n        total += compute(\"key_{id}_{f}\", item)\n    result = {{\"id\": {f}, \"total\": total}}\n    return result\n\n"
    )
}

/// A Python module of exactly `lines` lines.
fn module(id: usize, lines: usize) -> String {
    let mut s = format!(
        "\"\"\"Module {id}: records and their parsers.\"\"\"\nfrom __future__ import annotations\n\nfrom app.util.base import compute\n\n"
    );
    let mut n = 5;
    let mut f = 0;
    while n + 10 <= lines {
        s.push_str(&block(id, f));
        n += 10;
        f += 1;
    }
    while n < lines {
        s.push_str(&format!("LIMIT_{id}_{n} = {n}\n"));
        n += 1;
    }
    s
}

fn big_path(i: usize) -> String {
    format!("src/app/core/engine_{i}.py")
}

fn small_path(j: usize) -> String {
    format!("src/app/{}/mod_{j}.py", PACKAGES[j % PACKAGES.len()])
}

fn big_id(i: usize) -> usize {
    100 + i
}

/// 4 modules of 1,000 lines and 40 of 150 (10,000 tracked lines), a
/// `.gitignore`, and what it ignores: a `build/` copy of the big modules
/// and a `__pycache__` of binary `.pyc` files per package.
fn make_repo(root: &Path) -> usize {
    let put = |rel: &str, content: &[u8]| {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, content).unwrap();
    };
    put(".gitignore", b"__pycache__/\n*.pyc\nbuild/\n*.egg-info/\n");
    let mut lines = 0;
    for i in 0..BIG_FILES {
        let m = module(big_id(i), BIG_LINES);
        lines += m.lines().count();
        put(&big_path(i), m.as_bytes());
        put(&format!("build/lib/app/core/engine_{i}.py"), m.as_bytes());
    }
    for j in 0..SMALL_FILES {
        let m = module(j, SMALL_LINES);
        lines += m.lines().count();
        put(&small_path(j), m.as_bytes());
    }
    for (k, p) in PACKAGES.iter().chain(["core"].iter()).enumerate() {
        for j in 0..9 {
            let pyc: Vec<u8> = (0..4096u32)
                .map(|b| (b.wrapping_mul(2_654_435_761).wrapping_add(k as u32) >> 13) as u8)
                .collect();
            put(
                &format!("src/app/{p}/__pycache__/mod_{j}.cpython-312.pyc"),
                &pyc,
            );
        }
    }
    lines
}

// ---- the calls ----

fn read_args(s: usize) -> Value {
    if s.is_multiple_of(2) {
        json!({"path": big_path(s / 2 % BIG_FILES), "offset": (s / 8 % 4) * 250 + 1, "limit": 250})
    } else {
        json!({"path": small_path(s * 7 % SMALL_FILES)})
    }
}

/// The call of prior step `s`: greps, exact edits of the small modules,
/// reads (a 250-line window of a big module, or a whole small one).
fn prior_call(s: usize) -> (String, Value) {
    match s % 5 {
        1 => (
            "grep".into(),
            json!({"pattern": format!(r"def parse_\d+_{}\(", s % 14)}),
        ),
        3 => {
            let (j, f) = (s / 5 % SMALL_FILES, s / 5 / SMALL_FILES % 14);
            let line = format!("        total += compute(\"key_{j}_{f}\", item)");
            (
                "edit_file".into(),
                json!({"path": small_path(j), "old": line, "new": format!("{line} + 1")}),
            )
        }
        _ => ("read_file".into(), read_args(s)),
    }
}

/// The measured edit: lines 6–8 of `parse_101_42` in `engine_1.py`, and
/// back. `drifted`: as a model misremembers them (dedented by four spaces,
/// a trailing space), what coderig is sent; else exact, what the naive loop
/// is. (Single quotes for double would make the drifted text a fuzzy match
/// among 99 near-identical blocks, which the engine rightly refuses.)
fn edit_args(forward: bool, drifted: bool) -> Value {
    let (id, f) = (big_id(1), 42);
    let lines = |drifted: bool, tail: &str| {
        let (indent, space) = if drifted { ("", " ") } else { ("    ", "") };
        format!(
            "{indent}    if item is None:{space}\n{indent}        continue\n{indent}    total += compute(\"key_{id}_{f}\", item){tail}"
        )
    };
    let (old, new) = if forward {
        (lines(drifted, ""), lines(false, " * 2"))
    } else {
        (lines(drifted, " * 2"), lines(false, ""))
    };
    json!({"path": big_path(1), "old": old, "new": new})
}

fn measured_call(tool: &str) -> Value {
    match tool {
        "read_file" => json!({"path": big_path(2), "offset": 501, "limit": 250}),
        "grep" => json!({"pattern": r"def parse_\d+_7\("}),
        _ => unreachable!(),
    }
}

// ---- the streamed reply ----

/// Token-sized pieces (about 4 bytes, on character boundaries).
fn tokens(s: &str) -> Vec<&str> {
    let mut out = vec![];
    let mut start = 0;
    for (i, _) in s.char_indices() {
        if i - start >= 4 {
            out.push(&s[start..i]);
            start = i;
        }
    }
    if start < s.len() {
        out.push(&s[start..]);
    }
    out
}

/// The SSE bytes of a Chat Completions reply as llama.cpp streams it — a
/// role chunk, a short text a token at a time, the call opened with its
/// id and name, its arguments a token at a time, the finish, the usage,
/// `[DONE]` — cut into [`NET_CHUNKS`] network reads (mid-event).
fn sse_reply(name: &str, args: &Value) -> Vec<Vec<u8>> {
    let head = json!({"id": "chatcmpl-7f3a", "object": "chat.completion.chunk", "created": 1767036059, "model": MODEL});
    let chunk = |delta: Value, finish: Value| {
        let mut c = head.clone();
        c["choices"] = json!([{"index": 0, "delta": delta, "finish_reason": finish}]);
        format!("data: {c}\n\n")
    };
    let mut s = chunk(json!({"role": "assistant", "content": ""}), Value::Null);
    for t in tokens("Let me look at that next.") {
        s.push_str(&chunk(json!({"content": t}), Value::Null));
    }
    s.push_str(&chunk(
        json!({"tool_calls": [{"index": 0, "id": "call_Xq81fJ2", "type": "function", "function": {"name": name, "arguments": ""}}]}),
        Value::Null,
    ));
    let text = args.to_string();
    for t in tokens(&text) {
        s.push_str(&chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": t}}]}),
            Value::Null,
        ));
    }
    s.push_str(&chunk(json!({}), json!("tool_calls")));
    let mut usage = head.clone();
    usage["choices"] = json!([]);
    usage["usage"] =
        json!({"prompt_tokens": 12000, "completion_tokens": 60, "total_tokens": 12060});
    s.push_str(&format!("data: {usage}\n\ndata: [DONE]\n\n"));
    let bytes = s.into_bytes();
    bytes
        .chunks(bytes.len().div_ceil(NET_CHUNKS))
        .map(<[u8]>::to_vec)
        .collect()
}

/// A reply as its network reads.
type Reads = Vec<Vec<u8>>;

// ---- coderig ----

struct Coderig {
    rt: tokio::runtime::Runtime,
    tools: ToolBox,
    cancel: CancellationToken,
    specs: Vec<ToolSpec>,
    system: String,
    budget: Budget,
    fixed: u32,
    extra: Map<String, Value>,
}

impl Coderig {
    fn new(root: &Path) -> Self {
        let tools = ToolBox::new(ToolSettings {
            workdir: root.to_path_buf(),
            access: Access::Edit,
            mode: ToolsMode::Coderig,
            hashline: false,
            sandbox: None,
            network: NetworkPolicy::Deny,
            run_timeout: Duration::from_secs(60),
            env: Default::default(),
        })
        .unwrap();
        let specs = tools.specs().to_vec();
        let system = prompt::system_prompt(None, ToolsMode::Coderig, WINDOW, None);
        let budget = Budget::new(WINDOW, 4096);
        let fixed = context::fixed_tokens(&system, &specs);
        Coderig {
            rt: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap(),
            tools,
            cancel: CancellationToken::new(),
            specs,
            system,
            budget,
            fixed,
            extra: Map::new(),
        }
    }

    /// The request body's bytes for `transcript`, and what shaping did.
    fn request(&self, transcript: &[Message]) -> (Vec<u8>, context::Shaped) {
        let shaped = context::shape(transcript, self.fixed, self.budget).unwrap();
        let req = Request {
            model: MODEL,
            system: &self.system,
            messages: &shaped.messages,
            tools: &self.specs,
            max_output_tokens: Some(self.budget.reply),
            extra: &self.extra,
        };
        let body = wire::request_body(Api::Chat, &req);
        (serde_json::to_vec(&body).unwrap(), shaped)
    }

    /// The one call of a streamed reply, as the agent reads it.
    fn parse(&self, reads: &[Vec<u8>]) -> ToolCall {
        let mut sse = SseDecoder::new();
        let mut stream = WireStream::new(Api::Chat);
        let mut text = String::new();
        let mut calls = CallAccumulator::default();
        let mut finish = None;
        let frames = reads
            .iter()
            .flat_map(|r| sse.push(r).unwrap())
            .collect::<Vec<_>>()
            .into_iter()
            .chain(sse.finish().unwrap());
        for f in frames {
            for p in stream.feed(f.event.as_deref(), &f.data).unwrap() {
                match p {
                    Piece::Text(t) => text.push_str(&t),
                    Piece::Call(c) => calls.push(c),
                    Piece::Finish(r) => finish = Some(r),
                    _ => {}
                }
            }
        }
        stream.end().unwrap();
        let mut ids = IdMinter::new("bench");
        let mut read = calls.finish(&text, finish.as_ref(), &self.specs, &mut ids);
        assert_eq!(finish, Some(FinishReason::ToolCalls));
        assert_eq!(read.calls.len(), 1, "{read:?}");
        read.calls.remove(0).call
    }

    fn run(&mut self, call: &ToolCall) -> String {
        let r = self.rt.block_on(self.tools.call(call, &self.cancel));
        assert!(r.ok, "{}: {}", call.name, r.output);
        r.output
    }
}

// ---- naive ----

#[derive(Serialize)]
struct NaiveBody<'a> {
    model: &'a str,
    messages: &'a [Value],
    tools: &'a [Value],
    stream: bool,
    max_tokens: u32,
}

struct Naive {
    root: PathBuf,
    tools: Vec<Value>,
}

impl Naive {
    /// The whole history, every step.
    fn request(&self, history: &[Value]) -> Vec<u8> {
        serde_json::to_vec(&NaiveBody {
            model: MODEL,
            messages: history,
            tools: &self.tools,
            stream: true,
            max_tokens: 4096,
        })
        .unwrap()
    }

    /// Each event into a `Value`, the argument strings joined, then parsed.
    fn parse(reads: &[Vec<u8>]) -> (String, Value) {
        let mut buf: Vec<u8> = vec![];
        let (mut name, mut args, mut text) = (String::new(), String::new(), String::new());
        for r in reads {
            buf.extend_from_slice(r);
            while let Some(end) = buf.windows(2).position(|w| w == b"\n\n") {
                let event: Vec<u8> = buf.drain(..end + 2).collect();
                let event = String::from_utf8(event).unwrap();
                for line in event.lines() {
                    let Some(data) = line.strip_prefix("data: ") else {
                        continue;
                    };
                    if data == "[DONE]" {
                        continue;
                    }
                    let v: Value = serde_json::from_str(data).unwrap();
                    let delta = &v["choices"][0]["delta"];
                    if let Some(t) = delta["content"].as_str() {
                        text.push_str(t);
                    }
                    for tc in delta["tool_calls"].as_array().into_iter().flatten() {
                        if let Some(n) = tc["function"]["name"].as_str() {
                            name = n.to_string();
                        }
                        if let Some(a) = tc["function"]["arguments"].as_str() {
                            args.push_str(a);
                        }
                    }
                }
            }
        }
        black_box(text);
        (name, serde_json::from_str(&args).unwrap())
    }

    fn run(&self, name: &str, args: &Value) -> String {
        let path = |a: &Value| self.root.join(a["path"].as_str().unwrap());
        match name {
            "read_file" => {
                let text = fs::read_to_string(path(args)).unwrap();
                let mut out = String::new();
                for (n, line) in text.lines().enumerate() {
                    out.push_str(&format!("{}|{line}\n", n + 1));
                }
                out
            }
            "edit_file" => {
                let p = path(args);
                let text = fs::read_to_string(&p).unwrap();
                let old = args["old"].as_str().unwrap();
                assert!(text.contains(old), "naive edit: old text not found");
                fs::write(&p, text.replacen(old, args["new"].as_str().unwrap(), 1)).unwrap();
                format!("Edited {}", args["path"].as_str().unwrap())
            }
            "grep" => {
                let re = Regex::new(args["pattern"].as_str().unwrap()).unwrap();
                let mut out = String::new();
                grep_dir(&self.root, &self.root, &re, &[], &mut out);
                out
            }
            _ => unreachable!(),
        }
    }
}

/// Every file under `dir` (but folders named in `skip`), every line.
fn grep_dir(root: &Path, dir: &Path, re: &Regex, skip: &[&str], out: &mut String) {
    for e in fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        let t = e.file_type().unwrap();
        if t.is_dir() {
            if !skip.iter().any(|s| e.file_name() == *s) {
                grep_dir(root, &p, re, skip, out);
            }
        } else if t.is_file() {
            let Ok(text) = fs::read_to_string(&p) else {
                continue;
            };
            let shown = p.strip_prefix(root).unwrap().display().to_string();
            for (n, line) in text.lines().enumerate() {
                if re.is_match(line) {
                    out.push_str(&format!("{shown}:{}: {line}\n", n + 1));
                }
            }
        }
    }
}

fn naive_call(id: &str, name: &str, args: &Value) -> Value {
    json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function",
        "function": {"name": name, "arguments": args.to_string()}}]})
}

fn naive_result(id: &str, output: &str) -> Value {
    json!({"role": "tool", "tool_call_id": id, "content": output})
}

// ---- the run ----

const TASK: &str = "The parsers in src/app skip None items but count empty strings; make them skip empty strings too, and double the weight of engine 1's kind 42. Run the tests when done.";

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(dir.path()).unwrap();
    let lines = make_repo(&root);
    assert_eq!(lines, 10_000);
    let mut cr = Coderig::new(&root);
    let naive = Naive {
        root: root.clone(),
        tools: cr
            .specs
            .iter()
            .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}))
            .collect(),
    };

    // The transcripts of MAX_STEPS prior steps, each tool run for real by
    // both (an edit run by coderig is undone before the naive loop runs it).
    let mut transcript = vec![Message::User { text: TASK.into() }];
    let mut history = vec![
        json!({"role": "system", "content": cr.system}),
        json!({"role": "user", "content": TASK}),
    ];
    let mut ends = vec![(transcript.len(), history.len())];
    for s in 0..MAX_STEPS {
        let (name, args) = prior_call(s);
        let id = format!("call_{s}");
        let call = ToolCall {
            id: id.clone(),
            name: name.clone(),
            arguments: args.clone(),
        };
        let before = args["path"]
            .as_str()
            .filter(|_| name == "edit_file")
            .map(|p| (root.join(p), fs::read(root.join(p)).unwrap()));
        let out = cr.run(&call);
        if let Some((p, content)) = &before {
            fs::write(p, content).unwrap();
        }
        let naive_out = naive.run(&name, &args);
        transcript.push(Message::Assistant {
            text: String::new(),
            reasoning: String::new(),
            calls: vec![call],
        });
        transcript.push(Message::Tool {
            call_id: id.clone(),
            name: name.clone(),
            output: out,
            is_error: false,
        });
        history.push(naive_call(&id, &name, &args));
        history.push(naive_result(&id, &naive_out));
        ends.push((transcript.len(), history.len()));
    }
    let transcript_at = |n: usize| &transcript[..ends[n].0];
    let history_at = |n: usize| &history[..ends[n].1];

    eprintln!(
        "repository: {lines} tracked lines in {} files (+ build/ and __pycache__/ ignored)",
        BIG_FILES + SMALL_FILES
    );
    eprintln!("request bytes after n steps (Chat Completions body):");
    eprintln!("  steps  coderig(shaped)  est.tokens  elided  summarized  coderig(unshaped)  naive(full history, whole files)");
    for n in [0, 1, 5, 10, 20, 30, 50, 100, 200, 300] {
        let (body, shaped) = cr.request(transcript_at(n));
        let unshaped = {
            let req = Request {
                model: MODEL,
                system: &cr.system,
                messages: transcript_at(n),
                tools: &cr.specs,
                max_output_tokens: Some(cr.budget.reply),
                extra: &cr.extra,
            };
            serde_json::to_vec(&wire::request_body(Api::Chat, &req))
                .unwrap()
                .len()
        };
        let nb = naive.request(history_at(n)).len();
        eprintln!(
            "  {n:>5}  {:>15}  {:>10}  {:>6}  {:>10}  {unshaped:>17}  {nb:>12} (~{} tokens)",
            body.len(),
            shaped.tokens,
            shaped.elided,
            shaped.summarized,
            nb.div_ceil(3)
        );
    }

    let t30 = transcript_at(STEPS).to_vec();
    let h30 = history_at(STEPS).to_vec();
    let edit_file = root.join(big_path(1));
    let original = fs::read(&edit_file).unwrap();

    // The replies, and a check that both loops do what they should.
    let mut replies: Vec<(&str, [Reads; 2], [Reads; 2])> = vec![];
    for tool in ["read_file", "edit_file", "grep"] {
        let pick = |forward: bool, drifted: bool| {
            if tool == "edit_file" {
                sse_reply(tool, &edit_args(forward, drifted))
            } else {
                sse_reply(tool, &measured_call(tool))
            }
        };
        let coderig_replies = [pick(true, true), pick(false, true)];
        let naive_replies = [pick(true, false), pick(false, false)];
        let out = cr.run(&cr.parse(&coderig_replies[0]));
        if tool == "edit_file" {
            let edited = fs::read_to_string(&edit_file).unwrap();
            let want = edit_args(true, false)["new"].as_str().unwrap().to_string();
            assert!(
                edited.contains(&want),
                "the drifted edit wrote the new text as given"
            );
        }
        let out_back = cr.run(&cr.parse(&coderig_replies[1]));
        if tool == "edit_file" {
            assert_eq!(
                fs::read(&edit_file).unwrap(),
                original,
                "the two edits undo each other"
            );
            eprintln!(
                "coderig edit_file (drifted): {}",
                out.lines().next().unwrap()
            );
            eprintln!(
                "coderig edit_file back: {}",
                out_back.lines().next().unwrap()
            );
        }
        let (name, args) = Naive::parse(&naive_replies[0]);
        let naive_out = naive.run(&name, &args);
        let (name, args) = Naive::parse(&naive_replies[1]);
        naive.run(&name, &args);
        assert_eq!(fs::read(&edit_file).unwrap(), original);
        let sse_bytes: usize = coderig_replies[0].iter().map(Vec::len).sum();
        let events = coderig_replies[0]
            .concat()
            .windows(2)
            .filter(|w| w == b"\n\n")
            .count();
        eprintln!(
            "{tool}: reply {sse_bytes} B in {events} SSE events / {NET_CHUNKS} reads; output coderig {} B ({} lines), naive {} B ({} lines)",
            out.len(),
            out.lines().count(),
            naive_out.len(),
            naive_out.lines().count()
        );
        replies.push((tool, coderig_replies, naive_replies));
    }

    let mut g = c.benchmark_group("request");
    g.sample_size(50);
    g.bench_function("coderig", |b| {
        b.iter(|| black_box(cr.request(black_box(&t30)).0.len()))
    });
    g.bench_function("naive", |b| {
        b.iter(|| black_box(naive.request(black_box(&h30)).len()))
    });
    g.bench_function("coderig_shape_only", |b| {
        b.iter(|| black_box(context::shape(black_box(&t30), cr.fixed, cr.budget).unwrap()))
    });
    g.finish();

    for (tool, cre, nre) in &replies {
        let mut g = c.benchmark_group(format!("parse/{tool}"));
        g.sample_size(50);
        g.bench_function("coderig", |b| {
            b.iter(|| black_box(cr.parse(black_box(&cre[0]))))
        });
        g.bench_function("naive", |b| {
            b.iter(|| black_box(Naive::parse(black_box(&nre[0]))))
        });
        g.finish();
    }

    for (tool, cre, nre) in &replies {
        let mut g = c.benchmark_group(format!("tool/{tool}"));
        g.sample_size(50);
        let calls = [cr.parse(&cre[0]), cr.parse(&cre[1])];
        let naive_calls = [Naive::parse(&nre[0]), Naive::parse(&nre[1])];
        fs::write(&edit_file, &original).unwrap();
        let mut k = 0usize;
        g.bench_function("coderig", |b| {
            b.iter(|| {
                let call = &calls[k % 2];
                k += 1;
                black_box(cr.run(call))
            })
        });
        fs::write(&edit_file, &original).unwrap();
        let mut k = 0usize;
        g.bench_function("naive", |b| {
            b.iter(|| {
                let (name, args) = &naive_calls[k % 2];
                k += 1;
                black_box(naive.run(name, args))
            })
        });
        if *tool == "edit_file" {
            // The same exact edits as the naive loop's, through the tool:
            // what the tolerance of drift costs, apart from the rest.
            let exact = [cr.parse(&nre[0]), cr.parse(&nre[1])];
            fs::write(&edit_file, &original).unwrap();
            let mut k = 0usize;
            g.bench_function("coderig_exact_old", |b| {
                b.iter(|| {
                    let call = &exact[k % 2];
                    k += 1;
                    black_box(cr.run(call))
                })
            });
        }
        if *tool == "grep" {
            let args = &naive_calls[0].1;
            g.bench_function("naive_skipping_ignored_dirs", |b| {
                b.iter(|| {
                    let re = Regex::new(args["pattern"].as_str().unwrap()).unwrap();
                    let mut out = String::new();
                    grep_dir(&root, &root, &re, &["build", "__pycache__"], &mut out);
                    black_box(out)
                })
            });
        }
        g.finish();
    }

    for (tool, cre, nre) in &replies {
        let mut g = c.benchmark_group(format!("step/{tool}"));
        g.sample_size(50);
        fs::write(&edit_file, &original).unwrap();
        let mut k = 0usize;
        g.bench_function("coderig", |b| {
            b.iter(|| {
                let (body, _) = cr.request(&t30);
                black_box(body.len());
                let call = cr.parse(&cre[k % 2]);
                k += 1;
                black_box(cr.run(&call))
            })
        });
        fs::write(&edit_file, &original).unwrap();
        let mut k = 0usize;
        g.bench_function("naive", |b| {
            b.iter(|| {
                black_box(naive.request(&h30).len());
                let (name, args) = Naive::parse(&nre[k % 2]);
                k += 1;
                black_box(naive.run(&name, &args))
            })
        });
        g.finish();
    }
    fs::write(&edit_file, &original).unwrap();
}

criterion_group!(benches, bench);
criterion_main!(benches);
