//! Agents' own memory over the embedded store (seed 002's self-editing strategy): core blocks in
//! the prompt, archival passages, the recall log, the write policy and every refusal.

#[path = "curation/support.rs"]
mod support;

use lore_core::model::{CurationMode, MemoryCategory};
use lore_core::{Error, Scope, SkillPath, Store};
use lore_engine::EngineConfig;
use lore_engine::{CoreEdit, InjectionStrategy, MemoryPolicy, memory_tools};
use support::{Project, SKILL};

fn skill() -> SkillPath {
    SkillPath::parse(SKILL).unwrap()
}

#[test]
fn core_blocks_are_versioned_and_reach_the_prompt_as_quoted_data() {
    let p = Project::new(CurationMode::Auto);
    let s = skill();
    p.engine
        .write_core_memory(
            &s,
            "user",
            "Ana runs the EU checkout team.",
            CoreEdit::Replace,
        )
        .unwrap();
    let core = p
        .engine
        .write_core_memory(
            &s,
            "user",
            "She wants outages marked urgent.",
            CoreEdit::Append,
        )
        .unwrap();
    assert_eq!(core.blocks.len(), 1);
    let block = &core.blocks[0];
    assert_eq!(
        block.text,
        "Ana runs the EU checkout team.\nShe wants outages marked urgent."
    );
    assert_eq!(block.versions, 2);
    assert!(core.tokens > 0 && core.tokens <= core.budget);

    let prompt = p.engine.prompt(&s).unwrap();
    let names: Vec<&str> = prompt.layers.iter().map(|l| l.name).collect();
    assert_eq!(names, ["core_memory", "skill"]);
    assert!(
        prompt.text.contains("  > She wants outages marked urgent."),
        "{}",
        prompt.text
    );
    assert!(
        prompt.text.contains(block.id.as_str()),
        "provenance: {}",
        prompt.text
    );

    // An empty replace clears the block; both earlier versions stay stored.
    let cleared = p
        .engine
        .write_core_memory(&s, "user", "", CoreEdit::Replace)
        .unwrap();
    assert!(cleared.blocks.is_empty());
    assert!(!p.engine.prompt(&s).unwrap().text.contains("Core Memory"));
    let all = p
        .store
        .memories(
            &lore_core::ports::store::ListFilter::default(),
            MemoryCategory::Core,
        )
        .unwrap();
    assert_eq!(all.len(), 3);
}

#[test]
fn archival_passages_and_the_recall_log_are_found_again() {
    let p = Project::new(CurationMode::Auto);
    let s = skill();
    p.engine
        .archival_write(
            &s,
            "The EU checkout runs on the payments-eu cluster.",
            &["infra".into()],
        )
        .unwrap();
    p.engine
        .archival_write(&s, "Refunds above 500 euros need a second approver.", &[])
        .unwrap();
    let hits = p
        .engine
        .archival_search(Some(&s), "which cluster runs checkout", 5)
        .unwrap();
    assert!(hits[0].entry.text.contains("payments-eu"), "{hits:?}");
    let hits = p.engine.archival_search(None, "infra", 5).unwrap();
    assert_eq!(hits.len(), 1, "tags are searched too: {hits:?}");
    p.engine
        .archival_write(&s, "Bob drinks black coffee every morning.", &[])
        .unwrap();
    // Words are matched by their stems, as lessons are recalled, not only as written.
    for (query, found) in [
        ("what does bob drink", "Bob drinks"),
        ("drink", "Bob drinks"),
        ("refund approvers", "second approver"),
    ] {
        let hits = p.engine.archival_search(Some(&s), query, 5).unwrap();
        assert!(
            hits.first().is_some_and(|h| h.entry.text.contains(found)),
            "{query}: {hits:?}"
        );
        assert_eq!(hits.len(), 1, "{query}: only what shares a word: {hits:?}");
    }
    let both = p
        .engine
        .archival_search(Some(&s), "coffee refunds", 5)
        .unwrap();
    assert_eq!(both.len(), 2, "{both:?}");
    assert!(
        both.iter().all(|h| h.score > 0.0 && h.score <= 1.0),
        "a passage found has a score of its own, the last one too: {both:?}"
    );
    let none = p
        .engine
        .archival_search(Some(&s), "weather in paris tomorrow", 5)
        .unwrap();
    assert!(none.is_empty(), "nothing holds it: {none:?}");

    for (speaker, text) in [
        ("user", "hello"),
        ("agent", "hi, how can I help?"),
        ("user", "refund 600 euros"),
    ] {
        p.engine
            .recall_write(&s, "chat-1", Some(speaker), text)
            .unwrap();
    }
    p.engine
        .recall_write(&s, "chat-2", Some("user"), "other chat")
        .unwrap();
    let last = p.engine.recall_read(&s, Some("chat-1"), None, 2).unwrap();
    let texts: Vec<&str> = last.iter().map(|h| h.entry.text.as_str()).collect();
    assert_eq!(texts, ["hi, how can I help?", "refund 600 euros"]);
    let found = p
        .engine
        .recall_read(&s, None, Some("refund euros"), 5)
        .unwrap();
    assert_eq!(found[0].entry.session.as_deref(), Some("chat-1"));
    assert_eq!(found[0].entry.author.as_deref(), Some("user"));
}

#[test]
fn memory_stays_inside_the_scope() {
    let p = Project::new(CurationMode::Auto);
    let s = skill();
    p.engine
        .archival_write(&s, "Support passage about refunds.", &[])
        .unwrap();
    p.engine
        .write_core_memory(&s, "user", "Support core fact.", CoreEdit::Replace)
        .unwrap();
    let finance = p.engine.scoped(Scope::domains(["finance"]));
    assert!(
        finance
            .archival_search(None, "refunds passage", 10)
            .unwrap()
            .is_empty()
    );
    assert!(matches!(finance.core_memory(&s), Err(Error::Forbidden(_))));
    assert!(matches!(
        finance.archival_write(&s, "sneaky", &[]),
        Err(Error::Forbidden(_))
    ));
    assert!(matches!(
        finance.recall_read(&s, None, None, 5),
        Err(Error::Forbidden(_))
    ));
}

#[test]
fn bad_memory_writes_are_refused_and_store_nothing() {
    let p = Project::new(CurationMode::Auto);
    let s = skill();
    let count = || p.store.counts(&Scope::unrestricted()).unwrap().memories;
    let bad: Vec<(&str, lore_core::Result<()>)> = vec![
        (
            "block name",
            p.engine
                .write_core_memory(&s, "Not A Name", "x", CoreEdit::Replace)
                .map(drop),
        ),
        (
            "empty append",
            p.engine
                .write_core_memory(&s, "user", "  ", CoreEdit::Append)
                .map(drop),
        ),
        (
            "secret",
            p.engine
                .write_core_memory(&s, "user", "Mail ana@example.com", CoreEdit::Replace)
                .map(drop),
        ),
        (
            "over budget",
            p.engine
                .write_core_memory(&s, "user", &"word ".repeat(2000), CoreEdit::Replace)
                .map(drop),
        ),
        (
            "empty passage",
            p.engine.archival_write(&s, " ", &[]).map(drop),
        ),
        (
            "api key",
            p.engine
                .archival_write(&s, "key sk-live-4f9a8b7c6d5e4f3a2b1c0d9e", &[])
                .map(drop),
        ),
        (
            "bad tag",
            p.engine
                .archival_write(&s, "x", &["Bad Tag".into()])
                .map(drop),
        ),
        (
            "oversized",
            p.engine
                .archival_write(&s, &"x".repeat(17 * 1024), &[])
                .map(drop),
        ),
        (
            "no session",
            p.engine.recall_write(&s, " ", None, "hi").map(drop),
        ),
        (
            "bad speaker",
            p.engine.recall_write(&s, "c", Some("A B"), "hi").map(drop),
        ),
        (
            "empty speaker",
            p.engine.recall_write(&s, "c", Some(""), "hi").map(drop),
        ),
        (
            "empty query",
            p.engine.archival_search(None, "  ", 5).map(drop),
        ),
        ("limit 0", p.engine.archival_search(None, "x", 0).map(drop)),
        (
            "limit 51",
            p.engine.recall_read(&s, None, None, 51).map(drop),
        ),
    ];
    for (what, result) in bad {
        assert!(
            matches!(result, Err(Error::Invalid { .. })),
            "{what}: {result:?}"
        );
    }
    assert_eq!(count(), 0);
}

#[test]
fn a_locked_down_policy_refuses_core_writes_but_allows_the_rest() {
    let p = Project::with(EngineConfig {
        memory: MemoryPolicy {
            core_writes: false,
            ..MemoryPolicy::default()
        },
        ..EngineConfig::default()
    });
    let s = skill();
    let err = p
        .engine
        .write_core_memory(&s, "user", "x", CoreEdit::Replace)
        .unwrap_err();
    assert!(
        matches!(err, Error::Forbidden(_)) && err.to_string().contains("core"),
        "{err}"
    );
    p.engine.archival_write(&s, "allowed", &[]).unwrap();
}

#[test]
fn each_strategy_publishes_its_tools() {
    assert!(memory_tools(InjectionStrategy::Context).is_empty());
    let names = |s| {
        memory_tools(s)
            .into_iter()
            .map(|t| (t.name, t.read_only))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names(InjectionStrategy::ToolBased),
        [("search_memory", true), ("recall_memory", true)]
    );
    let editing = names(InjectionStrategy::SelfEditing);
    assert_eq!(editing.len(), 6);
    for (name, read_only) in editing {
        assert_eq!(
            read_only,
            name.ends_with("_read") || name.ends_with("_search"),
            "{name}"
        );
    }
}
