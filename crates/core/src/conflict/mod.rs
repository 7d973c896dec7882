//! Collision detection across worktrees (pure): which files several
//! contestants (or flow steps) change at once, and how badly the changes
//! collide. Advisory: nothing here blocks a write.
//!
//! - [`RepoPath`]: a repo-relative path, normalized so every worktree names
//!   a file the same way (`./a/../b`, `a\b`, `a//b/` are normalized;
//!   absolute paths and paths escaping the repository are refused with a
//!   typed [`PathError`]).
//! - [`Change`]: a create, a modification (optionally in a [`LineRange`]),
//!   or a delete of one file.
//! - [`find_conflicts`]: one worktree's changes against the others'
//!   [`Touch`]es, as one [`ConflictVerdict`] per colliding file.
//! - [`ConflictIndex`]: the touches of every worktree by file, as a plain
//!   value: register, remove a worktree, sweep stale touches (at a time the
//!   caller gives), query, and a symmetric view of every collision.
//!
//! # Severity
//!
//! Least severe first; a verdict takes the highest over every pair of
//! changes to its file from different worktrees.
//!
//! | severity | when |
//! |---|---|
//! | `different_area` | both modify, in ranges more than [`ADJACENT_LINES`] (5) lines apart |
//! | `adjacent_line` | both modify, and the later range starts at most 5 lines after the earlier ends |
//! | `same_line` | both modify the same line — or one modifies without naming its lines (it may touch any) |
//! | `create_delete` | one creates or deletes the file (the other's work is lost or doubled) |
//!
//! # Differences from the seed
//!
//! - A create or delete of a file another worktree touches is the *most*
//!   severe case. The seed had no kinds: a create or delete was an entry
//!   without a range, and entries without ranges were skipped, so it came
//!   out `different_area`, the least severe.
//! - With kinds explicit, a modification without a range is no longer a
//!   create/delete in disguise; its extent is unknown, so it counts as
//!   touching every line (`same_line`), never as `different_area`.
//! - Paths are normalized and checked (the seed compared raw strings).
//! - The symmetric view ([`ConflictIndex::conflicts_for`]) looks at every
//!   pair of worktrees with their ranges (the seed took the first
//!   worktree's side, with no ranges).
//! - Verdicts come in path order with sorted worktree and agent lists, so
//!   the answer never depends on registration order.

mod detect;
mod path;

pub use detect::{
    find_conflicts, Change, ChangeKind, ConflictIndex, ConflictVerdict, LineRange, RangeError,
    Severity, Touch, ADJACENT_LINES,
};
pub use path::{PathError, PathErrorReason, RepoPath};
