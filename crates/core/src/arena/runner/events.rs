//! The events a battle's changes carry: `battle_updated` and
//! `contestant_updated`, built from what the store holds of the battle and
//! of a contestant, so every writer of a change (start, worker, judge,
//! finish) states it the same way.

use super::data::{encode, BattleData, ContestantData};
use crate::arena::ContestantStatus;
use crate::error::Error;
use crate::event::{BattleStatus, BattleUpdated, ContestantUpdated, Event};
use crate::store::NewEvent;

/// `battle_updated` for the battle as `data` says.
pub(crate) fn battle_event(
    id: &str,
    status: BattleStatus,
    data: &BattleData,
    cross_exam_id: Option<String>,
) -> Result<NewEvent, Error> {
    NewEvent::from_event(&Event::BattleUpdated(BattleUpdated {
        battle_id: id.to_owned(),
        status,
        winner_contestant_id: data.winner.as_ref().map(|w| w.contestant_id.clone()),
        winner_source: data.winner.as_ref().map(|w| w.source),
        analysis_ready: Some(data.analysis_ready),
        cross_exam_id,
        error: data.error.clone().map(serde_json::Value::String),
    }))
}

/// `contestant_updated` with the contestant's benchmark and evidence.
pub(crate) fn contestant_event(
    battle_id: &str,
    contestant_id: &str,
    status: ContestantStatus,
    data: Option<&ContestantData>,
    error: Option<&str>,
) -> Result<NewEvent, Error> {
    NewEvent::from_event(&Event::ContestantUpdated(ContestantUpdated {
        battle_id: battle_id.to_owned(),
        contestant_id: contestant_id.to_owned(),
        status,
        duration_ms: data.and_then(|d| d.duration_ms),
        ttft_ms: data.and_then(|d| d.ttft_ms),
        usage: data.and_then(|d| d.usage.as_ref()).map(encode),
        tokens_per_sec: data.and_then(|d| d.tokens_per_sec),
        evidence: data.and_then(|d| d.evidence.as_ref()).map(encode),
        error: error
            .map(str::to_owned)
            .or_else(|| data.and_then(|d| d.error.clone()))
            .map(serde_json::Value::String),
    }))
}
