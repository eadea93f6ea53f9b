//! The conformance suite: what every [`Store`] must do, written once.
//!
//! Each function takes `&dyn Store`, creates the records it needs and panics when the store
//! misbehaves. [`conformance_tests!`](crate::conformance_tests) turns the whole list into one
//! `#[test]` per function for a backend, so a new backend is correct when it passes the same
//! list as SQLite (the pattern of tantivy's directory tests and atuin's `tests-database`).
//!
//! No function assumes an empty store. Each draws fresh IDs and its own domains
//! (`hr-<tag>`, `finance-<tag>`) and a search word of its own, and looks only through them, so
//! the suite can also run, in parallel, against one shared database such as a Postgres test
//! server.
//!
//! ```ignore
//! use lore_store_tests::TempStore;
//! use lore_sqlite::{OpenMode, SqliteStore};
//!
//! lore_store_tests::conformance_tests!(TempStore::new(|dir| {
//!     SqliteStore::open(dir.join("lore.db"), OpenMode::Create)
//! }));
//! ```

mod digests;
mod fixture;
mod knowledge;
mod lessons;
mod listings;
mod memories;
mod purge;
mod records;
mod search;
mod tuning;
mod vectors;

pub use digests::*;
pub use fixture::TempStore;
pub use knowledge::*;
pub use lessons::*;
pub use listings::*;
pub use memories::*;
pub use purge::*;
pub use records::*;
pub use search::*;
pub use tuning::*;
pub use vectors::*;

/// Expands to one `#[test]` per conformance function, each on a store made by `$make`.
///
/// `$make` is evaluated afresh in every test and must give something that dereferences to a
/// [`Store`]: a [`TempStore`], a `Box<dyn Store>`, an `Arc<PostgresStore>`. As it is evaluated
/// inside the test function, it may `return` early to skip a backend that is not configured:
///
/// ```ignore
/// lore_store_tests::conformance_tests!(match postgres_url() {
///     Some(url) => PostgresStore::connect(&url).unwrap(),
///     None => return,
/// });
/// ```
#[macro_export]
macro_rules! conformance_tests {
    ($make:expr) => {
        $crate::conformance_tests!(@each $make;
            execution_roundtrips,
            correction_roundtrips,
            lesson_roundtrips,
            error_event_roundtrips,
            audit_entry_roundtrips,
            unknown_ids_read_as_none,
            duplicate_id_conflicts_and_names_it,
            batch_with_a_duplicate_writes_nothing,
            skip_identical_skips_equal_records,
            skip_identical_refuses_a_different_record,
            update_lesson_replaces_it_and_appends_audit,
            update_lesson_with_stale_timestamp_conflicts,
            update_unknown_lesson_is_not_found,
            update_lessons_lands_whole_or_not_at_all,
            write_and_update_lands_whole_or_not_at_all,
            purge_erases_content_and_its_search_terms,
            purge_of_an_unknown_record_changes_nothing,
            scope_isolates_domains,
            scope_and_filter_select_skills,
            status_filter_selects_lessons,
            corrections_filter_by_execution,
            listings_are_oldest_first,
            pagination_applies_limit_and_offset,
            audit_lists_by_subject_oldest_first,
            changes_follow_writes_in_commit_order,
            tuning_runs_and_checkpoints_roundtrip,
            tuning_progress_never_overwrites_a_cancellation,
            a_resume_claims_a_run_once,
            a_write_rings_the_change_bell,
            search_finds_a_lesson_by_a_rule_word,
            search_respects_statuses_and_skill,
            search_finds_executions_by_their_input,
            search_ranks_best_first_within_limit,
            search_treats_special_characters_as_words,
            search_reads_words_by_their_stem,
            empty_search_finds_nothing,
            counts_follow_scope,
            members_come_from_marks_inside_the_scope,
            writes_from_several_threads_all_land,
            info_describes_the_store,
            lesson_revision_grows_with_every_lesson_change,
            lessons_changed_lists_only_what_changed_inside_the_scope,
            vectors_roundtrip_bit_for_bit_and_are_replaced,
            bad_vectors_are_refused_and_nothing_is_written,
            purge_erases_the_lesson_vector,
            nearest_stored_finds_the_nearest_of_one_embedder,
            index_state_roundtrips,
            memories_roundtrip_by_category_oldest_first,
            memory_revision_grows_with_every_memory_write,
            memories_follow_scope_and_skill,
            a_core_version_is_stored_only_after_the_one_it_follows,
            memory_search_ranks_inside_category_and_scope,
            purge_erases_a_memory_and_its_search_terms,
            knowledge_documents_sync_whole_within_scope,
            knowledge_changes_name_what_moved_after_a_revision,
            decisions_follow_their_lifecycle_atomically,
            knowledge_and_decision_writes_ring_the_change_bell,
            digests_keep_versions_and_forget_a_source,
            digest_history_pages_newest_first,
            eval_sets_and_runs_follow_scope_and_forget_an_item,
            knowledge_and_decision_writes_pass_the_limits,
            digest_and_evaluation_writes_pass_the_limits,
            concurrent_reviews_of_a_decision_let_exactly_one_win,
            concurrent_erasures_in_one_run_are_all_kept,
        );
    };
    (@each $make:expr; $($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                let store = $make;
                $crate::$name(&*store);
            }
        )*
    };
}
