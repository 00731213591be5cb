//! The chain family: reads of EVM chains, the perpetual-funding venue and the risk
//! checks, one route per file (`../shared/spec/routebook.md` §3). Their shared EVM code is in `evm/`.

use crate::catalog::Catalog;

pub mod address_check;
pub mod balance;
pub mod block;
pub mod calldata;
pub mod ens;
pub mod funding;
pub mod gas;
pub mod nonce;
pub mod price;
pub mod storage;
pub mod token;
pub mod tx;

/// Adds every chain route to the catalog.
pub fn register(catalog: &mut Catalog) {
    catalog.add::<funding::FundingRoute>();
    catalog.add::<calldata::CalldataRoute>();
    catalog.add::<token::TokenRoute>();
    catalog.add::<balance::BalanceRoute>();
    catalog.add::<gas::GasRoute>();
    catalog.add::<block::BlockRoute>();
    catalog.add::<tx::TxRoute>();
    catalog.add::<ens::EnsRoute>();
    catalog.add::<price::PriceRoute>();
    catalog.add::<address_check::AddressCheckRoute>();
    catalog.add::<storage::StorageRoute>();
    catalog.add::<nonce::NonceRoute>();
}
