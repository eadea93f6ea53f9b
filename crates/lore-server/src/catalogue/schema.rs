//! The catalogue's schemas: schemars describes each operation's input and output, and the
//! records the core defines (which carry no schemars derive) are described by the OpenAPI
//! document's component of the same name, so each shape has one description for every door.

use std::borrow::Cow;
use std::marker::PhantomData;
use std::sync::LazyLock;

use lore_core::SkillPath;
use lore_core::model::{DecisionRecord, LessonStatus};
use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::{Map, Value};

/// The hand-kept part of the OpenAPI document, whose components describe the core's records.
/// The hand-kept part of the document, as shipped.
pub const WRITTEN: &str = include_str!("../openapi.json");

static PARSED: LazyLock<Value> =
    LazyLock::new(|| serde_json::from_str(WRITTEN).expect("openapi.json is valid JSON"));

/// A core type described by the document's component [`Component::NAME`].
pub trait Component {
    /// The component's name under `#/components/schemas`.
    const NAME: &'static str;
}

impl Component for SkillPath {
    const NAME: &'static str = "SkillPath";
}

impl Component for LessonStatus {
    const NAME: &'static str = "LessonStatus";
}

impl Component for DecisionRecord {
    const NAME: &'static str = "DecisionRecord";
}

/// `T`'s schema, for a field of type `T`: `#[schemars(with = "Documented<T>")]`.
#[derive(Debug)]
pub struct Documented<T>(PhantomData<T>);

impl<T: Component> JsonSchema for Documented<T> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed(T::NAME)
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let body = component(T::NAME);
        Schema::try_from(body).unwrap_or_else(|_| Schema::default())
    }
}

/// A core record answered whole, described by its component: an operation's output when it
/// is one record as the core defines it.
#[derive(Debug, serde::Serialize)]
#[serde(transparent)]
pub struct Described<T>(pub T);

impl<T: Component> JsonSchema for Described<T> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed(T::NAME)
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        Documented::<T>::json_schema(generator)
    }
}

/// The component `name` with every `$ref` inside it replaced by what it names.
///
/// # Panics
/// When the document lacks it: a catalogue type names a component that is not there, which
/// the catalogue's tests meet at once.
pub fn component(name: &str) -> Value {
    let found = PARSED["components"]["schemas"]
        .get(name)
        .unwrap_or_else(|| panic!("openapi.json has no component {name}"));
    let mut body = found.clone();
    resolve(&mut body, 0);
    body
}

fn resolve(node: &mut Value, depth: usize) {
    assert!(
        depth < 32,
        "openapi.json's components refer to each other in a circle"
    );
    match node {
        Value::Object(map) => {
            if let Some(Value::String(target)) = map.get("$ref")
                && let Some(name) = target.strip_prefix("#/components/schemas/")
            {
                let mut body = PARSED["components"]["schemas"][name].clone();
                resolve(&mut body, depth + 1);
                map.remove("$ref");
                if let Value::Object(fields) = body {
                    for (k, v) in fields {
                        map.entry(k).or_insert(v);
                    }
                }
            }
            for child in map.values_mut() {
                resolve(child, depth + 1);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| resolve(v, depth + 1)),
        _ => {}
    }
}

fn settings() -> SchemaSettings {
    SchemaSettings::draft2020_12().with(|s| s.inline_subschemas = true)
}

/// What a caller may send as `T`.
pub fn input<T: JsonSchema>() -> Value {
    bare(
        settings()
            .for_deserialize()
            .into_generator()
            .into_root_schema_for::<T>(),
    )
}

/// What a caller gets as `T`.
pub fn output<T: JsonSchema>() -> Value {
    bare(
        settings()
            .for_serialize()
            .into_generator()
            .into_root_schema_for::<T>(),
    )
}

/// The schema without its `$schema` URL and the Rust type's name as a title.
fn bare(schema: Schema) -> Value {
    let mut value = schema.to_value();
    if let Value::Object(map) = &mut value {
        map.remove("$schema");
        map.remove("title");
    }
    value
}

/// The properties of an object schema, with whether each is required, in the order written.
pub fn properties(schema: &Value) -> Vec<(String, Value, bool)> {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    schema["properties"]
        .as_object()
        .unwrap_or(&Map::new())
        .iter()
        .map(|(k, v)| (k.clone(), v.clone(), required.contains(&k.as_str())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Probe {
        #[schemars(with = "Option<Documented<SkillPath>>")]
        skill: Option<SkillPath>,
        #[schemars(with = "Vec<Documented<DecisionRecord>>")]
        decisions: Vec<DecisionRecord>,
    }

    #[test]
    fn a_core_record_is_described_by_its_component_with_nothing_left_to_look_up() {
        let schema = output::<Probe>();
        let text = schema.to_string();
        assert!(!text.contains("$ref") && !text.contains("$defs"), "{text}");
        let record = &schema["properties"]["decisions"]["items"];
        assert_eq!(
            record["properties"]["status"]["enum"][0], "needs_review",
            "{record}"
        );
        assert!(
            record["properties"]["skill"]["pattern"].is_string(),
            "{record}"
        );
        let skill = &input::<Probe>()["properties"]["skill"];
        assert!(skill["pattern"].is_string(), "{skill}");
    }
}
