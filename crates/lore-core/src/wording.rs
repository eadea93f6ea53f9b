//! serde's standard messages rewritten as sentences a person can act on.
//!
//! serde describes a failure for the author of a Rust type ("invalid type: string \"x\",
//! expected usize", "missing field `skill`"). Every door that reads JSON (REST bodies and query
//! strings, MCP tool arguments, episode files) says it through [`describe`] instead, so each
//! names the field at fault and what it takes in the same words. Only serde's standard messages
//! are rewritten; a message one of Lore's own types wrote is already a sentence and is kept.

use std::fmt;

use serde::de::DeserializeOwned;

/// Where the input came from, which decides what a field is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// A JSON request body.
    Body,
    /// A URL's query string.
    Query,
    /// An MCP tool call's arguments.
    Arguments,
    /// One line of a JSON-lines file or body (the caller says which line).
    Line,
}

impl Place {
    fn field(self) -> &'static str {
        match self {
            Self::Body | Self::Line => "field",
            Self::Query => "query parameter",
            Self::Arguments => "argument",
        }
    }

    fn a_field(self) -> &'static str {
        match self {
            Self::Body | Self::Line => "a field",
            Self::Query => "a query parameter",
            Self::Arguments => "an argument",
        }
    }

    /// The whole input, as a sentence's subject.
    pub fn whole(self) -> String {
        match self {
            Self::Body => "the body".to_owned(),
            Self::Query => "the query string".to_owned(),
            Self::Arguments => "the arguments".to_owned(),
            Self::Line => "the line".to_owned(),
        }
    }
}

/// A deserializer's path as field names, list indexes attached (`decisions[0]`, `type`).
pub fn segments(path: &serde_path_to_error::Path) -> Vec<String> {
    use serde_path_to_error::Segment;
    let mut out: Vec<String> = Vec::new();
    for segment in path.iter() {
        match segment {
            Segment::Seq { index } => match out.last_mut() {
                Some(last) => last.push_str(&format!("[{index}]")),
                None => out.push(format!("[{index}]")),
            },
            Segment::Map { key } | Segment::Enum { variant: key } => out.push(key.clone()),
            // `flatten` and untagged enums lose the key; the rest of the path still helps.
            Segment::Unknown => {}
        }
    }
    out
}

/// One of serde's messages about the value at `path` in `place`, as a sentence; `given` is the
/// raw text of a query parameter, which serde's number parsers do not repeat. A message serde
/// did not write (one of Lore's own types) is kept, with the field named when it does not.
pub fn describe(place: Place, path: &[String], message: &str, given: Option<&str>) -> String {
    let noun = place.field();
    // An unknown field's path already ends in its name; a missing one's ends at its parent.
    let at = |name: &str| {
        let mut full = path.to_vec();
        if full.last().is_none_or(|last| last != name) {
            full.push(name.to_owned());
        }
        full.join(".")
    };
    let subject = if path.is_empty() {
        place.whole()
    } else {
        format!("`{}`", path.join("."))
    };
    if let Some(name) = between(message, "missing field `", "`") {
        return format!("the {noun} `{}` is missing; it is required", at(name));
    }
    if let Some(name) = between(message, "duplicate field `", "`") {
        return format!("the {noun} `{}` is given twice; give it once", at(name));
    }
    if let Some(name) = between(message, "unknown field `", "`") {
        let name = at(name);
        return match message.split_once(", expected ") {
            Some((_, known)) => format!(
                "`{name}` is not {} here; the {noun}s are {}",
                place.a_field(),
                list(known.trim_start_matches("one of "))
            ),
            None => format!("`{name}` is not {} here; this takes none", place.a_field()),
        };
    }
    if let Some(variant) = between(message, "unknown variant `", "`") {
        let known = message
            .split_once(", expected ")
            .map_or("", |(_, k)| k.trim_start_matches("one of "));
        return format!(
            "{subject} cannot be \"{variant}\"; it must be {}",
            if known.is_empty() {
                "one of the documented values".to_owned()
            } else {
                alternatives(known)
            }
        );
    }
    for prefix in ["invalid type: ", "invalid value: "] {
        if let Some(rest) = message.strip_prefix(prefix)
            && let Some((unexpected, expected)) = rest.split_once(", expected ")
        {
            return format!(
                "{subject} must be {}, not {}",
                expectation(expected),
                unexpected_value(unexpected)
            );
        }
    }
    if let Some(rest) = message.strip_prefix("invalid length ")
        && let Some((len, expected)) = rest.split_once(", expected ")
    {
        return format!(
            "{subject} must be {}, not {len} items",
            expectation(expected)
        );
    }
    if let Some(kind) = number_parse_failure(message) {
        let shown = given.map_or_else(String::new, |g| format!(", not \"{g}\""));
        return format!("{subject} must be {kind}{shown}");
    }
    // Lore's own types say `invalid skill path: …`, as the Engine does for the other doors.
    if message.starts_with("invalid ") {
        return message.to_owned();
    }
    format!("{subject} is not valid: {message}")
}

/// A path segment that does not parse as the route's type.
pub fn describe_path(key: &str, value: &str, expected: &str) -> String {
    format!(
        "`{key}` in the path must be {}, not \"{value}\"",
        expectation(expected)
    )
}

/// What a standard-library parse error says it expected, for query values.
fn number_parse_failure(message: &str) -> Option<&'static str> {
    match message {
        "invalid digit found in string" | "cannot parse integer from empty string" => {
            Some("a whole number")
        }
        "number too large to fit in target type" | "number too small to fit in target type" => {
            Some("a whole number in range")
        }
        "invalid float literal" => Some("a number"),
        "provided string was not `true` or `false`" => Some("true or false"),
        _ => None,
    }
}

/// serde's name for what it expected, in a reader's words.
fn expectation(expected: &str) -> String {
    let plain = match expected {
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => "a whole number, 0 or more",
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => "a whole number",
        "f32" | "f64" => "a number",
        "a string" | "a borrowed string" | "string" => "a string",
        "a boolean" | "bool" => "true or false",
        "a sequence" | "a tuple" => "a list",
        "a map" => "an object",
        "unit" => "null",
        "a character" | "char" => "a single character",
        e if e.starts_with("struct ") || e.starts_with("map") => "an object",
        e if e.starts_with("tuple") => "a list",
        e if e.starts_with("a sequence") => "a list",
        other => return other.to_owned(),
    };
    plain.to_owned()
}

/// serde's description of the value it got, in a reader's words.
fn unexpected_value(unexpected: &str) -> String {
    if let Some(s) = unexpected.strip_prefix("string ") {
        return format!("the string {s}");
    }
    for prefix in ["integer ", "floating point ", "boolean "] {
        if let Some(v) = unexpected.strip_prefix(prefix) {
            return v.trim_matches('`').to_owned();
        }
    }
    match unexpected {
        "map" => "an object".to_owned(),
        "sequence" => "a list".to_owned(),
        "unit value" | "null" => "null".to_owned(),
        "Option value" => "a value".to_owned(),
        other => other.to_owned(),
    }
}

/// "`a`, `b`, `c`" (serde's list of names) as "`a`, `b` and `c`"; serde writes a list of two
/// as "`a` or `b`", which is also all of them here.
fn list(names: &str) -> String {
    let names: Vec<&str> = if names.contains(", ") {
        names.split(", ").collect()
    } else {
        names.split(" or ").collect()
    };
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

/// serde's "`a` or `b`" and "`a`, `b`, `c`" as one of them.
fn alternatives(known: &str) -> String {
    if known.contains(" or ") {
        return known.replace('`', "\"");
    }
    let names: Vec<String> = known.split(", ").map(|n| n.replace('`', "\"")).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

fn between<'a>(text: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let rest = text.strip_prefix(open)?;
    rest.split_once(close).map(|(inside, _)| inside)
}

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
    let at = match place {
        Place::Line => format!("column {}", e.column()),
        _ => format!("line {} column {}", e.line(), e.column()),
    };
    Refused::Malformed(format!(
        "{} is not valid JSON: {what}, at {at}",
        place.whole()
    ))
}
