//! `coderig serve`: open the rig (store, agents, arena, flow engine), bind,
//! announce the address, serve until Ctrl-C/SIGTERM, shut the rig down.

use super::rig::RigArgs;
use coderig_server::{app, AppState, Config, DEFAULT_MAX_BODY_BYTES};
use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// Options of `coderig serve`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Address to listen on. Loopback by default; any other address needs
    /// --token (refused at start without one, exit code 2).
    #[arg(long, env = "CODERIG_HOST", default_value = "127.0.0.1")]
    host: IpAddr,
    /// Bearer token: every route but GET /api/health then requires
    /// `Authorization: Bearer <token>`. Without one the API has no
    /// authentication.
    #[arg(long, env = "CODERIG_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// A directory under which requests may name projects (repeatable;
    /// each must exist, canonicalized at start). Default: the current
    /// directory at start.
    #[arg(long = "project-root", value_name = "DIR")]
    project_roots: Vec<PathBuf>,
    /// A directory of flow specs that `POST /api/runs {"flow": NAME}` runs
    /// by name: every `*.yaml`, `*.yml` and `*.json` in it (a spec without
    /// a `name` is named by its file's stem). A file that does not decode
    /// or compile stops the start (exit code 2), naming it and its problems.
    #[arg(long, value_name = "DIR")]
    flows: Option<PathBuf>,
    /// Port to listen on; 0 picks a free port (the chosen one is printed).
    #[arg(long, env = "CODERIG_PORT", default_value_t = 8787)]
    port: u16,
    /// Largest accepted request body, in bytes.
    #[arg(long, env = "CODERIG_MAX_BODY", default_value_t = DEFAULT_MAX_BODY_BYTES)]
    max_body: usize,
    /// The lease of every arena task and flow run driver this server
    /// claims (tests: a short one, so a killed server's work is rescued
    /// quickly). Default 30 s.
    #[arg(long, hide = true, value_name = "DURATION", value_parser = parse_lease)]
    lease_ttl: Option<Duration>,
}

/// How long `serve` waits, on SIGINT/SIGTERM, for the agents and the run
/// steps it stops (the rig's ordered shutdown, in all).
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// The flow specs of `--flows DIR`, in file-name order: each file ending in
/// `.yaml`, `.yml` or `.json` (any case) decoded by `FlowSpec::load` and
/// compiled, a spec without a `name` named by the file's stem. Errors
/// (`invalid_input`, exit 2) name the file: a directory that cannot be
/// listed, a spec that does not decode or compile (with every problem and
/// its path), a stem that is no flow name, two files of one name.
pub(crate) fn load_flows(
    dir: &Path,
) -> Result<Vec<coderig::flow::runspec::FlowSpec>, coderig::Error> {
    use coderig::flow::runspec::FlowSpec;
    let shown = dir.display();
    let entries = std::fs::read_dir(dir).map_err(|e| {
        coderig::Error::invalid_input(format!("--flows {shown}: cannot list the directory: {e}"))
            .with_detail("path", "flows")
    })?;
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| {
            coderig::Error::invalid_input(format!(
                "--flows {shown}: cannot list the directory: {e}"
            ))
        })?;
        let path = entry.path();
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        if matches!(ext.as_deref(), Some("yaml" | "yml" | "json")) && path.is_file() {
            files.push(path);
        }
    }
    // read_dir's order is the file system's: sort, so errors and the
    // listing do not depend on it.
    files.sort();
    let mut named: std::collections::BTreeMap<String, PathBuf> = Default::default();
    let mut specs = Vec::with_capacity(files.len());
    for file in files {
        let in_file = |e: coderig::Error| {
            // FlowSpec::load says its file already; compile does not.
            let e = e.in_file(&file.display().to_string());
            let mut out = coderig::Error::new(e.kind(), format!("--flows: {}", e.message()));
            for (k, v) in e.details() {
                out = out.with_detail(k, v.clone());
            }
            out
        };
        let mut spec = FlowSpec::load(&file).map_err(in_file)?;
        if spec.name.is_none() {
            let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
            let valid = !stem.is_empty()
                && stem.len() <= 100
                && stem
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
            if !valid {
                return Err(in_file(coderig::Error::invalid_at(
                    "name",
                    format!(
                        "the spec has no `name` and its file's stem {stem:?} is no flow name (1 to 100 of A-Z a-z 0-9 _ . -): give it a `name`"
                    ),
                )));
            }
            spec.name = Some(stem.to_owned());
        }
        spec.compile().map_err(in_file)?;
        let name = spec.name.clone().unwrap_or_default();
        if let Some(first) = named.insert(name.clone(), file.clone()) {
            return Err(in_file(coderig::Error::invalid_input(format!(
                "the flow {name:?} is also defined by {}; flow names must be unique",
                first.display()
            ))));
        }
        specs.push(spec);
    }
    Ok(specs)
}

fn parse_lease(text: &str) -> Result<Duration, String> {
    match coderig::agent::duration::parse_duration(text)? {
        d if d.is_zero() => Err("the lease must be more than zero".into()),
        d => Ok(d),
    }
}

/// Serves until interrupted. First the rig is opened: the registry
/// (`--config`), the project roots, the store (`--db` / `DATABASE_URL`,
/// else SQLite in `--data-dir`; migrations run) — a bad config, a bad
/// root, a bad URL or an unreachable database ends the command with its
/// error and exit code before anything is bound.
/// Then it prints `coderig listening on http://ADDR` on stdout once the
/// socket is bound, so scripts can read the real port.
pub fn run(args: Args, rig: &RigArgs) -> ExitCode {
    let runtime = match super::multi_thread_runtime(None) {
        Ok(runtime) => runtime,
        Err(e) => return super::fail("serve", &e),
    };
    match runtime.block_on(serve(args, rig)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => super::fail("serve", &e),
    }
}

/// The start-up checks that need no store: a token, when given, is not
/// empty, and a non-loopback address has one (`invalid_input`, exit 2).
fn check_exposure(args: &Args) -> Result<(), coderig::Error> {
    if args.token.as_deref().is_some_and(|t| t.trim().is_empty()) {
        return Err(coderig::Error::invalid_input(
            "--token / CODERIG_TOKEN is empty; give a secret, or leave it unset to serve on loopback without authentication",
        ));
    }
    if !args.host.is_loopback() && args.token.is_none() {
        return Err(coderig::Error::invalid_input(format!(
            "refusing to listen on {} without a token: anyone who can reach it could drive your agents; \
             pass --token T (or set CODERIG_TOKEN), or listen on 127.0.0.1",
            args.host
        )));
    }
    Ok(())
}

async fn serve(args: Args, rig: &RigArgs) -> Result<(), coderig::Error> {
    check_exposure(&args)?;
    let flows = match &args.flows {
        Some(dir) => load_flows(dir)?,
        None => Vec::new(),
    };
    let mut config = rig.config()?;
    // The core's policy: none given is the current directory; a root that
    // is not a directory stops the start before the store is opened.
    config.project_roots = args.project_roots.clone();
    config.flows = flows;
    config.lease_ttl = args.lease_ttl;
    let flow_count = config.flows.len();
    // The arena and the flow engine share the store, the registry and the
    // bus the SSE route streams; their workers rescue (battles) and resume
    // (runs) what a crashed server left, by lease.
    let state = AppState::open(config).await?;
    let rig = state.rig().clone();
    // Events committed from here on reach every subscriber live.
    let _ = rig.bus().started().await;
    eprintln!(
        "coderig serve: store {} ({}), {} agent(s), {} flow(s), project root(s) {}{}",
        rig.store_location(),
        rig.store().backend(),
        rig.registry().identities().len(),
        flow_count,
        rig.project_roots()
            .iter()
            .map(|r| r.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        if args.token.is_some() {
            ", bearer token required"
        } else {
            ""
        }
    );
    // Another server's events arrive by LISTEN on PostgreSQL; when the
    // database cannot deliver notifications (a transaction-mode pooler),
    // the operator learns here why they arrive only at each poll.
    if let Some(coderig::store::CommitFeed::Polling { reason }) = rig.bus().commit_feed().await {
        if rig.store().backend() == "postgres" {
            eprintln!(
                "coderig serve: other servers' events arrive at each poll (250 ms), not at \
                 once: {reason}"
            );
        }
    }
    let served = listen_and_serve(&args, state).await;
    // Agents and run steps stopped, their work left to lease rescue (this
    // server restarted, or another on the same store, finishes it); the
    // bus last, which ends the event streams. Already done when a signal
    // ended the serving; a failed bind needs it here.
    rig.shutdown(SHUTDOWN_GRACE).await;
    served
}

/// Binds, prints `coderig listening on http://ADDR`, serves `state` until
/// SIGINT/SIGTERM, then shuts its rig down (the open event streams end
/// with its bus, so the graceful shutdown does not wait on SSE clients).
async fn listen_and_serve(args: &Args, state: AppState) -> Result<(), coderig::Error> {
    let io = |e: std::io::Error| coderig::Error::io(e.to_string());
    let requested = SocketAddr::new(args.host, args.port);
    let listener = tokio::net::TcpListener::bind(requested)
        .await
        .map_err(|e| coderig::Error::io(format!("cannot listen on {requested}: {e}")))?;
    let bound = listener.local_addr().map_err(io)?;
    let mut stdout = std::io::stdout();
    writeln!(stdout, "coderig listening on http://{bound}").map_err(io)?;
    stdout.flush().map_err(io)?;
    let config = Config {
        max_body_bytes: args.max_body,
        token: args.token.clone(),
        ..Config::default()
    };
    let rig = state.rig().clone();
    axum::serve(listener, app(&config, state))
        .with_graceful_shutdown(async move {
            shutdown_signal().await;
            rig.shutdown(SHUTDOWN_GRACE).await;
        })
        .await
        .map_err(io)
}

/// Resolves on Ctrl-C or (on Unix) SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        // If the handler cannot be installed, never resolve: keep serving.
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
}
