//! Two simulated command-line tools and an agent that learns only from the text it is shown.
//!
//! `gridtool` and `fluxtool` each have a few operations whose syntax differs from what an agent
//! would guess: the guess (`wrong`) fails with the tool's own error message, with volatile
//! literals (a column, a position) in it, as real tools do. The agent writes the guess unless a
//! rule in the text it was given says otherwise; after an error it reads the tool's docs and
//! gets it right (one more step). It never sees Lore's data, only the text: it looks for
//! `Use `<tool> <op> <form> ...` instead of ...` and takes `<form>` from the first such rule
//! about the operation it is about to run, so a wrong rule misleads it exactly as much as a
//! right rule helps it. Nothing here knows about the command line or Lore's types beyond text.

/// Deterministic pseudo-random numbers (SplitMix64): the same seed replays the same runs.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed` and a stream (a run, a step).
    pub fn new(seed: u64, stream: u64) -> Self {
        let mut rng = Rng(seed ^ stream.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        rng.next_u64();
        rng
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform draw in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A uniform pick in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
}

/// One operation of a tool.
#[derive(Clone, Copy, Debug)]
pub struct Op {
    /// Its name, the command's second word.
    pub name: &'static str,
    /// What a task step says, `{arg}` standing for the column or table.
    pub intent: &'static str,
    /// The form an agent guesses.
    pub wrong: &'static str,
    /// The form the tool wants.
    pub right: &'static str,
    /// The error for any other form.
    pub error: &'static str,
    /// Forms that run but give the wrong result, with the failed check's message.
    pub misleading: &'static [(&'static str, &'static str)],
}

/// A simulated command-line tool.
#[derive(Clone, Copy, Debug)]
pub struct Tool {
    /// Its name, the command's first word.
    pub name: &'static str,
    /// Its operations.
    pub ops: &'static [Op],
}

/// gridtool: a table tool.
pub const GRIDTOOL: Tool = Tool {
    name: "gridtool",
    ops: &[
        Op {
            name: "sort",
            intent: "sort the rows by {arg}, largest first",
            wrong: "--desc",
            right: "--order=desc",
            error: "gridtool: unknown option '{form}' for sort at col {pos}",
            misleading: &[],
        },
        Op {
            name: "filter",
            intent: "keep only the rows where {arg} is above 100",
            wrong: "--where=>100",
            right: "--where=gt:100",
            error: "gridtool: syntax error in filter expression '{form}' at 1:{pos}: unexpected operator",
            misleading: &[],
        },
        Op {
            name: "group",
            intent: "group the rows by {arg} and count them",
            wrong: "--by",
            right: "--key",
            error: "gridtool: group does not take '{form}' (argument {pos})",
            misleading: &[],
        },
        Op {
            name: "join",
            intent: "join the {arg} table on its id",
            wrong: "--with",
            right: "--with-key=id",
            error: "gridtool: join needs a key column; missing key for table '{arg}'",
            misleading: &[],
        },
        Op {
            name: "show",
            intent: "show the first {pos} rows",
            wrong: "--head",
            right: "--head",
            error: "",
            misleading: &[],
        },
    ],
};

/// fluxtool: a stream tool with its own conventions.
pub const FLUXTOOL: Tool = Tool {
    name: "fluxtool",
    ops: &[
        Op {
            name: "select",
            intent: "select the {arg} and id fields",
            wrong: "--fields=a,b",
            right: "--fields=[a,b]",
            error: "FLUX-E101: field list must be bracketed, got '{form}' near byte {pos}",
            misleading: &[],
        },
        Op {
            name: "dedupe",
            intent: "drop repeated records by {arg}, keeping the first",
            wrong: "--keep",
            right: "--keep=first",
            error: "FLUX-E033: option needs a value with '=', got '{form}'",
            misleading: &[(
                "--keep=last",
                "check failed: dedupe kept the last record of each '{arg}' group, expected the first",
            )],
        },
        Op {
            name: "rename",
            intent: "rename the {arg} field to label",
            wrong: "--from",
            right: "--map",
            error: "FLUX-E150: unknown flag '{form}' in rename (stage {pos})",
            misleading: &[],
        },
        Op {
            name: "merge",
            intent: "merge with the {arg} stream",
            wrong: "--auto",
            right: "--how=inner",
            error: "FLUX-E207: merge strategy not given for stream '{arg}'",
            misleading: &[],
        },
        Op {
            name: "write",
            intent: "write the result to {arg}.out",
            wrong: "--to",
            right: "--to",
            error: "",
            misleading: &[],
        },
    ],
};

/// Column and table names the tasks use: volatile literals in commands and errors.
const ARGS: [&str; 8] = [
    "revenue", "region", "price", "orders", "country", "amount", "customer", "status",
];

/// A task: steps, each an operation of one tool with its argument.
#[derive(Clone, Debug)]
pub struct Task {
    /// The tool.
    pub tool: Tool,
    /// `(operation index, argument)` per step.
    pub steps: Vec<(usize, &'static str)>,
}

impl Task {
    /// A task of one type (a list of operations) with arguments drawn from `rng`.
    pub fn draw(tool: Tool, ops: &[usize], rng: &mut Rng) -> Self {
        let steps = ops
            .iter()
            .map(|&op| (op, ARGS[rng.below(ARGS.len())]))
            .collect();
        Task { tool, steps }
    }

    /// What a step asks for, in words.
    pub fn step_text(&self, step: usize) -> String {
        let (op, arg) = self.steps[step];
        let op = &self.tool.ops[op];
        format!(
            "Using {}: {}",
            self.tool.name,
            op.intent.replace("{arg}", arg).replace("{pos}", "10")
        )
    }

    /// The task's type: its tool and operations, without their arguments.
    pub fn kind(&self) -> String {
        let ops: Vec<&str> = self
            .steps
            .iter()
            .map(|(op, _)| self.tool.ops[*op].name)
            .collect();
        format!("{}:{}", self.tool.name, ops.join("+"))
    }

    /// The whole task, in words.
    pub fn text(&self) -> String {
        let steps: Vec<String> = (0..self.steps.len()).map(|s| self.step_text(s)).collect();
        steps.join("; then ")
    }
}

/// What happened at one failed attempt.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    /// The command that failed.
    pub command: String,
    /// The tool's message.
    pub message: String,
    /// Refused (a hard failure) or ran wrong (a constraint failure).
    pub refused: bool,
    /// The command that then worked, after reading the docs.
    pub fixed: String,
    /// The step's operation.
    pub op: usize,
    /// The step's index in its task.
    pub step: usize,
}

/// One step as the agent did it.
#[derive(Clone, Debug)]
pub struct StepResult {
    /// The operation.
    pub op: usize,
    /// The form the agent took from a rule in its text, if any.
    pub from_rule: Option<String>,
    /// Its failure, if the first attempt failed.
    pub failure: Option<Failure>,
}

/// The simulated agent: it guesses `wrong` with probability `guess_wrong`, unless its text
/// holds a rule for the operation, which it then follows.
#[derive(Clone, Copy, Debug)]
pub struct Agent {
    /// How often a guess is the wrong form.
    pub guess_wrong: f64,
    /// How often a step fails for a reason no lesson can help with (the tool's connection
    /// drops); a retry of the same command works. Noise for the utility measurement.
    pub flaky: f64,
}

impl Agent {
    /// Runs one step, given the text Lore returned for it (empty without memory).
    pub fn step(&self, task: &Task, step: usize, text: &str, rng: &mut Rng) -> StepResult {
        let (op_index, arg) = task.steps[step];
        let op = &task.tool.ops[op_index];
        let guess_wrong = rng.unit() < self.guess_wrong;
        let flaky = rng.unit() < self.flaky;
        let pos = 3 + rng.below(40);
        let from_rule = rule_form(text, task.tool.name, op.name);
        let form = match &from_rule {
            Some(form) => form.clone(),
            None if guess_wrong => op.wrong.to_owned(),
            None => op.right.to_owned(),
        };
        let command = |form: &str| format!("{} {} {form} {arg}", task.tool.name, op.name);
        let fill = |t: &str, form: &str| {
            t.replace("{form}", form)
                .replace("{arg}", arg)
                .replace("{pos}", &pos.to_string())
        };
        let failure = if form == op.right && flaky {
            Some(Failure {
                command: command(&form),
                message: format!(
                    "{}: connection reset by peer after {pos} ms",
                    task.tool.name
                ),
                refused: true,
                fixed: command(&form),
                op: op_index,
                step,
            })
        } else if form == op.right {
            None
        } else if let Some((_, check)) = op.misleading.iter().find(|(f, _)| *f == form) {
            Some(Failure {
                command: command(&form),
                message: fill(check, &form),
                refused: false,
                fixed: command(op.right),
                op: op_index,
                step,
            })
        } else {
            Some(Failure {
                command: command(&form),
                message: fill(op.error, &form),
                refused: true,
                fixed: command(op.right),
                op: op_index,
                step,
            })
        };
        StepResult {
            op: op_index,
            from_rule,
            failure,
        }
    }
}

/// The form the first rule in `text` gives for `tool op`: the third word of the first
/// `` Use `tool op ...` `` in it.
pub fn rule_form(text: &str, tool: &str, op: &str) -> Option<String> {
    let prefix = format!("{tool} {op} ");
    let lower = text.to_lowercase();
    let mut from = 0;
    while let Some(at) = lower[from..].find("use `") {
        let start = from + at + "use `".len();
        let end = start + text[start..].find('`')?;
        let snippet = &text[start..end];
        if let Some(rest) = snippet.strip_prefix(&prefix) {
            return rest.split_whitespace().next().map(str::to_owned);
        }
        from = end;
    }
    None
}

/// The correction an agent writes after recovering from `failure` at `step` of `task`: what it
/// was doing, what worked, what failed and how. It generalizes the step's argument to `X`, as a
/// careful reflection does: the column is not the lesson.
pub fn correction_text(task: &Task, step: usize, failure: &Failure) -> String {
    let (op, arg) = task.steps[step];
    let op = &task.tool.ops[op];
    let general = |command: &str| command.replace(arg, "X");
    format!(
        "To {} with {}, use `{}` instead of `{}`. The first attempt failed with: {}",
        op.intent.replace("{arg}", "X"),
        task.tool.name,
        general(&failure.fixed),
        general(&failure.command),
        failure.message
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agent_follows_the_first_rule_for_its_operation_only() {
        let text = "> Use `gridtool filter --where=gt:100 price` instead of `x`.\n\
                    > use `gridtool sort --order=desc revenue` instead of `gridtool sort --desc revenue`.\n\
                    > Use `gridtool sort -r revenue` instead of it.";
        assert_eq!(
            rule_form(text, "gridtool", "sort").as_deref(),
            Some("--order=desc")
        );
        assert_eq!(rule_form(text, "gridtool", "group"), None);
        assert_eq!(rule_form("", "gridtool", "sort"), None);
    }

    #[test]
    fn a_guess_fails_with_the_tools_message_and_a_rule_avoids_it() {
        let task = Task {
            tool: GRIDTOOL,
            steps: vec![(0, "price")],
        };
        let agent = Agent {
            guess_wrong: 1.0,
            flaky: 0.0,
        };
        let failed = agent.step(&task, 0, "", &mut Rng::new(1, 1));
        let failure = failed.failure.unwrap();
        assert!(failure.refused && failure.message.contains("'--desc' for sort"));
        let rule = correction_text(&task, 0, &failure);
        let fixed = agent.step(&task, 0, &rule, &mut Rng::new(1, 2));
        assert!(fixed.failure.is_none(), "{rule}");
    }

    #[test]
    fn a_misleading_rule_makes_a_constraint_failure() {
        let task = Task {
            tool: FLUXTOOL,
            steps: vec![(1, "customer")],
        };
        let text = "Use `fluxtool dedupe --keep=last customer` instead of `fluxtool dedupe --keep customer`.";
        let step = Agent {
            guess_wrong: 1.0,
            flaky: 0.0,
        }
        .step(&task, 0, text, &mut Rng::new(3, 3));
        let failure = step.failure.unwrap();
        assert!(!failure.refused && failure.message.starts_with("check failed"));
    }
}
