//! Reads the digital-currency addresses out of OFAC's SDN list in either of its XML forms,
//! with a pull parser (`xmlparser`) over the file's text, keeping only what the list of
//! addresses needs:
//!
//! - the advanced form (`sdn_advanced.xml`, root `Sanctions`): the date of issue
//!   (`DateOfIssue` with `Year`, `Month`, `Day`); the feature types named
//!   `Digital Currency Address - <ASSET>` (`ReferenceValueSets/FeatureTypeValues`) and the
//!   sanctions type named `Program`; for each `DistinctParty` (its `FixedRef` is the SDN
//!   uid) the name parts of its primary alias's first documented name and the
//!   `VersionDetail` of each of its features of those types; for each `SanctionsEntry`
//!   (by `ProfileID`) the `Comment` of its program measures.
//! - the classic form (`sdn.xml`, root `sdnList`): `publshInformation/Publish_Date`
//!   (`MM/DD/YYYY`); for each `sdnEntry` its `uid`, `lastName`, `firstName`,
//!   `programList/program` and the `idList/id` whose `idType` is
//!   `Digital Currency Address - <ASSET>`, with the address in `idNumber`.
//!
//! Every other element is skipped. A feature's text can hold more than one address
//! (separated by spaces, commas or semicolons); words that cannot be addresses (shorter
//! than 20 characters, or not letters and digits) are dropped.

use std::collections::HashMap;

use time::{Date, Month};
use xmlparser::{ElementEnd, Token, Tokenizer};

use super::{Entry, SanctionsList};

/// The feature-type and id-type names of addresses: `Digital Currency Address - ETH`.
const FEATURE_PREFIX: &str = "Digital Currency Address - ";

/// The list in `xml` (either form); `source` says where it came from. Errors name what is
/// missing or malformed.
pub fn parse(xml: &str, source: &str) -> Result<SanctionsList, String> {
    let mut parser = Parser::default();
    for token in Tokenizer::from(xml) {
        let token = token.map_err(|e| format!("not well-formed XML: {e}"))?;
        parser.token(token)?;
    }
    parser.finish(source)
}

/// A party of the advanced form, as far as it matters here.
#[derive(Default)]
struct Party {
    uid: Option<u64>,
    /// Its `Profile` id, which the sanctions entries refer to.
    profile: Option<String>,
    name: Vec<String>,
    /// (feature type id, text).
    features: Vec<(String, String)>,
}

#[derive(Default)]
struct Parser {
    /// The open elements' local names.
    path: Vec<String>,
    /// Attributes of the element being opened.
    attributes: Vec<(String, String)>,
    /// Text of the innermost open element.
    text: String,
    root: Option<String>,
    // The date: advanced (year, month, day) or classic text.
    year: Option<i32>,
    month: Option<u8>,
    day: Option<u8>,
    publish_date: Option<String>,
    // Advanced form.
    /// Feature type id -> asset.
    feature_assets: HashMap<String, String>,
    /// The id of the `Program` sanctions type (1 in every published file).
    program_type: Option<String>,
    /// Id of the reference value being read and its kind.
    reference: Option<(String, String)>,
    party: Option<Party>,
    /// Inside the primary alias; its first documented name is done.
    in_primary_alias: bool,
    name_done: bool,
    in_name: bool,
    feature_type: Option<String>,
    parties: Vec<Party>,
    /// Profile id -> programs.
    programs: HashMap<String, Vec<String>>,
    entry_profile: Option<String>,
    measure_type: Option<String>,
    // Classic form.
    classic: ClassicEntry,
    classic_entries: Vec<ClassicEntry>,
}

#[derive(Default)]
struct ClassicEntry {
    uid: Option<u64>,
    last_name: String,
    first_name: String,
    programs: Vec<String>,
    id_type: String,
    id_number: String,
    /// (asset, text).
    addresses: Vec<(String, String)>,
}

impl Parser {
    fn attribute(&self, name: &str) -> Option<&str> {
        self.attributes.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    fn parent(&self) -> Option<&str> {
        self.path.len().checked_sub(2).map(|i| self.path[i].as_str())
    }

    fn token(&mut self, token: Token<'_>) -> Result<(), String> {
        match token {
            Token::ElementStart { local, .. } => {
                self.path.push(local.as_str().to_string());
                self.attributes.clear();
                self.text.clear();
                if self.root.is_none() {
                    self.root = Some(local.as_str().to_string());
                }
            }
            Token::Attribute { local, value, .. } => {
                self.attributes.push((local.as_str().to_string(), unescape(value.as_str())));
            }
            Token::ElementEnd { end: ElementEnd::Open, .. } => self.open(),
            Token::ElementEnd { end: ElementEnd::Empty, .. } => {
                self.open();
                self.close()?;
            }
            Token::ElementEnd { end: ElementEnd::Close(..), .. } => self.close()?,
            Token::Text { text } => self.text.push_str(&unescape(text.as_str())),
            Token::Cdata { text, .. } => self.text.push_str(text.as_str()),
            _ => {}
        }
        Ok(())
    }

    /// An element's start tag is complete: its attributes are known.
    fn open(&mut self) {
        let name = self.path.last().map(String::as_str).unwrap_or_default();
        match name {
            "FeatureType" | "SanctionsType" => {
                if let Some(id) = self.attribute("ID") {
                    self.reference = Some((name.to_string(), id.to_string()));
                }
            }
            "DistinctParty" => {
                let uid = self.attribute("FixedRef").and_then(|r| r.parse().ok());
                self.party = Some(Party { uid, ..Party::default() });
                self.name_done = false;
            }
            "Profile" if self.party.is_some() => {
                let id = self.attribute("ID").map(str::to_string);
                if let Some(party) = &mut self.party {
                    party.profile = id;
                }
            }
            "Alias" if self.party.is_some() => {
                self.in_primary_alias = self.attribute("Primary") == Some("true");
            }
            "DocumentedName" if self.in_primary_alias && !self.name_done => self.in_name = true,
            "Feature" if self.party.is_some() => {
                self.feature_type = self.attribute("FeatureTypeID").map(str::to_string);
            }
            "SanctionsEntry" => self.entry_profile = self.attribute("ProfileID").map(str::to_string),
            "SanctionsMeasure" => self.measure_type = self.attribute("SanctionsTypeID").map(str::to_string),
            "sdnEntry" => self.classic = ClassicEntry::default(),
            _ => {}
        }
        self.text.clear();
    }

    /// An element ends: its text is complete.
    fn close(&mut self) -> Result<(), String> {
        let text = std::mem::take(&mut self.text);
        let text = text.trim();
        let parent = self.parent().map(str::to_string);
        let name = self.path.pop().unwrap_or_default();
        match (name.as_str(), parent.as_deref()) {
            // The date.
            ("Year", Some("DateOfIssue")) => self.year = text.parse().ok(),
            ("Month", Some("DateOfIssue")) => self.month = text.parse().ok(),
            ("Day", Some("DateOfIssue")) => self.day = text.parse().ok(),
            ("Publish_Date", _) => self.publish_date = Some(text.to_string()),
            // Advanced: reference values.
            ("FeatureType" | "SanctionsType", _) => {
                if let Some((kind, id)) = self.reference.take() {
                    if kind == "FeatureType" {
                        if let Some(asset) = text.strip_prefix(FEATURE_PREFIX) {
                            self.feature_assets.insert(id, asset.trim().to_string());
                        }
                    } else if text == "Program" {
                        self.program_type = Some(id);
                    }
                }
            }
            // Advanced: parties.
            ("NamePartValue", _) if self.in_name => {
                if let Some(party) = &mut self.party
                    && !text.is_empty()
                {
                    party.name.push(text.to_string());
                }
            }
            ("DocumentedName", _) if self.in_name => {
                self.in_name = false;
                self.name_done = true;
            }
            ("Alias", _) => self.in_primary_alias = false,
            ("VersionDetail", _) => {
                if let (Some(party), Some(kind)) = (&mut self.party, &self.feature_type) {
                    party.features.push((kind.clone(), text.to_string()));
                }
            }
            ("Feature", _) => self.feature_type = None,
            ("DistinctParty", _) => {
                if let Some(party) = self.party.take()
                    && !party.features.is_empty()
                {
                    self.parties.push(party);
                }
            }
            // Advanced: programs.
            ("Comment", Some("SanctionsMeasure")) => {
                if let Some(profile) = &self.entry_profile
                    && !text.is_empty()
                    && self.program_type.as_ref().is_none_or(|t| self.measure_type.as_ref() == Some(t))
                {
                    let programs = self.programs.entry(profile.clone()).or_default();
                    if !programs.iter().any(|p| p == text) {
                        programs.push(text.to_string());
                    }
                }
            }
            ("SanctionsEntry", _) => self.entry_profile = None,
            // Classic.
            ("uid", Some("sdnEntry")) => self.classic.uid = text.parse().ok(),
            ("lastName", Some("sdnEntry")) => self.classic.last_name = text.to_string(),
            ("firstName", Some("sdnEntry")) => self.classic.first_name = text.to_string(),
            ("program", Some("programList")) => self.classic.programs.push(text.to_string()),
            ("idType", Some("id")) => self.classic.id_type = text.to_string(),
            ("idNumber", Some("id")) => self.classic.id_number = text.to_string(),
            ("id", Some("idList")) => {
                let id_type = std::mem::take(&mut self.classic.id_type);
                let number = std::mem::take(&mut self.classic.id_number);
                if let Some(asset) = id_type.strip_prefix(FEATURE_PREFIX) {
                    self.classic.addresses.push((asset.trim().to_string(), number));
                }
            }
            ("sdnEntry", _) => {
                let entry = std::mem::take(&mut self.classic);
                if !entry.addresses.is_empty() {
                    self.classic_entries.push(entry);
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn finish(self, source: &str) -> Result<SanctionsList, String> {
        if let Some(open) = self.path.last() {
            return Err(format!("not well-formed XML: it ends inside `{open}` (a truncated file?)"));
        }
        let mut entries = Vec::new();
        let date = match self.root.as_deref() {
            Some("Sanctions") => {
                let (Some(year), Some(month), Some(day)) = (self.year, self.month, self.day) else {
                    return Err("no DateOfIssue with Year, Month and Day".into());
                };
                let month = Month::try_from(month).map_err(|_| format!("DateOfIssue month {month} is not a month"))?;
                let date = Date::from_calendar_date(year, month, day).map_err(|e| format!("DateOfIssue: {e}"))?;
                for party in self.parties {
                    let programs =
                        party.profile.as_ref().and_then(|p| self.programs.get(p)).cloned().unwrap_or_default();
                    let entity = party.name.join(" ");
                    for (kind, text) in &party.features {
                        let Some(asset) = self.feature_assets.get(kind) else { continue };
                        for address in addresses_in(text) {
                            entries.push(Entry {
                                asset: asset.clone(),
                                address: address.to_string(),
                                uid: party.uid,
                                entity: entity.clone(),
                                programs: programs.clone(),
                            });
                        }
                    }
                }
                date
            }
            Some("sdnList") => {
                let text = self.publish_date.ok_or("no publshInformation/Publish_Date")?;
                let date = classic_date(&text)?;
                for entry in self.classic_entries {
                    let entity = [entry.last_name.as_str(), entry.first_name.as_str()]
                        .iter()
                        .filter(|p| !p.is_empty())
                        .copied()
                        .collect::<Vec<_>>()
                        .join(" ");
                    for (asset, text) in &entry.addresses {
                        for address in addresses_in(text) {
                            entries.push(Entry {
                                asset: asset.clone(),
                                address: address.to_string(),
                                uid: entry.uid,
                                entity: entity.clone(),
                                programs: entry.programs.clone(),
                            });
                        }
                    }
                }
                date
            }
            Some(other) => {
                return Err(format!(
                    "the root element is `{other}`, not `Sanctions` (sdn_advanced.xml) or `sdnList` (sdn.xml)"
                ));
            }
            None => return Err("no XML element".into()),
        };
        Ok(SanctionsList::new(date, source.to_string(), entries))
    }
}

/// `MM/DD/YYYY`.
fn classic_date(text: &str) -> Result<Date, String> {
    let bad = || format!("Publish_Date `{text}` is not MM/DD/YYYY");
    let mut parts = text.trim().splitn(3, '/').map(|p| p.parse::<u16>().ok());
    let (Some(Some(month)), Some(Some(day)), Some(Some(year))) = (parts.next(), parts.next(), parts.next()) else {
        return Err(bad());
    };
    let month = Month::try_from(u8::try_from(month).map_err(|_| bad())?).map_err(|_| bad())?;
    Date::from_calendar_date(i32::from(year), month, u8::try_from(day).map_err(|_| bad())?).map_err(|_| bad())
}

/// The words of a feature's text that can be addresses.
fn addresses_in(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| c.is_whitespace() || c == ',' || c == ';')
        .filter(|w| (20..=128).contains(&w.len()) && w.chars().all(|c| c.is_ascii_alphanumeric() || c == ':'))
}

/// Text with the five predefined entities and character references replaced.
fn unescape(text: &str) -> String {
    if !text.contains('&') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let Some(end) = rest.find(';') else { break };
        let name = &rest[1..end];
        let decoded = match name {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ => name
                .strip_prefix("#x")
                .map(|hex| u32::from_str_radix(hex, 16).ok())
                .unwrap_or_else(|| name.strip_prefix('#').and_then(|d| d.parse().ok()))
                .and_then(char::from_u32),
        };
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &rest[end + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entities_and_references_are_decoded() {
        assert_eq!(unescape("Ghal&apos;eh &amp; Co &#65;&#x42; &bogus; &"), "Ghal'eh & Co AB &bogus; &");
    }

    #[test]
    fn feature_text_gives_its_addresses() {
        let words: Vec<&str> = addresses_in(" 0x1111111111111111111111111111111111111111, See OFAC website ").collect();
        assert_eq!(words, ["0x1111111111111111111111111111111111111111"]);
    }

    #[test]
    fn classic_dates_read() {
        assert_eq!(classic_date("09/30/2026").unwrap().to_string(), "2026-09-30");
        assert!(classic_date("2026-09-30").is_err());
    }
}
