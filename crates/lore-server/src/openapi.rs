//! `/v1/openapi.json`: the API described for people and code generators.
//!
//! The catalogue's operations are written into the document from their definitions (their
//! summary, role, input and output schemas, see [`crate::catalogue`]); the operations not in
//! the catalogue yet, and the components describing the core's records, are kept by hand in
//! `openapi.json` beside this file. What keeps the whole true is a test, not a macro:
//! `openapi_document_matches_the_router` in `tests/it/rest.rs` checks that every route the
//! router serves is in the document and every operation in the document is served.

use std::sync::LazyLock;

use axum::Json;
use serde_json::{Map, Value, json};

use crate::catalogue::{self, Entry, Verb, schema};

pub use crate::catalogue::schema::WRITTEN;

static PARSED: LazyLock<Value> = LazyLock::new(|| {
    let mut document: Value = serde_json::from_str(WRITTEN).expect("openapi.json is valid JSON");
    for entry in catalogue::entries() {
        let Some(rest) = entry.rest else { continue };
        let item = document["paths"]
            .as_object_mut()
            .expect("openapi.json has paths")
            .entry(rest.path)
            .or_insert_with(|| json!({}));
        item[rest.verb.method().as_str().to_ascii_lowercase()] = operation(entry, rest.verb);
    }
    document
});

/// The OpenAPI document.
pub fn parsed() -> &'static Value {
    &PARSED
}

pub(crate) async fn document() -> Json<Value> {
    Json(parsed().clone())
}

/// `entry`'s operation: the input's fields named in the path as path parameters, the others as
/// a `GET`'s query parameters or any other method's JSON body.
fn operation(entry: &Entry, verb: Verb) -> Value {
    let mut input = (entry.input_schema)();
    let rest = entry.rest.expect("an operation with a REST door");
    let mut op = Map::new();
    op.insert("operationId".into(), json!(entry.operation_id()));
    op.insert("summary".into(), json!(entry.summary));
    op.insert("x-role".into(), json!(entry.role.name()));
    if let Some(tool) = entry.tool {
        op.insert("x-mcp-tool".into(), json!(tool.name));
    }
    let in_path = |name: &str| rest.path.contains(&format!("{{{name}}}"));
    let mut parameters: Vec<Value> = schema::properties(&input)
        .into_iter()
        .filter(|(name, _, _)| in_path(name))
        .map(|(name, schema, _)| json!({"name": name, "in": "path", "required": true, "schema": schema}))
        .collect();
    // `get_mut`, not indexing: `value["key"]` on an object inserts a null where the key is
    // missing, and `"required": null` is not a schema.
    if let Some(fields) = input.get_mut("properties").and_then(Value::as_object_mut) {
        fields.retain(|name, _| !in_path(name));
    }
    if let Some(required) = input.get_mut("required").and_then(Value::as_array_mut) {
        required.retain(|name| !name.as_str().is_some_and(in_path));
    }
    let in_query = |name: &str| verb == Verb::Get || entry.query.contains(&name);
    parameters.extend(
        schema::properties(&input)
            .into_iter()
            .filter(|(name, _, _)| in_query(name))
            .map(|(name, mut schema, required)| {
                let description = schema.as_object_mut().and_then(|s| s.remove("description"));
                let mut parameter = json!({"name": name, "in": "query", "schema": schema});
                if required {
                    parameter["required"] = json!(true);
                }
                if let Some(description) = description {
                    parameter["description"] = description;
                }
                parameter
            }),
    );
    if verb != Verb::Get {
        let body = match entry.body {
            Some(field) => input["properties"][field].take(),
            None => {
                if let Some(fields) = input.get_mut("properties").and_then(Value::as_object_mut) {
                    fields.retain(|name, _| !in_query(name));
                }
                if let Some(required) = input.get_mut("required").and_then(Value::as_array_mut) {
                    required.retain(|name| !name.as_str().is_some_and(in_query));
                }
                input
            }
        };
        let mut content = json!({"application/json": {}});
        if entry.text_body {
            content["application/x-ndjson"] =
                json!({"schema": {"type": "string", "description": "One JSON object a line."}});
        }
        // A call on one record named in the path may send no body when nothing in it is
        // required (a retirement's reason).
        let required =
            !rest.path.contains('{') || body["required"].as_array().is_some_and(|r| !r.is_empty());
        let mut content = content;
        content["application/json"]["schema"] = body;
        op.insert(
            "requestBody".into(),
            json!({"required": required, "content": content}),
        );
    }
    if !parameters.is_empty() {
        op.insert("parameters".into(), json!(parameters));
    }
    let content: Map<String, Value> = if entry.documents.is_empty() {
        let schema = json!({"schema": (entry.output_schema)()});
        std::iter::once(("application/json".to_owned(), schema)).collect()
    } else {
        let kind = |media: &str| {
            if media.ends_with("json") {
                "object"
            } else {
                "string"
            }
        };
        (entry.documents.iter())
            .map(|media| media.split(';').next().unwrap_or(media).trim())
            .map(|media| (media.to_owned(), json!({"schema": {"type": kind(media)}})))
            .collect()
    };
    let mut responses = Map::new();
    for status in std::iter::once(&rest.status).chain(entry.also) {
        let answer = json!({"description": entry.answer, "content": content});
        responses.insert(status.as_str().to_owned(), answer);
    }
    responses.insert(
        "default".into(),
        json!({"$ref": "#/components/responses/Error"}),
    );
    op.insert("responses".into(), Value::Object(responses));
    Value::Object(op)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_catalogue_operation_is_written_from_its_definition() {
        let decisions = &parsed()["paths"]["/v1/decisions"];
        let record = &decisions["post"];
        assert_eq!(record["operationId"], "recordDecision");
        assert_eq!(record["x-role"], "reviewer");
        let body = &record["requestBody"]["content"]["application/json"]["schema"];
        assert_eq!(body["additionalProperties"], false, "{body}");
        assert!(body["properties"]["situation"].is_object(), "{body}");
        let stored = &record["responses"]["201"]["content"]["application/json"]["schema"];
        assert!(stored["properties"]["decided_by"].is_object(), "{stored}");
        let list = &decisions["get"];
        let names: Vec<&str> = list["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["skill", "status", "limit", "offset"]);
        // A path's segment is a path parameter, and the body holds the rest.
        let propagate = &parsed()["paths"]["/v1/lessons/{id}/propagate"]["post"];
        assert_eq!(propagate["parameters"][0]["in"], "path", "{propagate}");
        let body = &propagate["requestBody"]["content"]["application/json"]["schema"];
        assert!(body["properties"]["id"].is_null(), "{body}");
        assert!(body["properties"]["strategy"].is_object(), "{body}");
        // Every `required` is a list of names (an input with none says nothing).
        for (path, item) in parsed()["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                let body = &op["requestBody"]["content"]["application/json"]["schema"];
                let required = body.get("required");
                assert!(
                    required.is_none_or(Value::is_array),
                    "{method} {path}: required is {required:?}"
                );
            }
        }
        // A body that is one record is described by that record's component, to its parts.
        let episode = &parsed()["paths"]["/v1/episodes"]["post"];
        let body = &episode["requestBody"]["content"]["application/json"]["schema"];
        assert_eq!(body["additionalProperties"], false, "{body}");
        let required = body["required"].as_array().unwrap();
        assert!(required.contains(&json!("task")), "{body}");
        let decision = &body["properties"]["decisions"]["items"]["properties"];
        assert!(decision["chosen"].is_object(), "{body}");
        // A replaced episode answers 200 where a new one answers 201: both are promised.
        for status in ["200", "201"] {
            let answer = &episode["responses"][status]["content"]["application/json"]["schema"];
            assert!(
                answer["properties"]["replaced"].is_object(),
                "{status}: {episode}"
            );
        }
        // What stays hand-kept is still there.
        assert!(parsed()["paths"]["/v1/executions"]["post"].is_object());
    }
}
