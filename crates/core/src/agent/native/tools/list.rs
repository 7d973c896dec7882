//! `list_files`: what is in the workdir, as git sees it.

use super::paths;
use super::read::{plural, refused, thousands, FOOTER_RESERVE};
use super::{arguments, ToolResult, OUTPUT_CAP_CHARS};
use crate::agent::native::{ToolCall, ToolSpec};
use ignore::overrides::{Override, OverrideBuilder};
use serde::Deserialize;
use serde_json::json;
use std::fs;
use std::path::Path;

/// The depth `list_files` walks when none is given (and no glob).
pub const DEFAULT_LIST_DEPTH: usize = 3;
/// The most entries one `list_files` shows.
pub const MAX_LIST_ENTRIES: usize = 300;
/// The walk stops counting after this many entries.
const LIST_WALK_LIMIT: usize = 100_000;

/// The spec of `list_files`.
pub fn list_files_spec() -> ToolSpec {
    ToolSpec {
        name: "list_files".into(),
        description: "List files and directories (dirs end in `/`) under a path, sorted, skipping \
                      what .gitignore ignores. At most 300 entries; narrow with path, depth or glob."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Directory relative to the workdir (default: the workdir)."},
                "depth": {"type": "integer", "minimum": 1, "description": "How many levels deep (default 3; 1 = direct entries only; with a glob, unlimited)."},
                "glob": {"type": "string", "description": "Show only files matching this glob, e.g. \"**/*.py\" or \"*.{ts,tsx}\"."}
            },
            "required": [],
            "additionalProperties": false
        }),
    }
}

/// The arguments of `list_files`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    depth: Option<u64>,
    #[serde(default)]
    glob: Option<String>,
}

/// A gitignore-style glob over the workdir (`*.py` matches at any depth,
/// `src/*.py` under `src/` only); `BAD_ARGUMENTS` when it does not parse.
pub(super) fn glob_filter(root: &Path, glob: &str) -> Result<Override, ToolResult> {
    let bad = |e: ignore::Error| {
        ToolResult::refused(
            "BAD_ARGUMENTS",
            format!(
                "glob {glob:?} is not a valid glob ({e}). Use e.g. \"**/*.py\" or \"src/*.rs\"."
            ),
        )
    };
    let mut builder = OverrideBuilder::new(root);
    builder.add(glob).map_err(bad)?;
    builder.build().map_err(bad)
}

/// `list_files {path?, depth?, glob?}`: the entries under `path` (a
/// directory inside `root`, default `root`), as paths relative to `root`
/// that other tools take, one a line, sorted (a directory's contents right
/// after it), directories ending in `/`, symlinks as `name -> target`
/// (never followed).
///
/// Guarantees: `.gitignore`/`.ignore` honoured, hidden files listed, `.git`
/// never; depth 3 by default (1: direct entries only); a glob shows only
/// the files it matches, at any depth unless one is given; at most
/// [`MAX_LIST_ENTRIES`] entries and never more than [`OUTPUT_CAP_CHARS`]
/// characters, then `… and N more entries; narrow with path, depth or
/// glob`. A file as `path` is answered with its size. Refusals:
/// `BAD_ARGUMENTS` (a bad glob), `OUTSIDE_WORKDIR`, `NOT_FOUND`.
pub fn list_files(root: &Path, call: &ToolCall, spec: &ToolSpec) -> ToolResult {
    let args = match arguments::<ListArgs>(call, spec) {
        Ok(a) => a,
        Err(r) => return r,
    };
    let dir = match paths::resolve(root, args.path.as_deref().unwrap_or(""), true) {
        Ok(p) => p,
        Err(r) => return refused(r),
    };
    let shown = paths::display(root, &dir);
    if !dir.is_dir() {
        let size = fs::metadata(&dir).map_or(0, |m| m.len() as usize);
        return ToolResult::ok(format!(
            "{shown}\n[{shown} is a file of {}; use read_file to read it]",
            plural(size, "byte")
        ));
    }
    let glob = args
        .glob
        .as_deref()
        .map(str::trim)
        .filter(|g| !g.is_empty());
    let filter = match glob.map(|g| glob_filter(root, g)).transpose() {
        Ok(f) => f,
        Err(r) => return r,
    };
    let depth = match (args.depth, glob) {
        (Some(d), _) => Some(d.max(1) as usize),
        (None, None) => Some(DEFAULT_LIST_DEPTH),
        (None, Some(_)) => None,
    };
    let mut walk = paths::walker(root, &dir);
    walk.max_depth(depth);
    if let Some(f) = filter {
        walk.overrides(f);
    }
    let mut out = String::new();
    let mut listed = 0usize;
    let mut more = 0usize;
    let mut capped = false;
    for entry in walk.build().flatten().filter(|e| e.depth() > 0) {
        if listed + more >= LIST_WALK_LIMIT {
            capped = true;
            break;
        }
        let Some(kind) = entry.file_type() else {
            continue;
        };
        if glob.is_some() && kind.is_dir() {
            continue;
        }
        let mut line = paths::display(root, entry.path());
        if kind.is_dir() {
            line.push('/');
        } else if kind.is_symlink() {
            if let Ok(target) = fs::read_link(entry.path()) {
                line.push_str(&format!(" -> {}", target.display()));
            }
        }
        if more == 0
            && listed < MAX_LIST_ENTRIES
            && out.len() + line.len() < OUTPUT_CAP_CHARS - FOOTER_RESERVE
        {
            out.push_str(&line);
            out.push('\n');
            listed += 1;
        } else {
            more += 1;
        }
    }
    let place = if shown == "." {
        "the workdir".to_string()
    } else {
        format!("{shown}/")
    };
    if listed == 0 {
        return ToolResult::ok(match glob {
            Some(g) => format!(
                "No files under {place} match {g:?} (files ignored by .gitignore are not listed). Try a looser glob, e.g. \"**/*{}\".",
                g.rsplit_once('.').map_or(String::new(), |(_, ext)| format!(".{ext}"))
            ),
            None => format!("{place} is empty (files ignored by .gitignore are not listed)."),
        });
    }
    let depth_note = match depth {
        Some(d) => format!(", depth {d}"),
        None => String::new(),
    };
    if more == 0 {
        let entries = if listed == 1 {
            "1 entry".to_string()
        } else {
            format!("{} entries", thousands(listed))
        };
        out.push_str(&format!("[{entries} under {place}{depth_note}]"));
    } else {
        let more = if capped {
            format!("more than {}", thousands(more))
        } else {
            thousands(more)
        };
        out.push_str(&format!(
            "… and {more} more entries; narrow with path, depth or glob"
        ));
    }
    ToolResult::ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::read::fixture::{call, put, repo};
    use super::*;
    use std::os::unix::fs::symlink;

    fn list(root: &Path, args: serde_json::Value) -> ToolResult {
        list_files(root, &call("list_files", args), &list_files_spec())
    }

    fn entries(r: &ToolResult) -> Vec<&str> {
        let mut lines: Vec<&str> = r.output.lines().collect();
        lines.pop();
        lines
    }

    #[test]
    fn lists_as_git_sees_it_sorted_to_depth_3() {
        let (_d, root) = repo();
        let r = list(&root, json!({}));
        assert!(r.ok, "{}", r.output);
        let e = entries(&r);
        assert_eq!(
            e,
            [
                ".env",
                ".gitignore",
                "big.txt",
                "crlf.txt",
                "empty.txt",
                "image.bin",
                "latin1.txt",
                "long.txt",
                "src/",
                "src/lib/",
                "src/lib/deep/",
                "src/lib/util.py",
                "src/main.py",
            ]
        );
        assert_eq!(
            r.output.lines().last().unwrap(),
            "[13 entries under the workdir, depth 3]"
        );
        let r = list(&root, json!({"depth": 1, "path": "src"}));
        assert_eq!(entries(&r), ["src/lib/", "src/main.py"]);
        assert_eq!(
            r.output.lines().last().unwrap(),
            "[2 entries under src/, depth 1]"
        );
    }

    #[test]
    fn a_glob_shows_matching_files_at_any_depth() {
        let (_d, root) = repo();
        let r = list(&root, json!({"glob": "**/*.py"}));
        assert_eq!(
            entries(&r),
            ["src/lib/deep/deeper/x.py", "src/lib/util.py", "src/main.py"]
        );
        let r = list(&root, json!({"glob": "*.py", "path": "src/lib"}));
        assert_eq!(entries(&r), ["src/lib/deep/deeper/x.py", "src/lib/util.py"]);
        let r = list(&root, json!({"glob": "*.{txt,bin}", "depth": 1}));
        assert_eq!(entries(&r).len(), 6, "{}", r.output);
        let r = list(&root, json!({"glob": "*.rs"}));
        assert!(r.ok);
        assert!(
            r.output
                .starts_with("No files under the workdir match \"*.rs\""),
            "{}",
            r.output
        );
        let r = list(&root, json!({"glob": "a[b"}));
        assert_eq!(r.code.as_deref(), Some("BAD_ARGUMENTS"), "{}", r.output);
    }

    #[test]
    fn caps_at_300_entries_and_says_how_to_narrow() {
        let (_d, root) = repo();
        for i in 0..400 {
            put(&root, &format!("many/f{i:03}.txt"), "x");
        }
        let r = list(&root, json!({"path": "many"}));
        assert_eq!(entries(&r).len(), MAX_LIST_ENTRIES);
        assert_eq!(entries(&r)[0], "many/f000.txt");
        assert_eq!(
            r.output.lines().last().unwrap(),
            "… and 100 more entries; narrow with path, depth or glob"
        );
        assert!(r.output.chars().count() <= OUTPUT_CAP_CHARS);
        // Long names stop it at the output cap first, at whole lines.
        for i in 0..200 {
            put(&root, &format!("wide/{}{i:03}.txt", "n".repeat(120)), "x");
        }
        let r = list(&root, json!({"path": "wide"}));
        assert!(r.output.chars().count() <= OUTPUT_CAP_CHARS);
        assert!(r
            .output
            .ends_with("more entries; narrow with path, depth or glob"));
        assert!(entries(&r).iter().all(|l| l.ends_with(".txt")));
    }

    #[test]
    fn symlinks_are_listed_never_followed() {
        let (_d, root) = repo();
        let outside = tempfile::tempdir().unwrap();
        put(outside.path(), "secret.txt", "s");
        symlink(outside.path(), root.join("src/out")).unwrap();
        let r = list(&root, json!({"path": "src"}));
        let e = entries(&r);
        assert!(e.iter().any(|l| l.starts_with("src/out -> ")), "{e:?}");
        assert!(!r.output.contains("secret.txt"), "{}", r.output);
        let r = list(&root, json!({"path": "src/out"}));
        assert_eq!(r.code.as_deref(), Some("OUTSIDE_WORKDIR"));
    }

    #[test]
    fn files_empty_dirs_and_refusals() {
        let (_d, root) = repo();
        let r = list(&root, json!({"path": "src/main.py"}));
        assert!(r.ok);
        assert!(r.output.contains("use read_file"), "{}", r.output);
        std::fs::create_dir(root.join("void")).unwrap();
        let r = list(&root, json!({"path": "void"}));
        assert!(r.output.starts_with("void/ is empty"), "{}", r.output);
        let r = list(&root, json!({"path": "../"}));
        assert_eq!(r.code.as_deref(), Some("OUTSIDE_WORKDIR"));
        let r = list(&root, json!({"path": "scr"}));
        assert_eq!(r.code.as_deref(), Some("NOT_FOUND"));
        assert!(r.output.contains("src/"), "{}", r.output);
        let r = list(&root, json!({"recursive": true}));
        assert_eq!(r.code.as_deref(), Some("BAD_ARGUMENTS"));
    }
}
