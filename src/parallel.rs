//! Jobs on a few scoped threads, each thread taking the next job not yet
//! taken, the answers in the jobs' order: one trace's finishes (`analysis`)
//! and the figures of a campaign (`plot`). Neutral: it names nothing of the
//! crate.

/// `run` of every job on at most `threads` scoped threads (at least one),
/// each taking the next job not yet taken; the answers in the jobs' order
/// (`None` for none only if a job's thread went away, which a panic does:
/// it is raised again here).
pub fn in_threads<T, R>(jobs: Vec<T>, threads: usize, run: impl Fn(T) -> R + Sync) -> Vec<Option<R>>
where
    T: Send,
    R: Send,
{
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let n = jobs.len();
    let queue: Vec<Mutex<Option<T>>> = jobs.into_iter().map(|s| Mutex::new(Some(s))).collect();
    let done: Vec<Mutex<Option<R>>> = (0..n).map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let work = || loop {
        let k = next.fetch_add(1, Ordering::Relaxed);
        let Some(slot) = queue.get(k) else {
            return;
        };
        // A lock is never poisoned here: nothing panics while holding one.
        let job = slot.lock().ok().and_then(|mut s| s.take());
        if let Some(job) = job {
            let r = run(job);
            if let Some(mut out) = done.get(k).and_then(|d| d.lock().ok()) {
                *out = Some(r);
            }
        }
    };
    std::thread::scope(|s| {
        // A thread that cannot be started (a process at its thread or
        // address-space limit) leaves its jobs to the others, and to this
        // thread when none started: slower, never an error.
        let running: Vec<_> = (0..threads.clamp(1, n.max(1)))
            .filter_map(|_| std::thread::Builder::new().spawn_scoped(s, work).ok())
            .collect();
        if running.is_empty() {
            work();
        }
        for h in running {
            h.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        }
    });
    done.into_iter()
        .map(|d| d.into_inner().ok().flatten())
        .collect()
}
