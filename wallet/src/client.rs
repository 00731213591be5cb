//! The paying client: sends one call to a hosted service and, when it answers 402, pays it
//! under the spend policy (x402 v2), once.
//!
//! The order never changes: read the 402 → keep what the policy allows → ask the user
//! when the amount is above the approval threshold → reserve the amount in the ledger
//! (atomically against the day, session, client and network caps) → sign exactly the
//! requirement that was checked → record the authorization's nonce (durably) → send it →
//! record the settlement. A lost answer is retried with the *same* signed authorization,
//! never a new one: the token moves the money for one nonce at most once. A second 402
//! after paying (`price_mismatch`, a replay refused) is never answered with another
//! signature; the chain is asked whether the first one was used.
//!
//! The configuration is read again before each decision ([`crate::live`]), and once more
//! after an approval (which can wait minutes): unless the policy then still picks the same
//! requirement, nothing is paid. [`PayingClient::quote`] asks what a call would cost, and
//! whether the policy would pay it, without paying.
//!
//! A call stopped by its caller or its time-out ([`Request::stop`]) before its payment is
//! signed pays nothing and the ledger says `cancelled` or `timed_out`; once signed, it
//! goes on to its answer, which the ledger records with the payment.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use alloy::signers::local::PrivateKeySigner;
use paperchain_engine_core::cancel::{Stop, Why};
use paperchain_engine_core::evm::Chains;
use paperchain_engine_core::http_client::LazyClient;
use paperchain_engine_core::solana::Clusters;
use paperchain_protocol::exact_evm::{self, AuthorizationWindow};
use paperchain_protocol::upto_evm::{self, UptoTerms, UptoWindow};
use paperchain_protocol::x402::{
    self, EIP2612_GAS_SPONSORING, PaymentPayload, PaymentRequired, ResourceInfo, SCHEME_BATCH, SCHEME_UPTO,
};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use tokio::sync::OnceCell;

use crate::config::{ClientConfig, ConfigError};
use crate::ledger::{Caller, Caps, Finish, Ledger, LedgerError, NewCall};
use crate::live::LiveConfig;
use crate::money::{Dollars, format_atomic};
use crate::policy::{self, Refusal, Selected};
use crate::x402_client::{self, PayError};

pub use paperchain_protocol::x402::PAYMENT_IDENTIFIER;

/// Response headers that describe one connection, not the answer.
const HOP_BY_HOP: &[&str] =
    &["connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "content-length", "date", "server"];

/// The largest answer read from a hosted service: the largest result a route gives
/// (256 MiB), and room for its JSON envelope.
pub const MAX_ANSWER_BYTES: usize = 300 << 20;

/// How long a paid request may take beyond `service.timeout_seconds`: the service verifies
/// and settles after the operation's own limit, and an answer cut off there is a payment
/// whose answer is lost.
pub const SETTLEMENT_MARGIN: Duration = Duration::from_secs(60);

/// A boxed future, for the approval hook.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What the user is asked to approve.
#[derive(Clone, Debug)]
pub struct Approval {
    /// The operation.
    pub route: String,
    /// The hosted service's host.
    pub host: String,
    /// "0.25 USDC on eip155:8453 to 0x…".
    pub description: String,
    /// What it costs.
    pub dollars: Dollars,
    /// Who asks: the MCP client's name or the HTTP caller's user agent.
    pub client: Option<String>,
    /// Through which front door (`http`, `mcp`, `cli`, `app`).
    pub front_door: &'static str,
}

/// Asks the user to approve a payment above the approval threshold.
pub trait Approver: Send + Sync {
    /// `Ok(())` when the user approves; otherwise why not.
    fn approve<'a>(&'a self, approval: &'a Approval) -> BoxFuture<'a, Result<(), String>>;
}

/// Where nothing can ask the user (a server without the desktop app): refuses, saying so.
pub struct NobodyToAsk;

impl Approver for NobodyToAsk {
    fn approve<'a>(&'a self, approval: &'a Approval) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            Err(format!(
                "{} needs the user's approval (above policy.approve_above) and nothing here can ask: \
                 run it from the CLI or the desktop app, or raise policy.approve_above",
                approval.description
            ))
        })
    }
}

/// What a front door sets over the user's configuration (its command-line options).
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    /// The hosted service (over service.url and PAPERCHAIN_SERVICE_URL).
    pub service_url: Option<String>,
    /// Where routes run unless config.toml names the route (over routing.default and
    /// PAPERCHAIN_ROUTE).
    pub default_route: Option<String>,
    /// Folders granted to this process's calls besides config.toml's `files.folders`
    /// (`--folder`).
    pub folders: Vec<String>,
}

/// Why the user's client could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The configuration (the file, the environment or an override).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The ledger.
    #[error("opening the ledger: {0}")]
    Ledger(#[from] LedgerError),
}

/// Where the signing key comes from (loaded on the first payment, then kept).
pub type KeyLoader = Arc<dyn Fn() -> Result<PrivateKeySigner, String> + Send + Sync>;

/// One call to send.
#[derive(Clone)]
pub struct Request<'a> {
    /// The operation (`rotate_pdf_pages`).
    pub operation: &'a str,
    /// Its path on the service (`/v1/pdf/rotate`).
    pub path: &'a str,
    /// The JSON body.
    pub body: bytes::Bytes,
    /// Who calls, through which door.
    pub caller: &'a Caller,
    /// Who approves this call's payment when it needs approval, instead of the client's
    /// approver (an agent's client that can show the user a page, say).
    pub approver: Option<Arc<dyn Approver>>,
    /// The call's stop signal (its caller went away, its time ran out): until the payment
    /// is signed the call stops and nothing is paid; once it is signed, the call goes on to
    /// its answer so that the payment is recorded with it.
    pub stop: Stop,
}

impl std::fmt::Debug for Request<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("operation", &self.operation)
            .field("path", &self.path)
            .field("body_bytes", &self.body.len())
            .field("caller", &self.caller)
            .field("own_approver", &self.approver.is_some())
            .field("stopped", &self.stop.why())
            .finish()
    }
}

/// What was paid for a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Paid {
    /// Atomic units of the asset.
    pub amount: String,
    /// The same in dollars.
    pub dollars: Dollars,
    /// The asset's symbol.
    pub symbol: String,
    /// The asset's decimals.
    pub decimals: u8,
    /// CAIP-2 network.
    pub network: String,
    /// Who paid.
    pub payer: String,
    /// Who was paid.
    pub payee: String,
    /// The settlement's transaction.
    pub tx: String,
}

impl Paid {
    /// "0.002 USDC".
    pub fn amount_text(&self) -> String {
        let atomic = self.amount.parse::<u128>().unwrap_or(0);
        format!("{} {}", format_atomic(atomic, self.decimals), self.symbol)
    }
}

/// The hosted service's answer, as it came.
#[derive(Clone, Debug)]
pub struct HostedAnswer {
    /// Its HTTP status.
    pub status: u16,
    /// Its headers (lower-case names), less those about the connection.
    pub headers: Vec<(String, String)>,
    /// Its body.
    pub body: bytes::Bytes,
    /// What was paid for it.
    pub paid: Option<Paid>,
    /// The ledger's id of the call.
    pub call_id: String,
}

impl HostedAnswer {
    /// The value of header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// What a quote-only request learns.
#[derive(Clone, Debug)]
pub struct Quote {
    /// The service's PaymentRequired (`None` when the call needs no payment).
    pub required: Option<PaymentRequired>,
    /// What the policy would pay, or why it would not.
    pub selected: Option<Result<Selected, Refusal>>,
}

/// Why a routed call did not give an answer.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// No hosted service is configured.
    #[error(
        "no hosted service is configured: set service.url in {0} or PAPERCHAIN_SERVICE_URL (routed calls go there)"
    )]
    NoService(String),
    /// The service could not be reached or answered nothing usable.
    #[error("the hosted service {host} did not answer: {message}")]
    Unreachable {
        /// Its host.
        host: String,
        /// What happened.
        message: String,
    },
    /// The 402 could not be read or paid.
    #[error("{0}")]
    Pay(#[from] PayError),
    /// The spend policy refused; nothing was signed.
    #[error("refused by the spend policy, nothing was paid: {0}")]
    Policy(#[from] Refusal),
    /// The signing key could not be loaded; nothing was signed.
    #[error("the wallet cannot sign, nothing was paid: {0}")]
    Keys(String),
    /// The service refused the payment it asked for; no second signature was made.
    #[error("the hosted service refused the payment ({reason}); no second payment was signed. {chain}")]
    PaymentRefused {
        /// The service's reason (`price_mismatch`, `payment_already_used`…).
        reason: String,
        /// What the chain says of the first authorization.
        chain: String,
    },
    /// The payment went through but its answer was lost.
    #[error(
        "the call was paid ({paid}, transaction {tx}) but its answer was lost; it was not paid again. \
         Ledger call {call_id}."
    )]
    PaidAnswerLost {
        /// What was paid.
        paid: String,
        /// The transaction.
        tx: String,
        /// The ledger row.
        call_id: String,
    },
    /// The ledger could not record the call; nothing more was done.
    #[error("{0}")]
    Ledger(#[from] LedgerError),
    /// The call was stopped (its caller went away, its time ran out) before its payment
    /// was signed; nothing was paid.
    #[error("the call was {} before its payment was signed; nothing was paid", stopped_words(*.0))]
    Stopped(Why),
}

fn stopped_words(why: Why) -> &'static str {
    match why {
        Why::Cancelled => "cancelled",
        Why::TimedOut => "stopped for taking too long",
    }
}

/// `work`, unless `stop` is given first: then [`CallError::Stopped`] (nothing of `work`
/// may have been signed).
async fn unless_stopped<T>(stop: &Stop, work: impl Future<Output = Result<T, CallError>>) -> Result<T, CallError> {
    tokio::select! {
        biased;
        () = stop.stopped() => Err(CallError::Stopped(stop.why().unwrap_or(Why::Cancelled))),
        done = work => done,
    }
}

/// The paying client.
pub struct PayingClient {
    http: LazyClient,
    // Read again before each decision: a change holds from the next call.
    config: LiveConfig,
    ledger: Ledger,
    keys: KeyLoader,
    signer: OnceCell<Arc<PrivateKeySigner>>,
    approver: Arc<dyn Approver>,
    chains: Arc<Chains>,
    solana: Option<SolanaSide>,
    solana_key: OnceCell<Arc<paperchain_protocol::exact_svm::SigningKey>>,
    /// Resends of a paid request whose answer was lost.
    retries: u32,
}

impl PayingClient {
    /// A client of the hosted service `config` names, recording in `ledger`, paying with
    /// the key `keys` loads, asking `approver`, checking payments on `chains`.
    pub fn new(
        config: Arc<ClientConfig>,
        ledger: Ledger,
        keys: KeyLoader,
        approver: Arc<dyn Approver>,
        chains: Arc<Chains>,
    ) -> PayingClient {
        let timeout = Duration::from_secs(config.service_timeout) + SETTLEMENT_MARGIN;
        // Built on the first call that goes to the service: a local call never pays for it.
        let http = LazyClient::new(move || {
            reqwest::Client::builder()
                .timeout(timeout)
                .connect_timeout(Duration::from_secs(10))
                .redirect(reqwest::redirect::Policy::none())
                .user_agent(concat!("paperchain/", env!("CARGO_PKG_VERSION")))
                .build()
                .map_err(|e| format!("cannot build the HTTP client: {e}"))
        });
        PayingClient {
            http,
            config: LiveConfig::fixed(config),
            ledger,
            keys,
            signer: OnceCell::new(),
            approver,
            chains,
            solana: None,
            solana_key: OnceCell::new(),
            retries: 2,
        }
    }

    /// The same client, paying on Solana with the key `keys` loads and reading `clusters`.
    pub fn with_solana(mut self, keys: SolanaKeyLoader, clusters: Arc<Clusters>) -> PayingClient {
        self.solana = Some(SolanaSide { keys, clusters });
        self
    }

    /// The user's client: `config.toml` and the environment with `overrides` over them (the
    /// file read again before each decision, so a change holds from the next call), the
    /// ledger and the wallet's key of `data_dir`, approvals asked of `approver`, payments
    /// checked on `chains`.
    pub async fn for_user(
        data_dir: &std::path::Path,
        chains: Arc<Chains>,
        approver: Arc<dyn Approver>,
        overrides: Overrides,
    ) -> Result<PayingClient, OpenError> {
        if let Some(url) = &overrides.service_url {
            crate::config::check_service_url(url).map_err(|e| ConfigError(format!("--service-url: {e}")))?;
        }
        for folder in &overrides.folders {
            crate::config::granted_folder(folder).map_err(|e| ConfigError(format!("--folder: {e}")))?;
        }
        let key_config = crate::keys::KeyConfig::from_env(data_dir);
        let live = user_config(&key_config, overrides, true)?;
        let ledger = Ledger::open_in(data_dir).await?;
        let solana_config = key_config.clone();
        let keys: KeyLoader = Arc::new(move || {
            crate::keys::load(&key_config).map(|wallet| wallet.signer().clone()).map_err(|e| e.to_string())
        });
        let solana_keys: SolanaKeyLoader = Arc::new(move || {
            crate::keys::load_solana(&solana_config).map(|wallet| wallet.key().clone()).map_err(|e| e.to_string())
        });
        let mut client = PayingClient::new(live.current(), ledger, keys, approver, chains)
            .with_solana(solana_keys, Arc::new(Clusters::from_env()));
        client.config = live;
        Ok(client)
    }

    /// The configuration in force now (the file read again when the client follows one).
    pub fn config(&self) -> Arc<ClientConfig> {
        self.config.current()
    }

    /// The configuration in force now and, when the file is not followed (it does not
    /// parse, or cannot be read), why: the last valid configuration stays in force meanwhile.
    pub fn config_now(&self) -> (Arc<ClientConfig>, Option<String>) {
        self.config.now()
    }

    /// The configuration as the file says now; an error when the file is not followed.
    pub fn reload(&self) -> Result<Arc<ClientConfig>, ConfigError> {
        match self.config.now() {
            (_, Some(problem)) => Err(ConfigError(problem)),
            (config, None) => Ok(config),
        }
    }

    /// What `config.toml` says beyond what its owner confirmed, waiting (read again).
    pub fn unconfirmed(&self) -> Option<crate::live::Unconfirmed> {
        self.config.unconfirmed()
    }

    /// Confirms what `shown` lists, once the person was checked
    /// ([`crate::owner::check_owner`]). Blocking (the key store).
    pub fn confirm(&self, shown: &crate::live::Unconfirmed) -> Result<(), ConfigError> {
        self.config.confirm(shown)
    }

    /// Puts `config.toml` back as its owner last confirmed it. Blocking (the key store).
    pub fn discard(&self) -> Result<(), ConfigError> {
        self.config.discard()
    }

    /// The ledger.
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    fn service(&self) -> Result<(String, String), CallError> {
        let config = self.config();
        let url = config.service_url.clone().ok_or_else(|| {
            CallError::NoService(
                config
                    .file
                    .as_ref()
                    .map(|f| f.display().to_string())
                    .unwrap_or_else(|| crate::config::config_file().display().to_string()),
            )
        })?;
        let host = crate::config::host_of(&url).unwrap_or_default();
        Ok((url, host))
    }

    pub(crate) async fn send(
        &self,
        url: &str,
        host: &str,
        body: &bytes::Bytes,
        payment: Option<&str>,
    ) -> Result<Received, CallError> {
        let http = self.http.get().map_err(|message| CallError::Unreachable { host: host.to_string(), message })?;
        let mut request = http.post(url).header("content-type", "application/json").body(body.clone());
        if let Some(payment) = payment {
            request = request.header(x402::PAYMENT_SIGNATURE, payment);
        }
        let unreachable = |e: reqwest::Error| CallError::Unreachable { host: host.to_string(), message: e.to_string() };
        let response = request.send().await.map_err(unreachable)?;
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .filter(|(name, _)| !HOP_BY_HOP.contains(&name.as_str()))
            .filter_map(|(name, value)| Some((name.as_str().to_string(), value.to_str().ok()?.to_string())))
            .collect();
        let mut response = response;
        let mut body = bytes::BytesMut::new();
        while let Some(chunk) = response.chunk().await.map_err(unreachable)? {
            if body.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err(CallError::Unreachable {
                    host: host.to_string(),
                    message: format!("its answer is larger than {} MiB", MAX_ANSWER_BYTES >> 20),
                });
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Received { status, headers, body: body.freeze() })
    }

    /// What the hosted service would charge for `request`, and whether the policy would
    /// pay it: the call is sent without a payment, nothing is signed or recorded.
    pub async fn quote(&self, request: &Request<'_>) -> Result<Quote, CallError> {
        let (base, host) = self.service()?;
        let received = self.send(&format!("{base}{}", request.path), &host, &request.body, None).await?;
        if received.status != 402 {
            return Ok(Quote { required: None, selected: None });
        }
        let required = x402_client::read_payment_required(received.header(x402::PAYMENT_REQUIRED), &received.body)?;
        let selected = policy::select(&self.config(), &host, &required);
        Ok(Quote { required: Some(required), selected: Some(selected) })
    }

    /// Sends `request` to the hosted service, pays its 402 under the policy, and returns
    /// its answer as it came; every step is in the ledger.
    pub async fn call(&self, request: &Request<'_>) -> Result<HostedAnswer, CallError> {
        let (base, host) = self.service()?;
        let url = format!("{base}{}", request.path);
        let started = Instant::now();
        let call_id = self
            .ledger
            .start(&NewCall {
                caller: request.caller,
                route: request.operation,
                ran: "hosted",
                service: Some(&host),
                input_bytes: request.body.len(),
            })
            .await?;
        let outcome = self.exchange(request, &url, &host, &call_id).await;
        let stopped = request.stop.why();
        let finish = match &outcome {
            Ok(answer) => Finish {
                status: answer.status,
                duration: started.elapsed(),
                output_sha256: Some(hex::encode(Sha256::digest(&answer.body))),
                error: match stopped {
                    // Stopped once the payment was signed: the answer is recorded here, nobody took it.
                    Some(why) => Some(format!(
                        "{} after its payment was signed; the service's answer ({}) was recorded, not delivered",
                        stopped_words(why),
                        answer.status
                    )),
                    None => (answer.status >= 400).then(|| format!("the hosted service answered {}", answer.status)),
                },
                stopped,
            },
            Err(error) => Finish {
                status: 0,
                duration: started.elapsed(),
                output_sha256: None,
                error: Some(error.to_string()),
                stopped,
            },
        };
        kept(self.ledger.finish(&call_id, &finish).await);
        outcome.map(|mut answer| {
            answer.call_id = call_id;
            answer
        })
    }

    async fn exchange(
        &self,
        request: &Request<'_>,
        url: &str,
        host: &str,
        call_id: &str,
    ) -> Result<HostedAnswer, CallError> {
        let stop = &request.stop;
        let first = unless_stopped(stop, self.send(url, host, &request.body, None)).await?;
        if first.status != 402 {
            return Ok(first.answer(None));
        }
        let required = x402_client::read_payment_required(first.header(x402::PAYMENT_REQUIRED), &first.body)?;
        // The configuration as the file says now (a limit lowered a moment ago holds).
        let mut config = self.config();
        let selected = policy::select(&config, host, &required)?;
        self.ledger.quote(call_id, &selected.atomic.to_string()).await?;
        if selected.needs_approval {
            let approval = Approval {
                route: request.operation.to_string(),
                host: host.to_string(),
                description: selected.describe(),
                dollars: selected.dollars,
                client: request.caller.client.clone(),
                front_door: request.caller.front_door,
            };
            let approver = request.approver.as_deref().unwrap_or(self.approver.as_ref());
            let approved = unless_stopped(stop, async { Ok(approver.approve(&approval).await) }).await?;
            if let Err(why) = approved {
                // Nothing signed: the ledger says the user (or the wait) denied it.
                self.ledger.deny(call_id, &why).await?;
                return Err(Refusal::Approval(why).into());
            }
            // An approval can wait minutes: what the policy says after it is what holds.
            config = self.config();
            let again = policy::select(&config, host, &required)?;
            if again.requirement != selected.requirement {
                return Err(Refusal::Approval(format!(
                    "the spend policy changed while {} waited for approval; nothing was paid, call again",
                    selected.describe()
                ))
                .into());
            }
        }
        // The key first (a keyring may ask to be unlocked): nothing is reserved while waiting.
        let key =
            unless_stopped(stop, async { self.key_for(&selected.network).await.map_err(CallError::Keys) }).await?;
        // One `upto` payment at a time for this wallet's ledger, in every process, each
        // until its answer; waited for before anything is reserved, and what the policy
        // says after the wait holds.
        let lock = match selected.scheme {
            SCHEME_UPTO => Some("upto.lock"),
            // A channel's vouchers are cumulative: one call per channel at a time.
            SCHEME_BATCH => Some("channels.lock"),
            _ => None,
        };
        let _one_at_a_time = if let Some(lock) = lock {
            let held = unless_stopped(stop, self.one_at_a_time(lock)).await?;
            config = self.config();
            if policy::select(&config, host, &required)?.requirement != selected.requirement {
                return Err(Refusal::Approval(format!(
                    "the spend policy changed while {} waited for another `{}` payment; nothing was paid, call again",
                    selected.describe(),
                    selected.scheme
                ))
                .into());
            }
            Some(held)
        } else {
            None
        };
        let policy = &config.policy;
        let caps = Caps {
            per_day: policy.per_day,
            per_session: policy.per_session,
            per_client: request.caller.client.as_deref().and_then(|c| policy.clients.get(c)).copied(),
            per_network: policy.networks.get(&selected.network).copied(),
        };
        if let Some(why) = stop.why() {
            return Err(CallError::Stopped(why));
        }
        if let Err(why) = self.ledger.reserve(call_id, &selected, &caps, request.caller.client.as_deref()).await? {
            return Err(Refusal::Cap(why).into());
        }
        // What an `upto` payer lets Permit2 move when a permit is needed: the day's cap on
        // this network (the lower of `per_day` and `networks`), so the next payments need
        // none; at least this payment's most. Permit2 still moves only what is signed.
        let allowance = [policy.per_day, caps.per_network]
            .into_iter()
            .flatten()
            .min()
            .map_or(selected.atomic, |cap| cap.to_atomic(selected.asset.decimals).max(selected.atomic));
        let permit = Permit { sponsored: required.extensions.contains_key(EIP2612_GAS_SPONSORING), allowance };
        let signed = match &key {
            PayingKey::Evm(signer) if selected.scheme == SCHEME_BATCH => {
                let cap = policy.channel_deposit.map_or(0, |cap| cap.to_atomic(selected.asset.decimals));
                self.sign_batch(signer, &selected, required.resource.as_ref(), (host, url), cap).await
            }
            _ => self.sign(&key, &selected, required.resource.as_ref(), &permit).await,
        };
        let signed = match signed {
            Ok(signed) => signed,
            Err(e) => {
                self.ledger.release(call_id, &e.to_string()).await?;
                return Err(e.into());
            }
        };
        let Signed { mut payload, payer, nonce, valid_before, batch } = signed;
        if let Some(extension) = required.extensions.get(PAYMENT_IDENTIFIER).filter(|e| e.is_object()) {
            // The extension echoed with the call's id in its `info` (whatever shape the
            // server gave `info`, the id goes into an object).
            let mut info = extension.get("info").filter(|i| i.is_object()).cloned().unwrap_or_else(|| json!({}));
            info["id"] = json!(call_id);
            let mut echoed = extension.clone();
            echoed["info"] = info;
            payload.extensions.insert(PAYMENT_IDENTIFIER.into(), echoed);
        }
        if let Some(why) = stop.why() {
            // The last moment to stop: past it the payment leaves this process.
            self.ledger.release(call_id, &format!("{} before signing", stopped_words(why))).await?;
            return Err(CallError::Stopped(why));
        }
        // On disk before the signature leaves this process: a crash from here on leaves a
        // row the reconciliation checks on chain.
        self.ledger.signing(call_id, &payer, &nonce, valid_before).await?;
        let header = x402::encode(&payload);
        let paying = Paying { selected: &selected, payer: &payer, nonce, valid_before, call_id, host, batch };
        let mut attempt = 0;
        loop {
            match self.send(url, host, &request.body, Some(&header)).await {
                Ok(received) if received.status == 402 => return Err(self.refused(&paying, &received).await?),
                Ok(received) => return self.delivered(&paying, received).await,
                Err(lost) if attempt < self.retries => {
                    attempt += 1;
                    tracing::warn!(%host, attempt, error = %lost, "a paid call's answer was lost; sending the same payment again");
                    tokio::time::sleep(Duration::from_millis(250 * u64::from(attempt))).await;
                }
                Err(lost) => return Err(self.lost(&paying, lost).await?),
            }
        }
    }

    /// The lock a payment holds from before it reads what it signs from until its answer:
    /// `name` beside the ledger, locked (flock) by every process paying from this ledger,
    /// and by each payment of one process (each opens the file anew). Two `upto` payments at
    /// once would count on the same allowance and sign permits with the same token nonce
    /// (`upto.lock`); two vouchers of one channel would be for the same total
    /// (`channels.lock`): the second would fail after its work was done.
    pub(crate) async fn one_at_a_time(&self, name: &str) -> Result<std::fs::File, CallError> {
        let path = self.ledger.path().with_file_name(name);
        let locked = tokio::task::spawn_blocking(move || {
            let file = std::fs::File::options().create(true).truncate(false).write(true).open(&path)?;
            file.lock()?;
            Ok::<_, std::io::Error>(file)
        });
        let failed = |e: &dyn std::fmt::Display| {
            CallError::Ledger(LedgerError::other(self.ledger.path(), format!("locking {name} beside it: {e}")))
        };
        locked.await.map_err(|e| failed(&e))?.map_err(|e| failed(&e))
    }

    /// The key that pays on `network`: the Solana key on `solana:` networks, else the EVM key.
    async fn key_for(&self, network: &str) -> Result<PayingKey, String> {
        if network.starts_with("solana:") {
            let loader = self.solana.as_ref().map(|s| s.keys.clone()).ok_or("this client pays on EVM networks only")?;
            loaded(&self.solana_key, loader, "the Solana key").await.map(PayingKey::Solana)
        } else {
            self.signer().await.map(PayingKey::Evm)
        }
    }

    /// The PaymentPayload of `selected`, signed with `key` (`permit`: what an `upto`
    /// payment may ask of Permit2).
    async fn sign(
        &self,
        key: &PayingKey,
        selected: &Selected,
        resource: Option<&ResourceInfo>,
        permit: &Permit,
    ) -> Result<Signed, PayError> {
        let now = crate::ledger::now_secs();
        match key {
            PayingKey::Evm(signer) if selected.scheme == SCHEME_UPTO => {
                self.sign_upto(signer, selected, resource, permit, now).await
            }
            PayingKey::Evm(signer) => {
                let auth = AuthorizationWindow::fresh(&selected.requirement, now)?;
                let payload = exact_evm::sign_exact_evm_with(signer, &selected.requirement, resource, &auth)?;
                Ok(Signed {
                    payload: any_scheme(payload),
                    payer: signer.address().to_checksum(None),
                    nonce: auth.nonce.to_string(),
                    valid_before: auth.valid_before,
                    batch: None,
                })
            }
            PayingKey::Solana(key) => {
                let clusters = &self.solana.as_ref().expect("a Solana key comes with the clusters").clusters;
                let signed = crate::solana_pay::sign(clusters, key, &selected.requirement, resource).await?;
                // The memo finds the transaction; once its blockhash is too old it can never land.
                let valid_before = now + crate::solana_pay::BLOCKHASH_LIFETIME_SECONDS;
                Ok(Signed {
                    payload: any_scheme(signed.payload),
                    payer: signed.payer,
                    nonce: signed.memo,
                    valid_before,
                    batch: None,
                })
            }
        }
    }

    /// An `upto` payment of `selected`: a Permit2 transfer of at most its amount. Permit2
    /// must be allowed to move that much of the payer's token; when it is not, an EIP-2612
    /// permit for `permit.allowance` goes with the payment for the service to submit, or, if
    /// the service does not submit permits, nothing is signed.
    async fn sign_upto(
        &self,
        signer: &PrivateKeySigner,
        selected: &Selected,
        resource: Option<&ResourceInfo>,
        permit: &Permit,
        now: u64,
    ) -> Result<Signed, PayError> {
        let offer = &selected.requirement;
        let terms = UptoTerms::of(offer)?;
        let window = UptoWindow::fresh(&terms, now);
        let chain = crate::chain::chain_of(&self.chains, &selected.network).map_err(PayError::Chain)?;
        let asset = &selected.asset.address;
        let allowance =
            crate::chain::permit2_allowance(&chain, asset, signer.address()).await.map_err(PayError::Chain)?;
        let permit = if allowance >= terms.max {
            None
        } else if permit.sponsored {
            let nonce = crate::chain::permit_nonce(&chain, asset, signer.address()).await.map_err(PayError::Chain)?;
            let value = alloy::primitives::U256::from(permit.allowance).max(terms.max);
            Some(upto_evm::sign_permit2_allowance(signer, offer, value, nonce, window.deadline)?)
        } else {
            return Err(PayError::Chain(format!(
                "an `upto` payment needs Permit2 allowed to move {} of {} for {}, which it is not, and the service \
                 does not submit the permit for it (eip2612GasSponsoring); nothing was signed",
                selected.describe(),
                selected.asset.address,
                signer.address()
            )));
        };
        let payload = upto_evm::sign_upto_evm(signer, offer, resource, &window, permit)?;
        Ok(Signed {
            payload: any_scheme(payload),
            payer: signer.address().to_checksum(None),
            nonce: window.nonce.to_string(),
            valid_before: window.deadline,
            batch: None,
        })
    }

    /// A voucher of `selected` (a `batch-settlement` offer of `host`, paid at `url`) over
    /// the payer's channel, with a deposit topping the channel up to `cap` atomic units when
    /// it is short (crate::channels). The ledger's nonce is the channel and the voucher.
    async fn sign_batch(
        &self,
        signer: &PrivateKeySigner,
        selected: &Selected,
        resource: Option<&ResourceInfo>,
        (host, url): (&str, &str),
        cap: u128,
    ) -> Result<Signed, PayError> {
        let now = crate::ledger::now_secs();
        let (payload, voucher) =
            crate::channels::sign(&self.ledger, signer, selected, resource, host, url, cap, now).await?;
        let timeout = selected.requirement.terms.as_ref().map_or(0, |t| t.max_timeout_seconds);
        Ok(Signed {
            payload: any_scheme(payload),
            payer: signer.address().to_checksum(None),
            nonce: format!("{}:{}", voucher.channel.id, voucher.next.voucher),
            valid_before: now + timeout,
            batch: Some(voucher),
        })
    }

    pub(crate) async fn signer(&self) -> Result<Arc<PrivateKeySigner>, String> {
        loaded(&self.signer, self.keys.clone(), "the key").await
    }

    /// A paid request answered (2xx, or an error the service gave after reading the payment).
    async fn delivered(&self, paying: &Paying<'_>, received: Received) -> Result<HostedAnswer, CallError> {
        let read =
            if paying.batch.is_some() { x402_client::read_channel_settlement } else { x402_client::read_settlement };
        match received.header(x402::PAYMENT_RESPONSE).map(read) {
            Some(Ok(settlement)) => {
                let tx = settlement.transaction.clone();
                let kept_json = serde_json::to_value(&settlement).unwrap_or_default();
                let mut paid = paying.paid(tx.clone());
                if let Some(voucher) = &paying.batch {
                    // A deposit went on chain only when the service names its transaction.
                    let deposit = voucher.next.deposit.filter(|_| !tx.is_empty()).map(|d| (d, tx.as_str()));
                    let (channel, paid_with) = (&voucher.channel, (voucher.next.voucher, deposit));
                    kept(crate::channels::paid(&self.ledger, channel, paid_with, paying.call_id, &kept_json).await);
                } else if paying.selected.scheme == SCHEME_UPTO {
                    // What it says it charged; never more than was authorized, which is all
                    // the chain can move (a claim of more is recorded as the most, and said).
                    let most = paying.selected.atomic;
                    let charged = match settlement.charged().map(u128::from) {
                        Some(charged) if charged <= most => charged,
                        claimed => {
                            tracing::warn!(
                                call_id = paying.call_id,
                                ?claimed,
                                most,
                                "an upto settlement does not say a charge within what was authorized; the most is \
                                 recorded"
                            );
                            most
                        }
                    };
                    let dollars = Dollars::of_atomic(charged, paid.decimals).unwrap_or(paid.dollars);
                    kept(self.ledger.paid_charged(paying.call_id, Some(&tx), &kept_json, (charged, dollars)).await);
                    (paid.amount, paid.dollars) = (charged.to_string(), dollars);
                } else {
                    kept(self.ledger.paid(paying.call_id, Some(&tx), &kept_json).await);
                }
                Ok(received.answer(Some(paid)))
            }
            Some(Err(e)) => {
                kept(self.ledger.unsettled(paying.call_id, &e.to_string()).await);
                Ok(received.answer(None))
            }
            None => {
                // No settlement named: the chain may still say it was used.
                let why = format!("the hosted service answered {} without a settlement", received.status);
                match self.check_chain(paying).await {
                    ChainSays::Used(tx) => {
                        kept(self.ledger.paid(paying.call_id, tx.as_deref(), &json!({"found_on_chain": true})).await);
                        Ok(received.answer(Some(paying.paid(tx.unwrap_or_default()))))
                    }
                    _ => {
                        kept(self.ledger.unsettled(paying.call_id, &why).await);
                        Ok(received.answer(None))
                    }
                }
            }
        }
    }

    /// A 402 to a paid request: never answered with a second signature.
    async fn refused(&self, paying: &Paying<'_>, received: &Received) -> Result<CallError, LedgerError> {
        let required = x402_client::read_payment_required(received.header(x402::PAYMENT_REQUIRED), &received.body).ok();
        let reason = required
            .as_ref()
            .and_then(|r| r.error.as_deref().map(|e| crate::clean(e, 300)))
            .unwrap_or_else(|| "402 again".into());
        if let Some(voucher) = &paying.batch {
            // A refused voucher moves nothing beyond what the next one covers; a corrective
            // 402 carrying this payer's own last voucher sets the channel's total back.
            let state = required.as_ref().and_then(|r| crate::channels::corrective_state(r, voucher));
            let mut chain = "A refused voucher moves nothing beyond the channel's later vouchers.".to_string();
            if let (Some((state, voucher_state)), Ok(payer)) = (state, paying.payer.parse()) {
                let id = &voucher.channel.id;
                let resynced =
                    crate::channels::resync(&self.ledger, id, voucher.chain_id, payer, &state, voucher_state.as_ref());
                if let Some(charged) = resynced.await? {
                    chain = format!(
                        "{chain} The channel's charged total is now the service's {charged}, for which it holds this \
                         wallet's own voucher; call again."
                    );
                }
            }
            if reason.starts_with("invalid_batch_settlement_evm_insufficient_balance") {
                // The service says the channel holds less than this ledger thinks: what the
                // chain says is recorded, and the next call deposits again.
                match crate::channels::sync(&self.ledger, &self.chains, &voucher.channel).await {
                    Ok(0) => {}
                    Ok(missed) => {
                        chain = format!(
                            "{chain} The escrow shows {missed} of the channel's deposit returned to this wallet (an idle \
                             channel refunded): recorded; the next call deposits again."
                        );
                    }
                    Err(e) => tracing::warn!(error = %e, "reading the channel from the escrow failed"),
                }
            }
            self.ledger.unsettled(paying.call_id, &reason).await?;
            return Ok(CallError::PaymentRefused { reason, chain });
        }
        match self.check_chain(paying).await {
            ChainSays::Used(tx) => self.paid_but_lost(paying, tx).await,
            says => {
                self.ledger.unsettled(paying.call_id, &reason).await?;
                Ok(CallError::PaymentRefused { reason, chain: says.describe() })
            }
        }
    }

    /// The chain shows the payment made, its answer is gone: recorded as paid, not paid again.
    async fn paid_but_lost(&self, paying: &Paying<'_>, tx: Option<String>) -> Result<CallError, LedgerError> {
        self.ledger.paid(paying.call_id, tx.as_deref(), &json!({"found_on_chain": true})).await?;
        Ok(CallError::PaidAnswerLost {
            paid: paying.paid(String::new()).amount_text(),
            tx: tx.unwrap_or_else(|| "not found yet; `paperchain ledger reconcile` finds it".into()),
            call_id: paying.call_id.into(),
        })
    }

    /// No answer to a paid request after every resend.
    async fn lost(&self, paying: &Paying<'_>, lost: CallError) -> Result<CallError, LedgerError> {
        match self.check_chain(paying).await {
            ChainSays::Used(tx) => self.paid_but_lost(paying, tx).await,
            says => {
                self.ledger.unsettled(paying.call_id, &lost.to_string()).await?;
                Ok(CallError::Unreachable {
                    host: paying.host.to_string(),
                    message: format!("{lost}; {}", says.describe()),
                })
            }
        }
    }

    async fn check_chain(&self, paying: &Paying<'_>) -> ChainSays {
        if paying.batch.is_some() {
            return ChainSays::Unknown("a voucher leaves no trace on chain until the service claims it".into());
        }
        if paying.selected.network.starts_with("solana:") {
            let Some(solana) = &self.solana else { return ChainSays::Unknown("no Solana cluster".into()) };
            let found =
                crate::chain::solana_payment(&solana.clusters, &paying.selected.network, paying.payer, &paying.nonce);
            return match found.await {
                Ok(Some(signature)) => ChainSays::Used(Some(signature)),
                Ok(None) => ChainSays::Unused(paying.valid_before),
                Err(e) => ChainSays::Unknown(e),
            };
        }
        let chain = match crate::chain::chain_of(&self.chains, &paying.selected.network) {
            Ok(chain) => chain,
            Err(e) => return ChainSays::Unknown(e),
        };
        let asset = &paying.selected.asset.address;
        if paying.selected.scheme == SCHEME_UPTO {
            // Permit2 keeps no record of the transaction: the reconciliation finds it.
            return match crate::chain::permit2_nonce_used(&chain, paying.payer, &paying.nonce).await {
                Ok(true) => ChainSays::Used(None),
                Ok(false) => ChainSays::Unused(paying.valid_before),
                Err(e) => ChainSays::Unknown(e),
            };
        }
        match crate::chain::authorization_used(&chain, asset, paying.payer, &paying.nonce).await {
            Ok(false) => ChainSays::Unused(paying.valid_before),
            Ok(true) => {
                match crate::chain::authorization_tx(&chain, asset, paying.payer, &paying.nonce, 50_000).await {
                    Ok(Some(tx)) => ChainSays::Used(Some(tx.to_string())),
                    Ok(None) | Err(_) => ChainSays::Used(None),
                }
            }
            Err(e) => ChainSays::Unknown(e),
        }
    }
}

/// The key in `cell`, loaded by `loader` on the blocking pool the first time (a keyring may
/// ask to be unlocked; a keystore is scrypt-derived).
async fn loaded<K: Send + Sync + 'static>(
    cell: &OnceCell<Arc<K>>,
    loader: Arc<dyn Fn() -> Result<K, String> + Send + Sync>,
    what: &str,
) -> Result<Arc<K>, String> {
    cell.get_or_try_init(|| async move {
        tokio::task::spawn_blocking(move || loader())
            .await
            .map_err(|e| format!("loading {what} failed: {e}"))?
            .map(Arc::new)
    })
    .await
    .cloned()
}

/// A ledger write after the money moved: its failure is logged, and the answer (paid
/// for) still goes to the caller; the `signed` row already on disk lets the reconciliation
/// recover the payment.
fn kept(written: Result<(), LedgerError>) {
    if let Err(e) = written {
        tracing::error!(error = %e, "the ledger could not record a paid call; `paperchain ledger reconcile` recovers it");
    }
}

/// The user's configuration (`config.toml`, the environment, `overrides`), followed as the
/// file changes and only as far as its owner confirmed it, sealed with the key store of
/// `keys`. A process that pays (`adopt`) confirms the file as it is on a first run (no
/// seal yet). Blocking (the key store).
pub fn user_config(
    keys: &crate::keys::KeyConfig,
    overrides: Overrides,
    adopt: bool,
) -> Result<LiveConfig, ConfigError> {
    let keys = keys.clone();
    let secret: crate::live::SecretSource = Box::new(move |create| {
        crate::keys::seal_key(&keys, create)
            .map(|key| key.map(|key| zeroize::Zeroizing::new(*key.bytes())))
            .map_err(|e| e.to_string())
    });
    LiveConfig::guarded(crate::config::config_file(), user_builder(overrides), secret, adopt)
}

/// How the user's configuration is built from `config.toml`'s text: the file, the
/// environment over it, then the front door's `overrides`.
fn user_builder(overrides: Overrides) -> crate::live::Builder {
    Box::new(move |text, file| {
        let mut config = ClientConfig::of_file(text, file)?;
        config.apply_env(|name| match name {
            "PAPERCHAIN_SERVICE_URL" => overrides.service_url.clone(),
            "PAPERCHAIN_ROUTE" => overrides.default_route.clone(),
            _ => None,
        })?;
        for folder in &overrides.folders {
            let folder = crate::config::granted_folder(folder).map_err(|e| ConfigError(format!("--folder: {e}")))?;
            if !config.folders.contains(&folder) {
                config.folders.push(folder);
            }
        }
        Ok(config)
    })
}

/// The key a payment is signed with.
enum PayingKey {
    Evm(Arc<PrivateKeySigner>),
    Solana(Arc<paperchain_protocol::exact_svm::SigningKey>),
}

/// A signed payment and what the ledger keeps of it.
struct Signed {
    /// The PaymentPayload, its scheme's payload as JSON (either scheme's).
    payload: PaymentPayload<Value, Value>,
    payer: String,
    /// The EIP-3009 nonce, Permit2's (`upto`), the Solana transaction's memo, or the
    /// channel and voucher (`batch-settlement`).
    nonce: String,
    valid_before: u64,
    /// A voucher over a channel: what is recorded of it once the service accepts it.
    batch: Option<crate::channels::Voucher>,
}

/// What an `upto` payment may ask of Permit2 when its allowance is short.
struct Permit {
    /// The service submits the payer's EIP-2612 permit (`eip2612GasSponsoring`).
    sponsored: bool,
    /// How much Permit2 is then allowed to move (atomic units).
    allowance: u128,
}

/// A PaymentPayload of any scheme, to add extensions to and send.
fn any_scheme<P: serde::Serialize>(payment: PaymentPayload<P, Value>) -> PaymentPayload<Value, Value> {
    PaymentPayload {
        x402_version: payment.x402_version,
        accepted: payment.accepted,
        resource: payment.resource,
        payload: serde_json::to_value(payment.payload).expect("a scheme's payload serializes"),
        extensions: payment.extensions,
    }
}

/// What pays on Solana: the key's loader and the clusters it reads.
struct SolanaSide {
    keys: SolanaKeyLoader,
    clusters: Arc<Clusters>,
}

/// Loads the wallet's Solana key (blocking: run on the blocking pool).
pub type SolanaKeyLoader = Arc<dyn Fn() -> Result<paperchain_protocol::exact_svm::SigningKey, String> + Send + Sync>;

/// A payment in flight.
struct Paying<'a> {
    selected: &'a Selected,
    payer: &'a str,
    nonce: String,
    valid_before: u64,
    call_id: &'a str,
    host: &'a str,
    batch: Option<crate::channels::Voucher>,
}

impl Paying<'_> {
    fn paid(&self, tx: String) -> Paid {
        Paid {
            amount: self.selected.atomic.to_string(),
            dollars: self.selected.dollars,
            symbol: self.selected.asset.symbol.clone(),
            decimals: self.selected.asset.decimals,
            network: self.selected.network.clone(),
            payer: self.payer.to_string(),
            payee: self.selected.payee.clone(),
            tx,
        }
    }
}

enum ChainSays {
    /// Used, in this transaction when it was found.
    Used(Option<String>),
    /// Not used yet; usable until this Unix time.
    Unused(u64),
    Unknown(String),
}

impl ChainSays {
    fn describe(&self) -> String {
        match self {
            ChainSays::Used(Some(tx)) => format!("The chain shows the authorization used in {tx}."),
            ChainSays::Used(None) => "The chain shows the authorization used.".into(),
            ChainSays::Unused(before) => format!(
                "The chain shows the authorization unused so far: nothing is paid unless it is used before it \
                 expires (Unix time {before}); it counts against the caps until then."
            ),
            ChainSays::Unknown(why) => {
                format!("Whether it was used is not known ({why}); `paperchain ledger reconcile` checks it later.")
            }
        }
    }
}

pub(crate) struct Received {
    pub(crate) status: u16,
    headers: Vec<(String, String)>,
    pub(crate) body: bytes::Bytes,
}

impl Received {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    fn answer(self, paid: Option<Paid>) -> HostedAnswer {
        HostedAnswer { status: self.status, headers: self.headers, body: self.body, paid, call_id: String::new() }
    }
}
