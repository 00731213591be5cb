//! zlib streams (FlateDecode): inflating with a bound on the output, deflating at the best
//! level. Compression and image recompression repack streams with these.

/// zlib data at the best compression level.
pub fn zlib_best(data: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::with_capacity(data.len() / 2), flate2::Compression::best());
    // Writing to a Vec cannot fail.
    let _ = encoder.write_all(data);
    let mut packed = encoder.finish().unwrap_or_default();
    // Kept in a document, often far smaller than the guess: what it does not use is given back.
    packed.shrink_to_fit();
    packed
}

/// Inflates a complete zlib stream of at most `cap` bytes; None when the data is damaged,
/// truncated or larger (a damaged stream is kept as it is: readers recover what they can).
pub fn inflate(data: &[u8], cap: usize) -> Option<Vec<u8>> {
    use flate2::{Decompress, FlushDecompress, Status};
    let mut decoder = Decompress::new(true);
    let mut out: Vec<u8> = Vec::with_capacity(data.len().saturating_mul(2).clamp(1024, cap.clamp(1024, 64 << 20)));
    loop {
        if out.len() > cap {
            return None;
        }
        if out.len() == out.capacity() {
            out.reserve(out.len().clamp(64 * 1024, 64 * 1024 * 1024));
        }
        let consumed = usize::try_from(decoder.total_in()).ok()?;
        let (before_in, before_out) = (decoder.total_in(), decoder.total_out());
        let status = decoder.decompress_vec(data.get(consumed..)?, &mut out, FlushDecompress::None).ok()?;
        match status {
            Status::StreamEnd => return (out.len() <= cap).then_some(out),
            Status::Ok | Status::BufError => {
                let stuck = decoder.total_in() == before_in && decoder.total_out() == before_out;
                if stuck && out.len() < out.capacity() {
                    // The input ended before the stream did.
                    return None;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inflate_refuses_damaged_truncated_and_oversized_data() {
        let data = zlib_best(&[7u8; 10_000]);
        assert_eq!(inflate(&data, 10_000).unwrap(), vec![7u8; 10_000]);
        assert!(inflate(&data, 9_999).is_none());
        assert!(inflate(&data[..data.len() - 6], 20_000).is_none());
        assert!(inflate(b"not zlib at all", 20_000).is_none());
    }
}
