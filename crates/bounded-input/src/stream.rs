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
