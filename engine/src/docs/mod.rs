//! The document family: PDF and Office operations, one route per file.

use crate::catalog::Catalog;
use crate::price::Price;

pub mod assemble;
pub mod outline_tree;
pub mod pdf;
pub mod rotate;

/// Adds every document route to the catalog.
pub fn register(catalog: &mut Catalog) {
    catalog.add::<rotate::RotateRoute>();
}

/// The page-edit price rule in words (route book §4).
pub const PAGE_EDIT_PRICE_RULE: &str = "$0.002 covers 50 pages; + $0.00002 a page beyond";

/// Page edits: $0.002 covers 50 pages, + $0.00002 a page beyond.
pub fn page_edit_price(pages: u32) -> Price {
    Price::tiered(Price::micros(2_000), 50, Price::micros(20), pages as u64)
}
