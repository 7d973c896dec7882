//! The pure part of `Store::record_changes` and `Store::finish_work`,
//! shared by every backend: the checks before the database
//! ([`check_changes`], [`check_finish`]) and, once a backend has read the
//! rows the changes name, the decision what to write or why not
//! ([`plan`]). The backends only read, then write what the plan says.

use super::check_id;
use super::records::*;
use crate::error::Error;
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// Checks changes as every backend does before it touches the database
/// (`invalid_input`): owner ids well-formed, every event of a stored type
/// (never `agent_output`).
pub fn check_changes(changes: &Changes) -> Result<(), Error> {
    for change in &changes.owners {
        check_id("owner", &change.id)?;
    }
    for event in &changes.events {
        if let Some(owner_id) = &event.owner_id {
            check_id("owner", owner_id)?;
        }
        event.event.check()?;
    }
    Ok(())
}

/// Checks a finish as every backend does before it touches the database
/// (`invalid_input`): the work's id, a work change present (the
/// compare-and-set that makes a finish happen once), and the changes as
/// [`check_changes`] checks them.
pub fn check_finish(work_id: &str, finish: &Finish) -> Result<(), Error> {
    check_id("work", work_id)?;
    if finish.changes.work.is_none() {
        return Err(Error::invalid_input(format!(
            "finishing {work_id:?} needs the work's own change (its compare-and-set); \
             to change owners only, use a transition or a fenced record_changes"
        ))
        .with_detail("path", "changes.work"));
    }
    check_changes(&finish.changes)
}

/// Whose changes [`plan`] decides: a lease holder's (`record_changes`,
/// naming its task) or a finish's (`finish_work`). Only the message of a
/// refused foreign owner differs.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Scope<'a> {
    /// Fenced by this task's lease.
    Fenced(&'a str),
    /// A finish of the work.
    Finish,
}

/// Every owner id the changes name (owner changes, then events), each once,
/// in the order of first mention: what a backend reads (and, on
/// PostgreSQL, locks) before [`plan`].
pub(crate) fn named_owners(changes: &Changes) -> Vec<&str> {
    let mut seen = HashSet::new();
    changes
        .owners
        .iter()
        .map(|c| c.id.as_str())
        .chain(changes.events.iter().filter_map(|e| e.owner_id.as_deref()))
        .filter(|id| seen.insert(*id))
        .collect()
}

/// A stored owner as [`plan`] needs it.
pub(crate) struct OwnerRow {
    pub work_id: String,
    pub kind: OwnerKind,
    pub status: String,
}

/// One row write of a plan: the new status and data (JSON text), each
/// `None` when unchanged.
pub(crate) struct RowWrite<'a> {
    pub id: &'a str,
    pub status: Option<&'a str>,
    pub data: Option<String>,
}

/// What `record_changes` writes, in order: the work, then the owners.
pub(crate) struct Plan<'a> {
    pub work: Option<RowWrite<'a>>,
    pub owners: Vec<RowWrite<'a>>,
}

/// Decides the writes of `changes` for the fenced task of work `work_id`,
/// whose stored kind and status are `work` (read when `changes.work` is
/// set) and whose named owners as stored are `owners` (keyed by id; an id
/// absent from it does not exist). Errors: an unknown owner `not_found_id`,
/// another work's owner `invalid_input`, a status outside `from` (work or
/// owner, owners as the earlier changes of the call left them) `conflict`
/// naming the row, its status and the allowed ones.
pub(crate) fn plan<'a>(
    work_id: &'a str,
    scope: Scope<'_>,
    work: Option<(WorkKind, &str)>,
    owners: &HashMap<String, OwnerRow>,
    changes: &'a Changes,
) -> Result<Plan<'a>, Error> {
    for id in named_owners(changes) {
        match owners.get(id) {
            None => return Err(Error::not_found_id("owner", id)),
            Some(row) if row.work_id != work_id => {
                let whose = match scope {
                    Scope::Fenced(task_id) => format!(
                        "(the work of task {task_id:?}); a fenced change touches only its own work"
                    ),
                    Scope::Finish => {
                        "(the work being finished); a finish touches only its own work".to_owned()
                    }
                };
                return Err(Error::invalid_input(format!(
                    "{} {id:?} belongs to {:?}, not to {work_id:?} {whose}",
                    row.kind, row.work_id
                ))
                .with_detail("id", id)
                .with_detail("work_id", row.work_id.as_str()));
            }
            Some(_) => {}
        }
    }
    let write = |id: &'a str, status: &'a Option<String>, data: &Option<Value>| RowWrite {
        id,
        status: status.as_deref(),
        data: data.as_ref().map(|d| d.to_string()),
    };
    let work_write = match (&changes.work, work) {
        (None, _) => None,
        (Some(_), None) => return Err(Error::not_found_id("battle or run", work_id)),
        (Some(change), Some((kind, status))) => {
            check_from(kind.as_str(), work_id, status, &change.from)?;
            let changes_something = change.status.is_some() || change.data.is_some();
            changes_something.then(|| write(work_id, &change.status, &change.data))
        }
    };
    // The statuses as the changes so far left them: a second change of the
    // same owner compares with the first's result (one map, no rescans).
    let mut now: HashMap<&str, &str> = HashMap::new();
    let mut owner_writes = Vec::with_capacity(changes.owners.len());
    for change in &changes.owners {
        let row = &owners[change.id.as_str()];
        let status = now
            .get(change.id.as_str())
            .copied()
            .unwrap_or(row.status.as_str());
        check_from(row.kind.as_str(), &change.id, status, &change.from)?;
        if let Some(next) = &change.status {
            now.insert(change.id.as_str(), next.as_str());
        }
        if change.status.is_some() || change.data.is_some() {
            owner_writes.push(write(&change.id, &change.status, &change.data));
        }
    }
    Ok(Plan {
        work: work_write,
        owners: owner_writes,
    })
}

/// A fenced batch a backend may write in one statement without reading
/// anything first ([`at_once`]): nothing in it depends on a stored row
/// but the fence, the work's status (`work_from`) and that every named
/// owner is the work's own — conditions one statement can check and
/// refuse as a whole, leaving the precise refusal to the transactional
/// path.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AtOnce {
    /// The statuses the work must have (empty: any).
    pub work_from: Vec<String>,
    /// The work's new status and data (JSON text), each `None` when kept.
    pub work_status: Option<String>,
    pub work_data: Option<String>,
    /// One `[id, status, data text]` per owner, each id once (a second
    /// change of one owner folded into its first: the last status and the
    /// last data win, as one after the other would leave them).
    pub owners: Vec<Value>,
    /// The ids of `owners`, in their order.
    pub owner_ids: Vec<String>,
    /// One `[kind, owner id, payload text]` per event, in order.
    pub events: Vec<Value>,
}

/// The one-statement form of a fenced `changes`, or `None` when its
/// outcome depends on more than [`AtOnce`] can check: no work change (the
/// statement reads the work's status under its lock), an owner change
/// that compares a status (`from`) or writes nothing, or an event naming
/// an owner no change writes.
pub(crate) fn at_once(changes: &Changes) -> Option<AtOnce> {
    let work = changes.work.as_ref()?;
    let mut at: HashMap<&str, usize> = HashMap::new();
    let mut owners: Vec<(&str, Option<&str>, Option<&Value>)> = Vec::new();
    for c in &changes.owners {
        if !c.from.is_empty() || (c.status.is_none() && c.data.is_none()) {
            return None;
        }
        match at.get(c.id.as_str()) {
            Some(&i) => {
                let o = &mut owners[i];
                o.1 = c.status.as_deref().or(o.1);
                o.2 = c.data.as_ref().or(o.2);
            }
            None => {
                at.insert(&c.id, owners.len());
                owners.push((&c.id, c.status.as_deref(), c.data.as_ref()));
            }
        }
    }
    let named = changes
        .events
        .iter()
        .filter_map(|e| e.owner_id.as_deref())
        .all(|id| at.contains_key(id));
    if !named {
        return None;
    }
    Some(AtOnce {
        work_from: work.from.clone(),
        work_status: work.status.clone(),
        work_data: work.data.as_ref().map(Value::to_string),
        owner_ids: owners.iter().map(|o| o.0.to_owned()).collect(),
        owners: owners
            .into_iter()
            .map(|(id, status, data)| serde_json::json!([id, status, data.map(Value::to_string)]))
            .collect(),
        events: changes
            .events
            .iter()
            .map(|e| {
                serde_json::json!([
                    e.event.kind.as_str(),
                    e.owner_id,
                    e.event.payload.to_string()
                ])
            })
            .collect(),
    })
}

fn check_from(what: &str, id: &str, status: &str, from: &[String]) -> Result<(), Error> {
    if from.is_empty() || from.iter().any(|f| f == status) {
        return Ok(());
    }
    Err(Error::conflict(format!(
        "{what} {id:?} is {status}; this change needs one of: {}",
        from.join(", ")
    ))
    .with_detail("id", id)
    .with_detail("status", status)
    .with_detail("from", from.to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(work: &str, status: &str) -> OwnerRow {
        OwnerRow {
            work_id: work.into(),
            kind: OwnerKind::Step,
            status: status.into(),
        }
    }

    #[test]
    fn a_second_change_of_one_owner_sees_the_first() {
        let owners = HashMap::from([("s".to_string(), row("r", "pending"))]);
        let changes = Changes::new()
            .owner(OwnerChange::new("s").from(&["pending"]).status("running"))
            .owner(OwnerChange::new("s").from(&["running"]).data(json!(1)));
        let planned = plan("r", Scope::Fenced("t"), None, &owners, &changes).unwrap();
        assert_eq!(planned.owners.len(), 2);
        assert_eq!(planned.owners[1].data.as_deref(), Some("1"));
        let twice = Changes::new()
            .owner(OwnerChange::new("s").from(&["pending"]).status("running"))
            .owner(OwnerChange::new("s").from(&["pending"]).status("done"));
        let e = plan("r", Scope::Fenced("t"), None, &owners, &twice)
            .err()
            .unwrap();
        assert!(e.message().contains("is running"), "{e}");
    }

    fn event(owner: Option<&str>) -> ChangeEvent {
        ChangeEvent {
            owner_id: owner.map(str::to_owned),
            event: NewEvent::new(crate::event::EventType::StepUpdated, json!({"n": 1})),
        }
    }

    #[test]
    fn at_once_only_when_nothing_but_the_work_is_compared() {
        let live = || WorkChange::new().from(&["running", "waiting"]);
        let chain_step = Changes::new()
            .work(live())
            .owner(OwnerChange::new("r:a").status("done").data(json!({"x": 1})))
            .owner(OwnerChange::new("r:b").status("running"));
        let mut with_events = chain_step.clone();
        with_events.events = vec![event(Some("r:a")), event(Some("r:b")), event(None)];
        let mut foreign_event = chain_step.clone();
        foreign_event.events = vec![event(Some("r:c"))];
        let mut no_work = chain_step.clone();
        no_work.work = None;
        let compared = Changes::new()
            .work(live())
            .owner(OwnerChange::new("r:a").from(&["waiting"]).status("done"));
        let writes_nothing = Changes::new().work(live()).owner(OwnerChange::new("r:a"));
        let cases: Vec<(&str, Changes, bool)> = vec![
            ("a chain step", chain_step, true),
            ("with its events", with_events, true),
            ("an event of an unwritten owner", foreign_event, false),
            ("no work change", no_work, false),
            ("an owner compare-and-set", compared, false),
            ("an owner change writing nothing", writes_nothing, false),
            (
                "the work alone",
                Changes::new().work(live().status("waiting")),
                true,
            ),
        ];
        for (name, changes, expected) in cases {
            assert_eq!(at_once(&changes).is_some(), expected, "{name}");
        }
    }

    #[test]
    fn at_once_folds_a_second_change_of_one_owner() {
        let changes = Changes::new()
            .work(WorkChange::new().status("waiting").data(json!({"k": "v"})))
            .owner(OwnerChange::new("r:a").status("running").data(json!(1)))
            .owner(OwnerChange::new("r:b").data(json!(2)))
            .owner(OwnerChange::new("r:a").status("done"));
        let once = at_once(&changes).unwrap();
        assert_eq!(
            once.owners,
            vec![json!(["r:a", "done", "1"]), json!(["r:b", null, "2"])]
        );
        assert_eq!(once.owner_ids, ["r:a", "r:b"]);
        assert!(once.work_from.is_empty());
        assert_eq!(once.work_status.as_deref(), Some("waiting"));
        assert_eq!(once.work_data.as_deref(), Some(r#"{"k":"v"}"#));
    }

    #[test]
    fn named_owners_are_checked_before_any_status() {
        let owners = HashMap::from([
            ("s".to_string(), row("r", "pending")),
            ("x".to_string(), row("other", "pending")),
        ]);
        let foreign = Changes::new()
            .owner(OwnerChange::new("s").from(&["done"]))
            .event(ChangeEvent::about(
                "x",
                NewEvent::new(EventType::StepUpdated, json!({})),
            ));
        let e = plan("r", Scope::Fenced("t"), None, &owners, &foreign)
            .err()
            .unwrap();
        assert_eq!(e.kind(), crate::ErrorKind::InvalidInput, "{e}");
        let unknown = Changes::new().owner(OwnerChange::new("nope"));
        let e = plan("r", Scope::Fenced("t"), None, &owners, &unknown)
            .err()
            .unwrap();
        assert_eq!(e.kind(), crate::ErrorKind::NotFoundId, "{e}");
        let live = Changes::new().event(ChangeEvent::of_work(NewEvent::new(
            EventType::AgentOutput,
            json!({}),
        )));
        assert!(check_changes(&live).is_err());
    }
}
