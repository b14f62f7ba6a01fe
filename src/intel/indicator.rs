//! One indicator: a value of a kind (Zeek's `Intel::` types), its metadata and its expiry.
//!
//! Values are kept in a canonical form ([`IndicatorType::normalize`]), so that the same
//! indicator written two ways (`10.0.0.1` and `::ffff:10.0.0.1`, `Evil.COM.` and `evil.com`)
//! is one indicator of a set and matches the same events.

use std::fmt;
use std::net::{IpAddr, Ipv6Addr};

use serde::{Deserialize, Serialize};

use crate::setting::{Choice, ChoiceName};

/// The kind of an indicator: Zeek's Intel framework's types (`Intel::ADDR`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IndicatorType {
    /// An IPv4 or IPv6 address (`Intel::ADDR`).
    Addr,
    /// A network, `10.0.0.0/8` (`Intel::SUBNET`).
    Subnet,
    /// A domain name; matches its subdomains too (`Intel::DOMAIN`).
    Domain,
    /// A URL without its scheme, `evil.com/a/b` (`Intel::URL`).
    Url,
    /// A file hash (MD5, SHA-1 or SHA-256, hex) (`Intel::FILE_HASH`).
    FileHash,
    /// A certificate hash (hex) (`Intel::CERT_HASH`).
    CertHash,
    /// A software name, as an HTTP User-Agent (`Intel::SOFTWARE`).
    Software,
    /// A user name (`Intel::USER_NAME`).
    UserName,
    /// An email address (`Intel::EMAIL`).
    Email,
}

impl IndicatorType {
    /// Every type, in order.
    pub const ALL: [IndicatorType; 9] = [
        IndicatorType::Addr,
        IndicatorType::Subnet,
        IndicatorType::Domain,
        IndicatorType::Url,
        IndicatorType::FileHash,
        IndicatorType::CertHash,
        IndicatorType::Software,
        IndicatorType::UserName,
        IndicatorType::Email,
    ];

    /// weir's name: `addr`, `subnet`, `domain`, `url`, `file_hash`, `cert_hash`, `software`,
    /// `user_name`, `email`.
    pub fn name(self) -> &'static str {
        match self {
            IndicatorType::Addr => "addr",
            IndicatorType::Subnet => "subnet",
            IndicatorType::Domain => "domain",
            IndicatorType::Url => "url",
            IndicatorType::FileHash => "file_hash",
            IndicatorType::CertHash => "cert_hash",
            IndicatorType::Software => "software",
            IndicatorType::UserName => "user_name",
            IndicatorType::Email => "email",
        }
    }

    /// Zeek's name: `Intel::ADDR`, ...
    pub fn zeek_name(self) -> &'static str {
        match self {
            IndicatorType::Addr => "Intel::ADDR",
            IndicatorType::Subnet => "Intel::SUBNET",
            IndicatorType::Domain => "Intel::DOMAIN",
            IndicatorType::Url => "Intel::URL",
            IndicatorType::FileHash => "Intel::FILE_HASH",
            IndicatorType::CertHash => "Intel::CERT_HASH",
            IndicatorType::Software => "Intel::SOFTWARE",
            IndicatorType::UserName => "Intel::USER_NAME",
            IndicatorType::Email => "Intel::EMAIL",
        }
    }

    /// The type of a name: weir's (`addr`, `file_hash`), Zeek's (`Intel::ADDR`) or Zeek's
    /// without the prefix (`ADDR`), in any case.
    pub fn from_name(name: &str) -> Option<IndicatorType> {
        let name = name.trim();
        let bare = name
            .strip_prefix("Intel::")
            .or_else(|| name.strip_prefix("intel::"))
            .unwrap_or(name);
        IndicatorType::ALL
            .into_iter()
            .find(|t| t.name().eq_ignore_ascii_case(bare))
    }

    /// Whether `value` is already in the form [`IndicatorType::normalize`] gives it, mostly
    /// without making that form: a set file holds up to millions of indicators, and making
    /// each again on load was a tenth of a retro match's time. An IPv4 address that std parses
    /// as one is canonical: its parser takes exactly the dotted quad without leading zeros or
    /// blanks that its display writes. Domains, hashes and e-mail addresses are checked byte
    /// by byte against what `normalize` would change.
    pub fn is_canonical(self, value: &str) -> bool {
        let trimmed = !value.is_empty() && value.trim() == value;
        let no_upper = || !value.bytes().any(|b| b.is_ascii_uppercase());
        let no_blank = || !value.bytes().any(|b| b.is_ascii_whitespace());
        match self {
            IndicatorType::Addr if value.parse::<std::net::Ipv4Addr>().is_ok() => true,
            IndicatorType::Domain => {
                trimmed && !value.ends_with('.') && no_upper() && no_blank() && !value.contains('/')
            }
            IndicatorType::FileHash | IndicatorType::CertHash => {
                let lower_hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
                trimmed && value.bytes().all(lower_hex)
            }
            IndicatorType::Email => trimmed && value.contains('@') && no_upper() && no_blank(),
            IndicatorType::Software | IndicatorType::UserName => trimmed,
            _ => self.normalize(value).as_deref() == Ok(value),
        }
    }

    /// The canonical form of `value` as an indicator of this type, or why it is not one.
    ///
    /// - `addr`: an address as Rust prints it (an IPv4-mapped IPv6 address as IPv4);
    /// - `subnet`: the network with its host bits cleared, `10.0.0.0/8` (IPv4 as IPv4);
    /// - `domain`: lowercase ASCII, without a trailing dot, not empty, no blanks or `/`;
    /// - `url`: without `http://` or `https://`, the host part in lowercase;
    /// - `file_hash`, `cert_hash`: lowercase hex digits (any length, Zeek's rule);
    /// - `email`: lowercase; `software`, `user_name`: as written (not empty).
    pub fn normalize(self, value: &str) -> Result<String, String> {
        let value = value.trim();
        if value.is_empty() {
            return Err("empty value".into());
        }
        match self {
            IndicatorType::Addr => parse_addr(value)
                .map(|a| display_addr(canonical_ip(a)))
                .ok_or_else(|| "not an address".into()),
            IndicatorType::Subnet => parse_subnet(value)
                .map(|(net, len)| display_subnet(net, len))
                .ok_or_else(|| "not a subnet (ADDRESS/LENGTH)".into()),
            IndicatorType::Domain => {
                let d = value.trim_end_matches('.').to_ascii_lowercase();
                if d.is_empty() || d.bytes().any(|b| b.is_ascii_whitespace() || b == b'/') {
                    Err("not a domain name".into())
                } else {
                    Ok(d)
                }
            }
            IndicatorType::Url => {
                let lower = value.to_ascii_lowercase();
                let rest = if lower.starts_with("http://") {
                    &value[7..]
                } else if lower.starts_with("https://") {
                    &value[8..]
                } else {
                    value
                };
                let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
                if host.is_empty() || rest.bytes().any(|b| b.is_ascii_whitespace()) {
                    return Err("not a URL (HOST/PATH, the scheme optional)".into());
                }
                Ok(format!("{}{path}", host.to_ascii_lowercase()))
            }
            IndicatorType::FileHash | IndicatorType::CertHash => {
                let h = value.to_ascii_lowercase();
                if h.bytes().all(|b| b.is_ascii_hexdigit()) {
                    Ok(h)
                } else {
                    Err("not a hash (hex digits)".into())
                }
            }
            IndicatorType::Email => {
                if value.contains('@') && !value.bytes().any(|b| b.is_ascii_whitespace()) {
                    Ok(value.to_ascii_lowercase())
                } else {
                    Err("not an email address".into())
                }
            }
            IndicatorType::Software | IndicatorType::UserName => Ok(value.to_string()),
        }
    }
}

/// `--type` of `weir intel add`: weir's names with `-` for `_` (`file-hash`), the command
/// line's spelling of words; [`IndicatorType::name`], `Display` and serde keep `file_hash`.
impl Choice for IndicatorType {
    const WHAT: &'static str = "indicator type";
    const CHOICES: &'static [ChoiceName<IndicatorType>] = &[
        ChoiceName::new("addr", IndicatorType::Addr, "an IPv4 or IPv6 address"),
        ChoiceName::new("subnet", IndicatorType::Subnet, "a network, 10.0.0.0/8"),
        ChoiceName::new(
            "domain",
            IndicatorType::Domain,
            "a domain name, matching its subdomains too",
        ),
        ChoiceName::new("url", IndicatorType::Url, "a URL without its scheme"),
        ChoiceName::new(
            "file-hash",
            IndicatorType::FileHash,
            "a file hash (MD5, SHA-1 or SHA-256, hex)",
        ),
        ChoiceName::new(
            "cert-hash",
            IndicatorType::CertHash,
            "a certificate hash (hex)",
        ),
        ChoiceName::new(
            "software",
            IndicatorType::Software,
            "a software name, as an HTTP User-Agent",
        ),
        ChoiceName::new("user-name", IndicatorType::UserName, "a user name"),
        ChoiceName::new("email", IndicatorType::Email, "an email address"),
    ];
}

impl fmt::Display for IndicatorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a feed says about an indicator (each optional).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Meta {
    /// Where it comes from (`meta.source`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// What it is (`meta.desc`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// How sure the feed is, as it writes it (a number 0-100 in STIX and CIF).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<u32>,
}

/// One indicator of a set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Indicator {
    /// The value, canonical for its kind ([`IndicatorType::normalize`]).
    pub value: String,
    /// Its kind.
    #[serde(rename = "type")]
    pub kind: IndicatorType,
    /// What the feed says about it.
    #[serde(default, skip_serializing_if = "is_default_meta")]
    pub meta: Meta,
    /// When it stops matching (nanoseconds since the epoch); `None`: never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<i64>,
}

fn is_default_meta(m: &Meta) -> bool {
    *m == Meta::default()
}

impl Indicator {
    /// An indicator of `value` (normalized) and `kind`, without metadata nor expiry.
    pub fn new(value: &str, kind: IndicatorType) -> Result<Indicator, String> {
        Ok(Indicator {
            value: kind.normalize(value)?,
            kind,
            meta: Meta::default(),
            valid_until: None,
        })
    }

    /// Whether it has expired at `now` (nanoseconds since the epoch): `valid_until` is not
    /// after `now`.
    pub fn expired(&self, now: i64) -> bool {
        self.valid_until.is_some_and(|t| t <= now)
    }

    /// The indicator as an [`IndicatorRef`] borrowing its strings.
    pub fn view(&self) -> IndicatorRef<'_> {
        IndicatorRef {
            value: &self.value,
            kind: self.kind,
            meta: MetaRef {
                source: self.meta.source.as_deref(),
                description: self.meta.description.as_deref(),
                confidence: self.meta.confidence,
            },
            valid_until: self.valid_until,
        }
    }
}

/// [`Meta`] borrowed from where a set keeps it (sets share the texts of equal metadata).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct MetaRef<'a> {
    /// Where it comes from (`meta.source`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<&'a str>,
    /// What it is (`meta.desc`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<&'a str>,
    /// How sure the feed is, as it writes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence: Option<u32>,
}

impl MetaRef<'_> {
    /// Whether it says nothing.
    pub fn is_empty(&self) -> bool {
        self.source.is_none() && self.description.is_none() && self.confidence.is_none()
    }

    /// An owned copy.
    pub fn to_meta(&self) -> Meta {
        Meta {
            source: self.source.map(str::to_string),
            description: self.description.map(str::to_string),
            confidence: self.confidence,
        }
    }
}

/// An indicator of a set (or of a [`super::Matcher`]) borrowed from the set's
/// compact storage: what [`Indicator`] owns, as references. It serializes as [`Indicator`]
/// does, byte for byte (the set file's `indicators` are these).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct IndicatorRef<'a> {
    /// The value, canonical for its kind ([`IndicatorType::normalize`]).
    pub value: &'a str,
    /// Its kind.
    #[serde(rename = "type")]
    pub kind: IndicatorType,
    /// What the feed says about it.
    #[serde(skip_serializing_if = "MetaRef::is_empty")]
    pub meta: MetaRef<'a>,
    /// When it stops matching (nanoseconds since the epoch); `None`: never.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<i64>,
}

impl IndicatorRef<'_> {
    /// Whether it has expired at `now` (as [`Indicator::expired`]).
    pub fn expired(&self, now: i64) -> bool {
        self.valid_until.is_some_and(|t| t <= now)
    }

    /// An owned copy.
    pub fn to_indicator(&self) -> Indicator {
        Indicator {
            value: self.value.to_string(),
            kind: self.kind,
            meta: self.meta.to_meta(),
            valid_until: self.valid_until,
        }
    }
}

/// An address from text: `10.0.0.1`, `2001:db8::1`, also in brackets `[::1]`.
pub fn parse_addr(text: &str) -> Option<IpAddr> {
    let t = text.trim();
    let t = t
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .unwrap_or(t);
    t.parse().ok()
}

/// A network from text, its host bits cleared: (network, prefix length), IPv4 as IPv4.
pub fn parse_subnet(text: &str) -> Option<(IpAddr, u8)> {
    let (a, l) = text.trim().split_once('/')?;
    let addr = canonical_ip(parse_addr(a)?);
    let len: u8 = l.trim().parse().ok()?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    if len > max {
        return None;
    }
    let wide = mapped_len(addr, len);
    let net = from_bits(to_bits(addr) & mask(wide));
    Some((canonical_ip(net), len))
}

/// An IPv4-mapped IPv6 address as IPv4, any other as it is.
pub fn canonical_ip(a: IpAddr) -> IpAddr {
    match a {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => a,
        },
        v4 => v4,
    }
}

/// The address as 128 bits, IPv4 as IPv4-mapped IPv6 (as weir compares addresses).
pub fn to_bits(a: IpAddr) -> u128 {
    match a {
        IpAddr::V4(v4) => u128::from(v4.to_ipv6_mapped()),
        IpAddr::V6(v6) => u128::from(v6),
    }
}

fn from_bits(b: u128) -> IpAddr {
    IpAddr::V6(Ipv6Addr::from(b))
}

/// The prefix length of a network over [`to_bits`]: an IPv4 length plus 96.
pub fn mapped_len(net: IpAddr, len: u8) -> u8 {
    if canonical_ip(net).is_ipv4() {
        len.saturating_add(96).min(128)
    } else {
        len.min(128)
    }
}

/// The mask of the first `len` of 128 bits.
pub fn mask(len: u8) -> u128 {
    if len == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(len.min(128)))
    }
}

fn display_addr(a: IpAddr) -> String {
    a.to_string()
}

fn display_subnet(net: IpAddr, len: u8) -> String {
    format!("{net}/{len}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast check of a stored IPv4 address agrees with normalizing it.
    #[test]
    fn canonical_addresses_are_recognized_as_normalize_writes_them() {
        for v in [
            "1.2.3.4",
            "01.2.3.4",
            "1.2.3.04",
            "001.002.003.004",
            " 1.2.3.4",
            "1.2.3.4 ",
            "1.2.3",
            "1.2.3.4.5",
            "256.1.1.1",
            "0.0.0.0",
            "255.255.255.255",
            "::ffff:1.2.3.4",
            "::1",
            "2001:DB8::1",
            "2001:db8::1",
            "0x1.2.3.4",
            "+1.2.3.4",
            "",
        ] {
            let want = IndicatorType::Addr.normalize(v).as_deref() == Ok(v);
            assert_eq!(IndicatorType::Addr.is_canonical(v), want, "{v:?}");
        }
        assert!(IndicatorType::Addr.is_canonical("10.0.0.1"));
        assert!(!IndicatorType::Addr.is_canonical("010.0.0.1"));
    }

    /// For every type, the byte checks agree with normalizing, on the forms `normalize`
    /// changes (case, blanks of either kind, dots, schemes) and on those it refuses.
    #[test]
    fn canonical_values_of_every_type_are_recognized_as_normalize_writes_them() {
        let values = [
            "",
            " ",
            "evil.example",
            "Evil.example",
            "evil.example.",
            "evil.example..",
            ".",
            " evil.example",
            "evil.example\u{a0}",
            "\u{a0}evil.example",
            "evil example",
            "evil.example/x",
            "bücher.example",
            "BÜCHER.example",
            "d41d8cd98f00b204e9800998ecf8427e",
            "D41D8CD98F00B204E9800998ECF8427E",
            "d41d8cd98f00b204e9800998ecf8427g",
            "0",
            "a@b.example",
            "A@b.example",
            "a @b.example",
            "ab.example",
            "Mozilla/5.0 (X11)",
            " Mozilla",
            "Mozilla\t",
            "root",
            "http://evil.example/x",
            "evil.example/x",
            "EVIL.example/X",
            "10.0.0.0/8",
            "10.0.0.1/8",
            "::1",
        ];
        let mut checked = 0;
        for kind in IndicatorType::ALL {
            for v in values {
                let want = kind.normalize(v).as_deref() == Ok(v);
                assert_eq!(kind.is_canonical(v), want, "{kind} {v:?}");
                checked += 1;
            }
        }
        assert_eq!(checked, values.len() * IndicatorType::ALL.len());
    }

    #[test]
    fn names_round_trip() {
        for t in IndicatorType::ALL {
            assert_eq!(IndicatorType::from_name(t.name()), Some(t));
            assert_eq!(IndicatorType::from_name(t.zeek_name()), Some(t));
        }
        assert_eq!(IndicatorType::from_name("Intel::nope"), None);
    }

    #[test]
    fn values_are_canonical() {
        use IndicatorType as T;
        // (type, as written, canonical form or None when refused)
        let cases: [(T, &str, Option<&str>); 11] = [
            (T::Addr, "::ffff:10.0.0.1", Some("10.0.0.1")),
            (T::Addr, "[2001:DB8::1]", Some("2001:db8::1")),
            (T::Addr, "10.0.0.256", None),
            (T::Subnet, "10.1.2.3/8", Some("10.0.0.0/8")),
            (T::Subnet, "10.0.0.0/33", None),
            (T::Domain, "Evil.COM.", Some("evil.com")),
            (T::Url, "HTTPS://Evil.com/A?b", Some("evil.com/A?b")),
            (T::FileHash, "ABCdef01", Some("abcdef01")),
            (T::FileHash, "xyz", None),
            (T::Email, "nobody", None),
            (T::Software, "  ", None),
        ];
        for (t, written, canonical) in cases {
            let got = t.normalize(written);
            match canonical {
                Some(want) => assert_eq!(got.as_deref(), Ok(want), "{t} {written:?}"),
                None => assert!(got.is_err(), "{t} {written:?}: {got:?}"),
            }
        }
    }

    #[test]
    fn subnets_mask_in_the_mapped_space() {
        let (net, len) = parse_subnet("192.168.1.7/24").unwrap();
        let a = to_bits("192.168.1.200".parse().unwrap());
        assert_eq!(a & mask(mapped_len(net, len)), to_bits(net));
        let b = to_bits("192.168.2.1".parse().unwrap());
        assert_ne!(b & mask(mapped_len(net, len)), to_bits(net));
    }

    #[test]
    fn expiry_is_inclusive_of_its_instant() {
        let mut i = Indicator::new("1.2.3.4", IndicatorType::Addr).unwrap();
        assert!(!i.expired(10));
        i.valid_until = Some(10);
        assert!(i.expired(10));
        assert!(!i.expired(9));
    }
}
