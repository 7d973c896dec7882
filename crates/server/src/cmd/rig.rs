//! The options every subcommand takes (`--config`, `--data-dir`, `--db`)
//! and the runtime they open: a [`coderig::rig::Rig`] built from a
//! [`RigConfig`] (store, event bus, agents, arena and flow engine opened
//! once by the core, project roots by its one policy), closed with
//! [`Rig::shutdown`] before the command exits.

use coderig::agent::Registry;
use coderig::rig::{Rig, RigConfig};
use std::future::Future;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// How long a subcommand's rig may take to stop at exit (its agents and
/// steps stopped, their processes waited for).
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(15);

/// Where a rig's agents and store are: global options, accepted before or
/// after the subcommand. Subcommands that need no store (`agents`, `turn`,
/// `edit`, `hashline`) accept `--data-dir` and `--db` and ignore them.
#[derive(Debug, Clone, clap::Args)]
pub struct RigArgs {
    /// The rig's config (agents, lanes). Default: `./coderig.toml` when it
    /// exists, else no agents; a given file that is missing is an error.
    #[arg(long, global = true, env = "CODERIG_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Where the embedded store lives (`<DIR>/coderig.db`, created when
    /// missing) unless `--db` names another.
    #[arg(
        long,
        global = true,
        env = "CODERIG_DATA_DIR",
        default_value = coderig::rig::DEFAULT_DATA_DIR,
        value_name = "DIR"
    )]
    pub data_dir: PathBuf,
    /// The store: `postgres://…` (or `postgresql://…`) to share one
    /// PostgreSQL between servers; `sqlite:///path/to/file.db`,
    /// `sqlite:path` or a plain path for an SQLite file. Default: SQLite in
    /// the data dir.
    #[arg(long, global = true, env = "DATABASE_URL", value_name = "URL")]
    pub db: Option<String>,
}

impl RigArgs {
    /// The registry of `--config`, of `./coderig.toml` when it exists, or an
    /// empty one. Errors: `io` for a file that cannot be read (a given one
    /// that is missing included), `invalid_input` for a bad config (its path
    /// and the bad key named), `unavailable` for an agent kind this build
    /// lacks.
    pub fn registry(&self) -> Result<Registry, coderig::Error> {
        Registry::open(self.config.as_deref(), None).map(|(registry, _)| registry)
    }

    /// The rig these options name: the data dir, the store (`--db` /
    /// `DATABASE_URL`, else SQLite in the data dir) and the agents of the
    /// config ([`RigArgs::registry`]'s errors); the workers on, the current
    /// directory as the project root. A subcommand sets what it adds.
    pub fn config(&self) -> Result<RigConfig, coderig::Error> {
        let mut config = RigConfig::new(&self.data_dir);
        config.db = self.db.clone();
        config.agents = self.registry()?;
        Ok(config)
    }
}

/// Runs `body` on a rig without workers (it reads and changes battles and
/// runs in the store; the workers of a running server, or of a `battle
/// run` / `run`, do the work), shuts the rig down and prints what `body`
/// returned on stdout: 0, or the exit code of the error (printed as
/// `coderig <what>: <kind>: <message>`).
pub fn read_only<F, Fut>(what: &str, rig: &RigArgs, body: F) -> ExitCode
where
    F: FnOnce(Rig) -> Fut,
    Fut: Future<Output = Result<String, coderig::Error>>,
{
    let outcome = rig.config().and_then(|mut config| {
        config.run_workers = false;
        super::runtime()?.block_on(async {
            let rig = Rig::open(config).await?;
            let result = body(rig.clone()).await;
            rig.shutdown(SHUTDOWN_GRACE).await;
            result
        })
    });
    match outcome {
        Ok(text) => {
            let mut stdout = std::io::stdout().lock();
            match stdout
                .write_all(text.as_bytes())
                .and_then(|()| stdout.flush())
            {
                Ok(()) => ExitCode::SUCCESS,
                Err(_) => ExitCode::from(3),
            }
        }
        Err(e) => super::fail(what, &e),
    }
}
