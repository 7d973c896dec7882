//! The real `coderig` binary as a server: `coderig serve --port 0` started
//! in a directory with its environment cleared of what would change it,
//! followed until it says where it listens, killed when dropped.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// A `coderig serve` process and its base URL. Killed when dropped, so a
/// failing assertion cannot leak it.
pub struct Server {
    pub child: Child,
    pub url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// SIGKILL, as a crash: no shutdown code of the server runs.
    pub fn kill9(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

/// `coderig serve --port 0 ARGS` in `dir`, not started: its environment
/// cleared of the variables that would change it (host, port, config,
/// data dir, token, database), stdin closed, stdout and stderr piped.
pub fn serve_command(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_coderig"));
    command
        .arg("serve")
        .args(["--port", "0"])
        .args(args)
        .current_dir(dir)
        .env_remove("CODERIG_HOST")
        .env_remove("CODERIG_PORT")
        .env_remove("CODERIG_CONFIG")
        .env_remove("CODERIG_DATA_DIR")
        .env_remove("CODERIG_TOKEN")
        .env_remove("DATABASE_URL")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// [`serve_command`] started: waits for its `coderig listening on URL`
/// line (panics with its stderr when it ends without one).
pub async fn serve(dir: &Path, args: &[&str]) -> Server {
    start_server(serve_command(dir, args)).await
}

/// Starts `command` (a [`serve_command`], perhaps with more environment)
/// and waits for its `coderig listening on URL` line; its stderr is then
/// drained, so a chatty server never blocks on a full pipe.
pub async fn start_server(mut command: Command) -> Server {
    let mut child = command.spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let line = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        line
    })
    .await
    .unwrap();
    let Some(url) = line.trim().strip_prefix("coderig listening on ") else {
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        let _ = child.kill();
        panic!("serve did not start ({line:?}): {stderr}");
    };
    let mut stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    Server {
        url: url.to_owned(),
        child,
    }
}
