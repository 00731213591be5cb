//! Which network targets an untrusted URL may reach: the address classifier, the host
//! name check and the [`AddressPolicy`] that combines them.
//!
//! [`classify`] answers `Ok(())` only for globally reachable unicast addresses. IPv6
//! forms that embed an IPv4 address (IPv4-mapped, IPv4-compatible, SIIT-translated,
//! NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) are judged by the embedded IPv4 address;
//! Teredo is refused outright. [`check_host_name`] refuses local-only names before any
//! DNS lookup is made.

use std::collections::HashSet;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// How an IPv6 address carries an embedded IPv4 address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Embedding {
    /// `::ffff:a.b.c.d` (IPv4-mapped).
    Mapped,
    /// `::a.b.c.d` (deprecated IPv4-compatible).
    Compatible,
    /// `::ffff:0:a.b.c.d` (SIIT IPv4-translated).
    Translated,
    /// `64:ff9b::a.b.c.d` (NAT64 well-known prefix).
    Nat64,
    /// `2002:aabb:ccdd::/48` (6to4).
    SixToFour,
}

impl fmt::Display for Embedding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Embedding::Mapped => "an IPv4-mapped",
            Embedding::Compatible => "an IPv4-compatible",
            Embedding::Translated => "an IPv4-translated",
            Embedding::Nat64 => "a NAT64",
            Embedding::SixToFour => "a 6to4",
        })
    }
}

/// Why a target was refused.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum BlockReason {
    /// Loopback: `127.0.0.0/8`, `::1`.
    Loopback,
    /// Private use: `10/8`, `172.16/12`, `192.168/16`.
    Private,
    /// Link-local: `169.254/16`, `fe80::/10`.
    LinkLocal,
    /// Shared address space (carrier-grade NAT): `100.64/10`.
    SharedCgnat,
    /// Multicast: `224/4`, `ff00::/8`.
    Multicast,
    /// Limited broadcast: `255.255.255.255`.
    Broadcast,
    /// Unspecified / "this network": `0.0.0.0/8`, `::`.
    Unspecified,
    /// Documentation ranges: `192.0.2/24`, `198.51.100/24`, `203.0.113/24`, `2001:db8::/32`, `3fff::/20`.
    Documentation,
    /// Benchmarking ranges: `198.18/15`, `2001:2::/48`.
    Benchmarking,
    /// Reserved or special-purpose ranges (`192.0.0/24`, `240/4`, IPv6 outside `2000::/3`, ...).
    Reserved,
    /// Cloud metadata endpoints (`169.254.169.254`, `fd00:ec2::254`, `168.63.129.16`).
    Metadata,
    /// IPv6 unique-local: `fc00::/7`.
    UniqueLocal,
    /// IPv6 site-local (deprecated): `fec0::/10`.
    SiteLocal,
    /// An IPv6 form embedding an IPv4 address that is itself refused.
    Embedded {
        /// The way the IPv4 address is embedded.
        kind: Embedding,
        /// The embedded IPv4 address.
        v4: Ipv4Addr,
        /// Why the embedded IPv4 address is refused.
        reason: Box<BlockReason>,
    },
    /// Teredo tunnelling: `2001::/32`.
    Teredo,
    /// IPv6 discard-only prefix: `100::/64`.
    DiscardOnly,
    /// A local-only host name (`localhost`, `*.local`, `*.internal`, `*.home.arpa`, ...).
    LocalName(String),
    /// A host name with a single label (no dot): resolved by local search domains.
    SingleLabelName(String),
    /// A host name that looks like a numeric IPv4 spelling the URL parser did not normalise.
    NumericName(String),
    /// A specific address refused for the inner reason (names the address in messages).
    Address {
        /// The refused address.
        ip: IpAddr,
        /// Why it is refused.
        reason: Box<BlockReason>,
    },
}

impl BlockReason {
    /// The class of the refusal, without the [`BlockReason::Address`] wrapper.
    pub fn class(&self) -> &BlockReason {
        match self {
            BlockReason::Address { reason, .. } => reason.class(),
            other => other,
        }
    }
}

impl fmt::Display for BlockReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BlockReason::Loopback => f.write_str("a loopback address"),
            BlockReason::Private => f.write_str("a private-use address"),
            BlockReason::LinkLocal => f.write_str("a link-local address"),
            BlockReason::SharedCgnat => f.write_str("a shared (carrier-grade NAT) address"),
            BlockReason::Multicast => f.write_str("a multicast address"),
            BlockReason::Broadcast => f.write_str("the broadcast address"),
            BlockReason::Unspecified => f.write_str("an unspecified (\"this network\") address"),
            BlockReason::Documentation => f.write_str("a documentation address"),
            BlockReason::Benchmarking => f.write_str("a benchmarking address"),
            BlockReason::Reserved => f.write_str("a reserved or special-purpose address"),
            BlockReason::Metadata => f.write_str("a cloud metadata endpoint"),
            BlockReason::UniqueLocal => f.write_str("a unique-local IPv6 address"),
            BlockReason::SiteLocal => f.write_str("a site-local IPv6 address"),
            BlockReason::Embedded { kind, v4, reason } => {
                write!(f, "{kind} IPv6 address embedding {v4}, which is {reason}")
            }
            BlockReason::Teredo => f.write_str("a Teredo tunnelling address"),
            BlockReason::DiscardOnly => f.write_str("a discard-only IPv6 address"),
            BlockReason::LocalName(name) => write!(f, "{name} is a local-only host name"),
            BlockReason::SingleLabelName(name) => {
                write!(f, "{name} is a single-label host name")
            }
            BlockReason::NumericName(name) => {
                write!(f, "{name} looks like a numeric address spelling")
            }
            BlockReason::Address { ip, reason } => write!(f, "{ip} is {reason}"),
        }
    }
}

impl std::error::Error for BlockReason {}

/// Whether `ip` is a globally reachable unicast address; `Err` names why not.
pub fn classify(ip: IpAddr) -> Result<(), BlockReason> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

/// `true` when `ip` lies in `base/prefix`.
fn in_v4(ip: Ipv4Addr, base: [u8; 4], prefix: u32) -> bool {
    let mask = if prefix == 0 { 0 } else { u32::MAX << (32 - prefix) };
    u32::from(ip) & mask == u32::from(Ipv4Addr::from(base)) & mask
}

/// `true` when `ip` lies in `base/prefix`.
fn in_v6(ip: Ipv6Addr, base: Ipv6Addr, prefix: u32) -> bool {
    let mask = if prefix == 0 { 0 } else { u128::MAX << (128 - prefix) };
    u128::from(ip) & mask == u128::from(base) & mask
}

/// IPv4 ranges in check order (more specific first); anything else is public.
const V4_RULES: &[([u8; 4], u32, BlockReason)] = &[
    ([0, 0, 0, 0], 8, BlockReason::Unspecified),
    ([10, 0, 0, 0], 8, BlockReason::Private),
    ([100, 64, 0, 0], 10, BlockReason::SharedCgnat),
    ([127, 0, 0, 0], 8, BlockReason::Loopback),
    ([169, 254, 169, 254], 32, BlockReason::Metadata),
    ([169, 254, 0, 0], 16, BlockReason::LinkLocal),
    // Azure's wire server / metadata relay: public-looking, reachable only from inside Azure.
    ([168, 63, 129, 16], 32, BlockReason::Metadata),
    ([172, 16, 0, 0], 12, BlockReason::Private),
    ([192, 0, 0, 0], 24, BlockReason::Reserved),
    ([192, 0, 2, 0], 24, BlockReason::Documentation),
    // Former 6to4 relay anycast (deprecated, RFC 7526).
    ([192, 88, 99, 0], 24, BlockReason::Reserved),
    ([192, 168, 0, 0], 16, BlockReason::Private),
    ([198, 18, 0, 0], 15, BlockReason::Benchmarking),
    ([198, 51, 100, 0], 24, BlockReason::Documentation),
    ([203, 0, 113, 0], 24, BlockReason::Documentation),
    ([224, 0, 0, 0], 4, BlockReason::Multicast),
    ([255, 255, 255, 255], 32, BlockReason::Broadcast),
    ([240, 0, 0, 0], 4, BlockReason::Reserved),
];

/// Classify an IPv4 address.
fn classify_v4(ip: Ipv4Addr) -> Result<(), BlockReason> {
    for (base, prefix, reason) in V4_RULES {
        if in_v4(ip, *base, *prefix) {
            return Err(reason.clone());
        }
    }
    Ok(())
}

/// Judge an IPv6 address by the IPv4 address it embeds.
fn embedded(kind: Embedding, v4: Ipv4Addr) -> Result<(), BlockReason> {
    classify_v4(v4).map_err(|reason| BlockReason::Embedded { kind, v4, reason: Box::new(reason) })
}

/// The IPv4 address in the low 32 bits of `ip`.
fn low_v4(ip: Ipv6Addr) -> Ipv4Addr {
    Ipv4Addr::from((u128::from(ip) & 0xffff_ffff) as u32)
}

/// Shorthand for an IPv6 constant.
const fn v6(segments: [u16; 8]) -> Ipv6Addr {
    Ipv6Addr::new(
        segments[0],
        segments[1],
        segments[2],
        segments[3],
        segments[4],
        segments[5],
        segments[6],
        segments[7],
    )
}

/// Classify an IPv6 address.
fn classify_v6(ip: Ipv6Addr) -> Result<(), BlockReason> {
    let bits = u128::from(ip);
    if ip.is_unspecified() {
        return Err(BlockReason::Unspecified);
    }
    if ip.is_loopback() {
        return Err(BlockReason::Loopback);
    }
    // ::ffff:0:0/96 IPv4-mapped.
    if in_v6(ip, v6([0, 0, 0, 0, 0, 0xffff, 0, 0]), 96) {
        return embedded(Embedding::Mapped, low_v4(ip));
    }
    // ::ffff:0:0:0/96 SIIT IPv4-translated.
    if in_v6(ip, v6([0, 0, 0, 0, 0xffff, 0, 0, 0]), 96) {
        return embedded(Embedding::Translated, low_v4(ip));
    }
    // ::/96 IPv4-compatible (:: and ::1 handled above).
    if in_v6(ip, Ipv6Addr::UNSPECIFIED, 96) {
        return embedded(Embedding::Compatible, low_v4(ip));
    }
    // 64:ff9b::/96 NAT64 well-known prefix.
    if in_v6(ip, v6([0x64, 0xff9b, 0, 0, 0, 0, 0, 0]), 96) {
        return embedded(Embedding::Nat64, low_v4(ip));
    }
    // 100::/64 discard-only.
    if in_v6(ip, v6([0x100, 0, 0, 0, 0, 0, 0, 0]), 64) {
        return Err(BlockReason::DiscardOnly);
    }
    if ip == v6([0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254]) {
        return Err(BlockReason::Metadata);
    }
    if in_v6(ip, v6([0xfc00, 0, 0, 0, 0, 0, 0, 0]), 7) {
        return Err(BlockReason::UniqueLocal);
    }
    if in_v6(ip, v6([0xfe80, 0, 0, 0, 0, 0, 0, 0]), 10) {
        return Err(BlockReason::LinkLocal);
    }
    if in_v6(ip, v6([0xfec0, 0, 0, 0, 0, 0, 0, 0]), 10) {
        return Err(BlockReason::SiteLocal);
    }
    if in_v6(ip, v6([0xff00, 0, 0, 0, 0, 0, 0, 0]), 8) {
        return Err(BlockReason::Multicast);
    }
    // Everything else outside global unicast 2000::/3 (incl. 64:ff9b:1::/48 local NAT64,
    // the rest of 100::/8, 5f00::/16 SRv6) is reserved.
    if !in_v6(ip, v6([0x2000, 0, 0, 0, 0, 0, 0, 0]), 3) {
        return Err(BlockReason::Reserved);
    }
    // 2001::/32 Teredo: refused outright (the embedded server/client are obfuscated).
    if in_v6(ip, v6([0x2001, 0, 0, 0, 0, 0, 0, 0]), 32) {
        return Err(BlockReason::Teredo);
    }
    if in_v6(ip, v6([0x2001, 0x2, 0, 0, 0, 0, 0, 0]), 48) {
        return Err(BlockReason::Benchmarking);
    }
    // 2001::/23 IETF protocol assignments (AMT, AS112, ORCHID, ...): not web servers.
    if in_v6(ip, v6([0x2001, 0, 0, 0, 0, 0, 0, 0]), 23) {
        return Err(BlockReason::Reserved);
    }
    if in_v6(ip, v6([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0]), 32) || in_v6(ip, v6([0x3fff, 0, 0, 0, 0, 0, 0, 0]), 20) {
        return Err(BlockReason::Documentation);
    }
    // 2002::/16 6to4: the IPv4 address is in bits 16..48.
    if in_v6(ip, v6([0x2002, 0, 0, 0, 0, 0, 0, 0]), 16) {
        let v4 = Ipv4Addr::from(((bits >> 80) & 0xffff_ffff) as u32);
        return embedded(Embedding::SixToFour, v4);
    }
    Ok(())
}

/// Name suffixes (and the names themselves) that only ever mean something locally.
const LOCAL_SUFFIXES: &[&str] = &[
    "localhost",
    "local",
    "internal",
    "home.arpa",
    "localdomain",
    // RFC 6762 appendix G: names commonly used on private networks.
    "intranet",
    "private",
    "corp",
    "home",
    "lan",
];

/// Whether a host name may be looked up; refuses local-only names before any DNS query.
///
/// A string that parses as an IP address is classified as one.
pub fn check_host_name(host: &str) -> Result<(), BlockReason> {
    let bare = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return classify(ip);
    }
    let lower = host.to_ascii_lowercase();
    // One trailing dot (a fully qualified spelling) is judged like the name without it.
    let name = lower.strip_suffix('.').unwrap_or(&lower);
    if name.is_empty() || name.split('.').any(str::is_empty) {
        return Err(BlockReason::LocalName(host.to_string()));
    }
    for suffix in LOCAL_SUFFIXES {
        if name == *suffix || name.strip_suffix(suffix).is_some_and(|rest| rest.ends_with('.')) {
            return Err(BlockReason::LocalName(host.to_string()));
        }
    }
    if !name.contains('.') {
        return Err(BlockReason::SingleLabelName(host.to_string()));
    }
    // A last label of digits or 0x-hex is an inet_aton spelling (getaddrinfo would accept it).
    let last = name.rsplit('.').next().unwrap_or(name);
    let numeric = last.bytes().all(|b| b.is_ascii_digit())
        || last.strip_prefix("0x").is_some_and(|h| h.bytes().all(|b| b.is_ascii_hexdigit()));
    if numeric {
        return Err(BlockReason::NumericName(host.to_string()));
    }
    Ok(())
}

/// Which addresses a fetch may reach. Production uses `public_only()`; tests may allow
/// exact extra IPs (used by the loopback tests) — never reachable from user input.
#[derive(Clone, Debug, Default)]
pub struct AddressPolicy {
    /// Exact addresses allowed in addition to the public ones.
    extra: HashSet<IpAddr>,
}

impl AddressPolicy {
    /// Only globally reachable addresses.
    pub fn public_only() -> Self {
        Self::default()
    }

    /// Public addresses plus exactly these (for tests against loopback servers).
    pub fn allowing(ips: impl IntoIterator<Item = IpAddr>) -> Self {
        Self { extra: ips.into_iter().collect() }
    }

    /// Whether `ip` may be connected to; the error names the address and the reason.
    pub fn permits(&self, ip: IpAddr) -> Result<(), BlockReason> {
        if self.extra.contains(&ip) {
            return Ok(());
        }
        classify(ip).map_err(|reason| BlockReason::Address { ip, reason: Box::new(reason) })
    }

    /// Whether a parsed URL host may be reached (IP literals classified, names checked).
    pub fn permits_host(&self, host: &url::Host<&str>) -> Result<(), BlockReason> {
        match host {
            url::Host::Ipv4(v4) => self.permits(IpAddr::V4(*v4)),
            url::Host::Ipv6(v6) => self.permits(IpAddr::V6(*v6)),
            url::Host::Domain(name) => check_host_name(name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(s: &str) -> IpAddr {
        IpAddr::V4(s.parse().unwrap())
    }

    fn v6(s: &str) -> IpAddr {
        IpAddr::V6(s.parse().unwrap())
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[track_caller]
    fn refused(s: &str, expected: BlockReason) {
        assert_eq!(classify(ip(s)), Err(expected), "{s}");
    }

    #[track_caller]
    fn allowed(s: &str) {
        assert_eq!(classify(ip(s)), Ok(()), "{s}");
    }

    #[track_caller]
    fn embedded_refused(s: &str, kind: Embedding, inner: &str, reason: BlockReason) {
        assert_eq!(
            classify(ip(s)),
            Err(BlockReason::Embedded { kind, v4: inner.parse().unwrap(), reason: Box::new(reason) }),
            "{s}"
        );
    }

    #[test]
    fn public_addresses_allowed() {
        for s in [
            "8.8.8.8",
            "1.1.1.1",
            "9.9.9.9",
            "93.184.215.14",
            "2606:4700:4700::1111",
            "2001:4860:4860::8888",
            "2a00:1450:4001:82b::200e",
        ] {
            allowed(s);
        }
    }

    #[test]
    fn v4_unspecified_this_network() {
        refused("0.0.0.0", BlockReason::Unspecified);
        refused("0.255.255.255", BlockReason::Unspecified);
        allowed("1.0.0.0");
    }

    #[test]
    fn v4_private() {
        refused("10.0.0.0", BlockReason::Private);
        refused("10.255.255.255", BlockReason::Private);
        allowed("9.255.255.255");
        allowed("11.0.0.0");
        refused("172.16.0.0", BlockReason::Private);
        refused("172.31.255.255", BlockReason::Private);
        allowed("172.15.255.255");
        allowed("172.32.0.0");
        refused("192.168.0.0", BlockReason::Private);
        refused("192.168.255.255", BlockReason::Private);
        allowed("192.167.255.255");
        allowed("192.169.0.0");
    }

    #[test]
    fn v4_cgnat() {
        refused("100.64.0.0", BlockReason::SharedCgnat);
        refused("100.64.0.1", BlockReason::SharedCgnat);
        refused("100.127.255.255", BlockReason::SharedCgnat);
        allowed("100.63.255.255");
        allowed("100.128.0.0");
    }

    #[test]
    fn v4_loopback() {
        refused("127.0.0.0", BlockReason::Loopback);
        refused("127.0.0.1", BlockReason::Loopback);
        refused("127.0.0.2", BlockReason::Loopback);
        refused("127.255.255.255", BlockReason::Loopback);
        allowed("126.255.255.255");
        allowed("128.0.0.0");
    }

    #[test]
    fn v4_link_local_and_metadata() {
        refused("169.254.0.0", BlockReason::LinkLocal);
        refused("169.254.169.253", BlockReason::LinkLocal);
        refused("169.254.169.254", BlockReason::Metadata);
        refused("169.254.169.255", BlockReason::LinkLocal);
        refused("169.254.255.255", BlockReason::LinkLocal);
        allowed("169.253.255.255");
        allowed("169.255.0.0");
        refused("168.63.129.16", BlockReason::Metadata);
        allowed("168.63.129.15");
    }

    #[test]
    fn v4_reserved_documentation_benchmarking() {
        refused("192.0.0.0", BlockReason::Reserved);
        refused("192.0.0.255", BlockReason::Reserved);
        allowed("191.255.255.255");
        refused("192.0.2.0", BlockReason::Documentation);
        refused("192.0.2.255", BlockReason::Documentation);
        allowed("192.0.1.255");
        allowed("192.0.3.0");
        refused("192.88.99.1", BlockReason::Reserved);
        refused("198.18.0.0", BlockReason::Benchmarking);
        refused("198.19.255.255", BlockReason::Benchmarking);
        allowed("198.17.255.255");
        allowed("198.20.0.0");
        refused("198.51.100.0", BlockReason::Documentation);
        refused("198.51.100.255", BlockReason::Documentation);
        allowed("198.51.99.255");
        allowed("198.51.101.0");
        refused("203.0.113.0", BlockReason::Documentation);
        refused("203.0.113.255", BlockReason::Documentation);
        allowed("203.0.112.255");
        allowed("203.0.114.0");
    }

    #[test]
    fn v4_multicast_reserved_broadcast() {
        refused("224.0.0.0", BlockReason::Multicast);
        refused("239.255.255.255", BlockReason::Multicast);
        allowed("223.255.255.255");
        refused("240.0.0.0", BlockReason::Reserved);
        refused("255.255.255.254", BlockReason::Reserved);
        refused("255.255.255.255", BlockReason::Broadcast);
    }

    #[test]
    fn v6_basic_ranges() {
        refused("::", BlockReason::Unspecified);
        refused("::1", BlockReason::Loopback);
        refused("fe80::", BlockReason::LinkLocal);
        refused("febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", BlockReason::LinkLocal);
        refused("fec0::", BlockReason::SiteLocal);
        refused("feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", BlockReason::SiteLocal);
        refused("fc00::", BlockReason::UniqueLocal);
        refused("fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", BlockReason::UniqueLocal);
        refused("fd00:ec2::254", BlockReason::Metadata);
        refused("fd00:ec2::253", BlockReason::UniqueLocal);
        refused("fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", BlockReason::Reserved);
        refused("fe00::", BlockReason::Reserved);
        refused("ff00::", BlockReason::Multicast);
        refused("ff02::1", BlockReason::Multicast);
        refused("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", BlockReason::Multicast);
    }

    #[test]
    fn v6_discard_documentation_teredo() {
        refused("100::", BlockReason::DiscardOnly);
        refused("100::ffff:ffff:ffff:ffff", BlockReason::DiscardOnly);
        refused("100:0:0:1::", BlockReason::Reserved);
        refused("2001:db8::", BlockReason::Documentation);
        refused("2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", BlockReason::Documentation);
        allowed("2001:db9::1");
        allowed("2001:db7:ffff:ffff:ffff:ffff:ffff:ffff");
        refused("3fff::", BlockReason::Documentation);
        refused("3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", BlockReason::Documentation);
        allowed("3fff:1000::1");
        refused("2001::", BlockReason::Teredo);
        refused("2001:0:4136:e378:8000:63bf:3fff:fdd2", BlockReason::Teredo);
        refused("2001:0:ffff:ffff:ffff:ffff:ffff:ffff", BlockReason::Teredo);
        refused("2001:1::1", BlockReason::Reserved);
        refused("2001:2::", BlockReason::Benchmarking);
        refused("2001:2:0:ffff:ffff:ffff:ffff:ffff", BlockReason::Benchmarking);
        refused("2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", BlockReason::Reserved);
        allowed("2001:200::1");
    }

    #[test]
    fn v6_outside_global_unicast_reserved() {
        refused("1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", BlockReason::Reserved);
        allowed("2000::1");
        allowed("3ffe:ffff::1");
        refused("4000::", BlockReason::Reserved);
        refused("5f00::1", BlockReason::Reserved);
        refused("64:ff9b:1::1", BlockReason::Reserved);
    }

    #[test]
    fn v6_ipv4_mapped() {
        embedded_refused("::ffff:127.0.0.1", Embedding::Mapped, "127.0.0.1", BlockReason::Loopback);
        embedded_refused("::ffff:7f00:1", Embedding::Mapped, "127.0.0.1", BlockReason::Loopback);
        embedded_refused("::ffff:10.0.0.1", Embedding::Mapped, "10.0.0.1", BlockReason::Private);
        embedded_refused("::ffff:169.254.169.254", Embedding::Mapped, "169.254.169.254", BlockReason::Metadata);
        embedded_refused("::ffff:0.0.0.0", Embedding::Mapped, "0.0.0.0", BlockReason::Unspecified);
        allowed("::ffff:8.8.8.8");
    }

    #[test]
    fn v6_ipv4_compatible_and_translated() {
        embedded_refused("::127.0.0.1", Embedding::Compatible, "127.0.0.1", BlockReason::Loopback);
        embedded_refused("::192.168.1.1", Embedding::Compatible, "192.168.1.1", BlockReason::Private);
        // ::2 embeds 0.0.0.2, part of "this network".
        embedded_refused("::2", Embedding::Compatible, "0.0.0.2", BlockReason::Unspecified);
        allowed("::8.8.8.8");
        embedded_refused("::ffff:0:127.0.0.1", Embedding::Translated, "127.0.0.1", BlockReason::Loopback);
        allowed("::ffff:0:8.8.8.8");
    }

    #[test]
    fn v6_nat64() {
        embedded_refused("64:ff9b::127.0.0.1", Embedding::Nat64, "127.0.0.1", BlockReason::Loopback);
        embedded_refused("64:ff9b::a9fe:a9fe", Embedding::Nat64, "169.254.169.254", BlockReason::Metadata);
        embedded_refused("64:ff9b::172.16.0.1", Embedding::Nat64, "172.16.0.1", BlockReason::Private);
        allowed("64:ff9b::8.8.8.8");
        allowed("64:ff9b::101:101");
    }

    #[test]
    fn v6_6to4() {
        embedded_refused("2002:7f00:1::", Embedding::SixToFour, "127.0.0.1", BlockReason::Loopback);
        embedded_refused("2002:c0a8:101::1", Embedding::SixToFour, "192.168.1.1", BlockReason::Private);
        embedded_refused("2002:a00:1:ffff:ffff:ffff:ffff:ffff", Embedding::SixToFour, "10.0.0.1", BlockReason::Private);
        embedded_refused("2002::", Embedding::SixToFour, "0.0.0.0", BlockReason::Unspecified);
        allowed("2002:808:808::1");
        allowed("2003::1");
    }

    #[test]
    fn host_names() {
        for name in [
            "localhost",
            "LOCALHOST",
            "localhost.",
            "LOCALHOST.",
            "a.localhost",
            "a.b.localhost.",
            "printer.local",
            "metadata.google.internal",
            "router.home.arpa",
            "home.arpa",
            "box.localdomain",
            "nas.lan",
            "intranet",
        ] {
            assert_eq!(check_host_name(name), Err(BlockReason::LocalName(name.to_string())), "{name}");
        }
        for name in ["myhost", "myhost.", "com."] {
            assert_eq!(check_host_name(name), Err(BlockReason::SingleLabelName(name.to_string())), "{name}");
        }
        for name in ["", ".", "a..b", "example.com.."] {
            assert!(check_host_name(name).is_err(), "{name:?}");
        }
        for name in ["foo.123", "foo.0x7f"] {
            assert_eq!(check_host_name(name), Err(BlockReason::NumericName(name.to_string())), "{name}");
        }
        for name in [
            "example.com",
            "example.com.",
            "notlocalhost.com",
            "localhost.example.com",
            "local.example.org",
            "arxiv.org",
            "xn--bcher-kva.example",
        ] {
            assert_eq!(check_host_name(name), Ok(()), "{name}");
        }
        // IP spellings given as names are classified as addresses.
        assert_eq!(check_host_name("127.0.0.1"), Err(BlockReason::Loopback));
        assert_eq!(check_host_name("[::1]"), Err(BlockReason::Loopback));
        assert_eq!(check_host_name("8.8.8.8"), Ok(()));
    }

    /// The host of `url` as the fetcher sees it, judged by the public-only policy.
    fn url_verdict(url: &str) -> Result<(), BlockReason> {
        let parsed = url::Url::parse(url).unwrap();
        let host = parsed.host().unwrap();
        AddressPolicy::public_only().permits_host(&host)
    }

    #[track_caller]
    fn url_refused(url: &str, class: BlockReason) {
        match url_verdict(url) {
            Err(reason) => assert_eq!(reason.class(), &class, "{url}: {reason}"),
            Ok(()) => panic!("{url} was allowed"),
        }
    }

    #[test]
    fn url_spellings_of_loopback_are_normalised_and_refused() {
        // The WHATWG URL parser turns every IPv4 spelling into dotted decimal.
        for url in [
            "http://2130706433/",
            "http://0177.0.0.1/",
            "http://0x7f.0.0.1/",
            "http://0x7f.1/",
            "http://0x7f000001/",
            "http://127.1/",
            "http://127.0.1/",
            "http://0177.1/",
            "http://127.0.0.1./",
        ] {
            let parsed = url::Url::parse(url).unwrap();
            assert_eq!(parsed.host(), Some(url::Host::Ipv4(Ipv4Addr::LOCALHOST)), "{url}");
            url_refused(url, BlockReason::Loopback);
        }
        url_refused("http://[::1]/", BlockReason::Loopback);
        url_refused("http://0/", BlockReason::Unspecified);
        url_refused("http://100.64.0.1/", BlockReason::SharedCgnat);
        url_refused("http://169.254.169.254/latest/meta-data", BlockReason::Metadata);
        url_refused("http://[fd00:ec2::254]/", BlockReason::Metadata);
        url_refused("http://0xa9fea9fe/", BlockReason::Metadata);
        url_refused("http://3232235777/", BlockReason::Private);
        // IDNA mapping (full-width characters) cannot smuggle a loopback address or name.
        url_refused("http://\u{ff11}\u{ff12}\u{ff17}.0.0.1/", BlockReason::Loopback);
        assert!(url_verdict("http://\u{ff4c}ocalhost/").is_err());
    }

    #[test]
    fn url_spellings_of_mapped_loopback_refused() {
        for url in ["http://[::ffff:127.0.0.1]/", "http://[::ffff:7f00:1]/"] {
            let reason = url_verdict(url).unwrap_err();
            assert_eq!(
                reason.class(),
                &BlockReason::Embedded {
                    kind: Embedding::Mapped,
                    v4: Ipv4Addr::LOCALHOST,
                    reason: Box::new(BlockReason::Loopback),
                },
                "{url}"
            );
        }
        assert_eq!(url_verdict("http://[::ffff:8.8.8.8]/"), Ok(()));
    }

    #[test]
    fn url_spellings_of_local_names_refused() {
        for url in [
            "http://localhost/",
            "http://LOCALHOST./",
            "http://a.localhost/",
            "http://localhost:8080/x",
            "https://metadata.google.internal/computeMetadata/v1/",
            "http://intranet/",
        ] {
            assert!(url_verdict(url).is_err(), "{url}");
        }
        assert_eq!(url_verdict("https://example.com/a.pdf"), Ok(()));
        assert_eq!(url_verdict("http://8.8.8.8/"), Ok(()));
    }

    #[test]
    fn policy_allows_exact_extra_addresses_only() {
        let policy = AddressPolicy::allowing([v4("127.0.0.1")]);
        assert_eq!(policy.permits(v4("127.0.0.1")), Ok(()));
        assert_eq!(policy.permits(v4("8.8.8.8")), Ok(()));
        let err = policy.permits(v4("127.0.0.2")).unwrap_err();
        assert_eq!(err.class(), &BlockReason::Loopback);
        assert_eq!(err.to_string(), "127.0.0.2 is a loopback address");
        assert!(policy.permits(v6("::1")).is_err());
        assert!(policy.permits(v6("::ffff:127.0.0.1")).is_err());
        // Names are never exempted by the policy.
        assert!(policy.permits_host(&url::Host::Domain("localhost")).is_err());
        assert!(AddressPolicy::public_only().permits(v4("127.0.0.1")).is_err());
    }

    #[test]
    fn messages_name_the_reason() {
        let err = AddressPolicy::public_only().permits(v6("::ffff:10.1.2.3")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "::ffff:10.1.2.3 is an IPv4-mapped IPv6 address embedding 10.1.2.3, which is a private-use address"
        );
        assert_eq!(BlockReason::LocalName("localhost".into()).to_string(), "localhost is a local-only host name");
    }
}
