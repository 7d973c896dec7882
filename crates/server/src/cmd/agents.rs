//! `coderig agents`: what every configured agent is — a table, or the JSON
//! array `GET /api/agents` answers.

use super::rig::RigArgs;
use coderig::agent::AgentInfo;
use std::io::Write;
use std::process::ExitCode;

/// Options of `coderig agents`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print the JSON array of agents (as `GET /api/agents` answers) instead
    /// of a table.
    #[arg(long)]
    json: bool,
}

/// Runs `coderig agents`: 0 once listed (agents that are not installed or
/// not reachable included), else the exit code of the config's error.
pub fn run(args: Args, rig: &RigArgs) -> ExitCode {
    let infos = rig.registry().and_then(|registry| {
        super::runtime()?
            .block_on(async { Ok(registry.info(coderig_server::DEFAULT_PROBE_TIMEOUT).await) })
    });
    let infos = match infos {
        Ok(infos) => infos,
        Err(e) => return super::fail("agents", &e),
    };
    let text = if args.json {
        match serde_json::to_string(&infos) {
            Ok(json) => format!("{json}\n"),
            Err(e) => {
                return super::fail(
                    "agents",
                    &coderig::Error::internal(format!("cannot serialize the agents: {e}")),
                )
            }
        }
    } else if infos.is_empty() {
        eprintln!(
            "no agents configured (add [agents.<identity>] to coderig.toml or pass --config)"
        );
        String::new()
    } else {
        table(&infos)
    };
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::from(3),
    }
}

fn yes_no(value: bool) -> &'static str {
    if value {
        "yes"
    } else {
        "no"
    }
}

/// One row per agent, columns padded to their widest cell; the note says
/// why an agent is not installed or not reachable.
fn table(infos: &[AgentInfo]) -> String {
    let header = [
        "IDENTITY",
        "KIND",
        "LANE",
        "INSTALLED",
        "REACHABLE",
        "MODELS",
        "SANDBOX",
        "NOTE",
    ];
    let rows: Vec<[String; 8]> = infos
        .iter()
        .map(|info| {
            let kind = match &info.preset {
                Some(preset) => format!("{}/{preset}", info.kind),
                None => info.kind.clone(),
            };
            let reachable = info.reachable.map_or("-", yes_no);
            let models = if info.models.is_empty() {
                "-".to_string()
            } else {
                info.models.join(",")
            };
            [
                info.identity.clone(),
                kind,
                info.lane.clone(),
                yes_no(info.installed).to_string(),
                reachable.to_string(),
                models,
                info.sandbox.clone(),
                info.error.clone().unwrap_or_default(),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut out = String::new();
        for (i, (cell, width)) in cells.iter().zip(widths).enumerate() {
            if i + 1 == cells.len() {
                out.push_str(cell);
            } else {
                out.push_str(&format!("{cell:<width$}  "));
            }
        }
        format!("{}\n", out.trim_end())
    };
    let mut out = line(header.to_vec());
    for row in &rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(identity: &str, installed: bool, error: Option<&str>) -> AgentInfo {
        AgentInfo {
            identity: identity.into(),
            kind: "cli".into(),
            preset: Some("claude".into()),
            lane: "cloud".into(),
            command: None,
            installed,
            reachable: None,
            models: vec![],
            error: error.map(str::to_string),
            sandbox: "enforce".into(),
        }
    }

    #[test]
    fn the_table_aligns_and_says_why() {
        let text = table(&[
            info("claude", true, None),
            info(
                "x",
                false,
                Some("claude not found on PATH or not executable"),
            ),
        ]);
        assert_eq!(
            text,
            "IDENTITY  KIND        LANE   INSTALLED  REACHABLE  MODELS  SANDBOX  NOTE\n\
             claude    cli/claude  cloud  yes        -          -       enforce\n\
             x         cli/claude  cloud  no         -          -       enforce  claude not found on PATH or not executable\n"
        );
    }
}
