//! What a battle needs next, from what the store says of it: the pure
//! decision the runner's reconcile pass acts on.
//!
//! The runner never keeps a battle's progress in memory. After every task
//! ends — and on a timer, so a crash, a rescue or another server's work is
//! picked up — it reads each live battle and asks [`next_battle_actions`]
//! what to do. Every action is idempotent in the store (a compare-and-set
//! transition, a task id that can be enqueued once), so two servers that
//! decide the same action at once do it once.
//!
//! | battle    | contestants / judge                                   | actions                      |
//! |-----------|-------------------------------------------------------|------------------------------|
//! | any       | an unsettled contestant whose task finished           | `MarkContestant` (its task's ending) |
//! | running   | every contestant settled                              | `StartJudging`               |
//! | judging   | judge not settled, no live judge task                 | `EnqueueJudge`               |
//! | judging   | … and [`MAX_JUDGE_FAILURES`] judge tasks failed          | `FailBattle`                 |
//! | judging   | judge settled (done / error), no live judge task      | `FinishBattle`               |
//! | cancelled | a contestant, judge or cross-exam task still live     | `CancelTask` each            |
//! | completed, failed | –                                             | nothing                      |
//!
//! A contestant's task normally settles its contestant in the transaction
//! that ends it; the first row covers the two ways it cannot: a lease that
//! expired once too often (the store fails the task with `lease expired`)
//! and a task cancelled while its holder was gone.

use super::lane::ContestantStatus;
use crate::event::BattleStatus;
use crate::task::TaskState;

/// Where the battle's judge (its analysis) stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JudgeStatus {
    /// Nothing asked of it yet (contestants still working).
    Idle,
    /// An analysis is asked for and not yet running.
    Pending,
    /// Its task is running.
    Running,
    /// The last analysis finished (with or without a winner).
    Done,
    /// The last analysis failed.
    Error,
}
crate::names::macros::named_enum!(JudgeStatus, "judge status", {
    Idle => "idle",
    Pending => "pending",
    Running => "running",
    Done => "done",
    Error => "error",
});

impl JudgeStatus {
    /// `Done` or `Error`.
    pub fn is_settled(self) -> bool {
        matches!(self, JudgeStatus::Done | JudgeStatus::Error)
    }
}

/// Where a cross-examination of a battle's analysis stands
/// (`CrossExamView.status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CrossExamStatus {
    /// Queued, not yet running.
    Pending,
    /// Its examiner is working.
    Running,
    /// The examiner answered.
    Done,
    /// It failed (or its battle was stopped).
    Error,
}
crate::names::macros::named_enum!(CrossExamStatus, "cross-examination status", {
    Pending => "pending",
    Running => "running",
    Done => "done",
    Error => "error",
});

/// After this many failed judge tasks (an error the judge's task could not
/// record, e.g. an unwritable results folder, or holders that kept dying)
/// the battle is `failed` instead of judged again.
pub const MAX_JUDGE_FAILURES: u32 = 3;

/// One contestant as the decision sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContestantFacts {
    /// The contestant's id.
    pub id: String,
    /// Its status.
    pub status: ContestantStatus,
    /// Its latest task: id, state and error (`None` without a task).
    pub task: Option<(String, TaskState, Option<String>)>,
}

/// A battle as the decision sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BattleFacts {
    /// The battle's status.
    pub status: BattleStatus,
    /// Its contestants, in creation order.
    pub contestants: Vec<ContestantFacts>,
    /// Its judge's status.
    pub judge: JudgeStatus,
    /// How many judge tasks the battle has had (the next one's number is
    /// this plus one).
    pub judge_tasks: u32,
    /// Every task of the battle that is not finished (contestants, judge,
    /// cross-examinations), by id.
    pub live_tasks: Vec<String>,
    /// Whether one of `live_tasks` is a judge task.
    pub judge_task_live: bool,
    /// Judge tasks that ended `failed`, with the last one's error.
    pub judge_failures: (u32, Option<String>),
}

/// What the runner does for a battle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BattleAction {
    /// Settle a contestant whose task ended without settling it.
    MarkContestant {
        /// The contestant.
        id: String,
        /// Its new status (`done`, `error` or `cancelled`).
        status: ContestantStatus,
        /// The task's error, for `error` and `cancelled`.
        error: Option<String>,
    },
    /// Every contestant settled: `running` → `judging`.
    StartJudging,
    /// Queue the judge's next task, number `n` (1-based).
    EnqueueJudge {
        /// The task's number among the battle's judge tasks.
        n: u32,
    },
    /// The judge settled: write the battle's final status from its analysis.
    FinishBattle,
    /// The judge cannot finish: `judging` → `failed` with this error.
    FailBattle {
        /// Why.
        error: String,
    },
    /// Cancel a task of a cancelled battle.
    CancelTask {
        /// The task.
        task_id: String,
    },
}

/// `done`, `error` or `cancelled`: the contestant will not change again.
pub fn is_settled(status: ContestantStatus) -> bool {
    matches!(
        status,
        ContestantStatus::Done | ContestantStatus::Error | ContestantStatus::Cancelled
    )
}

/// The status a contestant takes from its task's ending, when the task
/// finished but the contestant did not settle; `None` while the task is
/// live (or the contestant already settled).
pub fn contestant_settlement(
    status: ContestantStatus,
    task: Option<&(String, TaskState, Option<String>)>,
) -> Option<ContestantStatus> {
    if !matches!(status, ContestantStatus::Queued | ContestantStatus::Running) {
        return None;
    }
    match task?.1 {
        TaskState::Completed => Some(ContestantStatus::Done),
        TaskState::Failed => Some(ContestantStatus::Error),
        TaskState::Cancelled => Some(ContestantStatus::Cancelled),
        TaskState::Pending | TaskState::Running | TaskState::Blocked => None,
    }
}

/// Every action the battle needs now, in the order to take them (see the
/// table in the module docs). Total; an empty answer means "nothing to do".
pub fn next_battle_actions(facts: &BattleFacts) -> Vec<BattleAction> {
    let mut actions = Vec::new();
    let mut statuses = Vec::with_capacity(facts.contestants.len());
    for c in &facts.contestants {
        match contestant_settlement(c.status, c.task.as_ref()) {
            Some(status) => {
                let error = c.task.as_ref().and_then(|t| t.2.clone()).or_else(|| {
                    (status == ContestantStatus::Error).then(|| "the task failed".to_owned())
                });
                actions.push(BattleAction::MarkContestant {
                    id: c.id.clone(),
                    status,
                    error: if status == ContestantStatus::Done {
                        None
                    } else {
                        error
                    },
                });
                statuses.push(status);
            }
            None => statuses.push(c.status),
        }
    }
    match facts.status {
        BattleStatus::Running => {
            // Unlike `is_battle_complete`, a contestant cancelled on its
            // own (its task, not the battle, was stopped) counts as settled
            // here: the battle must not wait forever for it. An empty list
            // (a corrupt row) is not "every contestant settled".
            if !statuses.is_empty() && statuses.iter().all(|s| is_settled(*s)) {
                actions.push(BattleAction::StartJudging);
            }
        }
        BattleStatus::Judging => {
            if !facts.judge_task_live {
                if facts.judge.is_settled() {
                    actions.push(BattleAction::FinishBattle);
                } else if facts.judge_failures.0 >= MAX_JUDGE_FAILURES {
                    actions.push(BattleAction::FailBattle {
                        error: format!(
                            "the analysis failed {} times: {}",
                            facts.judge_failures.0,
                            facts
                                .judge_failures
                                .1
                                .as_deref()
                                .unwrap_or("no error recorded")
                        ),
                    });
                } else {
                    actions.push(BattleAction::EnqueueJudge {
                        n: facts.judge_tasks + 1,
                    });
                }
            }
        }
        BattleStatus::Cancelled => {
            for task_id in &facts.live_tasks {
                actions.push(BattleAction::CancelTask {
                    task_id: task_id.clone(),
                });
            }
        }
        BattleStatus::Completed | BattleStatus::Failed => {}
    }
    actions
}
