//! Progress bars on stderr (indicatif), drawn only when stderr is a
//! terminal and `--quiet` is off.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Whether progress should be drawn at all.
pub fn enabled(quiet: bool) -> bool {
    !quiet && std::io::stderr().is_terminal()
}

/// A byte-progress bar for one file, fed by a shared counter of compressed
/// bytes read.
pub struct FileProgress {
    counter: Arc<AtomicU64>,
    bar: Option<(ProgressBar, std::thread::JoinHandle<()>, Arc<AtomicU64>)>,
}

impl FileProgress {
    pub fn new(path: &Path, quiet: bool) -> Self {
        let counter = Arc::new(AtomicU64::new(0));
        let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        // Small files finish before a bar would be seen.
        if !enabled(quiet) || size < 64 << 20 {
            return FileProgress { counter, bar: None };
        }
        let bar = ProgressBar::with_draw_target(Some(size), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(
                "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} ETA {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        bar.set_message(
            path.file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default(),
        );
        let stop = Arc::new(AtomicU64::new(0));
        let (b, c, s) = (bar.clone(), counter.clone(), stop.clone());
        let handle = std::thread::spawn(move || {
            while s.load(Ordering::Relaxed) == 0 {
                b.set_position(c.load(Ordering::Relaxed));
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        FileProgress {
            counter,
            bar: Some((bar, handle, stop)),
        }
    }

    pub fn counter(&self) -> Arc<AtomicU64> {
        self.counter.clone()
    }

    pub fn finish(self) {
        if let Some((bar, handle, stop)) = self.bar {
            stop.store(1, Ordering::Relaxed);
            let _ = handle.join();
            bar.finish_and_clear();
        }
    }
}
