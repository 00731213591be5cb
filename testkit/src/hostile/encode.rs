//! Writing gigabytes without holding them: content described by repetition, deflate and zlib
//! written by hand, checksums of repeated content, and LZW as PDF reads it.

/// A stretch of content: `pattern` written `count` times in a row. A file part is a slice of
/// runs, which is how gigabytes are described (and compressed, and checksummed) without being
/// written out.
#[derive(Clone, Copy)]
pub(super) struct Run<'a> {
    pub(super) pattern: &'a [u8],
    pub(super) count: u64,
}

/// `bytes`, once.
pub(super) fn once(bytes: &[u8]) -> Run<'_> {
    Run { pattern: bytes, count: 1 }
}

/// `pattern`, `count` times.
pub(super) fn repeat(pattern: &[u8], count: u64) -> Run<'_> {
    Run { pattern, count }
}

/// `head`, then `pattern` as many times as fits with `tail` in `total` bytes, then `tail`.
pub(super) fn filled<'a>(head: &'a [u8], pattern: &'a [u8], tail: &'a [u8], total: u64) -> [Run<'a>; 3] {
    let room = total - (head.len() + tail.len()) as u64;
    [once(head), repeat(pattern, room / pattern.len() as u64), once(tail)]
}

/// The length of the content `runs` describe.
pub(super) fn decoded_len(runs: &[Run]) -> u64 {
    runs.iter().map(|run| run.pattern.len() as u64 * run.count).sum()
}

/// The content `runs` describe, written out.
pub(super) fn materialize(runs: &[Run]) -> Vec<u8> {
    let mut out = Vec::with_capacity(usize::try_from(decoded_len(runs)).expect("content that fits in memory"));
    for run in runs {
        out.extend_from_slice(&run.pattern.repeat(usize::try_from(run.count).expect("a count that fits in memory")));
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Deflate (RFC 1951) and zlib (RFC 1950), written by hand

/// Deflate's length codes 257–285: the least length of each, and its extra bits.
pub(super) const LENGTH_BASE: [u32; 29] =
    [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258];
pub(super) const LENGTH_EXTRA: [u32; 29] =
    [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0];
/// Deflate's distance codes 0–29: the least distance of each, and its extra bits.
pub(super) const DISTANCE_BASE: [u32; 30] = [
    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145,
    8193, 12289, 16385, 24577,
];
pub(super) const DISTANCE_EXTRA: [u32; 30] =
    [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13];
/// The order in which a dynamic block lists the code lengths of the code-length alphabet.
pub(super) const CODE_LENGTH_ORDER: [usize; 19] = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15];
pub(super) const END_OF_BLOCK: usize = 256;
/// The longest match, whose length symbol (285) has no extra bits.
pub(super) const MAX_MATCH: u32 = 258;
pub(super) const MAX_DISTANCE: usize = 32_768;
/// The bytes of a one-byte run that a byte of its deflate data holds: four 258-byte copies of two
/// bits each.
pub(super) const RUN_BYTES_PER_DEFLATE_BYTE: u64 = 4 * MAX_MATCH as u64;

/// `runs` as a zlib stream: header (32 KiB window, no dictionary), deflate data, Adler-32.
pub(super) fn zlib(runs: &[Run]) -> Vec<u8> {
    let mut out = vec![0x78, 0x01];
    out.extend_from_slice(&deflate(runs));
    out.extend_from_slice(&adler32_runs(runs).to_be_bytes());
    out
}

/// `runs` as raw deflate data: one final block with dynamic Huffman codes. Each run's pattern is
/// written once as literals; its repetitions are copies of the pattern's length back, 258 bytes
/// at a time, and the symbol for a 258-byte copy gets a one-bit code. A run of one repeated byte
/// therefore costs two bits per 258 bytes (1 : 1032), a 32-byte pattern five bits.
pub(super) fn deflate(runs: &[Run]) -> Vec<u8> {
    let runs: Vec<&Run> = runs.iter().filter(|run| run.count > 0 && !run.pattern.is_empty()).collect();
    // The symbols used.
    let mut literal_used = [false; 286];
    literal_used[END_OF_BLOCK] = true;
    let mut distance_used = [false; 30];
    for run in &runs {
        for &byte in run.pattern {
            literal_used[usize::from(byte)] = true;
        }
        if let Some(copies) = Copies::of(run) {
            distance_used[distance_code(copies.distance).0] = true;
            if copies.tail >= 3 {
                literal_used[length_code(copies.tail).0] = true;
            }
        }
    }
    // Complete prefix codes (inflaters refuse incomplete ones): symbol 285 takes one bit and the
    // other used literal/length symbols share the other half of the code space; the used
    // distance symbols (at least two) share all of theirs.
    let mut literal_lengths = [0; 286];
    let others: Vec<usize> = (0..285).filter(|&symbol| literal_used[symbol]).collect();
    for (&symbol, length) in others.iter().zip(complete_code(others.len())) {
        literal_lengths[symbol] = length + 1;
    }
    literal_lengths[285] = 1;
    let mut distances: Vec<usize> = (0..30).filter(|&symbol| distance_used[symbol]).collect();
    let mut spare = (0..30).filter(|&symbol| !distance_used[symbol]);
    while distances.len() < 2 {
        distances.push(spare.next().expect("30 distance symbols"));
    }
    distances.sort_unstable();
    let mut distance_lengths = vec![0; distances[distances.len() - 1] + 1];
    for (&symbol, length) in distances.iter().zip(complete_code(distances.len())) {
        distance_lengths[symbol] = length;
    }

    // Block header: final, dynamic; 286 literal/length and n distance code lengths, each written
    // with a code-length code in which the lengths 0–15 all have four-bit codes (the code of
    // length l is l itself) and 16–18 are unused.
    let mut writer = LsbWriter::default();
    writer.put(1, 1);
    writer.put(2, 2);
    writer.put(286 - 257, 5);
    writer.put(distance_lengths.len() as u32 - 1, 5);
    writer.put(19 - 4, 4);
    for symbol in CODE_LENGTH_ORDER {
        writer.put(if symbol < 16 { 4 } else { 0 }, 3);
    }
    for &length in literal_lengths.iter().chain(&distance_lengths) {
        writer.put(reverse_bits(length, 4), 4);
    }
    let mut block = Block {
        writer,
        literal_codes: canonical_codes(&literal_lengths),
        distance_codes: canonical_codes(&distance_lengths),
    };
    for run in &runs {
        for &byte in run.pattern {
            block.literal(byte);
        }
        if let Some(copies) = Copies::of(run) {
            block.copies(MAX_MATCH, copies.distance, copies.full);
            if copies.tail >= 3 {
                block.copies(copies.tail, copies.distance, 1);
            } else {
                let done = copies.full * u64::from(MAX_MATCH);
                for i in 0..u64::from(copies.tail) {
                    block.literal(run.pattern[((done + i) % run.pattern.len() as u64) as usize]);
                }
            }
        }
    }
    let end = block.literal_codes[END_OF_BLOCK];
    block.writer.code(end);
    block.writer.finish()
}

/// How a run's repetitions are copied: `full` copies of 258 bytes, then `tail` bytes (copied if
/// three or more, else written as literals), all from `distance` back.
pub(super) struct Copies {
    distance: u32,
    full: u64,
    tail: u32,
}

impl Copies {
    /// None for a run written once.
    fn of(run: &Run) -> Option<Copies> {
        if run.count < 2 {
            return None;
        }
        let distance = run.pattern.len();
        assert!(distance <= MAX_DISTANCE, "a repeated pattern fits in deflate's 32 KiB window");
        let copied = (run.count - 1) * distance as u64;
        Some(Copies {
            distance: distance as u32,
            full: copied / u64::from(MAX_MATCH),
            tail: (copied % u64::from(MAX_MATCH)) as u32,
        })
    }
}

/// A Huffman code ready to write: its bits reversed (deflate writes codes from their first bit
/// into the low end of each byte) and its length.
#[derive(Clone, Copy, Default)]
pub(super) struct Code {
    bits: u32,
    len: u32,
}

/// The body of a dynamic block being written.
pub(super) struct Block {
    writer: LsbWriter,
    literal_codes: Vec<Code>,
    distance_codes: Vec<Code>,
}

impl Block {
    fn literal(&mut self, byte: u8) {
        self.writer.code(self.literal_codes[usize::from(byte)]);
    }

    /// Writes `count` copies of `length` bytes from `distance` back. Every copy has the same
    /// bits, so eight copies fill a whole number of bytes: past the first sixteen, the bytes
    /// the second eight produced are repeated rather than written bit by bit.
    fn copies(&mut self, length: u32, distance: u32, count: u64) {
        let (length_symbol, length_extra_bits, length_extra) = length_code(length);
        let (distance_symbol, distance_extra_bits, distance_extra) = distance_code(distance);
        let (length_code, distance_code) = (self.literal_codes[length_symbol], self.distance_codes[distance_symbol]);
        let one = |writer: &mut LsbWriter| {
            writer.code(length_code);
            writer.put(length_extra, length_extra_bits);
            writer.code(distance_code);
            writer.put(distance_extra, distance_extra_bits);
        };
        if count <= 16 {
            (0..count).for_each(|_| one(&mut self.writer));
            return;
        }
        // The first eight leave the pending bits as every later group of eight will.
        (0..8).for_each(|_| one(&mut self.writer));
        let start = self.writer.out.len();
        (0..8).for_each(|_| one(&mut self.writer));
        let group = self.writer.out[start..].to_vec();
        let rest = count - 16;
        self.writer.out.extend_from_slice(&group.repeat(usize::try_from(rest / 8).expect("fits in memory")));
        (0..rest % 8).for_each(|_| one(&mut self.writer));
    }
}

/// The symbol of a copy of `length` (3–258) bytes, and its extra bits: (symbol, bit count, value).
pub(super) fn length_code(length: u32) -> (usize, u32, u32) {
    let index = if length == MAX_MATCH {
        28
    } else {
        LENGTH_BASE[..28].iter().rposition(|&base| base <= length).expect("a copy of at least three bytes")
    };
    (257 + index, LENGTH_EXTRA[index], length - LENGTH_BASE[index])
}

/// The symbol of a copy from `distance` (1–32768) back, and its extra bits.
pub(super) fn distance_code(distance: u32) -> (usize, u32, u32) {
    let index = DISTANCE_BASE.iter().rposition(|&base| base <= distance).expect("a distance of at least one");
    (index, DISTANCE_EXTRA[index], distance - DISTANCE_BASE[index])
}

/// Code lengths making a complete prefix code of `count` symbols: all of depth ⌈log₂ count⌉,
/// except the first few one shorter when `count` is not a power of two.
pub(super) fn complete_code(count: usize) -> Vec<u32> {
    let leaves = count.next_power_of_two();
    let depth = leaves.trailing_zeros();
    let shorter = leaves - count;
    (0..count).map(|i| if i < shorter { depth - 1 } else { depth }).collect()
}

/// The canonical Huffman codes of `lengths` (RFC 1951, 3.2.2), reversed for writing.
pub(super) fn canonical_codes(lengths: &[u32]) -> Vec<Code> {
    let mut per_length = [0u32; 16];
    for &length in lengths.iter().filter(|&&length| length > 0) {
        per_length[length as usize] += 1;
    }
    let mut next = [0u32; 16];
    let mut code = 0;
    for bits in 1..16 {
        code = (code + per_length[bits - 1]) << 1;
        next[bits] = code;
    }
    lengths
        .iter()
        .map(|&len| {
            if len == 0 {
                return Code::default();
            }
            let code = next[len as usize];
            next[len as usize] += 1;
            Code { bits: reverse_bits(code, len), len }
        })
        .collect()
}

/// The low `len` bits of `value` in reverse order.
pub(super) fn reverse_bits(value: u32, len: u32) -> u32 {
    value.reverse_bits() >> (32 - len)
}

/// Bits packed from the low end of each byte up, as deflate packs them.
#[derive(Default)]
pub(super) struct LsbWriter {
    out: Vec<u8>,
    pending: u64,
    pending_len: u32,
}

impl LsbWriter {
    /// Writes the low `len` bits of `value`, lowest first.
    fn put(&mut self, value: u32, len: u32) {
        self.pending |= u64::from(value) << self.pending_len;
        self.pending_len += len;
        while self.pending_len >= 8 {
            self.out.push(self.pending as u8);
            self.pending >>= 8;
            self.pending_len -= 8;
        }
    }

    fn code(&mut self, code: Code) {
        self.put(code.bits, code.len);
    }

    /// The bytes, the last one padded with zero bits.
    fn finish(mut self) -> Vec<u8> {
        if self.pending_len > 0 {
            self.out.push(self.pending as u8);
        }
        self.out
    }
}

// ---------------------------------------------------------------------------------------------
// Checksums of repeated content

pub(super) const ADLER_MOD: u64 = 65_521;
pub(super) const CRC_POLYNOMIAL: u32 = 0xEDB8_8320;
/// CRC-32 of each byte value (the reflected IEEE polynomial), for the byte-at-a-time CRC.
pub(super) const CRC_TABLE: [u32; 256] = {
    let mut table = [0; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u32;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ CRC_POLYNOMIAL } else { crc >> 1 };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
};

/// The Adler-32 of `bytes` (zlib's checksum).
pub(super) fn adler32(bytes: &[u8]) -> u32 {
    let (mut a, mut b) = (1, 0);
    for &byte in bytes {
        a = (a + u64::from(byte)) % ADLER_MOD;
        b = (b + a) % ADLER_MOD;
    }
    (b << 16 | a) as u32
}

/// The Adler-32 of `first` followed by `second` (of `second_len` bytes), from theirs. With
/// a = 1 + Σ xᵢ and b = Σ (n − i + 1) xᵢ + n over n bytes: a = a₁ + a₂ − 1 and
/// b = b₁ + b₂ + n₂ (a₁ − 1).
pub(super) fn adler32_concat(first: u32, second: u32, second_len: u64) -> u32 {
    let (a1, b1) = (u64::from(first & 0xFFFF), u64::from(first >> 16));
    let (a2, b2) = (u64::from(second & 0xFFFF), u64::from(second >> 16));
    let a = (a1 + a2 + ADLER_MOD - 1) % ADLER_MOD;
    let b = (b1 + b2 + second_len % ADLER_MOD * ((a1 + ADLER_MOD - 1) % ADLER_MOD)) % ADLER_MOD;
    (b << 16 | a) as u32
}

/// The Adler-32 of the content of `runs`.
pub(super) fn adler32_runs(runs: &[Run]) -> u32 {
    checksum_runs(runs, 1, adler32, adler32_concat)
}

/// The CRC-32 of `bytes` (ZIP's and PNG's checksum), a table lookup per byte.
pub(super) fn crc32(bytes: &[u8]) -> u32 {
    !bytes.iter().fold(!0, |crc, &byte| CRC_TABLE[usize::from(crc as u8 ^ byte)] ^ (crc >> 8))
}

/// The CRC-32 of `first` followed by `second` (of `second_len` bytes), from theirs: the CRC of a
/// concatenation is the first CRC carried through `second_len` zero bytes, which is multiplying
/// it by x^(8 · second_len) modulo the polynomial, plus the second CRC.
pub(super) fn crc32_concat(first: u32, second: u32, second_len: u64) -> u32 {
    let mut shift = 1 << 31; // the polynomial 1, in the reflected order of the CRC's bits
    let mut square = 1 << (31 - 8); // x^8
    let mut n = second_len;
    while n > 0 {
        if n & 1 == 1 {
            shift = multiply_mod_crc(shift, square);
        }
        square = multiply_mod_crc(square, square);
        n >>= 1;
    }
    multiply_mod_crc(first, shift) ^ second
}

/// a · b modulo the CRC-32 polynomial, polynomials over GF(2) with x⁰ in the top bit.
pub(super) fn multiply_mod_crc(a: u32, mut b: u32) -> u32 {
    let mut product = 0;
    for power in 0..32 {
        if a & (1 << (31 - power)) != 0 {
            product ^= b;
        }
        // b · x: shift towards the low bit; x³² folds back as the polynomial's other terms.
        b = if b & 1 == 1 { (b >> 1) ^ CRC_POLYNOMIAL } else { b >> 1 };
    }
    product
}

/// The CRC-32 of the content of `runs`.
pub(super) fn crc32_runs(runs: &[Run]) -> u32 {
    checksum_runs(runs, 0, crc32, crc32_concat)
}

/// A checksum of the content of `runs` without writing it out: each run's pattern is checksummed
/// once and combined with itself by doubling (`concat(first, second, second_len)` being the
/// checksum of a concatenation; `empty` that of no bytes).
pub(super) fn checksum_runs(runs: &[Run], empty: u32, of: fn(&[u8]) -> u32, concat: fn(u32, u32, u64) -> u32) -> u32 {
    runs.iter().fold(empty, |total, run| {
        let (mut repeated, mut power, mut power_len, mut count) =
            (empty, of(run.pattern), run.pattern.len() as u64, run.count);
        while count > 0 {
            if count & 1 == 1 {
                repeated = concat(repeated, power, power_len);
            }
            power = concat(power, power, power_len);
            power_len *= 2;
            count >>= 1;
        }
        concat(total, repeated, run.pattern.len() as u64 * run.count)
    })
}

// ---------------------------------------------------------------------------------------------
// LZW, as PDF's LZWDecode reads it

/// Codes written between two clear-table codes: entries 258 to 4093 are added, so that the table
/// stays below 4,096 entries and the codes within 12 bits.
pub(super) const LZW_CODES_PER_TABLE: u64 = 3_837;
pub(super) const LZW_CLEAR: u32 = 256;
pub(super) const LZW_END: u32 = 257;

/// `len` copies of `byte` as PDF LZW data (`/EarlyChange 1`, the default): a clear-table code,
/// then codes for runs of 1, 2, 3… bytes, each code the entry the decoder is about to add (the
/// run one byte longer is the last run plus its first byte), the table cleared every
/// [`LZW_CODES_PER_TABLE`] codes; then the end-of-data code. Codes are 9 to 12 bits, most
/// significant bit first.
pub(super) fn lzw_run(byte: u8, len: u64) -> Vec<u8> {
    // The width of the next code, k codes after a clear: the decoder's next entry is 258 for the
    // first two, then one more each code, and with early change it widens one entry early.
    let width = |k: u64| match 258 + k.saturating_sub(1) + 1 {
        ..512 => 9,
        512..1024 => 10,
        1024..2048 => 11,
        _ => 12,
    };
    let mut writer = MsbWriter::default();
    writer.put(LZW_CLEAR, 9);
    let (mut left, mut k) = (len, 0);
    while left > 0 {
        if k == LZW_CODES_PER_TABLE {
            writer.put(LZW_CLEAR, width(k));
            k = 0;
        }
        let run = left.min(k + 1);
        let code = if run == 1 { u32::from(byte) } else { 256 + run as u32 };
        writer.put(code, width(k));
        k += 1;
        left -= run;
    }
    writer.put(LZW_END, width(k));
    writer.finish()
}

/// Bits packed from the high end of each byte down, as LZW in PDF packs them.
#[derive(Default)]
pub(super) struct MsbWriter {
    out: Vec<u8>,
    pending: u64,
    pending_len: u32,
}

impl MsbWriter {
    /// Writes the low `len` bits of `value`, highest first.
    fn put(&mut self, value: u32, len: u32) {
        self.pending = self.pending << len | u64::from(value);
        self.pending_len += len;
        while self.pending_len >= 8 {
            self.pending_len -= 8;
            self.out.push((self.pending >> self.pending_len) as u8);
        }
        self.pending &= (1 << self.pending_len) - 1;
    }

    /// The bytes, the last one padded with zero bits.
    fn finish(mut self) -> Vec<u8> {
        if self.pending_len > 0 {
            self.out.push((self.pending << (8 - self.pending_len)) as u8);
        }
        self.out
    }
}
