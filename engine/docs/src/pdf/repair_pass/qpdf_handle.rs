//! A libqpdf document through qpdf-sys.
//!
//! Safety argument for every `unsafe` block in this module:
//! - `raw` comes from `qpdf_init`, is checked for null, and is freed exactly once, in
//!   [`Doc`]'s `Drop`. A `Doc` is neither `Send` nor `Sync` (it holds a raw pointer), so one
//!   thread uses it at a time, as libqpdf requires.
//! - Object handles are integers that libqpdf looks up in its own table (an unknown one is an
//!   error, not undefined behaviour). An [`Obj`] borrows its `Doc`, so it cannot outlive the
//!   handle; it releases its entry in `Drop`.
//! - Strings and buffers libqpdf returns point into its own storage and stay valid only until
//!   the next call on the same handle: each is copied out at once. Stream buffers are
//!   `malloc`ed for us and freed with `qpdf_oh_free_buffer`; the written file's buffer belongs
//!   to the handle.
//! - `qpdf_read_memory` reads the input in place: the `Doc` owns those bytes, never changes
//!   them, and frees them only after the handle (`Drop` runs before the fields are dropped).
//! - Strings passed in are `CString`s that live across the call.
//! - C++ exceptions never cross the boundary: the C API catches them and records an error
//!   (`qpdf_silence_errors` keeps it off stderr), which [`Doc::take_error`] reads back.

use std::ffi::{CStr, CString, c_char};

use qpdf_sys as sys;

/// How far qpdf decodes a stream's filters.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Level {
    /// Not at all: the raw bytes.
    None,
    /// General-purpose filters and run-length (what qpdf decodes to parse content).
    Specialized,
    /// Also JPEG (what `qpdf --check` decodes).
    All,
}

impl Level {
    fn raw(self) -> sys::qpdf_stream_decode_level_e {
        match self {
            Level::None => sys::qpdf_stream_decode_level_e_qpdf_dl_none,
            Level::Specialized => sys::qpdf_stream_decode_level_e_qpdf_dl_specialized,
            Level::All => sys::qpdf_stream_decode_level_e_qpdf_dl_all,
        }
    }
}

/// An object's type (indirect objects are looked through).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Kind {
    Null,
    Bool,
    Int,
    Real,
    Str,
    Name,
    Array,
    Dict,
    Stream,
    Other,
}

impl Kind {
    /// The type in words, for the report.
    pub(super) fn article(self) -> &'static str {
        match self {
            Kind::Null => "null",
            Kind::Bool => "a boolean",
            Kind::Int | Kind::Real => "a number",
            Kind::Str => "a string",
            Kind::Name => "a name",
            Kind::Array => "an array",
            Kind::Dict => "a dictionary",
            Kind::Stream => "a stream",
            Kind::Other => "an unknown object",
        }
    }
}

/// A warning qpdf gave.
pub(super) struct Warning {
    /// Where: `object 7`, `trailer`, when qpdf says.
    pub location: Option<String>,
    /// What, in qpdf's words.
    pub detail: String,
}

impl Warning {
    /// The warning in one line, for the report.
    pub(super) fn describe(&self) -> String {
        match &self.location {
            Some(at) => format!("{at}: {}", super::report::plain(&self.detail)),
            None => super::report::plain(&self.detail),
        }
    }
}

/// Most warnings kept from one read of the queue (the rest are dropped).
const MAX_WARNINGS: usize = 1_000;

/// A document opened by libqpdf.
pub(super) struct Doc {
    raw: sys::qpdf_data,
    input: Vec<u8>,
}

impl Drop for Doc {
    fn drop(&mut self) {
        // SAFETY: see the module comment; this is the only cleanup of `raw`.
        unsafe { sys::qpdf_cleanup(&mut self.raw) }
    }
}

fn copy_text(ptr: *const c_char) -> String {
    if ptr.is_null() {
        return String::new();
    }
    // SAFETY: libqpdf returns a NUL-terminated string it owns; it is copied at once.
    unsafe { CStr::from_ptr(ptr) }.to_string_lossy().into_owned()
}

fn c_string(bytes: &[u8]) -> Option<CString> {
    CString::new(bytes).ok()
}

impl Doc {
    /// Reads a PDF from memory with qpdf's recovery (and its password).
    pub(super) fn read(input: Vec<u8>, password: Option<&str>) -> Result<Doc, String> {
        let password = match password {
            Some(p) if !p.is_empty() => Some(CString::new(p).map_err(|_| "the password has a NUL byte".to_string())?),
            _ => None,
        };
        // SAFETY: see the module comment.
        let raw = unsafe { sys::qpdf_init() };
        if raw.is_null() {
            return Err("libqpdf could not start".to_string());
        }
        let doc = Doc { raw, input };
        // SAFETY: see the module comment; `doc.input` outlives the handle.
        unsafe {
            sys::qpdf_silence_errors(doc.raw);
            sys::qpdf_set_suppress_warnings(doc.raw, 1);
            sys::qpdf_read_memory(
                doc.raw,
                c"memory".as_ptr(),
                doc.input.as_ptr().cast::<c_char>(),
                doc.input.len() as u64,
                password.as_ref().map_or(std::ptr::null(), |p| p.as_ptr()),
            );
        }
        match doc.take_error() {
            Some(e) => Err(e),
            None => Ok(doc),
        }
    }

    /// The last error, if the last calls had one (and clears it).
    pub(super) fn take_error(&self) -> Option<String> {
        // SAFETY: see the module comment.
        unsafe {
            if sys::qpdf_has_error(self.raw) == 0 {
                return None;
            }
            let error = sys::qpdf_get_error(self.raw);
            if error.is_null() {
                return Some("unknown error".to_string());
            }
            Some(copy_text(sys::qpdf_get_error_message_detail(self.raw, error)))
        }
    }

    /// The warnings given since the last call (at most [`MAX_WARNINGS`] of them).
    pub(super) fn warnings(&self) -> Vec<Warning> {
        let mut out = Vec::new();
        // SAFETY: see the module comment.
        unsafe {
            while sys::qpdf_more_warnings(self.raw) != 0 {
                let w = sys::qpdf_next_warning(self.raw);
                if w.is_null() {
                    break;
                }
                if out.len() < MAX_WARNINGS {
                    let full = copy_text(sys::qpdf_get_error_full_text(self.raw, w));
                    let detail = copy_text(sys::qpdf_get_error_message_detail(self.raw, w));
                    out.push(Warning { location: location(&full), detail });
                }
            }
        }
        out
    }

    fn wrap(&self, oh: sys::qpdf_oh) -> Obj<'_> {
        Obj { doc: self, oh }
    }

    pub(super) fn is_encrypted(&self) -> bool {
        // SAFETY: see the module comment.
        unsafe { sys::qpdf_is_encrypted(self.raw) != 0 }
    }

    pub(super) fn trailer(&self) -> Obj<'_> {
        // SAFETY: see the module comment.
        self.wrap(unsafe { sys::qpdf_get_trailer(self.raw) })
    }

    pub(super) fn page_count(&self) -> Result<u32, String> {
        // SAFETY: see the module comment.
        let n = unsafe { sys::qpdf_get_num_pages(self.raw) };
        if let Some(e) = self.take_error() {
            return Err(e);
        }
        u32::try_from(n).map_err(|_| "no page tree".to_string())
    }

    pub(super) fn page(&self, index: u32) -> Obj<'_> {
        // SAFETY: see the module comment.
        self.wrap(unsafe { sys::qpdf_get_page_n(self.raw, index as usize) })
    }

    pub(super) fn object(&self, id: i32, generation: i32) -> Obj<'_> {
        // SAFETY: see the module comment.
        self.wrap(unsafe { sys::qpdf_get_object_by_id(self.raw, id, generation) })
    }

    pub(super) fn null(&self) -> Obj<'_> {
        // SAFETY: see the module comment.
        self.wrap(unsafe { sys::qpdf_oh_new_null(self.raw) })
    }

    pub(super) fn boolean(&self, value: bool) -> Obj<'_> {
        // SAFETY: see the module comment.
        self.wrap(unsafe { sys::qpdf_oh_new_bool(self.raw, i32::from(value)) })
    }

    pub(super) fn integer(&self, value: i64) -> Obj<'_> {
        // SAFETY: see the module comment.
        self.wrap(unsafe { sys::qpdf_oh_new_integer(self.raw, value) })
    }

    /// A name from its value (`/` first); a NUL, which no name may hold, becomes `#`.
    pub(super) fn name(&self, value: &[u8]) -> Obj<'_> {
        let value: Vec<u8> = value.iter().map(|&b| if b == 0 { b'#' } else { b }).collect();
        let value = c_string(&value).unwrap_or_default();
        // SAFETY: see the module comment.
        self.wrap(unsafe { sys::qpdf_oh_new_name(self.raw, value.as_ptr()) })
    }

    pub(super) fn array(&self) -> Obj<'_> {
        // SAFETY: see the module comment.
        self.wrap(unsafe { sys::qpdf_oh_new_array(self.raw) })
    }

    pub(super) fn dictionary(&self) -> Obj<'_> {
        // SAFETY: see the module comment.
        self.wrap(unsafe { sys::qpdf_oh_new_dictionary(self.raw) })
    }

    /// A new (indirect) stream with no data.
    pub(super) fn new_stream(&self) -> Obj<'_> {
        // SAFETY: see the module comment.
        self.wrap(unsafe { sys::qpdf_oh_new_stream(self.raw) })
    }

    pub(super) fn replace_object(&self, id: i32, generation: i32, with: &Obj<'_>) -> Result<(), String> {
        // SAFETY: see the module comment.
        unsafe { sys::qpdf_replace_object(self.raw, id, generation, with.oh) };
        self.take_error().map_or(Ok(()), Err)
    }

    /// Applies a qpdf JSON (version 2) update: objects or the trailer replaced.
    pub(super) fn update_from_json(&self, update: &serde_json::Value) -> Result<(), String> {
        let text = update.to_string();
        // SAFETY: see the module comment; libqpdf copies the buffer.
        unsafe { sys::qpdf_update_from_json_data(self.raw, text.as_ptr().cast::<c_char>(), text.len() as u64) };
        self.take_error().map_or(Ok(()), Err)
    }

    /// Writes the document as a new file: a fresh cross-reference table, stream data copied
    /// without decoding (new data compressed), object streams kept, unreferenced objects
    /// dropped, the input's encryption kept.
    pub(super) fn write(&self, linearize: bool) -> Result<Vec<u8>, String> {
        // SAFETY: see the module comment.
        unsafe {
            sys::qpdf_init_write_memory(self.raw);
            if let Some(e) = self.take_error() {
                return Err(e);
            }
            sys::qpdf_set_decode_level(self.raw, Level::None.raw());
            sys::qpdf_set_object_stream_mode(self.raw, sys::qpdf_object_stream_e_qpdf_o_preserve);
            sys::qpdf_set_compress_streams(self.raw, 1);
            sys::qpdf_set_preserve_unreferenced_objects(self.raw, 0);
            sys::qpdf_set_linearization(self.raw, i32::from(linearize));
            sys::qpdf_write(self.raw);
            if let Some(e) = self.take_error() {
                return Err(e);
            }
            let len = sys::qpdf_get_buffer_length(self.raw);
            let ptr = sys::qpdf_get_buffer(self.raw);
            if ptr.is_null() {
                return Err("no output".to_string());
            }
            Ok(std::slice::from_raw_parts(ptr, len).to_vec())
        }
    }
}

/// Where a warning's full text says it happened: "memory (object 7 0, offset 12): ..."
/// gives `object 7`, "memory (trailer, offset 9): ..." gives `trailer`.
fn location(full: &str) -> Option<String> {
    let inner = full.split_once(" (")?.1.split_once(')')?.0;
    if let Some(rest) = inner.strip_prefix("object ") {
        let id: String = rest.chars().take_while(char::is_ascii_digit).collect();
        return (!id.is_empty()).then(|| format!("object {id}"));
    }
    inner.starts_with("trailer").then(|| "trailer".to_string())
}

/// An object of a [`Doc`].
pub(super) struct Obj<'d> {
    doc: &'d Doc,
    oh: sys::qpdf_oh,
}

impl Drop for Obj<'_> {
    fn drop(&mut self) {
        // SAFETY: see the module comment.
        unsafe { sys::qpdf_oh_release(self.doc.raw, self.oh) }
    }
}

impl<'d> Obj<'d> {
    fn wrap(&self, oh: sys::qpdf_oh) -> Obj<'d> {
        Obj { doc: self.doc, oh }
    }

    fn raw(&self) -> sys::qpdf_data {
        self.doc.raw
    }

    /// Another handle to the same object.
    pub(super) fn dup(&self) -> Obj<'d> {
        // SAFETY: see the module comment.
        self.wrap(unsafe { sys::qpdf_oh_new_object(self.raw(), self.oh) })
    }

    pub(super) fn kind(&self) -> Kind {
        // SAFETY: see the module comment.
        let code = unsafe { sys::qpdf_oh_get_type_code(self.raw(), self.oh) };
        match code {
            sys::qpdf_object_type_e_ot_null => Kind::Null,
            sys::qpdf_object_type_e_ot_boolean => Kind::Bool,
            sys::qpdf_object_type_e_ot_integer => Kind::Int,
            sys::qpdf_object_type_e_ot_real => Kind::Real,
            sys::qpdf_object_type_e_ot_string => Kind::Str,
            sys::qpdf_object_type_e_ot_name => Kind::Name,
            sys::qpdf_object_type_e_ot_array => Kind::Array,
            sys::qpdf_object_type_e_ot_dictionary => Kind::Dict,
            sys::qpdf_object_type_e_ot_stream => Kind::Stream,
            _ => Kind::Other,
        }
    }

    /// Object number and generation, for an indirect object.
    pub(super) fn indirect(&self) -> Option<(i32, i32)> {
        // SAFETY: see the module comment.
        unsafe {
            (sys::qpdf_oh_is_indirect(self.raw(), self.oh) != 0).then(|| {
                (sys::qpdf_oh_get_object_id(self.raw(), self.oh), sys::qpdf_oh_get_generation(self.raw(), self.oh))
            })
        }
    }

    /// A dictionary's keys (as libqpdf gives them: one with a stray # is cut at its NUL).
    pub(super) fn keys(&self) -> Vec<Vec<u8>> {
        let mut keys = Vec::new();
        // SAFETY: see the module comment; the key iterator lives in the handle and is used to
        // its end before any other call.
        unsafe {
            sys::qpdf_oh_begin_dict_key_iter(self.raw(), self.oh);
            while sys::qpdf_oh_dict_more_keys(self.raw()) != 0 {
                let key = sys::qpdf_oh_dict_next_key(self.raw());
                if key.is_null() {
                    break;
                }
                keys.push(CStr::from_ptr(key).to_bytes().to_vec());
            }
        }
        keys
    }

    pub(super) fn has(&self, key: &[u8]) -> bool {
        let Some(key) = c_string(key) else { return false };
        // SAFETY: see the module comment.
        unsafe { sys::qpdf_oh_has_key(self.raw(), self.oh, key.as_ptr()) != 0 }
    }

    /// A dictionary's value (null when absent).
    pub(super) fn get(&self, key: &[u8]) -> Obj<'d> {
        let key = c_string(key).unwrap_or_default();
        // SAFETY: see the module comment.
        self.wrap(unsafe { sys::qpdf_oh_get_key(self.raw(), self.oh, key.as_ptr()) })
    }

    pub(super) fn set(&self, key: &[u8], value: &Obj<'_>) {
        let Some(key) = c_string(key) else { return };
        // SAFETY: see the module comment.
        unsafe { sys::qpdf_oh_replace_key(self.raw(), self.oh, key.as_ptr(), value.oh) };
    }

    pub(super) fn remove(&self, key: &[u8]) {
        let Some(key) = c_string(key) else { return };
        // SAFETY: see the module comment.
        unsafe { sys::qpdf_oh_remove_key(self.raw(), self.oh, key.as_ptr()) };
    }

    /// An array's length.
    pub(super) fn len(&self) -> usize {
        // SAFETY: see the module comment.
        usize::try_from(unsafe { sys::qpdf_oh_get_array_n_items(self.raw(), self.oh) }).unwrap_or(0)
    }

    pub(super) fn item(&self, index: usize) -> Obj<'d> {
        let index = i32::try_from(index).unwrap_or(i32::MAX);
        // SAFETY: see the module comment.
        self.wrap(unsafe { sys::qpdf_oh_get_array_item(self.raw(), self.oh, index) })
    }

    pub(super) fn erase(&self, index: usize) {
        let Ok(index) = i32::try_from(index) else { return };
        // SAFETY: see the module comment.
        unsafe { sys::qpdf_oh_erase_item(self.raw(), self.oh, index) };
    }

    pub(super) fn push(&self, item: &Obj<'_>) {
        // SAFETY: see the module comment.
        unsafe { sys::qpdf_oh_append_item(self.raw(), self.oh, item.oh) };
    }

    /// A name's value, whole (with the NUL that stands for a stray #).
    pub(super) fn name(&self) -> Vec<u8> {
        // SAFETY: see the module comment; the length is that of the string just returned.
        unsafe {
            let ptr = sys::qpdf_oh_get_name(self.raw(), self.oh);
            let len = sys::qpdf_get_last_string_length(self.raw());
            if ptr.is_null() {
                return Vec::new();
            }
            std::slice::from_raw_parts(ptr.cast::<u8>(), len).to_vec()
        }
    }

    /// A string's bytes.
    pub(super) fn string(&self) -> Vec<u8> {
        let mut len = 0usize;
        // SAFETY: see the module comment.
        unsafe {
            let ptr = sys::qpdf_oh_get_binary_string_value(self.raw(), self.oh, &mut len);
            if ptr.is_null() {
                return Vec::new();
            }
            std::slice::from_raw_parts(ptr.cast::<u8>(), len).to_vec()
        }
    }

    pub(super) fn integer(&self) -> i64 {
        // SAFETY: see the module comment.
        unsafe { sys::qpdf_oh_get_int_value(self.raw(), self.oh) }
    }

    /// A real number as written.
    pub(super) fn real(&self) -> String {
        // SAFETY: see the module comment.
        copy_text(unsafe { sys::qpdf_oh_get_real_value(self.raw(), self.oh) })
    }

    pub(super) fn boolean(&self) -> bool {
        // SAFETY: see the module comment.
        unsafe { sys::qpdf_oh_get_bool_value(self.raw(), self.oh) != 0 }
    }

    pub(super) fn stream_dict(&self) -> Obj<'d> {
        // SAFETY: see the module comment.
        self.wrap(unsafe { sys::qpdf_oh_get_dict(self.raw(), self.oh) })
    }

    /// A stream's data decoded at `level`, and whether it was decoded (qpdf gives the raw
    /// bytes of a stream it cannot decode at that level).
    pub(super) fn data(&self, level: Level) -> Result<(Vec<u8>, bool), String> {
        let mut filtered = 0;
        let mut buf: *mut u8 = std::ptr::null_mut();
        let mut len = 0usize;
        // SAFETY: see the module comment; `buf` is malloc'ed by libqpdf and freed below.
        unsafe {
            sys::qpdf_oh_get_stream_data(self.raw(), self.oh, level.raw(), &mut filtered, &mut buf, &mut len);
            let data = if buf.is_null() { Vec::new() } else { std::slice::from_raw_parts(buf, len).to_vec() };
            sys::qpdf_oh_free_buffer(&mut buf);
            match self.doc.take_error() {
                Some(e) => Err(e),
                None => Ok((data, filtered != 0)),
            }
        }
    }

    /// Replaces a stream's data; `filter` and `parms` become its /Filter and /DecodeParms
    /// (null removes them).
    pub(super) fn replace_data(&self, data: &[u8], filter: &Obj<'_>, parms: &Obj<'_>) {
        // SAFETY: see the module comment; libqpdf copies the data.
        unsafe {
            sys::qpdf_oh_replace_stream_data(self.raw(), self.oh, data.as_ptr(), data.len(), filter.oh, parms.oh);
        }
    }
}
