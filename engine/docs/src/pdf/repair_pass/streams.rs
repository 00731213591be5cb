//! The pass's checks of a stream's data: its filter chain read as qpdf reads it (fixing
//! what can be fixed in place), the verdict on its data at a decode level (clean, not
//! decoded, too large to check, or damaged with what could be salvaged), and the rebuild
//! of a damaged stream according to its role (content keeps what decoded, an image of
//! known layout keeps its size, anything else is emptied).
//!
//! What this module must not do: decode past the pass's budget or the stream size limit,
//! or walk the document (the pass in `mod.rs` does).

use super::objects::{image_layout, known_filter, layer, show_name};
use super::qpdf_handle::{Kind, Level, Obj};
use super::report::{bytes, plain, stream_problem};
use super::{Pass, clean_content, content_tokens, filters};

/// qpdf gives up on a stream with more filters than this (its `max-stream-filters` limit).
const MAX_FILTERS: usize = 25;

/// The role a stream plays, which decides how it is rebuilt when its data is lost.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Role {
    /// A page's content.
    Page(u32),
    /// A form XObject (content too, drawn by `Do`).
    Form,
    Image,
    /// An image used as another's soft mask (/SMask).
    SoftMask,
    Other,
}

/// A stream's filters, as qpdf applies them.
pub(super) struct Chain {
    layers: Vec<filters::Layer>,
    /// The first filter this pass cannot decode (qpdf may or may not), if any.
    pub(super) foreign: Option<String>,
}

/// What checking a stream's data found.
pub(super) enum Verdict {
    /// qpdf decodes it without a warning; the decoded data when asked for.
    Clean(Option<Vec<u8>>),
    /// qpdf does not decode it at this level (nor does `qpdf --check`).
    NotDecoded,
    /// It decodes past the size limit, or the pass has checked all it may: left as it is,
    /// unchecked, for this reason.
    TooLarge(&'static str),
    /// It cannot be decoded: why, and what could be.
    Damaged { why: String, salvage: Salvage },
}

/// What could be decoded of a damaged stream.
#[derive(Default, Clone)]
pub(super) struct Salvage {
    /// The decoded data, up to the damage.
    pub(super) data: Vec<u8>,
    /// Whether that is all of it (the damage was after the end: a missing checksum, or a
    /// stream qpdf cannot decode but this pass can).
    whole: bool,
    /// Where the data comes from when not from the stream's own filters.
    from: Option<&'static str>,
}

impl<'d> Pass<'d> {
    /// Reads a stream's /Filter and /DecodeParms as qpdf does, fixing what can be fixed in
    /// place (a filter named by a string, parameters that do not line up with the filters).
    /// An error says why the data cannot be interpreted at all.
    pub(super) fn chain(&mut self, stream: &Obj<'d>, label: &str) -> Result<Chain, String> {
        let dict = stream.stream_dict();
        let mut names: Vec<Vec<u8>> = Vec::new();
        let mut from_strings = false;
        if dict.has(b"/Filter") {
            let filter = dict.get(b"/Filter");
            let not_names = || "its /Filter is not a name or an array of names".to_string();
            match filter.kind() {
                Kind::Null => {}
                Kind::Name => names.push(filter.name()),
                Kind::Str => {
                    names.push(known_filter(&filter.string()).ok_or_else(not_names)?);
                    from_strings = true;
                }
                Kind::Array => {
                    for i in 0..filter.len() {
                        let item = filter.item(i);
                        match item.kind() {
                            Kind::Name => names.push(item.name()),
                            Kind::Str => {
                                names.push(known_filter(&item.string()).ok_or_else(not_names)?);
                                from_strings = true;
                            }
                            _ => return Err(not_names()),
                        }
                    }
                }
                _ => return Err(not_names()),
            }
        }
        if names.len() > MAX_FILTERS {
            return Err(format!("it has more than {MAX_FILTERS} filters"));
        }
        if from_strings {
            let value = match names.as_slice() {
                [one] => self.doc.name(one),
                many => {
                    let array = self.doc.array();
                    for name in many {
                        array.push(&self.doc.name(name));
                    }
                    array
                }
            };
            dict.set(b"/Filter", &value);
            self.fixes.push(format!("{label}: its /Filter was written as a string instead of a name; corrected it"));
        }
        let mut parms: Vec<Option<Obj<'d>>> = Vec::new();
        if dict.has(b"/DecodeParms") {
            let given = dict.get(b"/DecodeParms");
            if given.kind() == Kind::Array {
                let len = given.len();
                if len != 0 && !names.is_empty() && len != names.len() {
                    let aligned = self.doc.array();
                    for i in 0..names.len() {
                        if i < len { aligned.push(&given.item(i)) } else { aligned.push(&self.doc.null()) }
                    }
                    dict.set(b"/DecodeParms", &aligned);
                    self.fixes.push(format!(
                        "{label}: its /DecodeParms had {len} entries for {} filters; aligned them",
                        names.len()
                    ));
                }
                if len != 0 {
                    parms = (0..names.len()).map(|i| if i < len { Some(given.item(i)) } else { None }).collect();
                }
            } else if given.kind() != Kind::Null {
                parms = (0..names.len()).map(|_| Some(given.dup())).collect();
            }
        }
        let mut chain = Chain { layers: Vec::new(), foreign: None };
        for (i, name) in names.iter().enumerate() {
            let parms = parms.get(i).and_then(Option::as_ref);
            match layer(name, parms) {
                Some(layer) => chain.layers.push(layer),
                None => {
                    chain.foreign = Some(show_name(name));
                    break;
                }
            }
        }
        Ok(chain)
    }

    /// Whether qpdf decodes `stream` at `level` without a warning. The data is first decoded
    /// here, bounded, so that qpdf is never handed a decompression bomb: libqpdf has no
    /// per-document limit.
    pub(super) fn verdict(&mut self, stream: &Obj<'d>, chain: &Chain, level: Level, want_data: bool) -> Verdict {
        if chain.foreign.is_some() || chain.layers.iter().any(|l| !l.decoded_at(level)) {
            return Verdict::NotDecoded;
        }
        let raw = match stream.data(Level::None) {
            Ok((raw, _)) => raw,
            Err(e) => return Verdict::Damaged { why: plain(&e), salvage: Salvage::default() },
        };
        if chain.layers.is_empty() {
            return Verdict::Clean(want_data.then_some(raw));
        }
        let cap = self.limits.max_stream_bytes;
        // JPEG comes last, if at all; its decoded size is read from its header (libjpeg
        // allocates what the header says, so a header past the limit is never handed over).
        let (jpeg, layers) = match chain.layers.split_last() {
            Some((last, rest)) if matches!(last.filter, filters::Filter::Dct) => (true, rest),
            _ => (false, &chain.layers[..]),
        };
        if layers.iter().any(|l| matches!(l.filter, filters::Filter::Dct)) {
            return Verdict::NotDecoded;
        }
        const PAST_LIMIT: &str = "its data decodes past the size limit";
        const SPENT: &str = "the pass had checked all the data it may";
        // Decoding here is bounded by what is left of the budget too, and paid for.
        let room = cap.min(self.budget);
        let (decoded, size) = match filters::run(&raw, layers, room, false) {
            filters::Outcome::TooLarge => {
                self.budget -= room;
                if room < cap {
                    self.spend(1);
                    return Verdict::TooLarge(SPENT);
                }
                return Verdict::TooLarge(PAST_LIMIT);
            }
            filters::Outcome::Complete(data) | filters::Outcome::Cut(data, _) => {
                let size = if jpeg { filters::jpeg_info(&data).map_or(0, |info| info.size()) } else { 0 };
                (data.len(), size)
            }
        };
        if size > cap as u64 {
            self.spend(decoded);
            return Verdict::TooLarge(PAST_LIMIT);
        }
        if !self.spend(decoded.max(size as usize)) {
            return Verdict::TooLarge(SPENT);
        }
        // Warnings from earlier reads are the recovery's, not this stream's.
        self.note_recovery();
        let decoded = stream.data(level);
        let warnings = self.doc.warnings();
        match decoded {
            Ok((data, true)) if warnings.is_empty() => Verdict::Clean(want_data.then_some(data)),
            Ok((_, false)) if warnings.is_empty() => Verdict::NotDecoded,
            result => {
                let mut why = warnings.first().map(|w| stream_problem(&w.detail)).unwrap_or_else(|| match result {
                    Err(e) => plain(&e),
                    Ok(_) => "it could not be decoded".to_string(),
                });
                let salvage = match filters::run(&raw, layers, cap, true) {
                    filters::Outcome::Complete(data) | filters::Outcome::Cut(data, _) if jpeg => {
                        let dict = stream.stream_dict();
                        let pixels = image_layout(&dict, cap).and_then(|layout| {
                            filters::jpeg_pixels(&data, cap).filter(|pixels| pixels.len() == layout.len)
                        });
                        match pixels {
                            Some(data) => Salvage {
                                data,
                                whole: true,
                                from: Some("the pixels a more tolerant JPEG decoder reads"),
                            },
                            None => Salvage::default(),
                        }
                    }
                    filters::Outcome::Complete(data) => Salvage { data, whole: true, from: None },
                    filters::Outcome::Cut(data, reason) if reason == filters::NO_CHECKSUM => {
                        why = reason.to_string();
                        Salvage { data, whole: true, from: None }
                    }
                    filters::Outcome::Cut(data, _) => Salvage { data, whole: false, from: None },
                    filters::Outcome::TooLarge => Salvage::default(),
                };
                Verdict::Damaged { why, salvage }
            }
        }
    }

    /// Replaces a stream whose data cannot be decoded with what could be, by its role: content
    /// keeps the operations that parse, an image its decoded rows (the rest blank), anything
    /// else the bytes before the damage. The new data is stored unfiltered (the writer
    /// compresses it).
    pub(super) fn rebuild(&mut self, stream: &Obj<'d>, role: Role, label: &str, why: &str, salvage: Salvage) {
        let doc = self.doc;
        let null = doc.null();
        let Salvage { data, whole, from } = salvage;
        let kept = data.len();
        let fix = if whole {
            // Nothing was lost: the data is stored again, as it decodes.
            let what = match role {
                Role::Form => " (a form)",
                Role::Image | Role::SoftMask => " (an image)",
                Role::Page(_) | Role::Other => "",
            };
            stream.replace_data(&data, &null, &null);
            match from {
                Some(from) => format!("{label}{what}: could not be decoded ({why}); stored {from} instead"),
                None => format!("{label}{what}: {why}; stored its data again, nothing lost"),
            }
        } else {
            match role {
                Role::Page(_) => {
                    // The page's whole content is checked next; here only the data is restored.
                    stream.replace_data(&data, &null, &null);
                    if kept == 0 {
                        format!("{label}: could not be decoded ({why}); replaced by an empty one")
                    } else {
                        format!(
                            "{label}: could not be fully decoded ({why}); kept the {} before the damage",
                            bytes(kept)
                        )
                    }
                }
                Role::Form => {
                    let (cleaned, summary) = if content_tokens::parses_cleanly(&data) {
                        (data, format!("kept the {} before the damage", bytes(kept)))
                    } else {
                        clean_content(&data)
                    };
                    stream.replace_data(&cleaned, &null, &null);
                    if kept == 0 {
                        format!("{label} (a form): its content could not be decoded ({why}); it now draws nothing")
                    } else {
                        format!("{label} (a form): its content could not be fully decoded ({why}); {summary}")
                    }
                }
                Role::Image | Role::SoftMask => self.rebuild_image(stream, role, label, why, data),
                Role::Other => {
                    stream.replace_data(&data, &null, &null);
                    if kept == 0 {
                        format!("{label}: its data could not be decoded ({why}); emptied it")
                    } else {
                        format!(
                            "{label}: its data could not be fully decoded ({why}); kept the {} before the damage",
                            bytes(kept)
                        )
                    }
                }
            }
        };
        self.fixes.push(fix);
    }

    /// An image keeps the rows that decode; the rest are blank (what draws nothing: white, no
    /// ink, masked out).
    fn rebuild_image(&mut self, stream: &Obj<'d>, role: Role, label: &str, why: &str, mut data: Vec<u8>) -> String {
        let doc = self.doc;
        let null = doc.null();
        let dict = stream.stream_dict();
        let kept = data.len();
        if let Some(layout) = image_layout(&dict, self.limits.max_stream_bytes) {
            data.resize(layout.len, layout.blank);
            stream.replace_data(&data, &null, &null);
            let rows = layout.len / layout.row.max(1);
            return if kept >= layout.len {
                format!("{label} (an image): {why}, but all its {rows} rows decode; stored them again, nothing lost")
            } else if kept == 0 {
                format!("{label} (an image): could not be decoded ({why}); replaced by a blank image")
            } else {
                let kept_rows = kept.min(layout.len) / layout.row.max(1);
                format!(
                    "{label} (an image): could not be fully decoded ({why}); kept {kept_rows} of {rows} rows, the rest is blank"
                )
            };
        }
        // An image whose size cannot be known becomes a valid 1x1 one that shows nothing: a
        // stencil mask that paints nothing, or, for a soft mask (which may not be a stencil),
        // one that is opaque.
        for key in [&b"/ColorSpace"[..], b"/Decode", b"/SMask", b"/Mask", b"/Intent", b"/ImageMask"] {
            if dict.has(key) {
                dict.remove(key);
            }
        }
        if role == Role::SoftMask {
            dict.set(b"/ColorSpace", &doc.name(b"/DeviceGray"));
            dict.set(b"/BitsPerComponent", &doc.integer(8));
        } else {
            dict.set(b"/ImageMask", &doc.boolean(true));
            dict.set(b"/BitsPerComponent", &doc.integer(1));
        }
        dict.set(b"/Width", &doc.integer(1));
        dict.set(b"/Height", &doc.integer(1));
        stream.replace_data(&[0xff], &null, &null);
        format!("{label} (an image): could not be decoded ({why}) and its size is unknown; replaced by an empty image")
    }
}

/// The role of a stream that is not a page's content, from its dictionary.
pub(super) fn role_of(stream: &Obj<'_>) -> Role {
    let dict = stream.stream_dict();
    if dict.has(b"/Subtype") {
        let subtype = dict.get(b"/Subtype");
        if subtype.kind() == Kind::Name {
            match subtype.name().as_slice() {
                b"/Image" => return Role::Image,
                b"/Form" => return Role::Form,
                _ => {}
            }
        }
    }
    Role::Other
}
