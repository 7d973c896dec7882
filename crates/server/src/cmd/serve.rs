//! `coderig serve`: open the store and the registry, bind, announce the
//! address, serve until Ctrl-C/SIGTERM.

use super::rig::RigArgs;
use coderig_server::{app, AppState, Config, DEFAULT_MAX_BODY_BYTES};
use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;

/// Options of `coderig serve`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Address to listen on. Loopback by default: the API has no
    /// authentication, so exposing it is a deliberate choice.
    #[arg(long, env = "CODERIG_HOST", default_value = "127.0.0.1")]
    host: IpAddr,
    /// Port to listen on; 0 picks a free port (the chosen one is printed).
    #[arg(long, env = "CODERIG_PORT", default_value_t = 8787)]
    port: u16,
    /// Largest accepted request body, in bytes.
    #[arg(long, env = "CODERIG_MAX_BODY", default_value_t = DEFAULT_MAX_BODY_BYTES)]
    max_body: usize,
}

/// Serves until interrupted. First the registry (`--config`) and the store
/// (`--db` / `DATABASE_URL`, else SQLite in `--data-dir`; migrations run)
/// are opened — a bad config, a bad URL or an unreachable database ends
/// the command with its error and exit code before anything is bound.
/// Then it prints `coderig listening on http://ADDR` on stdout once the
/// socket is bound, so scripts can read the real port.
pub fn run(args: Args, rig: &RigArgs) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            return super::fail(
                "serve",
                &coderig::Error::io(format!("cannot start the async runtime: {e}")),
            )
        }
    };
    match runtime.block_on(serve(args, rig)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => super::fail("serve", &e),
    }
}

async fn serve(args: Args, rig: &RigArgs) -> Result<(), coderig::Error> {
    let registry = rig.registry()?;
    let store = rig.open_store().await.map_err(|e| {
        let message = format!(
            "cannot open the store at {}: {}",
            rig.store_location(),
            e.message()
        );
        coderig::Error::new(e.kind(), message)
    })?;
    eprintln!(
        "coderig serve: store {} ({}), {} agent(s)",
        rig.store_location(),
        store.backend(),
        registry.identities().len()
    );
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
        ..Config::default()
    };
    axum::serve(listener, app(&config, AppState::new(store, registry)))
        .with_graceful_shutdown(shutdown_signal())
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
