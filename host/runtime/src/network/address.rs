//! Which addresses a request may connect to. The host resolves every name
//! itself and connects only to an address it checked, so a name that
//! changes its answer between check and connect (DNS rebinding) gains
//! nothing.

use super::grant::{HostPattern, NetworkGrant, OriginPattern};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why an address is not on the public internet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restricted {
    /// 127.0.0.0/8, ::1.
    Loopback,
    /// 10/8, 172.16/12, 192.168/16, fc00::/7, 100.64/10 (shared).
    Private,
    /// 169.254/16, fe80::/10: also where cloud metadata services live.
    LinkLocal,
    /// 169.254.169.254, fd00:ec2::254 and other instance-metadata endpoints.
    Metadata,
    /// 0.0.0.0/8, ::, multicast, broadcast, reserved and documentation ranges.
    Unroutable,
}

impl Restricted {
    /// How the refusal names it.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Loopback => "a loopback address",
            Self::Private => "a private-network address",
            Self::LinkLocal => "a link-local address",
            Self::Metadata => "a cloud metadata address",
            Self::Unroutable => "an address that is not publicly routable",
        }
    }
}

/// The class of `ip` if it is not a public address.
pub fn restricted(ip: IpAddr) -> Option<Restricted> {
    match ip.to_canonical() {
        IpAddr::V4(v4) => restricted_v4(v4),
        IpAddr::V6(v6) => restricted_v6(v6),
    }
}

fn restricted_v4(ip: Ipv4Addr) -> Option<Restricted> {
    let [a, b, _, _] = ip.octets();
    if ip == Ipv4Addr::new(169, 254, 169, 254) || ip == Ipv4Addr::new(100, 100, 100, 200) {
        Some(Restricted::Metadata)
    } else if ip.is_loopback() {
        Some(Restricted::Loopback)
    } else if ip.is_private() || (a == 100 && (64..128).contains(&b)) {
        Some(Restricted::Private)
    } else if ip.is_link_local() {
        Some(Restricted::LinkLocal)
    } else if ip.is_unspecified()
        || a == 0
        || ip.is_multicast()
        || ip.is_broadcast()
        || ip.is_documentation()
        || a >= 240
        || (a == 198 && (b == 18 || b == 19))
        || (a == 192 && b == 0 && ip.octets()[2] == 0)
    {
        Some(Restricted::Unroutable)
    } else {
        None
    }
}

fn restricted_v6(ip: Ipv6Addr) -> Option<Restricted> {
    let first = ip.segments()[0];
    if ip == Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x254) {
        Some(Restricted::Metadata)
    } else if ip.is_loopback() {
        Some(Restricted::Loopback)
    } else if first & 0xfe00 == 0xfc00 {
        Some(Restricted::Private)
    } else if first & 0xffc0 == 0xfe80 {
        Some(Restricted::LinkLocal)
    } else if ip.is_unspecified() || ip.is_multicast() || first == 0x2001 && ip.segments()[1] == 0x0db8 {
        Some(Restricted::Unroutable)
    } else if first == 0x0064 && ip.segments()[1] == 0xff9b {
        // NAT64: the embedded IPv4 address decides.
        let [.., c, d] = ip.segments();
        let v4 = Ipv4Addr::new((c >> 8) as u8, c as u8, (d >> 8) as u8, d as u8);
        restricted_v4(v4)
    } else if first == 0x2002 {
        // 6to4: the embedded IPv4 address decides.
        let [_, b, c, ..] = ip.segments();
        let v4 = Ipv4Addr::new((b >> 8) as u8, b as u8, (c >> 8) as u8, c as u8);
        restricted_v4(v4)
    } else {
        None
    }
}

/// Whether the grant lets a request matched by `pattern` connect to `ip`:
/// public addresses always, restricted ones only when the origin names
/// that address literally or `private_addresses` contains it.
///
/// # Errors
///
/// The class of a refused address.
pub fn check(grant: &NetworkGrant, pattern: &OriginPattern, ip: IpAddr) -> Result<(), Restricted> {
    let ip = ip.to_canonical();
    let Some(class) = restricted(ip) else { return Ok(()) };
    let named = matches!(pattern.host, HostPattern::Ip(granted) if granted.to_canonical() == ip);
    if named || grant.private_addresses.iter().any(|net| net.contains(&ip)) { Ok(()) } else { Err(class) }
}
