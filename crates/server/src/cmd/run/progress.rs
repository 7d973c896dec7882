//! `coderig run`'s live progress: one line per step with its kind,
//! status, attempt, elapsed time and a note — indicatif bars on a
//! terminal, one plain line per change otherwise — paused while an
//! approval question waits for its answer. It draws the run as the display
//! knows it ([`super::live::LiveRun`]): nothing is read per event.

use super::live::{is_live, loop_steps};
use super::render::{duration, note};
use crate::cmd::table::{millis, now_ms};
use coderig::event::{AgentOutput, OutputSource, RunStatus};
use coderig::flow::engine::{RunView, StepView};
use coderig::flow::StepStatus;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::{BTreeSet, HashMap};
use std::io::IsTerminal;

/// How progress is shown.
enum Display {
    /// indicatif on stderr (a terminal).
    Bars {
        multi: MultiProgress,
        run: ProgressBar,
        steps: Vec<(String, ProgressBar)>,
        /// Hidden while a question waits for its answer.
        paused: bool,
    },
    /// One line on stderr per change (no terminal, no `--json`).
    Plain,
    /// Nothing (`--json` without a terminal).
    Quiet,
}

/// What the plain display last showed of a step.
type Shown = (StepStatus, u32, u32);

/// The live progress of one run.
pub(super) struct Progress {
    display: Display,
    shown: HashMap<String, Shown>,
    run_status: RunStatus,
    /// Characters of agent output streamed per step so far (a sign of work;
    /// the output itself is not shown).
    chars: HashMap<String, usize>,
    id_width: usize,
    kind_width: usize,
    /// Do-while steps and the steps of their bodies.
    in_loop: BTreeSet<String>,
}

impl Progress {
    pub(super) fn new(json: bool, view: &RunView) -> Self {
        let id_width = view
            .steps
            .iter()
            .map(|s| s.id.chars().count())
            .max()
            .unwrap_or(0);
        let kind_width = view
            .steps
            .iter()
            .map(|s| s.kind.chars().count())
            .max()
            .unwrap_or(0);
        let header = format!(
            "run {}: {} · {} steps",
            view.id,
            view.name.as_deref().unwrap_or("(unnamed flow)"),
            view.steps.len()
        );
        let display = if std::io::stderr().is_terminal() {
            let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
            let style = ProgressStyle::with_template("{spinner} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner());
            let _ = multi.println(&header);
            let steps = view
                .steps
                .iter()
                .map(|s| {
                    let bar = multi.add(ProgressBar::new_spinner().with_style(style.clone()));
                    (s.id.clone(), bar)
                })
                .collect();
            let run = multi.add(ProgressBar::new_spinner().with_style(style));
            Display::Bars {
                multi,
                run,
                steps,
                paused: false,
            }
        } else if json {
            Display::Quiet
        } else {
            eprintln!("{header}");
            Display::Plain
        };
        let in_loop = loop_steps(&view.spec);
        let mut progress = Progress {
            display,
            shown: HashMap::new(),
            run_status: view.status,
            chars: HashMap::new(),
            id_width,
            kind_width,
            in_loop,
        };
        progress.draw(view);
        progress
    }

    pub(super) fn output(&mut self, run_id: &str, output: &AgentOutput) {
        if let OutputSource::Step {
            run_id: of,
            step_id,
        } = &output.source
        {
            if of == run_id {
                *self.chars.entry(step_id.clone()).or_default() += output.text.chars().count();
            }
        }
    }

    pub(super) fn note(&mut self, line: &str) {
        match &self.display {
            Display::Bars { multi, paused, .. } => {
                if *paused {
                    eprintln!("{line}");
                } else {
                    let _ = multi.println(line);
                }
            }
            Display::Plain => eprintln!("{line}"),
            Display::Quiet => {}
        }
    }

    /// Hides the bars while a question is on the terminal (a redraw would
    /// overwrite what is typed).
    pub(super) fn pause(&mut self) {
        if let Display::Bars { multi, paused, .. } = &mut self.display {
            if !*paused {
                multi.set_draw_target(ProgressDrawTarget::hidden());
                *paused = true;
            }
        }
    }

    /// Shows the bars again after a question, with `line` (when not empty)
    /// above them.
    pub(super) fn resume(&mut self, line: &str) {
        if let Display::Bars { multi, paused, .. } = &mut self.display {
            if *paused {
                if !line.is_empty() {
                    eprintln!("{line}");
                }
                multi.set_draw_target(ProgressDrawTarget::stderr());
                *paused = false;
                return;
            }
        }
        if !line.is_empty() {
            self.note(line);
        }
    }

    fn line(&self, s: &StepView, now_ms: i64) -> String {
        let attempt = if s.attempt == 0 {
            "-".to_owned()
        } else {
            format!("attempt {}", s.attempt)
        };
        let elapsed = match s.status {
            StepStatus::Pending => "-".to_owned(),
            StepStatus::Running | StepStatus::Waiting => s
                .started_at
                .map(|t| millis(u64::try_from(now_ms - t).unwrap_or(0)))
                .unwrap_or_else(|| "-".to_owned()),
            _ => duration(s),
        };
        let mut note = match s.status {
            StepStatus::Waiting if s.kind == "approval" => "waiting for approval".to_owned(),
            StepStatus::Running => match self.chars.get(&s.id) {
                Some(n) if *n > 0 => format!("{n} chars"),
                _ => String::new(),
            },
            _ => note(s),
        };
        if self.in_loop.contains(&s.id) {
            // A body step's `iteration` counts from 1, as templates do
            // (0 only before its first start).
            note = format!("iteration {} {note}", s.iteration.max(1));
        }
        format!(
            "{:<iw$}  {:<kw$}  {:<9}  {:<10}  {:>8}  {}",
            s.id,
            s.kind,
            s.status.as_str(),
            attempt,
            elapsed,
            note,
            iw = self.id_width,
            kw = self.kind_width,
        )
        .trim_end()
        .to_owned()
    }

    pub(super) fn draw(&mut self, view: &RunView) {
        let now = now_ms();
        match &self.display {
            Display::Bars { paused: true, .. } => {}
            Display::Bars { run, steps, .. } => {
                for (id, bar) in steps {
                    let Some(s) = view.step(id) else { continue };
                    let line = self.line(s, now);
                    if matches!(
                        s.status,
                        StepStatus::Pending | StepStatus::Running | StepStatus::Waiting
                    ) && is_live(view.status)
                    {
                        bar.set_message(line);
                        bar.tick();
                    } else if !bar.is_finished() {
                        bar.finish_with_message(line);
                    } else {
                        // A loop's body step finishes again in each
                        // iteration: keep its line current.
                        bar.set_message(line);
                    }
                }
                let elapsed = millis(u64::try_from(now - view.created_at).unwrap_or(0));
                run.set_message(format!("run {} · {elapsed}", view.status));
                run.tick();
            }
            Display::Plain => {
                let mut lines = Vec::new();
                for s in &view.steps {
                    let shown = (s.status, s.attempt, s.iteration);
                    let first = !self.shown.contains_key(&s.id);
                    // The first look shows only what already moved.
                    if (first && s.status != StepStatus::Pending)
                        || (!first && self.shown.get(&s.id) != Some(&shown))
                    {
                        lines.push(format!("  {}", self.line(s, now)));
                    }
                }
                if self.run_status != view.status {
                    lines.push(format!("run {}: {}", view.id, view.status));
                }
                for line in lines {
                    eprintln!("{line}");
                }
            }
            Display::Quiet => {}
        }
        for s in &view.steps {
            self.shown
                .insert(s.id.clone(), (s.status, s.attempt, s.iteration));
        }
        self.run_status = view.status;
    }

    /// Removes the bars, so the summary starts on a clean screen; nothing
    /// is drawn after (a dropped bar would draw itself again below the
    /// summary).
    pub(super) fn clear(&mut self) {
        if let Display::Bars { multi, paused, .. } = &mut self.display {
            if !*paused {
                let _ = multi.clear();
            }
            multi.set_draw_target(ProgressDrawTarget::hidden());
            *paused = true;
        }
    }
}
