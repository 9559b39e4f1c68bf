//! A reader that runs its source on a separate thread.
//!
//! Inflating a gzip stream is about as expensive as scanning the JSON it
//! yields, so on a 2-core machine the two should overlap. The producer thread
//! fills fixed-size buffers and sends them through a bounded channel; empty
//! buffers come back through a second channel, so steady state allocates
//! nothing and memory stays at `DEPTH × CHUNK`.
//!
//! The end of the stream is an explicit message, sent only after the source
//! returned end-of-file, which for a gzip decoder means every member's
//! CRC-32 and length were checked. A producer that stops any other way (a
//! panic in the decoder, a thread that never started) is an error for the
//! reader, never a silent, early end of the data.

use std::io::{self, Read};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

/// 512 KiB: the six buffers in flight were 6 MiB of every read's memory with
/// 1 MiB chunks (a fifth of `kernels`' peak on the 1.14 GB benchmark trace).
const CHUNK: usize = 512 << 10;
const DEPTH: usize = 4;

/// What the producer sends.
enum Msg {
    Data(Vec<u8>),
    /// The source said end-of-file; nothing follows.
    End,
    Failed(io::Error),
}

/// The consuming end: implements [`Read`] over the producer's chunks.
pub struct PipeReader {
    full: Receiver<Msg>,
    empty: SyncSender<Vec<u8>>,
    current: Vec<u8>,
    pos: usize,
    done: bool,
    handle: Option<JoinHandle<()>>,
}

impl PipeReader {
    /// Starts a thread that reads `src` to its end (or first error).
    pub fn spawn<R: Read + Send + 'static>(src: R) -> Self {
        let (full_tx, full_rx) = sync_channel::<Msg>(DEPTH);
        let (empty_tx, empty_rx) = sync_channel::<Vec<u8>>(DEPTH + 2);
        let handle = std::thread::Builder::new()
            .name("torchtrace-inflate".into())
            .spawn(move || produce(src, full_tx, empty_rx))
            .ok();
        // If the thread could not start, `full` has no sender and the first
        // read reports it.
        PipeReader {
            full: full_rx,
            empty: empty_tx,
            current: Vec::new(),
            pos: 0,
            done: false,
            handle,
        }
    }
}

fn produce<R: Read>(mut src: R, full: SyncSender<Msg>, empty: Receiver<Vec<u8>>) {
    loop {
        let mut buf = empty
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(CHUNK));
        buf.resize(CHUNK, 0);
        let mut filled = 0;
        // Fill the chunk completely (decoders return small reads) so that the
        // consumer sees few, large messages.
        let res = loop {
            match src.read(&mut buf[filled..]) {
                Ok(0) => break Ok(()),
                Ok(n) => {
                    filled += n;
                    if filled == buf.len() {
                        break Ok(());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        buf.truncate(filled);
        let eof = filled < CHUNK;
        if filled > 0 && full.send(Msg::Data(buf)).is_err() {
            return; // consumer gone
        }
        if let Err(e) = res {
            let _ = full.send(Msg::Failed(e));
            return;
        }
        if eof {
            let _ = full.send(Msg::End);
            return;
        }
    }
}

impl Read for PipeReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.pos == self.current.len() {
            if self.done {
                return Ok(0);
            }
            let spent = std::mem::take(&mut self.current);
            if spent.capacity() > 0 {
                let _ = self.empty.try_send(spent);
            }
            self.pos = 0;
            match self.full.recv() {
                Ok(Msg::Data(buf)) => self.current = buf,
                Ok(Msg::End) => {
                    self.done = true;
                    return Ok(0);
                }
                Ok(Msg::Failed(e)) => {
                    self.done = true;
                    return Err(e);
                }
                Err(_) => {
                    // The producer went away without saying the data ended.
                    self.done = true;
                    return Err(io::Error::other(
                        "the decompressing thread stopped before the end of the data",
                    ));
                }
            }
        }
        let n = out.len().min(self.current.len() - self.pos);
        out[..n].copy_from_slice(&self.current[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

impl Drop for PipeReader {
    fn drop(&mut self) {
        // Dropping our receiver makes the producer's next send fail, so it
        // exits; we wait so no thread outlives the reader.
        let (_tx, rx) = sync_channel(0);
        drop(std::mem::replace(&mut self.full, rx));
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_bytes_in_order() {
        let data: Vec<u8> = (0..5_000_000u32).map(|i| (i % 251) as u8).collect();
        let mut r = PipeReader::spawn(io::Cursor::new(data.clone()));
        let mut out = Vec::new();
        r.read_to_end(&mut out).unwrap();
        assert_eq!(out, data);
    }

    #[test]
    fn a_producer_that_dies_is_an_error_not_an_end() {
        struct Panics(usize);
        impl Read for Panics {
            fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
                if self.0 == 0 {
                    panic!("decoder bug (expected in this test)");
                }
                self.0 -= 1;
                out[0] = b'x';
                Ok(1)
            }
        }
        let mut r = PipeReader::spawn(Panics(3));
        let mut out = Vec::new();
        let err = r.read_to_end(&mut out).unwrap_err();
        assert!(err.to_string().contains("stopped before the end"), "{err}");
    }

    #[test]
    fn errors_come_after_the_data_before_them() {
        struct Fails(bool);
        impl Read for Fails {
            fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
                if std::mem::replace(&mut self.0, true) {
                    return Err(io::Error::other("bad crc"));
                }
                out[..3].copy_from_slice(b"abc");
                Ok(3)
            }
        }
        let mut r = PipeReader::spawn(Fails(false));
        let mut out = [0u8; 8];
        assert_eq!(r.read(&mut out).unwrap(), 3);
        assert!(r.read(&mut out).is_err());
        assert_eq!(r.read(&mut out).unwrap(), 0);
    }

    #[test]
    fn early_drop_does_not_hang() {
        let data = vec![7u8; 20 * CHUNK];
        let mut r = PipeReader::spawn(io::Cursor::new(data));
        let mut small = [0u8; 10];
        r.read_exact(&mut small).unwrap();
        drop(r);
    }
}
