//! The sRGB ICC profile of PDF/A's output intent, written from the standard's numbers
//! (IEC 61966-2-1: its primaries adapted to D50, its tone curve) rather than shipped as a
//! file: an ICC version 2.1 display profile, as PDF/A-2 and -3 accept.

/// The profile's description, also the output intent's condition.
pub const DESCRIPTION: &str = "sRGB IEC61966-2.1";

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

/// The profile's bytes.
pub fn srgb_profile() -> Vec<u8> {
    let mut desc = b"desc\0\0\0\0".to_vec();
    desc.extend_from_slice(&(DESCRIPTION.len() as u32 + 1).to_be_bytes());
    desc.extend_from_slice(DESCRIPTION.as_bytes());
    desc.push(0);
    // No Unicode or ScriptCode description: their counts are zero, the ScriptCode area
    // keeps its fixed 67 bytes.
    desc.extend_from_slice(&[0; 8]);
    desc.extend_from_slice(&[0; 3]);
    desc.extend_from_slice(&[0; 67]);
    let mut cprt = b"text\0\0\0\0".to_vec();
    cprt.extend_from_slice(b"No copyright, use freely\0");
    let mut curve = b"curv\0\0\0\0".to_vec();
    curve.extend_from_slice(&(CURVE_POINTS as u32).to_be_bytes());
    for i in 0..CURVE_POINTS {
        let linear = srgb_to_linear(i as f64 / (CURVE_POINTS - 1) as f64);
        curve.extend_from_slice(&((linear * 65535.0).round() as u16).to_be_bytes());
    }
    // Primaries and white of IEC 61966-2-1, chromatically adapted to the D50 connection space.
    let tags: Vec<(&[u8; 4], Vec<u8>)> = vec![
        (b"desc", desc),
        (b"cprt", cprt),
        (b"wtpt", xyz(0.9642, 1.0, 0.8249)),
        (b"rXYZ", xyz(0.4361, 0.2225, 0.0139)),
        (b"gXYZ", xyz(0.3851, 0.7169, 0.0971)),
        (b"bXYZ", xyz(0.1431, 0.0606, 0.7141)),
        (b"rTRC", curve),
    ];
    // The three channels share one curve.
    let shared = [b"gTRC", b"bTRC"];
    let table_len = 4 + 12 * (tags.len() + shared.len());
    let mut data = Vec::new();
    let mut table = (tags.len() as u32 + shared.len() as u32).to_be_bytes().to_vec();
    let mut curve_at = (0, 0);
    for (signature, tag) in &tags {
        let offset = 128 + table_len + data.len();
        table.extend_from_slice(*signature);
        table.extend_from_slice(&(offset as u32).to_be_bytes());
        table.extend_from_slice(&(tag.len() as u32).to_be_bytes());
        if *signature == b"rTRC" {
            curve_at = (offset, tag.len());
        }
        data.extend_from_slice(tag);
        data.resize(data.len().next_multiple_of(4), 0);
    }
    for signature in shared {
        table.extend_from_slice(signature);
        table.extend_from_slice(&(curve_at.0 as u32).to_be_bytes());
        table.extend_from_slice(&(curve_at.1 as u32).to_be_bytes());
    }
    let size = 128 + table.len() + data.len();
    let mut header = Vec::with_capacity(128);
    header.extend_from_slice(&(size as u32).to_be_bytes());
    header.extend_from_slice(&[0; 4]); // preferred CMM: none
    header.extend_from_slice(&[2, 0x10, 0, 0]); // version 2.1
    header.extend_from_slice(b"mntrRGB XYZ ");
    for part in [2026u16, 1, 1, 0, 0, 0] {
        header.extend_from_slice(&part.to_be_bytes());
    }
    header.extend_from_slice(b"acsp");
    header.extend_from_slice(&[0; 4 + 4 + 4 + 4 + 8]); // platform, flags, maker, model, attributes
    header.extend_from_slice(&[0, 0, 0, 0]); // perceptual
    for v in [0.9642, 1.0, 0.8249] {
        header.extend_from_slice(&s15_16(v));
    }
    header.extend_from_slice(&[0; 4 + 16 + 28]); // creator, profile ID, reserved
    debug_assert_eq!(header.len(), 128);
    let mut profile = header;
    profile.extend_from_slice(&table);
    profile.extend_from_slice(&data);
    profile
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
    }
}
