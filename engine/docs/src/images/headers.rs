//! What an image file's headers say, read without decoding it: a JPEG's segments up to
//! its first scan (frame size, colour components, the Adobe marker, JFIF density, EXIF
//! orientation and resolution) and a PNG's pHYs density. Every read is bounded by the
//! bytes given; a header cut anywhere is an error or an absent value, never a panic.
//!
//! What this module must not do: decode image data or use a route file.

/// What the JPEG header says.
#[derive(Debug, PartialEq)]
pub(crate) struct JpegInfo {
    pub(crate) width: u32,
    pub(crate) height: u32,
    pub(crate) components: u8,
    /// An Adobe APP14 segment: its CMYK is stored inverted.
    pub(crate) adobe: bool,
    /// EXIF orientation, 1 (upright) when absent or invalid.
    pub(crate) orientation: u8,
    /// Pixel density from JFIF or EXIF, when stated in absolute units.
    pub(crate) density: Option<(f64, f64)>,
}

fn be16(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(bytes.get(at..at.checked_add(2)?)?.try_into().ok()?))
}

/// Reads the JPEG's segments up to its first scan: frame size, components, density,
/// orientation. Refuses what a PDF reader's DCTDecode filter cannot show.
pub(crate) fn jpeg_info(bytes: &[u8]) -> Result<JpegInfo, String> {
    let mut frame: Option<(u8, u16, u16, u8)> = None;
    let mut adobe = false;
    let mut jfif_density = None;
    let mut exif = ExifInfo::default();
    let mut pos = 2;
    // Every turn moves `pos` forward by at least 2 bytes, so the loop ends.
    loop {
        if bytes.get(pos) != Some(&0xFF) {
            return Err(
                if pos >= bytes.len() { "it ends before its image data" } else { "a damaged segment marker" }.into()
            );
        }
        while bytes.get(pos) == Some(&0xFF) {
            pos += 1;
        }
        let marker = *bytes.get(pos).ok_or("it ends before its image data")?;
        pos += 1;
        match marker {
            0x01 | 0xD0..=0xD8 => continue,
            0xD9 => return Err("it ends before its image data".into()),
            _ => {}
        }
        let len = usize::from(be16(bytes, pos).ok_or("it ends inside a segment")?);
        let segment = bytes.get(pos + 2..pos + len).filter(|_| len >= 2).ok_or("it ends inside a segment")?;
        match marker {
            0xC0..=0xCF if !matches!(marker, 0xC4 | 0xC8 | 0xCC) => {
                if !matches!(marker, 0xC0..=0xC2) {
                    return Err(format!(
                        "it is a {} JPEG, which PDF readers do not show; save it as a baseline or progressive JPEG",
                        if matches!(marker, 0xC3 | 0xC7 | 0xCB | 0xCF) {
                            "lossless"
                        } else if marker >= 0xC9 {
                            "arithmetic-coded"
                        } else {
                            "hierarchical"
                        }
                    ));
                }
                let precision = *segment.first().ok_or("a short frame header")?;
                let height = be16(segment, 1).ok_or("a short frame header")?;
                let width = be16(segment, 3).ok_or("a short frame header")?;
                let components = *segment.get(5).ok_or("a short frame header")?;
                frame = Some((precision, width, height, components));
            }
            0xE0 if segment.starts_with(b"JFIF\0") => {
                if let (Some(&unit), Some(x), Some(y)) = (segment.get(7), be16(segment, 8), be16(segment, 10)) {
                    jfif_density = density(unit_per_inch(unit, 1), f64::from(x), f64::from(y));
                }
            }
            0xE1 if segment.starts_with(b"Exif\0\0") => {
                exif = exif_info(segment.get(6..).unwrap_or_default());
            }
            0xEE if segment.starts_with(b"Adobe") => adobe = true,
            0xDA => break,
            _ => {}
        }
        pos += len;
    }
    let (precision, width, height, components) = frame.ok_or("no frame header before the image data")?;
    if precision != 8 {
        return Err(format!("{precision}-bit samples; PDF takes 8-bit JPEGs"));
    }
    if width == 0 || height == 0 {
        return Err("no width or height in its frame header".into());
    }
    if !matches!(components, 1 | 3 | 4) {
        return Err(format!("{components} colour components; 1, 3 or 4 are supported"));
    }
    Ok(JpegInfo {
        width: u32::from(width),
        height: u32::from(height),
        components,
        adobe,
        orientation: exif.orientation.unwrap_or(1),
        density: jfif_density.or(exif.density),
    })
}

/// Dots per inch for a density given in `unit` (1 = per inch, 2 = per centimetre, as
/// JFIF numbers them); `None` for an aspect ratio only. `inch` is the unit value
/// meaning inches.
fn unit_per_inch(unit: u8, inch: u8) -> Option<f64> {
    if unit == inch {
        Some(1.0)
    } else if unit == inch + 1 {
        Some(2.54)
    } else {
        None
    }
}

/// A density pair in dpi, or `None` when unknown or absurd (a scanner at 1 dpi or 100000
/// dpi is a broken header, not a photo to print 200 metres wide).
fn density(factor: Option<f64>, x: f64, y: f64) -> Option<(f64, f64)> {
    let (x, y) = (x * factor?, y * factor?);
    let sane = |d: f64| d.is_finite() && (10.0..=10_000.0).contains(&d);
    (sane(x) && sane(y)).then_some((x, y))
}

/// What IFD0 of an EXIF block says.
#[derive(Debug, Default)]
struct ExifInfo {
    orientation: Option<u8>,
    density: Option<(f64, f64)>,
}

/// Reads orientation and resolution from the first IFD of a TIFF-structured EXIF block.
/// Bounded: at most the IFD's entries that fit in the block are read, nothing is followed
/// further than one offset.
fn exif_info(tiff: &[u8]) -> ExifInfo {
    let little = match tiff.get(..4) {
        Some(b"II*\0") => true,
        Some(b"MM\0*") => false,
        _ => return ExifInfo::default(),
    };
    let u16_at = |at: usize| -> Option<u16> {
        let b: [u8; 2] = tiff.get(at..at.checked_add(2)?)?.try_into().ok()?;
        Some(if little { u16::from_le_bytes(b) } else { u16::from_be_bytes(b) })
    };
    let u32_at = |at: usize| -> Option<u32> {
        let b: [u8; 4] = tiff.get(at..at.checked_add(4)?)?.try_into().ok()?;
        Some(if little { u32::from_le_bytes(b) } else { u32::from_be_bytes(b) })
    };
    let rational = |at: usize| -> Option<f64> {
        let offset = usize::try_from(u32_at(at)?).ok()?;
        let (num, den) = (u32_at(offset)?, u32_at(offset.checked_add(4)?)?);
        (den != 0).then(|| f64::from(num) / f64::from(den))
    };
    let mut info = ExifInfo::default();
    let Some(ifd) = u32_at(4).and_then(|o| usize::try_from(o).ok()) else { return info };
    let Some(count) = u16_at(ifd) else { return info };
    let (mut xres, mut yres, mut unit) = (None, None, 2u16);
    for i in 0..usize::from(count) {
        let Some(entry) = ifd.checked_add(2 + 12 * i) else { break };
        let (Some(tag), Some(kind)) = (u16_at(entry), u16_at(entry + 2)) else { break };
        match (tag, kind) {
            (0x0112, 3) => info.orientation = u16_at(entry + 8).filter(|o| (1..=8).contains(o)).map(|o| o as u8),
            (0x011A, 5) => xres = rational(entry + 8),
            (0x011B, 5) => yres = rational(entry + 8),
            (0x0128, 3) => unit = u16_at(entry + 8).unwrap_or(2),
            _ => {}
        }
    }
    if let (Some(x), Some(y)) = (xres, yres) {
        // TIFF numbers its units 2 (inch) and 3 (centimetre).
        info.density = density(u8::try_from(unit).ok().and_then(|u| unit_per_inch(u, 2)), x, y);
    }
    info
}

/// The pHYs density of a PNG, read from the chunks before its image data.
pub(crate) fn png_density(bytes: &[u8]) -> Option<(f64, f64)> {
    let mut pos = 8usize;
    // Each turn moves at least 12 bytes on; the walk stops at the image data.
    loop {
        let len = usize::try_from(u32::from_be_bytes(bytes.get(pos..pos + 4)?.try_into().ok()?)).ok()?;
        let kind = bytes.get(pos + 4..pos + 8)?;
        if kind == b"IDAT" || kind == b"IEND" {
            return None;
        }
        if kind == b"pHYs" {
            let data = bytes.get(pos + 8..pos.checked_add(8 + len)?)?;
            let x = u32::from_be_bytes(data.get(0..4)?.try_into().ok()?);
            let y = u32::from_be_bytes(data.get(4..8)?.try_into().ok()?);
            // Unit 1 is the metre; 0 states an aspect ratio only.
            return (*data.get(8)? == 1).then(|| density(Some(0.0254), f64::from(x), f64::from(y))).flatten();
        }
        pos = pos.checked_add(12)?.checked_add(len)?;
    }
}
