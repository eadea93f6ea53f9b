//! One short query's matrix products shared between the calling thread and a helper.
//!
//! A batch keeps every core busy with texts of its own, but a single question leaves all cores
//! but one idle while an agent waits. A model keeps one helper thread, started with its first
//! shared question, that takes part of each product of a question.
//!
//! A product of a short query lasts about a tenth of a millisecond, less than a sleeping thread
//! takes to wake, and on a busy machine the helper may not run for milliseconds. So the caller
//! never waits for work nobody has started: each product's output panels are cut into a few
//! chunks that either thread claims from a shared counter, and a helper that runs late finds
//! only what is left (or nothing). The caller waits only for chunks the helper has claimed, and
//! only about twice as long as a chunk of its own took; past that the helper was preempted
//! mid-chunk, and the caller computes those chunks itself and drops the helper's late answer.
//! Nor does a question wait for the helper at its end: the thread outlives it. Whoever computes
//! a column computes it with the same code, so the result is one thread's, bit for bit.

use std::cell::Cell;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, TryRecvError, channel};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use pulp::Arch;

use super::kernel::{LANES, Panels, pack_rows};

/// How long the helper spins on its channel before it blocks: the gap between two products of
/// a question (attention, a norm) is shorter than waking a blocked thread.
const SPIN: Duration = Duration::from_micros(100);
/// Chunks a product's panels are cut into: enough that a late helper still finds some, few
/// enough that a chunk is worth a claim.
const CHUNKS: usize = 8;
/// The least the caller waits for the helper's chunks beyond twice its own chunk time.
const SLACK: Duration = Duration::from_micros(20);

/// One product, offered to the helper.
struct Job {
    id: u64,
    panels: Arc<Panels>,
    packed: Arc<[f32]>,
    rows: usize,
    claims: Arc<AtomicUsize>,
    reply: Sender<Done>,
}

/// The chunks the helper computed for job `id`, each `rows × its width`.
struct Done {
    id: u64,
    chunks: Vec<(usize, Vec<f32>)>,
}

/// A model's helper thread, started on first use; it ends when the model is dropped.
pub(crate) struct Helper {
    arch: Arch,
    /// Sleep before each job, as a preempted helper would (tests only).
    pause: Duration,
    /// `None` once starting the thread has failed: questions then run on one thread.
    jobs: OnceLock<Option<Sender<Job>>>,
}

impl Helper {
    pub(crate) fn new(arch: Arch) -> Self {
        Self::paused(arch, Duration::ZERO)
    }

    fn paused(arch: Arch, pause: Duration) -> Self {
        Self {
            arch,
            pause,
            jobs: OnceLock::new(),
        }
    }

    /// A question's end of the pair, or `None` where no helper thread could be started.
    pub(crate) fn pair(&self) -> Option<Pair<'_>> {
        let jobs = self.jobs.get_or_init(|| {
            let (jobs, inbox) = channel();
            let (arch, pause) = (self.arch, self.pause);
            std::thread::Builder::new()
                .name("lore-minilm-helper".into())
                .spawn(move || serve(arch, pause, &inbox))
                .ok()
                .map(|_| jobs)
        });
        let (reply, done) = channel();
        Some(Pair {
            jobs: jobs.as_ref()?,
            reply,
            done,
            next_id: Cell::new(0),
            chunk_time: Cell::new(Duration::from_micros(50)),
        })
    }
}

/// The helper's loop: every chunk of each job that is still unclaimed when it gets there.
fn serve(arch: Arch, pause: Duration, inbox: &Receiver<Job>) {
    while let Some(job) = wait(inbox) {
        if !pause.is_zero() {
            std::thread::sleep(pause);
        }
        let mut chunks = Vec::new();
        while let Some((c, panels)) = claim(&job.claims, &job.panels) {
            let width = columns(&panels, job.panels.outputs()).len();
            let mut out = vec![0f32; job.rows * width];
            job.panels
                .apply_packed(arch, &job.packed, job.rows, &mut out, width, panels);
            chunks.push((c, out));
        }
        if !chunks.is_empty() {
            // The question may be over (it computed these chunks itself); nothing to do then.
            let _ = job.reply.send(Done { id: job.id, chunks });
        }
    }
}

/// The panels of chunk `c` of a product with `panels` panels.
fn chunk(c: usize, panels: usize) -> Range<usize> {
    let per = panels.div_ceil(CHUNKS);
    c * per..((c + 1) * per).min(panels)
}

fn chunk_count(panels: usize) -> usize {
    panels.div_ceil(panels.div_ceil(CHUNKS))
}

/// The output columns of a range of panels.
fn columns(panels: &Range<usize>, outputs: usize) -> Range<usize> {
    panels.start * LANES..(panels.end * LANES).min(outputs)
}

/// The next unclaimed chunk of a product, and its panels.
fn claim(claims: &AtomicUsize, panels: &Panels) -> Option<(usize, Range<usize>)> {
    let all = panels.panels();
    let c = claims.fetch_add(1, Ordering::AcqRel);
    (c < chunk_count(all)).then(|| (c, chunk(c, all)))
}

/// One question's end of the pair of threads.
pub(crate) struct Pair<'h> {
    jobs: &'h Sender<Job>,
    reply: Sender<Done>,
    done: Receiver<Done>,
    next_id: Cell<u64>,
    /// The caller's last chunk time, for a product where it computed none.
    chunk_time: Cell<Duration>,
}

impl Pair<'_> {
    /// `out = x Wᵀ + b` as [`Panels::apply`] computes it, shared with the helper.
    pub(crate) fn apply(
        &self,
        arch: Arch,
        panels: &Arc<Panels>,
        x: &[f32],
        rows: usize,
        out: &mut [f32],
        scratch: &mut Vec<f32>,
    ) {
        pack_rows(x, rows, panels.inputs(), scratch);
        let n = panels.outputs();
        let count = chunk_count(panels.panels());
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        let claims = Arc::new(AtomicUsize::new(0));
        // A helper that is gone (it panicked) leaves every chunk to this thread.
        let _ = self.jobs.send(Job {
            id,
            panels: Arc::clone(panels),
            packed: Arc::from(&scratch[..]),
            rows,
            claims: Arc::clone(&claims),
            reply: self.reply.clone(),
        });
        let start = Instant::now();
        let mut mine = vec![false; count];
        while let Some((c, range)) = claim(&claims, panels) {
            let from = range.start * LANES;
            panels.apply_packed(arch, scratch, rows, &mut out[from..], n, range);
            mine[c] = true;
        }
        let taken = mine.iter().filter(|m| **m).count();
        if taken == count {
            return;
        }
        if taken > 0 {
            self.chunk_time.set(start.elapsed() / taken as u32);
        }
        let patience = self.chunk_time.get() * 2 + SLACK;
        if let Some(done) = wait_for(&self.done, id, patience) {
            for (c, theirs) in done.chunks {
                let cols = columns(&chunk(c, panels.panels()), n);
                for (row, theirs) in out.chunks_exact_mut(n).zip(theirs.chunks_exact(cols.len())) {
                    row[cols.clone()].copy_from_slice(theirs);
                }
            }
            return;
        }
        for (c, _) in mine.iter().enumerate().filter(|(_, m)| !**m) {
            let range = chunk(c, panels.panels());
            let from = range.start * LANES;
            panels.apply_packed(arch, scratch, rows, &mut out[from..], n, range);
        }
    }
}

/// The next message, spinning for [`SPIN`] before blocking; `None` once the other side is gone.
fn wait<T>(from: &Receiver<T>) -> Option<T> {
    let start = Instant::now();
    loop {
        match from.try_recv() {
            Ok(message) => return Some(message),
            Err(TryRecvError::Disconnected) => return None,
            Err(TryRecvError::Empty) if start.elapsed() < SPIN => std::hint::spin_loop(),
            Err(TryRecvError::Empty) => return from.recv().ok(),
        }
    }
}

/// The helper's answer to job `id`, spinning for at most `patience`; answers to earlier jobs,
/// which the caller finished itself, are dropped.
fn wait_for(from: &Receiver<Done>, id: u64, patience: Duration) -> Option<Done> {
    let start = Instant::now();
    loop {
        match from.try_recv() {
            Ok(done) if done.id == id => return Some(done),
            Ok(_) => {}
            Err(TryRecvError::Disconnected) => return None,
            Err(TryRecvError::Empty) if start.elapsed() < patience => std::hint::spin_loop(),
            Err(TryRecvError::Empty) => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::kernel::Precision;
    use super::*;

    fn case(rows: usize, k: usize, n: usize, precision: Precision) -> (Arc<Panels>, Vec<f32>) {
        let x: Vec<f32> = (0..rows * k).map(|i| (i as f32 * 0.37).sin()).collect();
        let w: Vec<f32> = (0..n * k).map(|i| (i as f32 * 0.11).cos()).collect();
        let b: Vec<f32> = (0..n).map(|i| i as f32 / 10.0).collect();
        (Arc::new(Panels::new(&w, b, k, precision)), x)
    }

    fn one_thread(panels: &Panels, x: &[f32], rows: usize) -> Vec<f32> {
        let mut one = vec![f32::NAN; rows * panels.outputs()];
        panels.apply(Arch::new(), x, rows, &mut one, &mut Vec::new());
        one
    }

    #[test]
    fn two_threads_give_one_threads_numbers() {
        let arch = Arch::new();
        let helper = Helper::new(arch);
        for (rows, k, n) in [(1, 16, 16), (5, 40, 100), (15, 384, 1152), (9, 64, 33)] {
            for precision in [Precision::F32, Precision::Int8] {
                let (panels, x) = case(rows, k, n, precision);
                let one = one_thread(&panels, &x, rows);
                // Several questions of many products, so the helper takes some chunks of some.
                for _ in 0..5 {
                    let pair = helper.pair().expect("a helper thread");
                    for _ in 0..10 {
                        let mut two = vec![f32::NAN; rows * n];
                        pair.apply(arch, &panels, &x, rows, &mut two, &mut Vec::new());
                        assert_eq!(one, two, "{rows}x{k}x{n} {precision:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn chunks_cover_every_panel_once() {
        for panels in [1, 2, 7, 8, 9, 24, 72, 96, 100] {
            let covered: Vec<usize> = (0..chunk_count(panels))
                .flat_map(|c| chunk(c, panels))
                .collect();
            assert_eq!(covered, (0..panels).collect::<Vec<_>>(), "{panels} panels");
        }
    }

    #[test]
    fn a_helper_that_does_not_run_leaves_the_work_to_the_caller_without_a_wait() {
        let arch = Arch::new();
        let (rows, k, n) = (12, 384, 1536);
        let (panels, x) = case(rows, k, n, Precision::F32);
        let one = one_thread(&panels, &x, rows);
        // Longer than the products take on the busiest machine, so a single wait shows.
        let pause = Duration::from_secs(3);
        let helper = Helper::paused(arch, pause);
        let products = 6;
        let start = Instant::now();
        for _ in 0..2 {
            let pair = helper.pair().expect("a helper thread");
            for _ in 0..products {
                let mut two = vec![f32::NAN; rows * n];
                pair.apply(arch, &panels, &x, rows, &mut two, &mut Vec::new());
                assert_eq!(one, two);
            }
        }
        // Two questions of six products each, neither waiting for the sleeping helper, at
        // their ends either.
        let spent = start.elapsed();
        assert!(
            spent < pause,
            "{products} products took {spent:?}: the caller waited on the helper"
        );
    }
}
