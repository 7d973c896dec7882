//! The options every subcommand takes (`--config`, `--data-dir`, `--db`)
//! and what they open: the agent registry and the store.

use coderig::agent::Registry;
use coderig::store::Store;
use std::path::PathBuf;
use std::sync::Arc;

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
        default_value = ".coderig",
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

    /// The store `--db` / `DATABASE_URL` names, else SQLite in the data dir
    /// (both created when missing, migrations run). Errors: `invalid_input`
    /// for a URL of another database, or a malformed PostgreSQL URL; `io`
    /// when the database cannot be reached or opened.
    pub async fn open_store(&self) -> Result<Arc<dyn Store>, coderig::Error> {
        let db = self.db.as_deref().filter(|db| !db.is_empty());
        coderig::store::open(db, &self.data_dir).await
    }

    /// Where the store is, for the start-up line: the URL without its
    /// password, or the SQLite file.
    pub fn store_location(&self) -> String {
        match self.db.as_deref().filter(|db| !db.is_empty()) {
            Some(url) if url.contains("://") => redact(url),
            Some(path) => path.to_string(),
            None => self.data_dir.join("coderig.db").display().to_string(),
        }
    }
}

/// `url` with the password of its user info (`user:secret@`) replaced by `***`.
fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((user_info, host)) => {
            let user = user_info.split(':').next().unwrap_or_default();
            let hidden = if user_info.contains(':') { ":***" } else { "" };
            format!("{scheme}://{user}{hidden}@{host}{tail}")
        }
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn passwords_are_redacted() {
        for (url, shown) in [
            ("postgres://u:pw@h:5432/db", "postgres://u:***@h:5432/db"),
            ("postgres://u@h/db", "postgres://u@h/db"),
            ("postgres://h/db?x=a@b", "postgres://h/db?x=a@b"),
            ("postgresql://u:p@ss@h/db", "postgresql://u:***@h/db"),
        ] {
            assert_eq!(redact(url), shown, "{url}");
        }
    }
}
