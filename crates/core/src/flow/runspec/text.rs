//! The text forms of a flow spec: JSON and YAML text, and files.

use super::FlowSpec;
use crate::error::Error;
use serde_json::Value;
use std::path::Path;

impl FlowSpec {
    /// Decodes a flow spec from JSON text (a syntax error is an
    /// `invalid_input` naming its line and column).
    pub fn from_json_str(text: &str) -> Result<FlowSpec, Error> {
        let value: Value = serde_json::from_str(text).map_err(|e| {
            Error::invalid_input(format!("the flow spec is not valid JSON: {e}"))
                .with_detail("path", ".")
                .with_detail("line", e.line())
                .with_detail("column", e.column())
        })?;
        FlowSpec::from_json(&value)
    }

    /// Decodes a flow spec from YAML text: the YAML is read as a JSON value
    /// (YAML 1.2: `on`, `yes` are strings), then [`FlowSpec::from_json`]
    /// checks it. A syntax error is an `invalid_input` naming its line and
    /// column.
    pub fn from_yaml_str(text: &str) -> Result<FlowSpec, Error> {
        let value: Value = serde_norway::from_str(text).map_err(|e| {
            let mut err = Error::invalid_input(format!("the flow spec is not valid YAML: {e}"))
                .with_detail("path", ".");
            if let Some(at) = e.location() {
                err = err
                    .with_detail("line", at.line())
                    .with_detail("column", at.column());
            }
            err
        })?;
        FlowSpec::from_json(&value)
    }

    /// Decodes JSON when the first non-blank character is `{`, YAML otherwise.
    pub fn parse(text: &str) -> Result<FlowSpec, Error> {
        if text.trim_start().starts_with('{') {
            FlowSpec::from_json_str(text)
        } else {
            FlowSpec::from_yaml_str(text)
        }
    }

    /// Reads a `.json`, `.yaml` or `.yml` file. A file that cannot be read
    /// is an `io` error; another extension is `invalid_input`.
    pub fn load(path: &Path) -> Result<FlowSpec, Error> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        let shown = path.display().to_string();
        if !matches!(ext.as_deref(), Some("json" | "yaml" | "yml")) {
            return Err(Error::invalid_input(format!(
                "{shown}: a flow spec file ends in .json, .yaml or .yml"
            ))
            .with_detail("file", shown));
        }
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::io(format!("reading {shown}: {e}")).with_detail("file", shown.as_str())
        })?;
        let spec = if ext.as_deref() == Some("json") {
            FlowSpec::from_json_str(&text)
        } else {
            FlowSpec::from_yaml_str(&text)
        };
        spec.map_err(|e| e.in_file(&shown))
    }
}
