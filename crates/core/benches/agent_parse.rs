//! Agent stream parsing throughput (MB/s of stdout) beside a naive
//! baseline, in one run, for each JSON format.
//!
//! - `parser`: [`coderig::agent::parse::parse_line`] — the `"type"` read
//!   from the line's prefix, unknown lines skipped unparsed, known ones
//!   parsed once into typed structs that borrow where they can and skip
//!   what they do not map.
//! - `naive`: `serde_json::from_str::<Value>` of every line, then a walk of
//!   the tree that clones strings into the same events (checked equal to
//!   the parser's on the whole corpus before timing).
//!
//! The corpus per format: the captured transcripts in
//! `tests/fixtures/agents/` (when present), then generated rounds shaped
//! like them with long texts, thinking, big tool inputs and outputs,
//! repeated to about 4 MB. Results: `benches/RESULTS-agent-parse.md`.
//!
//! `cargo bench -p coderig --bench agent_parse -- --warm-up-time 1 --measurement-time 3`
//! (`AGENT_PARSE_BY_TYPE=1` for a per-line-type breakdown instead).

use coderig::agent::parse::{parse_line, StreamFormat};
use coderig::agent::{AgentEvent, Usage};
use coderig::model::classify_error;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use serde_json::{json, Value};
use std::hint::black_box;

const TARGET_BYTES: usize = 4 << 20;

/// Deterministic prose of `n` bytes (with quotes, newlines and non-ASCII,
/// which JSON escapes, as real answers have).
fn prose(seed: usize, n: usize) -> String {
    const WORDS: &[&str] = &[
        "the",
        "parser",
        "reads",
        "\"quoted\"",
        "line",
        "naïve",
        "función",
        "{json}",
        "tab\tbed",
        "path/to/file.rs",
        "unwrap()",
        "→",
        "café",
        "0x1f",
        "newline\n",
        "edit",
        "diff",
    ];
    let mut s = String::with_capacity(n + 16);
    let mut i = seed;
    while s.len() < n {
        s.push_str(WORDS[i % WORDS.len()]);
        s.push(' ');
        i = i.wrapping_mul(31).wrapping_add(7);
    }
    s
}

/// `{"type":ty, ...fields}` with `type` first, as every CLI writes it
/// (`json!` would sort the keys and put it last).
fn line(ty: &str, fields: Value) -> String {
    let mut fields = fields;
    let rest = fields
        .as_object_mut()
        .map(std::mem::take)
        .unwrap_or_default();
    let rest = Value::Object(rest).to_string();
    if rest == "{}" {
        format!("{{\"type\":\"{ty}\"}}")
    } else {
        format!("{{\"type\":\"{ty}\",{}", &rest[1..])
    }
}

fn fixture_lines(prefixes: &[&str]) -> Vec<String> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/agents");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            prefixes.iter().any(|p| name.starts_with(p)) && name.ends_with(".jsonl")
        })
        .collect();
    paths.sort();
    paths
        .iter()
        .flat_map(|p| {
            std::fs::read_to_string(p)
                .unwrap_or_default()
                .lines()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

fn claude_round(i: usize) -> Vec<String> {
    let id = format!("toolu_{i:06}");
    vec![
        line(
            "assistant",
            json!({"message": {"id": format!("msg_{i}"), "type": "message", "role": "assistant", "model": "claude-opus-4-8",
            "content": [
                {"type": "thinking", "thinking": prose(i, 1500), "signature": "c2lnbmF0dXJl".repeat(20)},
                {"type": "text", "text": prose(i + 1, 800)},
                {"type": "tool_use", "id": id, "name": "Write", "input": {"file_path": format!("/work/src/mod_{i}.rs"), "content": prose(i + 2, 4000)}},
            ],
            "stop_reason": "tool_use", "usage": {"input_tokens": 2000 + i, "cache_read_input_tokens": 18000, "output_tokens": 900}},
            "parent_tool_use_id": null, "session_id": "0493c1de-9d8a-4a4f-a3a8-1f4f0b2b7e11", "uuid": format!("u{i}")}),
        ),
        line(
            "user",
            json!({"message": {"role": "user", "content": [
                {"tool_use_id": id, "type": "tool_result", "content": [{"type": "text", "text": prose(i + 3, 6000)}], "is_error": false}]},
            "parent_tool_use_id": null, "session_id": "0493c1de-9d8a-4a4f-a3a8-1f4f0b2b7e11",
            "tool_use_result": {"type": "text", "file": {"filePath": format!("/work/src/mod_{i}.rs"), "content": prose(i + 3, 6000)}}}),
        ),
        line(
            "rate_limit_event",
            json!({"rate_limit_info": {"status": "allowed", "resetsAt": 1767036059}}),
        ),
    ]
}

fn codex_round(i: usize) -> Vec<String> {
    let id = format!("item_{}", 3 * i);
    let cmd = json!({"id": id, "type": "command_execution", "command": format!("/bin/bash -lc 'cargo test -p crate_{i}'"), "aggregated_output": "", "exit_code": null, "status": "in_progress"});
    let mut done = cmd.clone();
    done["aggregated_output"] = json!(prose(i, 6000));
    done["exit_code"] = json!(0);
    done["status"] = json!("completed");
    vec![
        line("turn.started", json!({})),
        line(
            "item.completed",
            json!({"item": {"id": format!("item_{}", 3 * i + 1), "type": "reasoning", "text": prose(i + 1, 1500)}}),
        ),
        line("item.started", json!({"item": cmd})),
        line("item.updated", json!({"item": cmd})),
        line("item.completed", json!({"item": done})),
        line(
            "item.completed",
            json!({"item": {"id": format!("item_{}", 3 * i + 2), "type": "agent_message", "text": prose(i + 2, 1200)}}),
        ),
        line(
            "turn.completed",
            json!({"usage": {"input_tokens": 20000 + i, "cached_input_tokens": 18000, "cache_write_input_tokens": 0, "output_tokens": 900, "reasoning_output_tokens": 300}}),
        ),
    ]
}

fn opencode_round(i: usize) -> Vec<String> {
    let sid = "ses_494719016ffe85dkDMj0FPRbHK";
    let part = |ty: &str, extra: Value| {
        let mut p = json!({"id": format!("prt_{i}_{ty}"), "sessionID": sid, "messageID": format!("msg_{i}"), "type": ty});
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        p
    };
    let line = |ty: &str, part: Value| {
        line(
            ty,
            json!({"timestamp": 1767036059338u64 + i as u64, "sessionID": sid, "part": part}),
        )
    };
    vec![
        line(
            "step_start",
            part(
                "step-start",
                json!({"snapshot": "4b825dc642cb6eb9a060e54bf8d69288fbee4904"}),
            ),
        ),
        line(
            "text",
            part(
                "text",
                json!({"text": prose(i, 1200), "time": {"start": 1, "end": 2}}),
            ),
        ),
        line(
            "tool_use",
            part(
                "tool",
                json!({"tool": "write", "callID": format!("call_{i}"), "state": {"status": "completed",
            "input": {"filePath": format!("/work/src/mod_{i}.rs"), "content": prose(i + 1, 4000)},
            "output": prose(i + 2, 3000), "title": format!("src/mod_{i}.rs"), "metadata": {"diagnostics": {}, "filepath": format!("/work/src/mod_{i}.rs"), "exists": false},
            "time": {"start": 1, "end": 2}}}),
            ),
        ),
        line(
            "step_finish",
            part(
                "step-finish",
                json!({"reason": "tool-calls", "snapshot": "4b825dc", "cost": 0.0012,
            "tokens": {"total": 21000, "input": 2000, "output": 900, "reasoning": 100, "cache": {"read": 18000, "write": 0}}}),
            ),
        ),
    ]
}

fn corpus(format: StreamFormat) -> Vec<String> {
    type Round = fn(usize) -> Vec<String>;
    let (prefixes, round): (&[&str], Round) = match format {
        StreamFormat::ClaudeStreamJson => (&["claude", "qwen"], claude_round),
        StreamFormat::CodexJson => (&["codex"], codex_round),
        StreamFormat::OpencodeJson => (&["opencode"], opencode_round),
        StreamFormat::Text => unreachable!("text is not benchmarked"),
    };
    let mut lines = fixture_lines(prefixes);
    let mut bytes: usize = lines.iter().map(|l| l.len() + 1).sum();
    let mut i = 0;
    while bytes < TARGET_BYTES {
        for l in round(i) {
            bytes += l.len() + 1;
            lines.push(l);
        }
        i += 1;
    }
    lines
}

// ---- the naive baseline: a Value per line, walked ----

fn s(v: &Value) -> Option<String> {
    v.as_str().map(str::to_owned)
}

fn n(v: &Value) -> u64 {
    match v {
        Value::Number(x) => x
            .as_u64()
            .or_else(|| x.as_f64().map(|f| f as u64))
            .unwrap_or(0),
        Value::String(t) => t.trim().parse().unwrap_or(0),
        _ => 0,
    }
}

fn err(name: Option<&str>, message: String, status: Option<u16>) -> AgentEvent {
    AgentEvent::Error {
        class: classify_error(name, Some(&message), status),
        message,
        http_status: status,
    }
}

fn joined_text(v: &Value) -> String {
    match v {
        Value::String(t) => t.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b.get("type").is_none_or(|t| t == "text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn naive_claude(v: &Value) -> Vec<AgentEvent> {
    let mut out = Vec::new();
    match v["type"].as_str() {
        Some("system") if matches!(v["subtype"].as_str(), Some("init" | "session_start")) => {
            if let Some(sid) = s(&v["session_id"]).filter(|x| !x.is_empty()) {
                out.push(AgentEvent::SessionStarted {
                    session_id: sid,
                    model: s(&v["model"]).filter(|m| !m.is_empty()),
                });
            }
        }
        Some("assistant") => {
            for b in v["message"]["content"].as_array().into_iter().flatten() {
                match b["type"].as_str() {
                    Some("text") => out.extend(
                        s(&b["text"])
                            .filter(|t| !t.is_empty())
                            .map(|text| AgentEvent::TextDelta { text }),
                    ),
                    Some("thinking") => out.extend(
                        s(&b["thinking"])
                            .filter(|t| !t.is_empty())
                            .map(|text| AgentEvent::ReasoningDelta { text }),
                    ),
                    Some("tool_use") => {
                        out.extend(s(&b["name"]).map(|name| AgentEvent::ToolCall {
                            id: s(&b["id"]).unwrap_or_default(),
                            name,
                            input: b["input"].clone(),
                        }))
                    }
                    _ => {}
                }
            }
        }
        Some("user") => {
            for b in v["message"]["content"].as_array().into_iter().flatten() {
                if b["type"] == "tool_result" {
                    out.extend(s(&b["tool_use_id"]).map(|id| AgentEvent::ToolResult {
                        id,
                        ok: !b["is_error"].as_bool().unwrap_or(false),
                        output: joined_text(&b["content"]),
                    }));
                }
            }
        }
        Some("result") => {
            let u = &v["usage"];
            let input = n(&u["input_tokens"]);
            let usage = Usage {
                input: if u.get("total_tokens").is_some() {
                    input.saturating_sub(n(&u["cache_read_input_tokens"]))
                } else {
                    input
                },
                output: n(&u["output_tokens"]),
                cache_read: n(&u["cache_read_input_tokens"]),
                cache_write: n(&u["cache_creation_input_tokens"]),
                reasoning: 0,
                cost_usd: v["total_cost_usd"].as_f64(),
            };
            if !usage.is_empty() {
                out.push(AgentEvent::Usage(usage));
            }
            let is_error = v["is_error"].as_bool().unwrap_or(false);
            if is_error {
                let status = v["api_error_status"]
                    .as_u64()
                    .and_then(|x| u16::try_from(x).ok());
                let message = s(&v["error"]["message"])
                    .filter(|m| !m.is_empty())
                    .or_else(|| s(&v["result"]))
                    .filter(|m| !m.is_empty())
                    .or_else(|| s(&v["subtype"]))
                    .unwrap_or_default();
                let status = status.or_else(|| {
                    let at = message.find("API Error: ")? + 11;
                    let after = message[at..].chars().nth(3);
                    if after.is_some_and(|c| c.is_ascii_alphanumeric()) {
                        return None;
                    }
                    message
                        .get(at..at + 3)?
                        .parse()
                        .ok()
                        .filter(|s| (400..=599).contains(s))
                });
                out.push(err(None, message, status));
            }
            out.push(AgentEvent::Finished {
                stop_reason: s(&v["subtype"]).or_else(|| s(&v["stop_reason"])),
                final_text: if is_error { None } else { s(&v["result"]) },
                num_turns: v["num_turns"].as_u64().and_then(|x| u32::try_from(x).ok()),
            });
        }
        _ => {}
    }
    out
}

fn naive_codex(v: &Value) -> Vec<AgentEvent> {
    let mut out = Vec::new();
    let item = &v["item"];
    let id = || s(&item["id"]).unwrap_or_default();
    match (v["type"].as_str(), item["type"].as_str()) {
        (Some("thread.started"), _) => out.extend(
            s(&v["thread_id"])
                .filter(|t| !t.is_empty())
                .map(|session_id| AgentEvent::SessionStarted {
                    session_id,
                    model: None,
                }),
        ),
        (Some("item.started"), Some("command_execution")) => out.push(AgentEvent::ToolCall {
            id: id(),
            name: "command_execution".into(),
            input: json!({"command": item["command"].clone()}),
        }),
        (Some("item.completed"), Some("command_execution")) => out.push(AgentEvent::ToolResult {
            id: id(),
            ok: item["exit_code"]
                .as_i64()
                .map_or(item["status"] == "completed", |c| c == 0),
            output: s(&item["aggregated_output"]).unwrap_or_default(),
        }),
        (Some("item.started"), Some("file_change")) => out.push(AgentEvent::ToolCall {
            id: id(),
            name: "file_change".into(),
            input: json!({"changes": item["changes"].clone()}),
        }),
        (Some("item.completed"), Some("file_change")) => out.push(AgentEvent::ToolResult {
            id: id(),
            ok: item["status"] == "completed",
            output: item["changes"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| {
                    format!(
                        "{} {}",
                        c["kind"].as_str().unwrap_or(""),
                        c["path"].as_str().unwrap_or("")
                    )
                })
                .collect::<Vec<_>>()
                .join("\n"),
        }),
        (Some("item.completed"), Some("agent_message")) => out.extend(
            s(&item["text"])
                .filter(|t| !t.is_empty())
                .map(|text| AgentEvent::TextDelta { text }),
        ),
        (Some("item.completed"), Some("reasoning")) => out.extend(
            s(&item["text"])
                .filter(|t| !t.is_empty())
                .map(|text| AgentEvent::ReasoningDelta { text }),
        ),
        (Some("item.completed"), Some("error")) => {
            out.push(err(None, s(&item["message"]).unwrap_or_default(), None))
        }
        (Some("turn.completed"), _) => {
            let u = &v["usage"];
            let usage = Usage {
                input: n(&u["input_tokens"]).saturating_sub(n(&u["cached_input_tokens"])),
                output: n(&u["output_tokens"]),
                cache_read: n(&u["cached_input_tokens"]),
                cache_write: n(&u["cache_write_input_tokens"]),
                reasoning: n(&u["reasoning_output_tokens"]),
                cost_usd: None,
            };
            if !usage.is_empty() {
                out.push(AgentEvent::Usage(usage));
            }
            out.push(AgentEvent::Finished {
                stop_reason: Some("completed".into()),
                final_text: None,
                num_turns: None,
            });
        }
        (Some("turn.failed"), _) => out.push(err(
            None,
            s(&v["error"]["message"]).unwrap_or_default(),
            None,
        )),
        (Some("error"), _) => out.push(err(None, s(&v["message"]).unwrap_or_default(), None)),
        _ => {}
    }
    out
}

fn naive_opencode(v: &Value) -> Vec<AgentEvent> {
    let mut out = Vec::new();
    let part = &v["part"];
    match v["type"].as_str() {
        Some("step_start") => out.extend(s(&v["sessionID"]).filter(|x| !x.is_empty()).map(
            |session_id| AgentEvent::SessionStarted {
                session_id,
                model: None,
            },
        )),
        Some("text") => out.extend(
            s(&part["text"])
                .filter(|t| !t.is_empty())
                .map(|text| AgentEvent::TextDelta { text }),
        ),
        Some("reasoning") => out.extend(
            s(&part["text"])
                .filter(|t| !t.is_empty())
                .map(|text| AgentEvent::ReasoningDelta { text }),
        ),
        Some("tool_use") => {
            let state = &part["state"];
            let id = s(&part["callID"]).unwrap_or_default();
            out.push(AgentEvent::ToolCall {
                id: id.clone(),
                name: s(&part["tool"]).unwrap_or_default(),
                input: state.get("input").cloned().unwrap_or_else(|| json!({})),
            });
            let text = |v: &Value| match v {
                Value::String(t) => t.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            };
            match state["status"].as_str() {
                Some("completed") => out.push(AgentEvent::ToolResult {
                    id,
                    ok: true,
                    output: text(&state["output"]),
                }),
                Some("error") => out.push(AgentEvent::ToolResult {
                    id,
                    ok: false,
                    output: text(if state["error"].is_null() {
                        &state["output"]
                    } else {
                        &state["error"]
                    }),
                }),
                _ => {}
            }
        }
        Some("step_finish") => {
            let t = &part["tokens"];
            let usage = Usage {
                input: n(&t["input"]),
                output: n(&t["output"]),
                cache_read: n(&t["cache"]["read"]),
                cache_write: n(&t["cache"]["write"]),
                reasoning: n(&t["reasoning"]),
                cost_usd: part["cost"].as_f64(),
            };
            if !usage.is_empty() {
                out.push(AgentEvent::Usage(usage));
            }
            if let Some(reason) = s(&part["reason"]).filter(|r| r != "tool-calls" && r != "unknown")
            {
                out.push(AgentEvent::Finished {
                    stop_reason: Some(reason),
                    final_text: None,
                    num_turns: None,
                });
            }
        }
        Some("error") => {
            out.extend(
                s(&v["sessionID"])
                    .filter(|x| !x.is_empty())
                    .map(|session_id| AgentEvent::SessionStarted {
                        session_id,
                        model: None,
                    }),
            );
            let e = &v["error"];
            let status = e["data"]["statusCode"]
                .as_u64()
                .and_then(|x| u16::try_from(x).ok());
            let message = s(&e["data"]["message"])
                .or_else(|| s(&e["name"]))
                .unwrap_or_default();
            out.push(err(e["name"].as_str(), message, status));
        }
        Some("done") => out.push(AgentEvent::Finished {
            stop_reason: None,
            final_text: None,
            num_turns: None,
        }),
        _ => {}
    }
    out
}

fn naive(format: StreamFormat, line: &str) -> Vec<AgentEvent> {
    let Ok(v) = serde_json::from_str::<Value>(line) else {
        return Vec::new();
    };
    match format {
        StreamFormat::ClaudeStreamJson => naive_claude(&v),
        StreamFormat::CodexJson => naive_codex(&v),
        StreamFormat::OpencodeJson => naive_opencode(&v),
        StreamFormat::Text => Vec::new(),
    }
}

/// `AGENT_PARSE_BY_TYPE=1`: instead of criterion, the best of 15 passes
/// per line type (`type`, and codex's `item.type`), parser beside naive —
/// where the difference comes from.
fn by_type(format: StreamFormat, lines: &[String]) {
    let mut by: std::collections::BTreeMap<String, Vec<&String>> = Default::default();
    for l in lines {
        let v: Value = serde_json::from_str(l).unwrap();
        let t = format!(
            "{}:{}",
            v["type"].as_str().unwrap_or(""),
            v["item"]["type"].as_str().unwrap_or("")
        );
        by.entry(t).or_default().push(l);
    }
    for (t, ls) in &by {
        let bytes: usize = ls.iter().map(|l| l.len()).sum();
        let time = |f: &dyn Fn(&str) -> usize| {
            let mut best = f64::MAX;
            for _ in 0..15 {
                let t0 = std::time::Instant::now();
                let mut k = 0;
                for l in ls {
                    k += f(l);
                }
                black_box(k);
                best = best.min(t0.elapsed().as_secs_f64());
            }
            bytes as f64 / best / 1e6
        };
        let p = time(&|l| parse_line(format, l).len());
        let nv = time(&|l| naive(format, l).len());
        eprintln!("  {format} {t:34} {bytes:>8} B  parser {p:6.0} MB/s  naive {nv:6.0} MB/s");
    }
}

fn parsing(c: &mut Criterion) {
    for format in [
        StreamFormat::ClaudeStreamJson,
        StreamFormat::CodexJson,
        StreamFormat::OpencodeJson,
    ] {
        let lines = corpus(format);
        let bytes: usize = lines.iter().map(|l| l.len() + 1).sum();
        let mut events = 0;
        for line in &lines {
            let real = parse_line(format, line);
            assert_eq!(
                real,
                naive(format, line),
                "the baseline must do the same work: {line}"
            );
            events += real.len();
        }
        eprintln!(
            "{format}: {} lines, {:.2} MB, {events} events",
            lines.len(),
            bytes as f64 / 1e6
        );
        if std::env::var_os("AGENT_PARSE_BY_TYPE").is_some() {
            by_type(format, &lines);
            continue;
        }
        let mut group = c.benchmark_group(format!("parse/{format}"));
        group
            .throughput(Throughput::Bytes(bytes as u64))
            .sample_size(20);
        group.bench_function(BenchmarkId::new("parser", bytes), |b| {
            b.iter(|| {
                for line in &lines {
                    black_box(parse_line(format, black_box(line)));
                }
            })
        });
        group.bench_function(BenchmarkId::new("naive", bytes), |b| {
            b.iter(|| {
                for line in &lines {
                    black_box(naive(format, black_box(line)));
                }
            })
        });
        group.finish();
    }
}

criterion_group!(benches, parsing);
criterion_main!(benches);
