//! `coderig serve`: bind, announce the address, serve until Ctrl-C/SIGTERM.

use coderig_server::{app, Config, DEFAULT_MAX_BODY_BYTES};
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

/// Serves until interrupted. Prints `coderig listening on http://ADDR` on
/// stdout once the socket is bound, so scripts can read the real port.
pub fn run(args: Args) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("coderig serve: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("coderig serve: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(args: Args) -> std::io::Result<()> {
    let requested = SocketAddr::new(args.host, args.port);
    let listener = tokio::net::TcpListener::bind(requested)
        .await
        .map_err(|e| std::io::Error::new(e.kind(), format!("cannot listen on {requested}: {e}")))?;
    let bound = listener.local_addr()?;
    let mut stdout = std::io::stdout();
    writeln!(stdout, "coderig listening on http://{bound}")?;
    stdout.flush()?;
    let config = Config {
        max_body_bytes: args.max_body,
    };
    axum::serve(listener, app(&config))
        .with_graceful_shutdown(shutdown_signal())
        .await
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
