//! Ctrl-C (SIGINT) and SIGTERM for the commands that follow long work
//! (`turn`, `battle run`, `run`): the first stops the work, a second quits
//! at once; the exit code says which signal came (130, 143).

use tokio::signal::unix::{signal, Signal, SignalKind};

/// The interrupt signals, listened for from [`Interrupts::listen`] on.
pub struct Interrupts {
    int: Signal,
    term: Signal,
}

impl Interrupts {
    /// Listens now, so a signal at any later point is seen. `io` when the
    /// handlers cannot be installed.
    pub fn listen() -> Result<Interrupts, coderig::Error> {
        let listen = |kind| {
            signal(kind).map_err(|e| coderig::Error::io(format!("cannot listen for Ctrl-C: {e}")))
        };
        Ok(Interrupts {
            int: listen(SignalKind::interrupt())?,
            term: listen(SignalKind::terminate())?,
        })
    }

    /// The next signal, as the exit code it asks for: 130 (SIGINT) or 143
    /// (SIGTERM). Cancel-safe (a `select!` branch).
    pub async fn next(&mut self) -> u8 {
        tokio::select! {
            _ = self.int.recv() => 130,
            _ = self.term.recv() => 143,
        }
    }
}
