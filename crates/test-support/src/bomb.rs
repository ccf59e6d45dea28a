//! Decompression bombs for tests of capped reads: a `.tar.gz` whose one member inflates to any
//! size, built in milliseconds.
//!
//! The member is blank: spaces, which a JSON parser reading from the stream skips on without end,
//! so what stops it is the cap, as it would be for a member of real objects, not a syntax error
//! at the first byte.
//!
//! Deflating gigabytes would take seconds per test. Instead one MiB of spaces is deflated
//! once with a full flush (which resets the compressor, so the same input always deflates to the
//! same bytes) and that block is repeated: a raw deflate stream may be any sequence of blocks. The
//! gzip trailer's CRC is not computed; a reader that honours its caps stops long before it.

use flate2::{Compress, Compression, FlushCompress};

const CHUNK: usize = 1 << 20;

/// A `.tar.gz` holding one regular file `member` that claims (and inflates to at least)
/// `size` bytes of spaces. `size` is rounded up to whole MiB.
pub fn tar_gz_bomb(member: &str, size: u64) -> Vec<u8> {
    let mut header = tar::Header::new_gnu();
    header.set_path(member).expect("a valid member name");
    header.set_size(size);
    header.set_mode(0o644);
    header.set_entry_type(tar::EntryType::Regular);
    header.set_cksum();
    gzip_of(header.as_bytes(), size.div_ceil(CHUNK as u64) + 1)
}

/// A gzip stream of `prefix` followed by `chunks` MiB of spaces.
pub fn gzip_of(prefix: &[u8], chunks: u64) -> Vec<u8> {
    let mut compress = Compress::new(Compression::fast(), false);
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    out.extend(deflate(&mut compress, prefix, FlushCompress::Full));
    let blank = deflate(&mut compress, &vec![b' '; CHUNK], FlushCompress::Full);
    for _ in 0..chunks {
        out.extend_from_slice(&blank);
    }
    out.extend(deflate(&mut compress, &[], FlushCompress::Finish));
    out.extend_from_slice(&[0; 8]);
    out
}

fn deflate(compress: &mut Compress, input: &[u8], flush: FlushCompress) -> Vec<u8> {
    let mut out = Vec::with_capacity(input.len() / 100 + 64);
    let mut consumed = 0;
    loop {
        if out.capacity() - out.len() < 64 {
            out.reserve(out.capacity().max(64));
        }
        let before = compress.total_in();
        compress
            .compress_vec(&input[consumed..], &mut out, flush)
            .expect("deflate");
        consumed += usize::try_from(compress.total_in() - before).expect("fits");
        let flushed = out.len() < out.capacity();
        if consumed == input.len() && flushed {
            return out;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    #[test]
    fn the_bomb_inflates_to_its_claimed_size() {
        let bomb = tar_gz_bomb("snapshot/workloads.json", 8 << 20);
        assert!(bomb.len() < 64 * 1024, "{} bytes", bomb.len());
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(&bomb[..]));
        let mut entries = archive.entries().unwrap();
        let mut entry = entries.next().unwrap().unwrap();
        assert_eq!(entry.header().size().unwrap(), 8 << 20);
        let mut inflated = 0;
        let mut buffer = vec![0; 1 << 16];
        loop {
            let n = entry.read(&mut buffer).unwrap();
            if n == 0 {
                break;
            }
            assert!(buffer[..n].iter().all(|&b| b == b' '));
            inflated += n;
        }
        assert_eq!(inflated, 8 << 20);
    }
}
