//! `coderig leaderboard`: Bradley–Terry ratings over the completed battles
//! with a winner, one table per battle type — or the JSON array
//! `GET /api/leaderboard` answers.

use super::rig::RigArgs;
use super::table;
use coderig::arena::runner::Leaderboard;
use coderig::arena::BattleType;
use std::path::PathBuf;
use std::process::ExitCode;

/// Options of `coderig leaderboard`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only this battle type (`coding` or `qa`); default: one table each.
    #[arg(long = "type", value_name = "TYPE", value_parser = parse_type)]
    battle_type: Option<BattleType>,
    /// Only battles of this project.
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
    /// Print the JSON array of boards (`[{battle_type, n_battles,
    /// entries: [{name, score, ci_low, ci_high, n_battles}]}]`).
    #[arg(long)]
    json: bool,
}

fn parse_type(text: &str) -> Result<BattleType, String> {
    text.parse::<BattleType>().map_err(|e| e.to_string())
}

/// Runs `coderig leaderboard`: 0 once printed (an empty board included),
/// else the exit code of the store's or the config's error.
pub fn run(args: Args, rig: &RigArgs) -> ExitCode {
    let project = args.project.as_ref().map(|p| {
        // Battles store their project canonical.
        std::fs::canonicalize(p)
            .unwrap_or_else(|_| p.clone())
            .display()
            .to_string()
    });
    super::rig::read_only("leaderboard", rig, |rig| async move {
        let boards = rig
            .arena()
            .leaderboard(args.battle_type, project.as_deref())
            .await?;
        if args.json {
            return serde_json::to_string_pretty(&boards)
                .map(|text| format!("{text}\n"))
                .map_err(|e| coderig::Error::internal(format!("cannot serialize: {e}")));
        }
        Ok(render(&boards))
    })
}

/// One titled table per board: rank, name, score, 95 % interval, battles.
fn render(boards: &[Leaderboard]) -> String {
    let mut out = String::new();
    for (i, board) in boards.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&format!(
            "{} ({} battle{} with a winner)\n",
            board.battle_type,
            board.n_battles,
            if board.n_battles == 1 { "" } else { "s" }
        ));
        if board.entries.is_empty() {
            out.push_str("  no ratings yet\n");
            continue;
        }
        let rows: Vec<Vec<String>> = board
            .entries
            .iter()
            .enumerate()
            .map(|(rank, e)| {
                vec![
                    (rank + 1).to_string(),
                    e.name.clone(),
                    format!("{:.0}", e.score),
                    format!("{:.0}–{:.0}", e.ci_low, e.ci_high),
                    e.n_battles.to_string(),
                ]
            })
            .collect();
        out.push_str(&table::render(
            &["RANK", "NAME", "SCORE", "95% CI", "BATTLES"],
            &rows,
        ));
    }
    if boards.is_empty() {
        out.push_str("no completed battles with a winner yet\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use coderig::arena::runner::LeaderboardEntry;

    #[test]
    fn boards_render_as_titled_tables() {
        let board = Leaderboard {
            battle_type: BattleType::Coding,
            n_battles: 2,
            entries: vec![
                LeaderboardEntry {
                    name: "fixer/good".into(),
                    score: 1100.4,
                    ci_low: 1000.0,
                    ci_high: 1200.0,
                    n_battles: 2,
                },
                LeaderboardEntry {
                    name: "fixer/wrong".into(),
                    score: 899.6,
                    ci_low: 800.0,
                    ci_high: 1000.0,
                    n_battles: 2,
                },
            ],
        };
        assert_eq!(
            render(&[board]),
            "coding (2 battles with a winner)\n\
             RANK  NAME         SCORE  95% CI     BATTLES\n\
             1     fixer/good   1100   1000–1200  2\n\
             2     fixer/wrong  900    800–1000   2\n"
        );
    }
}
