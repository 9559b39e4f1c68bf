//! The one progress bar of a batch: bytes read (compressed, as stored),
//! files done, ETA; drawn by a ticker thread only when stderr is a
//! terminal, so the readers only bump two counters.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// One progress bar for the whole batch: bytes read (compressed, as
/// stored), files done, ETA. Drawn only when stderr is a terminal.
pub struct Progress {
    pub bytes: Arc<AtomicU64>,
    files: Arc<AtomicU64>,
    ticker: Option<(ProgressBar, std::thread::JoinHandle<()>, Arc<AtomicBool>)>,
}

impl Progress {
    pub fn new(total_bytes: u64, quiet: bool) -> Self {
        let bytes = Arc::new(AtomicU64::new(0));
        let files = Arc::new(AtomicU64::new(0));
        if !crate::progress::enabled(quiet) {
            return Progress {
                bytes,
                files,
                ticker: None,
            };
        }
        let bar = ProgressBar::with_draw_target(Some(total_bytes), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(
                "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} ETA {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        let stop = Arc::new(AtomicBool::new(false));
        let (b, c, f, s) = (bar.clone(), bytes.clone(), files.clone(), stop.clone());
        let handle = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                b.set_position(c.load(Ordering::Relaxed));
                b.set_message(format!("{} files", f.load(Ordering::Relaxed)));
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        Progress {
            bytes,
            files,
            ticker: Some((bar, handle, stop)),
        }
    }

    pub fn file_done(&self) {
        self.files.fetch_add(1, Ordering::Relaxed);
    }

    pub fn finish(self) {
        if let Some((bar, handle, stop)) = self.ticker {
            stop.store(true, Ordering::Relaxed);
            let _ = handle.join();
            bar.finish_and_clear();
        }
    }
}
