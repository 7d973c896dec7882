//! The reconcile decision of the arena runner, table by table.

use coderig::arena::lifecycle::{
    contestant_settlement, next_battle_actions, BattleAction, BattleFacts, ContestantFacts,
    JudgeStatus,
};
use coderig::arena::ContestantStatus as C;
use coderig::event::BattleStatus as B;
use coderig::task::TaskState as T;

fn c(id: &str, status: C, task: Option<T>) -> ContestantFacts {
    ContestantFacts {
        id: id.into(),
        status,
        task: task.map(|s| {
            (
                format!("{id}-t1"),
                s,
                (s == T::Failed).then(|| "lease expired".to_owned()),
            )
        }),
    }
}

fn battle(
    status: B,
    contestants: Vec<ContestantFacts>,
    judge: JudgeStatus,
    live: &[&str],
    judge_live: bool,
) -> BattleFacts {
    BattleFacts {
        status,
        contestants,
        judge,
        judge_tasks: u32::from(judge != JudgeStatus::Idle),
        live_tasks: live.iter().map(|s| s.to_string()).collect(),
        judge_task_live: judge_live,
        judge_failures: (0, None),
    }
}

#[test]
fn settlement_of_a_contestant_follows_its_task_only_when_it_did_not_settle() {
    let task = |s| Some((String::from("t"), s, None));
    let table = [
        (C::Queued, task(T::Pending), None),
        (C::Running, task(T::Running), None),
        (C::Running, task(T::Blocked), None),
        (C::Running, task(T::Completed), Some(C::Done)),
        (C::Running, task(T::Failed), Some(C::Error)),
        (C::Queued, task(T::Failed), Some(C::Error)),
        (C::Running, task(T::Cancelled), Some(C::Cancelled)),
        (C::Done, task(T::Failed), None),
        (C::Error, task(T::Completed), None),
        (C::Cancelled, task(T::Failed), None),
        (C::Running, None, None),
    ];
    for (status, task, want) in table {
        assert_eq!(
            contestant_settlement(status, task.as_ref()),
            want,
            "{status:?} {task:?}"
        );
    }
}

#[test]
fn a_running_battle_goes_judging_once_every_contestant_settled() {
    let settled = battle(
        B::Running,
        vec![
            c("a", C::Done, Some(T::Completed)),
            c("b", C::Error, Some(T::Failed)),
        ],
        JudgeStatus::Idle,
        &[],
        false,
    );
    assert_eq!(
        next_battle_actions(&settled),
        vec![BattleAction::StartJudging]
    );
    let working = battle(
        B::Running,
        vec![
            c("a", C::Done, Some(T::Completed)),
            c("b", C::Running, Some(T::Running)),
        ],
        JudgeStatus::Idle,
        &["b-t1"],
        false,
    );
    assert_eq!(next_battle_actions(&working), vec![]);
    let queued = battle(
        B::Running,
        vec![
            c("a", C::Queued, Some(T::Pending)),
            c("b", C::Queued, Some(T::Pending)),
        ],
        JudgeStatus::Idle,
        &["a-t1", "b-t1"],
        false,
    );
    assert_eq!(next_battle_actions(&queued), vec![]);
    // A contestant cancelled on its own does not hold the battle forever.
    let cancelled = battle(
        B::Running,
        vec![
            c("a", C::Done, Some(T::Completed)),
            c("b", C::Cancelled, Some(T::Cancelled)),
        ],
        JudgeStatus::Idle,
        &[],
        false,
    );
    assert_eq!(
        next_battle_actions(&cancelled),
        vec![BattleAction::StartJudging]
    );
    let empty = battle(B::Running, vec![], JudgeStatus::Idle, &[], false);
    assert_eq!(next_battle_actions(&empty), vec![]);
}

#[test]
fn a_contestant_whose_lease_ran_out_is_marked_and_then_counts_as_settled() {
    let facts = battle(
        B::Running,
        vec![
            c("a", C::Done, Some(T::Completed)),
            c("b", C::Running, Some(T::Failed)),
        ],
        JudgeStatus::Idle,
        &[],
        false,
    );
    assert_eq!(
        next_battle_actions(&facts),
        vec![
            BattleAction::MarkContestant {
                id: "b".into(),
                status: C::Error,
                error: Some("lease expired".into())
            },
            BattleAction::StartJudging,
        ]
    );
}

#[test]
fn judging_queues_the_judge_or_finishes_from_its_result() {
    let settled = || {
        vec![
            c("a", C::Done, Some(T::Completed)),
            c("b", C::Done, Some(T::Completed)),
        ]
    };
    let table = [
        (
            JudgeStatus::Idle,
            false,
            vec![BattleAction::EnqueueJudge { n: 1 }],
        ),
        (
            JudgeStatus::Pending,
            false,
            vec![BattleAction::EnqueueJudge { n: 2 }],
        ),
        (JudgeStatus::Pending, true, vec![]),
        (JudgeStatus::Running, true, vec![]),
        // The holder died mid-analysis and its task failed: queue another.
        (
            JudgeStatus::Running,
            false,
            vec![BattleAction::EnqueueJudge { n: 2 }],
        ),
        (JudgeStatus::Done, false, vec![BattleAction::FinishBattle]),
        (JudgeStatus::Error, false, vec![BattleAction::FinishBattle]),
        (JudgeStatus::Done, true, vec![]),
    ];
    for (judge, live, want) in table {
        let facts = battle(
            B::Judging,
            settled(),
            judge,
            if live { &["j"] } else { &[] },
            live,
        );
        assert_eq!(next_battle_actions(&facts), want, "{judge:?} live={live}");
    }
}

#[test]
fn a_cancelled_battle_cancels_what_is_still_live_and_finished_ones_need_nothing() {
    let facts = battle(
        B::Cancelled,
        vec![
            c("a", C::Cancelled, Some(T::Cancelled)),
            c("b", C::Running, Some(T::Running)),
        ],
        JudgeStatus::Idle,
        &["b-t1"],
        false,
    );
    assert_eq!(
        next_battle_actions(&facts),
        vec![BattleAction::CancelTask {
            task_id: "b-t1".into()
        }]
    );
    for status in [B::Completed, B::Failed] {
        let facts = battle(
            status,
            vec![
                c("a", C::Done, Some(T::Completed)),
                c("b", C::Done, Some(T::Completed)),
            ],
            JudgeStatus::Done,
            &[],
            false,
        );
        assert_eq!(next_battle_actions(&facts), vec![], "{status:?}");
    }
}

#[test]
fn a_judge_that_keeps_failing_fails_the_battle_instead_of_looping() {
    let settled = || {
        vec![
            c("a", C::Done, Some(T::Completed)),
            c("b", C::Done, Some(T::Completed)),
        ]
    };
    for (failures, want_fail) in [(0, false), (2, false), (3, true), (7, true)] {
        let mut facts = battle(B::Judging, settled(), JudgeStatus::Running, &[], false);
        facts.judge_tasks = failures;
        facts.judge_failures = (failures, Some("disk full".into()));
        let actions = next_battle_actions(&facts);
        if want_fail {
            assert_eq!(
                actions,
                vec![BattleAction::FailBattle {
                    error: format!("the analysis failed {failures} times: disk full")
                }]
            );
        } else {
            assert_eq!(
                actions,
                vec![BattleAction::EnqueueJudge { n: failures + 1 }]
            );
        }
    }
}
