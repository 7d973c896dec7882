//! Collision detection across worktrees: path normalization, the severity
//! table (with the seed's answers where they differ), the index, and
//! properties (normalization is idempotent and never escapes; severity is
//! symmetric; verdicts do not depend on order).

use coderig::conflict::{
    find_conflicts, Change, ChangeKind, ConflictIndex, ConflictVerdict, LineRange, PathErrorReason,
    RepoPath, Severity, Touch,
};
use proptest::prelude::*;

use Severity::{AdjacentLine, CreateDelete, DifferentArea, SameLine};

fn p(s: &str) -> RepoPath {
    RepoPath::new(s).unwrap_or_else(|e| panic!("{e}"))
}

fn lines(a: u32, b: u32) -> Option<LineRange> {
    Some(LineRange::new(a, b).unwrap())
}

fn touch(worktree: &str, agent: &str, change: Change, at_ms: u64) -> Touch {
    Touch {
        worktree: worktree.into(),
        agent: agent.into(),
        change,
        at_ms,
    }
}

#[test]
fn paths_normalize() {
    let ok: &[(&str, &str)] = &[
        ("src/main.rs", "src/main.rs"),
        ("./src/main.rs", "src/main.rs"),
        ("./a/../b", "b"),
        ("src\\lib\\mod.rs", "src/lib/mod.rs"),
        ("src//a.rs/", "src/a.rs"),
        ("a/./b/./c", "a/b/c"),
        ("a/b/../../c", "c"),
        ("a/b/..", "a"),
        (" spaced name.txt", " spaced name.txt"),
        ("dir.d/file..txt", "dir.d/file..txt"),
        ("...", "..."),
        ("ab:c", "ab:c"),
        ("ünï/cödé.rs", "ünï/cödé.rs"),
    ];
    for &(given, normalized) in ok {
        let path = p(given);
        assert_eq!(path.as_str(), normalized, "{given:?}");
        assert_eq!(p(normalized), path, "idempotent: {given:?}");
    }
    let bad: &[(&str, PathErrorReason)] = &[
        ("", PathErrorReason::Empty),
        (".", PathErrorReason::Empty),
        ("./", PathErrorReason::Empty),
        ("a/..", PathErrorReason::Empty),
        ("/etc/passwd", PathErrorReason::Absolute),
        ("\\\\server\\share\\x", PathErrorReason::Absolute),
        ("C:\\Windows", PathErrorReason::Absolute),
        ("c:x", PathErrorReason::Absolute), // drive-relative on Windows
        ("a:b", PathErrorReason::Absolute),
        ("..", PathErrorReason::EscapesRepo),
        ("../secret", PathErrorReason::EscapesRepo),
        ("a/../../b", PathErrorReason::EscapesRepo),
        ("a\\..\\..\\b", PathErrorReason::EscapesRepo),
        ("a\0b", PathErrorReason::NulByte),
    ];
    for &(given, reason) in bad {
        let err = RepoPath::new(given).unwrap_err();
        assert_eq!(err.reason, reason, "{given:?}");
        assert_eq!(err.path, given);
    }
    let e = coderig::Error::from(RepoPath::new("../x").unwrap_err());
    assert_eq!(e.code(), "INVALID_INPUT");
    assert_eq!(e.details()["reason"], "escapes_repo");
    assert_eq!(e.details()["file"], "../x");
    assert!(e.message().contains("climbs out of the repository"), "{e}");
}

#[test]
fn line_ranges() {
    assert!(LineRange::new(0, 3).is_err());
    assert!(LineRange::new(4, 3).is_err());
    assert_eq!(LineRange::new(3, 3).unwrap().start(), 3);
    let e = coderig::Error::from(LineRange::new(4, 3).unwrap_err());
    assert_eq!(
        (e.details()["start"].as_u64(), e.details()["end"].as_u64()),
        (Some(4), Some(3))
    );
    assert!(serde_json::from_str::<LineRange>(r#"{"start": 5, "end": 1}"#).is_err());
    assert!(serde_json::from_str::<LineRange>(r#"{"start": 1, "end": 2, "x": 0}"#).is_err());
}

/// (mine, theirs, seed said, we say, why) — `None` in the seed column: the
/// seed had no such input (it knew no kinds).
type Row = (Change, Change, Option<Severity>, Severity, &'static str);

#[test]
fn severity_table_with_the_seed() {
    let f = || p("src/app.py");
    let rows: Vec<Row> = vec![
        (
            Change::modify(f(), lines(10, 20)),
            Change::modify(f(), lines(15, 30)),
            Some(SameLine),
            SameLine,
            "overlap",
        ),
        (
            Change::modify(f(), lines(10, 20)),
            Change::modify(f(), lines(20, 20)),
            Some(SameLine),
            SameLine,
            "one shared line",
        ),
        (
            Change::modify(f(), lines(10, 20)),
            Change::modify(f(), lines(25, 30)),
            Some(AdjacentLine),
            AdjacentLine,
            "gap of 5",
        ),
        (
            Change::modify(f(), lines(25, 30)),
            Change::modify(f(), lines(10, 20)),
            Some(AdjacentLine),
            AdjacentLine,
            "either order",
        ),
        (
            Change::modify(f(), lines(10, 20)),
            Change::modify(f(), lines(21, 21)),
            Some(AdjacentLine),
            AdjacentLine,
            "the next line",
        ),
        (
            Change::modify(f(), lines(10, 20)),
            Change::modify(f(), lines(26, 30)),
            Some(DifferentArea),
            DifferentArea,
            "gap of 6",
        ),
        // The correction: the seed's create/delete had no range and was skipped.
        (
            Change::create(f()),
            Change::modify(f(), lines(1, 3)),
            Some(DifferentArea),
            CreateDelete,
            "a create over a file another worktree edits loses or doubles that work: most severe",
        ),
        (
            Change::modify(f(), lines(1, 3)),
            Change::delete(f()),
            Some(DifferentArea),
            CreateDelete,
            "a delete of a file another worktree edits: most severe",
        ),
        (
            Change::create(f()),
            Change::create(f()),
            Some(DifferentArea),
            CreateDelete,
            "both create it: only one version can stand, most severe",
        ),
        (
            Change::delete(f()),
            Change::delete(f()),
            Some(DifferentArea),
            CreateDelete,
            "both delete it: whatever else either did there is lost, most severe",
        ),
        // New with explicit kinds: a modification of unknown extent.
        (
            Change::modify(f(), None),
            Change::modify(f(), lines(900, 901)),
            None,
            SameLine,
            "lines unknown: it may touch any line",
        ),
        (
            Change::modify(f(), None),
            Change::modify(f(), None),
            None,
            SameLine,
            "both unknown",
        ),
    ];
    for (mine, theirs, seed, ours, why) in rows {
        if seed.is_some_and(|s| s != ours) {
            assert!(
                why.contains("most severe"),
                "a seed difference must say why: {why}"
            );
        }
        assert_eq!(mine.severity_with(&theirs), ours, "{why}");
        assert_eq!(theirs.severity_with(&mine), ours, "symmetric: {why}");
        let verdicts = find_conflicts("wt-a", &[mine], &[touch("wt-b", "qwen", theirs, 0)]);
        assert_eq!(verdicts.len(), 1);
        assert_eq!(verdicts[0].severity, ours, "{why}");
    }
}

#[test]
fn verdicts_per_file() {
    let touches = vec![
        touch(
            "wt-b",
            "qwen",
            Change::modify(p("src/a.rs"), lines(1, 5)),
            0,
        ),
        touch(
            "wt-c",
            "claude",
            Change::modify(p("src/a.rs"), lines(100, 110)),
            0,
        ),
        touch("wt-c", "claude", Change::delete(p("src/b.rs")), 0),
        touch("wt-a", "codex", Change::delete(p("src/c.rs")), 0), // mine: ignored
        touch("wt-b", "qwen", Change::modify(p("docs/x.md"), None), 0), // a file I do not touch
    ];
    let mine = vec![
        Change::modify(p("./src/a.rs"), lines(3, 4)),
        Change::modify(p("src\\b.rs"), lines(7, 7)),
        Change::modify(p("src/c.rs"), lines(1, 1)),
        Change::modify(p("src/d.rs"), None),
    ];
    let verdicts = find_conflicts("wt-a", &mine, &touches);
    assert_eq!(
        verdicts,
        vec![
            ConflictVerdict {
                path: p("src/a.rs"),
                severity: SameLine, // the worst of same_line (wt-b) and different_area (wt-c)
                worktrees: vec!["wt-b".into(), "wt-c".into()],
                agents: vec!["claude".into(), "qwen".into()],
            },
            ConflictVerdict {
                path: p("src/b.rs"),
                severity: CreateDelete,
                worktrees: vec!["wt-c".into()],
                agents: vec!["claude".into()],
            },
        ]
    );
    // Registration order does not matter.
    let mut reversed = touches.clone();
    reversed.reverse();
    assert_eq!(find_conflicts("wt-a", &mine, &reversed), verdicts);
    // Nor does the index.
    let index: ConflictIndex = touches.into_iter().collect();
    assert_eq!(index.query("wt-a", &mine), verdicts);
}

#[test]
fn the_index() {
    let mut index = ConflictIndex::new();
    assert!(index.is_empty());
    index.register(touch(
        "wt-a",
        "codex",
        Change::modify(p("a.rs"), lines(1, 2)),
        1_000,
    ));
    index.register(touch(
        "wt-b",
        "qwen",
        Change::modify(p("a.rs"), lines(4, 9)),
        2_000,
    ));
    index.register(touch("wt-b", "qwen", Change::create(p("new.rs")), 3_000));
    index.register(touch(
        "wt-a",
        "codex",
        Change::modify(p("a.rs"), lines(40, 41)),
        4_000,
    ));
    assert_eq!(index.len(), 4);
    assert_eq!(index.touches_for(&p("a.rs")).len(), 3);
    assert!(index.touches_for(&p("zzz")).is_empty());

    // The symmetric view: pairs of different worktrees only (wt-a's two
    // touches do not collide with each other).
    let all = index.conflicts();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].severity, AdjacentLine);
    assert_eq!(all[0].worktrees, ["wt-a", "wt-b"]);
    assert_eq!(index.conflicts_for(&p("new.rs")), None); // one worktree only

    // Sweep: older than 1500 ms at t = 3000 goes.
    let mut swept = index.clone();
    assert_eq!(swept.sweep_stale(3_000, 1_500), 1);
    assert_eq!(swept.len(), 3);
    assert_eq!(swept.sweep_stale(3_000, 0), 1);
    assert_eq!(swept.len(), 2); // age 0 (at 3000) and the caller's future (4000) stay

    assert_eq!(index.remove_worktree("wt-b"), 2);
    assert!(index.touches_for(&p("new.rs")).is_empty());
    assert_eq!(index.conflicts(), vec![]);
    assert_eq!(index.remove_worktree("wt-b"), 0);
    let rebuilt: ConflictIndex = index.touches().cloned().collect();
    assert_eq!(rebuilt, index);
}

#[test]
fn names_and_serde() {
    assert_eq!(
        Severity::NAMES,
        [
            "different_area",
            "adjacent_line",
            "same_line",
            "create_delete"
        ]
    );
    assert!(
        Severity::ALL.windows(2).all(|w| w[0] < w[1]),
        "ALL is in order of severity"
    );
    assert_eq!(ChangeKind::NAMES, ["create", "modify", "delete"]);
    let change: Change = serde_json::from_str(
        r#"{"path": "./src\\a.rs", "kind": "modify", "lines": {"start": 2, "end": 4}}"#,
    )
    .unwrap();
    assert_eq!(change, Change::modify(p("src/a.rs"), lines(2, 4)));
    assert_eq!(
        serde_json::to_value(Change::delete(p("x"))).unwrap(),
        serde_json::json!({"path": "x", "kind": "delete"})
    );
    let err = serde_json::from_str::<Change>(r#"{"path": "../x", "kind": "create"}"#).unwrap_err();
    assert!(err.to_string().contains("climbs out"), "{err}");
    assert!(serde_json::from_str::<Change>(r#"{"path": "x", "kind": "rename"}"#).is_err());
    assert!(
        serde_json::from_str::<Change>(r#"{"path": "x", "kind": "create", "extra": 1}"#).is_err()
    );
}

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("..".to_string()),
        Just(".".to_string()),
        Just(String::new()),
        "[a-c]{1,2}",
    ]
}

fn change() -> impl Strategy<Value = Change> {
    (0u8..4, 1u32..30, 0u32..10).prop_map(|(k, start, len)| {
        let path = p("f.rs");
        match k {
            0 => Change::create(path),
            1 => Change::delete(path),
            2 => Change::modify(path, None),
            _ => Change::modify(path, lines(start, start + len)),
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn normalization_is_idempotent_and_never_escapes(
        segments in prop::collection::vec(segment(), 0..8),
        seps in prop::collection::vec(prop::sample::select(&["/", "\\", "//"][..]), 8),
    ) {
        let mut raw = String::new();
        for (i, s) in segments.iter().enumerate() {
            if i > 0 {
                raw.push_str(seps[i]);
            }
            raw.push_str(s);
        }
        // The reference: a stack of segments; `..` on an empty stack escapes.
        let mut stack: Vec<&str> = Vec::new();
        let mut escapes = false;
        for s in raw.split(['/', '\\']) {
            match s {
                "" | "." => {}
                ".." => escapes |= stack.pop().is_none(),
                s => stack.push(s),
            }
        }
        match RepoPath::new(&raw) {
            Ok(path) => {
                prop_assert!(!escapes && !raw.starts_with(['/', '\\']));
                prop_assert_eq!(path.as_str(), stack.join("/"));
                prop_assert!(path.as_str().split('/').all(|s| !matches!(s, "" | "." | "..")));
                prop_assert_eq!(RepoPath::new(path.as_str()).unwrap(), path);
            }
            Err(e) => prop_assert!(
                escapes || stack.is_empty() || raw.starts_with(['/', '\\']),
                "{} refused as {}", raw, e.reason
            ),
        }
    }

    #[test]
    fn severity_is_symmetric_and_create_delete_dominates(a in change(), b in change()) {
        let s = a.severity_with(&b);
        prop_assert_eq!(s, b.severity_with(&a));
        let lifecycle = |c: &Change| matches!(c.kind, ChangeKind::Create | ChangeKind::Delete);
        prop_assert_eq!(s == CreateDelete, lifecycle(&a) || lifecycle(&b));
    }

    #[test]
    fn verdicts_do_not_depend_on_order(
        touches in prop::collection::vec((0u8..3, change()), 0..8),
        mine in prop::collection::vec(change(), 0..4),
    ) {
        let touches: Vec<Touch> = touches
            .into_iter()
            .map(|(w, c)| touch(&format!("wt-{w}"), &format!("agent-{w}"), c, 0))
            .collect();
        let forward = find_conflicts("wt-0", &mine, &touches);
        let mut rev_touches = touches.clone();
        rev_touches.reverse();
        let mut rev_mine = mine.clone();
        rev_mine.reverse();
        prop_assert_eq!(&find_conflicts("wt-0", &rev_mine, &rev_touches), &forward);
        let index: ConflictIndex = touches.iter().cloned().collect();
        prop_assert_eq!(&index.query("wt-0", &mine), &forward);
        // Each verdict is the maximum over the pairs.
        for v in &forward {
            let max = mine.iter().flat_map(|m| touches.iter().filter(|t| t.worktree != "wt-0").map(move |t| m.severity_with(&t.change))).max();
            prop_assert_eq!(Some(v.severity), max);
            prop_assert!(!v.worktrees.iter().any(|w| w == "wt-0"));
        }
    }
}
