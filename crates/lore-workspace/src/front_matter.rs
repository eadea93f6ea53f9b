//! SKILL.md front matter: the `---` block of `key: value` lines that configures a skill.
//!
//! Lore reads only a few keys (`output_schema`, `name`, `description`), so this is a minimal
//! reader of that YAML subset rather than a YAML library: top-level `key: value` pairs, quoted or
//! bare scalars, and `|` / `>` block scalars (the indented lines that follow). Anything else is
//! skipped, never an error, so a richer front matter written for another tool still loads.

use std::collections::{BTreeMap, BTreeSet};

/// The top-level keys of a front matter block.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FrontMatter {
    values: BTreeMap<String, String>,
    /// Keys whose value is an indented YAML block (a map or a list) rather than a scalar: their
    /// value reads empty, and a caller that needs a scalar can say what was written instead.
    nested: BTreeSet<String>,
}

impl FrontMatter {
    /// Reads the front matter at the start of `text`; empty when there is none.
    pub fn parse(text: &str) -> Self {
        let Some(block) = block(text) else {
            return Self::default();
        };
        let mut values = BTreeMap::new();
        let mut nested = BTreeSet::new();
        let lines: Vec<&str> = block.lines().collect();
        let mut i = 0;
        while i < lines.len() {
            let line = lines[i];
            i += 1;
            if line.starts_with([' ', '\t', '#']) {
                continue;
            }
            let Some((key, raw)) = line.split_once(':') else {
                continue;
            };
            let raw = raw.trim();
            let value = if raw == "|" || raw == ">" || raw == "|-" || raw == ">-" {
                let start = i;
                while i < lines.len() && (lines[i].starts_with([' ', '\t']) || lines[i].is_empty())
                {
                    i += 1;
                }
                dedent(&lines[start..i], raw.starts_with('>'))
            } else {
                if raw.is_empty() && lines.get(i).is_some_and(|l| l.starts_with([' ', '\t'])) {
                    nested.insert(key.trim().to_owned());
                }
                unquote(raw).to_owned()
            };
            values.insert(key.trim().to_owned(), value);
        }
        Self { values, nested }
    }

    /// Whether `key`'s value is an indented YAML map or list, which this reader does not read.
    pub fn is_nested(&self, key: &str) -> bool {
        self.nested.contains(key)
    }

    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }
}

/// The text between a leading `---` line and the next `---` line.
fn block(text: &str) -> Option<&str> {
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some(&rest[..offset]);
        }
        offset += line.len();
    }
    None
}

fn unquote(raw: &str) -> &str {
    for quote in ['"', '\''] {
        if raw.len() >= 2 && raw.starts_with(quote) && raw.ends_with(quote) {
            return &raw[1..raw.len() - 1];
        }
    }
    raw
}

fn dedent(lines: &[&str], folded: bool) -> String {
    let indent = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let body: Vec<&str> = lines
        .iter()
        .map(|l| if l.len() >= indent { &l[indent..] } else { "" })
        .collect();
    let joined = body.join(if folded { " " } else { "\n" });
    joined.trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_quotes_and_block_scalars_are_read() {
        let text = "---\nname: hr/screen\ndescription: \"Screen: resumes\"\n\
                    output_schema: |\n  {\"type\": \"object\",\n   \"required\": [\"a\"]}\n\
                    tags:\n  - x\n---\n# Body\n";
        let fm = FrontMatter::parse(text);
        assert_eq!(fm.get("name"), Some("hr/screen"));
        assert_eq!(fm.get("description"), Some("Screen: resumes"));
        assert_eq!(
            fm.get("output_schema"),
            Some("{\"type\": \"object\",\n \"required\": [\"a\"]}")
        );
        assert_eq!(fm.get("tags"), Some(""));
        assert!(
            fm.is_nested("tags"),
            "an indented list under a bare key is nested"
        );
        assert!(!fm.is_nested("output_schema"), "a `|` block is a scalar");
        assert!(!fm.is_nested("name"));
        assert_eq!(fm.get("body"), None);
    }

    #[test]
    fn no_or_unterminated_front_matter_is_empty() {
        assert_eq!(
            FrontMatter::parse("# Skill\nname: x\n"),
            FrontMatter::default()
        );
        assert_eq!(FrontMatter::parse("---\nname: x\n"), FrontMatter::default());
    }
}
