//! CEL conditions and minijinja templates: compiling, and evaluating over
//! the JSON run context.

use crate::error::Error;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// The variables a condition always sees, with their value when the
/// context lacks them (so `size(results)` works before any step finished).
const DEFAULT_VARIABLES: &[&str] = &["input", "results", "steps", "iteration"];

/// A template's work is bounded: a spec is untrusted input, and a
/// `{% for %}` over `range` inside another must not run for ever. Real
/// prompts over thousands of results stay far below.
const TEMPLATE_FUEL: u64 = 50_000_000;

/// A compiled CEL condition and where it was written.
pub(super) struct Cel {
    program: cel::Program,
    env: Arc<cel::Env>,
    /// The JSON path of the condition (`steps[3].condition`).
    pub(super) path: String,
}

impl Cel {
    /// Compiles `source`; the parser's message when it is no expression.
    pub(super) fn compile(env: &Arc<cel::Env>, source: &str, path: &str) -> Result<Cel, String> {
        let program = env.compile(source).map_err(|e| {
            let parts: Vec<String> = e
                .errors
                .iter()
                .map(|p| format!("{}:{}: {}", p.pos.0, p.pos.1, p.msg))
                .collect();
            if parts.is_empty() {
                "not a CEL expression".to_owned()
            } else {
                format!("bad CEL expression: {}", parts.join("; "))
            }
        })?;
        Ok(Cel {
            program,
            env: Arc::clone(env),
            path: path.to_owned(),
        })
    }

    /// Evaluates the condition over `ctx`. An evaluation error, or a value
    /// that is no bool, is an `invalid_input` naming the condition's path.
    pub(super) fn eval(&self, ctx: &Value) -> Result<bool, Error> {
        let mut context = cel::Context::with_env(Arc::clone(&self.env));
        if let Value::Object(vars) = ctx {
            for (name, value) in vars {
                context.add_variable_from_value(name.as_str(), to_cel(value));
            }
        }
        for name in DEFAULT_VARIABLES {
            let missing = ctx.get(name).is_none();
            if missing {
                let value = if *name == "iteration" {
                    cel::Value::Int(0)
                } else {
                    cel::Value::Map(cel::objects::Map {
                        map: Arc::new(HashMap::new()),
                    })
                };
                context.add_variable_from_value(*name, value);
            }
        }
        match self.program.execute(&context) {
            Ok(cel::Value::Bool(b)) => Ok(b),
            Ok(other) => Err(Error::invalid_at(
                &self.path,
                format!("evaluated to {}, expected a bool", cel_type(&other)),
            )),
            Err(e) => Err(Error::invalid_at(
                &self.path,
                format!("evaluation failed: {e}"),
            )),
        }
    }
}

/// The JSON value as CEL sees it: integers are `int` (beyond i64, `uint`,
/// beyond u64, `double`), other numbers `double`, objects maps with string
/// keys.
pub(super) fn to_cel(value: &Value) -> cel::Value {
    match value {
        Value::Null => cel::Value::Null,
        Value::Bool(b) => cel::Value::Bool(*b),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                cel::Value::Int(i)
            } else if let Some(u) = n.as_u64() {
                cel::Value::UInt(u)
            } else {
                cel::Value::Float(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        Value::String(s) => cel::Value::String(Arc::new(s.clone())),
        Value::Array(items) => cel::Value::List(Arc::new(items.iter().map(to_cel).collect())),
        Value::Object(map) => {
            let map: HashMap<cel::objects::Key, cel::Value> = map
                .iter()
                .map(|(k, v)| (cel::objects::Key::String(Arc::new(k.clone())), to_cel(v)))
                .collect();
            cel::Value::Map(cel::objects::Map { map: Arc::new(map) })
        }
    }
}

fn cel_type(value: &cel::Value) -> String {
    match value {
        cel::Value::List(_) => "a list".into(),
        cel::Value::Map(_) => "a map".into(),
        cel::Value::Int(_) => "an int".into(),
        cel::Value::UInt(_) => "a uint".into(),
        cel::Value::Float(_) => "a double".into(),
        cel::Value::String(_) => "a string".into(),
        cel::Value::Bytes(_) => "bytes".into(),
        cel::Value::Bool(_) => "a bool".into(),
        cel::Value::Null => "null".into(),
        other => format!("a {:?}", other.type_of()).to_lowercase(),
    }
}

/// The one template environment of a compiled flow: strict undefined (a
/// misspelt `results.tset` fails instead of rendering as nothing), no
/// auto-escape (prompts and commands are not HTML), bounded work.
pub(super) fn template_env() -> minijinja::Environment<'static> {
    let mut env = minijinja::Environment::new();
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
    env.set_fuel(Some(TEMPLATE_FUEL));
    env
}

/// Adds the template `source` under its JSON path; the parser's message
/// when it is no template.
pub(super) fn add_template(
    env: &mut minijinja::Environment<'static>,
    path: &str,
    source: &str,
) -> Result<(), String> {
    env.add_template_owned(path.to_owned(), source.to_owned())
        .map_err(|e| format!("bad template: {}", template_message(&e)))
}

/// Renders the template added under `path` over `ctx`. A failure (a strict
/// undefined, a type error, fuel) is an `invalid_input` naming `path` and,
/// when given, the step.
pub(super) fn render(
    env: &minijinja::Environment<'static>,
    path: &str,
    step: Option<&str>,
    ctx: &Value,
) -> Result<String, Error> {
    let rendered = env
        .get_template(path)
        .and_then(|t| t.render(minijinja::Value::from(minijinja::value::Serde(ctx))));
    rendered.map_err(|e| {
        let message = match step {
            Some(id) => format!("rendering step {id:?}: {}", template_message(&e)),
            None => format!("rendering: {}", template_message(&e)),
        };
        let mut err = Error::invalid_at(path, message);
        if let Some(id) = step {
            err = err.with_detail("step", id);
        }
        // `prompt`, `argv[0]`, `env.HOME`: the field within the step.
        let field = match path.strip_prefix("steps[") {
            Some(rest) => rest.split_once("].").map_or(path, |(_, f)| f),
            None => path,
        };
        err.with_detail("field", field)
    })
}

/// minijinja's kind and detail and the line, without the template's name
/// (the path says where).
fn template_message(e: &minijinja::Error) -> String {
    let mut text = match e.detail() {
        Some(detail) => format!("{}: {detail}", e.kind()),
        None => e.kind().to_string(),
    };
    if let Some(line) = e.line() {
        text.push_str(&format!(" (line {line})"));
    }
    text
}
