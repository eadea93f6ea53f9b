//! Tool definitions as a model reads them: the schemas without what only a validator uses.
//!
//! A client sends every listed tool to the model on every turn. The generated schemas carry a
//! `$schema` URL, number formats (`double`, `uint`), patterns and, in the output schemas, a
//! sentence and examples for every field of every result; none of it changes what the model sends, and together they were
//! about half of the list. Input fields keep their descriptions (that is how a model learns
//! what to send); output fields keep their names and types, which clients validate results
//! against.

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool};
use serde_json::Value;

/// `tool` with its schemas trimmed.
pub fn tool(mut tool: Tool) -> Tool {
    let mut input = (*tool.input_schema).clone();
    // The input type's own sentence ("Parameters of …") repeats the tool's description.
    input.remove("description");
    trim(&mut input, false, 0);
    tool.input_schema = Arc::new(input);
    if let Some(output) = tool.output_schema.take() {
        let mut output = (*output).clone();
        trim(&mut output, true, 0);
        tool.output_schema = Some(Arc::new(output));
    }
    tool
}

/// How deep an output schema names fields: a result's own fields, each with its type (a list
/// with the type of its items). What a field's record holds is left to the tool's description:
/// a run's plan or a lesson's figures spelt out again in every tool that answers them cost a
/// model thousands of tokens on every turn, and a client validating a result loses nothing it
/// checks.
const OUTPUT_DEPTH: usize = 1;

/// Trims one schema node and the schemas inside it; `prose` drops descriptions too (and, in
/// an output, what lies below [`OUTPUT_DEPTH`] fields down).
fn trim(node: &mut JsonObject, prose: bool, depth: usize) {
    node.remove("$schema");
    node.remove("format");
    // A skill path's pattern is for a validator; the field's description says `domain/skill`.
    node.remove("pattern");
    if prose {
        node.remove("description");
        node.remove("title");
        node.remove("examples");
        if depth >= OUTPUT_DEPTH {
            node.retain(|key, _| matches!(key.as_str(), "type" | "$ref" | "items"));
            if let Some(items) = node.get_mut("items") {
                trim_value(items, prose, depth);
            }
            return;
        }
    }
    if let Some(Value::Object(children)) = node.get_mut("properties") {
        for child in children.values_mut() {
            trim_value(child, prose, depth + 1);
        }
    }
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(children)) = node.get_mut(key) {
            for child in children.values_mut() {
                trim_value(child, prose, 0);
            }
        }
    }
    for key in ["items", "additionalProperties", "not"] {
        if let Some(child) = node.get_mut(key) {
            trim_value(child, prose, depth);
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(children)) = node.get_mut(key) {
            for child in children {
                trim_value(child, prose, depth);
            }
        }
    }
}

fn trim_value(value: &mut Value, prose: bool, depth: usize) {
    if let Value::Object(node) = value {
        trim(node, prose, depth);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_names_its_own_fields_and_not_those_of_the_records_inside() {
        let output = serde_json::json!({
            "type": "object",
            "required": ["run"],
            "properties": {
                "run": {"type": "object", "required": ["plan"], "properties": {
                    "plan": {"type": "object", "properties": {"epochs": {"type": "integer"}}}}},
                "runs": {"type": "array", "items": {"type": "object", "properties": {
                    "id": {"type": "string"}}}},
                "status": {"type": "string", "enum": ["running", "finished"]}
            }
        });
        let Value::Object(output) = output else {
            unreachable!()
        };
        let input = Arc::new(JsonObject::new());
        let trimmed = tool(Tool::new("t", "d", input).with_raw_output_schema(Arc::new(output)));
        assert_eq!(
            Value::Object((*trimmed.output_schema.unwrap()).clone()),
            serde_json::json!({
                "type": "object",
                "required": ["run"],
                "properties": {
                    "run": {"type": "object"},
                    "runs": {"type": "array", "items": {"type": "object"}},
                    "status": {"type": "string"}
                }
            })
        );
    }

    #[test]
    fn a_field_named_description_survives_and_prose_goes_from_outputs_only() {
        let schema = |v: Value| match v {
            Value::Object(o) => o,
            _ => unreachable!(),
        };
        let input = schema(serde_json::json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "description": "Parameters of t.",
            "properties": {
                "limit": {"type": "integer", "format": "uint", "description": "How many."},
                "skill": {"type": "string", "pattern": "^a/b$", "examples": ["a/b"]}
            }
        }));
        let output = schema(serde_json::json!({
            "type": "object",
            "description": "A result.",
            "properties": {
                "description": {"type": "string", "description": "The text."},
                "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}}
            },
            "$defs": {"Item": {"type": "object", "description": "One.", "properties": {
                "score": {"type": "number", "format": "double"}}}}
        }));
        let trimmed = tool(Tool::new("t", "d", input).with_raw_output_schema(Arc::new(output)));
        let input = Value::Object((*trimmed.input_schema).clone());
        assert_eq!(
            input,
            serde_json::json!({"type": "object", "properties": {
                "limit": {"type": "integer", "description": "How many."},
                "skill": {"type": "string", "examples": ["a/b"]}}})
        );
        let output = Value::Object((*trimmed.output_schema.unwrap()).clone());
        assert_eq!(
            output,
            serde_json::json!({
                "type": "object",
                "properties": {
                    "description": {"type": "string"},
                    "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}}
                },
                "$defs": {"Item": {"type": "object", "properties": {"score": {"type": "number"}}}}
            })
        );
    }
}
