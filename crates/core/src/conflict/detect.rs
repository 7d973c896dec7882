//! Collision detection: which files two worktrees both touch, and how badly.

use super::path::RepoPath;
use crate::names::macros::named_enum;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Two line ranges whose gap is at most this many lines are adjacent.
pub const ADJACENT_LINES: u32 = 5;

/// How badly two worktrees' changes to one file collide, least severe
/// first (`Ord` follows this order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Severity {
    /// Both modify the file, in line ranges more than [`ADJACENT_LINES`] apart.
    DifferentArea,
    /// Both modify the file, in ranges at most [`ADJACENT_LINES`] apart.
    AdjacentLine,
    /// Both modify the same lines, or one modifies lines the other did not
    /// name (its extent is unknown, so it may be any line).
    SameLine,
    /// One creates or deletes a file the other touches: whatever the other
    /// did to it is lost or doubled, the worst case.
    CreateDelete,
}
named_enum!(Severity, "severity", {
    DifferentArea => "different_area",
    AdjacentLine => "adjacent_line",
    SameLine => "same_line",
    CreateDelete => "create_delete",
});

/// What a change does to its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChangeKind {
    /// The file is new.
    Create,
    /// The file existed and is changed (optionally in known lines).
    Modify,
    /// The file is removed. A rename is a delete of the old path and a
    /// create of the new one.
    Delete,
}
named_enum!(ChangeKind, "change kind", {
    Create => "create",
    Modify => "modify",
    Delete => "delete",
});

/// Lines `start..=end`, 1-based.
///
/// Guarantees: `1 <= start <= end` (checked by [`LineRange::new`] and by
/// deserialization).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "RawRange")]
pub struct LineRange {
    start: u32,
    end: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRange {
    start: u32,
    end: u32,
}

impl TryFrom<RawRange> for LineRange {
    type Error = RangeError;

    fn try_from(raw: RawRange) -> Result<Self, Self::Error> {
        LineRange::new(raw.start, raw.end)
    }
}

/// A line range that is not `1 <= start <= end`.
///
/// Converts into [`crate::Error`] as `invalid_input` with the details
/// `start` and `end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "line range {start}..={end} is not 1 <= start <= end (lines are 1-based, both ends inclusive)"
)]
pub struct RangeError {
    /// The first line given.
    pub start: u32,
    /// The last line given.
    pub end: u32,
}

impl From<RangeError> for crate::Error {
    fn from(e: RangeError) -> Self {
        crate::Error::invalid_input(e.to_string())
            .with_detail("start", e.start)
            .with_detail("end", e.end)
    }
}

impl LineRange {
    /// Lines `start..=end`; refused unless `1 <= start <= end`.
    pub fn new(start: u32, end: u32) -> Result<LineRange, RangeError> {
        if start == 0 || start > end {
            return Err(RangeError { start, end });
        }
        Ok(LineRange { start, end })
    }

    /// The first line.
    pub fn start(self) -> u32 {
        self.start
    }

    /// The last line.
    pub fn end(self) -> u32 {
        self.end
    }

    /// The severity of two modifications in these ranges: `same_line` when
    /// they share a line, `adjacent_line` when the later one starts at most
    /// [`ADJACENT_LINES`] lines after the earlier one ends, else
    /// `different_area`. Symmetric.
    pub fn severity_with(self, other: LineRange) -> Severity {
        if self.start <= other.end && other.start <= self.end {
            return Severity::SameLine;
        }
        let gap = if self.end < other.start {
            other.start - self.end
        } else {
            self.start - other.end
        };
        if gap <= ADJACENT_LINES {
            Severity::AdjacentLine
        } else {
            Severity::DifferentArea
        }
    }
}

/// One change to one file.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Change {
    /// The file.
    pub path: RepoPath,
    /// What happens to it.
    pub kind: ChangeKind,
    /// The lines a modification touches; `None`: unknown (any line). Read
    /// only for [`ChangeKind::Modify`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<LineRange>,
}

impl Change {
    /// A created file.
    pub fn create(path: RepoPath) -> Change {
        Change {
            path,
            kind: ChangeKind::Create,
            lines: None,
        }
    }

    /// A modified file, in `lines` when known.
    pub fn modify(path: RepoPath, lines: Option<LineRange>) -> Change {
        Change {
            path,
            kind: ChangeKind::Modify,
            lines,
        }
    }

    /// A deleted file.
    pub fn delete(path: RepoPath) -> Change {
        Change {
            path,
            kind: ChangeKind::Delete,
            lines: None,
        }
    }

    /// The severity of this change meeting `other` on the same file:
    ///
    /// | this \ other | create / delete | modify, lines unknown | modify, lines known |
    /// |---|---|---|---|
    /// | create / delete | `create_delete` | `create_delete` | `create_delete` |
    /// | modify, lines unknown | `create_delete` | `same_line` | `same_line` |
    /// | modify, lines known | `create_delete` | `same_line` | [`LineRange::severity_with`] |
    ///
    /// Symmetric. The paths are not compared (the caller pairs changes of
    /// one file).
    pub fn severity_with(&self, other: &Change) -> Severity {
        use ChangeKind::{Create, Delete};
        if matches!(self.kind, Create | Delete) || matches!(other.kind, Create | Delete) {
            return Severity::CreateDelete;
        }
        match (self.lines, other.lines) {
            (Some(a), Some(b)) => a.severity_with(b),
            _ => Severity::SameLine,
        }
    }
}

/// A change registered by a worktree's agent, at a time the caller gives.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Touch {
    /// The worktree that made the change.
    pub worktree: String,
    /// The agent (identity) working there.
    pub agent: String,
    /// The change.
    pub change: Change,
    /// When it was registered, in the caller's milliseconds (only
    /// [`ConflictIndex::sweep_stale`] reads it).
    #[serde(default)]
    pub at_ms: u64,
}

/// A file more than one worktree touches, and how badly they collide.
///
/// Guarantees: `worktrees` and `agents` are sorted and without duplicates;
/// `severity` is the highest over every colliding pair.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConflictVerdict {
    /// The file.
    pub path: RepoPath,
    /// The highest severity of the collisions.
    pub severity: Severity,
    /// The worktrees involved: the *other* worktrees for a query made for
    /// one worktree ([`find_conflicts`], [`ConflictIndex::query`]); all of
    /// them in the symmetric view ([`ConflictIndex::conflicts`]).
    pub worktrees: Vec<String>,
    /// Their agents, likewise.
    pub agents: Vec<String>,
}

/// The collisions of `worktree`'s `changes` with the `touches` of other
/// worktrees (touches of `worktree` itself are ignored).
///
/// One verdict per changed file that another worktree touches, in path
/// order; its severity is the highest of [`Change::severity_with`] over
/// every (change, other touch) pair of that file. Advisory: nothing here
/// blocks a write.
pub fn find_conflicts<'a, I>(worktree: &str, changes: &[Change], touches: I) -> Vec<ConflictVerdict>
where
    I: IntoIterator<Item = &'a Touch>,
{
    let mut mine: BTreeMap<&RepoPath, Vec<&Change>> = BTreeMap::new();
    for change in changes {
        mine.entry(&change.path).or_default().push(change);
    }
    let mut found: BTreeMap<&RepoPath, (Severity, BTreeSet<&str>, BTreeSet<&str>)> =
        BTreeMap::new();
    for touch in touches {
        if touch.worktree == worktree {
            continue;
        }
        let Some(my_changes) = mine.get(&touch.change.path) else {
            continue;
        };
        let severity = my_changes
            .iter()
            .map(|c| c.severity_with(&touch.change))
            .max()
            .unwrap_or(Severity::DifferentArea);
        let slot =
            found
                .entry(&touch.change.path)
                .or_insert((severity, BTreeSet::new(), BTreeSet::new()));
        slot.0 = slot.0.max(severity);
        slot.1.insert(&touch.worktree);
        slot.2.insert(&touch.agent);
    }
    found
        .into_iter()
        .map(|(path, (severity, worktrees, agents))| ConflictVerdict {
            path: path.clone(),
            severity,
            worktrees: worktrees.into_iter().map(str::to_owned).collect(),
            agents: agents.into_iter().map(str::to_owned).collect(),
        })
        .collect()
}

/// The changes registered across worktrees, by file: the seed's conflict
/// index as a plain value (no clock, no global: the caller owns it, gives
/// the times, and persists [`ConflictIndex::touches`] if it wants to; an
/// index is rebuilt with `collect()`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConflictIndex {
    by_path: BTreeMap<RepoPath, Vec<Touch>>,
}

impl ConflictIndex {
    /// An empty index.
    pub fn new() -> ConflictIndex {
        ConflictIndex::default()
    }

    /// Registers a touch.
    pub fn register(&mut self, touch: Touch) {
        self.by_path
            .entry(touch.change.path.clone())
            .or_default()
            .push(touch);
    }

    /// Removes every touch of `worktree`; returns how many. Files left
    /// without touches leave the index.
    pub fn remove_worktree(&mut self, worktree: &str) -> usize {
        self.remove_where(|t| t.worktree == worktree)
    }

    /// Removes every touch registered more than `max_age_ms` before
    /// `now_ms`; returns how many.
    pub fn sweep_stale(&mut self, now_ms: u64, max_age_ms: u64) -> usize {
        self.remove_where(|t| now_ms.saturating_sub(t.at_ms) > max_age_ms)
    }

    fn remove_where(&mut self, mut drop: impl FnMut(&Touch) -> bool) -> usize {
        let mut removed = 0;
        self.by_path.retain(|_, touches| {
            let before = touches.len();
            touches.retain(|t| !drop(t));
            removed += before - touches.len();
            !touches.is_empty()
        });
        removed
    }

    /// Every touch, by path, then in registration order.
    pub fn touches(&self) -> impl Iterator<Item = &Touch> {
        self.by_path.values().flatten()
    }

    /// The touches of one file, in registration order.
    pub fn touches_for(&self, path: &RepoPath) -> &[Touch] {
        self.by_path.get(path).map_or(&[], Vec::as_slice)
    }

    /// The number of touches.
    pub fn len(&self) -> usize {
        self.by_path.values().map(Vec::len).sum()
    }

    /// True when nothing is registered.
    pub fn is_empty(&self) -> bool {
        self.by_path.is_empty()
    }

    /// [`find_conflicts`] of `worktree`'s `changes` against the index.
    pub fn query(&self, worktree: &str, changes: &[Change]) -> Vec<ConflictVerdict> {
        let touches = changes
            .iter()
            .map(|c| &c.path)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .flat_map(|p| self.touches_for(p));
        find_conflicts(worktree, changes, touches)
    }

    /// The symmetric view of one file: `None` unless at least two worktrees
    /// touch it; else the highest severity over every pair of touches from
    /// *different* worktrees, with all worktrees and agents involved. (The
    /// seed took one arbitrary worktree's side and dropped the ranges.)
    pub fn conflicts_for(&self, path: &RepoPath) -> Option<ConflictVerdict> {
        let touches = self.touches_for(path);
        let mut severity: Option<Severity> = None;
        for (i, a) in touches.iter().enumerate() {
            for b in &touches[i + 1..] {
                if a.worktree != b.worktree {
                    let s = a.change.severity_with(&b.change);
                    severity = Some(severity.map_or(s, |old| old.max(s)));
                }
            }
        }
        let worktrees: BTreeSet<&str> = touches.iter().map(|t| t.worktree.as_str()).collect();
        let agents: BTreeSet<&str> = touches.iter().map(|t| t.agent.as_str()).collect();
        Some(ConflictVerdict {
            path: path.clone(),
            severity: severity?,
            worktrees: worktrees.into_iter().map(str::to_owned).collect(),
            agents: agents.into_iter().map(str::to_owned).collect(),
        })
    }

    /// [`ConflictIndex::conflicts_for`] of every file, in path order.
    pub fn conflicts(&self) -> Vec<ConflictVerdict> {
        self.by_path
            .keys()
            .filter_map(|p| self.conflicts_for(p))
            .collect()
    }
}

impl FromIterator<Touch> for ConflictIndex {
    /// An index holding `touches`, registered in order.
    fn from_iter<I: IntoIterator<Item = Touch>>(touches: I) -> Self {
        let mut index = ConflictIndex::new();
        for touch in touches {
            index.register(touch);
        }
        index
    }
}
