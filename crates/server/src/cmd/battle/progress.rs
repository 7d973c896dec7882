//! `coderig battle run`'s live progress: one line per contestant with its
//! lane, status, elapsed time and tokens — indicatif bars on a terminal,
//! one plain line per change otherwise. It draws the battle as created,
//! kept current by the battle's events ([`apply`]): nothing is read from
//! the store while the battle runs.

use super::render::{finished_duration, label, tokens};
use crate::cmd::table::{millis, now_ms};
use coderig::arena::runner::{BattleView, ContestantView};
use coderig::arena::ContestantStatus;
use coderig::event::{AgentOutput, BattleStatus, Event, OutputSource};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::HashMap;
use std::io::IsTerminal;

/// How progress is shown.
enum Display {
    /// indicatif on stderr (a terminal).
    Bars {
        multi: MultiProgress,
        battle: ProgressBar,
        contestants: Vec<(String, ProgressBar)>,
    },
    /// One line on stderr per change (no terminal, no `--json`).
    Plain,
    /// Nothing (`--json` without a terminal).
    Quiet,
}

/// The live progress of one battle.
pub(super) struct Progress {
    display: Display,
    /// The battle as the display knows it: as created, then kept current
    /// by its events ([`apply`]).
    view: BattleView,
    /// Each contestant's status when last shown.
    shown: HashMap<String, ContestantStatus>,
    battle_status: BattleStatus,
    /// Characters of output streamed per contestant so far (a live sign of
    /// work before the usage is known).
    chars: HashMap<String, usize>,
    /// Contestants whose agent just streamed its first output (a change the
    /// plain display reports: the agent is at work).
    first_output: Vec<String>,
    /// The width of the widest `identity/model`.
    label_width: usize,
}

impl Progress {
    /// Shows `view` (the battle as created): bars on a terminal, a header
    /// and plain lines otherwise, nothing with `--json` off a terminal.
    pub(super) fn new(json: bool, view: BattleView) -> Self {
        let label_width = view
            .contestants
            .iter()
            .map(|c| label(c).chars().count())
            .max()
            .unwrap_or(0);
        let header = format!(
            "battle {}: {} · {} contestants · judge {}/{}",
            view.id,
            view.battle_type,
            view.contestants.len(),
            view.judge.identity,
            view.judge.model
        );
        let display = if std::io::stderr().is_terminal() {
            let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
            let style = ProgressStyle::with_template("{spinner} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner());
            let _ = multi.println(&header);
            let contestants = view
                .contestants
                .iter()
                .map(|c| {
                    let bar = multi.add(ProgressBar::new_spinner().with_style(style.clone()));
                    (c.id.clone(), bar)
                })
                .collect();
            let battle = multi.add(ProgressBar::new_spinner().with_style(style));
            Display::Bars {
                multi,
                battle,
                contestants,
            }
        } else if json {
            Display::Quiet
        } else {
            eprintln!("{header}");
            Display::Plain
        };
        let mut progress = Progress {
            display,
            shown: HashMap::new(),
            battle_status: view.status,
            chars: HashMap::new(),
            first_output: Vec::new(),
            label_width,
            view,
        };
        progress.draw();
        progress
    }

    /// The battle as the display knows it.
    pub(super) fn view(&self) -> &BattleView {
        &self.view
    }

    /// One of the battle's stored events: what it changes is shown at the
    /// next [`Progress::draw`].
    pub(super) fn event(&mut self, event: &Event) {
        apply(&mut self.view, event, now_ms());
    }

    /// A contestant's agent streamed output: counted, not shown.
    pub(super) fn output(&mut self, output: &AgentOutput) {
        if let OutputSource::Contestant { contestant_id, .. } = &output.source {
            let chars = self.chars.entry(contestant_id.clone()).or_default();
            if *chars == 0 && !output.text.is_empty() {
                self.first_output.push(contestant_id.clone());
            }
            *chars += output.text.chars().count();
        }
    }

    /// A line above the bars (or on its own, plain).
    pub(super) fn note(&mut self, line: &str) {
        match &self.display {
            Display::Bars { multi, .. } => {
                let _ = multi.println(line);
            }
            Display::Plain => eprintln!("{line}"),
            Display::Quiet => {}
        }
    }

    fn line(&self, c: &ContestantView, now_ms: i64) -> String {
        let elapsed = match c.status {
            ContestantStatus::Queued => "-".to_owned(),
            ContestantStatus::Running => c
                .started_at_ms
                .map(|s| millis(u64::try_from(now_ms - s).unwrap_or(0)))
                .unwrap_or_else(|| "-".to_owned()),
            _ => finished_duration(c),
        };
        let tokens = match (&c.usage, self.chars.get(&c.id)) {
            (Some(_), _) => tokens(c),
            (None, Some(n)) if *n > 0 => format!("{n} chars"),
            _ => "-".to_owned(),
        };
        format!(
            "{:<lw$}  {:<5}  {:<9}  {:>8}  {}",
            label(c),
            c.lane.as_str(),
            c.status.as_str(),
            elapsed,
            tokens,
            lw = self.label_width
        )
    }

    /// Shows what changed since the last draw (bars: everything, with the
    /// elapsed times).
    pub(super) fn draw(&mut self) {
        let now = now_ms();
        let view = &self.view;
        match &self.display {
            Display::Bars {
                battle,
                contestants,
                ..
            } => {
                for (id, bar) in contestants {
                    let Some(c) = view.contestant(id) else {
                        continue;
                    };
                    let line = self.line(c, now);
                    if matches!(
                        c.status,
                        ContestantStatus::Queued | ContestantStatus::Running
                    ) {
                        bar.set_message(line);
                        bar.tick();
                    } else if !bar.is_finished() {
                        bar.finish_with_message(line);
                    }
                }
                let elapsed = millis(u64::try_from(now - view.created_at_ms).unwrap_or(0));
                battle.set_message(format!("{} · {elapsed}", view.status));
                battle.tick();
            }
            Display::Plain => {
                let mut lines = Vec::new();
                for c in &view.contestants {
                    if self.shown.get(&c.id) != Some(&c.status) || self.first_output.contains(&c.id)
                    {
                        lines.push(format!("  {}", self.line(c, now)));
                    }
                }
                if self.battle_status != view.status {
                    lines.push(format!("battle {}: {}", view.id, view.status));
                }
                for line in lines {
                    eprintln!("{line}");
                }
            }
            Display::Quiet => {}
        }
        for c in &self.view.contestants {
            self.shown.insert(c.id.clone(), c.status);
        }
        self.first_output.clear();
        self.battle_status = self.view.status;
    }

    /// Removes the bars, so the summary starts on a clean screen.
    pub(super) fn clear(&mut self) {
        if let Display::Bars { multi, .. } = &self.display {
            let _ = multi.clear();
        }
    }
}

/// What one of the battle's stored events changes of the display's
/// `view`: a contestant's status (its start and end seen at `now`, its
/// duration and usage when the event has them), the battle's status and
/// winner. Display only: the summary reads the battle itself.
fn apply(view: &mut BattleView, event: &Event, now: i64) {
    match event {
        Event::ContestantUpdated(u) if u.battle_id == view.id => {
            let Some(c) = view
                .contestants
                .iter_mut()
                .find(|c| c.id == u.contestant_id)
            else {
                return;
            };
            if u.status == ContestantStatus::Running && c.status != ContestantStatus::Running {
                c.started_at_ms = Some(now);
            }
            let settled = !matches!(
                u.status,
                ContestantStatus::Queued | ContestantStatus::Running
            );
            if settled && c.ended_at_ms.is_none() {
                c.ended_at_ms = Some(now);
            }
            c.status = u.status;
            if u.duration_ms.is_some() {
                c.duration_ms = u.duration_ms;
            }
            if let Some(usage) = u
                .usage
                .as_ref()
                .and_then(|usage| serde_json::from_value(usage.clone()).ok())
            {
                c.usage = Some(usage);
            }
        }
        Event::BattleUpdated(u) if u.battle_id == view.id => {
            view.status = u.status;
            if u.winner_contestant_id.is_some() {
                view.winner_contestant_id = u.winner_contestant_id.clone();
                view.winner_source = u.winner_source;
            }
        }
        _ => {}
    }
}
