//! The memory this process may use, what it holds now, and the [`Pool`]
//! that the traces read at once (`batch`'s members) share.
//!
//! A limit is whatever binds first: a cgroup's `memory.max` (v2) or
//! `memory.limit_in_bytes` (v1), `RLIMIT_AS`, `RLIMIT_DATA`, the machine's
//! memory (`MemAvailable` and what the process holds), or a size given (`batch --memory`). Each is
//! compared with the kernel's own count of what the process holds
//! (`/proc/self/statm`), the count that limit is enforced on: resident
//! pages for a cgroup and the machine, the address space for `RLIMIT_AS`,
//! the data segment for `RLIMIT_DATA`. So what is held is measured, never
//! estimated per event.
//!
//! ```text
//!  limit ───────────────────────────────────────────────────────────  L
//!  high  ───────────────────────── ¾ L: a reader past it yields ─────
//!  admit ──────────── ½ L: a new member starts only below it ────────
//!        member 1 ████████████▌                      (oldest: never yields)
//!        member 2     ██████████████▌ yield → re-read alone later
//!        member 3           (waits: usage above ½ L)
//! ```
//!
//! Members are admitted in turn ([`Pool::join`]): the first at once, the
//! next only while the process holds less than half the limit. A reading
//! member checks the pool every [`CHECK_EVERY`] events ([`Member::check`]):
//! past three quarters of the limit the youngest member that can be read
//! again yields (its read is dropped and done again once it can run alone,
//! [`Pool::join_alone`]); a member over the mark while alone cannot fit,
//! and only then is it refused. So a trace that fits is never refused at
//! any `-j`: fewer members run at once instead.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// How often (in events fed) a reading member checks the pool.
pub const CHECK_EVERY: u64 = 16_384;

/// Allocations that failed and were then served from the reserve
/// ([`Reserving`]): a member read while this count rose is read again
/// alone, and one read alone while it rose cannot fit.
static FAILED_ALLOCATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many allocations have failed (and were served from the reserve).
pub fn failed_allocations() -> u64 {
    FAILED_ALLOCATIONS.load(Ordering::Acquire)
}

/// Counts a failed allocation that its caller handled (a fallible
/// reservation that failed: [`crate::analysis::Shared::short`]).
pub fn count_failed_allocation() {
    FAILED_ALLOCATIONS.fetch_add(1, Ordering::AcqRel);
}

/// A global allocator for binaries (the `torchtrace` binary installs it):
/// the system's, with a reserve of [`Reserving::RESERVE`] bytes of
/// address space taken at the first allocation, in [`Reserving::SLICES`]
/// slices. When an allocation fails (a process at its `RLIMIT_AS` or
/// `RLIMIT_DATA`), slices are given back one at a time until it succeeds,
/// the failure is counted ([`failed_allocations`]), and the finish that
/// asked for it goes on instead of the process aborting, with the slices
/// left for its next failures; the driver then drops that trace's figures
/// and reads it again alone, or reports it as too large ([`Pool`]). The
/// reserve is taken again once a trace has ended ([`rearm`]). A limit
/// enforced by killing the process (a cgroup's) is watched by the pool
/// alone.
///
/// ```text
///  reserve  [ s0 ][ s1 ][ s2 ][ s3 ]     4 × 8 MiB of address space
///  fail 12 MiB → give s0, s1 → retry ok   [ s2 ][ s3 ] left for the next
/// ```
pub struct Reserving;

static RESERVE: [std::sync::atomic::AtomicPtr<u8>; Reserving::SLICES] =
    [const { std::sync::atomic::AtomicPtr::new(std::ptr::null_mut()) }; Reserving::SLICES];
/// Whether [`Reserving`] is the global allocator (set at its first call).
static INSTALLED: AtomicBool = AtomicBool::new(false);

impl Reserving {
    /// 32 MiB: the finishes' largest single steps on real traces fit in it.
    pub const RESERVE: usize = 32 << 20;
    /// Given back a slice at a time: one failure takes what it needs, and
    /// what is left serves the same finish's next failures (a 400 k-step
    /// trace under `prlimit --as` met two in one finish).
    pub const SLICES: usize = 4;

    fn layout() -> std::alloc::Layout {
        // A valid layout: the size is far below isize::MAX, the alignment 4096.
        std::alloc::Layout::from_size_align(Self::RESERVE / Self::SLICES, 4096)
            .unwrap_or_else(|_| std::alloc::Layout::new::<u8>())
    }

    /// Gives one slice of the reserve back; whether there was one.
    fn release() -> bool {
        for slot in &RESERVE {
            let p = slot.swap(std::ptr::null_mut(), Ordering::AcqRel);
            if !p.is_null() {
                // SAFETY: `p` came from `System.alloc(Self::layout())` in
                // `rearm` and was swapped out, so it is freed once.
                unsafe { std::alloc::GlobalAlloc::dealloc(&std::alloc::System, p, Self::layout()) };
                return true;
            }
        }
        false
    }

    /// After a failed allocation: slices given back one at a time, the
    /// allocation tried again by `again` after each.
    fn retry(mut again: impl FnMut() -> *mut u8) -> *mut u8 {
        let mut counted = false;
        while Self::release() {
            if !counted {
                FAILED_ALLOCATIONS.fetch_add(1, Ordering::AcqRel);
                counted = true;
            }
            let p = again();
            if !p.is_null() {
                return p;
            }
        }
        std::ptr::null_mut()
    }
}

/// Takes the reserve's slices again where they were given back (or never
/// taken), when [`Reserving`] is the global allocator.
pub fn rearm() {
    if !INSTALLED.load(Ordering::Relaxed) {
        return;
    }
    for slot in &RESERVE {
        if !slot.load(Ordering::Acquire).is_null() {
            continue;
        }
        // SAFETY: a non-zero layout; the block is only ever freed by `release`.
        let p = unsafe { std::alloc::GlobalAlloc::alloc(&std::alloc::System, Reserving::layout()) };
        if p.is_null() {
            return;
        }
        if slot
            .compare_exchange(std::ptr::null_mut(), p, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            // SAFETY: `p` was just allocated with this layout and is not shared.
            unsafe {
                std::alloc::GlobalAlloc::dealloc(&std::alloc::System, p, Reserving::layout())
            };
        }
    }
}

// SAFETY: every call is the system allocator's, with the same layout; a
// failed one is tried once more after the reserve (a block of the same
// allocator) is freed.
unsafe impl std::alloc::GlobalAlloc for Reserving {
    unsafe fn alloc(&self, l: std::alloc::Layout) -> *mut u8 {
        if !INSTALLED.swap(true, Ordering::Relaxed) {
            rearm();
        }
        // SAFETY: forwarded as given.
        let p = unsafe { std::alloc::System.alloc(l) };
        if p.is_null() {
            // SAFETY: forwarded as given.
            return Reserving::retry(|| unsafe { std::alloc::System.alloc(l) });
        }
        p
    }

    unsafe fn alloc_zeroed(&self, l: std::alloc::Layout) -> *mut u8 {
        // SAFETY: forwarded as given.
        let p = unsafe { std::alloc::System.alloc_zeroed(l) };
        if p.is_null() {
            // SAFETY: forwarded as given.
            return Reserving::retry(|| unsafe { std::alloc::System.alloc_zeroed(l) });
        }
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, l: std::alloc::Layout) {
        // SAFETY: forwarded as given.
        unsafe { std::alloc::System.dealloc(p, l) }
    }

    unsafe fn realloc(&self, p: *mut u8, l: std::alloc::Layout, new: usize) -> *mut u8 {
        // SAFETY: forwarded as given.
        let q = unsafe { std::alloc::System.realloc(p, l, new) };
        if q.is_null() {
            // SAFETY: forwarded as given; `p` is still valid after a
            // failed realloc.
            return Reserving::retry(|| unsafe { std::alloc::System.realloc(p, l, new) });
        }
        q
    }
}

/// What a limit is compared with: the kernel's count it is enforced on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    /// Resident pages (`statm`'s second field): a cgroup, the machine.
    Resident,
    /// The address space (`statm`'s first field): `RLIMIT_AS`.
    Virtual,
    /// Data and stack (`statm`'s sixth field): `RLIMIT_DATA`.
    Data,
}

/// Where a limit comes from, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Given,
    Cgroup,
    AddressSpace,
    DataSegment,
    Machine,
}

impl Source {
    fn describe(self) -> &'static str {
        match self {
            Source::Given => "given",
            Source::Cgroup => "the cgroup's memory limit",
            Source::AddressSpace => "RLIMIT_AS",
            Source::DataSegment => "RLIMIT_DATA",
            Source::Machine => "the machine's memory",
        }
    }
}

/// A limit on the memory the process may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    pub bytes: u64,
    pub measure: Measure,
    pub source: Source,
}

impl std::fmt::Display for Limit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", size(self.bytes), self.source.describe())
    }
}

impl Limit {
    /// A size given by the user, compared with resident memory.
    pub fn given(bytes: u64) -> Limit {
        Limit {
            bytes,
            measure: Measure::Resident,
            source: Source::Given,
        }
    }

    /// The limit with the least room left now, of those the process runs
    /// under; `None` where none can be read (no `/proc`).
    pub fn detect() -> Option<Limit> {
        let mut found: Vec<Limit> = Vec::new();
        found.extend(cgroup_limit().map(|bytes| Limit {
            bytes,
            measure: Measure::Resident,
            source: Source::Cgroup,
        }));
        found.extend(rlimit(Rlimit::AddressSpace).map(|bytes| Limit {
            bytes,
            measure: Measure::Virtual,
            source: Source::AddressSpace,
        }));
        found.extend(rlimit(Rlimit::Data).map(|bytes| Limit {
            bytes,
            measure: Measure::Data,
            source: Source::DataSegment,
        }));
        found.extend(machine_memory().map(|bytes| Limit {
            bytes,
            measure: Measure::Resident,
            source: Source::Machine,
        }));
        found
            .into_iter()
            .min_by_key(|l| l.bytes.saturating_sub(l.used().unwrap_or(0)))
    }

    /// What the process holds now, as this limit counts it.
    pub fn used(&self) -> Option<u64> {
        let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
        statm_field(&statm, self.measure)
    }
}

/// `statm`'s field for `measure`, in bytes.
fn statm_field(statm: &str, measure: Measure) -> Option<u64> {
    let at = match measure {
        Measure::Virtual => 0,
        Measure::Resident => 1,
        Measure::Data => 5,
    };
    let pages: u64 = statm.split_whitespace().nth(at)?.parse().ok()?;
    Some(pages.saturating_mul(page_size()))
}

fn page_size() -> u64 {
    // SAFETY: sysconf only reads a system constant.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(p).ok().filter(|&p| p > 0).unwrap_or(4096)
}

enum Rlimit {
    AddressSpace,
    Data,
}

/// A finite soft resource limit.
fn rlimit(which: Rlimit) -> Option<u64> {
    let resource = match which {
        Rlimit::AddressSpace => libc::RLIMIT_AS,
        Rlimit::Data => libc::RLIMIT_DATA,
    };
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct it is given.
    let ok = unsafe { libc::getrlimit(resource, &mut lim) } == 0;
    (ok && lim.rlim_cur != libc::RLIM_INFINITY).then_some(lim.rlim_cur)
}

/// The tightest memory limit of this process's cgroup and its parents
/// (v2 `memory.max`, or v1 `memory.limit_in_bytes`).
fn cgroup_limit() -> Option<u64> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mut best: Option<u64> = None;
    for line in own.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let (root, file) = if controllers.is_empty() {
            ("/sys/fs/cgroup", "memory.max")
        } else if controllers.split(',').any(|c| c == "memory") {
            ("/sys/fs/cgroup/memory", "memory.limit_in_bytes")
        } else {
            continue;
        };
        let mut dir = std::path::PathBuf::from(root);
        dir.push(path.trim_start_matches('/'));
        loop {
            if let Some(v) = read_limit(&dir.join(file)) {
                best = Some(best.map_or(v, |b| b.min(v)));
            }
            if dir.as_path() == std::path::Path::new(root) || !dir.pop() {
                break;
            }
        }
    }
    best
}

/// A cgroup limit file's value; `max`, or v1's "no limit" (near
/// `i64::MAX`), is none.
fn read_limit(path: &std::path::Path) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    let v: u64 = text.trim().parse().ok()?;
    (v < 1 << 60).then_some(v)
}

/// The machine's memory this process may have: what it holds now and
/// what the kernel says is available (`MemAvailable`: free memory and
/// caches it can drop, less what other processes hold), else `MemTotal`.
fn machine_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let field = |name: &str| -> Option<u64> {
        let kb: u64 = info
            .lines()
            .find_map(|l| l.strip_prefix(name))?
            .trim()
            .strip_suffix("kB")?
            .trim()
            .parse()
            .ok()?;
        Some(kb.saturating_mul(1024))
    };
    let held = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| statm_field(&s, Measure::Resident))
        .unwrap_or(0);
    field("MemAvailable:")
        .map(|a| a.saturating_add(held))
        .or_else(|| field("MemTotal:"))
}

/// A size for messages: MiB below a GiB, else GiB with one decimal.
pub fn size(bytes: u64) -> String {
    if bytes >= 1 << 30 {
        format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
    } else {
        format!("{} MiB", bytes.div_ceil(1 << 20))
    }
}

/// What a reading member is to do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Go on.
    Go,
    /// Stop and read again later, alone ([`Pool::join_alone`]).
    Yield,
    /// The process holds `used` bytes, past the mark, with this member
    /// alone: it cannot fit.
    Over { used: u64 },
}

#[derive(Debug)]
struct Running {
    ticket: u64,
    yield_now: Arc<AtomicBool>,
    rereadable: bool,
}

#[derive(Debug, Default)]
struct State {
    next: u64,
    running: Vec<Running>,
    /// Members waiting to run alone: no new member starts before them.
    alone_waiting: usize,
}

/// The memory that the members reading at once share (module docs).
#[derive(Debug)]
pub struct Pool {
    limit: Limit,
    state: Mutex<State>,
    wake: Condvar,
}

impl Pool {
    pub fn new(limit: Limit) -> Pool {
        Pool {
            limit,
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
        }
    }

    /// A pool of `given` bytes, or the process's own ([`Pool::process`]).
    pub fn detected(given: Option<u64>) -> Option<Arc<Pool>> {
        match given {
            Some(bytes) => Some(Arc::new(Pool::new(Limit::given(bytes)))),
            None => Pool::process(),
        }
    }

    /// The one pool of this process's own limit, shared by every
    /// campaign it runs (Python's and the distributed workers' tasks run
    /// side by side in one process).
    pub fn process() -> Option<Arc<Pool>> {
        static PROCESS: std::sync::OnceLock<Option<Arc<Pool>>> = std::sync::OnceLock::new();
        PROCESS
            .get_or_init(|| Limit::detect().map(|l| Arc::new(Pool::new(l))))
            .clone()
    }

    pub fn limit(&self) -> Limit {
        self.limit
    }

    /// Past it, the youngest member that can be read again yields.
    pub fn high_mark(&self) -> u64 {
        self.limit.bytes / 4 * 3
    }

    /// Below it, another member may start.
    pub fn admit_mark(&self) -> u64 {
        self.limit.bytes / 2
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A member that panicked leaves a consistent state (its entry is
        // removed by its drop): go on with it.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits for a member's turn: at once when none runs, else while the
    /// process holds less than [`Pool::admit_mark`] and none waits to run
    /// alone. `rereadable`: its source can be read again (a file), so it
    /// may be asked to yield.
    pub fn join(self: &Arc<Self>, rereadable: bool) -> Member {
        self.enter(rereadable, false)
    }

    /// Waits until no other member runs, then runs (a member that
    /// yielded); it is the oldest until it ends, so never asked to yield.
    pub fn join_alone(self: &Arc<Self>) -> Member {
        self.enter(false, true)
    }

    fn enter(self: &Arc<Self>, rereadable: bool, alone: bool) -> Member {
        let mut st = self.lock();
        if alone {
            st.alone_waiting += 1;
        }
        loop {
            let free = st.running.is_empty()
                || (!alone
                    && st.alone_waiting == 0
                    && self.limit.used().unwrap_or(0) < self.admit_mark());
            if free {
                break;
            }
            // Usage falls without a notice (a finish frees memory): look
            // again now and then.
            st = self
                .wake
                .wait_timeout(st, Duration::from_millis(50))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        if alone {
            st.alone_waiting -= 1;
        }
        let ticket = st.next;
        st.next += 1;
        let yield_now = Arc::new(AtomicBool::new(false));
        st.running.push(Running {
            ticket,
            yield_now: yield_now.clone(),
            rereadable,
        });
        Member {
            pool: self.clone(),
            ticket,
            yield_now,
            failed_at_join: failed_allocations(),
        }
    }
}

/// One member's place in the pool; leaving it (drop) lets others start.
#[derive(Debug)]
pub struct Member {
    pool: Arc<Pool>,
    ticket: u64,
    yield_now: Arc<AtomicBool>,
    /// [`failed_allocations`] when it joined: a failure since counts as
    /// memory past the mark.
    failed_at_join: u64,
}

impl Member {
    /// The pool's verdict for this member now (module docs).
    pub fn check(&self) -> Verdict {
        if self.yield_now.load(Ordering::Relaxed) {
            return Verdict::Yield;
        }
        let used = self.pool.limit.used().unwrap_or(0);
        let failed = failed_allocations() != self.failed_at_join;
        if !failed && used <= self.pool.high_mark() {
            return Verdict::Go;
        }
        let st = self.pool.lock();
        if st.running.len() <= 1 {
            return Verdict::Over { used };
        }
        let youngest = st
            .running
            .iter()
            .filter(|r| r.rereadable && !r.yield_now.load(Ordering::Relaxed))
            .max_by_key(|r| r.ticket);
        match youngest {
            Some(r) if r.ticket == self.ticket => Verdict::Yield,
            Some(r) => {
                r.yield_now.store(true, Ordering::Relaxed);
                Verdict::Go
            }
            // Nobody can give way: the others end in their time.
            None => Verdict::Go,
        }
    }

    pub fn limit(&self) -> Limit {
        self.pool.limit
    }

    /// Whether an allocation failed (and was served from the reserve)
    /// since it joined: the reserve is spent until it ends.
    pub fn allocation_failed(&self) -> bool {
        failed_allocations() != self.failed_at_join
    }

    /// Whether it is the only member running.
    pub fn alone(&self) -> bool {
        self.pool.lock().running.len() <= 1
    }

    /// Whether its finishes should run one at a time, each adding its
    /// working memory alone: the process holds half its limit or more
    /// now (the mark below which new members start), or a quarter of a
    /// limit that fails allocations rather than killing the process
    /// (`RLIMIT_AS`, `RLIMIT_DATA`): there two finishes side by side that
    /// both meet the limit would spend the reserve twice and abort.
    pub fn tight(&self) -> bool {
        let mark = match self.pool.limit.measure {
            Measure::Resident => self.pool.admit_mark(),
            Measure::Virtual | Measure::Data => self.pool.limit.bytes / 4,
        };
        self.used() >= mark
    }

    /// What the process holds now, as the limit counts it.
    pub fn used(&self) -> u64 {
        self.pool.limit.used().unwrap_or(0)
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        let mut st = self.pool.lock();
        st.running.retain(|r| r.ticket != self.ticket);
        drop(st);
        // Its memory is freed by now: take the reserve again if an
        // allocation used it.
        rearm();
        self.pool.wake.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statm_fields_by_measure() {
        let s = "1000 200 30 4 0 500 0\n";
        let p = page_size();
        assert_eq!(statm_field(s, Measure::Virtual), Some(1000 * p));
        assert_eq!(statm_field(s, Measure::Resident), Some(200 * p));
        assert_eq!(statm_field(s, Measure::Data), Some(500 * p));
        assert_eq!(statm_field("", Measure::Data), None);
    }

    #[test]
    fn this_process_has_a_limit_and_a_use() {
        let l = Limit::detect().expect("a limit on Linux");
        let used = l.used().expect("statm");
        assert!(used > 0 && l.bytes > 0, "{l} {used}");
    }

    /// Under a pool nothing fits in, the youngest re-readable member
    /// yields, and a member alone is over.
    #[test]
    fn the_youngest_yields_and_one_alone_is_over() {
        let pool = Arc::new(Pool::new(Limit::given(1)));
        let first = pool.join(true);
        assert!(matches!(first.check(), Verdict::Over { .. }));
        // A second member waits while usage is past the admit mark: join
        // it from another thread, then let the first go.
        let p2 = pool.clone();
        let second = std::thread::spawn(move || {
            let m = p2.join(true);
            matches!(m.check(), Verdict::Over { .. })
        });
        std::thread::sleep(Duration::from_millis(120));
        assert!(!second.is_finished(), "admitted past the admit mark");
        drop(first);
        assert!(second.join().unwrap());
    }

    #[test]
    fn the_youngest_of_two_is_asked_to_yield() {
        let pool = Arc::new(Pool::new(Limit::given(1)));
        // Two members side by side, admitted as if usage were low.
        let (a, b) = {
            let mut st = pool.lock();
            let mk = |t: u64, st: &mut State| {
                let y = Arc::new(AtomicBool::new(false));
                st.running.push(Running {
                    ticket: t,
                    yield_now: y.clone(),
                    rereadable: true,
                });
                Member {
                    pool: pool.clone(),
                    ticket: t,
                    yield_now: y,
                    failed_at_join: 0,
                }
            };
            st.next = 2;
            (mk(0, &mut st), mk(1, &mut st))
        };
        // The older one checks first: the younger is told to yield.
        assert_eq!(a.check(), Verdict::Go);
        assert_eq!(b.check(), Verdict::Yield);
        drop(b);
        assert!(matches!(a.check(), Verdict::Over { .. }));
    }
}
