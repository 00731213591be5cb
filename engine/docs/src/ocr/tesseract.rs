//! libtesseract's C API, loaded at run time: a server without Tesseract still starts, and
//! only the OCR routes answer 503 naming the package to install.
//!
//! One [`Api`] is one `TessBaseAPI`: it may move between threads but is used by one at a
//! time (Tesseract is not re-entrant per handle). Handles of different threads run at once.

use std::ffi::{CStr, CString, OsString, c_char, c_float, c_int, c_void};
use std::path::{Path, PathBuf};
use std::ptr;

use libloading::Library;

/// The environment variable naming libtesseract (the file, or the folder holding it).
pub const TESSERACT_ENV: &str = "PAPERCHAIN_TESSERACT";

/// The library's file name in Tesseract 5 on Linux.
const LIBRARY_FILE: &str = "libtesseract.so.5";

/// `TessPageIteratorLevel`.
#[derive(Clone, Copy)]
#[repr(C)]
#[allow(dead_code)]
pub enum Level {
    Block = 0,
    Para = 1,
    Line = 2,
    Word = 3,
    Symbol = 4,
}

/// `PSM_AUTO`: page segmentation without orientation detection (that runs apart).
const PSM_AUTO: c_int = 3;
/// `PSM_OSD_ONLY`.
const PSM_OSD_ONLY: c_int = 0;

type Handle = *mut c_void;

/// The C functions used, resolved once.
struct Fns {
    create: unsafe extern "C" fn() -> Handle,
    delete: unsafe extern "C" fn(Handle),
    init3: unsafe extern "C" fn(Handle, *const c_char, *const c_char) -> c_int,
    set_variable: unsafe extern "C" fn(Handle, *const c_char, *const c_char) -> c_int,
    set_page_seg_mode: unsafe extern "C" fn(Handle, c_int),
    set_image: unsafe extern "C" fn(Handle, *const u8, c_int, c_int, c_int, c_int),
    set_source_resolution: unsafe extern "C" fn(Handle, c_int),
    recognize: unsafe extern "C" fn(Handle, *mut c_void) -> c_int,
    get_utf8_text: unsafe extern "C" fn(Handle) -> *mut c_char,
    mean_text_conf: unsafe extern "C" fn(Handle) -> c_int,
    clear: unsafe extern "C" fn(Handle),
    delete_text: unsafe extern "C" fn(*const c_char),
    detect_orientation_script:
        unsafe extern "C" fn(Handle, *mut c_int, *mut c_float, *mut *const c_char, *mut c_float) -> c_int,
    get_iterator: unsafe extern "C" fn(Handle) -> Handle,
    result_iterator_delete: unsafe extern "C" fn(Handle),
    result_iterator_next: unsafe extern "C" fn(Handle, Level) -> c_int,
    result_iterator_text: unsafe extern "C" fn(Handle, Level) -> *mut c_char,
    result_iterator_page_iterator: unsafe extern "C" fn(Handle) -> Handle,
    page_iterator_bounding_box:
        unsafe extern "C" fn(Handle, Level, *mut c_int, *mut c_int, *mut c_int, *mut c_int) -> c_int,
    page_iterator_is_at_beginning_of: unsafe extern "C" fn(Handle, Level) -> c_int,
    monitor_create: unsafe extern "C" fn() -> Handle,
    monitor_delete: unsafe extern "C" fn(Handle),
    monitor_set_deadline: unsafe extern "C" fn(Handle, c_int),
    monitor_set_cancel_func: unsafe extern "C" fn(Handle, CancelFunc),
    pdf_renderer_create: unsafe extern "C" fn(*const c_char, *const c_char, c_int) -> Handle,
    renderer_delete: unsafe extern "C" fn(Handle),
    renderer_begin: unsafe extern "C" fn(Handle, *const c_char) -> c_int,
    renderer_add_image: unsafe extern "C" fn(Handle, Handle) -> c_int,
    renderer_end: unsafe extern "C" fn(Handle) -> c_int,
}

/// The loaded library and where its language data is.
pub struct Tesseract {
    fns: Fns,
    /// The folder of the `.traineddata` files (and of `pdf.ttf`).
    pub tessdata: PathBuf,
    /// Kept loaded for the life of the process: the function pointers point into it.
    _library: Library,
}

/// Finds libtesseract: `PAPERCHAIN_TESSERACT` (the file or its folder), else the system's.
fn library_path(var: &impl Fn(&str) -> Option<OsString>) -> Result<OsString, String> {
    match var(TESSERACT_ENV).filter(|v| !v.is_empty()).map(PathBuf::from) {
        Some(given) => {
            let file = if given.is_dir() { given.join(LIBRARY_FILE) } else { given.clone() };
            if file.is_file() {
                Ok(file.into_os_string())
            } else {
                Err(format!("{TESSERACT_ENV} is {} but there is no {LIBRARY_FILE} there", given.display()))
            }
        }
        None => Ok(OsString::from(LIBRARY_FILE)),
    }
}

/// The language data folder: `TESSDATA_PREFIX` (Tesseract's own variable: the folder, or
/// its parent holding `tessdata/`), else the places Debian and a source build use.
pub fn tessdata_dir(var: &impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let has_data = |dir: &Path| dir.join("eng.traineddata").is_file() || dir.join("osd.traineddata").is_file();
    if let Some(prefix) = var("TESSDATA_PREFIX").filter(|v| !v.is_empty()).map(PathBuf::from) {
        return [prefix.clone(), prefix.join("tessdata")].into_iter().find(|d| d.is_dir());
    }
    ["/usr/share/tesseract-ocr/5/tessdata", "/usr/share/tessdata", "/usr/local/share/tessdata"]
        .into_iter()
        .map(PathBuf::from)
        .find(|d| has_data(d))
}

impl Tesseract {
    /// Loads the library and resolves every function; the error says what is missing.
    pub fn load(var: impl Fn(&str) -> Option<OsString>) -> Result<Tesseract, String> {
        let path = library_path(&var)?;
        let tessdata = tessdata_dir(&var).ok_or_else(|| {
            "no Tesseract language data (eng.traineddata) in /usr/share/tesseract-ocr/5/tessdata or TESSDATA_PREFIX"
                .to_string()
        })?;
        // SAFETY: loading libtesseract runs its initialisers, which only set up its own state.
        let library = unsafe { Library::new(&path) }.map_err(|e| format!("{}: {e}", path.to_string_lossy()))?;
        macro_rules! sym {
            ($name:literal) => {
                // SAFETY: the symbol's type is the C API's declaration (tesseract/capi.h, 5.x).
                *unsafe { library.get(concat!($name, "\0").as_bytes()) }
                    .map_err(|e| format!("{}: no {} ({e})", path.to_string_lossy(), $name))?
            };
        }
        let fns = Fns {
            create: sym!("TessBaseAPICreate"),
            delete: sym!("TessBaseAPIDelete"),
            init3: sym!("TessBaseAPIInit3"),
            set_variable: sym!("TessBaseAPISetVariable"),
            set_page_seg_mode: sym!("TessBaseAPISetPageSegMode"),
            set_image: sym!("TessBaseAPISetImage"),
            set_source_resolution: sym!("TessBaseAPISetSourceResolution"),
            recognize: sym!("TessBaseAPIRecognize"),
            get_utf8_text: sym!("TessBaseAPIGetUTF8Text"),
            mean_text_conf: sym!("TessBaseAPIMeanTextConf"),
            clear: sym!("TessBaseAPIClear"),
            delete_text: sym!("TessDeleteText"),
            detect_orientation_script: sym!("TessBaseAPIDetectOrientationScript"),
            get_iterator: sym!("TessBaseAPIGetIterator"),
            result_iterator_delete: sym!("TessResultIteratorDelete"),
            result_iterator_next: sym!("TessResultIteratorNext"),
            result_iterator_text: sym!("TessResultIteratorGetUTF8Text"),
            result_iterator_page_iterator: sym!("TessResultIteratorGetPageIterator"),
            page_iterator_bounding_box: sym!("TessPageIteratorBoundingBox"),
            page_iterator_is_at_beginning_of: sym!("TessPageIteratorIsAtBeginningOf"),
            monitor_create: sym!("TessMonitorCreate"),
            monitor_delete: sym!("TessMonitorDelete"),
            monitor_set_deadline: sym!("TessMonitorSetDeadlineMSecs"),
            monitor_set_cancel_func: sym!("TessMonitorSetCancelFunc"),
            pdf_renderer_create: sym!("TessPDFRendererCreate"),
            renderer_delete: sym!("TessDeleteResultRenderer"),
            renderer_begin: sym!("TessResultRendererBeginDocument"),
            renderer_add_image: sym!("TessResultRendererAddImage"),
            renderer_end: sym!("TessResultRendererEndDocument"),
        };
        Ok(Tesseract { fns, tessdata, _library: library })
    }

    /// The languages whose data is installed (`eng`, `deu`, `chi_sim`…), sorted; `osd`
    /// (orientation detection) is not a language.
    pub fn languages(&self) -> Vec<String> {
        let mut found: Vec<String> = std::fs::read_dir(&self.tessdata)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|entry| entry.file_name().to_str()?.strip_suffix(".traineddata").map(str::to_string))
            .filter(|name| name != "osd")
            .collect();
        found.sort();
        found
    }

    /// Whether orientation detection's data (`osd.traineddata`) is installed.
    pub fn has_osd(&self) -> bool {
        self.tessdata.join("osd.traineddata").is_file()
    }

    /// A handle initialised for `languages` (`eng+deu`), or for orientation detection when
    /// `languages` is `osd`.
    pub fn open(&'static self, languages: &str) -> Result<Api, String> {
        let f = &self.fns;
        let datapath = CString::new(self.tessdata.as_os_str().as_encoded_bytes()).map_err(|e| e.to_string())?;
        let lang = CString::new(languages).map_err(|e| e.to_string())?;
        // SAFETY: create returns a fresh handle, owned by the Api from here on (deleted on drop).
        let handle = unsafe { (f.create)() };
        if handle.is_null() {
            return Err("TessBaseAPICreate failed".into());
        }
        let api = Api { lib: self, handle };
        // Tesseract's notes ("Estimating resolution…") go nowhere: they are not errors.
        api.set_variable("debug_file", "/dev/null");
        // SAFETY: valid handle and NUL-terminated strings that outlive the call.
        let status = unsafe { (f.init3)(handle, datapath.as_ptr(), lang.as_ptr()) };
        if status != 0 {
            return Err(format!("Tesseract could not load the data of {languages} from {}", self.tessdata.display()));
        }
        let mode = if languages == "osd" { PSM_OSD_ONLY } else { PSM_AUTO };
        // SAFETY: valid handle.
        unsafe { (f.set_page_seg_mode)(handle, mode) };
        Ok(api)
    }
}

/// An 8-bit image for Tesseract: grey (1 byte a pixel) or RGB (3), rows top to bottom,
/// without padding.
pub struct Image<'a> {
    /// The pixels.
    pub pixels: &'a [u8],
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Bytes a pixel: 1 or 3.
    pub channels: u32,
    /// Resolution in dots per inch (Tesseract sizes its models' expectations by it).
    pub dpi: u32,
}

/// A word Tesseract read, in pixels of the image (y down).
#[derive(Clone, Debug, PartialEq)]
pub struct Word {
    /// The word's text.
    pub text: String,
    /// Left edge.
    pub x0: i32,
    /// Top edge.
    pub y0: i32,
    /// Right edge.
    pub x1: i32,
    /// Bottom edge.
    pub y1: i32,
    /// The word starts a new text line.
    pub line_start: bool,
}

/// What Tesseract read on one image.
#[derive(Clone, Debug, Default)]
pub struct Reading {
    /// The text, lines ending in `\n`, paragraphs separated by a blank line.
    pub text: String,
    /// Mean word confidence, 0 to 100 (0 when nothing was read).
    pub confidence: u32,
    /// The words in reading order.
    pub words: Vec<Word>,
}

/// Orientation detection's answer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Orientation {
    /// How far the image's text is turned clockwise from upright: 0, 90, 180 or 270.
    pub degrees: u32,
    /// Tesseract's confidence in it (above about 2 is meaningful; 15 and up is sure).
    pub confidence: f32,
}

/// Why a recognition failed.
#[derive(Debug)]
pub enum Failure {
    /// The deadline passed.
    Deadline,
    /// The call this reading works for was stopped ([`crate::cancel`]).
    Stopped,
    /// Tesseract refused (the message says what it was doing).
    Engine(String),
}

/// Tesseract's cancel callback (`TessCancelFunc`): asked as recognition goes, with the
/// monitor's `cancel_this` and the words read so far; `true` stops it.
type CancelFunc = unsafe extern "C" fn(*mut std::ffi::c_void, c_int) -> bool;

/// Whether the call the reading thread works for was stopped.
unsafe extern "C" fn stopped(_cancel_this: *mut std::ffi::c_void, _words: c_int) -> bool {
    crate::cancel::is_stopped()
}

/// One initialised `TessBaseAPI`.
pub struct Api {
    lib: &'static Tesseract,
    handle: Handle,
}

// SAFETY: a TessBaseAPI holds no thread-bound state; the Api is used by one thread at a time
// (it is moved, never shared: it is not Sync).
unsafe impl Send for Api {}

impl Drop for Api {
    fn drop(&mut self) {
        // SAFETY: the handle came from TessBaseAPICreate and is deleted once.
        unsafe { (self.lib.fns.delete)(self.handle) }
    }
}

/// Owns a C string Tesseract allocated.
struct TessText<'a>(&'a Fns, *mut c_char);

impl TessText<'_> {
    fn text(&self) -> String {
        if self.1.is_null() {
            return String::new();
        }
        // SAFETY: Tesseract returns NUL-terminated UTF-8 (lossy in case it is not).
        unsafe { CStr::from_ptr(self.1) }.to_string_lossy().into_owned()
    }
}

impl Drop for TessText<'_> {
    fn drop(&mut self) {
        if !self.1.is_null() {
            // SAFETY: allocated by Tesseract, freed once by its own deallocator.
            unsafe { (self.0.delete_text)(self.1) }
        }
    }
}

impl Api {
    fn set_variable(&self, name: &str, value: &str) {
        let (Ok(name), Ok(value)) = (CString::new(name), CString::new(value)) else { return };
        // SAFETY: valid handle and strings.
        unsafe { (self.lib.fns.set_variable)(self.handle, name.as_ptr(), value.as_ptr()) };
    }

    fn set_image(&mut self, image: &Image) -> Result<(), Failure> {
        let row = image.width as usize * image.channels as usize;
        if !matches!(image.channels, 1 | 3)
            || image.pixels.len() != row * image.height as usize
            || image.width == 0
            || image.height == 0
            || i32::try_from(row).is_err()
            || i32::try_from(image.height).is_err()
        {
            return Err(Failure::Engine(format!(
                "an image of {} × {} × {} does not match its {} bytes",
                image.width,
                image.height,
                image.channels,
                image.pixels.len()
            )));
        }
        let f = &self.lib.fns;
        // SAFETY: the pixel buffer has exactly height rows of `row` bytes; Tesseract copies it
        // into its own image before SetImage returns.
        unsafe {
            (f.set_image)(
                self.handle,
                image.pixels.as_ptr(),
                image.width as c_int,
                image.height as c_int,
                image.channels as c_int,
                row as c_int,
            );
            (f.set_source_resolution)(self.handle, image.dpi as c_int);
        }
        Ok(())
    }

    /// Runs recognition on `image`; stops at `deadline_ms` milliseconds, or within a few
    /// words once the call it works for was stopped (Tesseract asks [`stopped`] as it goes).
    fn recognize(&mut self, image: &Image, deadline_ms: u32) -> Result<(), Failure> {
        self.set_image(image)?;
        let f = &self.lib.fns;
        // SAFETY: the monitor is created, used for this call only and deleted below.
        unsafe {
            let monitor = (f.monitor_create)();
            (f.monitor_set_deadline)(monitor, deadline_ms.min(i32::MAX as u32) as c_int);
            (f.monitor_set_cancel_func)(monitor, stopped);
            let started = std::time::Instant::now();
            let status = (f.recognize)(self.handle, monitor);
            (f.monitor_delete)(monitor);
            if status != 0 {
                return Err(if crate::cancel::is_stopped() {
                    Failure::Stopped
                } else if started.elapsed().as_millis() >= deadline_ms as u128 {
                    Failure::Deadline
                } else {
                    Failure::Engine("Tesseract could not recognise the page".into())
                });
            }
        }
        Ok(())
    }

    /// Reads `image`: its text, confidence and words. The results stay in the handle (for
    /// [`Api::add_to`]) until the next reading or [`Api::clear`].
    pub fn read(&mut self, image: &Image, deadline_ms: u32) -> Result<Reading, Failure> {
        self.clear();
        self.recognize(image, deadline_ms)?;
        Ok(self.reading())
    }

    /// Adds the last reading to `layer` as its next page.
    pub fn add_to(&mut self, layer: &mut TextLayer) -> Result<(), Failure> {
        // SAFETY: the renderer and this handle are both live; AddImage reads the results.
        let added = unsafe { (self.lib.fns.renderer_add_image)(layer.renderer, self.handle) };
        if added == 0 {
            return Err(Failure::Engine("Tesseract could not write the text layer".into()));
        }
        Ok(())
    }

    /// Frees the last reading's results and image; the models stay loaded.
    pub fn clear(&mut self) {
        // SAFETY: valid handle.
        unsafe { (self.lib.fns.clear)(self.handle) };
    }

    /// The results of the last recognition.
    fn reading(&self) -> Reading {
        let f = &self.lib.fns;
        // SAFETY: valid handle after Recognize; the texts are freed by TessText.
        let text = TessText(f, unsafe { (f.get_utf8_text)(self.handle) }).text();
        // SAFETY: valid handle.
        let confidence = unsafe { (f.mean_text_conf)(self.handle) }.clamp(0, 100) as u32;
        let mut words = Vec::new();
        // SAFETY: the iterator belongs to us until deleted below; its page iterator is a view
        // of it and is not deleted on its own.
        unsafe {
            let it = (f.get_iterator)(self.handle);
            if !it.is_null() {
                let page = (f.result_iterator_page_iterator)(it);
                loop {
                    let word = TessText(f, (f.result_iterator_text)(it, Level::Word)).text();
                    let (mut x0, mut y0, mut x1, mut y1) = (0, 0, 0, 0);
                    let boxed = (f.page_iterator_bounding_box)(page, Level::Word, &mut x0, &mut y0, &mut x1, &mut y1);
                    if boxed != 0 && !word.trim().is_empty() {
                        words.push(Word {
                            text: word,
                            x0,
                            y0,
                            x1,
                            y1,
                            line_start: (f.page_iterator_is_at_beginning_of)(page, Level::Line) != 0,
                        });
                    }
                    if (f.result_iterator_next)(it, Level::Word) == 0 {
                        break;
                    }
                }
                (f.result_iterator_delete)(it);
            }
        }
        Reading { text, confidence, words }
    }

    /// Detects the orientation of the text in `image` (a handle opened for `osd`); `None`
    /// when there is too little text to tell.
    pub fn orientation(&mut self, image: &Image) -> Option<Orientation> {
        self.set_image(image).ok()?;
        let f = &self.lib.fns;
        let (mut degrees, mut confidence, mut script, mut script_confidence) = (0, 0.0f32, ptr::null(), 0.0f32);
        // SAFETY: valid handle and out-pointers; the script name is Tesseract's own constant.
        let found = unsafe {
            (f.detect_orientation_script)(
                self.handle,
                &mut degrees,
                &mut confidence,
                &mut script,
                &mut script_confidence,
            )
        };
        // SAFETY: valid handle.
        unsafe { (f.clear)(self.handle) };
        (found != 0 && matches!(degrees, 0 | 90 | 180 | 270))
            .then_some(Orientation { degrees: degrees as u32, confidence })
    }
}

/// Tesseract's PDF renderer in text-only mode: one page of invisible text (its glyph-less
/// font, each word stretched over its box) per image read into it, written to a file in
/// a private folder and read back at the end.
pub struct TextLayer {
    lib: &'static Tesseract,
    renderer: Handle,
    file: PathBuf,
    _folder: tempfile::TempDir,
}

// SAFETY: the renderer is used by one thread at a time (moved, never shared).
unsafe impl Send for TextLayer {}

impl TextLayer {
    /// Starts a text-only PDF.
    pub fn new(lib: &'static Tesseract) -> Result<TextLayer, String> {
        let folder = tempfile::Builder::new()
            .prefix("paperchain-ocr-")
            .tempdir()
            .map_err(|e| format!("no temporary folder for the text layer: {e}"))?;
        let base = folder.path().join("layer");
        let c_base = CString::new(base.as_os_str().as_encoded_bytes()).map_err(|e| e.to_string())?;
        // The renderer wants the folder of pdf.ttf with a trailing separator.
        let mut data = lib.tessdata.as_os_str().as_encoded_bytes().to_vec();
        data.push(b'/');
        let c_data = CString::new(data).map_err(|e| e.to_string())?;
        let f = &lib.fns;
        // SAFETY: NUL-terminated strings; the renderer is owned by TextLayer from here on.
        let renderer = unsafe { (f.pdf_renderer_create)(c_base.as_ptr(), c_data.as_ptr(), 1) };
        if renderer.is_null() {
            return Err("Tesseract's PDF renderer could not start".into());
        }
        let layer = TextLayer { lib, renderer, file: base.with_extension("pdf"), _folder: folder };
        // SAFETY: a fresh renderer.
        if unsafe { (f.renderer_begin)(renderer, c"OCR text".as_ptr()) } == 0 {
            return Err(format!("Tesseract's PDF renderer could not write {}", layer.file.display()));
        }
        Ok(layer)
    }

    /// Ends the document and answers its bytes.
    pub fn finish(self) -> Result<Vec<u8>, String> {
        // SAFETY: the renderer is live; ending it flushes the file.
        let ended = unsafe { (self.lib.fns.renderer_end)(self.renderer) };
        if ended == 0 {
            return Err("Tesseract's PDF renderer could not finish the text layer".into());
        }
        std::fs::read(&self.file).map_err(|e| format!("the text layer {} cannot be read: {e}", self.file.display()))
    }
}

impl Drop for TextLayer {
    fn drop(&mut self) {
        // SAFETY: deleted once; the folder (and the file) go when `_folder` drops after this.
        unsafe { (self.lib.fns.renderer_delete)(self.renderer) }
    }
}
