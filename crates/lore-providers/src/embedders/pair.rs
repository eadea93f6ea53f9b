//! One short query's matrix products split over two cores.
//!
//! A batch keeps every core busy with texts of its own, but a single question leaves all cores
//! but one idle while an agent waits. For the length of one forward pass a helper thread takes
//! the upper half of each product's output panels while the calling thread computes the lower
//! half; the helper's columns are copied into place, so the result is the same numbers as one
//! thread's, bit for bit.
//!
//! A product of a short query lasts about a tenth of a millisecond, less than a sleeping thread
//! takes to wake, so each side spins briefly on its channel before it blocks. If the helper is
//! gone (it panicked), the calling thread computes the whole product itself.

use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, TryRecvError, channel};
use std::time::{Duration, Instant};

use pulp::Arch;

use super::kernel::{LANES, Panels, pack_rows};

/// How long a side spins on its channel before it blocks.
const SPIN: Duration = Duration::from_micros(100);

/// The panels from `from` on, over rows packed by [`pack_rows`].
struct Job<'a> {
    panels: &'a Panels,
    packed: Arc<[f32]>,
    rows: usize,
    from: usize,
}

/// The calling thread's end of a pair of threads.
pub(crate) struct Pair<'a> {
    jobs: Sender<Job<'a>>,
    done: Receiver<Vec<f32>>,
}

/// Runs `f` with a helper thread for its products; the helper ends when `f` returns.
pub(crate) fn with_pair<'a, R>(arch: Arch, f: impl FnOnce(&Pair<'a>) -> R) -> R {
    std::thread::scope(|scope| {
        let (jobs, inbox) = channel::<Job<'a>>();
        let (outbox, done) = channel();
        scope.spawn(move || {
            while let Some(job) = wait(&inbox) {
                let width = job.panels.outputs() - job.from * LANES;
                let mut half = vec![0f32; job.rows * width];
                let range = job.from..job.panels.panels();
                job.panels
                    .apply_packed(arch, &job.packed, job.rows, &mut half, width, range);
                if outbox.send(half).is_err() {
                    return;
                }
            }
        });
        // Dropping the pair closes the job channel, which ends the helper's loop.
        f(&Pair { jobs, done })
    })
}

impl<'a> Pair<'a> {
    /// `out = x Wᵀ + b` as [`Panels::apply`] computes it, half on each thread.
    pub(crate) fn apply(
        &self,
        arch: Arch,
        panels: &'a Panels,
        x: &[f32],
        rows: usize,
        out: &mut [f32],
        scratch: &mut Vec<f32>,
    ) {
        pack_rows(x, rows, panels.inputs(), scratch);
        let (all, n) = (panels.panels(), panels.outputs());
        let from = all / 2;
        let job = Job {
            panels,
            packed: Arc::from(&scratch[..]),
            rows,
            from,
        };
        let mine = if self.jobs.send(job).is_ok() {
            from
        } else {
            all
        };
        panels.apply_packed(arch, scratch, rows, out, n, 0..mine);
        if mine == all {
            return;
        }
        match wait(&self.done) {
            Some(half) => {
                let width = n - from * LANES;
                for (row, theirs) in out.chunks_exact_mut(n).zip(half.chunks_exact(width)) {
                    row[from * LANES..].copy_from_slice(theirs);
                }
            }
            None => {
                panels.apply_packed(arch, scratch, rows, &mut out[from * LANES..], n, from..all)
            }
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

#[cfg(test)]
mod tests {
    use super::super::kernel::Precision;
    use super::*;

    #[test]
    fn two_threads_give_one_threads_numbers() {
        for (rows, k, n) in [(1, 16, 16), (5, 40, 100), (15, 384, 1152), (9, 64, 33)] {
            let x: Vec<f32> = (0..rows * k).map(|i| (i as f32 * 0.37).sin()).collect();
            let w: Vec<f32> = (0..n * k).map(|i| (i as f32 * 0.11).cos()).collect();
            let b: Vec<f32> = (0..n).map(|i| i as f32 / 10.0).collect();
            for precision in [Precision::F32, Precision::Int8] {
                let panels = Panels::new(&w, b.clone(), k, precision);
                let arch = Arch::new();
                let mut one = vec![f32::NAN; rows * n];
                panels.apply(arch, &x, rows, &mut one, &mut Vec::new());
                let mut two = vec![f32::NAN; rows * n];
                with_pair(arch, |pair| {
                    // Twice, so the helper's second job follows its first.
                    pair.apply(arch, &panels, &x, rows, &mut two, &mut Vec::new());
                    pair.apply(arch, &panels, &x, rows, &mut two, &mut Vec::new());
                });
                assert_eq!(one, two, "{rows}x{k}x{n} {precision:?}");
            }
        }
    }
}
