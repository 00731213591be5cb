//! The chain family: reads of EVM chains, the perpetual-funding venue and the risk
//! checks, one route per file (route book §3).

use crate::catalog::Catalog;

/// Adds every chain route to the catalog.
pub fn register(catalog: &mut Catalog) {
    let _ = catalog;
}
