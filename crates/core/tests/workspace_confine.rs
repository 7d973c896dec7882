//! Path confinement on a real file system: relative paths, `..`, and
//! symlinks inside the root that lead outside it. Needs no git, so it runs
//! without the `git` feature.

use coderig::workspace::confine::{resolve_entry_under, resolve_under};
use coderig::workspace::{confine_lexically, ProjectRoots};
use coderig::ErrorKind;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

struct World {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
}

fn world() -> World {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let root = base.join("root");
    let outside = base.join("outside");
    std::fs::create_dir_all(root.join("src/deep")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(outside.join("secret"), "secret\n").unwrap();
    symlink(&outside, root.join("to-outside")).unwrap();
    symlink(outside.join("secret"), root.join("secret-link")).unwrap();
    symlink("src", root.join("to-src")).unwrap();
    symlink("../outside", root.join("relative-escape")).unwrap();
    symlink(root.join("nowhere"), root.join("dangling")).unwrap();
    symlink("loop-b", root.join("loop-a")).unwrap();
    symlink("loop-a", root.join("loop-b")).unwrap();
    World {
        _tmp: tmp,
        root,
        outside,
    }
}

fn refused(result: Result<PathBuf, coderig::Error>, root: &Path, what: &str) {
    let err = result.expect_err(what);
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{what}: {err}");
    assert!(
        err.message().contains(root.to_str().unwrap()),
        "{what}: {err}"
    );
    assert_eq!(err.details()["root"], root.to_str().unwrap(), "{what}");
}

#[test]
fn relative_paths_are_under_the_root_and_dot_dot_cannot_climb_out() {
    let w = world();
    let root = &w.root;
    for (given, expected) in [
        ("src/main.rs", root.join("src/main.rs")),
        ("./src/../src/main.rs", root.join("src/main.rs")),
        ("src/new/file.rs", root.join("src/new/file.rs")),
        ("", root.clone()),
    ] {
        assert_eq!(
            resolve_under(root, Path::new(given)).unwrap(),
            expected,
            "{given}"
        );
        assert_eq!(
            confine_lexically(root, Path::new(given)).unwrap(),
            expected,
            "{given}"
        );
    }
    for given in [
        "..",
        "../outside/secret",
        "src/../../outside",
        "src/deep/../../../x",
    ] {
        refused(resolve_under(root, Path::new(given)), root, given);
        refused(
            confine_lexically(root, Path::new(given)).map(|p| p.to_path_buf()),
            root,
            given,
        );
    }
    let absolute = w.outside.join("secret");
    refused(
        resolve_under(root, &absolute),
        root,
        "an absolute path elsewhere",
    );
    let sibling = PathBuf::from(format!("{}-sibling/x", root.display()));
    refused(
        resolve_under(root, &sibling),
        root,
        "a sibling sharing the prefix",
    );
}

#[test]
fn symlinks_never_lead_a_write_outside_the_root() {
    let w = world();
    let root = &w.root;
    for given in [
        "to-outside/new-file",
        "to-outside/secret",
        "to-outside",
        "secret-link",
        "relative-escape/secret",
        "to-src/../to-outside/x",
    ] {
        refused(resolve_under(root, Path::new(given)), root, given);
    }
    // Through a symlink that stays inside, the resolved path is returned.
    assert_eq!(
        resolve_under(root, Path::new("to-src/main.rs")).unwrap(),
        root.join("src/main.rs")
    );
    // A dangling or looping symlink: where it would write is unknown.
    for given in ["dangling", "loop-a/x"] {
        refused(resolve_under(root, Path::new(given)), root, given);
    }
}

#[test]
fn entry_resolution_does_not_follow_the_last_component() {
    let w = world();
    let root = &w.root;
    // Replacing or deleting the link itself is fine...
    assert_eq!(
        resolve_entry_under(root, Path::new("secret-link")).unwrap(),
        root.join("secret-link")
    );
    assert_eq!(
        resolve_entry_under(root, Path::new("dangling")).unwrap(),
        root.join("dangling")
    );
    // ...going through it is not.
    refused(
        resolve_entry_under(root, Path::new("to-outside/secret")),
        root,
        "through a link",
    );
}

#[test]
fn a_root_spelled_through_a_symlink_is_the_same_root() {
    let w = world();
    let alias = w.outside.join("alias-of-root");
    symlink(&w.root, &alias).unwrap();
    let roots = ProjectRoots::new([&alias]).unwrap();
    assert_eq!(roots.roots(), std::slice::from_ref(&w.root));
    assert_eq!(
        roots.resolve(&alias.join("src/main.rs")).unwrap(),
        w.root.join("src/main.rs")
    );
    assert_eq!(
        roots.resolve(Path::new("src/main.rs")).unwrap(),
        w.root.join("src/main.rs")
    );
    refused(roots.resolve(&w.outside.join("secret")), &w.root, "outside");
}

#[test]
fn several_roots_name_them_all_when_a_path_is_under_none() {
    let w = world();
    let roots = ProjectRoots::new([&w.root, &w.root.join("src")]).unwrap();
    let err = roots.resolve(&w.outside.join("secret")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(err.message().contains(w.root.to_str().unwrap()), "{err}");
    assert_eq!(err.details()["roots"].as_array().unwrap().len(), 2);
    assert!(roots.resolve(&w.root.join("src/deep")).is_ok());
    assert_eq!(
        ProjectRoots::new(Vec::<PathBuf>::new()).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    assert_eq!(
        ProjectRoots::new([w.root.join("src/main.rs")])
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidInput
    );
}

/// A path with a NUL character names no file: `invalid_input` (detail
/// `path`), not the `io` error the file system would give.
#[test]
fn a_path_with_a_nul_is_invalid_input() {
    let w = world();
    let roots = ProjectRoots::new([&w.root]).unwrap();
    let nul = w.root.join("src/a\u{0}b");
    for result in [
        resolve_under(&w.root, &nul),
        resolve_entry_under(&w.root, Path::new("a\u{0}b")),
        roots.resolve(&nul),
        roots.resolve(Path::new("\u{0}")),
    ] {
        let err = result.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
        assert!(err.message().contains("NUL"), "{err}");
        assert!(err.details()["path"].is_string(), "{err}");
    }
}
