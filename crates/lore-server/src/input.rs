//! Input that does not parse, said as a sentence a person can act on.
//!
//! serde and the extractors around it describe a failure in their own terms ("invalid type:
//! string \"x\", expected usize at line 1 column 9", "missing field `skill`"): true, but written
//! for the author of a Rust type, not for whoever sent the request. Every door (REST bodies,
//! query strings, path segments, MCP tool arguments) deserializes through [`parse_json`],
//! [`parse_query`] or [`describe`], so each one names the field at fault and what it expects in
//! the same words ([`lore_core::wording`], which episode files use too).

use std::fmt;

use serde::de::DeserializeOwned;

pub use lore_core::wording::{Place, describe, describe_path, segments};

/// Why input was refused: it is not JSON at all, or it is JSON of the wrong shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// The text does not parse as JSON (a 400 over HTTP).
    Malformed(String),
    /// It parses, but a field is missing, unknown or of the wrong kind (a 422 over HTTP).
    Invalid(String),
}

impl Refused {
    /// The sentence.
    pub fn message(&self) -> &str {
        match self {
            Self::Malformed(m) | Self::Invalid(m) => m,
        }
    }
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

/// Parses a JSON object into `T` (a request body's type).
///
/// # Errors
/// [`Refused::Malformed`] when `bytes` is not JSON, [`Refused::Invalid`] when it does not fit `T`.
pub fn parse_object<T: DeserializeOwned>(bytes: &[u8], place: Place) -> Result<T, Refused> {
    // serde reads a struct from a list by position, which would blame `[0]` for the shape.
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
        return Err(not_an_object(place));
    }
    parse_json(bytes, place)
}

/// Parses any JSON document into `T`.
///
/// # Errors
/// As [`parse_object`].
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8], place: Place) -> Result<T, Refused> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(Refused::Malformed(format!(
            "{} is empty; send a JSON object",
            place.whole()
        )));
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| json_error(&e, place))?;
    de.end().map_err(|e| syntax(&e, place))?;
    Ok(value)
}

/// Turns a JSON value (MCP's arguments) into `T`.
///
/// # Errors
/// [`Refused::Invalid`] naming the argument at fault.
pub fn from_value<T: DeserializeOwned>(
    value: serde_json::Value,
    place: Place,
) -> Result<T, Refused> {
    if value.is_array() {
        return Err(not_an_object(place));
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = segments(e.path());
        Refused::Invalid(describe(place, &path, &e.inner().to_string(), None))
    })
}

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

fn not_an_object(place: Place) -> Refused {
    Refused::Invalid(format!("{} must be an object, not a list", place.whole()))
}

fn json_error(e: &serde_path_to_error::Error<serde_json::Error>, place: Place) -> Refused {
    let inner = e.inner();
    if !inner.is_data() {
        return syntax(inner, place);
    }
    let message = without_position(inner);
    Refused::Invalid(describe(place, &segments(e.path()), &message, None))
}

/// serde_json's text without the " at line 1 column 7" it appends.
fn without_position(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    text.strip_suffix(&suffix).unwrap_or(&text).to_owned()
}

/// A JSON syntax error as a sentence with its line and column.
fn syntax(e: &serde_json::Error, place: Place) -> Refused {
    let message = without_position(e);
    let what = if e.is_eof() {
        "it ends before the JSON does (an object, list or string is not closed)"
    } else if message.starts_with("trailing characters") {
        "something follows the JSON value"
    } else if message.starts_with("expected `,` or `}`") {
        "a comma or a closing brace is missing"
    } else if message.starts_with("expected `,` or `]`") {
        "a comma or a closing bracket is missing"
    } else if message.starts_with("expected `:`") {
        "a colon is missing after a key"
    } else if message.starts_with("key must be a string") {
        "an object key is not in double quotes"
    } else if message.starts_with("recursion limit exceeded") {
        "it nests too deeply"
    } else if message.starts_with("control character") {
        "a string holds an unescaped control character (a raw newline or tab)"
    } else if message.contains("escape") {
        "a string holds an invalid escape"
    } else if message.contains("number") {
        "a number is malformed or out of range"
    } else {
        "a value is missing or is not JSON (strings need double quotes)"
    };
    Refused::Malformed(format!(
        "{} is not valid JSON: {what}, at line {} column {}",
        place.whole(),
        e.line(),
        e.column()
    ))
}

/// One of serde's standard messages about `path` in `place`, rewritten as a sentence; `given`
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
