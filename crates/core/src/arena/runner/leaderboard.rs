//! The leaderboard: Bradley–Terry ratings over completed battles with a
//! winner, one board per battle type, with `n_battles` per contestant.

use super::{Arena, Leaderboard, LeaderboardEntry};
use crate::arena::BattleType;
use crate::error::Error;
use crate::store::{WorkFilter, WorkKind};
use std::collections::HashMap;

/// Bradley–Terry boards over completed battles with a winner.
pub(crate) async fn leaderboard(
    arena: &Arena,
    battle_type: Option<BattleType>,
    project: Option<&str>,
) -> Result<Vec<Leaderboard>, Error> {
    let mut games: HashMap<BattleType, Vec<(String, Vec<String>)>> = HashMap::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut filter = WorkFilter::new(WorkKind::Battle)
            .statuses(&["completed"])
            .limit(200);
        if let Some(p) = project {
            let canonical = std::fs::canonicalize(p)
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| p.to_owned());
            filter = filter.data_field("project", &canonical);
        }
        if let Some(c) = &cursor {
            filter = filter.cursor(c);
        }
        let page = arena.store().list_works(&filter).await?;
        for work in &page.works {
            let Ok(view) = arena.battle(&work.id).await else {
                continue;
            };
            if battle_type.is_some_and(|t| t != view.battle_type) {
                continue;
            }
            let Some(winner) = view
                .winner_contestant_id
                .as_ref()
                .and_then(|w| view.contestant(w))
            else {
                continue;
            };
            let name = |c: &super::ContestantView| format!("{}/{}", c.identity, c.model);
            let losers = view
                .contestants
                .iter()
                .filter(|c| c.id != winner.id)
                .map(name)
                .collect();
            games
                .entry(view.battle_type)
                .or_default()
                .push((name(winner), losers));
        }
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    let mut boards = Vec::new();
    for t in [BattleType::Coding, BattleType::Qa] {
        if battle_type.is_some_and(|b| b != t) {
            continue;
        }
        let battles = games.remove(&t).unwrap_or_default();
        let mut counts: HashMap<String, u32> = HashMap::new();
        for (w, ls) in &battles {
            *counts.entry(w.clone()).or_default() += 1;
            for l in ls {
                *counts.entry(l.clone()).or_default() += 1;
            }
        }
        let ratings = crate::arena::bradley_terry(&battles, 200, 0);
        boards.push(Leaderboard {
            battle_type: t,
            n_battles: battles.len() as u32,
            entries: ratings
                .into_iter()
                .map(|r| LeaderboardEntry {
                    n_battles: counts.get(&r.name).copied().unwrap_or(0),
                    name: r.name,
                    score: r.score,
                    ci_low: r.ci_low,
                    ci_high: r.ci_high,
                })
                .collect(),
        });
    }
    Ok(boards)
}
