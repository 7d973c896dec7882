//! Evidence of the oracle and the winner it and the judge decide.
//!
//! The oracle applies each contestant's patch to a fresh checkout of the
//! base and runs the battle's `repro` and `suite` commands there; once per
//! battle it also runs them on the base itself ([`BaseRun`]). Everything
//! here only reads what those runs recorded: no IO, no clock.
//!
//! ## Tiers
//!
//! A command *passed* when it exited with code 0 and was not killed at its
//! timeout. A command *counts* when the battle configures it, except the
//! repro when it already passes on the base: then passing it shows nothing
//! about a fix (it is reported as `base_repro_passes`, and the suite alone
//! decides). Without a base run the repro counts.
//!
//! | evidence of the contestant                                  | tier      |
//! |-------------------------------------------------------------|-----------|
//! | `error` set (the oracle could not run for it)               | `none`    |
//! | patch did not apply                                         | `none`    |
//! | no command counts (no oracle, or only a repro passing on the base) | `none` |
//! | every counted command passed                                | `full`    |
//! | repro counted and passed, suite counted and failed          | `partial` |
//! | repro counted and failed (whatever the suite did)           | `none`    |
//! | only the suite counts, and it failed                        | `none`    |
//!
//! A counted command with no record (it never ran) failed. A suite that
//! passes while the repro still fails is no evidence: the untouched base —
//! and a contestant that changed nothing — does as much.
//!
//! ## Winner
//!
//! [`decide_winner`], in order:
//! 1. no contestant produced a result: no winner; exactly one did: it wins
//!    by `oracle` when its tier is above `none` (a passing patch beside
//!    contestants that changed nothing is a fix the oracle proved, not a
//!    walkover), else no winner — the judge never sees a lone result;
//! 2. the *field* is the contestants with a result in the best tier any of
//!    them reached; a field of one wins by `oracle` (it can only be one
//!    when that tier is above `none`, since a `none` field is everyone with
//!    a result);
//! 3. otherwise the judge decides among the field: each pair is judged in
//!    both orders ([`plan_judging`]); a pair is won when both orders name the
//!    same contestant, anything else (disagreement, a tie, an invalid or
//!    missing verdict) is a tie; the most pairwise wins takes it, by
//!    `judge`; a tie at the top, or no pairwise win at all, is no winner.

use super::analysis::{decision_line, Decision};
/// Who named a battle's winner: the one type of the events and the store.
pub use crate::event::WinnerSource;
use crate::names::macros::named_enum;
use serde::{Deserialize, Serialize};
use std::fmt::Display;

/// The record of one oracle command.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CommandEvidence {
    /// The exit code; `None` when the command was killed (by its timeout or
    /// a signal) or could not be started.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub exit_code: Option<i32>,
    /// Wall-clock time it ran, in milliseconds.
    pub duration_ms: u64,
    /// Whether it was killed at the oracle's timeout.
    pub timed_out: bool,
    /// The end of its combined stdout and stderr.
    pub output_tail: String,
    /// The sandbox the command ran in, as the kernel enforced it (its
    /// writable paths, network, Landlock ABI, what `auto` could not
    /// enforce). `None` in records made before commands were sandboxed:
    /// a missing field decodes as `None`, and `None` is not serialized.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::sandbox::SandboxReport>,
}

impl CommandEvidence {
    /// Exit code 0 and not timed out.
    pub fn passed(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out
    }
}

/// What the oracle recorded for one contestant.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Evidence {
    /// The repro command's record, when it ran.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub repro: Option<CommandEvidence>,
    /// The suite command's record, when it ran.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub suite: Option<CommandEvidence>,
    /// Whether the contestant's patch applied to the fresh checkout.
    pub patch_applied: bool,
    /// Why the oracle could not run for this contestant, if it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The oracle's run on the base itself, once per battle.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BaseRun {
    /// The repro command on the base, when it ran.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub repro: Option<CommandEvidence>,
    /// The suite command on the base, when it ran.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub suite: Option<CommandEvidence>,
    /// Why the base run failed, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl BaseRun {
    /// The repro already passes without any patch: passing it is then no
    /// evidence of a fix, and [`tier`] does not count it.
    pub fn base_repro_passes(&self) -> bool {
        self.repro.as_ref().is_some_and(CommandEvidence::passed)
    }
}

/// Which oracle commands a battle configures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OracleCommands {
    /// A `repro` command is configured.
    pub repro: bool,
    /// A `suite` command is configured.
    pub suite: bool,
}

/// How strong a contestant's evidence is; ordered `None < Partial < Full`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EvidenceTier {
    /// No evidence of a fix (see the table of the module docs).
    None,
    /// The repro passes, the suite fails.
    Partial,
    /// Every counted command passes.
    Full,
}
named_enum!(EvidenceTier, "evidence tier", { Full => "full", Partial => "partial", None => "none" });

/// The judge's verdict on one ordered pair `(first, second)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// The contestant presented first is better.
    First,
    /// The contestant presented second is better.
    Second,
    /// Neither is better (`NO_WINNER`).
    Tie,
    /// The judge failed or named no contestant of the pair.
    Invalid,
}
named_enum!(Verdict, "verdict", { First => "first", Second => "second", Tie => "tie", Invalid => "invalid" });

/// The tier of `evidence` by the table of the module docs, given the
/// commands the battle configures and its base run (`None` when there was
/// none: the repro then counts).
pub fn tier(
    evidence: &Evidence,
    configured: OracleCommands,
    base: Option<&BaseRun>,
) -> EvidenceTier {
    let repro_counts = configured.repro && !base.is_some_and(BaseRun::base_repro_passes);
    let suite_counts = configured.suite;
    if evidence.error.is_some() || !evidence.patch_applied || !(repro_counts || suite_counts) {
        return EvidenceTier::None;
    }
    let passed = |c: &Option<CommandEvidence>| c.as_ref().is_some_and(CommandEvidence::passed);
    let repro_ok = !repro_counts || passed(&evidence.repro);
    let suite_ok = !suite_counts || passed(&evidence.suite);
    match (repro_ok, suite_ok) {
        (true, true) => EvidenceTier::Full,
        (true, false) if repro_counts => EvidenceTier::Partial,
        _ => EvidenceTier::None,
    }
}

/// The verdict of one pairwise judging from the judge's text: its last
/// decision line (the rules of [`super::extract_winner`]) naming `first`
/// is [`Verdict::First`], naming `second` [`Verdict::Second`], `NO_WINNER`
/// is [`Verdict::Tie`]; no decision line, an unreadable one or one naming
/// anyone else is [`Verdict::Invalid`]. Pairs are `(identity, model)` and
/// compare exactly.
pub fn pair_verdict(judge_output: &str, first: (&str, &str), second: (&str, &str)) -> Verdict {
    match decision_line(judge_output, "WINNER") {
        Some(Decision::Pair(identity, model)) => {
            let named = (identity.as_str(), model.as_str());
            if named == first {
                Verdict::First
            } else if named == second {
                Verdict::Second
            } else {
                Verdict::Invalid
            }
        }
        Some(Decision::NoWinner) => Verdict::Tie,
        Some(Decision::Unreadable) | None => Verdict::Invalid,
    }
}

/// Every ordered pair the judge must see: for each two contestants `a`
/// before `b` in `field`, `(a, b)` then `(b, a)`, pairs in the order
/// `(0,1), (1,0), (0,2), (2,0), …, (1,2), (2,1), …`. `n·(n-1)` pairs;
/// empty for fewer than two. Repeated ids are judged once.
pub fn plan_judging<Id: Clone + PartialEq>(field: &[Id]) -> Vec<(Id, Id)> {
    let mut ids: Vec<&Id> = Vec::with_capacity(field.len());
    for id in field {
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    let mut pairs = Vec::with_capacity(ids.len() * ids.len().saturating_sub(1));
    for (i, a) in ids.iter().enumerate() {
        for b in &ids[i + 1..] {
            pairs.push(((*a).clone(), (*b).clone()));
            pairs.push(((*b).clone(), (*a).clone()));
        }
    }
    pairs
}

/// The contestants the judge must compare, in input order — `Some` exactly
/// when [`decide_winner`] goes to step 3 (at least two results and more
/// than one in the best tier); `None` when the decision needs no judge
/// (a lone result included, whatever its tier).
/// `candidates` are `(id, tier, has_result)`.
pub fn judge_field<Id: Clone>(candidates: &[(Id, EvidenceTier, bool)]) -> Option<Vec<Id>> {
    let (_, field) = field(candidates)?;
    (field.len() >= 2).then(|| field.into_iter().cloned().collect())
}

/// The best tier among contestants with a result and who reached it; `None`
/// without a result, and for a lone result with no oracle evidence (one
/// result above `none` is a field of one: the oracle's winner).
fn field<Id>(candidates: &[(Id, EvidenceTier, bool)]) -> Option<(EvidenceTier, Vec<&Id>)> {
    let with_result: Vec<_> = candidates.iter().filter(|c| c.2).collect();
    match with_result[..] {
        [] => return None,
        [only] if only.1 == EvidenceTier::None => return None,
        _ => {}
    }
    let best = with_result.iter().map(|c| c.1).max()?;
    let ids = with_result
        .iter()
        .filter(|c| c.1 == best)
        .map(|c| &c.0)
        .collect();
    Some((best, ids))
}

/// A battle's winner, who named it and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WinnerDecision<Id> {
    /// The winner, `None` for no winner.
    pub winner: Option<Id>,
    /// `Oracle` or `Judge` with a winner; `None` without one.
    pub source: Option<WinnerSource>,
    /// The best tier among contestants with a result (`None` without a
    /// result, and for a lone result with no oracle evidence).
    pub tier: Option<EvidenceTier>,
    /// One sentence: why this winner, or why none.
    pub reason: String,
    /// Pairwise wins of each contestant the judge compared, in input
    /// order; empty when the judge was not needed.
    pub wins: Vec<(Id, u32)>,
}

/// The winner by evidence, then the judge — the steps of the module docs.
///
/// `candidates` are `(id, tier, has_result)`; `verdicts` are
/// `(first, second, verdict)` of the ordered pairs judged. Verdicts on
/// pairs outside the field are ignored; of several on one ordered pair the
/// last counts. Ids name contestants in `reason` (`identity/model` reads
/// best). Total.
pub fn decide_winner<Id: Clone + PartialEq + Display>(
    candidates: &[(Id, EvidenceTier, bool)],
    verdicts: &[(Id, Id, Verdict)],
) -> WinnerDecision<Id> {
    let results = candidates.iter().filter(|c| c.2).count();
    let Some((best, field)) = field(candidates) else {
        let reason = match candidates.iter().find(|c| c.2) {
            Some((only, _, _)) => format!(
                "no winner: {only} is the only contestant that produced a result, \
                 and it has no oracle evidence (a lone result wins only with it)"
            ),
            None => "no winner: no contestant produced a result".to_owned(),
        };
        return WinnerDecision {
            winner: None,
            source: None,
            tier: None,
            reason,
            wins: vec![],
        };
    };
    if let ([only], 1) = (&field[..], results) {
        return WinnerDecision {
            winner: Some((*only).clone()),
            source: Some(WinnerSource::Oracle),
            tier: Some(best),
            reason: format!(
                "{only} is the only contestant that produced a result, with {}",
                phrase(best)
            ),
            wins: vec![],
        };
    }
    if let [only] = field[..] {
        let next = candidates
            .iter()
            .filter(|c| c.2 && c.1 < best)
            .map(|c| c.1)
            .max()
            .unwrap_or(EvidenceTier::None);
        return WinnerDecision {
            winner: Some(only.clone()),
            source: Some(WinnerSource::Oracle),
            tier: Some(best),
            reason: format!(
                "{only} is the only contestant with {}; the others have at most {}",
                phrase(best),
                phrase(next)
            ),
            wins: vec![],
        };
    }
    let verdict = |a: &Id, b: &Id| {
        verdicts
            .iter()
            .rev()
            .find(|(f, s, _)| f == a && s == b)
            .map_or(Verdict::Invalid, |v| v.2)
    };
    let mut wins: Vec<(Id, u32)> = Vec::new();
    for id in &field {
        if !wins.iter().any(|(w, _)| w == *id) {
            wins.push(((*id).clone(), 0));
        }
    }
    let n = wins.len();
    for i in 0..n {
        for j in i + 1..n {
            let (a, b) = (&wins[i].0, &wins[j].0);
            let winner = match (verdict(a, b), verdict(b, a)) {
                (Verdict::First, Verdict::Second) => Some(i),
                (Verdict::Second, Verdict::First) => Some(j),
                _ => None,
            };
            if let Some(k) = winner {
                wins[k].1 += 1;
            }
        }
    }
    let most = wins.iter().map(|w| w.1).max().unwrap_or(0);
    let leaders: Vec<&Id> = wins.iter().filter(|w| w.1 == most).map(|w| &w.0).collect();
    let judging = format!("the judging among {n} contestants with {}", phrase(best));
    let (winner, source, reason) = match leaders[..] {
        _ if most == 0 => (
            None,
            None,
            format!("no winner: {judging} gave no pair won in both orders"),
        ),
        [leader] => (
            Some(leader.clone()),
            Some(WinnerSource::Judge),
            format!(
                "{leader} won {judging}: {most} of {} pairs won in both orders",
                n - 1
            ),
        ),
        _ => (
            None,
            None,
            format!(
                "no winner: {judging} left {} tied at the top with {most} win{}",
                join_and(&leaders),
                if most == 1 { "" } else { "s" }
            ),
        ),
    };
    WinnerDecision {
        winner,
        source,
        tier: Some(best),
        reason,
        wins,
    }
}

/// A tier in a sentence: `full evidence`, `partial evidence`, `no oracle evidence`.
pub fn phrase(tier: EvidenceTier) -> &'static str {
    match tier {
        EvidenceTier::Full => "full evidence",
        EvidenceTier::Partial => "partial evidence",
        EvidenceTier::None => "no oracle evidence",
    }
}

/// `a`, `a and b`, `a, b and c`.
fn join_and<T: Display>(items: &[T]) -> String {
    let words: Vec<String> = items.iter().map(ToString::to_string).collect();
    match words.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

/// The winner stored after an analysis, from the one stored before it.
///
/// | current         | `force` | result                      |
/// |-----------------|---------|-----------------------------|
/// | human's winner  | false   | kept                        |
/// | human's winner  | true    | the decision's              |
/// | none, oracle's or judge's | any | the decision's        |
///
/// "The decision's" is its winner with its source, or none for a
/// NO_WINNER — which so clears an earlier judge's (or oracle's) winner.
pub fn apply_analysis<Id: Clone>(
    current: Option<(Id, WinnerSource)>,
    decision: &WinnerDecision<Id>,
    force: bool,
) -> Option<(Id, WinnerSource)> {
    if let Some((id, WinnerSource::Human)) = &current {
        if !force {
            return Some((id.clone(), WinnerSource::Human));
        }
    }
    match (&decision.winner, decision.source) {
        (Some(id), Some(source)) => Some((id.clone(), source)),
        _ => None,
    }
}
