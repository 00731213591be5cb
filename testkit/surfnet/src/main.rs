//! `paperchain-surfnet`: an offline local Solana validator (surfpool's core) for tests.
//!
//! It starts a surfnet that never reaches the network, seeds it through its own JSON-RPC
//! with keypairs, SPL Token and Token-2022 mints, a Metaplex metadata account and a few
//! transactions, prints one line of JSON naming all of them on stdout, then serves until
//! stdin reaches EOF or it receives SIGTERM/SIGINT.
//!
//! Options: `--bare` seeds nothing and prints only `{"rpc": …, "genesis": …}` (the hosted
//! sandbox seeds what it needs itself); `--slot-time-ms N` sets the slot time (100 ms by
//! default; a blockhash stays valid for 150 slots, so payments signed ahead of a slow call
//! want longer slots).

use std::{
    error::Error,
    io::Write,
    net::TcpListener,
    process::ExitCode,
    thread,
    time::{Duration, Instant},
};

use crossbeam_channel::{Receiver, Sender, select, unbounded};
use serde_json::{Value, json};
use solana_address::Address;
use solana_commitment_config::CommitmentConfig;
use solana_instruction::Instruction;
use solana_keypair::Keypair;
use solana_rpc_client::nonblocking::rpc_client::RpcClient;
use solana_rpc_client_api::{config::RpcSendTransactionConfig, request::RpcRequest};
use solana_signer::Signer;
use solana_system_interface::instruction as system_instruction;
use solana_transaction::Transaction;
use spl_associated_token_account_interface::{
    address::get_associated_token_address_with_program_id, instruction::create_associated_token_account_idempotent,
};
use spl_token_2022_interface::extension::{ExtensionType, interest_bearing_mint, metadata_pointer, transfer_fee};
use spl_token_metadata_interface::state::{Field, TokenMetadata};
use surfpool_core::surfnet::svm::{SurfnetSvm, SurfnetSvmConfig};
use surfpool_types::{
    BlockProductionMode, RpcConfig, SimnetCommand, SimnetConfig, SimnetEvent, StartupPlanner, StudioConfig,
    SubgraphConfig, SurfpoolConfig,
};

type Result<T> = std::result::Result<T, Box<dyn Error + Send + Sync>>;

/// The surfpool-core version this runner is pinned to (see Cargo.toml).
const SURFPOOL_CORE_VERSION: &str = "1.6.1";

const LAMPORTS_PER_SOL: u64 = 1_000_000_000;

/// Slot length of the surfnet's clock, in milliseconds.
const DEFAULT_SLOT_TIME_MS: u64 = 100;

/// How many times startup is tried with fresh ports before giving up.
const START_ATTEMPTS: usize = 5;

/// How long one startup attempt may take before it counts as failed.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// How long the failing transfer is looked for before it is reported as not recorded.
const FAILED_TX_WAIT: Duration = Duration::from_secs(10);

/// How long a seeding transaction may take to be confirmed, and how often it is checked.
const CONFIRM_TIMEOUT: Duration = Duration::from_secs(30);
const CONFIRM_POLL: Duration = Duration::from_millis(25);

/// Size of a classic SPL Token mint account.
const SPL_MINT_LEN: u64 = 82;

const COMPUTE_BUDGET_PROGRAM_ID: Address = Address::from_str_const("ComputeBudget111111111111111111111111111111");
const METAPLEX_METADATA_PROGRAM_ID: Address = Address::from_str_const("metaqbxxUerdq28cj1RbAWkYQm3ybzjb6a8bt518x1s");

fn main() -> ExitCode {
    if std::env::args().skip(1).any(|arg| arg == "--version") {
        println!("paperchain-surfnet {} (surfpool-core {SURFPOOL_CORE_VERSION})", env!("CARGO_PKG_VERSION"));
        return ExitCode::SUCCESS;
    }

    let options = match Options::parse(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(error) => {
            eprintln!("paperchain-surfnet: {error}");
            return ExitCode::from(2);
        }
    };
    let payer = Keypair::new();
    let surfnet = match start_surfnet(&payer.pubkey(), options.slot_time_ms) {
        Ok(surfnet) => surfnet,
        Err(error) => {
            eprintln!("paperchain-surfnet: failed to start the surfnet: {error}");
            return ExitCode::FAILURE;
        }
    };
    eprintln!("paperchain-surfnet: surfnet listening on {}", surfnet.rpc_url);

    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("paperchain-surfnet: failed to build the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };

    let line = if options.bare { runtime.block_on(bare_line(&surfnet.rpc_url)) } else { runtime.block_on(seed(&surfnet.rpc_url, payer)) };
    let fixtures = match line {
        Ok(fixtures) => fixtures,
        Err(error) => {
            eprintln!("paperchain-surfnet: seeding failed: {error}");
            let _ = surfnet.commands.send(SimnetCommand::Terminate(None));
            // The runloop thread is not joined: exiting ends it.
            std::process::exit(1);
        }
    };

    let mut stdout = std::io::stdout().lock();
    if writeln!(stdout, "{fixtures}").and_then(|()| stdout.flush()).is_err() {
        eprintln!("paperchain-surfnet: failed to write the fixtures line");
        std::process::exit(1);
    }
    drop(stdout);
    eprintln!("paperchain-surfnet: ready");

    runtime.block_on(wait_for_shutdown());
    let _ = surfnet.commands.send(SimnetCommand::Terminate(None));
    thread::sleep(Duration::from_millis(200));
    // Exiting here rather than returning: the runloop and stdin reader threads are not
    // joined, and the process must not wait for them.
    std::process::exit(0);
}

/// A started surfnet: its RPC URL and the channel that commands its runloop.
struct Surfnet {
    rpc_url: String,
    commands: Sender<SimnetCommand>,
}

/// Returns a port that was free a moment ago on 127.0.0.1.
fn free_port() -> Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

/// Starts an offline surfnet, retrying with new ports when an attempt fails (for instance
/// because another process took a port between picking and binding it).
/// The command line.
struct Options {
    bare: bool,
    slot_time_ms: u64,
}

impl Options {
    fn parse(mut args: impl Iterator<Item = String>) -> std::result::Result<Options, String> {
        let mut options = Options { bare: false, slot_time_ms: DEFAULT_SLOT_TIME_MS };
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--bare" => options.bare = true,
                "--slot-time-ms" => {
                    let value = args.next().ok_or("--slot-time-ms needs a value")?;
                    options.slot_time_ms = value
                        .parse()
                        .ok()
                        .filter(|ms| (10..=10_000).contains(ms))
                        .ok_or_else(|| format!("--slot-time-ms {value}: give 10 to 10000 milliseconds"))?;
                }
                other => return Err(format!("unknown argument `{other}` (known: --bare, --slot-time-ms N, --version)")),
            }
        }
        Ok(options)
    }
}

/// The line a bare surfnet prints: where it listens and its genesis hash.
async fn bare_line(rpc_url: &str) -> Result<String> {
    let rpc = RpcClient::new_with_commitment(rpc_url.to_string(), CommitmentConfig::confirmed());
    let genesis = rpc.get_genesis_hash().await?;
    Ok(json!({ "rpc": rpc_url, "genesis": genesis.to_string() }).to_string())
}

fn start_surfnet(payer: &Address, slot_time_ms: u64) -> Result<Surfnet> {
    let mut last_error = String::new();
    for attempt in 1..=START_ATTEMPTS {
        match start_surfnet_once(payer, slot_time_ms) {
            Ok(surfnet) => return Ok(surfnet),
            Err(error) => {
                eprintln!("paperchain-surfnet: start attempt {attempt} failed: {error}");
                last_error = error.to_string();
            }
        }
    }
    Err(format!("no attempt out of {START_ATTEMPTS} succeeded; last error: {last_error}").into())
}

/// One startup attempt: runs the surfnet's runloop on its own thread and waits until the
/// runloop reports that the RPC servers are up, or that it stopped.
fn start_surfnet_once(payer: &Address, slot_time_ms: u64) -> Result<Surfnet> {
    let bind_port = free_port()?;
    let mut ws_port = free_port()?;
    while ws_port == bind_port {
        ws_port = free_port()?;
    }

    let config = SurfpoolConfig {
        simnets: vec![SimnetConfig {
            offline_mode: true,
            remote_rpc_url: None,
            airdrop_addresses: vec![*payer],
            airdrop_token_amount: 1_000 * LAMPORTS_PER_SOL,
            block_production_mode: BlockProductionMode::Clock,
            slot_time: slot_time_ms,
            ..SimnetConfig::default()
        }],
        rpc: RpcConfig { bind_host: "127.0.0.1".to_string(), bind_port, ws_port, ..RpcConfig::default() },
        subgraph: SubgraphConfig::default(),
        studio: StudioConfig::default(),
        plugin_config_path: vec![],
        startup_planner: StartupPlanner::Runloop,
    };

    let (svm, events, geyser_events) =
        SurfnetSvm::new(SurfnetSvmConfig { slot_time: slot_time_ms, ..SurfnetSvmConfig::default() })?;
    let (commands_tx, commands_rx) = unbounded::<SimnetCommand>();
    let (stopped_tx, stopped_rx) = unbounded::<String>();

    let runloop_commands = commands_tx.clone();
    thread::Builder::new().name("surfnet".to_string()).spawn(move || {
        let runloop = surfpool_core::start_local_surfnet(svm, config, runloop_commands, commands_rx, geyser_events);
        let message = match hiro_system_kit::nestable_block_on(runloop) {
            Ok(()) => "the runloop stopped".to_string(),
            Err(error) => error.to_string(),
        };
        let _ = stopped_tx.send(message);
    })?;

    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        let remaining = deadline.saturating_duration_since(Instant::now());
        select! {
            recv(events) -> event => match event {
                Ok(SimnetEvent::CoreStarted(_)) => break,
                Ok(_) => {}
                Err(_) => {
                    let reason = stopped_rx
                        .recv_timeout(Duration::from_secs(1))
                        .unwrap_or_else(|_| "the runloop stopped".to_string());
                    return Err(reason.into());
                }
            },
            recv(stopped_rx) -> reason => {
                return Err(reason.unwrap_or_else(|_| "the runloop thread ended".to_string()).into());
            }
            default(remaining) => {
                let _ = commands_tx.send(SimnetCommand::Terminate(None));
                return Err(format!("the surfnet was not ready within {START_TIMEOUT:?}").into());
            }
        }
    }

    thread::Builder::new().name("surfnet-events".to_string()).spawn(move || drain_events(events))?;

    Ok(Surfnet { rpc_url: format!("http://127.0.0.1:{bind_port}"), commands: commands_tx })
}

/// Keeps the surfnet's bounded event channel empty, echoing only errors to stderr.
fn drain_events(events: Receiver<SimnetEvent>) {
    for event in events {
        match event {
            SimnetEvent::ErrorLog(_, message) => eprintln!("surfnet error: {message}"),
            SimnetEvent::Aborted(message) => eprintln!("surfnet aborted: {message}"),
            _ => {}
        }
    }
}

/// Resolves on stdin EOF, SIGTERM or SIGINT.
async fn wait_for_shutdown() {
    use tokio::{
        io::AsyncReadExt,
        signal::unix::{SignalKind, signal},
    };

    let stdin_closed = async {
        let mut stdin = tokio::io::stdin();
        let mut buffer = [0u8; 1024];
        loop {
            match stdin.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
    };
    let terminated = async {
        match signal(SignalKind::terminate()) {
            Ok(mut stream) => {
                stream.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        () = stdin_closed => {}
        () = terminated => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}

/// A ComputeBudget `SetComputeUnitPrice` instruction.
fn set_compute_unit_price(micro_lamports: u64) -> Instruction {
    let mut data = vec![3u8];
    data.extend_from_slice(&micro_lamports.to_le_bytes());
    Instruction { program_id: COMPUTE_BUDGET_PROGRAM_ID, accounts: vec![], data }
}

/// Signs `instructions` with `signers` (the first one pays), sends them and waits until
/// the transaction is confirmed. Returns its signature in base58.
///
/// Polls the status itself rather than using `send_and_confirm_transaction`, which waits
/// half a second between checks where a slot here lasts a tenth of that.
async fn send(client: &RpcClient, instructions: &[Instruction], signers: &[&Keypair]) -> Result<String> {
    let blockhash = client.get_latest_blockhash().await?;
    let transaction = Transaction::new_signed_with_payer(instructions, Some(&signers[0].pubkey()), signers, blockhash);
    let signature = client.send_transaction(&transaction).await?;
    let deadline = Instant::now() + CONFIRM_TIMEOUT;
    loop {
        let statuses = client.get_signature_statuses(&[signature]).await?;
        if let Some(Some(status)) = statuses.value.first()
            && status.satisfies_commitment(CommitmentConfig::confirmed())
        {
            return match &status.err {
                None => Ok(signature.to_string()),
                Some(error) => Err(format!("transaction {signature} failed: {error}").into()),
            };
        }
        if Instant::now() >= deadline {
            return Err(format!("transaction {signature} was not confirmed in time").into());
        }
        tokio::time::sleep(CONFIRM_POLL).await;
    }
}

/// Appends a Borsh string: u32 LE length, then the bytes.
fn push_borsh_string(data: &mut Vec<u8>, value: &[u8]) {
    data.extend_from_slice(&(value.len() as u32).to_le_bytes());
    data.extend_from_slice(value);
}

/// `value` padded with NUL bytes to `len`, as Metaplex stores name, symbol and uri.
fn nul_padded(value: &str, len: usize) -> Vec<u8> {
    let mut bytes = value.as_bytes().to_vec();
    bytes.resize(len, 0);
    bytes
}

/// A Metaplex Token Metadata account (`Key::MetadataV1`) in its Borsh layout, for a
/// fungible token with no creators, collection or uses.
fn metaplex_metadata(update_authority: &Address, mint: &Address) -> Vec<u8> {
    let mut data = vec![4u8]; // key: MetadataV1
    data.extend_from_slice(update_authority.as_ref());
    data.extend_from_slice(mint.as_ref());
    push_borsh_string(&mut data, &nul_padded("USD Coin", 32));
    push_borsh_string(&mut data, &nul_padded("USDC", 10));
    push_borsh_string(&mut data, &nul_padded("https://example.com/usdc.json", 200));
    data.extend_from_slice(&0u16.to_le_bytes()); // seller_fee_basis_points
    data.push(0); // creators: None
    data.push(0); // primary_sale_happened: false
    data.push(1); // is_mutable: true
    data.extend_from_slice(&[1, 254]); // edition_nonce: Some(254)
    data.extend_from_slice(&[1, 2]); // token_standard: Some(Fungible)
    data.push(0); // collection: None
    data.push(0); // uses: None
    data
}

/// Seeds the fixtures and returns the JSON line describing them.
async fn seed(rpc_url: &str, payer: Keypair) -> Result<String> {
    let client = RpcClient::new_with_commitment(rpc_url.to_string(), CommitmentConfig::confirmed());
    let token_program = spl_token_interface::id();
    let token_2022_program = spl_token_2022_interface::id();

    let owner = Keypair::new();
    let recipient = Keypair::new();
    let usdc_mint = Keypair::new();
    let t22_mint = Keypair::new();
    let nt_mint = Keypair::new();

    let payer_key = payer.pubkey();
    let owner_key = owner.pubkey();
    let recipient_key = recipient.pubkey();

    let owner_usdc_ata = get_associated_token_address_with_program_id(&owner_key, &usdc_mint.pubkey(), &token_program);
    let recipient_usdc_ata =
        get_associated_token_address_with_program_id(&recipient_key, &usdc_mint.pubkey(), &token_program);
    let owner_t22_ata =
        get_associated_token_address_with_program_id(&owner_key, &t22_mint.pubkey(), &token_2022_program);
    let recipient_t22_ata =
        get_associated_token_address_with_program_id(&recipient_key, &t22_mint.pubkey(), &token_2022_program);
    let owner_nt_ata = get_associated_token_address_with_program_id(&owner_key, &nt_mint.pubkey(), &token_2022_program);

    // The payer is airdropped by the surfnet's config; wait until the balance is visible.
    let deadline = Instant::now() + Duration::from_secs(10);
    while client.get_balance(&payer_key).await? == 0 {
        if Instant::now() >= deadline {
            return Err("the payer was never airdropped".into());
        }
        tokio::time::sleep(CONFIRM_POLL).await;
    }

    eprintln!("paperchain-surfnet: funding the owner");
    send(&client, &[system_instruction::transfer(&payer_key, &owner_key, 5 * LAMPORTS_PER_SOL)], &[&payer]).await?;

    eprintln!("paperchain-surfnet: creating usdc_mint");
    let mint_rent = client.get_minimum_balance_for_rent_exemption(SPL_MINT_LEN as usize).await?;
    send(
        &client,
        &[
            system_instruction::create_account(
                &payer_key,
                &usdc_mint.pubkey(),
                mint_rent,
                SPL_MINT_LEN,
                &token_program,
            ),
            spl_token_interface::instruction::initialize_mint2(
                &token_program,
                &usdc_mint.pubkey(),
                &payer_key,
                Some(&payer_key),
                6,
            )?,
            create_associated_token_account_idempotent(&payer_key, &owner_key, &usdc_mint.pubkey(), &token_program),
            spl_token_interface::instruction::mint_to_checked(
                &token_program,
                &usdc_mint.pubkey(),
                &owner_usdc_ata,
                &payer_key,
                &[],
                1_234_567_890,
                6,
            )?,
        ],
        &[&payer, &usdc_mint],
    )
    .await?;

    eprintln!("paperchain-surfnet: writing the usdc metadata account");
    let (usdc_metadata, _) = Address::find_program_address(
        &[b"metadata", METAPLEX_METADATA_PROGRAM_ID.as_ref(), usdc_mint.pubkey().as_ref()],
        &METAPLEX_METADATA_PROGRAM_ID,
    );
    let metadata_data = metaplex_metadata(&payer_key, &usdc_mint.pubkey());
    let metadata_rent = client.get_minimum_balance_for_rent_exemption(metadata_data.len()).await?;
    client
        .send::<Value>(
            RpcRequest::Custom { method: "surfnet_setAccount" },
            json!([
                usdc_metadata.to_string(),
                {
                    "lamports": metadata_rent,
                    "data": hex::encode(&metadata_data),
                    "owner": METAPLEX_METADATA_PROGRAM_ID.to_string(),
                    "executable": false,
                }
            ]),
        )
        .await?;

    eprintln!("paperchain-surfnet: creating t22_mint");
    let t22_extensions = [
        ExtensionType::TransferFeeConfig,
        ExtensionType::InterestBearingConfig,
        ExtensionType::PermanentDelegate,
        ExtensionType::MetadataPointer,
    ];
    let t22_space = ExtensionType::try_calculate_account_len::<spl_token_2022_interface::state::Mint>(&t22_extensions)?;
    let t22_metadata = TokenMetadata {
        mint: t22_mint.pubkey(),
        name: "Paper Dollar".to_string(),
        symbol: "PUSD".to_string(),
        uri: "https://example.com/pusd.json".to_string(),
        additional_metadata: vec![("website".to_string(), "https://paperchain.example".to_string())],
        ..TokenMetadata::default()
    };
    // The metadata TLV is written by the metadata instructions, which grow the account;
    // the lamports have to cover the final size from the start.
    let t22_rent = client.get_minimum_balance_for_rent_exemption(t22_space + t22_metadata.tlv_size_of()?).await?;
    send(
        &client,
        &[
            system_instruction::create_account(
                &payer_key,
                &t22_mint.pubkey(),
                t22_rent,
                t22_space as u64,
                &token_2022_program,
            ),
            transfer_fee::instruction::initialize_transfer_fee_config(
                &token_2022_program,
                &t22_mint.pubkey(),
                Some(&payer_key),
                Some(&payer_key),
                50,
                5_000_000,
            )?,
            interest_bearing_mint::instruction::initialize(
                &token_2022_program,
                &t22_mint.pubkey(),
                Some(payer_key),
                250,
            )?,
            spl_token_2022_interface::instruction::initialize_permanent_delegate(
                &token_2022_program,
                &t22_mint.pubkey(),
                &payer_key,
            )?,
            metadata_pointer::instruction::initialize(
                &token_2022_program,
                &t22_mint.pubkey(),
                Some(payer_key),
                Some(t22_mint.pubkey()),
            )?,
            spl_token_2022_interface::instruction::initialize_mint2(
                &token_2022_program,
                &t22_mint.pubkey(),
                &payer_key,
                None,
                6,
            )?,
            spl_token_metadata_interface::instruction::initialize(
                &token_2022_program,
                &t22_mint.pubkey(),
                &payer_key,
                &t22_mint.pubkey(),
                &payer_key,
                t22_metadata.name.clone(),
                t22_metadata.symbol.clone(),
                t22_metadata.uri.clone(),
            ),
            spl_token_metadata_interface::instruction::update_field(
                &token_2022_program,
                &t22_mint.pubkey(),
                &payer_key,
                Field::Key("website".to_string()),
                "https://paperchain.example".to_string(),
            ),
        ],
        &[&payer, &t22_mint],
    )
    .await?;
    send(
        &client,
        &[
            create_associated_token_account_idempotent(&payer_key, &owner_key, &t22_mint.pubkey(), &token_2022_program),
            spl_token_2022_interface::instruction::mint_to_checked(
                &token_2022_program,
                &t22_mint.pubkey(),
                &owner_t22_ata,
                &payer_key,
                &[],
                500_000_000,
                6,
            )?,
        ],
        &[&payer],
    )
    .await?;

    eprintln!("paperchain-surfnet: creating nt_mint");
    let nt_space = ExtensionType::try_calculate_account_len::<spl_token_2022_interface::state::Mint>(&[
        ExtensionType::NonTransferable,
    ])?;
    let nt_rent = client.get_minimum_balance_for_rent_exemption(nt_space).await?;
    send(
        &client,
        &[
            system_instruction::create_account(
                &payer_key,
                &nt_mint.pubkey(),
                nt_rent,
                nt_space as u64,
                &token_2022_program,
            ),
            spl_token_2022_interface::instruction::initialize_non_transferable_mint(
                &token_2022_program,
                &nt_mint.pubkey(),
            )?,
            spl_token_2022_interface::instruction::initialize_mint2(
                &token_2022_program,
                &nt_mint.pubkey(),
                &payer_key,
                None,
                0,
            )?,
            create_associated_token_account_idempotent(&payer_key, &owner_key, &nt_mint.pubkey(), &token_2022_program),
            spl_token_2022_interface::instruction::mint_to_checked(
                &token_2022_program,
                &nt_mint.pubkey(),
                &owner_nt_ata,
                &payer_key,
                &[],
                3,
                0,
            )?,
        ],
        &[&payer, &nt_mint],
    )
    .await?;

    eprintln!("paperchain-surfnet: sending the owner's transactions");
    let tx_sol = send(
        &client,
        &[set_compute_unit_price(1_000), system_instruction::transfer(&owner_key, &recipient_key, 250_000_000)],
        &[&owner],
    )
    .await?;

    let tx_token = send(
        &client,
        &[
            set_compute_unit_price(2_000),
            create_associated_token_account_idempotent(&owner_key, &recipient_key, &usdc_mint.pubkey(), &token_program),
            spl_token_interface::instruction::transfer_checked(
                &token_program,
                &owner_usdc_ata,
                &usdc_mint.pubkey(),
                &recipient_usdc_ata,
                &owner_key,
                &[],
                100_500_000,
                6,
            )?,
        ],
        &[&owner],
    )
    .await?;

    let tx_t22 = send(
        &client,
        &[
            set_compute_unit_price(3_000),
            create_associated_token_account_idempotent(
                &owner_key,
                &recipient_key,
                &t22_mint.pubkey(),
                &token_2022_program,
            ),
            spl_token_2022_interface::instruction::transfer_checked(
                &token_2022_program,
                &owner_t22_ata,
                &t22_mint.pubkey(),
                &recipient_t22_ata,
                &owner_key,
                &[],
                10_000_000,
                6,
            )?,
        ],
        &[&owner],
    )
    .await?;

    let tx_failed =
        send_failing_transfer(&client, &owner, &owner_usdc_ata, &usdc_mint.pubkey(), &recipient_usdc_ata).await?;

    let fields: [(&str, Value); 17] = [
        ("rpc", json!(rpc_url)),
        ("payer", json!(payer_key.to_string())),
        ("owner", json!(owner_key.to_string())),
        ("recipient", json!(recipient_key.to_string())),
        ("usdc_mint", json!(usdc_mint.pubkey().to_string())),
        ("usdc_metadata", json!(usdc_metadata.to_string())),
        ("owner_usdc_ata", json!(owner_usdc_ata.to_string())),
        ("recipient_usdc_ata", json!(recipient_usdc_ata.to_string())),
        ("t22_mint", json!(t22_mint.pubkey().to_string())),
        ("owner_t22_ata", json!(owner_t22_ata.to_string())),
        ("recipient_t22_ata", json!(recipient_t22_ata.to_string())),
        ("nt_mint", json!(nt_mint.pubkey().to_string())),
        ("owner_nt_ata", json!(owner_nt_ata.to_string())),
        ("tx_sol", json!(tx_sol)),
        ("tx_token", json!(tx_token)),
        ("tx_t22", json!(tx_t22)),
        ("tx_failed", json!(tx_failed)),
    ];
    // Written by hand so the keys keep this order.
    let body: Vec<String> = fields.iter().map(|(key, value)| format!("{}:{value}", json!(key))).collect();
    Ok(format!("{{{}}}", body.join(",")))
}

/// Sends a transfer of more USDC than the owner holds, skipping preflight, and returns its
/// signature if the validator records it (with its error) within [`FAILED_TX_WAIT`].
async fn send_failing_transfer(
    client: &RpcClient,
    owner: &Keypair,
    source: &Address,
    mint: &Address,
    destination: &Address,
) -> Result<Option<String>> {
    let blockhash = client.get_latest_blockhash().await?;
    let transaction = Transaction::new_signed_with_payer(
        &[
            set_compute_unit_price(4_000),
            spl_token_interface::instruction::transfer_checked(
                &spl_token_interface::id(),
                source,
                mint,
                destination,
                &owner.pubkey(),
                &[],
                1_000_000_000_000_000,
                6,
            )?,
        ],
        Some(&owner.pubkey()),
        &[owner],
        blockhash,
    );
    let signature = transaction.signatures[0];
    let config = RpcSendTransactionConfig { skip_preflight: true, ..RpcSendTransactionConfig::default() };
    if let Err(error) = client.send_transaction_with_config(&transaction, config).await {
        eprintln!("paperchain-surfnet: the failing transfer was refused: {error}");
    }

    let deadline = Instant::now() + FAILED_TX_WAIT;
    while Instant::now() < deadline {
        let statuses = client.get_signature_statuses(&[signature]).await?;
        if let Some(Some(status)) = statuses.value.first() {
            let confirmed = status.satisfies_commitment(CommitmentConfig::confirmed());
            if confirmed {
                if status.err.is_none() {
                    return Err("the over-balance transfer unexpectedly succeeded".into());
                }
                return Ok(Some(signature.to_string()));
            }
        }
        tokio::time::sleep(CONFIRM_POLL).await;
    }
    eprintln!("paperchain-surfnet: the failing transfer was not recorded");
    Ok(None)
}
