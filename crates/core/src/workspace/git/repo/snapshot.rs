//! The snapshot of a working tree: its tree captured in a private index
//! and committed with a fixed identity.

use super::*;

/// The identity and message of snapshot commits. Fixed, so that the same
/// working tree over the same `HEAD` gives the same commit id.
const SNAPSHOT_NAME: &str = "coderig";
const SNAPSHOT_EMAIL: &str = "coderig@invalid";
const SNAPSHOT_MESSAGE: &str = "coderig snapshot of the working tree";

impl Repo {
    /// The working tree as a tree object: tracked files as they are on
    /// disk, untracked files that are not ignored, deleted files gone;
    /// an untracked directory that is a git repository of its own is left
    /// out (a patch cannot carry another repository).
    /// Built in a private index (in memory, or a temporary copy of the
    /// repository's index for the CLI), so the repository's index, files
    /// and refs are untouched; only blobs and trees are added to the object
    /// database.
    pub(in crate::workspace::git) fn capture_tree(&self, ctx: &Ctx<'_>) -> Result<String, Error> {
        match &self.lib {
            Some(repo) => {
                let fail = |e: git2::Error| lib_err("cannot capture the working tree", &e);
                // Start from the repository's index for its entries (staged
                // additions, even ignored ones, stay), but with the stat data
                // zeroed so every file is hashed again, never trusted.
                let current = repo.index().map_err(fail)?;
                let mut index = Index::new().map_err(fail)?;
                repo.set_index(&mut index).map_err(fail)?;
                for mut entry in current.iter() {
                    if (entry.flags >> 12) & 0x3 != 0 {
                        continue; // a conflict stage: the file on disk decides
                    }
                    entry.ctime = IndexTime::new(0, 0);
                    entry.mtime = IndexTime::new(0, 0);
                    entry.dev = 0;
                    entry.ino = 0;
                    entry.uid = 0;
                    entry.gid = 0;
                    entry.file_size = 0;
                    index.add(&entry).map_err(fail)?;
                }
                // An untracked directory holding its own `.git` is another
                // repository (an agent's `git init` or clone): left out, as
                // a patch cannot carry it (libgit2 would refuse the path).
                let workdir = self.workdir.clone();
                let mut skip_embedded = |path: &Path, _: &[u8]| -> i32 {
                    i32::from(exists(&workdir.join(path).join(".git")))
                };
                index
                    .add_all(["*"], IndexAddOption::DEFAULT, Some(&mut skip_embedded))
                    .map_err(fail)?;
                index.update_all(["*"], None).map_err(fail)?;
                let tree = index.write_tree_to(repo).map_err(fail)?;
                Ok(tree.to_string())
            }
            None => {
                let tmp = TempDir::new(ctx.tmp_root)?;
                let tmp_index = tmp.path().join("index");
                let mut cmd = self.git(ctx);
                cmd.args(["rev-parse", "--git-path", "index"]);
                let source = PathBuf::from(cli::line(&cli::run_ok(&mut cmd, None)?));
                let source = self.workdir.join(source);
                if exists(&source) {
                    std::fs::copy(&source, &tmp_index)
                        .map_err(|e| io_err("cannot copy the index", &source, &e))?;
                    // git trusts an entry's stat data when the file is older
                    // than the index file itself, and a fresh copy is newer
                    // than everything: a same-size rewrite in the same clock
                    // tick as the checkout (the kernel's file clock is
                    // coarse) would be dropped from the diff. Dated to the
                    // first second of the epoch, the copy makes every entry
                    // "racily clean", so git compares contents — trusting no
                    // stat data, as the libgit2 path does.
                    std::fs::File::options()
                        .write(true)
                        .open(&tmp_index)
                        .and_then(|f| {
                            f.set_modified(
                                std::time::UNIX_EPOCH + std::time::Duration::from_secs(1),
                            )
                        })
                        .map_err(|e| io_err("cannot date the index copy", &tmp_index, &e))?;
                }
                let with_index = |args: &[&str]| {
                    let mut cmd = self.git(ctx);
                    cmd.env("GIT_INDEX_FILE", &tmp_index).args([
                        "-c",
                        "core.splitIndex=false",
                        "-c",
                        "core.fsmonitor=false",
                        "-c",
                        "core.safecrlf=false",
                    ]);
                    cmd.args(args);
                    cli::run_ok(&mut cmd, None)
                };
                // Paths of gitlink entries in `ls-files --stage -z` output
                // (`<mode> <id> <stage>\t<path>\0`), as raw bytes.
                let gitlinks = |listing: Vec<u8>| -> Vec<Vec<u8>> {
                    listing
                        .split(|b| *b == 0)
                        .filter(|e| e.starts_with(b"160000 "))
                        .filter_map(|e| {
                            let tab = e.iter().position(|b| *b == b'\t')?;
                            Some(e[tab + 1..].to_vec())
                        })
                        .collect()
                };
                let before = gitlinks(with_index(&["ls-files", "--stage", "-z"])?);
                with_index(&["add", "--all"])?;
                // `git add` records an embedded repository (an agent's `git
                // init` or clone) as a gitlink; a patch cannot carry it, so
                // it is left out, as on the libgit2 path.
                let embedded: Vec<Vec<u8>> = gitlinks(with_index(&["ls-files", "--stage", "-z"])?)
                    .into_iter()
                    .filter(|p| !before.contains(p))
                    .collect();
                if !embedded.is_empty() {
                    let mut cmd = self.git(ctx);
                    cmd.env("GIT_INDEX_FILE", &tmp_index).args([
                        "update-index",
                        "--force-remove",
                        "-z",
                        "--stdin",
                    ]);
                    let paths: Vec<u8> = embedded
                        .iter()
                        .flat_map(|p| p.iter().copied().chain([0]))
                        .collect();
                    cli::run_ok(&mut cmd, Some(&paths))?;
                }
                let tree = cli::line(&with_index(&["write-tree"])?);
                Ok(tree)
            }
        }
    }

    /// The tree of `commit`.
    pub(in crate::workspace::git) fn tree_of(
        &self,
        ctx: &Ctx<'_>,
        commit: &str,
    ) -> Result<String, Error> {
        match &self.lib {
            Some(repo) => Oid::from_str(commit)
                .and_then(|id| repo.find_commit(id))
                .map(|c| c.tree_id().to_string())
                .map_err(|e| lib_err(format!("cannot read commit {commit}"), &e)),
            None => {
                let mut cmd = self.git(ctx);
                cmd.args(["rev-parse", "--verify"])
                    .arg(format!("{commit}^{{tree}}"));
                Ok(cli::line(&cli::run_ok(&mut cmd, None)?))
            }
        }
    }

    /// A snapshot commit of `tree` over `parent`, with coderig's fixed
    /// identity at `time`; no ref is created or moved.
    pub(in crate::workspace::git) fn commit_snapshot(
        &self,
        ctx: &Ctx<'_>,
        tree: &str,
        parent: Option<&str>,
        time: i64,
    ) -> Result<String, Error> {
        match &self.lib {
            Some(repo) => {
                let fail = |e: git2::Error| lib_err("cannot write the snapshot commit", &e);
                let sig = Signature::new(SNAPSHOT_NAME, SNAPSHOT_EMAIL, &Time::new(time, 0))
                    .map_err(fail)?;
                let tree = repo
                    .find_tree(Oid::from_str(tree).map_err(fail)?)
                    .map_err(fail)?;
                let parents = match parent {
                    Some(p) => vec![repo
                        .find_commit(Oid::from_str(p).map_err(fail)?)
                        .map_err(fail)?],
                    None => vec![],
                };
                let parents: Vec<&git2::Commit<'_>> = parents.iter().collect();
                // `git commit-tree -m` ends the message with a newline; so do we.
                let message = format!("{SNAPSHOT_MESSAGE}\n");
                repo.commit(None, &sig, &sig, &message, &tree, &parents)
                    .map(|id| id.to_string())
                    .map_err(fail)
            }
            None => {
                let date = format!("@{time} +0000");
                let mut cmd = self.git(ctx);
                cmd.env("GIT_AUTHOR_NAME", SNAPSHOT_NAME)
                    .env("GIT_AUTHOR_EMAIL", SNAPSHOT_EMAIL)
                    .env("GIT_AUTHOR_DATE", &date)
                    .env("GIT_COMMITTER_NAME", SNAPSHOT_NAME)
                    .env("GIT_COMMITTER_EMAIL", SNAPSHOT_EMAIL)
                    .env("GIT_COMMITTER_DATE", &date)
                    .args(["commit-tree", "--no-gpg-sign", tree]);
                if let Some(p) = parent {
                    cmd.args(["-p", p]);
                }
                cmd.args(["-m", SNAPSHOT_MESSAGE]);
                Ok(cli::line(&cli::run_ok(&mut cmd, None)?))
            }
        }
    }
}
