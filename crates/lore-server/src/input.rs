//! Input that does not parse, said as a sentence a person can act on.
//!
//! serde and the extractors around it describe a failure in their own terms ("invalid type:
//! string \"x\", expected usize at line 1 column 9", "missing field `skill`"): true, but written
//! for the author of a Rust type, not for whoever sent the request. Every door (REST bodies,
//! query strings, path segments, MCP tool arguments) deserializes through [`parse_json`],
//! [`parse_query`] or [`describe`], so each one names the field at fault and what it expects in
//! the same words: [`lore_core::wording`], which the Engine's readers use too. Query strings
//! are parsed here, the one format the core does not read.

use serde::de::DeserializeOwned;

pub use lore_core::wording::{
    Place, Refused, describe, describe_path, from_value, parse_json, parse_object, segments,
};

/// Parses a query string (without its `?`) into `T`.
///
/// # Errors
/// [`Refused::Invalid`] naming the parameter at fault and the value it was given.
pub fn parse_query<T: DeserializeOwned>(query: &str) -> Result<T, Refused> {
    let de = serde_urlencoded::Deserializer::new(form_urlencoded::parse(query.as_bytes()));
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = segments(e.path());
        let given = path.first().and_then(|name| {
            form_urlencoded::parse(query.as_bytes())
                .find(|(k, _)| k == name.as_str())
                .map(|(_, v)| v.into_owned())
        });
        Refused::Invalid(describe(
            Place::Query,
            &path,
            &e.inner().to_string(),
            given.as_deref(),
        ))
    })
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Record {
        skill: String,
        limit: Option<usize>,
        tags: Option<Vec<String>>,
        outcome: Option<Outcome>,
        cost: Option<f64>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "snake_case")]
    enum Outcome {
        Accepted,
        Rejected,
    }

    /// What serde says in its own words, which no answer may repeat.
    const LIBRARY: &[&str] = &[
        "invalid type",
        "missing field",
        "unknown field",
        "unknown variant",
        "expected usize",
        "expected f64",
        "invalid digit",
        "EOF while",
        "trailing characters",
        "deserializ",
    ];

    fn refused(body: &str) -> Refused {
        let err = parse_object::<Record>(body.as_bytes(), Place::Body).unwrap_err();
        for phrase in LIBRARY {
            assert!(!err.message().contains(phrase), "{body}: {err}");
        }
        err
    }

    #[test]
    fn a_body_of_the_wrong_shape_is_refused_naming_the_field_and_what_it_takes() {
        let cases = [
            (r#"{}"#, "the field `skill` is missing; it is required"),
            (r#"{"skill": 7}"#, "`skill` must be a string, not 7"),
            (
                r#"{"skill": "a/b", "limit": "ten"}"#,
                "`limit` must be a whole number, 0 or more, not the string \"ten\"",
            ),
            (
                r#"{"skill": "a/b", "limit": -1}"#,
                "`limit` must be a whole number, 0 or more, not -1",
            ),
            (
                r#"{"skill": "a/b", "tags": ["x", 3]}"#,
                "`tags[1]` must be a string, not 3",
            ),
            (
                r#"{"skill": "a/b", "outcome": "maybe"}"#,
                "`outcome` cannot be \"maybe\"; it must be \"accepted\" or \"rejected\"",
            ),
            (
                r#"{"skill": "a/b", "cost": true}"#,
                "`cost` must be a number, not true",
            ),
            ("[1, 2]", "the body must be an object, not a list"),
        ];
        for (body, said) in cases {
            let err = refused(body);
            assert!(matches!(err, Refused::Invalid(_)), "{body}: {err:?}");
            assert_eq!(err.message(), said, "{body}");
        }
        let unknown = refused(r#"{"skill": "a/b", "skil": 1}"#);
        assert!(
            unknown
                .message()
                .starts_with("`skil` is not a field here; the fields are `skill`, `limit`"),
            "{unknown}"
        );
        // serde names two fields as "`a` or `b`": both are fields, so both are listed.
        #[derive(Debug, Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct Pair {
            skill: Option<String>,
            set: Option<String>,
        }
        let err = parse_object::<Pair>(br#"{"sett": "x"}"#, Place::Body).unwrap_err();
        assert_eq!(
            err.message(),
            "`sett` is not a field here; the fields are `skill` and `set`"
        );
    }

    #[test]
    fn text_that_is_not_json_is_refused_with_where_it_breaks() {
        for (body, said) in [
            ("", "the body is empty; send a JSON object"),
            (
                r#"{"skill": "a/b""#,
                "the body is not valid JSON: it ends before the JSON does",
            ),
            (
                r#"{"skill": "a/b"} x"#,
                "the body is not valid JSON: something follows the JSON value, at line 1",
            ),
            (
                r#"{skill: 1}"#,
                "the body is not valid JSON: an object key is not in double quotes, at line 1 column 2",
            ),
        ] {
            let err = refused(body);
            assert!(matches!(err, Refused::Malformed(_)), "{body}: {err:?}");
            assert!(err.message().starts_with(said), "{body}: {err}");
        }
    }

    #[test]
    fn a_query_names_the_parameter_and_repeats_the_value_given() {
        let err = parse_query::<Record>("skill=a/b&limit=ten").unwrap_err();
        assert_eq!(err.message(), "`limit` must be a whole number, not \"ten\"");
        let err = parse_query::<Record>("limit=3").unwrap_err();
        assert_eq!(
            err.message(),
            "the query parameter `skill` is missing; it is required"
        );
        let err = parse_query::<Record>("skill=a/b&limt=3").unwrap_err();
        assert!(
            err.message()
                .starts_with("`limt` is not a query parameter here; the query parameters are"),
            "{err}"
        );
        assert!(parse_query::<Record>("skill=a%2Fb&limit=3").is_ok());
    }

    #[test]
    fn arguments_are_named_as_arguments() {
        let err = from_value::<Record>(
            serde_json::json!({"skill": "a/b", "x": 1}),
            Place::Arguments,
        )
        .unwrap_err();
        assert!(
            err.message().starts_with("`x` is not an argument here"),
            "{err}"
        );
    }
}
