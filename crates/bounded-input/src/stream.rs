//! Capped reads of streams, and a total budget over many inputs.

use std::io::Read;

use crate::{ReadError, ReadErrorKind};

/// Reads `reader` to its end if it yields at most `cap` bytes; `input` names it in errors
/// (`stdin`, `snapshot.tar.gz/objects/a.yaml`).
///
/// Never reads more than `cap + 1` bytes, so an endless stream (`/dev/zero` behind a pipe, a
/// decompression bomb) costs at most the cap in memory.
pub fn read_capped(reader: impl Read, cap: u64, input: &str) -> Result<Vec<u8>, ReadError> {
    read_capped_with_hint(reader, cap, 0).map_err(|kind| ReadError::new(input, kind))
}

/// [`read_capped`], as UTF-8 text.
pub fn read_capped_to_string(
    reader: impl Read,
    cap: u64,
    input: &str,
) -> Result<String, ReadError> {
    let bytes = read_capped(reader, cap, input)?;
    String::from_utf8(bytes).map_err(|_| ReadError::new(input, ReadErrorKind::NotUtf8))
}

/// Reads up to `cap` bytes, preallocating `hint` (clamped to the cap) when the size is known.
pub(crate) fn read_capped_with_hint(
    reader: impl Read,
    cap: u64,
    hint: u64,
) -> Result<Vec<u8>, ReadErrorKind> {
    let preallocate = usize::try_from(hint.min(cap)).unwrap_or(0);
    let mut buffer = Vec::with_capacity(preallocate);
    reader
        .take(cap.saturating_add(1))
        .read_to_end(&mut buffer)
        .map_err(ReadErrorKind::Io)?;
    if buffer.len() as u64 > cap {
        return Err(ReadErrorKind::TooLarge { cap });
    }
    Ok(buffer)
}

/// A reader for parsers that consume a stream as they go (e.g. `serde_json::from_reader`): it
/// yields at most `cap` bytes of `inner` and fails on the byte past them, remembering that it
/// did, because the parser's own error hides the cause. After a failed parse, ask
/// [`CappedReader::over_cap`] and report [`CappedReader::too_large`] instead of the parser's
/// text.
#[derive(Debug)]
pub struct CappedReader<R> {
    inner: R,
    cap: u64,
    read: u64,
    over_cap: bool,
}

impl<R: Read> CappedReader<R> {
    /// Reads `inner` under `cap` bytes.
    pub fn new(inner: R, cap: u64) -> Self {
        Self {
            inner,
            cap,
            read: 0,
            over_cap: false,
        }
    }

    /// The bytes read so far.
    pub fn bytes_read(&self) -> u64 {
        self.read
    }

    /// Whether a read went past the cap (and failed).
    pub fn over_cap(&self) -> bool {
        self.over_cap
    }

    /// The error for `input` having gone past the cap.
    pub fn too_large(&self, input: &str) -> ReadError {
        ReadError::new(input, ReadErrorKind::TooLarge { cap: self.cap })
    }
}

impl<R: Read> Read for CappedReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.read >= self.cap {
            // At the cap: the input fits only if nothing follows.
            let mut probe = [0u8; 1];
            if self.inner.read(&mut probe)? == 0 {
                return Ok(0);
            }
            self.over_cap = true;
            return Err(std::io::Error::other("input over its cap"));
        }
        let room = usize::try_from(self.cap - self.read)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        let n = self.inner.read(&mut buf[..room])?;
        self.read += n as u64;
        Ok(n)
    }
}

/// A total cap over many reads: each read takes its size from the budget, and the read that
/// would exceed it fails naming the total cap.
#[derive(Debug, Clone)]
pub struct Budget {
    cap: u64,
    used: u64,
}

impl Budget {
    /// A budget of `cap` bytes.
    pub fn new(cap: u64) -> Self {
        Self { cap, used: 0 }
    }

    /// Bytes still available.
    pub fn remaining(&self) -> u64 {
        self.cap - self.used
    }

    /// Takes `bytes` for `input`, or fails when the total would pass the cap.
    pub fn take(&mut self, bytes: u64, input: &str) -> Result<(), ReadError> {
        if bytes > self.remaining() {
            return Err(ReadError::new(
                input,
                ReadErrorKind::BudgetExhausted { cap: self.cap },
            ));
        }
        self.used += bytes;
        Ok(())
    }

    /// The cap for the next single read: the smaller of `per_input` and what is left.
    pub fn next_cap(&self, per_input: u64) -> u64 {
        per_input.min(self.remaining())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_stream_stops_at_the_cap() {
        let endless = std::io::repeat(b'a');
        let error = read_capped(endless, 4096, "stdin").unwrap_err();
        assert_eq!(error.to_string(), "stdin: is larger than the 4 KiB cap");
    }

    #[test]
    fn a_stream_at_exactly_the_cap_is_read() {
        let data = [b'z'; 100];
        assert_eq!(read_capped(&data[..], 100, "x").unwrap().len(), 100);
        assert!(read_capped(&data[..], 99, "x").is_err());
    }

    #[test]
    fn a_capped_reader_gives_what_fits_and_fails_past_the_cap() {
        let mut exact = CappedReader::new(&[b'z'; 100][..], 100);
        let mut out = Vec::new();
        exact.read_to_end(&mut out).unwrap();
        assert_eq!(
            (out.len(), exact.bytes_read(), exact.over_cap()),
            (100, 100, false)
        );

        let mut endless = CappedReader::new(std::io::repeat(b' '), 4096);
        let failed = std::io::copy(&mut endless, &mut std::io::sink()).unwrap_err();
        assert_eq!(failed.to_string(), "input over its cap");
        assert!(endless.over_cap());
        assert_eq!(endless.bytes_read(), 4096);
        assert_eq!(
            endless.too_large("snap.tgz:workloads.json").to_string(),
            "snap.tgz:workloads.json: is larger than the 4 KiB cap"
        );
    }

    #[test]
    fn the_budget_fails_the_read_that_passes_it() {
        let mut budget = Budget::new(10);
        budget.take(6, "a.yaml").unwrap();
        assert_eq!(budget.next_cap(100), 4);
        let error = budget.take(5, "b.yaml").unwrap_err();
        assert_eq!(
            error.to_string(),
            "b.yaml: inputs together are larger than the 10 B total cap"
        );
        budget.take(4, "c.yaml").unwrap();
        assert_eq!(budget.remaining(), 0);
    }
}
