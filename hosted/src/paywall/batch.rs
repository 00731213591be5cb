//! A call paid over a `batch-settlement` channel (`crate::batch` has the channels and the
//! escrow): its checks, the run, and what is recorded.
//!
//! A voucher must be for exactly the charged total the service holds plus this call's
//! price, signed by the channel's payer (or its payer authorizer), within the channel's
//! balance; anything else (a voucher sent again, a lower or higher total) is answered with
//! a corrective 402 that carries the channel's state and the last voucher the service
//! holds, and nothing is charged. The voucher is reserved on the channel before the run
//! (one call per channel at a time) and becomes the charged total with the call's ledger
//! row. A deposit is simulated before the run and submitted after it: a deposit that does
//! not land leaves the answer undelivered and nothing charged. A refund request closes the
//! channel without running the route: what was charged and not yet claimed is claimed, the
//! rest returned to the payer, in one transaction.

use alloy::primitives::{Address, B256};
use paperchain_engine::catalog::PreparedCall;
use paperchain_engine::{Context, EngineError, ErrorKind, Price, Reply};
use paperchain_protocol::batch_evm::{
    BatchKind, BatchPayload, ChannelConfig, ChannelState, channel_id, read_units, voucher_signer,
};
use paperchain_protocol::x402::{PaymentPayload, Requirements, SCHEME_BATCH, SettlementResponse};
use serde_json::json;

use super::{Answer, Failure, Paywall, PaywallCall, Receipt, Required, RequiredBody, store_failure};
use crate::batch::escrow::{EscrowError, claim_row};
use crate::batch::{BALANCE_FRESH, Channels};
use crate::store::{ChannelCommit, ChannelRow, ChannelTx, Decision, NewChannel, Outcome};

/// The 402 code of a voucher that is not for the charged total plus the price.
const MISMATCH: &str = "invalid_batch_settlement_evm_cumulative_amount_mismatch";

/// A batch payment read and checked against the offer.
struct Checked<'a> {
    channels: &'a Channels,
    config: ChannelConfig,
    id: B256,
    max: u128,
    row: Option<ChannelRow>,
}

impl Checked<'_> {
    fn charged(&self) -> u128 {
        self.row.as_ref().map_or(0, |row| row.charged)
    }

    fn balance(&self) -> u128 {
        self.row.as_ref().map_or(0, |row| row.balance)
    }

    fn state(&self, charged: u128, balance: u128) -> ChannelState {
        ChannelState {
            channel_id: self.id.to_string(),
            balance: balance.to_string(),
            total_claimed: self.row.as_ref().map_or(0, |row| row.claimed).to_string(),
            withdraw_requested_at: 0,
            refund_nonce: "0".into(),
            charged_cumulative_amount: charged.to_string(),
        }
    }
}

impl Paywall {
    /// The checks every batch payload passes: the channel is one of this service's on the
    /// offered terms, and the voucher is the payer's for that channel.
    async fn check_batch<'a>(
        &'a self,
        payment: &'a PaymentPayload,
        payload: &'a BatchPayload,
        decision: &mut Decision,
    ) -> Result<Checked<'a>, (Outcome, &'static str, String)> {
        let invalid = |why: String| (Outcome::InvalidPayment, "invalid_payment", format!("invalid_payment: {why}"));
        let Some(channels) = self.batch.as_ref().filter(|c| c.network() == payment.accepted.network) else {
            return Err(invalid(format!("batch-settlement is not offered on {}", payment.accepted.network)));
        };
        let config = payload.channel_config.config().map_err(invalid)?;
        let pay_to = self.config.pay_to.iter().find(|p| p.network.caip2 == channels.network());
        let (Some(pay_to), Ok(asset)) = (pay_to, payment.accepted.asset.parse::<Address>()) else {
            return Err(invalid("the payment's network or asset is not offered".into()));
        };
        let pay_to = pay_to.address.parse::<Address>().map_err(|_| invalid("this service's payTo".into()))?;
        if let Some(why) = channels.refuse_config(&config, pay_to, asset) {
            return Err(invalid(why));
        }
        decision.payer = Some(config.payer.to_checksum(None));
        let chain_id = channels.escrow().chain_id();
        let id = channel_id(&config, chain_id);
        let (voucher_id, max) = payload.voucher.read().map_err(invalid)?;
        if voucher_id != id {
            return Err(invalid("`voucher.channelId` is not the id of `channelConfig`".into()));
        }
        let signer = if config.payerAuthorizer.is_zero() { config.payer } else { config.payerAuthorizer };
        if voucher_signer(chain_id, id, max, &payload.voucher.signature) != Some(signer) {
            let why = "invalid_batch_settlement_evm_voucher_signature: the voucher is not signed by the channel's \
                       payer authorizer";
            return Err((Outcome::InvalidPayment, "invalid_batch_settlement_evm_voucher_signature", why.into()));
        }
        let row = self.store.channel(&id.to_string()).await.map_err(|e| {
            tracing::error!(error = %e, "reading a channel failed");
            (Outcome::InvalidPayment, "store_unavailable", "the service cannot read its channels right now".into())
        })?;
        Ok(Checked { channels, config, id, max, row })
    }

    /// A call paid with a deposit or a voucher (`ours` is the offer it accepted).
    pub(super) async fn paid_batch(
        &self,
        call: &PaywallCall<'_>,
        price: Price,
        prepared: PreparedCall,
        (payment, payload): (&PaymentPayload, &BatchPayload),
        ctx: &Context,
        decision: &mut Decision,
    ) -> Answer {
        let mut checked = match self.check_batch(payment, payload, decision).await {
            Ok(checked) => checked,
            Err((outcome, code, error)) => return self.refuse_batch(call, price, decision, outcome, code, error).await,
        };
        // A refund request never comes here: `Paywall::paid_or_refund` takes it first.
        let price_units = u128::from(price.units());
        if checked.max != checked.charged() + price_units {
            return self.corrective(call, price, &checked, decision).await;
        }
        let deposit = match (&payload.kind, &payload.deposit) {
            (BatchKind::Deposit, Some(deposit)) => {
                let amount = read_units(&deposit.amount).filter(|a| *a > 0);
                let data = deposit.authorization.erc3009_authorization.collector_data();
                match (amount, data) {
                    (Some(amount), Ok(data)) => Some((amount, data)),
                    (None, _) => {
                        let error = "invalid_payment: `deposit.amount` is not a positive whole number".to_string();
                        let outcome = Outcome::InvalidPayment;
                        return self.refuse_batch(call, price, decision, outcome, "invalid_payment", error).await;
                    }
                    (_, Err(why)) => {
                        let error = format!("invalid_payment: {why}");
                        let outcome = Outcome::InvalidPayment;
                        return self.refuse_batch(call, price, decision, outcome, "invalid_payment", error).await;
                    }
                }
            }
            (BatchKind::Deposit, None) => {
                let error = "invalid_payment: a `deposit` payload without `deposit`".to_string();
                return self
                    .refuse_batch(call, price, decision, Outcome::InvalidPayment, "invalid_payment", error)
                    .await;
            }
            _ => None,
        };
        // The channel's balance, read again from the chain when the service's copy is old.
        let stale = checked.row.as_ref().is_some_and(|row| {
            row.checked_at_ms < crate::store::now_ms() - i64::try_from(BALANCE_FRESH.as_millis()).unwrap_or(i64::MAX)
        });
        if deposit.is_none() && stale {
            match checked.channels.refresh(&self.store, checked.id).await {
                Ok(_) => checked.row = self.store.channel(&checked.id.to_string()).await.ok().flatten(),
                Err(e) => return self.escrow_failure(call, price, decision, e).await,
            }
        }
        if checked.row.as_ref().is_some_and(|row| row.withdrawing) {
            let error = "invalid_batch_settlement_evm_withdrawal_pending: the payer asked to withdraw this channel; \
                         it takes no more vouchers"
                .to_string();
            let code = "invalid_batch_settlement_evm_withdrawal_pending";
            return self.refuse_batch(call, price, decision, Outcome::InvalidPayment, code, error).await;
        }
        let available = checked.balance() + deposit.as_ref().map_or(0, |(amount, _)| *amount);
        if checked.max > available {
            let error = format!(
                "invalid_batch_settlement_evm_insufficient_balance: the voucher for {} is over the channel's balance \
                 {available}; deposit more",
                checked.max
            );
            let code = "invalid_batch_settlement_evm_insufficient_balance";
            return self.refuse_batch(call, price, decision, Outcome::InvalidPayment, code, error).await;
        }
        if let Some((amount, data)) = &deposit
            && let Err(e) = checked.channels.escrow().simulate_deposit(&checked.config, *amount, data.clone()).await
        {
            return self.escrow_failure(call, price, decision, e).await;
        }
        let (id, config_json) = (checked.id.to_string(), json!(payload.channel_config).to_string());
        let payer = checked.config.payer.to_checksum(None);
        let channel = NewChannel { id: &id, network: checked.channels.network(), payer: &payer, config: &config_json };
        match self.store.reserve_channel(&channel, checked.charged(), checked.max, &payload.voucher.signature).await {
            Ok(true) => {}
            Ok(false) => return self.corrective(call, price, &checked, decision).await,
            Err(e) => return Answer::Failed(store_failure(e)),
        }
        let reply = match self.run(prepared, ctx).await {
            Ok((reply, _)) => reply,
            Err(error) => {
                self.release_channel(&id, checked.max).await;
                decision.outcome = Outcome::OperationFailed;
                decision.error_code = Some(error.code.to_string());
                return Answer::Failed(error.into());
            }
        };
        let (transaction, balance) = match &deposit {
            None => (String::new(), None),
            Some((amount, data)) => {
                match checked.channels.escrow().deposit(&checked.config, *amount, data.clone()).await {
                    Ok(tx) => {
                        let balance = match checked.channels.escrow().channel(checked.id).await {
                            Ok(on_chain) => on_chain.balance,
                            Err(_) => checked.balance() + amount,
                        };
                        let record =
                            ChannelTx { kind: "deposit".into(), tx_hash: tx.to_string(), channels: 1, amount: *amount };
                        if let Err(e) = self.store.channels_settled(&record, &[]).await {
                            tracing::error!(error = %e, "recording a deposit failed");
                        }
                        (tx.to_string(), Some(balance))
                    }
                    Err(e) => {
                        self.release_channel(&id, checked.max).await;
                        return self.escrow_failure(call, price, decision, e).await;
                    }
                }
            }
        };
        decision.outcome = Outcome::Paid;
        decision.tx_hash = (!transaction.is_empty()).then(|| transaction.clone());
        decision.channel = Some(ChannelCommit { id, charged: checked.max, balance });
        let state = checked.state(checked.max, balance.unwrap_or_else(|| checked.balance()));
        let mut settlement = SettlementResponse::settled(&transaction, checked.channels.network(), Some(&payer));
        settlement.amount = Some(deposit.map_or(String::new(), |(amount, _)| amount.to_string()));
        settlement.extra = Some(json!({ "channelState": state, "chargedAmount": price.units().to_string() }));
        Answer::Delivered { reply, receipt: Some(Box::new(Receipt { settlement, mpp_receipt: None })), free_left: None }
    }

    /// A refund request: claims what the channel charged and returns the rest to the payer.
    /// The route does not run; the answer says what moved.
    pub(super) async fn refund_batch(
        &self,
        call: &PaywallCall<'_>,
        payment: &PaymentPayload,
        payload: &BatchPayload,
        decision: &mut Decision,
    ) -> Answer {
        let price = call.route.info().base_price;
        let checked = match self.check_batch(payment, payload, decision).await {
            Ok(checked) => checked,
            Err((outcome, code, error)) => return self.refuse_batch(call, price, decision, outcome, code, error).await,
        };
        let Some(row) = checked.row.as_ref() else {
            let error = "invalid_payment: this service has no such channel".to_string();
            return self.refuse_batch(call, price, decision, Outcome::InvalidPayment, "invalid_payment", error).await;
        };
        if checked.max != row.charged || row.pending.is_some() {
            return self.corrective(call, price, &checked, decision).await;
        }
        let on_chain = match checked.channels.refresh(&self.store, checked.id).await {
            Ok(on_chain) => on_chain,
            Err(e) => return self.escrow_failure(call, price, decision, e).await,
        };
        let rest = on_chain.balance.saturating_sub(row.charged.max(on_chain.claimed));
        let asked = payload.amount.as_deref().and_then(|a| a.parse::<u128>().ok());
        let refund = asked.map_or(rest, |asked| asked.min(rest));
        let claim = (row.charged > on_chain.claimed)
            .then(|| claim_row(&checked.config, row.charged, &payload.voucher.signature, row.charged))
            .flatten();
        let claimed = claim.as_ref().map_or(0, |_| row.charged - on_chain.claimed);
        let tx = match checked.channels.escrow().refund(&checked.config, claim, refund).await {
            Ok(tx) => tx.to_string(),
            Err(e) => return self.escrow_failure(call, price, decision, e).await,
        };
        let balance = on_chain.balance - refund;
        let record = ChannelTx { kind: "refund".into(), tx_hash: tx.clone(), channels: 1, amount: refund };
        if let Err(e) = self.store.channels_settled(&record, &[(row.id.clone(), row.charged, Some(balance))]).await {
            tracing::error!(error = %e, "recording a refund failed");
        }
        decision.outcome = Outcome::Refunded;
        decision.quote = Some(0);
        decision.network = Some(checked.channels.network().to_string());
        decision.tx_hash = Some(tx.clone());
        let state = checked.state(row.charged, balance);
        let answer = json!({
            "channelId": checked.id.to_string(),
            "refunded": refund.to_string(),
            "claimed": claimed.to_string(),
            "transaction": tx,
            "channelState": state,
        });
        let payer = checked.config.payer.to_checksum(None);
        let mut settlement = SettlementResponse::settled(&tx, checked.channels.network(), Some(&payer));
        settlement.amount = Some(refund.to_string());
        settlement.extra = Some(json!({ "channelState": state, "chargedAmount": "0" }));
        Answer::Delivered {
            reply: Reply::Json(answer),
            receipt: Some(Box::new(Receipt { settlement, mpp_receipt: None })),
            free_left: None,
        }
    }

    /// The corrective 402: the channel's state and the last voucher this service holds, so
    /// the payer can sign the next one from the right total. Nothing is charged.
    async fn corrective(
        &self,
        call: &PaywallCall<'_>,
        price: Price,
        checked: &Checked<'_>,
        decision: &mut Decision,
    ) -> Answer {
        decision.outcome = Outcome::InvalidPayment;
        decision.error_code = Some(MISMATCH.into());
        let charged = checked.charged();
        let error = format!(
            "{MISMATCH}: the voucher is for {}; this channel's charged total is {charged}, so this call's voucher \
             must be for {}",
            checked.max,
            charged + u128::from(price.units())
        );
        let mut body = self.payment_required(call.route, price, Some(error)).await;
        let state = checked.state(charged, checked.balance());
        let voucher = checked
            .row
            .as_ref()
            .and_then(|row| row.voucher_signature.as_ref())
            .map(|signature| json!({ "signedMaxClaimable": charged.to_string(), "signature": signature }));
        for offer in body["accepts"].as_array_mut().into_iter().flatten() {
            if offer["scheme"] == SCHEME_BATCH && offer["network"] == checked.channels.network() {
                offer["extra"]["channelState"] = json!(state);
                if let Some(voucher) = &voucher {
                    offer["extra"]["voucherState"] = voucher.clone();
                }
            }
        }
        Answer::PaymentRequired(Box::new(Required {
            body: std::sync::Arc::new(RequiredBody::new(body)),
            challenges: Vec::new(),
        }))
    }

    async fn refuse_batch(
        &self,
        call: &PaywallCall<'_>,
        price: Price,
        decision: &mut Decision,
        outcome: Outcome,
        code: &str,
        error: String,
    ) -> Answer {
        decision.outcome = outcome;
        decision.error_code = Some(code.into());
        self.required(call, price, Some(error)).await
    }

    /// The escrow refused (a 402 saying why) or the chain did not answer (503).
    async fn escrow_failure(
        &self,
        call: &PaywallCall<'_>,
        price: Price,
        decision: &mut Decision,
        error: EscrowError,
    ) -> Answer {
        match error {
            EscrowError::Refused { detail, .. } => {
                let error = format!("invalid_batch_settlement_evm_escrow: the escrow refused the payment: {detail}");
                let code = "invalid_batch_settlement_evm_escrow";
                self.refuse_batch(call, price, decision, Outcome::VerifyFailed, code, error).await
            }
            EscrowError::Unavailable { what, detail } => {
                tracing::warn!(what, detail = %detail, "the chain of the batch-settlement escrow did not answer");
                decision.outcome = Outcome::FacilitatorUnavailable;
                decision.error_code = Some("escrow_unavailable".into());
                Answer::Failed(Failure::Engine(EngineError::new(
                    ErrorKind::Unavailable { retry_after: std::time::Duration::from_secs(10) },
                    "unavailable",
                    "the chain of the payment channel did not answer; nothing was charged, try again shortly",
                )))
            }
        }
    }

    async fn release_channel(&self, id: &str, pending: u128) {
        if let Err(e) = self.store.release_channel(id, pending).await {
            tracing::error!(error = %e, "releasing a channel's reservation failed");
        }
    }

    /// The `batch-settlement` offer beside `exact` (same network, asset, payee, price).
    pub(super) fn batch_offer(&self, exact: &Requirements) -> Option<Requirements> {
        let channels = self.batch.as_ref().filter(|c| c.network() == exact.network)?;
        let network = self.config.pay_to.iter().find(|p| p.network.caip2 == exact.network)?;
        let (name, version) = network.network.eip712?;
        let amount = exact.amount.parse::<u64>().ok()?;
        Some(Requirements {
            scheme: SCHEME_BATCH.to_string(),
            extra: Some(channels.extra(name, version, amount)),
            ..exact.clone()
        })
    }
}

/// The refund request inside `payment`, when it is one.
pub(super) fn refund_request(payment: &PaymentPayload) -> Option<&BatchPayload> {
    match &payment.payload {
        paperchain_protocol::x402::SchemePayload::Batch(batch) if batch.kind == BatchKind::Refund => Some(batch),
        _ => None,
    }
}
