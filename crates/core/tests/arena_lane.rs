//! Lane classification, dispatch and completion of arena contestants.

use coderig::arena::{
    classify_lane, dispatch_now, is_battle_complete, next_local_contestant, ArenaError, BattleType,
    ContestantStatus, Lane,
};
use std::str::FromStr;

use ContestantStatus::{Cancelled, Done, Error, Queued, Running};
use Lane::{Cloud, Local};

#[test]
fn classify_lane_table() {
    let local = ["qwen3-coder", "codex/gpt-oss-20b"];
    // (battle type, identity, model, expected)
    let cases = [
        (BattleType::Qa, "ollama", "qwen3-coder", Local),
        (BattleType::Qa, "claude", "opus", Local), // Q&A: always local
        (BattleType::Coding, "ollama", "qwen3-coder", Local), // model listed
        (BattleType::Coding, "aider", "qwen3-coder", Local), // any identity
        (BattleType::Coding, "claude", "opus", Cloud),
        (BattleType::Coding, "codex", "gpt-oss-20b", Local), // pinned identity/model
        (BattleType::Coding, "aider", "gpt-oss-20b", Cloud), // pinned to another identity
        (BattleType::Coding, "ollama", "Qwen3-Coder", Cloud), // exact names
        (BattleType::Coding, "ollama", "qwen3", Cloud),      // no prefix match
    ];
    for (battle_type, identity, model, expected) in cases {
        assert_eq!(
            classify_lane(battle_type, identity, model, &local),
            expected,
            "{battle_type} {identity}/{model}"
        );
    }
}

#[test]
fn classify_lane_models_with_slashes() {
    let local = vec![
        "openrouter/qwen/qwen3-coder".to_string(),
        "meta/llama3".to_string(),
    ];
    assert_eq!(
        classify_lane(BattleType::Coding, "openrouter", "qwen/qwen3-coder", &local),
        Local
    );
    assert_eq!(
        classify_lane(BattleType::Coding, "other", "qwen/qwen3-coder", &local),
        Cloud
    );
    // "meta/llama3" is both a model name and an identity/model pin.
    assert_eq!(
        classify_lane(BattleType::Coding, "x", "meta/llama3", &local),
        Local
    );
    assert_eq!(
        classify_lane(BattleType::Coding, "meta", "llama3", &local),
        Local
    );
    let none: [&str; 0] = [];
    assert_eq!(classify_lane(BattleType::Coding, "a", "b", &none), Cloud);
    assert_eq!(classify_lane(BattleType::Qa, "a", "b", &none), Local);
}

#[test]
fn enums_round_trip_and_aliases() {
    for t in BattleType::ALL {
        assert_eq!(BattleType::from_str(t.as_str()), Ok(*t));
    }
    for l in Lane::ALL {
        assert_eq!(l.as_str().parse::<Lane>(), Ok(*l));
    }
    for s in ContestantStatus::ALL {
        assert_eq!(s.to_string().parse::<ContestantStatus>(), Ok(*s));
    }
    assert_eq!("Q&A".parse::<BattleType>(), Ok(BattleType::Qa));
    assert_eq!(" coding ".parse::<BattleType>(), Ok(BattleType::Coding));
    assert_eq!("canceled".parse::<ContestantStatus>(), Ok(Cancelled));
    let err = "gpu".parse::<Lane>().unwrap_err();
    assert_eq!(coderig::Error::from(err.clone()).code(), "INVALID_INPUT");
    assert!(err.to_string().contains("local, cloud"), "{err}");
    let err = ArenaError::from(err);
    assert!(
        matches!(&err, ArenaError::InvalidInput(m) if m.contains("local, cloud")),
        "{err}"
    );
    assert_eq!(serde_json::to_string(&BattleType::Qa).unwrap(), "\"qa\"");
}

#[test]
fn next_local_contestant_table() {
    type Rows = Vec<(&'static str, Lane, ContestantStatus)>;
    let cases: Vec<(Rows, Option<&str>)> = vec![
        (vec![], None),
        (vec![("a", Cloud, Queued)], None),
        (
            vec![
                ("a", Local, Running),
                ("b", Local, Queued),
                ("c", Local, Queued),
            ],
            Some("b"),
        ),
        (
            vec![
                ("a", Cloud, Queued),
                ("b", Local, Done),
                ("c", Local, Queued),
            ],
            Some("c"),
        ),
        (
            vec![
                ("a", Local, Done),
                ("b", Local, Error),
                ("c", Local, Cancelled),
            ],
            None,
        ),
    ];
    for (rows, expected) in cases {
        assert_eq!(next_local_contestant(&rows), expected, "{rows:?}");
    }
}

#[test]
fn dispatch_now_table() {
    type Rows = Vec<(u32, Lane, ContestantStatus)>;
    // (rows, local_capacity, cloud_capacity, expected)
    let cases: Vec<(Rows, usize, Option<usize>, Vec<u32>)> = vec![
        (vec![], 1, None, vec![]),
        // Serial local lane, unbounded cloud lane.
        (
            vec![
                (1, Local, Queued),
                (2, Cloud, Queued),
                (3, Local, Queued),
                (4, Cloud, Queued),
            ],
            1,
            None,
            vec![1, 2, 4],
        ),
        // A local contestant already running blocks the local lane.
        (
            vec![(1, Local, Running), (2, Local, Queued), (3, Cloud, Queued)],
            1,
            None,
            vec![3],
        ),
        // Local capacity 2 with one running admits one more.
        (
            vec![(1, Local, Running), (2, Local, Queued), (3, Local, Queued)],
            2,
            None,
            vec![2],
        ),
        // Local capacity 0 never admits a local contestant.
        (
            vec![(1, Local, Queued), (2, Cloud, Queued)],
            0,
            None,
            vec![2],
        ),
        // Cloud cap counts running cloud contestants.
        (
            vec![
                (1, Cloud, Running),
                (2, Cloud, Queued),
                (3, Cloud, Queued),
                (4, Cloud, Queued),
            ],
            1,
            Some(3),
            vec![2, 3],
        ),
        // Cloud cap already full (or over-full).
        (
            vec![(1, Cloud, Running), (2, Cloud, Running), (3, Cloud, Queued)],
            1,
            Some(1),
            vec![],
        ),
        (vec![(1, Cloud, Queued)], 1, Some(0), vec![]),
        // Finished contestants free their slots.
        (
            vec![
                (1, Local, Done),
                (2, Local, Error),
                (3, Local, Cancelled),
                (4, Local, Queued),
            ],
            1,
            Some(1),
            vec![4],
        ),
        // Lanes do not share capacity; output keeps creation order.
        (
            vec![
                (5, Cloud, Queued),
                (1, Local, Queued),
                (9, Cloud, Queued),
                (2, Local, Queued),
            ],
            1,
            Some(1),
            vec![5, 1],
        ),
    ];
    for (rows, local_capacity, cloud_capacity, expected) in cases {
        assert_eq!(
            dispatch_now(&rows, local_capacity, cloud_capacity),
            expected,
            "{rows:?} local={local_capacity} cloud={cloud_capacity:?}"
        );
    }
}

#[test]
fn dispatch_now_agrees_with_next_local_contestant() {
    let rows = vec![
        ("x".to_string(), Cloud, Queued),
        ("y".to_string(), Local, Queued),
        ("z".to_string(), Local, Queued),
    ];
    let started = dispatch_now(&rows, 1, None);
    assert!(started.contains(&next_local_contestant(&rows).unwrap()));
}

#[test]
fn is_battle_complete_table() {
    let cases: Vec<(Vec<ContestantStatus>, bool)> = vec![
        (vec![], false),
        (vec![Done], true),
        (vec![Error], true),
        (vec![Done, Error, Done], true),
        (vec![Done, Running], false),
        (vec![Queued, Done], false),
        (vec![Done, Cancelled], false),
    ];
    for (statuses, expected) in cases {
        assert_eq!(is_battle_complete(&statuses), expected, "{statuses:?}");
    }
}

#[test]
fn the_driver_lane_is_the_stores_and_never_held_back() {
    // One type for the store, the task worker and the arena.
    let lane: coderig::task::Lane = Lane::Driver;
    assert_eq!(Lane::NAMES, ["local", "cloud", "driver"]);
    assert_eq!("driver".parse::<Lane>(), Ok(lane));
    assert!(Local.takes_capacity() && Cloud.takes_capacity());
    assert!(!Lane::Driver.takes_capacity());
    // No contestant is ever classified into it...
    for battle_type in BattleType::ALL {
        assert_ne!(classify_lane(*battle_type, "a", "m", &["m"]), Lane::Driver);
    }
    // ...and a row in it is never held back by the arena's capacities.
    let rows = [
        ("c1", Cloud, Running),
        ("d1", Lane::Driver, Queued),
        ("c2", Cloud, Queued),
        ("d2", Lane::Driver, Queued),
    ];
    assert_eq!(dispatch_now(&rows, 0, Some(1)), ["d1", "d2"]);
}
