//! Holds a JSON value against a schema of the server's OpenAPI document:
//! the JSON Schema keywords the document uses (`$ref` into
//! `components/schemas`, `type`, `enum`, `required`, `properties`,
//! `additionalProperties`, `items`, `minItems`/`maxItems`,
//! `minimum`/`maximum`/`exclusiveMinimum`,
//! `minLength`/`maxLength`, `pattern`, `maxProperties`, `allOf`/`anyOf`/
//! `oneOf`, and `contentMediaType: application/json` with
//! `contentSchema`). A keyword it does not know fails the check, so a
//! schema the document gains is not passed unread.

use serde_json::Value;

/// Every way `value` breaks `schema` (empty: it conforms), each with the
/// JSON pointer of the part at fault. `doc` is the document `$ref`s
/// resolve in.
pub fn violations(doc: &Value, schema: &Value, value: &Value) -> Vec<String> {
    let mut out = Vec::new();
    check(doc, schema, value, "", &mut out);
    out
}

/// Panics with every violation unless `value` conforms to the component
/// `name` of `doc`.
pub fn assert_conforms(doc: &Value, name: &str, value: &Value) {
    let schema = serde_json::json!({"$ref": format!("#/components/schemas/{name}")});
    let found = violations(doc, &schema, value);
    assert!(found.is_empty(), "{value} breaks {name}: {found:#?}");
}

const ANNOTATIONS: &[&str] = &[
    "description",
    "title",
    "format",
    "examples",
    "example",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
];

fn check(doc: &Value, schema: &Value, value: &Value, at: &str, out: &mut Vec<String>) {
    let Some(schema) = schema.as_object() else {
        if schema == &Value::Bool(false) {
            out.push(format!("{at}: nothing is allowed here"));
        }
        return;
    };
    for (key, rule) in schema {
        match key.as_str() {
            "$ref" => {
                let pointer = rule.as_str().unwrap().trim_start_matches('#');
                let target = doc
                    .pointer(pointer)
                    .unwrap_or_else(|| panic!("dangling $ref {pointer}"));
                check(doc, target, value, at, out);
            }
            "type" => {
                let types: Vec<&str> = match rule {
                    Value::String(t) => vec![t.as_str()],
                    Value::Array(ts) => ts.iter().map(|t| t.as_str().unwrap()).collect(),
                    _ => panic!("bad type {rule}"),
                };
                if !types.iter().any(|t| is_type(value, t)) {
                    out.push(format!("{at}: {value} is not of type {rule}"));
                }
            }
            "enum" => {
                if !rule.as_array().unwrap().contains(value) {
                    out.push(format!("{at}: {value} is not one of {rule}"));
                }
            }
            "required" => {
                if let Value::Object(object) = value {
                    for name in rule.as_array().unwrap() {
                        if !object.contains_key(name.as_str().unwrap()) {
                            out.push(format!("{at}: `{name}` is required"));
                        }
                    }
                }
            }
            "properties" => {
                if let Value::Object(object) = value {
                    for (name, sub) in rule.as_object().unwrap() {
                        if let Some(v) = object.get(name) {
                            check(doc, sub, v, &format!("{at}/{name}"), out);
                        }
                    }
                }
            }
            "additionalProperties" => {
                if let Value::Object(object) = value {
                    let declared = schema.get("properties").and_then(Value::as_object);
                    for (name, v) in object {
                        if declared.is_some_and(|d| d.contains_key(name)) {
                            continue;
                        }
                        match rule {
                            Value::Bool(true) => {}
                            Value::Bool(false) => {
                                out.push(format!("{at}: `{name}` is not declared"))
                            }
                            sub => check(doc, sub, v, &format!("{at}/{name}"), out),
                        }
                    }
                }
            }
            "maxProperties" => {
                if let Value::Object(object) = value {
                    if object.len() as u64 > rule.as_u64().unwrap() {
                        out.push(format!("{at}: more than {rule} properties"));
                    }
                }
            }
            "items" => {
                if let Value::Array(items) = value {
                    for (i, item) in items.iter().enumerate() {
                        check(doc, rule, item, &format!("{at}/{i}"), out);
                    }
                }
            }
            "minItems" | "maxItems" => {
                if let Value::Array(items) = value {
                    let n = rule.as_u64().unwrap() as usize;
                    if (key == "minItems" && items.len() < n)
                        || (key == "maxItems" && items.len() > n)
                    {
                        out.push(format!("{at}: {} items breaks {key} {n}", items.len()));
                    }
                }
            }
            "minimum" | "maximum" | "exclusiveMinimum" => {
                if let Some(n) = value.as_f64() {
                    let bound = rule.as_f64().unwrap();
                    let broken = match key.as_str() {
                        "minimum" => n < bound,
                        "maximum" => n > bound,
                        _ => n <= bound,
                    };
                    if broken {
                        out.push(format!("{at}: {n} breaks {key} {bound}"));
                    }
                }
            }
            "minLength" | "maxLength" => {
                if let Value::String(text) = value {
                    let n = rule.as_u64().unwrap() as usize;
                    let len = text.chars().count();
                    if (key == "minLength" && len < n) || (key == "maxLength" && len > n) {
                        out.push(format!("{at}: {len} characters breaks {key} {n}"));
                    }
                }
            }
            "pattern" => {
                if let Value::String(text) = value {
                    let regex = regex::Regex::new(rule.as_str().unwrap()).unwrap();
                    if !regex.is_match(text) {
                        out.push(format!("{at}: {text:?} does not match {rule}"));
                    }
                }
            }
            "allOf" => {
                for sub in rule.as_array().unwrap() {
                    check(doc, sub, value, at, out);
                }
            }
            "anyOf" | "oneOf" => {
                let matching = rule
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|sub| violations_at(doc, sub, value, at).is_empty())
                    .count();
                if matching == 0 || (key == "oneOf" && matching > 1) {
                    let why: Vec<Vec<String>> = rule
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|sub| violations_at(doc, sub, value, at))
                        .collect();
                    out.push(format!(
                        "{at}: {matching} of the {key} variants match {value}: {why:?}"
                    ));
                }
            }
            "contentMediaType" => assert_eq!(rule, "application/json"),
            "contentSchema" => {
                if let Value::String(text) = value {
                    match serde_json::from_str::<Value>(text) {
                        Ok(parsed) => check(doc, rule, &parsed, &format!("{at}(json)"), out),
                        Err(e) => out.push(format!("{at}: not JSON ({e}): {text:?}")),
                    }
                }
            }
            known if ANNOTATIONS.contains(&known) => {}
            unknown => panic!("the schema checker does not know `{unknown}` (at {at})"),
        }
    }
}

fn violations_at(doc: &Value, schema: &Value, value: &Value, at: &str) -> Vec<String> {
    let mut out = Vec::new();
    check(doc, schema, value, at, &mut out);
    out
}

fn is_type(value: &Value, name: &str) -> bool {
    match name {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => {
            value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        other => panic!("unknown type {other}"),
    }
}
