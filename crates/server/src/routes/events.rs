//! `GET /api/events`: the store's events as Server-Sent Events.

use super::Route;
use crate::schema::{EventsInvalidInput, SseGap, SseMessage};
use crate::{ApiError, AppState};
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use coderig::bus::{matches, BusEvent, EventSubscription};
use coderig::event::{ReplayDecision, SseId, StoredEvent};
use futures_util::stream::{self, Stream};
use serde::Deserialize;
use std::collections::VecDeque;
use std::convert::Infallible;

pub(super) fn routes() -> Vec<Route> {
    vec![Route::get("/api/events", events)]
}

/// The filters and the resume cursor.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(crate) struct EventsQuery {
    /// Only the events of this battle (`battle_started`,
    /// `contestant_updated`, `battle_updated`, its `agent_output` and
    /// `task_rescued`).
    battle_id: Option<String>,
    /// Only the events of this run (`run_updated`, `step_updated`, its
    /// `agent_output` and `task_rescued`).
    run_id: Option<String>,
    /// Resume after this event id, `<epoch>:<seq>` (the `id` of the last
    /// event received; a bare `<seq>` is taken in this store's epoch). The
    /// `Last-Event-ID` header, when sent, takes precedence.
    after: Option<String>,
}

/// The resume cursor of a request: `Last-Event-ID` (what an EventSource
/// sends when it reconnects, so it is the newest), else `?after=`.
fn cursor(
    headers: &HeaderMap,
    after: Option<&str>,
    epoch: &str,
) -> Result<Option<SseId>, ApiError> {
    let (given, field) = match headers.get("last-event-id") {
        Some(value) => (
            value.to_str().map_err(|_| {
                coderig::Error::invalid_input(
                    "the Last-Event-ID header is not text; send back the `id` of the last event received (<epoch>:<seq>)",
                )
                .with_detail("path", "Last-Event-ID")
            })?,
            "Last-Event-ID",
        ),
        None => match after {
            Some(after) => (after, "after"),
            None => return Ok(None),
        },
    };
    SseId::parse_cursor(given, epoch)
        .map(Some)
        .map_err(|e| coderig::Error::from(e).with_detail("path", field).into())
}

fn stored(event: &StoredEvent) -> SseEvent {
    let sse = SseEvent::default()
        .event(event.event.event_type().as_str())
        .data(serde_json::to_string(event).unwrap_or_else(|_| "{}".into()));
    match event.sse_id() {
        Some(id) => sse.id(id.to_string()),
        None => sse,
    }
}

/// What the stream still has to do: the events decided before the first
/// live one, then the subscription.
struct Feed {
    first: VecDeque<SseEvent>,
    subscription: EventSubscription,
    battle_id: Option<String>,
    run_id: Option<String>,
}

impl Feed {
    async fn next(&mut self) -> Option<SseEvent> {
        if let Some(event) = self.first.pop_front() {
            return Some(event);
        }
        loop {
            let (battle, run) = (self.battle_id.as_deref(), self.run_id.as_deref());
            match self.subscription.next().await? {
                BusEvent::Stored(e) if matches(&e.event, battle, run) => return Some(stored(&e)),
                BusEvent::Live(e) if matches(&e, battle, run) => {
                    return Some(
                        SseEvent::default()
                            .event(e.event_type().as_str())
                            .data(serde_json::to_string(&e).unwrap_or_else(|_| "{}".into())),
                    )
                }
                _ => {}
            }
        }
    }
}

/// The events of battles and runs as they happen (`text/event-stream`; the
/// stream does not end while the server runs).
///
/// Each stored event is sent as `id: <epoch>:<seq>`, `event: <type>`,
/// `data: <the event's JSON with seq and epoch>`; `agent_output` is live
/// only and has no `id`. To resume, send the last `id` received as
/// `Last-Event-ID` (or `?after=`): the events after it are replayed first,
/// each once, then the live ones. A cursor of another store (or of a
/// history this store does not have) gets `event: reset` (data `{}`) and a
/// replay of every retained event; a cursor older than the retained events
/// gets `event: gap` (data `{"after", "oldest"}`: the events between were
/// compacted away) and the retained ones. A `:` comment line every 15 s
/// keeps idle connections open.
#[utoipa::path(get, tag = "events", path = "/api/events",
    params(
        EventsQuery,
        ("Last-Event-ID" = Option<String>, Header, description = "The `id` of the last event received (`<epoch>:<seq>`); takes precedence over `after`."),
    ),
    responses(
        (status = 200, description = "The event stream: one SseMessage after another (`event:` its name, `data:` the JSON of its payload, `id:` on stored events), never ending while the server runs.", content_type = "text/event-stream", body = [SseMessage]),
        (status = 400, description = "invalid_input: a cursor that is not `<epoch>:<seq>` (details `path`, `given`, `reason`), or an unknown query parameter.", body = EventsInvalidInput),
    ),
)]
pub(crate) async fn events(
    State(state): State<AppState>,
    headers: HeaderMap,
    query: Result<Query<EventsQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let Query(query) = query.map_err(|e| {
        coderig::Error::invalid_input(format!(
            "bad query of /api/events: {}; it takes battle_id, run_id and after (<epoch>:<seq>)",
            e.body_text()
        ))
    })?;
    let cursor = cursor(&headers, query.after.as_deref(), state.store().epoch())?;
    // Subscribe first, then replay from the store: nothing committed in
    // between is lost or sent twice (coderig::bus).
    let mut subscription = state.bus().subscribe();
    let (decision, replayed) = subscription.replay(cursor.as_ref()).await?;
    let (battle, run) = (query.battle_id.as_deref(), query.run_id.as_deref());
    let mut first = VecDeque::new();
    match decision {
        ReplayDecision::Reset => first.push_back(SseEvent::default().event("reset").data("{}")),
        ReplayDecision::Gap { after, oldest } => {
            first.push_back(SseEvent::default().event("gap").data(
                serde_json::to_string(&SseGap { after, oldest }).unwrap_or_else(|_| "{}".into()),
            ))
        }
        ReplayDecision::Replay { .. } | ReplayDecision::Live => {}
    }
    first.extend(
        replayed
            .iter()
            .filter(|e| matches(&e.event, battle, run))
            .map(stored),
    );
    let feed = Feed {
        first,
        subscription,
        battle_id: query.battle_id,
        run_id: query.run_id,
    };
    let stream = stream::unfold(feed, |mut feed| async move {
        let event = feed.next().await?;
        Some((Ok(event), feed))
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(state.sse_keep_alive())))
}
