//! Office Open XML files (XLSX, DOCX, PPTX): the gate every package passes and the readers
//! behind it. Nothing here knows about routes.

pub mod csv;
pub mod docx_write;
pub mod from_pdf;
pub mod package;
pub mod slides;
pub mod template;
pub mod workbook;
pub mod xml_tree;
