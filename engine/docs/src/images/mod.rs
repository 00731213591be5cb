//! Image files as the routes that take them read them: the format told from the first
//! bytes (`sniff`: PNG, JPEG or WebP, else the name of what the bytes look like, for
//! the error), and in `headers` what a JPEG's and a PNG's headers say (size, colour
//! components, EXIF orientation, pixel density) without decoding the image.
//!
//! What this module must not do: decode pixels (the routes do, within their limits) or use
//! a route file.

pub mod headers;

/// The formats told apart by their first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Png,
    Jpeg,
    WebP,
}

/// The format of `bytes`, or the name of what they look like instead.
pub(crate) fn sniff(bytes: &[u8]) -> Result<Kind, &'static str> {
    let starts = |magic: &[u8]| bytes.starts_with(magic);
    let at = |offset: usize, magic: &[u8]| bytes.get(offset..offset + magic.len()) == Some(magic);
    if starts(b"\x89PNG\r\n\x1a\n") {
        return Ok(Kind::Png);
    }
    if starts(&[0xFF, 0xD8, 0xFF]) {
        return Ok(Kind::Jpeg);
    }
    if starts(b"RIFF") && at(8, b"WEBP") {
        return Ok(Kind::WebP);
    }
    Err(if starts(b"%PDF") {
        "a PDF"
    } else if starts(b"GIF8") {
        "a GIF image"
    } else if starts(b"BM") {
        "a BMP image"
    } else if starts(b"II*\0") || starts(b"MM\0*") {
        "a TIFF image"
    } else if at(4, b"ftypheic") || at(4, b"ftypheix") || at(4, b"ftypmif1") {
        "a HEIC image"
    } else if at(4, b"ftypavif") {
        "an AVIF image"
    } else if starts(&[0, 0, 1, 0]) {
        "an ICO image"
    } else if starts(b"PK\x03\x04") {
        "a ZIP archive (or an Office document)"
    } else if starts(b"\xFF\x0A") || at(4, b"jP  ") {
        "a JPEG XL or JPEG 2000 image"
    } else if looks_like_text(bytes) {
        let head = String::from_utf8_lossy(bytes.get(..256).unwrap_or(bytes)).to_ascii_lowercase();
        if head.contains("<svg") { "an SVG image" } else { "a text file" }
    } else {
        "an unknown binary file"
    })
}

fn looks_like_text(bytes: &[u8]) -> bool {
    let head = bytes.get(..1024).unwrap_or(bytes);
    let text = match std::str::from_utf8(head) {
        Ok(text) => text,
        // The cut at 1024 may split a character.
        Err(e) if e.valid_up_to() + 4 > head.len() => {
            head.get(..e.valid_up_to()).and_then(|h| std::str::from_utf8(h).ok()).unwrap_or("")
        }
        Err(_) => return false,
    };
    !text.is_empty() && text.chars().all(|c| !c.is_control() || c.is_whitespace())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_formats() {
        assert_eq!(sniff(b"%PDF-1.7\n"), Err("a PDF"));
        assert_eq!(sniff(b"GIF89a...."), Err("a GIF image"));
        assert_eq!(sniff(b"<svg xmlns='http://www.w3.org/2000/svg'/>"), Err("an SVG image"));
        assert_eq!(sniff(&[0, 1, 2, 3, 200, 3]), Err("an unknown binary file"));
        assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8L"), Ok(Kind::WebP));
    }
}
