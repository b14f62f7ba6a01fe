//! Community ID v1: the flow hash that Zeek (its `community-id` package), Suricata and many
//! other sensors write, so that the records of one flow can be joined across tools
//! (the published spec: corelight/community-id-spec; the reference implementation is
//! Python's `communityid`).
//!
//! # The hash
//!
//! SHA-1 over, in this order: the seed (u16, big endian), the source address, the destination
//! address (4 bytes for IPv4, 16 for IPv6, network order), the IP protocol number (u8), one
//! zero byte of padding, then, for the protocols with ports (ICMP 1, TCP 6, UDP 17,
//! ICMPv6 58, SCTP 132), the source and destination ports (u16, big endian). The ID is
//! `1:` followed by the digest in standard base64 with padding.
//!
//! # Order
//!
//! Both directions of a flow have one ID: the endpoints are ordered so that the smaller
//! address comes first (bytes compared in network order), or, with equal addresses, the
//! smaller port. ICMP and ICMPv6 have no ports: the message type is the source port and the
//! destination port is the type of its counterpart (echo request ↔ echo reply, router
//! solicitation ↔ advertisement, …: [`icmp_counterpart`]); a type without counterpart keeps
//! its code as destination port and is *one-way*: never reordered.
//!
//! [`CommunityId`] is the setting (`--community-id off|SEED`, `community_id` in a pipeline
//! file): off, or the seed, [`CommunityId::DEFAULT`] being seed 0.

use std::net::IpAddr;
use std::str::FromStr;

use crate::setting::Problem;

/// IP protocol numbers of the protocols with ports (and ICMP's type and code).
pub mod proto {
    /// ICMP.
    pub const ICMP: u8 = 1;
    /// TCP.
    pub const TCP: u8 = 6;
    /// UDP.
    pub const UDP: u8 = 17;
    /// ICMPv6.
    pub const ICMP6: u8 = 58;
    /// SCTP.
    pub const SCTP: u8 = 132;
}

/// Whether Community ID hashes the ports of protocol `p`.
fn has_ports(p: u8) -> bool {
    matches!(
        p,
        proto::ICMP | proto::TCP | proto::UDP | proto::ICMP6 | proto::SCTP
    )
}

/// The type of the answer to ICMP (`proto::ICMP`) or ICMPv6 (`proto::ICMP6`) message type
/// `ty`, or the question it answers; `None` for a one-way message (and for other protocols).
pub fn icmp_counterpart(protocol: u8, ty: u16) -> Option<u16> {
    let pairs: &[(u16, u16)] = match protocol {
        // Echo, router, timestamp, information, address mask.
        proto::ICMP => &[(8, 0), (10, 9), (13, 14), (15, 16), (17, 18)],
        // Echo, multicast listener, router, neighbor, who-are-you, home agent discovery.
        proto::ICMP6 => &[
            (128, 129),
            (130, 131),
            (133, 134),
            (135, 136),
            (139, 140),
            (144, 145),
        ],
        _ => return None,
    };
    pairs.iter().find_map(|&(a, b)| match ty {
        t if t == a => Some(b),
        t if t == b => Some(a),
        _ => None,
    })
}

/// One flow's endpoints as a sensor saw them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowTuple {
    /// The IP protocol number.
    pub proto: u8,
    /// Source (originator) address.
    pub src: IpAddr,
    /// Destination (responder) address.
    pub dst: IpAddr,
    /// Source and destination ports (for ICMP: type and code); ignored for protocols without
    /// ports.
    pub ports: Option<(u16, u16)>,
}

/// An address's bytes in network order, in a buffer of 16: 4 of them for IPv4, 16 for IPv6.
fn addr_bytes(a: &IpAddr) -> ([u8; 16], usize) {
    let mut out = [0; 16];
    match a {
        IpAddr::V4(v4) => {
            out[..4].copy_from_slice(&v4.octets());
            (out, 4)
        }
        IpAddr::V6(v6) => (v6.octets(), 16),
    }
}

/// The length of an ID: `1:` and the base64 (with padding) of a 20-byte SHA-1 digest.
pub const ID_LEN: usize = 30;

/// Community ID v1 of `flow` with `seed`, as `1:BASE64`. `None` when the protocol has ports
/// but the tuple has none (the spec has no ID for it).
pub fn community_id_v1(seed: u16, flow: &FlowTuple) -> Option<String> {
    let id = community_id_v1_bytes(seed, flow)?;
    std::str::from_utf8(&id).ok().map(str::to_owned)
}

/// [`community_id_v1`] as ASCII bytes, without allocating (the import computes one per
/// connection).
pub fn community_id_v1_bytes(seed: u16, flow: &FlowTuple) -> Option<[u8; ID_LEN]> {
    let (src, src_len) = addr_bytes(&flow.src);
    let (dst, dst_len) = addr_bytes(&flow.dst);
    let (mut src, mut dst) = (&src[..src_len], &dst[..dst_len]);
    let mut ports = match (has_ports(flow.proto), flow.ports) {
        (true, None) => return None,
        (true, Some(p)) => Some(p),
        (false, _) => None,
    };
    let mut one_way = false;
    if let (proto::ICMP | proto::ICMP6, Some((ty, code))) = (flow.proto, ports) {
        match icmp_counterpart(flow.proto, ty) {
            Some(other) => ports = Some((ty, other)),
            None => {
                ports = Some((ty, code));
                one_way = true;
            }
        }
    }
    let ordered = one_way
        || src < dst
        || (src == dst && ports.is_some_and(|(s, d)| s.to_be_bytes() < d.to_be_bytes()));
    if !ordered {
        std::mem::swap(&mut src, &mut dst);
        ports = ports.map(|(s, d)| (d, s));
    }
    // Seed, two addresses of at most 16 bytes, protocol, padding, two ports.
    let mut input = [0u8; 2 + 16 + 16 + 2 + 4];
    let mut n = 0;
    for part in [&seed.to_be_bytes()[..], src, dst, &[flow.proto, 0]] {
        input[n..n + part.len()].copy_from_slice(part);
        n += part.len();
    }
    if let Some((s, d)) = ports {
        input[n..n + 2].copy_from_slice(&s.to_be_bytes());
        input[n + 2..n + 4].copy_from_slice(&d.to_be_bytes());
        n += 4;
    }
    let digest = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, &input[..n]);
    use base64::Engine as _;
    let mut id = [0u8; ID_LEN];
    id[..2].copy_from_slice(b"1:");
    let written = base64::engine::general_purpose::STANDARD
        .encode_slice(digest.as_ref(), &mut id[2..])
        .ok()?;
    (written == ID_LEN - 2).then_some(id)
}

/// Whether weir computes Community IDs at import, and with which seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommunityId {
    /// Not computed.
    Off,
    /// Computed with this seed.
    Seed(u16),
}

impl CommunityId {
    /// The default: computed, with seed 0 (what sensors use unless configured otherwise).
    pub const DEFAULT: CommunityId = CommunityId::Seed(0);

    /// The seed, when on.
    pub fn seed(self) -> Option<u16> {
        match self {
            CommunityId::Off => None,
            CommunityId::Seed(s) => Some(s),
        }
    }
}

impl Default for CommunityId {
    fn default() -> CommunityId {
        CommunityId::DEFAULT
    }
}

impl std::fmt::Display for CommunityId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CommunityId::Off => f.write_str("off"),
            CommunityId::Seed(s) => write!(f, "{s}"),
        }
    }
}

impl FromStr for CommunityId {
    type Err = Problem;

    /// `off`, or a seed from 0 to 65535.
    fn from_str(s: &str) -> Result<CommunityId, Problem> {
        if s == "off" {
            return Ok(CommunityId::Off);
        }
        s.parse::<u16>()
            .map(CommunityId::Seed)
            .map_err(|_| Problem::OutOfRange {
                value: s.to_string(),
                reason: "expected \"off\" or a seed from 0 to 65535".into(),
            })
    }
}

impl<'de> serde::Deserialize<'de> for CommunityId {
    /// `"off"`, or a seed as an integer (or a string of one).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<CommunityId, D::Error> {
        use serde::de::Error;
        match toml::Value::deserialize(d)? {
            toml::Value::String(s) => s.parse().map_err(D::Error::custom),
            toml::Value::Integer(n) => u16::try_from(n).map(CommunityId::Seed).map_err(|_| {
                D::Error::custom(format!(
                    "{n} is out of range: expected \"off\" or a seed from 0 to 65535"
                ))
            }),
            other => Err(D::Error::custom(format!(
                "expected \"off\" or a seed from 0 to 65535, found {}",
                other.type_str()
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(proto: u8, src: &str, dst: &str, ports: Option<(u16, u16)>) -> FlowTuple {
        FlowTuple {
            proto,
            src: src.parse().unwrap(),
            dst: dst.parse().unwrap(),
            ports,
        }
    }

    /// Protocol, source, destination, ports, the ID with seed 0, the ID with seed 1.
    type Case = (
        u8,
        &'static str,
        &'static str,
        Option<(u16, u16)>,
        &'static str,
        &'static str,
    );

    /// The spec's baseline (`baseline/baseline_deflt.json` and `baseline_seed1.json`).
    const BASELINE: &[Case] = &[
        (
            58,
            "fe80::200:86ff:fe05:80da",
            "fe80::260:97ff:fe07:69ea",
            Some((135, 136)),
            "1:dGHyGvjMfljg6Bppwm3bg0LO8TY=",
            "1:kHa1FhMYIT6Ym2Vm2AOtoOARDzY=",
        ),
        (
            58,
            "fe80::260:97ff:fe07:69ea",
            "fe80::200:86ff:fe05:80da",
            Some((136, 135)),
            "1:dGHyGvjMfljg6Bppwm3bg0LO8TY=",
            "1:kHa1FhMYIT6Ym2Vm2AOtoOARDzY=",
        ),
        (
            58,
            "fe80::260:97ff:fe07:69ea",
            "fe80::200:86ff:fe05:80da",
            Some((135, 136)),
            "1:zavyT/cezQr1fmImYCwYnMXbgck=",
            "1:2hSqmsDZ2kdcY9kbiUzOEBic0iM=",
        ),
        (
            58,
            "fe80::200:86ff:fe05:80da",
            "fe80::260:97ff:fe07:69ea",
            Some((136, 135)),
            "1:zavyT/cezQr1fmImYCwYnMXbgck=",
            "1:2hSqmsDZ2kdcY9kbiUzOEBic0iM=",
        ),
        (
            58,
            "3ffe:501:1800:2345::2",
            "3ffe:507:0:1:200:86ff:fe05:80da",
            Some((3, 0)),
            "1:2ObVBgIn28oZvibYZhZMBgh7WdQ=",
            "1:lVEtCZpYu84Xqaa++3lXFyuu2n4=",
        ),
        (
            58,
            "3ffe:501:410:0:2c0:dfff:fe47:33e",
            "3ffe:507:0:1:200:86ff:fe05:80da",
            Some((1, 4)),
            "1:hLZd0XGWojozrvxqE0dWB1iM6R0=",
            "1:W8MHwXpWzpoSTD+cGcaJr4u0ys8=",
        ),
        (
            58,
            "3ffe:507:0:1:200:86ff:fe05:80da",
            "3ffe:501:0:1001::2",
            Some((128, 129)),
            "1:+TW+HtLHvV1xnGhV1lv7XoJrqQg=",
            "1:GfZxjAkDk2MkegpBYHV6tadtFXQ=",
        ),
        (
            58,
            "3ffe:501:0:1001::2",
            "3ffe:507:0:1:200:86ff:fe05:80da",
            Some((129, 128)),
            "1:+TW+HtLHvV1xnGhV1lv7XoJrqQg=",
            "1:GfZxjAkDk2MkegpBYHV6tadtFXQ=",
        ),
        (
            58,
            "fe80::200:86ff:fe05:80da",
            "ff02::2",
            Some((133, 134)),
            "1:hO+sN4H+MG5MY/8hIrXPqc4ZQz0=",
            "1:L7Ka0ZMYu+J3bL4ulW2PrqyXNo8=",
        ),
        (
            58,
            "fe80::260:97ff:fe07:69ea",
            "ff02::1",
            Some((134, 133)),
            "1:pkvHqCL88/tg1k4cPigmZXUtL00=",
            "1:K/ee5UCqAMAQXDorP5nSa2CGLjc=",
        ),
        (
            1,
            "192.168.0.89",
            "192.168.0.1",
            Some((8, 0)),
            "1:X0snYXpgwiv9TZtqg64sgzUn6Dk=",
            "1:03g6IloqVBdcZlPyX8r0hgoE7kA=",
        ),
        (
            1,
            "192.168.0.1",
            "192.168.0.89",
            Some((0, 8)),
            "1:X0snYXpgwiv9TZtqg64sgzUn6Dk=",
            "1:03g6IloqVBdcZlPyX8r0hgoE7kA=",
        ),
        (
            1,
            "10.0.0.1",
            "10.0.0.2",
            Some((11, 0)),
            "1:YHxtAirCG//0OzkcVAukqKQN9xM=",
            "1:XjUibYHaafLQ3pxQeiMI8g25q20=",
        ),
        (
            6,
            "2001:470:e5bf:dead:4957:2174:e82c:4887",
            "2607:f8b0:400c:c03::1a",
            Some((63943, 25)),
            "1:/qFaeAR+gFe1KYjMzVDsMv+wgU4=",
            "1:eJYTW6AOzFLlSUoESovMjnu7rMw=",
        ),
        (
            6,
            "2607:f8b0:400c:c03::1a",
            "2001:470:e5bf:dead:4957:2174:e82c:4887",
            Some((25, 63943)),
            "1:/qFaeAR+gFe1KYjMzVDsMv+wgU4=",
            "1:eJYTW6AOzFLlSUoESovMjnu7rMw=",
        ),
        (
            132,
            "192.168.170.8",
            "192.168.170.56",
            Some((7, 7)),
            "1:MP2EtRCAUIZvTw6MxJHLV7N7JDs=",
            "1:5w3ZRjeKBzqT3zsaEECDGjUbYeg=",
        ),
        (
            132,
            "192.168.170.56",
            "192.168.170.8",
            Some((7, 7)),
            "1:MP2EtRCAUIZvTw6MxJHLV7N7JDs=",
            "1:5w3ZRjeKBzqT3zsaEECDGjUbYeg=",
        ),
        (
            6,
            "128.232.110.120",
            "66.35.250.204",
            Some((34855, 80)),
            "1:LQU9qZlK+B5F3KDmev6m5PMibrg=",
            "1:3V71V58M3Ksw/yuFALMcW0LAHvc=",
        ),
        (
            6,
            "66.35.250.204",
            "128.232.110.120",
            Some((80, 34855)),
            "1:LQU9qZlK+B5F3KDmev6m5PMibrg=",
            "1:3V71V58M3Ksw/yuFALMcW0LAHvc=",
        ),
        (
            17,
            "192.168.1.52",
            "8.8.8.8",
            Some((54585, 53)),
            "1:d/FP5EW3wiY1vCndhwleRRKHowQ=",
            "1:Q9We8WO3piVF8yEQBNJF4uiSVrI=",
        ),
        (
            17,
            "8.8.8.8",
            "192.168.1.52",
            Some((53, 54585)),
            "1:d/FP5EW3wiY1vCndhwleRRKHowQ=",
            "1:Q9We8WO3piVF8yEQBNJF4uiSVrI=",
        ),
        (
            46,
            "10.1.12.1",
            "10.1.12.2",
            None,
            "1:KHlLkgoJW7ifUTyTSgyVfkFHzKw=",
            "1:rYir8gphR31noO9iDRQmF/BteEI=",
        ),
        (
            46,
            "10.1.12.2",
            "10.1.12.1",
            None,
            "1:KHlLkgoJW7ifUTyTSgyVfkFHzKw=",
            "1:rYir8gphR31noO9iDRQmF/BteEI=",
        ),
    ];

    #[test]
    fn equals_the_spec_baseline_with_seed_0_and_1() {
        for &(p, src, dst, ports, seed0, seed1) in BASELINE {
            let f = flow(p, src, dst, ports);
            assert_eq!(community_id_v1(0, &f).as_deref(), Some(seed0), "{f:?}");
            assert_eq!(community_id_v1(1, &f).as_deref(), Some(seed1), "{f:?}");
        }
    }

    #[test]
    fn ports_of_a_protocol_without_ports_are_ignored() {
        let with = flow(46, "10.1.12.1", "10.1.12.2", Some((1, 2)));
        let without = flow(46, "10.1.12.1", "10.1.12.2", None);
        assert_eq!(community_id_v1(0, &with), community_id_v1(0, &without));
        // A protocol with ports needs them.
        assert_eq!(
            community_id_v1(0, &flow(6, "10.0.0.1", "10.0.0.2", None)),
            None
        );
    }

    #[test]
    fn equal_addresses_order_by_port_and_one_way_icmp_is_never_flipped() {
        let a = flow(6, "10.0.0.1", "10.0.0.1", Some((80, 1234)));
        let b = flow(6, "10.0.0.1", "10.0.0.1", Some((1234, 80)));
        assert_eq!(community_id_v1(0, &a), community_id_v1(0, &b));
        // Destination unreachable (3) has no counterpart: the two directions differ.
        let there = flow(1, "10.0.0.2", "10.0.0.1", Some((3, 3)));
        let back = flow(1, "10.0.0.1", "10.0.0.2", Some((3, 3)));
        assert_ne!(community_id_v1(0, &there), community_id_v1(0, &back));
    }

    #[test]
    fn icmp_counterparts_pair_both_ways() {
        assert_eq!(icmp_counterpart(proto::ICMP, 8), Some(0));
        assert_eq!(icmp_counterpart(proto::ICMP, 0), Some(8));
        assert_eq!(icmp_counterpart(proto::ICMP, 3), None);
        assert_eq!(icmp_counterpart(proto::ICMP6, 136), Some(135));
        assert_eq!(icmp_counterpart(proto::ICMP6, 8), None);
        assert_eq!(icmp_counterpart(proto::TCP, 8), None);
    }

    #[test]
    fn the_setting_reads_off_or_a_seed() {
        assert_eq!("off".parse::<CommunityId>().unwrap(), CommunityId::Off);
        assert_eq!("7".parse::<CommunityId>().unwrap(), CommunityId::Seed(7));
        let e = "65536".parse::<CommunityId>().unwrap_err().to_string();
        assert!(e.contains("65536") && e.contains("off"), "{e}");
        #[derive(serde::Deserialize)]
        struct T {
            c: CommunityId,
        }
        let t: T = toml::from_str("c = 3").unwrap();
        assert_eq!(t.c, CommunityId::Seed(3));
        let t: T = toml::from_str("c = \"off\"").unwrap();
        assert_eq!(t.c, CommunityId::Off);
        assert!(toml::from_str::<T>("c = -1").is_err());
        assert!(toml::from_str::<T>("c = true").is_err());
        assert_eq!(CommunityId::DEFAULT.to_string(), "0");
    }
}
