//! The process's allocator, and the one place that asks it to give memory back.

/// A served recall makes a few hundred short-lived allocations; glibc's malloc spent about 15%
/// of its CPU on them (consolidating freed chunks whenever a larger block was asked for).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Hands the pages the calling thread freed back to the system, after a one-off phase whose
/// working copies were as large as what it kept (loading or building the recall index).
///
/// mimalloc keeps freed pages for reuse and returns them only after a delay, and only when
/// some thread allocates again; a thread that loaded the index and then ends (or waits)
/// leaves them held, so a server that loaded its saved index held about twice the anonymous
/// memory of one that built it. A forced collect frees this thread's empty pages and purges
/// every arena's free ones at once. It does not move or free anything in use.
#[allow(unsafe_code)]
pub fn release_free_memory() {
    let before = committed();
    // SAFETY: `mi_collect` takes no pointers and only frees what no allocation uses; it may be
    // called from any thread at any time.
    unsafe { libmimalloc_sys::mi_collect(true) };
    tracing::debug!(
        committed_before = before,
        committed_after = committed(),
        "handed the allocator's free pages back"
    );
}

/// The bytes mimalloc has committed (its own estimate of the memory it holds from the system).
#[allow(unsafe_code)]
fn committed() -> usize {
    let (mut elapsed, mut user, mut system, mut rss, mut peak_rss) = (0, 0, 0, 0, 0);
    let (mut commit, mut peak_commit, mut faults) = (0, 0, 0);
    // SAFETY: every argument points at a live local `usize`, which is all it writes.
    unsafe {
        libmimalloc_sys::mi_process_info(
            &mut elapsed,
            &mut user,
            &mut system,
            &mut rss,
            &mut peak_rss,
            &mut commit,
            &mut peak_commit,
            &mut faults,
        );
    }
    commit
}
