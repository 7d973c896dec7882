//! The JSON Schemas of what a face's runtime calls take (feature
//! `openapi`): a battle spec, a flow spec, the filters of the lists of
//! battles and runs and of the leaderboard, an agent's table (the `agents`
//! of a `Rig`, `[agents.<identity>]` of `coderig.toml`), a turn's options,
//! an approval's decision, a `Rig`'s own options and those of its
//! `agents()` — every input a `Rig`
//! of Python and Node and the server decode through the core.
//!
//! Each schema says what the core's decoder accepts ([`BattleSpec::from_json`],
//! [`FlowSpec::from_json`], serde's strict decoding of the filters): the
//! server names them as its request bodies and query parameters, and
//! [`schemas`] is checked in as `tests/schemas/inputs.json` (the core's test
//! `face_views` fails when it differs, and rewrites it with
//! `CODERIG_WRITE_SCHEMAS=1`), from which Node generates its TypeScript
//! input types. Unlike the views, an optional field here may also be given
//! as `null` ("not given").

use super::views::root;
use crate::agent::config::AgentSpec;
use crate::agent::{AgentsOptions, TurnOptions};
use crate::arena::runner::{BattleFilter, LeaderboardFilter};
use crate::arena::BattleSpec;
use crate::flow::engine::{Decision, RunFilter};
use crate::flow::FlowSpec;
use crate::rig::RigOptions;
use serde_json::{Map, Value};
use utoipa::openapi::schema::Schema;
use utoipa::openapi::RefOr;

/// Every schema the faces' runtime inputs are made of, by its name: the
/// roots and every schema they refer to (`$ref`s are
/// `#/components/schemas/<name>`, as in the server's document), in name
/// order.
pub fn schemas() -> Map<String, Value> {
    let mut found: Vec<(String, RefOr<Schema>)> = Vec::new();
    root::<BattleSpec>(&mut found);
    root::<FlowSpec>(&mut found);
    root::<BattleFilter>(&mut found);
    root::<RunFilter>(&mut found);
    root::<LeaderboardFilter>(&mut found);
    root::<AgentSpec>(&mut found);
    root::<TurnOptions>(&mut found);
    root::<Decision>(&mut found);
    root::<RigOptions>(&mut found);
    root::<AgentsOptions>(&mut found);
    let mut out = Map::new();
    for (name, schema) in found {
        out.insert(name, serde_json::to_value(&schema).unwrap_or(Value::Null));
    }
    out.sort_keys();
    out
}
