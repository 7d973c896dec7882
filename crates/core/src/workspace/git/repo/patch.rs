//! Patches: the diff of a captured tree against its base, the paths a
//! patch touches, and applying one (checked first).

use super::*;

impl Repo {
    /// The patch from the tree of `base_commit` to `tree`, in `git diff
    /// --binary` form: full index lines, binary patches, renames detected.
    pub(in crate::workspace::git) fn diff(
        &self,
        ctx: &Ctx<'_>,
        base_commit: &str,
        tree: &str,
    ) -> Result<Vec<u8>, Error> {
        match &self.lib {
            Some(repo) => {
                let fail = |e: git2::Error| lib_err("cannot diff", &e);
                let old = repo
                    .find_commit(Oid::from_str(base_commit).map_err(fail)?)
                    .and_then(|c| c.tree())
                    .map_err(fail)?;
                let new = repo
                    .find_tree(Oid::from_str(tree).map_err(fail)?)
                    .map_err(fail)?;
                let mut opts = DiffOptions::new();
                opts.show_binary(true)
                    .include_typechange(true)
                    .id_abbrev(40)
                    .old_prefix("a/")
                    .new_prefix("b/");
                let mut diff = repo
                    .diff_tree_to_tree(Some(&old), Some(&new), Some(&mut opts))
                    .map_err(fail)?;
                let mut find = DiffFindOptions::new();
                find.renames(true);
                diff.find_similar(Some(&mut find)).map_err(fail)?;
                let mut out = Vec::new();
                let mut unusable = None;
                diff.print(DiffFormat::Patch, |delta, _, line| {
                    if line.origin() == 'B' && line.content().starts_with(b"Binary files ") {
                        // libgit2 prints this for a pure binary rename (git
                        // prints nothing: the headers say it all); for a
                        // changed file it would be a patch `git apply` cannot use.
                        if delta.old_file().id() != delta.new_file().id() {
                            unusable = delta.new_file().path().map(Path::to_path_buf);
                        }
                        return true;
                    }
                    if matches!(line.origin(), '+' | '-' | ' ') {
                        out.push(line.origin() as u8);
                    }
                    out.extend_from_slice(line.content());
                    true
                })
                .map_err(fail)?;
                if let Some(path) = unusable {
                    return Err(Error::internal(format!(
                        "libgit2 gave no binary patch data for {}",
                        path.display()
                    )));
                }
                Ok(out)
            }
            None => {
                let mut cmd = self.git(ctx);
                cmd.args([
                    "-c",
                    "core.quotePath=true",
                    "-c",
                    "diff.noprefix=false",
                    "-c",
                    "diff.mnemonicPrefix=false",
                    "diff",
                    "--binary",
                    "--full-index",
                    "--find-renames",
                    "--no-color",
                    "--no-ext-diff",
                    "--no-textconv",
                    "--submodule=short",
                    "--src-prefix=a/",
                    "--dst-prefix=b/",
                    "--no-relative",
                    base_commit,
                    tree,
                    "--",
                ]);
                cli::run_ok(&mut cmd, None)
            }
        }
    }

    /// The repo-relative paths a patch touches (both sides of renames).
    /// A malformed patch is `invalid_input`.
    pub(in crate::workspace::git) fn patch_paths(
        &self,
        ctx: &Ctx<'_>,
        patch: &[u8],
    ) -> Result<Vec<PathBuf>, Error> {
        match &self.lib {
            Some(_) => {
                let diff = Diff::from_buffer(patch).map_err(|e| malformed(e.message()))?;
                let mut paths = Vec::new();
                for delta in diff.deltas() {
                    for file in [delta.old_file(), delta.new_file()] {
                        if let Some(path) = file.path() {
                            if !paths.iter().any(|p: &PathBuf| p == path) {
                                paths.push(path.to_path_buf());
                            }
                        }
                    }
                }
                Ok(paths)
            }
            None => {
                let mut cmd = self.git(ctx);
                cmd.args(["apply", "--numstat", "-z", "-"]);
                let output = cli::run(&mut cmd, Some(patch))?;
                if !output.status.success() {
                    return Err(malformed(&cli::tail(&output.stderr)));
                }
                Ok(parse_numstat_z(&output.stdout))
            }
        }
    }

    /// Applies `patch` to the working tree (not the index); with `check`,
    /// only checks that it applies. A patch that does not apply is
    /// `conflict` (detail `reason`), a malformed one `invalid_input`.
    pub(in crate::workspace::git) fn apply(
        &self,
        ctx: &Ctx<'_>,
        patch: &[u8],
        check: bool,
    ) -> Result<(), Error> {
        let refused = |why: &str| {
            Error::conflict(format!(
                "the patch does not apply cleanly to {}; nothing was changed: {why}",
                self.workdir.display()
            ))
            .with_detail("reason", why)
        };
        match &self.lib {
            Some(repo) => {
                let diff = Diff::from_buffer(patch).map_err(|e| malformed(e.message()))?;
                let mut opts = ApplyOptions::new();
                opts.check(check);
                repo.apply(&diff, ApplyLocation::WorkDir, Some(&mut opts))
                    .map_err(|e| refused(e.message()))
            }
            None => {
                let mut cmd = self.git(ctx);
                cmd.args([
                    "-c",
                    "apply.whitespace=nowarn",
                    "apply",
                    "--whitespace=nowarn",
                ]);
                if check {
                    cmd.arg("--check");
                }
                cmd.arg("-");
                let output = cli::run(&mut cmd, Some(patch))?;
                if output.status.success() {
                    return Ok(());
                }
                let stderr = cli::tail(&output.stderr);
                if stderr.contains("corrupt patch")
                    || stderr.contains("No valid patches")
                    || stderr.contains("unrecognized input")
                {
                    Err(malformed(&stderr))
                } else {
                    Err(refused(&stderr))
                }
            }
        }
    }
}

fn malformed(why: &str) -> Error {
    Error::invalid_input(format!("the patch is malformed: {why}")).with_detail("path", "patch")
}

/// Paths of `git apply --numstat -z`: `added\tdeleted\tpath\0`, or for a
/// rename or copy `added\tdeleted\t\0old\0new\0`.
pub(super) fn parse_numstat_z(out: &[u8]) -> Vec<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let mut paths = Vec::new();
    let mut fields = out.split(|b| *b == 0).peekable();
    while let Some(record) = fields.next() {
        if record.is_empty() {
            continue;
        }
        let mut parts = record.splitn(3, |b| *b == b'\t');
        let (_, _, path) = (parts.next(), parts.next(), parts.next().unwrap_or(b""));
        if path.is_empty() {
            for _ in 0..2 {
                if let Some(p) = fields.next() {
                    paths.push(PathBuf::from(OsStr::from_bytes(p)));
                }
            }
        } else {
            paths.push(PathBuf::from(OsStr::from_bytes(path)));
        }
    }
    paths
}
