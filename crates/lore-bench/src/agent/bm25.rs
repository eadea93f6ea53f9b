//! The plain experience-retrieval baseline: every past attempt kept as text, the top ones for a
//! task found by BM25 and put in the prompt as they are (what ExpRAG- and mem0-style stores do).

use std::collections::HashMap;

/// One past attempt.
#[derive(Clone, Debug)]
pub struct Attempt {
    pub task: String,
    pub command: String,
    /// `None` when it passed, else the tool's error or the checker's verdict.
    pub error: Option<String>,
}

impl Attempt {
    /// How it reads in a prompt.
    pub fn line(&self) -> String {
        match &self.error {
            None => format!(
                "- task: {} command: `{}` result: passed",
                self.task, self.command
            ),
            Some(e) => format!(
                "- task: {} command: `{}` result: failed: {e}",
                self.task, self.command
            ),
        }
    }

    fn text(&self) -> String {
        format!(
            "{} {} {}",
            self.task,
            self.command,
            self.error.as_deref().unwrap_or("passed")
        )
    }
}

/// Words for matching: lowercase runs of letters and digits.
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// A BM25 index over past attempts (k1 1.2, b 0.75).
#[derive(Default)]
pub struct Experience {
    attempts: Vec<Attempt>,
    docs: Vec<HashMap<String, f64>>,
    lengths: Vec<f64>,
    df: HashMap<String, f64>,
}

impl Experience {
    pub fn add(&mut self, attempt: Attempt) {
        let mut tf = HashMap::new();
        let ws = words(&attempt.text());
        for w in &ws {
            *tf.entry(w.clone()).or_insert(0.0) += 1.0;
        }
        for w in tf.keys() {
            *self.df.entry(w.clone()).or_insert(0.0) += 1.0;
        }
        self.lengths.push(ws.len() as f64);
        self.docs.push(tf);
        self.attempts.push(attempt);
    }

    /// The `k` attempts that score highest for `query`, best first; ties go to the newer.
    pub fn top(&self, query: &str, k: usize) -> Vec<&Attempt> {
        let n = self.docs.len() as f64;
        if n == 0.0 {
            return Vec::new();
        }
        let avg = self.lengths.iter().sum::<f64>() / n;
        let q = words(query);
        let mut scored: Vec<(f64, usize)> = self
            .docs
            .iter()
            .enumerate()
            .map(|(i, tf)| {
                let score = q
                    .iter()
                    .filter_map(|w| {
                        let f = *tf.get(w)?;
                        let df = self.df[w];
                        let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
                        Some(idf * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * self.lengths[i] / avg)))
                    })
                    .sum::<f64>();
                (score, i)
            })
            .filter(|(s, _)| *s > 0.0)
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
        scored
            .into_iter()
            .take(k)
            .map(|(_, i)| &self.attempts[i])
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt(task: &str, command: &str, error: Option<&str>) -> Attempt {
        Attempt {
            task: task.into(),
            command: command.into(),
            error: error.map(Into::into),
        }
    }

    #[test]
    fn the_most_similar_attempts_come_first() {
        let mut e = Experience::default();
        e.add(attempt(
            "Sort sales.csv by amount",
            "gridtool sort sales.csv",
            Some("bad"),
        ));
        e.add(attempt(
            "Rename the field user in logins",
            "fluxtool rename logins",
            None,
        ));
        e.add(attempt(
            "Sort staff.csv by age",
            "gridtool sort staff.csv --key=age/up",
            None,
        ));
        let top = e.top("Sort orders.csv by total", 2);
        assert_eq!(top.len(), 2);
        assert!(top.iter().all(|a| a.task.starts_with("Sort")), "{top:?}");
        assert!(e.top("nothing shared", 3).is_empty());
        assert_eq!(
            e.top("rename field", 3)[0].command,
            "fluxtool rename logins"
        );
    }
}
