//! The native agent's records on disk: the whole transcript
//! (`transcript.jsonl`: a start record, every message, every request's
//! shaping, every refusal for length) and each tool output cut for the
//! model (`outputs/<call id>.txt`), in the turn's artifacts directory.

use super::Message;
use serde_json::{json, Value};
use std::io::Write;
use std::path::PathBuf;

/// The turn's transcript and cut outputs on disk, when the turn has an
/// artifacts directory. Writing is best effort: a full disk does not
/// fail the turn.
pub(super) struct Transcript {
    dir: Option<PathBuf>,
    file: Option<std::fs::File>,
}

impl Transcript {
    pub(super) fn open(dir: Option<&std::path::Path>) -> Self {
        let Some(dir) = dir else {
            return Transcript {
                dir: None,
                file: None,
            };
        };
        let file = std::fs::create_dir_all(dir).ok().and_then(|_| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(dir.join("transcript.jsonl"))
                .ok()
        });
        Transcript {
            dir: Some(dir.to_path_buf()),
            file,
        }
    }

    pub(super) fn write(&mut self, v: &Value) {
        if let Some(f) = &mut self.file {
            let _ = writeln!(f, "{v}");
        }
    }

    pub(super) fn message(&mut self, m: &Message) {
        let v = serde_json::to_value(m).unwrap_or(Value::Null);
        self.write(&json!({"type": "message", "message": v}));
    }

    pub(super) fn output(&mut self, call_id: &str, full: &str) {
        let Some(dir) = &self.dir else { return };
        let dir = dir.join("outputs");
        let safe: String = call_id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if std::fs::create_dir_all(&dir).is_ok() {
            let _ = std::fs::write(dir.join(format!("{safe}.txt")), full);
        }
    }
}
