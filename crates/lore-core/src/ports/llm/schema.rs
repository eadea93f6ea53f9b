//! A small JSON Schema validator: the subset that skill outputs and lesson proposals use.
//!
//! Supported keywords: `type` (a name or a list of names), `enum`, `const`, `required`,
//! `properties`, `additionalProperties: false`, `items`, `minimum`, `maximum`, `minLength`,
//! `minItems`. Unknown keywords are ignored, as the specification asks, so a richer schema still
//! checks the parts this validator knows. A full validator crate would cost more compile time
//! than every other dependency of the core together, for keywords no skill here uses.

use serde_json::{Map, Value};

/// Checks `value` against `schema`.
///
/// # Errors
/// Every violation found, each as `path: what is wrong` (`$` is the root).
pub fn validate(schema: &Value, value: &Value) -> Result<(), Vec<String>> {
    let mut errors = Vec::new();
    check(schema, value, "$", &mut errors);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

fn check(schema: &Value, value: &Value, path: &str, errors: &mut Vec<String>) {
    let Some(schema) = schema.as_object() else {
        return;
    };
    if let Some(expected) = schema.get("type")
        && !type_matches(expected, value)
    {
        errors.push(format!(
            "{path}: expected {}, got {}",
            type_names(expected),
            type_of(value)
        ));
        return;
    }
    if let Some(Value::Array(allowed)) = schema.get("enum")
        && !allowed.contains(value)
    {
        errors.push(format!(
            "{path}: {value} is not one of {}",
            Value::from(allowed.clone())
        ));
    }
    if let Some(constant) = schema.get("const")
        && constant != value
    {
        errors.push(format!("{path}: expected {constant}, got {value}"));
    }
    check_number(schema, value, path, errors);
    check_length(schema, value, path, errors);
    match value {
        Value::Object(object) => check_object(schema, object, path, errors),
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    check(item_schema, item, &format!("{path}[{i}]"), errors);
                }
            }
        }
        _ => {}
    }
}

fn check_object(
    schema: &Map<String, Value>,
    object: &Map<String, Value>,
    path: &str,
    errors: &mut Vec<String>,
) {
    if let Some(Value::Array(required)) = schema.get("required") {
        for name in required.iter().filter_map(Value::as_str) {
            if !object.contains_key(name) {
                errors.push(format!("{path}: missing required field {name:?}"));
            }
        }
    }
    let properties = schema.get("properties").and_then(Value::as_object);
    for (name, field) in object {
        let field_path = format!("{path}.{name}");
        match properties.and_then(|p| p.get(name)) {
            Some(field_schema) => check(field_schema, field, &field_path, errors),
            None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                errors.push(format!("{field_path}: unexpected field"));
            }
            None => {}
        }
    }
}

fn check_number(schema: &Map<String, Value>, value: &Value, path: &str, errors: &mut Vec<String>) {
    let Some(n) = value.as_f64() else { return };
    if let Some(min) = schema.get("minimum").and_then(Value::as_f64)
        && n < min
    {
        errors.push(format!("{path}: {n} is below the minimum {min}"));
    }
    if let Some(max) = schema.get("maximum").and_then(Value::as_f64)
        && n > max
    {
        errors.push(format!("{path}: {n} is above the maximum {max}"));
    }
}

fn check_length(schema: &Map<String, Value>, value: &Value, path: &str, errors: &mut Vec<String>) {
    let (len, key) = match value {
        Value::String(s) => (s.chars().count(), "minLength"),
        Value::Array(a) => (a.len(), "minItems"),
        _ => return,
    };
    if let Some(min) = schema.get(key).and_then(Value::as_u64)
        && (len as u64) < min
    {
        errors.push(format!("{path}: length {len} is below {key} {min}"));
    }
}

fn type_matches(expected: &Value, value: &Value) -> bool {
    match expected {
        Value::String(name) => is_type(name, value),
        Value::Array(names) => names
            .iter()
            .filter_map(Value::as_str)
            .any(|name| is_type(name, value)),
        _ => true,
    }
}

fn is_type(name: &str, value: &Value) -> bool {
    match name {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "number" => value.is_number(),
        "integer" => {
            value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => true,
    }
}

fn type_names(expected: &Value) -> String {
    match expected {
        Value::Array(names) => names
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" or "),
        other => other.as_str().unwrap_or("?").to_owned(),
    }
}

fn type_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn screen() -> Value {
        json!({
            "type": "object",
            "required": ["overall_score", "recommendation"],
            "additionalProperties": false,
            "properties": {
                "overall_score": {"type": "integer", "minimum": 0, "maximum": 100},
                "recommendation": {"enum": ["reject", "proceed_to_interview"]},
                "notes": {"type": "array", "items": {"type": "string", "minLength": 1}}
            }
        })
    }

    #[test]
    fn a_matching_value_passes() {
        let v = json!({"overall_score": 55, "recommendation": "reject", "notes": ["ok"]});
        assert_eq!(validate(&screen(), &v), Ok(()));
    }

    #[test]
    fn every_violation_is_reported_with_its_path() {
        let v = json!({"overall_score": 120, "recommendation": "maybe", "notes": [""], "x": 1});
        let errors = validate(&screen(), &v).unwrap_err();
        let all = errors.join("\n");
        for needle in [
            "$.overall_score: 120 is above the maximum 100",
            "$.recommendation: \"maybe\" is not one of",
            "$.notes[0]: length 0 is below minLength 1",
            "$.x: unexpected field",
        ] {
            assert!(all.contains(needle), "{needle} not in\n{all}");
        }
    }

    #[test]
    fn missing_fields_and_wrong_types_are_reported() {
        let errors = validate(&screen(), &json!({"overall_score": "high"})).unwrap_err();
        assert!(
            errors
                .iter()
                .any(|e| e.contains("missing required field \"recommendation\""))
        );
        assert!(
            errors
                .iter()
                .any(|e| e == "$.overall_score: expected integer, got string")
        );
        assert!(validate(&screen(), &json!([1])).is_err());
    }

    #[test]
    fn type_lists_and_unknown_keywords() {
        let schema = json!({"type": ["string", "null"], "format": "email"});
        assert_eq!(validate(&schema, &Value::Null), Ok(()));
        assert!(validate(&schema, &json!(3)).is_err());
        assert_eq!(validate(&json!({"type": "integer"}), &json!(3.0)), Ok(()));
        assert!(validate(&json!({"type": "integer"}), &json!(3.5)).is_err());
    }
}
