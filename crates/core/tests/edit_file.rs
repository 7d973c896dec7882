//! File helpers: atomic writes, untouched files on failure, permissions.

use coderig::{edit_file, edits_file, write_atomic, ApplyOptions, Edit};
use std::fs;

fn edit(old: &str, new: &str) -> Edit {
    Edit {
        old: old.into(),
        new: new.into(),
        replace_all: false,
    }
}

fn only_file(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn edit_file_writes_the_result_and_leaves_no_temp_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.py");
    fs::write(&p, "x = 1\r\ny = 2\r\n").unwrap();
    let r = edit_file(&p, &edit("y = 2", "y = 3"), &ApplyOptions::default()).unwrap();
    assert_eq!(r.content, "x = 1\r\ny = 3\r\n");
    assert_eq!(fs::read(&p).unwrap(), b"x = 1\r\ny = 3\r\n");
    assert_eq!(only_file(dir.path()), ["a.py"]);

    let r = edits_file(
        &p,
        &[edit("x = 1", "x = 0"), edit("y = 3", "y = 4")],
        &ApplyOptions::default(),
    )
    .unwrap();
    assert_eq!(r.replacements, 2);
    assert_eq!(fs::read_to_string(&p).unwrap(), "x = 0\r\ny = 4\r\n");
}

#[test]
fn failed_edits_leave_the_file_byte_for_byte_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("b.txt");
    let original: &[u8] = b"\xEF\xBB\xBFsame\r\nsame\r\nother";
    fs::write(&p, original).unwrap();
    let opts = ApplyOptions::default();
    for (e, code) in [
        (edit("same", "x"), "AMBIGUOUS"),
        (edit("missing", "x"), "NOT_FOUND"),
        (edit("", "x"), "INVALID_INPUT"),
        (edit("other", "other"), "NO_OP"),
    ] {
        let err = edit_file(&p, &e, &opts).unwrap_err();
        assert_eq!(err.code(), code);
        assert_eq!(fs::read(&p).unwrap(), original);
    }
    let err = edits_file(&p, &[edit("other", "x"), edit("nope", "y")], &opts).unwrap_err();
    assert_eq!(err.code(), "NOT_FOUND");
    assert_eq!(fs::read(&p).unwrap(), original);
    assert_eq!(only_file(dir.path()), ["b.txt"]);
}

#[test]
fn non_utf8_and_missing_files_are_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bin.dat");
    let bytes: &[u8] = b"ok\n\xFF\xFE\n";
    fs::write(&p, bytes).unwrap();
    let e = edit_file(&p, &edit("ok", "no"), &ApplyOptions::default()).unwrap_err();
    assert_eq!(e.code(), "INVALID_INPUT");
    assert!(e.message().contains("UTF-8"), "{e}");
    assert_eq!(fs::read(&p).unwrap(), bytes);

    let missing = dir.path().join("nope.txt");
    let e = edit_file(&missing, &edit("a", "b"), &ApplyOptions::default()).unwrap_err();
    assert_eq!(e.code(), "IO");
    assert!(e.message().contains("nope.txt"), "{e}");
}

#[cfg(unix)]
#[test]
fn permissions_are_kept_and_symlinks_followed() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("run.sh");
    fs::write(&p, "echo hi\n").unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o751)).unwrap();
    edit_file(&p, &edit("hi", "bye"), &ApplyOptions::default()).unwrap();
    assert_eq!(
        fs::metadata(&p).unwrap().permissions().mode() & 0o777,
        0o751
    );
    assert_eq!(fs::read_to_string(&p).unwrap(), "echo bye\n");

    let link = dir.path().join("link.sh");
    std::os::unix::fs::symlink(&p, &link).unwrap();
    edit_file(&link, &edit("bye", "ciao"), &ApplyOptions::default()).unwrap();
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(fs::read_to_string(&p).unwrap(), "echo ciao\n");
}

#[test]
fn write_atomic_creates_and_replaces() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("new.txt");
    write_atomic(&p, b"first").unwrap();
    assert_eq!(fs::read(&p).unwrap(), b"first");
    write_atomic(&p, b"second").unwrap();
    assert_eq!(fs::read(&p).unwrap(), b"second");
    assert_eq!(only_file(dir.path()), ["new.txt"]);
    let e = write_atomic(&dir.path().join("no_such_dir").join("x"), b"x").unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
}
