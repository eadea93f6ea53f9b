//! Agents' own memory: its categories, scope and search.

use crate::fixture::*;
use lore_core::model::MemoryCategory;
use lore_core::ports::store::{ListFilter, Record, Store};

/// Memory entries come back whole, one category at a time, oldest first.
pub fn memories_roundtrip_by_category_oldest_first(store: &dyn Store) {
    let f = Fixture::new();
    let late = f.memory(
        &f.hr,
        MemoryCategory::Core,
        "Prefers answers in Zoë's ✓ style",
        5,
    );
    let early = f.memory(&f.hr, MemoryCategory::Core, "Prefers short answers", 1);
    let archival = f.memory(
        &f.hr,
        MemoryCategory::Archival,
        "The ledger closes on Fridays",
        2,
    );
    let recall = f.memory(&f.hr, MemoryCategory::Recall, "user: hello", 3);
    write(
        store,
        [&late, &early, &archival, &recall]
            .map(|m| Record::Memory(m.clone()))
            .to_vec(),
    );
    let filter = ListFilter::skill(&f.hr_scope(), &f.hr);
    let core = store.memories(&filter, MemoryCategory::Core).unwrap();
    assert_eq!(core, vec![early, late]);
    assert_eq!(
        store.memories(&filter, MemoryCategory::Archival).unwrap(),
        vec![archival]
    );
    assert_eq!(
        store.memories(&filter, MemoryCategory::Recall).unwrap(),
        vec![recall]
    );
    let counted = store.counts(&f.hr_scope()).unwrap();
    assert_eq!(counted.memories, 4);
}

/// Another domain's memories are invisible; a skill filter narrows to one skill.
pub fn memories_follow_scope_and_skill(store: &dyn Store) {
    let f = Fixture::new();
    let hr = f.memory(&f.hr, MemoryCategory::Archival, "hr passage", 1);
    let other = f.memory(&f.hr_other, MemoryCategory::Archival, "hr other passage", 2);
    let fin = f.memory(&f.finance, MemoryCategory::Archival, "finance passage", 3);
    write(
        store,
        [&hr, &other, &fin]
            .map(|m| Record::Memory(m.clone()))
            .to_vec(),
    );
    let scoped = ListFilter {
        scope: f.hr_scope(),
        ..ListFilter::default()
    };
    let listed = store.memories(&scoped, MemoryCategory::Archival).unwrap();
    assert_eq!(memory_ids(&listed), memory_ids(&[hr.clone(), other]));
    let one = ListFilter::skill(&f.both_scope(), &f.hr);
    let listed = store.memories(&one, MemoryCategory::Archival).unwrap();
    assert_eq!(memory_ids(&listed), memory_ids(&[hr]));
    let hits = store
        .search_memories("finance passage", &scoped, MemoryCategory::Archival, 10)
        .unwrap();
    assert!(
        hits.iter().all(|(m, _)| m.skill.domain() == f.hr.domain()),
        "{hits:?}"
    );
}

/// Memory search finds words of the text and tags, ranks the better match first, stays in
/// its category, and treats query syntax as words.
pub fn memory_search_ranks_inside_category_and_scope(store: &dyn Store) {
    let f = Fixture::new();
    let w = &f.word;
    let strong = f.memory(
        &f.hr,
        MemoryCategory::Archival,
        &format!("{w} {w} ledger {w}"),
        1,
    );
    let weak = f.memory(
        &f.hr,
        MemoryCategory::Archival,
        &format!("{w} is mentioned once among many other words here"),
        2,
    );
    let core = f.memory(&f.hr, MemoryCategory::Core, &format!("{w} core"), 3);
    write(
        store,
        [&strong, &weak, &core]
            .map(|m| Record::Memory(m.clone()))
            .to_vec(),
    );
    let filter = ListFilter {
        scope: f.hr_scope(),
        ..ListFilter::default()
    };
    let hits = store
        .search_memories(
            &format!("{w} OR \"NEAR("),
            &filter,
            MemoryCategory::Archival,
            10,
        )
        .unwrap();
    let found: Vec<&str> = hits.iter().map(|(m, _)| m.id.as_str()).collect();
    assert_eq!(found, vec![strong.id.as_str(), weak.id.as_str()]);
    assert!(hits[0].1 > hits[1].1, "{hits:?}");
    let one = store
        .search_memories(w, &filter, MemoryCategory::Archival, 1)
        .unwrap();
    assert_eq!(one.len(), 1);
    assert!(
        store
            .search_memories("", &filter, MemoryCategory::Archival, 10)
            .unwrap()
            .is_empty()
    );
}

/// A store that keeps a memory revision raises it with every memory write and leaves it alone
/// on reads, so a process holding a conversation log's index knows when to read it again.
pub fn memory_revision_grows_with_every_memory_write(store: &dyn Store) {
    let Some(before) = store.memory_revision().unwrap() else {
        return;
    };
    let f = Fixture::new();
    let first = f.memory(
        &f.hr,
        MemoryCategory::Recall,
        "user: where is the ledger?",
        1,
    );
    write(store, vec![Record::Memory(first)]);
    let after_one = store.memory_revision().unwrap().expect("still kept");
    assert!(after_one > before, "{before} -> {after_one}");
    let filter = ListFilter::skill(&f.hr_scope(), &f.hr);
    store.memories(&filter, MemoryCategory::Recall).unwrap();
    assert_eq!(store.memory_revision().unwrap(), Some(after_one), "a read");
    let second = f.memory(&f.hr, MemoryCategory::Recall, "agent: in the vault", 2);
    write(store, vec![Record::Memory(second)]);
    let after_two = store.memory_revision().unwrap().expect("still kept");
    assert!(after_two > after_one, "{after_one} -> {after_two}");
}

/// A core version is stored only after the version it was computed from, so of two writers
/// that read the same version, the second is refused and must read again.
pub fn a_core_version_is_stored_only_after_the_one_it_follows(store: &dyn Store) {
    let f = Fixture::new();
    let first = f.memory(&f.hr, MemoryCategory::Core, "one", 1);
    assert!(store.write_core_version(&first, None).unwrap());
    let stale = f.memory(&f.hr, MemoryCategory::Core, "two (from nothing)", 2);
    assert!(!store.write_core_version(&stale, None).unwrap());
    let second = f.memory(&f.hr, MemoryCategory::Core, "one\ntwo", 2);
    assert!(store.write_core_version(&second, Some(&first.id)).unwrap());
    let late = f.memory(&f.hr, MemoryCategory::Core, "one\nthree", 3);
    assert!(!store.write_core_version(&late, Some(&first.id)).unwrap());
    let mut other_block = f.memory(&f.hr, MemoryCategory::Core, "persona", 4);
    other_block.block = Some("persona".into());
    assert!(store.write_core_version(&other_block, None).unwrap());
    let archival = f.memory(&f.hr, MemoryCategory::Archival, "passage", 5);
    assert!(store.write_core_version(&archival, None).is_err());
    let filter = ListFilter::skill(&f.hr_scope(), &f.hr);
    let core = store.memories(&filter, MemoryCategory::Core).unwrap();
    assert_eq!(core, vec![first, second, other_block]);
}
