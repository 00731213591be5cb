//! The chain family: reads of EVM chains and Solana, the perpetual-funding venue and the
//! risk checks, one route per file (`../shared/spec/routebook.md` §3). Their shared code is
//! the core's `evm/` and `solana/`, and this crate's `risk/`, `phishing/` and
//! `hyperliquid/` beside this folder.

use crate::catalog::Catalog;

pub mod address_check;
pub mod allowance;
pub mod approvals_check;
pub mod balance;
pub mod balances;
pub mod block;
pub mod block_by_number;
pub mod call;
pub mod calldata;
pub mod code;
pub mod decode_log;
pub mod dex_price;
pub mod encode;
pub mod ens;
pub mod ens_records;
pub mod estimate_gas;
pub mod fees;
pub mod funding;
pub mod gas;
pub mod logs;
pub mod nft;
pub mod nonce;
pub mod price;
pub mod receipt;
pub mod sanctions_check;
pub mod signature;
pub mod simulate;
pub mod solana_account;
pub mod solana_balance;
pub mod solana_status;
pub mod solana_token;
pub mod solana_tokens;
pub mod solana_tx;
pub mod status;
pub mod storage;
pub mod token;
pub mod token_check;
pub mod tx;
pub mod typed_data_check;
pub mod url_check;

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
    catalog.add::<decode_log::DecodeLogRoute>();
    catalog.add::<signature::SignatureRoute>();
    catalog.add::<encode::EncodeRoute>();
    catalog.add::<receipt::ReceiptRoute>();
    catalog.add::<logs::LogsRoute>();
    catalog.add::<call::CallRoute>();
    catalog.add::<code::CodeRoute>();
    catalog.add::<block_by_number::BlockByNumberRoute>();
    catalog.add::<fees::FeesRoute>();
    catalog.add::<status::StatusRoute>();
    catalog.add::<simulate::SimulateRoute>();
    catalog.add::<balances::BalancesRoute>();
    catalog.add::<allowance::AllowanceRoute>();
    catalog.add::<nft::NftRoute>();
    catalog.add::<estimate_gas::EstimateGasRoute>();
    catalog.add::<typed_data_check::TypedDataRoute>();
    catalog.add::<approvals_check::ApprovalsRoute>();
    catalog.add::<ens_records::EnsRecordsRoute>();
    catalog.add::<dex_price::DexPriceRoute>();
    catalog.add::<sanctions_check::SanctionsRoute>();
    catalog.add::<url_check::UrlCheckRoute>();
    catalog.add::<token_check::TokenCheckRoute>();
    catalog.add::<solana_balance::SolanaBalanceRoute>();
    catalog.add::<solana_tokens::SolanaTokensRoute>();
    catalog.add::<solana_token::SolanaTokenRoute>();
    catalog.add::<solana_tx::SolanaTxRoute>();
    catalog.add::<solana_account::SolanaAccountRoute>();
    catalog.add::<solana_status::SolanaStatusRoute>();
}
