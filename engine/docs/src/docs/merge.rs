//! `POST /v1/pdf/merge`: combine 2 to 20 PDFs, optionally selected pages of each.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::{Context, blocking};
use crate::docs::page_edit_price;
use crate::error::EngineError;
use crate::input::FileInput;
use crate::output::{FileSet, NoJson, OutFile, OutputMode, Reply, derived_name};
use crate::pages::PageSelection;
use crate::pdf::assemble::{Assembler, Carry, SharedCopies};
use crate::pdf::outline_tree::OutlineItem;
use crate::pdf::{self, SourcePdf};
use crate::price::Price;

/// Fewest and most files of one merge (spec: 2 to 20).
const FILES: std::ops::RangeInclusive<usize> = 2..=20;

/// Request of `/v1/pdf/merge`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MergeInput {
    /// The PDFs, in order (2 to 20).
    #[schemars(length(min = 2, max = 20))]
    pub files: Vec<MergeFile>,
    /// What becomes of the inputs' bookmarks: `keep` them in order (default), put each
    /// file's under one bookmark named after the file (`per_file`), or `none`.
    #[serde(default)]
    pub bookmarks: MergeBookmarks,
    /// How to deliver the result.
    #[serde(default)]
    pub output: OutputMode,
}

/// One input of a merge.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MergeFile {
    /// The PDF.
    pub file: FileInput,
    /// Pages of this file to take, in order (`"1-3,5"`); all when omitted.
    #[serde(default)]
    #[schemars(regex(pattern = crate::pages::PATTERN))]
    pub pages: Option<String>,
}

/// Bookmarks of a merged document.
#[derive(Clone, Copy, Debug, Default, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum MergeBookmarks {
    /// The inputs' bookmarks to taken pages, one after the other.
    #[default]
    Keep,
    /// One bookmark per input file (its name), holding that file's bookmarks.
    PerFile,
    /// No bookmarks.
    None,
}

/// A checked merge: the distinct documents, and the inputs in order.
pub struct Merge {
    /// Each distinct input opened once: a file given several times (same bytes, same
    /// password) is one document.
    documents: Vec<SourcePdf>,
    parts: Vec<Part>,
    bookmarks: MergeBookmarks,
    output: OutputMode,
}

/// One input of the merge.
struct Part {
    /// Index into `documents`.
    document: usize,
    /// The name given to this input.
    filename: String,
    /// The pages taken, 1-based, in order.
    pages: Vec<u32>,
}

/// The route.
pub struct MergeRoute;

impl Route for MergeRoute {
    type Input = MergeInput;
    type Prepared = Merge;
    type Output = NoJson;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/pdf/merge",
        operation: "merge_pdf_files",
        family: Family::Docs,
        summary: "Combine 2-20 PDFs, optionally selected pages",
        description: "Combines 2 to 20 PDFs into one, in order, each optionally limited to a page selection. \
            Bookmarks are kept (or grouped per file), links between taken pages keep working, and form fields \
            are kept; a field whose name is already taken by an earlier file is renamed `name_2`. The first \
            file's document information is kept. output=url gives a 24 h link.",
        base_price: Price::micros(2_000),
        price_rule: "$0.002 covers 50 pages of the result; + $0.00002 a page beyond",
        free_pool: FreePool::Docs,
        produces: Produces::File,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::PDF,
    };

    async fn prepare(input: MergeInput, ctx: &Context) -> Result<Merge, EngineError> {
        if !FILES.contains(&input.files.len()) {
            return Err(EngineError::invalid(
                "/files",
                format!("/files: merge takes {} to {} PDFs; got {}", FILES.start(), FILES.end(), input.files.len()),
            ));
        }
        let selections = input
            .files
            .iter()
            .enumerate()
            .map(|(i, f)| PageSelection::parse_or_all(f.pages.as_deref(), &format!("/files/{i}/pages")))
            .collect::<Result<Vec<_>, _>>()?;
        let fetches = input
            .files
            .iter()
            .enumerate()
            .map(|(i, f)| async move { f.file.resolve(ctx, &format!("/files/{i}/file"), "document.pdf").await });
        let fetched = futures::future::try_join_all(fetches).await?;
        // A file given again (the same bytes and password) is opened once: `document_of[i]`
        // is input i's index among the distinct documents.
        let mut document_of: Vec<usize> = Vec::with_capacity(fetched.len());
        let mut opens = Vec::new();
        let mut filenames = Vec::with_capacity(fetched.len());
        for i in 0..fetched.len() {
            let same =
                fetched[..i].iter().position(|e| e.bytes == fetched[i].bytes && e.password == fetched[i].password);
            document_of.push(same.map_or(opens.len(), |j| document_of[j]));
            filenames.push(fetched[i].filename.clone());
            if same.is_none() {
                opens.push(i);
            }
        }
        let mut fetched: Vec<Option<_>> = fetched.into_iter().map(Some).collect();
        let documents = futures::future::try_join_all(opens.into_iter().map(|i| {
            let file = fetched[i].take().expect("each distinct input is opened once");
            async move { SourcePdf::from_bytes(file, &format!("/files/{i}/file"), ctx).await }
        }))
        .await?;
        let mut parts = Vec::with_capacity(document_of.len());
        for (i, ((document, filename), selection)) in document_of.into_iter().zip(filenames).zip(selections).enumerate()
        {
            let page_count = documents[document].page_count;
            let pages = selection.resolve(page_count, ctx.limits.max_pages, &format!("/files/{i}/pages"))?;
            parts.push(Part { document, filename, pages });
        }
        let total: usize = parts.iter().map(|p| p.pages.len()).sum();
        if total > ctx.limits.max_pages as usize {
            return Err(EngineError::too_large(
                "too_many_pages",
                Some("/files".into()),
                format!("/files: the merged PDF would have {total} pages; the limit is {}", ctx.limits.max_pages),
            ));
        }
        Ok(Merge { documents, parts, bookmarks: input.bookmarks, output: input.output })
    }

    fn quote(call: &Merge) -> Price {
        page_edit_price(call.parts.iter().map(|p| p.pages.len() as u32).sum())
    }

    async fn run(call: Merge, ctx: &Context) -> Result<Reply<NoJson>, EngineError> {
        let progress = ctx.progress.clone();
        blocking(move || {
            let mut asm = Assembler::new();
            let mut grouped = Vec::new();
            let total = call.parts.len() as u64;
            // For documents given more than once, what their copies may share.
            let mut shared: Vec<Option<SharedCopies>> = (0..call.documents.len())
                .map(|d| {
                    let repeated = call.parts.iter().filter(|p| p.document == d).count() > 1;
                    repeated.then(|| SharedCopies::new(&call.documents[d].doc))
                })
                .collect();
            for (i, part) in call.parts.iter().enumerate() {
                let start = asm.page_count();
                let keep = call.bookmarks == MergeBookmarks::Keep;
                let source = &call.documents[part.document].doc;
                let carry = Carry { outline: keep, info: i == 0 };
                let items = asm
                    .append_shared(source, &part.pages, carry, shared[part.document].as_mut())
                    .map_err(|e| e.under(&format!("/files/{i}/file")))?;
                if call.bookmarks == MergeBookmarks::PerFile {
                    let first_page = asm.page_ids().get(start).copied();
                    grouped.push(OutlineItem { title: part.filename.clone(), page: first_page, children: items });
                }
                progress.advance("files", i as u64 + 1, total);
            }
            if call.bookmarks == MergeBookmarks::PerFile {
                asm.set_outline(grouped);
            }
            let mut doc = asm.finish()?;
            // A file given twice, or files embedding the same fonts and images, carry each
            // of them once.
            pdf::dedupe::share_identical(&mut doc);
            let bytes = pdf::save(&mut doc)?;
            let name = derived_name(call.parts.first().map_or("merged.pdf", |p| p.filename.as_str()), "merged", "pdf");
            Ok(Reply::Files(FileSet::single(OutFile::pdf(name, bytes), call.output)))
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::pdf::qpdf::testing::{assert_qpdf_check, corpus, file_json, qpdf_pages};
    use crate::pdf::stamp::tests::tool;
    use crate::pdf::testing::call;

    async fn merged(files: Vec<serde_json::Value>) -> Vec<u8> {
        match call::<MergeRoute>(&json!({ "files": files })).await.unwrap() {
            Reply::Files(set) => set.into_single_file().unwrap().bytes,
        }
    }

    #[tokio::test]
    async fn a_file_given_several_times_carries_its_fonts_and_images_once() {
        let input = std::fs::read(corpus("../sample-files/pdflatex-4-pages.pdf")).unwrap();
        let one = json!({ "file": file_json(&input, "a.pdf", None) });
        let once = merged(vec![one.clone(), json!({ "file": file_json(&input, "a.pdf", None), "pages": "1" })]).await;
        let thrice = merged(vec![one.clone(), one.clone(), one]).await;
        assert_qpdf_check(&thrice, None);
        assert_eq!(qpdf_pages(&thrice, None), 12);
        // Three copies of the pages: what is shared (fonts, content) is there once, so the
        // file grows by the pages' own dictionaries, not by three times the input.
        assert!(
            thrice.len() < once.len() + once.len() / 4,
            "three copies take {} bytes, one copy and a page {}",
            thrice.len(),
            once.len()
        );
        // And every copy reads as the original.
        let (_, original) = tool("pdftotext", &[], &input);
        let (read, text) = tool("pdftotext", &[], &thrice);
        assert!(read);
        assert_eq!(text, original.repeat(3));
    }
}
