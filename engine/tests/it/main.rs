//! The engine's integration tests, in one test binary (`engine`): the crate is linked once
//! rather than once per suite. Each module below is one suite; `common` is what they share.
//! Their fixtures stay in `engine/tests/fixtures/`.

mod common;

/// The allocator the programs install: these tests run as the product does, and
/// `memory_budget` checks that calls are charged.
#[global_allocator]
static ALLOCATOR: paperchain_engine::memory::Counting = paperchain_engine::memory::Counting;

mod chain_abi;
mod chain_address_check;
mod chain_config;
mod chain_dex_price;
mod chain_ens;
mod chain_ens_records;
mod chain_evm;
mod chain_price;
mod chain_reads;
mod chain_sanctions;
mod chain_solana;
mod chain_state;
mod chain_token_check;
mod chain_tx;
mod chain_typed_data;
mod chain_url_check;
mod docs_fill_template;
mod docs_markdown;
mod docs_pdf_text;
mod docs_pptx;
mod docs_to_pdf;
mod docs_xlsx;
mod fetch;
mod funding;
mod html_to_pdf;
mod memory_budget;
mod ocr_url;
mod pdf_bank_statement;
mod pdf_blank_pages;
mod pdf_compare;
mod pdf_e_invoice;
mod pdf_extract_images;
mod pdf_layouts;
mod pdf_ocr;
mod pdf_redact;
mod pdf_sanitize;
mod pdf_sign;
mod pdf_split_by;
mod pdf_tables;
mod pdf_to_docx;
mod pdf_to_pdfa;
mod pricing;
mod variety;
