//! The approval steps of `coderig run`: decided by `--approve` /
//! `--reject` as they wait, or asked on the terminal one at a time
//! (`approve step X? [y/n/comment]`), each wait once.

use super::progress::Progress;
use super::Approvals;
use coderig::flow::engine::{Decision, Engine, RunView, StepView};
use coderig::flow::StepStatus;
use std::collections::{BTreeSet, VecDeque};
use std::io::Write;
use tokio::sync::mpsc;

/// Who decides an approval from this command: `$USER`, else `cli`.
fn decider() -> String {
    std::env::var("USER")
        .ok()
        .filter(|u| !u.trim().is_empty())
        .unwrap_or_else(|| "cli".to_owned())
}

/// An approval step's wait: the same step waits again in a later loop
/// iteration (or attempt), and is asked again then.
type WaitKey = (String, u32, u32);

fn wait_key(step: &StepView) -> WaitKey {
    (step.id.clone(), step.iteration, step.attempt)
}

fn waiting_approvals(view: &RunView) -> impl Iterator<Item = &StepView> {
    view.steps
        .iter()
        .filter(|s| s.kind == "approval" && s.status == StepStatus::Waiting)
}

/// Decides approval steps as they wait: by the flags, or by asking on the
/// terminal one step at a time.
pub(super) struct Approver {
    mode: Approvals,
    /// Waits already decided or queued (by step, iteration, attempt).
    seen: BTreeSet<WaitKey>,
    /// Steps to ask about, in the order they started waiting.
    queue: VecDeque<WaitKey>,
    /// The one being asked now, with the comment typed so far.
    current: Option<(WaitKey, Option<String>)>,
    /// Lines typed on stdin (`None`: stdin closed), read by a thread of
    /// its own started at the first question.
    lines: Option<mpsc::UnboundedReceiver<Option<String>>>,
    /// Stdin closed, or the run was interrupted: ask no more.
    done_asking: bool,
}

impl Approver {
    pub(super) fn new(mode: Approvals) -> Self {
        Approver {
            mode,
            seen: BTreeSet::new(),
            queue: VecDeque::new(),
            current: None,
            lines: None,
            done_asking: false,
        }
    }

    pub(super) fn asking(&self) -> bool {
        self.current.is_some() && self.lines.is_some()
    }

    /// The next line typed (pending forever when nothing reads stdin).
    pub(super) async fn answer(&mut self) -> Option<String> {
        match &mut self.lines {
            Some(rx) => rx.recv().await.flatten(),
            None => std::future::pending().await,
        }
    }

    /// Looks at the waiting approval steps of `view`: decides them
    /// (`--approve` / `--reject`) or queues and asks.
    pub(super) async fn consider(
        &mut self,
        engine: &Engine,
        view: &RunView,
        progress: &mut Progress,
    ) {
        let waiting: Vec<&StepView> = waiting_approvals(view).collect();
        // A question about a step someone else decided meanwhile is moot.
        if let Some((key, _)) = &self.current {
            if !waiting.iter().any(|s| &wait_key(s) == key) {
                eprintln!();
                progress.resume(&format!("step {} was decided elsewhere", key.0));
                self.current = None;
            }
        }
        self.queue
            .retain(|key| waiting.iter().any(|s| &wait_key(s) == key));
        for step in waiting {
            let key = wait_key(step);
            if !self.seen.insert(key.clone()) {
                continue;
            }
            match self.mode {
                Approvals::Auto(approve) => {
                    let decision = Decision {
                        by: Some(decider()),
                        comment: Some(format!(
                            "coderig run --{}",
                            if approve { "approve" } else { "reject" }
                        )),
                    };
                    let done = if approve {
                        engine.approve(&view.id, &step.id, decision).await
                    } else {
                        engine.reject(&view.id, &step.id, decision).await
                    };
                    match done {
                        Ok(_) => progress.note(&format!(
                            "{} step {} (--{})",
                            if approve { "approved" } else { "rejected" },
                            step.id,
                            if approve { "approve" } else { "reject" }
                        )),
                        // Decided elsewhere first: nothing to do.
                        Err(e) if e.kind() == coderig::ErrorKind::Conflict => {}
                        Err(e) => progress.note(&format!(
                            "cannot decide step {}: {}",
                            step.id,
                            e.message()
                        )),
                    }
                }
                Approvals::Ask if !self.done_asking => self.queue.push_back(key),
                Approvals::Ask => {}
            }
        }
        if self.current.is_none() && !self.done_asking {
            if let Some(key) = self.queue.pop_front() {
                let message = view
                    .step(&key.0)
                    .and_then(|s| s.message.clone())
                    .filter(|m| !m.trim().is_empty());
                self.start_reader();
                // Lines typed before the question answer nothing.
                if let Some(rx) = &mut self.lines {
                    while let Ok(line) = rx.try_recv() {
                        if line.is_none() {
                            self.done_asking = true;
                        }
                    }
                }
                if self.done_asking {
                    self.lines = None;
                    progress.note(&format!(
                        "stdin closed: step {} keeps waiting; decide it with \
                         POST /api/runs/{}/steps/{}/approve (or /reject) on a server on this \
                         store, or Ctrl-C to cancel the run",
                        key.0, view.id, key.0
                    ));
                    return;
                }
                progress.pause();
                if let Some(message) = message {
                    eprintln!("approval step {}: {}", key.0, message.trim());
                }
                ask(&key.0, None);
                self.current = Some((key, None));
            }
        }
    }

    fn start_reader(&mut self) {
        if self.lines.is_some() {
            return;
        }
        let (tx, rx) = mpsc::unbounded_channel();
        // Blocking reads on a thread of their own: the process exits
        // without waiting for it (a tokio blocking task would hold the
        // runtime's shutdown until a line came).
        let spawned = std::thread::Builder::new()
            .name("coderig-run-stdin".into())
            .spawn(move || {
                let stdin = std::io::stdin();
                loop {
                    let mut line = String::new();
                    match stdin.read_line(&mut line) {
                        Ok(0) | Err(_) => {
                            let _ = tx.send(None);
                            return;
                        }
                        Ok(_) => {
                            if tx.send(Some(line)).is_err() {
                                return;
                            }
                        }
                    }
                }
            });
        if spawned.is_ok() {
            self.lines = Some(rx);
        }
    }

    /// A line typed for the current question: a decision sent (its
    /// `step_updated` reaches the display through the watch), a comment
    /// kept, or the question asked again.
    pub(super) async fn answered(
        &mut self,
        line: Option<String>,
        engine: &Engine,
        run_id: &str,
        progress: &mut Progress,
    ) {
        let Some((key, comment)) = self.current.take() else {
            return;
        };
        let Some(line) = line else {
            // Stdin closed: leave the step waiting and say how to decide it.
            self.done_asking = true;
            self.lines = None;
            progress.resume(&format!(
                "stdin closed: step {} keeps waiting; decide it with \
                 POST /api/runs/{run_id}/steps/{}/approve (or /reject) on a server on this \
                 store, or Ctrl-C to cancel the run",
                key.0, key.0
            ));
            return;
        };
        match parse_answer(&line) {
            Answer::Again => {
                ask(&key.0, comment.as_deref());
                self.current = Some((key, comment));
            }
            Answer::Comment(text) => {
                ask(&key.0, Some(&text));
                self.current = Some((key, Some(text)));
            }
            Answer::Decide(approve, more) => {
                let decision = Decision {
                    by: Some(decider()),
                    comment: more.or(comment),
                };
                let done = if approve {
                    engine.approve(run_id, &key.0, decision).await
                } else {
                    engine.reject(run_id, &key.0, decision).await
                };
                let note = match done {
                    Ok(_) => format!(
                        "{} step {}",
                        if approve { "approved" } else { "rejected" },
                        key.0
                    ),
                    Err(e) => format!("step {}: {}", key.0, e.message()),
                };
                progress.resume(&note);
            }
        }
    }

    /// Asks no more (the run is being cancelled).
    pub(super) fn stop(&mut self, progress: &mut Progress) {
        self.done_asking = true;
        self.queue.clear();
        if self.current.take().is_some() {
            eprintln!();
            progress.resume("");
        }
    }
}

fn ask(step: &str, comment: Option<&str>) {
    let mut stderr = std::io::stderr().lock();
    let _ = match comment {
        None => write!(stderr, "approve step {step}? [y/n/comment] "),
        Some(c) => write!(stderr, "approve step {step} with the comment {c:?}? [y/n] "),
    };
    let _ = stderr.flush();
}

/// What a line typed at the approval question means.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    /// Nothing usable: ask again.
    Again,
    /// `y`/`yes` (true) or `n`/`no` (false), with a comment after it
    /// (`y looks good`).
    Decide(bool, Option<String>),
    /// Any other text: the comment, then the question again.
    Comment(String),
}

fn parse_answer(line: &str) -> Answer {
    let line = line.trim();
    if line.is_empty() {
        return Answer::Again;
    }
    let (word, rest) = match line.split_once(char::is_whitespace) {
        Some((word, rest)) => (word, rest.trim()),
        None => (line, ""),
    };
    let word = word.trim_end_matches([',', ':', '.', '!']).to_lowercase();
    let comment = (!rest.is_empty()).then(|| rest.to_string());
    match word.as_str() {
        "y" | "yes" => Answer::Decide(true, comment),
        "n" | "no" => Answer::Decide(false, comment),
        _ => Answer::Comment(line.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_decide_or_comment() {
        assert_eq!(parse_answer("y\n"), Answer::Decide(true, None));
        assert_eq!(parse_answer(" YES "), Answer::Decide(true, None));
        assert_eq!(parse_answer("n"), Answer::Decide(false, None));
        assert_eq!(
            parse_answer("y: looks good"),
            Answer::Decide(true, Some("looks good".into()))
        );
        assert_eq!(
            parse_answer("no not yet"),
            Answer::Decide(false, Some("not yet".into()))
        );
        assert_eq!(parse_answer("   "), Answer::Again);
        assert_eq!(
            parse_answer("ship it after lunch"),
            Answer::Comment("ship it after lunch".into())
        );
    }
}
