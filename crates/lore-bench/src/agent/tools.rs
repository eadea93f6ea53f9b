//! Fictional command-line tools read from a file: their manual, grammar, errors and tasks, and the
//! simulator that runs a command the model wrote and checks it against its task.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};
use serde::Deserialize;

/// The two tools shipped with the benchmark.
pub const SHIPPED: [(&str, &str); 2] = [
    (
        "gridtool.toml",
        include_str!("../../data/agent/gridtool.toml"),
    ),
    (
        "fluxtool.toml",
        include_str!("../../data/agent/fluxtool.toml"),
    ),
];

/// One tool as its file describes it.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tool {
    /// Its name, the command's first word.
    pub name: String,
    /// What the model is told up front.
    pub manual: String,
    /// Its operations.
    pub ops: Vec<Op>,
    /// Its tasks.
    pub tasks: Vec<Task>,
    /// Wrong lessons to plant before the stress phase.
    #[serde(default)]
    pub planted: Vec<Planted>,
}

/// One operation: its grammar, its error and its reference page.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Op {
    /// Its name, the command's first word.
    pub name: String,
    /// Its grammar: literals, `{slot}` and `{slot:a|b}`.
    pub form: String,
    /// The message of a command that does not fit; `{arg}` is the word it choked on.
    pub error: String,
    /// Its reference page, shown after a failed attempt.
    pub reference: String,
}

/// A task and the values a right command carries.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Task {
    /// Its kind: tasks of one kind need the same form.
    pub kind: String,
    /// What the model is asked.
    pub text: String,
    /// `op` and the value of each slot a right command carries.
    pub expect: BTreeMap<String, String>,
    /// A task kind kept for the cross-task phase.
    #[serde(default)]
    pub transfer: bool,
}

/// A wrong lesson planted in the memory arms before the stress phase.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Planted {
    /// `harmful` (the tool refuses what it says) or `contradictory` (it runs, wrongly).
    pub harm: String,
    /// Its kind: tasks of one kind need the same form.
    pub kind: String,
    /// The lesson's text.
    pub rule: String,
    /// The command the rule leads to, planted as a past attempt in the retrieval baseline.
    pub command: String,
    /// The task it is planted on.
    pub task: String,
    /// The attempt its author was correcting: a command for `task` that the tool refuses. It is
    /// recorded with the tool's message, so the lesson, like one an agent learned, is about that
    /// failure and is measured wherever the failure meets it, not only on tasks worded like
    /// `task`. Without it the lesson is planted on an attempt with no message.
    #[serde(default)]
    pub corrects: Option<String>,
}

/// What running a command did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It ran and did what the task asked.
    Passed,
    /// The tool refused it with this message (a hard failure).
    ToolError(String),
    /// It ran but did something else (a constraint failure).
    WrongResult(String),
}

impl Tool {
    /// Reads and checks a tool file.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the tool file {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("in the tool file {}", path.display()))
    }

    /// Parses a tool's TOML text and checks that every task can be passed and every planted
    /// lesson names a task kind.
    pub fn parse(text: &str) -> Result<Self> {
        let tool: Tool = toml::from_str(text)?;
        if tool.ops.is_empty() || tool.tasks.is_empty() {
            bail!("a tool needs at least one operation and one task");
        }
        for op in &tool.ops {
            Form::parse(&op.form)
                .with_context(|| format!("the form of operation {:?}", op.name))?;
            if !op.form.starts_with(&format!("{} {} ", tool.name, op.name)) {
                bail!(
                    "the form of operation {:?} must start with {:?}",
                    op.name,
                    format!("{} {} ", tool.name, op.name)
                );
            }
        }
        for (i, task) in tool.tasks.iter().enumerate() {
            let right = tool
                .right_command(task)
                .with_context(|| format!("task {} ({:?})", i + 1, task.text))?;
            if tool.run(&right, task) != Outcome::Passed {
                bail!(
                    "task {} ({:?}): its own right command {right:?} does not pass",
                    i + 1,
                    task.text
                );
            }
        }
        for p in &tool.planted {
            if !matches!(p.harm.as_str(), "harmful" | "contradictory") {
                bail!("planted lesson harm {:?}: harmful or contradictory", p.harm);
            }
            if !tool.tasks.iter().any(|t| t.kind == p.kind) {
                bail!("planted lesson kind {:?} has no task", p.kind);
            }
            if let Some(bad) = &p.corrects {
                let task = tool
                    .tasks
                    .iter()
                    .find(|t| t.text == p.task)
                    .ok_or_else(|| {
                        anyhow!("planted lesson task {:?} is not one of the tasks", p.task)
                    })?;
                if !matches!(tool.run(bad, task), Outcome::ToolError(_)) {
                    bail!(
                        "planted lesson on {:?}: the attempt it corrects, {bad:?}, must be one \
                         the tool refuses",
                        p.task
                    );
                }
            }
        }
        Ok(tool)
    }

    fn op(&self, name: &str) -> Option<&Op> {
        self.ops.iter().find(|o| o.name == name)
    }

    /// The command that passes `task`, written from its operation's form.
    pub fn right_command(&self, task: &Task) -> Result<String> {
        let name = task
            .expect
            .get("op")
            .ok_or_else(|| anyhow!("expect has no op"))?;
        let op = self
            .op(name)
            .ok_or_else(|| anyhow!("expect names the unknown operation {name:?}"))?;
        Form::parse(&op.form)?.fill(&task.expect)
    }

    /// The reference page of the operation `task` needs.
    pub fn reference(&self, task: &Task) -> &str {
        task.expect
            .get("op")
            .and_then(|n| self.op(n))
            .map_or("", |o| o.reference.as_str())
    }

    /// What the manual says an operation does: the text after its name on the manual's line
    /// for it, commas taken out so it reads as one clause. `None` when the manual has no line.
    pub fn describe(&self, op: &str) -> Option<String> {
        self.manual.lines().find_map(|line| {
            let (name, what) = line.trim().split_once(char::is_whitespace)?;
            (name == op).then(|| what.replace(',', "").trim().to_string())
        })
    }

    /// `text` with each value of `task` that the task's own words spell out replaced by its
    /// slot's name in capitals, and those names. What is left is the pattern a command of this
    /// kind follows: a small model copies the values of a lesson's example into a task that has
    /// others, so a lesson names the pattern. A value the task does not spell out (`desc` for
    /// "largest first") is part of the tool's language and stays.
    ///
    /// A value that is a list (items joined by one of [`LIST_SEPARATORS`]) keeps its form: each
    /// item becomes the item's name ([`item_name`]), the separators stay (`FIELD,FIELD`). One
    /// name for the whole list hid how it is written, and the model joined the items with a
    /// space. Items are replaced wherever they stand whole, so a failed command that wrote the
    /// list another way (`--fields id total`) reads as a pattern too.
    pub fn pattern(&self, task: &Task, text: &str) -> (String, Vec<String>) {
        let mut pieces: Vec<(&str, String)> = Vec::new();
        for (slot, value) in task.expect.iter().filter(|(k, _)| k.as_str() != "op") {
            let items: Vec<&str> = value.split(LIST_SEPARATORS).collect();
            if items
                .iter()
                .any(|item| item.is_empty() || find_word(&task.text, item).is_none())
            {
                continue;
            }
            let name = if items.len() > 1 {
                item_name(slot)
            } else {
                slot.to_uppercase()
            };
            pieces.extend(items.into_iter().map(|item| (item, name.clone())));
        }
        // The longest value first, so a value inside another one is not replaced within it.
        pieces.sort_by_key(|(value, _)| std::cmp::Reverse(value.len()));
        let mut out = text.to_string();
        let mut names = Vec::new();
        for (value, name) in pieces {
            let mut from = 0;
            // Past each name put in, so a value spelled like its slot's name ends the search.
            while let Some(at) = find_word(&out[from..], value).map(|at| at + from) {
                out.replace_range(at..at + value.len(), &name);
                from = at + name.len();
                if !names.contains(&name) {
                    names.push(name.clone());
                }
            }
        }
        names.sort();
        (out, names)
    }

    /// Runs `command` as the simulated tool and checks its effect against `task`.
    pub fn run(&self, command: &str, task: &Task) -> Outcome {
        let command = command.split_whitespace().collect::<Vec<_>>().join(" ");
        let mut words = command.split(' ');
        let first = words.next().unwrap_or("");
        if first != self.name {
            return Outcome::ToolError(format!(
                "command not found: {}",
                if first.is_empty() { "(empty)" } else { first }
            ));
        }
        let Some(op_name) = words.next() else {
            return Outcome::ToolError(format!("{}: missing operation (exit 2)", self.name));
        };
        let Some(op) = self.op(op_name) else {
            return Outcome::ToolError(format!(
                "{}: unknown operation '{op_name}' (exit 2)",
                self.name
            ));
        };
        let form = Form::parse(&op.form).expect("checked when the tool was loaded");
        let Some(values) = form.matches(&command) else {
            let prefix = format!("{} {} ", self.name, op.name);
            let args = command.strip_prefix(&prefix).unwrap_or("");
            let arg = form.first_unread(args).unwrap_or("(none)".into());
            return Outcome::ToolError(op.error.replace("{arg}", &arg));
        };
        if task.expect.get("op").map(String::as_str) != Some(op.name.as_str()) {
            return Outcome::WrongResult(format!(
                "the output is not what the task asked for ({} ran instead)",
                op.name
            ));
        }
        let wrong: Vec<&str> = task
            .expect
            .iter()
            .filter(|(k, _)| k.as_str() != "op")
            .filter(|(k, v)| values.get(k.as_str()).map(|got| unquote(got)) != Some(v.as_str()))
            .map(|(k, _)| k.as_str())
            .collect();
        if wrong.is_empty() {
            Outcome::Passed
        } else {
            Outcome::WrongResult("the output is not what the task asked for".into())
        }
    }
}

/// The characters the items of a list value are joined by (`fields:id,total`).
pub const LIST_SEPARATORS: [char; 3] = [',', ';', '|'];

/// The name of one item of the list slot `slot`, in capitals: the slot's name less a plural
/// `s` (`fields` → `FIELD`), or the name itself when it has none.
fn item_name(slot: &str) -> String {
    let name = slot.to_uppercase();
    match name.strip_suffix('S') {
        Some(one) if !one.is_empty() => one.to_string(),
        _ => name,
    }
}

/// The byte offset of `word` in `text` where it stands whole: no letter or digit touches it on
/// either side, so `id` is found in `fields:id,total` but not in `hidden`. Case-insensitive.
fn find_word(text: &str, word: &str) -> Option<usize> {
    let (text_l, word_l) = (text.to_lowercase(), word.to_lowercase());
    if word_l.is_empty() || text_l.len() != text.len() {
        return None;
    }
    let alnum = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    text_l.match_indices(&word_l).map(|(at, _)| at).find(|&at| {
        !alnum(text_l[..at].chars().next_back())
            && !alnum(text_l[at + word_l.len()..].chars().next())
    })
}

fn unquote(s: &str) -> &str {
    s.trim_matches(|c| c == '"' || c == '\'')
}

/// One piece of a form.
#[derive(Clone, Debug, PartialEq)]
enum Piece {
    Literal(String),
    Slot { name: String, words: Vec<String> },
}

/// A parsed grammar: literals and slots.
#[derive(Clone, Debug)]
struct Form(Vec<Piece>);

impl Form {
    fn parse(form: &str) -> Result<Self> {
        let mut pieces = Vec::new();
        let mut rest = form;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                pieces.push(Piece::Literal(rest[..open].to_string()));
            }
            let close = rest[open..]
                .find('}')
                .ok_or_else(|| anyhow!("an unclosed {{ in {form:?}"))?
                + open;
            let inner = &rest[open + 1..close];
            let (name, words) = match inner.split_once(':') {
                Some((n, w)) => (n, w.split('|').map(str::to_string).collect()),
                None => (inner, Vec::new()),
            };
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                bail!("a slot name must be letters, digits or _, not {name:?} in {form:?}");
            }
            if matches!(pieces.last(), Some(Piece::Slot { .. })) {
                bail!("two slots with no literal between them in {form:?}");
            }
            pieces.push(Piece::Slot {
                name: name.to_string(),
                words,
            });
            rest = &rest[close + 1..];
        }
        if !rest.is_empty() {
            pieces.push(Piece::Literal(rest.to_string()));
        }
        Ok(Self(pieces))
    }

    /// The slots' values when `text` fits the whole form. A slot takes the fewest characters
    /// up to its next literal (at least one, never a space), or the rest when it is last.
    fn matches(&self, text: &str) -> Option<BTreeMap<String, String>> {
        let mut values = BTreeMap::new();
        let mut rest = text;
        for (i, piece) in self.0.iter().enumerate() {
            match piece {
                Piece::Literal(lit) => rest = rest.strip_prefix(lit.as_str())?,
                Piece::Slot { name, words } => {
                    let end = match self.0.get(i + 1) {
                        Some(Piece::Literal(next)) => rest.find(next.as_str())?,
                        _ => rest.len(),
                    };
                    let value = &rest[..end];
                    if value.is_empty() || value.contains(' ') {
                        return None;
                    }
                    if !words.is_empty() && !words.iter().any(|w| w == value) {
                        return None;
                    }
                    values.insert(name.clone(), value.to_string());
                    rest = &rest[end..];
                }
            }
        }
        rest.is_empty().then_some(values)
    }

    /// The first argument word of `args` (the text after the operation) that the form could
    /// not read: the message names what the tool choked on, never what it wanted.
    fn first_unread(&self, args: &str) -> Option<String> {
        args.split(' ')
            .find(|w| !w.is_empty() && w.starts_with('-'))
            .or_else(|| args.split(' ').nth(1))
            .or_else(|| args.split(' ').next().filter(|w| !w.is_empty()))
            .map(str::to_string)
    }

    fn fill(&self, values: &BTreeMap<String, String>) -> Result<String> {
        let mut out = String::new();
        for piece in &self.0 {
            match piece {
                Piece::Literal(lit) => out.push_str(lit),
                Piece::Slot { name, .. } => out.push_str(
                    values
                        .get(name)
                        .ok_or_else(|| anyhow!("expect has no value for {name:?}"))?,
                ),
            }
        }
        Ok(out)
    }
}

/// The shipped tools, or those in `files`.
pub fn load_all(files: &[std::path::PathBuf]) -> Result<Vec<Tool>> {
    if files.is_empty() {
        return SHIPPED
            .iter()
            .map(|(name, text)| Tool::parse(text).with_context(|| format!("the shipped {name}")))
            .collect();
    }
    files.iter().map(|f| Tool::load(f)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid() -> Tool {
        Tool::parse(SHIPPED[0].1).unwrap()
    }

    #[test]
    fn the_shipped_tools_load_and_their_tasks_can_pass() {
        let tools = load_all(&[]).unwrap();
        assert_eq!(tools.len(), 2);
        assert!(tools.iter().all(|t| t.tasks.iter().any(|t| t.transfer)));
    }

    #[test]
    fn a_command_is_checked_against_its_task() {
        let tool = grid();
        let task = &tool.tasks[0];
        assert_eq!(
            tool.run("gridtool sort sales.csv --key=amount/desc", task),
            Outcome::Passed
        );
        assert_eq!(
            tool.run("gridtool  sort sales.csv   --key=amount/desc ", task),
            Outcome::Passed
        );
        assert!(matches!(
            tool.run("gridtool sort sales.csv --key=amount/asc", task),
            Outcome::WrongResult(_)
        ));
        let Outcome::ToolError(e) = tool.run("gridtool sort sales.csv --by amount --desc", task)
        else {
            panic!("a wrong form must be refused")
        };
        assert_eq!(
            e,
            "gridtool: sort: cannot read sort argument '--by' (exit 2)"
        );
        assert!(!e.contains("--key"), "the error must not give the answer");
        // The words of the direction are the tool's own: the planted harmful lesson's are refused.
        assert!(matches!(
            tool.run("gridtool sort sales.csv --key=amount/down", task),
            Outcome::ToolError(_)
        ));
        assert!(
            matches!(tool.run("sort -k2 sales.csv", task), Outcome::ToolError(e) if e.starts_with("command not found"))
        );
        assert!(
            matches!(tool.run("gridtool order x", task), Outcome::ToolError(e) if e.contains("unknown operation 'order'"))
        );
        assert!(matches!(
            tool.run("gridtool filter sales.csv amount.gt.100", task),
            Outcome::WrongResult(_)
        ));
        let filter = tool.tasks.iter().find(|t| t.kind == "filter").unwrap();
        assert_eq!(
            tool.run("gridtool filter sales.csv amount.gt.100", filter),
            Outcome::Passed
        );
        let Outcome::ToolError(e) = tool.run("gridtool filter sales.csv amount > 100", filter)
        else {
            panic!("a comparison written with > must be refused")
        };
        assert_eq!(
            e,
            "gridtool: filter: invalid filter expression 'amount' (exit 2)"
        );
    }

    #[test]
    fn a_pattern_names_the_tasks_values_and_keeps_the_tools_words() {
        let tool = grid();
        let task = &tool.tasks[0]; // Sort sales.csv by the column amount, largest first.
        let (form, names) = tool.pattern(task, "gridtool sort sales.csv --key=amount/desc");
        assert_eq!(form, "gridtool sort FILE --key=COLUMN/desc");
        assert_eq!(names, ["COLUMN", "FILE"]);
        let (error, _) = tool.pattern(
            task,
            "gridtool: sort: cannot read sort argument 'amount' (exit 2)",
        );
        assert_eq!(
            error,
            "gridtool: sort: cannot read sort argument 'COLUMN' (exit 2)"
        );
        // A value inside a longer word is not a value.
        let (kept, _) = tool.pattern(task, "gridtool sort sales.csv --key=amounts/desc");
        assert_eq!(kept, "gridtool sort FILE --key=amounts/desc");
        // A value spelled like its slot's name is replaced once, not forever.
        let mut odd = task.clone();
        odd.text = "Sort file by the column amount, largest first.".into();
        odd.expect.insert("file".into(), "file".into());
        let (form, _) = tool.pattern(&odd, "gridtool sort file --key=amount/desc");
        assert_eq!(form, "gridtool sort FILE --key=COLUMN/desc");
        // A comparison's word the task does not spell out stays; the value it does is named.
        let filter = &tool.tasks[4]; // From sales.csv keep only the rows whose amount is greater than 100.
        let (form, names) = tool.pattern(filter, "gridtool filter sales.csv amount.gt.100");
        assert_eq!(form, "gridtool filter FILE COLUMN.gt.VALUE");
        assert_eq!(names, ["COLUMN", "FILE", "VALUE"]);

        let flux = Tool::parse(SHIPPED[1].1).unwrap();
        let select = &flux.tasks[0]; // From the stream orders keep only the fields id and total.
        let (form, names) = flux.pattern(select, "fluxtool select orders fields:id,total");
        assert_eq!(form, "fluxtool select STREAM fields:FIELD,FIELD");
        assert_eq!(names, ["FIELD", "STREAM"]);
        // A list written another way still reads as a pattern, its items named.
        let (bad, _) = flux.pattern(select, "fluxtool select orders --fields id total");
        assert_eq!(bad, "fluxtool select STREAM --fields FIELD FIELD");
        // A list of three keeps its three items and its separators.
        let mut three = select.clone();
        three.text = "From the stream orders keep the fields id, total and ts.".into();
        three.expect.insert("fields".into(), "id;total;ts".into());
        let (form, _) = flux.pattern(&three, "fluxtool select orders fields:id;total;ts");
        assert_eq!(form, "fluxtool select STREAM fields:FIELD;FIELD;FIELD");
        // A file name is one value, not a list: its dot is not a separator.
        let (form, _) = tool.pattern(task, "gridtool sort sales.csv --key=amount/desc");
        assert_eq!(form, "gridtool sort FILE --key=COLUMN/desc");
        let other = flux.tasks.iter().find(|t| t.kind == "rename").unwrap();
        let (form, _) = flux.pattern(other, "fluxtool rename orders --as=total:amount");
        assert_eq!(form, "fluxtool rename STREAM --as=FROM:TO");
    }

    #[test]
    fn an_operation_is_described_by_its_manual_line() {
        let tool = grid();
        assert_eq!(
            tool.describe("sort").as_deref(),
            Some("order the rows of FILE by one column ascending or descending")
        );
        assert_eq!(tool.describe("join"), None);
    }

    #[test]
    fn planted_lessons_fail_as_they_are_meant_to() {
        for tool in load_all(&[]).unwrap() {
            for p in &tool.planted {
                let task = tool.tasks.iter().find(|t| t.text == p.task).unwrap();
                let outcome = tool.run(&p.command, task);
                match p.harm.as_str() {
                    "harmful" => assert!(matches!(outcome, Outcome::ToolError(_)), "{p:?}"),
                    _ => assert!(matches!(outcome, Outcome::WrongResult(_)), "{p:?}"),
                }
            }
        }
    }

    #[test]
    fn a_bad_tool_file_is_refused_with_the_reason() {
        let bad = SHIPPED[0]
            .1
            .replace("direction = \"desc\"", "direction = \"sideways\"");
        let err = format!("{:#}", Tool::parse(&bad).unwrap_err());
        assert!(err.contains("does not pass"), "{err}");
        let err = format!("{:#}", Tool::parse("name = 1").unwrap_err());
        assert!(err.contains("invalid type"), "{err}");
        // A planted lesson's corrected attempt must be one the tool refuses: a command that
        // passes would make the lesson about no failure.
        let bad = SHIPPED[0].1.replace(
            "corrects = \"gridtool sort sales.csv amount\"",
            "corrects = \"gridtool sort sales.csv --key=amount/desc\"",
        );
        let err = format!("{:#}", Tool::parse(&bad).unwrap_err());
        assert!(
            err.contains("gridtool sort sales.csv --key=amount/desc") && err.contains("refuses"),
            "{err}"
        );
    }
}
