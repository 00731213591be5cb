//! The ICC profiles PDF/A needs, written from numbers rather than shipped as files (ICC
//! version 2.1, as PDF/A-2 and -3 accept): the sRGB display profile of the output intent
//! (IEC 61966-2-1: its primaries adapted to D50, its tone curve), and a CMYK input profile
//! describing device CMYK as readers paint it unprofiled.

/// The profile's description, also the output intent's condition.
pub const DESCRIPTION: &str = "sRGB IEC61966-2.1";

/// The D50 white of the profile connection space.
const D50: [f64; 3] = [0.9642, 1.0, 0.8249];

/// Entries of each tone curve.
const CURVE_POINTS: usize = 1024;

fn s15_16(value: f64) -> [u8; 4] {
    ((value * 65536.0).round() as i32).to_be_bytes()
}

fn xyz(x: f64, y: f64, z: f64) -> Vec<u8> {
    let mut tag = b"XYZ \0\0\0\0".to_vec();
    for v in [x, y, z] {
        tag.extend_from_slice(&s15_16(v));
    }
    tag
}

/// The sRGB tone curve, from encoded value to linear light.
fn srgb_to_linear(v: f64) -> f64 {
    if v <= 0.04045 { v / 12.92 } else { ((v + 0.055) / 1.055).powf(2.4) }
}

/// The CMYK profile's description.
pub const CMYK_DESCRIPTION: &str = "Paperchain device CMYK (as RGB 1-C, 1-M, 1-Y times 1-K, in sRGB)";

/// Grid points on each CMYK axis of the CMYK profile's table.
const CMYK_GRID: usize = 9;

/// Primaries of sRGB adapted to D50 (columns: red, green, blue).
const PRIMARIES: [[f64; 3]; 3] = [[0.4361, 0.3851, 0.1431], [0.2225, 0.7169, 0.0606], [0.0139, 0.0971, 0.7141]];

fn desc_tag(text: &str) -> Vec<u8> {
    let mut desc = b"desc\0\0\0\0".to_vec();
    desc.extend_from_slice(&(text.len() as u32 + 1).to_be_bytes());
    desc.extend_from_slice(text.as_bytes());
    desc.push(0);
    // No Unicode or ScriptCode description: their counts are zero, the ScriptCode area
    // keeps its fixed 67 bytes.
    desc.extend_from_slice(&[0; 8]);
    desc.extend_from_slice(&[0; 3]);
    desc.extend_from_slice(&[0; 67]);
    desc
}

fn text_tag(text: &str) -> Vec<u8> {
    let mut tag = b"text\0\0\0\0".to_vec();
    tag.extend_from_slice(text.as_bytes());
    tag.push(0);
    tag
}

/// A profile of `class` and `space` described as `description`, holding the description,
/// copyright and white point tags and `tags` (several signatures may share one tag).
fn profile(class: &[u8; 4], space: &[u8; 4], description: &str, tags: Vec<(Vec<&[u8; 4]>, Vec<u8>)>) -> Vec<u8> {
    let [x, y, z] = D50;
    let common = [
        (vec![b"desc"], desc_tag(description)),
        (vec![b"cprt"], text_tag("No copyright, use freely")),
        (vec![b"wtpt"], xyz(x, y, z)),
    ];
    let tags: Vec<(Vec<&[u8; 4]>, Vec<u8>)> = common.into_iter().chain(tags).collect();
    let count: usize = tags.iter().map(|(signatures, _)| signatures.len()).sum();
    let table_len = 4 + 12 * count;
    let mut data = Vec::new();
    let mut table = (count as u32).to_be_bytes().to_vec();
    for (signatures, tag) in &tags {
        let offset = 128 + table_len + data.len();
        for signature in signatures {
            table.extend_from_slice(*signature);
            table.extend_from_slice(&(offset as u32).to_be_bytes());
            table.extend_from_slice(&(tag.len() as u32).to_be_bytes());
        }
        data.extend_from_slice(tag);
        data.resize(data.len().next_multiple_of(4), 0);
    }
    let size = 128 + table.len() + data.len();
    let mut header = Vec::with_capacity(128);
    header.extend_from_slice(&(size as u32).to_be_bytes());
    header.extend_from_slice(&[0; 4]); // preferred CMM: none
    header.extend_from_slice(&[2, 0x10, 0, 0]); // version 2.1
    header.extend_from_slice(class);
    header.extend_from_slice(space);
    header.extend_from_slice(b"XYZ ");
    for part in [2026u16, 1, 1, 0, 0, 0] {
        header.extend_from_slice(&part.to_be_bytes());
    }
    header.extend_from_slice(b"acsp");
    header.extend_from_slice(&[0; 4 + 4 + 4 + 4 + 8]); // platform, flags, maker, model, attributes
    header.extend_from_slice(&[0, 0, 0, 0]); // perceptual
    for v in D50 {
        header.extend_from_slice(&s15_16(v));
    }
    header.extend_from_slice(&[0; 4 + 16 + 28]); // creator, profile ID, reserved
    let mut out = header;
    out.extend_from_slice(&table);
    out.extend_from_slice(&data);
    out
}

/// A CMYK input profile that maps device CMYK the way readers paint it without one
/// (red = (1 − C)(1 − K) in sRGB, and so on), so the pages keep their look once their
/// CMYK is described, as PDF/A wants.
pub fn cmyk_profile() -> Vec<u8> {
    let mut lut = b"mft2\0\0\0\0".to_vec();
    lut.extend_from_slice(&[4, 3, CMYK_GRID as u8, 0]);
    for row in 0..3 {
        for column in 0..3 {
            lut.extend_from_slice(&s15_16(if row == column { 1.0 } else { 0.0 }));
        }
    }
    lut.extend_from_slice(&2u16.to_be_bytes());
    lut.extend_from_slice(&2u16.to_be_bytes());
    // Input and output tables of two entries each: straight lines, changing nothing.
    let identity = |lut: &mut Vec<u8>, channels: usize| {
        for _ in 0..channels {
            lut.extend_from_slice(&0u16.to_be_bytes());
            lut.extend_from_slice(&u16::MAX.to_be_bytes());
        }
    };
    identity(&mut lut, 4);
    let step = |i: usize| i as f64 / (CMYK_GRID - 1) as f64;
    for c in 0..CMYK_GRID {
        for m in 0..CMYK_GRID {
            for y in 0..CMYK_GRID {
                for k in 0..CMYK_GRID {
                    let keep = 1.0 - step(k);
                    let rgb =
                        [(1.0 - step(c)) * keep, (1.0 - step(m)) * keep, (1.0 - step(y)) * keep].map(srgb_to_linear);
                    for row in PRIMARIES {
                        let value = row[0] * rgb[0] + row[1] * rgb[1] + row[2] * rgb[2];
                        // XYZ in a 16-bit table: 1.0 is 0x8000.
                        lut.extend_from_slice(&((value * 32768.0).round().clamp(0.0, 65535.0) as u16).to_be_bytes());
                    }
                }
            }
        }
    }
    identity(&mut lut, 3);
    profile(b"scnr", b"CMYK", CMYK_DESCRIPTION, vec![(vec![b"A2B0"], lut)])
}

/// The sRGB profile's bytes.
pub fn srgb_profile() -> Vec<u8> {
    let mut curve = b"curv\0\0\0\0".to_vec();
    curve.extend_from_slice(&(CURVE_POINTS as u32).to_be_bytes());
    for i in 0..CURVE_POINTS {
        let linear = srgb_to_linear(i as f64 / (CURVE_POINTS - 1) as f64);
        curve.extend_from_slice(&((linear * 65535.0).round() as u16).to_be_bytes());
    }
    let [[rx, gx, bx], [ry, gy, by], [rz, gz, bz]] = PRIMARIES;
    // The three channels share one curve.
    profile(
        b"mntr",
        b"RGB ",
        DESCRIPTION,
        vec![
            (vec![b"rXYZ"], xyz(rx, ry, rz)),
            (vec![b"gXYZ"], xyz(gx, gy, gz)),
            (vec![b"bXYZ"], xyz(bx, by, bz)),
            (vec![b"rTRC", b"gTRC", b"bTRC"], curve),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_is_well_formed() {
        let p = srgb_profile();
        assert_eq!(u32::from_be_bytes(p[0..4].try_into().unwrap()) as usize, p.len());
        assert_eq!(&p[36..40], b"acsp");
        assert_eq!(&p[12..24], b"mntrRGB XYZ ");
        let count = u32::from_be_bytes(p[128..132].try_into().unwrap()) as usize;
        assert_eq!(count, 9);
        for i in 0..count {
            let entry = &p[132 + 12 * i..144 + 12 * i];
            let offset = u32::from_be_bytes(entry[4..8].try_into().unwrap()) as usize;
            let len = u32::from_be_bytes(entry[8..12].try_into().unwrap()) as usize;
            assert!(offset.is_multiple_of(4) && offset + len <= p.len(), "{:?}", &entry[..4]);
        }
        assert!((srgb_to_linear(1.0) - 1.0).abs() < 1e-12 && srgb_to_linear(0.0) == 0.0);
        let cmyk = cmyk_profile();
        assert_eq!(u32::from_be_bytes(cmyk[0..4].try_into().unwrap()) as usize, cmyk.len());
        assert_eq!(&cmyk[12..24], b"scnrCMYKXYZ ");
    }
}
