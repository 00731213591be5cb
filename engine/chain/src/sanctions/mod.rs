//! The OFAC SDN list's digital-currency addresses, as `/v1/check/sanctions` screens them.
//!
//! The list ships with the product (`engine/data/ofac-sdn-addresses.tsv`, embedded with
//! `include_str!`, parsed once) and can be refreshed from the official SDN XML
//! (`paperchain sanctions refresh`, parsed by [`sdn_xml`]; the CLI writes the file, the
//! engine only reads it): the refreshed list is at
//! [`refreshed_path`] and is used instead of the bundled one while it is as new or newer
//! (the list dates are compared; [`SanctionsState`] notices a new file on the next call).
//!
//! The file format (UTF-8, tab-separated): `#` lines first, `# date: YYYY-MM-DD` (the SDN
//! list's date of issue) and `# source: …` (where the list came from) among them; then the
//! header `asset address uid entity programs`, then one line an address: the asset of the
//! SDN feature ("Digital Currency Address - ETH" gives `ETH`), the address as listed, the
//! SDN entry's uid (empty when the source did not give it), the entity's primary name and
//! its programs separated by `; `.
//!
//! Addresses are compared in the normal form of their syntax ([`normalize`]): EVM hex,
//! bech32 and cashaddr addresses are case-insensitive and compared lower-case; everything
//! else (base58: Bitcoin legacy, Tron, Litecoin, Solana, Monero, XRP…) is compared exactly.

pub mod sdn_xml;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::SystemTime;

use time::Date;
use time::macros::format_description;

/// The bundled list.
pub const BUNDLED_TSV: &str = include_str!("../../../data/ofac-sdn-addresses.tsv");
/// The name of the refreshed list's file in the data folder.
pub const FILE_NAME: &str = "ofac-sdn-addresses.tsv";
/// Where `paperchain sanctions refresh` downloads the list from by default: OFAC's Sanctions
/// List Service export of the SDN list in the advanced XML format.
pub const OFFICIAL_URL: &str =
    "https://sanctionslistservice.ofac.treas.gov/api/PublicationPreview/exports/sdn_advanced.xml";
/// The largest XML file a refresh reads (the advanced SDN file is about 100 MB).
pub const MAX_XML_BYTES: u64 = 1 << 30;
/// The header line of the table.
const HEADER: &str = "asset\taddress\tuid\tentity\tprograms";

/// One listed address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The asset of the SDN feature: `ETH`, `XBT`, `USDT`, `TRX`…
    pub asset: String,
    /// The address as listed.
    pub address: String,
    /// The SDN entry's unique id; None when the source did not give it.
    pub uid: Option<u64>,
    /// The entity's primary name.
    pub entity: String,
    /// The sanctions programs the entity is listed under (`CYBER2`, `DPRK3`…).
    pub programs: Vec<String>,
}

/// A list of addresses with its date, indexed by normalized address.
#[derive(Debug)]
pub struct SanctionsList {
    /// The SDN list's date of issue.
    pub date: Date,
    /// Where the list came from (a URL, a file name, a description).
    pub source: String,
    /// The addresses, in the order given.
    pub entries: Vec<Entry>,
    index: HashMap<String, Vec<usize>>,
}

impl SanctionsList {
    /// A list of `entries`, indexed. The same address listed twice for the same asset and
    /// entity is kept once.
    pub fn new(date: Date, source: String, entries: Vec<Entry>) -> SanctionsList {
        let mut list =
            SanctionsList { date, source, entries: Vec::with_capacity(entries.len()), index: HashMap::new() };
        for entry in entries {
            let key = normalize(&entry.address).0;
            let same = |e: &Entry| e.asset == entry.asset && e.entity == entry.entity && e.uid == entry.uid;
            let slots = list.index.entry(key).or_default();
            if slots.iter().any(|&i| same(&list.entries[i])) {
                continue;
            }
            slots.push(list.entries.len());
            list.entries.push(entry);
        }
        list
    }

    /// The entries listing `address` (in any of its accepted spellings).
    pub fn lookup(&self, address: &str) -> Vec<&Entry> {
        let key = normalize(address).0;
        self.index.get(&key).map(|slots| slots.iter().map(|&i| &self.entries[i]).collect()).unwrap_or_default()
    }

    /// How many addresses each asset has.
    pub fn counts(&self) -> BTreeMap<&str, usize> {
        let mut counts = BTreeMap::new();
        for entry in &self.entries {
            *counts.entry(entry.asset.as_str()).or_default() += 1;
        }
        counts
    }

    /// Reads the table format (see the module documentation).
    pub fn parse_tsv(text: &str) -> Result<SanctionsList, String> {
        let mut date = None;
        let mut source = String::new();
        let mut entries = Vec::new();
        let mut header = false;
        for (n, line) in text.lines().enumerate() {
            let n = n + 1;
            if let Some(comment) = line.strip_prefix('#') {
                let comment = comment.trim();
                if let Some(value) = comment.strip_prefix("date:") {
                    date = Some(parse_date(value.trim()).map_err(|e| format!("line {n}: {e}"))?);
                } else if let Some(value) = comment.strip_prefix("source:") {
                    source = value.trim().to_string();
                }
                continue;
            }
            if line.trim().is_empty() {
                continue;
            }
            if !header {
                if line != HEADER {
                    return Err(format!("line {n}: expected the header `{}`", HEADER.replace('\t', " ")));
                }
                header = true;
                continue;
            }
            let fields: Vec<&str> = line.split('\t').collect();
            let [asset, address, uid, entity, programs] = fields[..] else {
                return Err(format!("line {n}: {} fields, 5 expected", fields.len()));
            };
            if asset.is_empty() || address.is_empty() {
                return Err(format!("line {n}: no asset or no address"));
            }
            let uid = match uid {
                "" => None,
                uid => Some(uid.parse().map_err(|_| format!("line {n}: uid `{uid}` is not a number"))?),
            };
            entries.push(Entry {
                asset: asset.to_string(),
                address: address.to_string(),
                uid,
                entity: entity.to_string(),
                programs: programs.split(';').map(str::trim).filter(|p| !p.is_empty()).map(str::to_string).collect(),
            });
        }
        let date = date.ok_or("no `# date:` line")?;
        if !header {
            return Err("no header line".into());
        }
        Ok(SanctionsList::new(date, source, entries))
    }

    /// The table format, entries sorted by asset and address.
    pub fn to_tsv(&self) -> String {
        let clean = |s: &str| s.replace(['\t', '\n', '\r'], " ");
        let mut rows: Vec<&Entry> = self.entries.iter().collect();
        rows.sort_by(|a, b| (&a.asset, &a.address, &a.entity).cmp(&(&b.asset, &b.address, &b.entity)));
        let mut out = format!(
            "# OFAC SDN list (Specially Designated Nationals and Blocked Persons): digital currency addresses\n\
             # date: {}\n# source: {}\n{HEADER}\n",
            self.date,
            clean(&self.source)
        );
        for e in rows {
            let uid = e.uid.map(|u| u.to_string()).unwrap_or_default();
            let programs = e.programs.iter().map(|p| clean(p)).collect::<Vec<_>>().join("; ");
            out.push_str(&format!(
                "{}\t{}\t{uid}\t{}\t{programs}\n",
                clean(&e.asset),
                clean(&e.address),
                clean(&e.entity)
            ));
        }
        out
    }
}

/// `YYYY-MM-DD`.
pub fn parse_date(text: &str) -> Result<Date, String> {
    Date::parse(text, format_description!("[year]-[month]-[day]"))
        .map_err(|_| format!("`{text}` is not a YYYY-MM-DD date"))
}

/// The syntax an address was read in, which decides how it is compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddressFormat {
    /// `0x` and 40 hex digits (Ethereum and the other EVM chains): any case, compared lower-case.
    Evm,
    /// Segwit bech32/bech32m (`bc1…`, `ltc1…`, `bnb1…`): single case, compared lower-case.
    Bech32,
    /// Bitcoin Cash cashaddr (`q…`/`p…`, with or without `bitcoincash:`): compared lower-case without the prefix.
    Cashaddr,
    /// Base58 (Bitcoin legacy, Tron, Litecoin, Dash, Dogecoin, Solana, Monero, XRP…): compared exactly.
    Base58,
    /// Anything else: compared exactly.
    Other,
}

impl AddressFormat {
    /// Its name in answers.
    pub fn as_str(self) -> &'static str {
        match self {
            AddressFormat::Evm => "evm",
            AddressFormat::Bech32 => "bech32",
            AddressFormat::Cashaddr => "cashaddr",
            AddressFormat::Base58 => "base58",
            AddressFormat::Other => "other",
        }
    }
}

/// Human-readable parts of the bech32 addresses compared case-insensitively.
const BECH32_PREFIXES: &[&str] = &["bc", "tb", "bcrt", "ltc", "tltc", "bnb", "zs"];
const BECH32_CHARSET: &str = "qpzry9x8gf2tvdw0s3jn54khce6mua7l";
const BASE58_ALPHABET: &str = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

/// The form `address` is compared in, and its syntax. Surrounding whitespace is ignored.
pub fn normalize(address: &str) -> (String, AddressFormat) {
    let address = address.trim();
    let single_case = |s: &str| s == s.to_ascii_lowercase() || s == s.to_ascii_uppercase();
    let lower = address.to_ascii_lowercase();
    if let Some(hex) = lower.strip_prefix("0x")
        && hex.len() == 40
        && hex.bytes().all(|b| b.is_ascii_hexdigit())
    {
        return (lower, AddressFormat::Evm);
    }
    // The `bitcoincash:` prefix is read in any case; the payload must be of one case.
    let (cash, cash_given) = match lower.strip_prefix("bitcoincash:") {
        Some(payload) => (payload, &address["bitcoincash:".len()..]),
        None => (lower.as_str(), address),
    };
    if single_case(cash_given)
        && cash.len() == 42
        && cash.starts_with(['q', 'p'])
        && cash.chars().all(|c| BECH32_CHARSET.contains(c))
    {
        return (cash.to_string(), AddressFormat::Cashaddr);
    }
    if single_case(address)
        && let Some((prefix, data)) = lower.rsplit_once('1')
        && BECH32_PREFIXES.contains(&prefix)
        && data.len() >= 6
        && data.chars().all(|c| BECH32_CHARSET.contains(c))
    {
        return (lower, AddressFormat::Bech32);
    }
    if !address.is_empty() && address.chars().all(|c| BASE58_ALPHABET.contains(c)) {
        return (address.to_string(), AddressFormat::Base58);
    }
    (address.to_string(), AddressFormat::Other)
}

/// The bundled list, parsed on first use.
pub fn bundled() -> Arc<SanctionsList> {
    static BUNDLED: LazyLock<Arc<SanctionsList>> = LazyLock::new(|| {
        Arc::new(SanctionsList::parse_tsv(BUNDLED_TSV).unwrap_or_else(|e| panic!("the bundled sanctions list: {e}")))
    });
    Arc::clone(&BUNDLED)
}

/// Which list a screen used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListOrigin {
    /// The list shipped with the product.
    Bundled,
    /// The list `paperchain sanctions refresh` wrote.
    Refreshed,
}

impl ListOrigin {
    /// Its name in answers.
    pub fn as_str(self) -> &'static str {
        match self {
            ListOrigin::Bundled => "bundled",
            ListOrigin::Refreshed => "refreshed",
        }
    }
}

/// The list in use and where it came from.
#[derive(Clone, Debug)]
pub struct ListInUse {
    /// The list.
    pub list: Arc<SanctionsList>,
    /// Bundled or refreshed.
    pub origin: ListOrigin,
}

/// Where `paperchain sanctions refresh` writes the list: `sanctions/ofac-sdn-addresses.tsv`
/// in the [`crate::context::data_dir`].
pub fn refreshed_path() -> PathBuf {
    crate::context::data_dir().join("sanctions").join(FILE_NAME)
}

/// The list to screen with: the refreshed file at `path` when it reads and is as new as the
/// bundled list or newer, else the bundled one. A file that does not read is logged and
/// passed over.
pub fn choose(path: &Path) -> ListInUse {
    let bundled = bundled();
    let refreshed = match std::fs::read_to_string(path) {
        Ok(text) => match SanctionsList::parse_tsv(&text) {
            Ok(list) => Some(list),
            Err(e) => {
                tracing::warn!(file = %path.display(), error = %e, "the refreshed sanctions list does not read; using the bundled one");
                None
            }
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            tracing::warn!(file = %path.display(), error = %e, "the refreshed sanctions list cannot be read; using the bundled one");
            None
        }
    };
    match refreshed {
        Some(list) if list.date >= bundled.date => ListInUse { list: Arc::new(list), origin: ListOrigin::Refreshed },
        _ => ListInUse { list: bundled, origin: ListOrigin::Bundled },
    }
}

/// The route's list, kept in the context's route state: chosen by [`choose`] on first use
/// and again whenever the refreshed file's modification time changes (one `stat` a call).
#[derive(Debug)]
pub struct SanctionsState {
    path: PathBuf,
    current: Mutex<Option<(Option<SystemTime>, ListInUse)>>,
}

impl Default for SanctionsState {
    fn default() -> Self {
        SanctionsState::at(refreshed_path())
    }
}

impl SanctionsState {
    /// A state reading the refreshed list from `path` (tests point it at their own file).
    pub fn at(path: PathBuf) -> SanctionsState {
        SanctionsState { path, current: Mutex::new(None) }
    }

    /// The list to screen with now.
    pub fn list(&self) -> ListInUse {
        let modified = std::fs::metadata(&self.path).and_then(|m| m.modified()).ok();
        // A poisoned lock only means another call panicked while choosing; the value is whole.
        let mut current = self.current.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match &*current {
            Some((seen, list)) if *seen == modified => list.clone(),
            _ => {
                let list = choose(&self.path);
                *current = Some((modified, list.clone()));
                list
            }
        }
    }
}

/// The body of `url` (at most [`MAX_XML_BYTES`]), for a refresh.
pub async fn download(url: &str) -> Result<Vec<u8>, String> {
    let client = reqwest::Client::builder()
        .user_agent(concat!("paperchain/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(std::time::Duration::from_secs(30))
        .timeout(std::time::Duration::from_secs(600))
        .build()
        .map_err(|e| format!("cannot start an HTTP client: {e}"))?;
    let mut response = client.get(url).send().await.map_err(|e| format!("{url}: {e}"))?;
    if !response.status().is_success() {
        return Err(format!("{url} answered {}", response.status()));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| format!("{url}: {e}"))? {
        if (body.len() + chunk.len()) as u64 > MAX_XML_BYTES {
            return Err(format!("{url} is larger than {MAX_XML_BYTES} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_compared_as_their_syntax_demands() {
        let evm = normalize(" 0x8589427373D6D84E98730D7795D8f6f8731FDA16 ");
        assert_eq!(evm, ("0x8589427373d6d84e98730d7795d8f6f8731fda16".into(), AddressFormat::Evm));
        assert_eq!(normalize("0X8589427373D6D84E98730D7795D8F6F8731FDA16").1, AddressFormat::Evm);
        let bech = normalize("BC1QSYNV6ZJKH2F2HD9L5XWSYJ6Z4KQZKE2XX8GQGH");
        assert_eq!(bech, ("bc1qsynv6zjkh2f2hd9l5xwsyj6z4kqzke2xx8gqgh".into(), AddressFormat::Bech32));
        // Mixed case is not bech32: compared exactly.
        assert_eq!(normalize("bc1Qsynv6zjkh2f2hd9l5xwsyj6z4kqzke2xx8gqgh").1, AddressFormat::Other);
        let cash = normalize("bitcoincash:QPF2CPHC5DKUCLKQUR7LHJ2YUQQ9PK3HMUKLE77VHQ");
        assert_eq!(cash, ("qpf2cphc5dkuclkqur7lhj2yuqq9pk3hmukle77vhq".into(), AddressFormat::Cashaddr));
        // Base58 keeps its case: a Tron address in lower case is another string.
        let tron = "TAbbVaBKgH4VBLXgWqACuwoKF4cH1HinQh";
        assert_eq!(normalize(tron), (tron.into(), AddressFormat::Base58));
        assert_ne!(normalize(&tron.to_ascii_lowercase()).0, tron);
        assert_eq!(normalize("not-an-address").1, AddressFormat::Other);
    }

    #[test]
    fn the_table_reads_back_what_it_writes() {
        let entries = vec![
            Entry {
                asset: "XBT".into(),
                address: "1Kuf2Rd8mDyAViwBozGTNYnvWL8uYFrkVo".into(),
                uid: Some(12),
                entity: "A\tB".into(),
                programs: vec!["CYBER2".into(), "DPRK3".into()],
            },
            Entry {
                asset: "ETH".into(),
                address: "0xAbC0000000000000000000000000000000000001".into(),
                uid: None,
                entity: "C".into(),
                programs: vec![],
            },
        ];
        let list = SanctionsList::new(parse_date("2026-09-30").unwrap(), "test".into(), entries);
        let back = SanctionsList::parse_tsv(&list.to_tsv()).unwrap();
        assert_eq!(back.date, list.date);
        assert_eq!(back.source, "test");
        assert_eq!(back.entries.len(), 2);
        assert_eq!(back.entries[0].asset, "ETH", "sorted by asset");
        assert_eq!(back.entries[1].entity, "A B", "tabs are not kept");
        assert_eq!(back.entries[1].programs, ["CYBER2", "DPRK3"]);
        assert_eq!(back.lookup("0xabc0000000000000000000000000000000000001").len(), 1);
        assert!(back.lookup("1kuf2rd8mdyaviwbozgtnynvwl8uyfrkvo").is_empty(), "base58 is case-sensitive");
        assert!(SanctionsList::parse_tsv("asset\taddress\tuid\tentity\tprograms\n").unwrap_err().contains("date"));
        assert!(SanctionsList::parse_tsv("# date: 2026-01-01\nETH\t0x\n").unwrap_err().contains("header"));
    }

    #[test]
    fn the_bundled_list_reads() {
        let list = bundled();
        assert!(list.entries.len() > 500, "{} entries", list.entries.len());
        assert!(list.counts().contains_key("ETH") && list.counts().contains_key("XBT"));
    }
}
