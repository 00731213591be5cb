//! Hostile images: a PNG bomb and headers declaring sizes no decoder should allocate.

use super::*;

/// The dimensions of [`png_bomb`], and how much of its compressed pixel data it keeps.
pub(super) const PNG_BOMB_SIDE: u32 = 100_000;
pub(super) const PNG_BOMB_KEPT: u64 = 4 * MIB;
/// The width and height of [`jpeg_huge_dimensions`].
pub(super) const JPEG_SIDE: u16 = 65_500;

/// Claims: a PNG of 100000 × 100000 RGBA pixels, 8 bits per sample (40 GB of pixels).
/// Really: the pixel data (zero rows, each with filter byte 0) is a valid zlib stream cut off
/// after 4 MiB of compressed data (in four 1 MiB IDAT chunks, correct CRCs), which is 4.3 GB
/// (about 10,800 rows) decoded before it runs out. File 4 MiB; ratio about 1 : 1030.
pub fn png_bomb() -> Vec<u8> {
    // Compress a little more than the kept part holds, then cut.
    let mut data = zlib(&[repeat(&[0], (PNG_BOMB_KEPT + 64 * KIB) * RUN_BYTES_PER_DEFLATE_BYTE)]);
    data.truncate(usize::try_from(PNG_BOMB_KEPT).expect("4 MiB"));
    png(PNG_BOMB_SIDE, PNG_BOMB_SIDE, &data)
}

/// Claims: a PNG of 2147483647 × 2147483647 RGBA pixels (the largest PNG allows; 18 EB).
/// Really: one IDAT of 162 bytes, a complete zlib stream of 1 KiB of zeros. File 219 bytes.
pub fn png_dimensions_only() -> Vec<u8> {
    let side = u32::MAX >> 1;
    png(side, side, &zlib(&[repeat(&[0], KIB)]))
}

/// Claims: a baseline JPEG of 65500 × 65500 pixels, three components (12.9 GB decoded).
/// Really: a valid header (DQT, SOF0, DHT, SOS) and 4 KiB of scan data, 16,384 blocks of zero
/// coefficients (part of the first row of blocks), then EOI. File about 4.2 kB.
pub fn jpeg_huge_dimensions() -> Vec<u8> {
    let mut out = vec![0xFF, 0xD8];
    // One quantisation table, all ones.
    let mut dqt = vec![0x00];
    dqt.extend_from_slice(&[1; 64]);
    jpeg_segment(&mut out, 0xDB, &dqt);
    // Baseline frame: 8-bit samples, height, width, three components (1×1 sampling, table 0).
    let mut sof = vec![8];
    sof.extend_from_slice(&JPEG_SIDE.to_be_bytes());
    sof.extend_from_slice(&JPEG_SIDE.to_be_bytes());
    sof.push(3);
    for component in 1..=3 {
        sof.extend_from_slice(&[component, 0x11, 0]);
    }
    jpeg_segment(&mut out, 0xC0, &sof);
    // Huffman tables: DC table 0 and AC table 0 each hold one code, "0", for value 0 (a DC
    // difference of 0; end of block), so a block of zero coefficients costs two bits.
    let mut dht = Vec::new();
    for class in [0x00, 0x10] {
        dht.push(class);
        let mut counts = [0u8; 16];
        counts[0] = 1;
        dht.extend_from_slice(&counts);
        dht.push(0);
    }
    jpeg_segment(&mut out, 0xC4, &dht);
    // Scan of the three components (tables 0 and 0), spectral selection 0–63.
    jpeg_segment(&mut out, 0xDA, &[3, 1, 0x00, 2, 0x00, 3, 0x00, 0, 63, 0]);
    out.extend_from_slice(&[0; 4096]);
    out.extend_from_slice(&[0xFF, 0xD9]);
    out
}

/// A PNG of `width` × `height` RGBA pixels, 8 bits per sample, with `data` in IDAT chunks of at
/// most 1 MiB.
pub(super) fn png(width: u32, height: u32, data: &[u8]) -> Vec<u8> {
    let mut out = b"\x89PNG\r\n\x1A\n".to_vec();
    let mut header = Vec::new();
    header.extend_from_slice(&width.to_be_bytes());
    header.extend_from_slice(&height.to_be_bytes());
    // Bit depth 8, colour type 6 (RGBA), deflate, adaptive filtering, no interlace.
    header.extend_from_slice(&[8, 6, 0, 0, 0]);
    png_chunk(&mut out, b"IHDR", &header);
    for part in data.chunks(MIB as usize) {
        png_chunk(&mut out, b"IDAT", part);
    }
    png_chunk(&mut out, b"IEND", &[]);
    out
}

/// Appends a PNG chunk: length, type, data, CRC-32 of type and data.
pub(super) fn png_chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&u32::try_from(data.len()).expect("a PNG chunk under 4 GiB").to_be_bytes());
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let crc = crc32_concat(crc32(kind), crc32(data), data.len() as u64);
    out.extend_from_slice(&crc.to_be_bytes());
}

/// Appends a JPEG marker segment: 0xFF, `marker`, length (including itself), `data`.
pub(super) fn jpeg_segment(out: &mut Vec<u8>, marker: u8, data: &[u8]) {
    out.extend_from_slice(&[0xFF, marker]);
    out.extend_from_slice(&u16::try_from(data.len() + 2).expect("a short JPEG segment").to_be_bytes());
    out.extend_from_slice(data);
}
