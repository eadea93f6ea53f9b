//! `lore watch`: a live table of executions (and episodes recorded, replaced or purged) as they
//! land, from this or any other process.
//!
//! The store is the meeting point: `watch` follows its change cursor, so executions recorded by
//! another `lore`, a server or an agent appear without any notification channel. Rows are
//! appended, never redrawn, so the table works the same in a terminal, in tmux and through a
//! pipe.
//!
//! With `--server URL` it follows a running `lore serve` instead (`GET /v1/events`), with a
//! token, so it works from another machine and sees only the token's scope. The table is the
//! same. If the stream ends (a server restart), it reconnects once with the last event's ID and
//! misses nothing; if that fails, it stops with the error.

use std::collections::HashSet;
use std::time::Duration;

use anyhow::Result;
use chrono::{DateTime, Utc};
use lore_core::id::ExecutionId;
use lore_core::model::Execution;
use lore_engine::Change;
use lore_server::rest::change_event;
use lore_sqlite::OpenMode;
use serde_json::Value;

use crate::cli::WatchArgs;
use crate::config::Paths;
use crate::output;

pub fn run(paths: &Paths, args: WatchArgs, json: bool) -> Result<()> {
    if let Some(url) = args.server.clone() {
        return remote::follow(&url, &args, json);
    }
    let engine = paths.engine(OpenMode::Existing)?;
    // The cursor before the listing, so nothing recorded in between is missed; what the listing
    // already showed is not shown twice.
    let mut cursor = engine.change_cursor()?;
    let all = engine.executions(args.skill.as_ref(), None)?;
    if !json {
        output::line(header())?;
    }
    let recent = &all[all.len().saturating_sub(args.recent)..];
    let mut listed: HashSet<ExecutionId> = recent.iter().map(|e| e.id.clone()).collect();
    for execution in recent {
        print_row(execution, json)?;
    }
    if args.once {
        return Ok(());
    }
    let mut mark = engine.change_mark();
    loop {
        engine.wait_for_change(mark, Duration::from_millis(args.interval_ms));
        mark = engine.change_mark();
        let followed = engine.changes_after(cursor, args.skill.as_ref(), 256)?;
        cursor = followed.cursor;
        for (_, change) in followed.changes {
            match change {
                Change::Execution(execution) => {
                    if !listed.remove(&execution.id) {
                        print_row(&execution, json)?;
                    }
                }
                change @ Change::Episode { .. } => {
                    let (name, data) = change_event(change);
                    print_episode(name, &data, json)?;
                }
                Change::Lesson { .. } | Change::Decision { .. } => {}
            }
        }
    }
}

fn header() -> String {
    format!(
        "{:<19}  {:<30}  {:<24}  {:<14}  {:>10}  {:>9}  {}",
        "TIME (UTC)", "EXECUTION", "SKILL", "OUTCOME", "COST", "LATENCY", "MODEL"
    )
}

fn print_row(execution: &Execution, json: bool) -> Result<()> {
    if json {
        return output::line(serde_json::to_string(execution)?);
    }
    output::line(format!(
        "{:<19}  {:<30}  {:<24}  {:<14}  {:>10}  {:>9}  {}",
        execution.timestamp.format("%Y-%m-%d %H:%M:%S"),
        execution.id,
        execution.skill,
        execution.outcome.as_str(),
        execution
            .cost_usd
            .map(|c| format!("${c:.5}"))
            .unwrap_or_else(|| "-".into()),
        execution
            .latency_ms
            .map(|l| format!("{l:.0} ms"))
            .unwrap_or_else(|| "-".into()),
        execution.model.as_deref().unwrap_or("-"),
    ))
}

/// An episode's event as a row of the table: when, which, where, how it ended, what happened.
fn print_episode(name: &str, event: &Value, json: bool) -> Result<()> {
    if json {
        return output::line(event.to_string());
    }
    let text = |v: &Value| v.as_str().unwrap_or("-").to_owned();
    let at = event["at"]
        .as_str()
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| {
            t.with_timezone(&Utc)
                .format("%Y-%m-%d %H:%M:%S")
                .to_string()
        })
        .unwrap_or_else(|| "-".into());
    output::line(format!(
        "{:<19}  {:<30}  {:<24}  {:<14}  {:>10}  {:>9}  {}",
        at,
        text(&event["episode_id"]),
        text(&event["skill"]),
        text(&event["episode"]["outcome"]),
        "-",
        "-",
        name,
    ))
}

mod remote {
    //! `lore watch --server`: the same table, fed by the server's event stream.

    use std::collections::HashSet;
    use std::io::{BufRead, BufReader};

    use anyhow::{Context, Result, bail};
    use lore_core::model::Execution;
    use serde::Deserialize;

    use super::{header, print_episode, print_row};
    use crate::cli::WatchArgs;
    use crate::output;

    #[derive(Deserialize)]
    struct Page {
        items: Vec<Execution>,
        next_offset: Option<usize>,
    }

    struct Client {
        base: String,
        token: Option<String>,
        agent: ureq::Agent,
    }

    impl Client {
        fn get(
            &self,
            path: &str,
            last_id: Option<&str>,
        ) -> Result<ureq::http::Response<ureq::Body>> {
            let url = format!("{}{path}", self.base);
            let mut request = self.agent.get(&url);
            if let Some(token) = &self.token {
                request = request.header("Authorization", format!("Bearer {token}"));
            }
            if let Some(id) = last_id {
                request = request.header("Last-Event-ID", id);
            }
            let mut response = request
                .call()
                .with_context(|| format!("cannot reach the Lore server at {}", self.base))?;
            let status = response.status();
            if !status.is_success() {
                let body = response.body_mut().read_to_string().unwrap_or_default();
                let why = serde_json::from_str::<serde_json::Value>(&body)
                    .ok()
                    .and_then(|v| v["error"]["message"].as_str().map(str::to_owned))
                    .unwrap_or(body);
                bail!(
                    "the server at {} answered {status} to {path}: {why}",
                    self.base
                );
            }
            Ok(response)
        }
    }

    pub fn follow(url: &str, args: &WatchArgs, json: bool) -> Result<()> {
        let base = url.trim_end_matches('/');
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            bail!(
                "--server {url:?}: expected an http:// or https:// URL, like http://127.0.0.1:7077"
            );
        }
        let client = Client {
            base: base.to_owned(),
            token: args.token.clone(),
            agent: ureq::Agent::config_builder()
                .http_status_as_error(false)
                .build()
                .new_agent(),
        };
        let events = match &args.skill {
            Some(s) => format!("/v1/events?skill={s}"),
            None => "/v1/events".to_owned(),
        };
        let skill = args.skill.as_ref().map(|s| format!("skill={s}&"));
        let skill = skill.as_deref().unwrap_or("");
        // Open the stream before listing, so nothing recorded in between is missed; what the
        // listing already showed is not shown twice.
        let stream = if args.once {
            None
        } else {
            Some(client.get(&events, None)?)
        };
        let recent = recent(&client, skill, args.recent)?;
        let mut shown: HashSet<String> = recent.iter().map(|e| e.id.to_string()).collect();
        if !json {
            output::line(header())?;
        }
        for execution in &recent {
            print_row(execution, json)?;
        }
        let Some(mut stream) = stream else {
            return Ok(());
        };
        let mut reconnected = false;
        loop {
            let last_id = read_events(stream, &mut shown, json)?;
            if reconnected {
                bail!("the event stream from {base} ended again; stopping");
            }
            eprintln!("the event stream ended; reconnecting");
            stream = client.get(&events, last_id.as_deref())?;
            reconnected = true;
        }
    }

    /// The last `n` executions, oldest first, read a page at a time.
    fn recent(client: &Client, skill: &str, n: usize) -> Result<Vec<Execution>> {
        let mut kept = Vec::new();
        let mut offset = Some(0);
        while let Some(at) = offset {
            let mut response = client.get(
                &format!("/v1/executions?{skill}limit=500&offset={at}"),
                None,
            )?;
            let page: Page = serde_json::from_str(&response.body_mut().read_to_string()?)
                .context("the server's execution list is not what this lore expects")?;
            kept.extend(page.items);
            let excess = kept.len().saturating_sub(n);
            kept.drain(..excess);
            offset = page.next_offset;
        }
        Ok(kept)
    }

    /// Prints each new execution from the stream until it ends; returns the last event's ID.
    fn read_events(
        stream: ureq::http::Response<ureq::Body>,
        shown: &mut HashSet<String>,
        json: bool,
    ) -> Result<Option<String>> {
        let reader = BufReader::new(stream.into_body().into_reader());
        let (mut last_id, mut name, mut data) = (None, String::new(), String::new());
        for line in reader.lines() {
            let line = line.context("reading the event stream")?;
            if let Some(v) = line.strip_prefix("id:") {
                last_id = Some(v.trim().to_owned());
            } else if let Some(v) = line.strip_prefix("event:") {
                name = v.trim().to_owned();
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push_str(v.strip_prefix(' ').unwrap_or(v));
            } else if line.is_empty() {
                if name == "execution.recorded" {
                    #[derive(Deserialize)]
                    struct Recorded {
                        execution: Execution,
                    }
                    let event: Recorded = serde_json::from_str(&data)
                        .context("an execution event is not what this lore expects")?;
                    if shown.insert(event.execution.id.to_string()) {
                        print_row(&event.execution, json)?;
                    }
                } else if name.starts_with("episode.") {
                    let event: serde_json::Value = serde_json::from_str(&data)
                        .context("an episode event is not what this lore expects")?;
                    print_episode(&name, &event, json)?;
                }
                name.clear();
                data.clear();
            }
        }
        Ok(last_id)
    }
}
