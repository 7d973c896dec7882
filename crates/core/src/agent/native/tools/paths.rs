//! Every path a tool touches, confined to the workdir.
//!
//! The model names paths relative to the workdir (an absolute path is
//! accepted when it lies inside it). [`resolve`] normalizes `.` and `..`
//! as the model means them (lexically, before any symlink is followed),
//! then lets the file system decide: the existing part of the path is
//! canonicalized, so a symlink anywhere along it — the last component
//! included — that leads out of the workdir is refused, whatever its
//! spelling. A path that does not exist is answered with the closest names
//! that do.
//!
//! The checks are made when the call runs; `run`'s sandbox, not this file,
//! guards against a process racing the tools.

use ignore::WalkBuilder;
use rapidfuzz::distance::osa;
use std::ffi::OsStr;
use std::fs;
use std::path::{Component, Path, PathBuf};

/// The code of a path that leads out of the workdir.
pub const OUTSIDE_WORKDIR: &str = "OUTSIDE_WORKDIR";
/// The code of a path that does not exist (or cannot be created).
pub const NOT_FOUND: &str = "NOT_FOUND";

/// At most this many entries are walked to find suggestions for a missing
/// path (the walk is `.gitignore`-aware, so build outputs rarely count).
const SUGGEST_WALK_LIMIT: usize = 5_000;
/// At most this many names are suggested.
const SUGGESTIONS: usize = 5;

/// Why a path was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathRefusal {
    /// [`OUTSIDE_WORKDIR`] or [`NOT_FOUND`].
    pub code: &'static str,
    /// What the model is told: what was wrong and what to do instead.
    pub message: String,
}

impl PathRefusal {
    fn outside(path: &str, why: &str) -> Self {
        PathRefusal {
            code: OUTSIDE_WORKDIR,
            message: format!(
                "{path:?} {why}, outside the workdir. Paths are relative to the workdir \
                 (e.g. \"src/main.rs\"); use list_files to see what is there."
            ),
        }
    }

    fn not_found(message: String) -> Self {
        PathRefusal {
            code: NOT_FOUND,
            message,
        }
    }
}

/// Resolves the model's `path` under `root` (the canonical workdir).
///
/// Guarantees:
/// - `path` is relative to `root`; `""` and `"."` are `root` itself; an
///   absolute path is accepted only when it lies inside `root` (under its
///   canonical spelling or another spelling that canonicalizes into it).
/// - `.` and `..` are applied lexically first (`a/../b` is `b`, even when
///   `a` is a symlink); a `..` that leaves `root` is refused with
///   [`OUTSIDE_WORKDIR`].
/// - An existing target is returned canonical (symlinks followed) and only
///   when that canonical path is inside `root`: a symlink anywhere along
///   the path, the last component included, that leads out is refused
///   with [`OUTSIDE_WORKDIR`]. A symlink from inside to inside is followed.
/// - `must_exist` and no such file: [`NOT_FOUND`], the message listing the
///   closest existing names (siblings in the nearest existing directory
///   and files of the same name anywhere under `root`), ranked by
///   similarity.
/// - `!must_exist` and no such file (a file to create): the deepest
///   existing ancestor must canonicalize inside `root` and be a directory;
///   the answer is that canonical ancestor joined with the missing
///   components. A dangling symlink as the last component is accepted only
///   when its target is inside `root` (the answer is then the link itself,
///   which an atomic write replaces); a dangling symlink in the middle is
///   [`NOT_FOUND`].
///
/// Never panics; every refusal's message tells the model what to do next.
pub fn resolve(root: &Path, path: &str, must_exist: bool) -> Result<PathBuf, PathRefusal> {
    let wanted = normalize(root, path)?;
    match fs::canonicalize(&wanted) {
        Ok(canonical) if canonical.starts_with(root) => Ok(canonical),
        Ok(canonical) => Err(PathRefusal::outside(
            path,
            &format!("leads through a symlink to {}", canonical.display()),
        )),
        Err(_) => resolve_missing(root, path, &wanted, must_exist),
    }
}

/// `path` relative to `root` with `/` separators, for messages (`.` for
/// `root` itself; a path outside `root` is shown whole).
pub fn display(root: &Path, path: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
        Ok(rel) => rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/"),
        Err(_) => path.display().to_string(),
    }
}

/// A `.gitignore`-aware walk of `start` (inside `root`) as the tools see
/// the workdir: ignore files honoured even outside a git repository (those
/// of `root`'s ancestors too, up to a git root, as git does — unless they
/// ignore `root` or a folder above it: then only the workdir's own count),
/// hidden files
/// included, `.git` never entered, symlinks listed but never followed (so
/// a walk cannot leave the workdir), entries sorted by name.
pub fn walker(root: &Path, start: &Path) -> WalkBuilder {
    let mut builder = WalkBuilder::new(start);
    builder
        .hidden(false)
        .require_git(false)
        .follow_links(false)
        .git_global(false)
        .parents(!ignored_by_ancestors(root))
        .filter_entry(|e| e.file_name() != OsStr::new(".git"))
        .sort_by_file_name(|a, b| a.cmp(b));
    builder
}

/// Whether `root`, or a folder between it and the git root above it, is
/// ignored by the ignore files above it (a workdir inside an ignored
/// folder of an enclosing repository, which git does not govern).
fn ignored_by_ancestors(root: &Path) -> bool {
    for dir in root.ancestors() {
        if dir.join(".git").exists() {
            return false;
        }
        let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
            return false;
        };
        let name = name.to_owned();
        let mut builder = WalkBuilder::new(parent);
        builder
            .hidden(false)
            .require_git(false)
            .follow_links(false)
            .git_global(false)
            .max_depth(Some(1))
            .filter_entry(move |e| e.depth() == 0 || e.file_name() == name);
        if !builder.build().flatten().any(|e| e.depth() == 1) {
            return true;
        }
    }
    false
}

/// `root.join(path)` with `.` and `..` applied lexically; refused when it
/// is not under `root`.
fn normalize(root: &Path, path: &str) -> Result<PathBuf, PathRefusal> {
    if path.contains('\0') {
        return Err(PathRefusal::not_found(format!(
            "{path:?} holds a NUL character; no file has such a name. Give a path relative to the workdir."
        )));
    }
    let trimmed = path.trim();
    if trimmed == "~" || trimmed.starts_with("~/") {
        return Err(PathRefusal::outside(path, "is in the home directory"));
    }
    let given = Path::new(trimmed);
    let joined = if given.is_absolute() {
        given.to_path_buf()
    } else {
        root.join(given)
    };
    let mut out = PathBuf::new();
    for component in joined.components() {
        match component {
            Component::Prefix(p) => out.push(p.as_os_str()),
            Component::RootDir => out.push(Component::RootDir.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => out.push(name),
        }
    }
    if out.starts_with(root) {
        return Ok(out);
    }
    if given.is_absolute() {
        // Another spelling of a path inside root (a symlinked alias of the
        // workdir, say): accept it when its existing part canonicalizes in.
        if let Some((ancestor, rest)) = deepest_existing(&out) {
            if ancestor.starts_with(root) {
                return Ok(rest.iter().fold(ancestor, |p, c| p.join(c)));
            }
        }
        return Err(PathRefusal::outside(path, "is an absolute path"));
    }
    Err(PathRefusal::outside(path, "goes up with '..'"))
}

/// The deepest ancestor of `path` (itself included) that canonicalizes,
/// canonical, and the components below it.
fn deepest_existing(path: &Path) -> Option<(PathBuf, Vec<PathBuf>)> {
    let mut rest = vec![];
    let mut current = path;
    loop {
        if let Ok(canonical) = fs::canonicalize(current) {
            rest.reverse();
            return Some((canonical, rest));
        }
        rest.push(PathBuf::from(current.file_name()?));
        current = current.parent()?;
    }
}

/// `wanted` (lexically under `root`) does not canonicalize.
fn resolve_missing(
    root: &Path,
    path: &str,
    wanted: &Path,
    must_exist: bool,
) -> Result<PathBuf, PathRefusal> {
    let shown = wanted
        .strip_prefix(root)
        .map(|r| display(root, &root.join(r)))
        .unwrap_or_else(|_| path.to_string());
    let Some((ancestor, rest)) = deepest_existing(wanted) else {
        return Err(PathRefusal::not_found(format!(
            "{shown} does not exist. Paths are relative to the workdir; use list_files to look."
        )));
    };
    if !ancestor.starts_with(root) {
        return Err(PathRefusal::outside(
            path,
            &format!("leads through a symlink to {}", ancestor.display()),
        ));
    }
    let Some(first) = rest.first() else {
        // Canonicalized now though it did not a moment ago: a race.
        return Err(PathRefusal::not_found(format!(
            "{shown} changed while it was being looked up; try again."
        )));
    };
    let below = ancestor.join(first);
    // The first missing component may exist as a dangling symlink.
    if let Ok(meta) = fs::symlink_metadata(&below) {
        if meta.file_type().is_symlink() {
            let target = fs::read_link(&below).unwrap_or_default();
            let target = lexical(&ancestor.join(&target));
            let inside = match deepest_existing(&target) {
                Some((a, _)) => a.starts_with(root),
                None => false,
            };
            if !inside {
                return Err(PathRefusal::outside(
                    path,
                    &format!("is a symlink to {}", target.display()),
                ));
            }
            if must_exist || rest.len() > 1 {
                return Err(PathRefusal::not_found(format!(
                    "{} is a broken symlink (to {}). Paths are relative to the workdir; use list_files to look.",
                    display(root, &below),
                    display(root, &target)
                )));
            }
            return Ok(below);
        }
        if !meta.is_dir() && rest.len() > 1 {
            return Err(PathRefusal::not_found(format!(
                "{shown} cannot exist: {} is a file, not a directory.",
                display(root, &below)
            )));
        }
    }
    if !ancestor.is_dir() {
        return Err(PathRefusal::not_found(format!(
            "{shown} cannot exist: {} is a file, not a directory.",
            display(root, &ancestor)
        )));
    }
    if !must_exist {
        return Ok(rest.iter().fold(ancestor, |p, c| p.join(c)));
    }
    let suggestions = suggest(root, &ancestor, first, wanted);
    let mut message = format!("{shown} does not exist.");
    if suggestions.is_empty() {
        message.push_str(&format!(
            " Nothing with a similar name is in {}. Use list_files or grep to find the file.",
            match display(root, &ancestor).as_str() {
                "." => "the workdir".to_string(),
                d => format!("{d}/"),
            }
        ));
    } else {
        message.push_str(&format!(
            " Closest existing: {}. Paths are relative to the workdir.",
            suggestions.join(", ")
        ));
    }
    Err(PathRefusal::not_found(message))
}

/// `path` with `.` and `..` applied lexically.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Similarity in `[0, 1]`: edits with transpositions (`scr` is one edit
/// from `src`) over the longer length.
fn similarity(a: &str, b: &str) -> f64 {
    osa::normalized_similarity(a.chars(), b.chars())
}

/// The closest existing names for the missing `wanted`: entries of
/// `parent` (its nearest existing directory) like `missing` (the first
/// missing name under it), and files anywhere under `root` named like
/// `wanted`'s last component; best first, without repeats.
fn suggest(root: &Path, parent: &Path, missing: &Path, wanted: &Path) -> Vec<String> {
    let missing = missing.to_string_lossy().to_lowercase();
    let base = wanted
        .file_name()
        .map(|b| b.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let wanted_rel = display(root, wanted).to_lowercase();
    let mut scored: Vec<(f64, String)> = vec![];

    if let Ok(entries) = fs::read_dir(parent) {
        for entry in entries.flatten().take(SUGGEST_WALK_LIMIT) {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name == ".git" {
                continue;
            }
            let score = similarity(&missing, &name.to_lowercase());
            if score >= 0.5 {
                let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
                let mut shown = display(root, &parent.join(&name));
                if is_dir {
                    shown.push('/');
                }
                scored.push((score, shown));
            }
        }
    }

    if !base.is_empty() {
        for entry in walker(root, root)
            .build()
            .flatten()
            .take(SUGGEST_WALK_LIMIT)
            .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        {
            let name = entry.file_name().to_string_lossy().to_lowercase();
            let name_score = similarity(&base, &name);
            if name_score < 0.75 {
                continue;
            }
            let rel = display(root, entry.path());
            // Same name first, then the path most like the one asked for.
            let score = name_score * 0.8 + similarity(&wanted_rel, &rel.to_lowercase()) * 0.2;
            scored.push((score, rel));
        }
    }

    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let mut out: Vec<String> = vec![];
    for (_, name) in scored {
        if !out.contains(&name) {
            out.push(name);
        }
        if out.len() == SUGGESTIONS {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    struct Tree {
        _dir: tempfile::TempDir,
        _outside: tempfile::TempDir,
        root: PathBuf,
        outside: PathBuf,
    }

    /// root/{a/, b/file.txt, src/utils/helpers.py, src/main.py,
    /// lib/helpers.py, link_out -> outside/, file_out -> outside/secret,
    /// link_in -> src/, file_in -> src/main.py, dangling_out -> /nonexistent/x,
    /// dangling_in -> src/new.py}
    fn tree() -> Tree {
        let dir = tempfile::tempdir().unwrap();
        let outside_dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        let outside = fs::canonicalize(outside_dir.path()).unwrap();
        fs::write(outside.join("secret"), "s").unwrap();
        for d in ["a", "b", "src/utils", "lib"] {
            fs::create_dir_all(root.join(d)).unwrap();
        }
        for f in [
            "b/file.txt",
            "src/utils/helpers.py",
            "src/main.py",
            "lib/helpers.py",
        ] {
            fs::write(root.join(f), "x\n").unwrap();
        }
        symlink(&outside, root.join("link_out")).unwrap();
        symlink(outside.join("secret"), root.join("file_out")).unwrap();
        symlink(root.join("src"), root.join("link_in")).unwrap();
        symlink("src/main.py", root.join("file_in")).unwrap();
        symlink("/nonexistent/x", root.join("dangling_out")).unwrap();
        symlink("src/new.py", root.join("dangling_in")).unwrap();
        Tree {
            _dir: dir,
            _outside: outside_dir,
            root,
            outside,
        }
    }

    #[test]
    fn resolve_table() {
        let t = tree();
        let r = &t.root;
        let outside_abs = t.outside.join("secret").display().to_string();
        let inside_abs = r.join("src/main.py").display().to_string();
        // (path, must_exist, Ok(relative answer) | Err(code))
        let cases: Vec<(&str, bool, Result<&str, &str>)> = vec![
            ("", true, Ok(".")),
            (".", true, Ok(".")),
            ("./src/main.py", true, Ok("src/main.py")),
            ("a/../b/file.txt", true, Ok("b/file.txt")),
            ("a/../b", true, Ok("b")),
            // `..` through a symlink is lexical: link_out/.. is root.
            ("link_out/../src/main.py", true, Ok("src/main.py")),
            ("../x", true, Err(OUTSIDE_WORKDIR)),
            ("../x", false, Err(OUTSIDE_WORKDIR)),
            ("a/../../x", false, Err(OUTSIDE_WORKDIR)),
            ("/etc/passwd", true, Err(OUTSIDE_WORKDIR)),
            ("/etc/new_file", false, Err(OUTSIDE_WORKDIR)),
            ("~/.ssh/id_rsa", true, Err(OUTSIDE_WORKDIR)),
            (&inside_abs, true, Ok("src/main.py")),
            (&outside_abs, true, Err(OUTSIDE_WORKDIR)),
            ("link_out/secret", true, Err(OUTSIDE_WORKDIR)),
            ("link_out", true, Err(OUTSIDE_WORKDIR)),
            ("link_out/new.txt", false, Err(OUTSIDE_WORKDIR)),
            ("link_out/deep/new.txt", false, Err(OUTSIDE_WORKDIR)),
            ("file_out", true, Err(OUTSIDE_WORKDIR)),
            ("file_out", false, Err(OUTSIDE_WORKDIR)),
            ("link_in/main.py", true, Ok("src/main.py")),
            ("file_in", true, Ok("src/main.py")),
            ("link_in/new.py", false, Ok("src/new.py")),
            ("dangling_out", true, Err(OUTSIDE_WORKDIR)),
            ("dangling_out", false, Err(OUTSIDE_WORKDIR)),
            ("dangling_in", true, Err(NOT_FOUND)),
            ("dangling_in", false, Ok("dangling_in")),
            ("dangling_in/x", false, Err(NOT_FOUND)),
            ("new_dir/deeper/new.rs", false, Ok("new_dir/deeper/new.rs")),
            ("b/file.txt/x", false, Err(NOT_FOUND)),
            ("src/missing.py", true, Err(NOT_FOUND)),
            ("nul\0name", true, Err(NOT_FOUND)),
        ];
        for (path, must_exist, want) in cases {
            let got = resolve(r, path, must_exist);
            match (want, got) {
                (Ok(rel), Ok(p)) => assert_eq!(display(r, &p), rel, "{path:?}"),
                (Err(code), Err(refusal)) => {
                    assert_eq!(refusal.code, code, "{path:?}: {}", refusal.message);
                    if code == OUTSIDE_WORKDIR {
                        assert!(
                            refusal.message.contains("relative to the workdir"),
                            "{}",
                            refusal.message
                        );
                    }
                }
                (want, got) => {
                    panic!("{path:?} (must_exist {must_exist}): want {want:?}, got {got:?}")
                }
            }
        }
    }

    #[test]
    fn an_alias_of_the_workdir_is_inside() {
        let t = tree();
        let alias_dir = tempfile::tempdir().unwrap();
        let alias = alias_dir.path().join("alias");
        symlink(&t.root, &alias).unwrap();
        let p = resolve(
            &t.root,
            &alias.join("src/main.py").display().to_string(),
            true,
        )
        .unwrap();
        assert_eq!(p, t.root.join("src/main.py"));
        let p = resolve(
            &t.root,
            &alias.join("src/new.py").display().to_string(),
            false,
        )
        .unwrap();
        assert_eq!(p, t.root.join("src/new.py"));
    }

    #[test]
    fn missing_paths_name_the_closest_existing_ones() {
        let t = tree();
        let r = &t.root;
        // A typo in a directory name: its sibling is suggested.
        let e = resolve(r, "src/utls/helpers.py", true).unwrap_err();
        assert_eq!(e.code, NOT_FOUND);
        assert!(
            e.message.starts_with("src/utls/helpers.py does not exist."),
            "{}",
            e.message
        );
        assert!(e.message.contains("src/utils/"), "{}", e.message);
        // Same-named files elsewhere, the nearer path first.
        assert!(e.message.contains("src/utils/helpers.py"), "{}", e.message);
        let at = |s: &str| e.message.find(s).unwrap();
        assert!(
            at("src/utils/helpers.py") < at("lib/helpers.py"),
            "{}",
            e.message
        );
        // A wrong directory: the file's real places.
        let e = resolve(r, "helpers.py", true).unwrap_err();
        assert!(e.message.contains("lib/helpers.py"), "{}", e.message);
        assert!(e.message.contains("src/utils/helpers.py"), "{}", e.message);
        // A typo in the file name.
        let e = resolve(r, "src/mian.py", true).unwrap_err();
        assert!(e.message.contains("src/main.py"), "{}", e.message);
        // Nothing alike: says where to look.
        let e = resolve(r, "zzzzqqqq", true).unwrap_err();
        assert!(e.message.contains("list_files"), "{}", e.message);
    }

    #[test]
    fn ignored_files_are_not_suggested() {
        let t = tree();
        fs::write(t.root.join(".gitignore"), "build/\n").unwrap();
        fs::create_dir_all(t.root.join("build")).unwrap();
        fs::write(t.root.join("build/out.js"), "x").unwrap();
        let e = resolve(&t.root, "src/out.js", true).unwrap_err();
        assert!(!e.message.contains("build/out.js"), "{}", e.message);
    }

    #[test]
    fn a_workdir_ignored_by_an_enclosing_repo_still_sees_its_files() {
        let dir = tempfile::tempdir().unwrap();
        let outer = fs::canonicalize(dir.path()).unwrap();
        fs::create_dir_all(outer.join(".git")).unwrap();
        fs::write(outer.join(".gitignore"), "scratch/\n*.tmp\n").unwrap();
        let root = outer.join("scratch/work");
        fs::create_dir_all(root.join("src")).unwrap();
        fs::write(root.join("src/app.py"), "x").unwrap();
        fs::write(root.join("a.tmp"), "x").unwrap();
        let names = |start: &Path| -> Vec<String> {
            walker(&root, start)
                .build()
                .flatten()
                .filter(|e| e.depth() > 0)
                .map(|e| display(&root, e.path()))
                .collect()
        };
        // The enclosing repo ignores the workdir: its rules are not read.
        assert_eq!(names(&root), ["a.tmp", "src", "src/app.py"]);
        assert_eq!(names(&root.join("src")), ["src/app.py"]);
        // A workdir in a repo's subfolder keeps the repo's rules, as git does.
        let sub = outer.join("pkg");
        fs::create_dir_all(&sub).unwrap();
        fs::write(sub.join("b.tmp"), "x").unwrap();
        fs::write(sub.join("b.py"), "x").unwrap();
        let got: Vec<String> = walker(&sub, &sub)
            .build()
            .flatten()
            .filter(|e| e.depth() > 0)
            .map(|e| display(&sub, e.path()))
            .collect();
        assert_eq!(got, ["b.py"]);
    }

    #[test]
    fn display_is_relative_with_slashes() {
        let r = Path::new("/w/root");
        assert_eq!(display(r, Path::new("/w/root")), ".");
        assert_eq!(display(r, Path::new("/w/root/a/b.rs")), "a/b.rs");
        assert_eq!(display(r, Path::new("/else/x")), "/else/x");
    }
}
