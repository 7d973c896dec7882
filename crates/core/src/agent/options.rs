//! A turn's options as the faces take them (pure): one decoder, so
//! `coderig turn`, Python's `run_turn` and Node's `runTurn` accept the same
//! values and refuse bad ones with the same message.

use super::{Access, Turn};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Everything of a [`Turn`] but its prompt and model, decoded strictly
/// (`coderig::json::decode`: unknown keys refused, the JSON path of a bad
/// value in the message; `null` = not given). Durations are seconds or a
/// string with a unit (`"90s"`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TurnOptions {
    /// The directory the agent works in (default: the current one).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub workdir: Option<PathBuf>,
    /// What the agent may do: `read_only` (default), `edit` or `full`.
    #[serde(default)]
    pub access: Option<Access>,
    /// The turn's wall-clock limit (default: the agent's).
    #[serde(default, deserialize_with = "super::duration::deserialize_opt")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<crate::json::schema::DurationInput>))]
    pub timeout: Option<Duration>,
    /// The turn fails as hung when no event came for this long
    /// (default: the agent's).
    #[serde(default, deserialize_with = "super::duration::deserialize_opt")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<crate::json::schema::DurationInput>))]
    pub idle_timeout: Option<Duration>,
    /// A system prompt.
    #[serde(default)]
    pub system: Option<String>,
    /// Environment variables added for this turn.
    #[serde(default)]
    pub env: Option<BTreeMap<String, String>>,
    /// A directory for the turn's artifacts (the native agent's
    /// transcript and cut tool outputs).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub artifacts: Option<PathBuf>,
}

impl TurnOptions {
    /// Decodes options from a JSON object (`null` = no options).
    pub fn from_json(value: serde_json::Value) -> Result<TurnOptions, crate::Error> {
        if value.is_null() {
            return Ok(TurnOptions::default());
        }
        crate::json::decode_object(value)
    }

    /// The turn of `prompt` for `model` with these options.
    pub fn into_turn(self, prompt: impl Into<String>, model: Option<String>) -> Turn {
        let mut turn = Turn::new(prompt);
        turn.model = model.filter(|m| !m.is_empty());
        turn.workdir = self.workdir;
        turn.access = self.access.unwrap_or_default();
        turn.timeout = self.timeout;
        turn.idle_timeout = self.idle_timeout;
        turn.system = self.system;
        turn.env = self.env.unwrap_or_default();
        turn.artifacts = self.artifacts;
        turn
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn options_decode_strictly_with_paths() {
        let o = TurnOptions::from_json(json!({"workdir": "/w", "access": "edit", "timeout": 90, "idle_timeout": "500ms", "env": {"A": "1"}, "artifacts": "/a"})).unwrap();
        let turn = o.into_turn("p", Some("m".into()));
        assert_eq!(turn.artifacts, Some(PathBuf::from("/a")));
        assert_eq!(turn.access, Access::Edit);
        assert_eq!(turn.timeout, Some(Duration::from_secs(90)));
        assert_eq!(turn.idle_timeout, Some(Duration::from_millis(500)));
        assert_eq!(turn.env["A"], "1");
        assert_eq!(
            TurnOptions::from_json(json!(null)).unwrap(),
            TurnOptions::default()
        );
        assert_eq!(
            TurnOptions::from_json(json!({"access": null}))
                .unwrap()
                .access,
            None
        );
        for (bad, words) in [
            (json!({"access": "root"}), "access"),
            (json!({"timeout": "soon"}), "timeout"),
            (json!({"idle_timeout": -1}), "idle_timeout"),
            (
                json!({"timeout": true}),
                "`timeout`: invalid type: a boolean, expected a number of seconds",
            ),
            (json!({"timeout": [1]}), "`timeout`: invalid type: an array"),
            (json!({"colour": 1}), "colour"),
            (json!([1]), "object"),
        ] {
            let e = TurnOptions::from_json(bad.clone()).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::InvalidInput);
            assert!(e.message().contains(words), "{bad}: {}", e.message());
        }
    }
}
