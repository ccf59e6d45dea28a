//! Kubernetes' IP and CIDR libraries: `ip()`, `isIP()`, `ip.isCanonical()`, `cidr()`,
//! `isCIDR()`, `string()` of either, `==`, and the methods `family`, `isUnspecified`,
//! `isLoopback`, `isLinkLocalMulticast`, `isLinkLocalUnicast`, `isGlobalUnicast` (IP) and
//! `containsIP`, `containsCIDR`, `ip`, `masked`, `prefixLength` (CIDR).
//!
//! Addresses are parsed as Go's `netip` parses them (no zones, no leading zeros in IPv4 octets),
//! and IPv4-mapped IPv6 addresses are refused, as Kubernetes refuses them. The canonical text is
//! RFC 5952's, which both Go and Rust print.

use super::{Outcome, boolean, fail, int, opaque_val, string, string_arg, take, typed_arg};
use cel::common::types::{STRING_TYPE, Type};
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env, ExecutionError};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The CEL type of an IP address.
pub(crate) static IP_TYPE: Type = Type::new_unspecified_type("net.IP");
/// The CEL type of a CIDR prefix.
pub(crate) static CIDR_TYPE: Type = Type::new_unspecified_type("net.CIDR");

/// An IP address.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Ip(IpAddr);

/// A CIDR prefix: an address (not masked) and a prefix length.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Cidr {
    addr: IpAddr,
    bits: u8,
}

/// Parses an address as `netip.ParseAddr`, then applies Kubernetes' refusals.
fn parse_ip(raw: &str) -> Result<IpAddr, String> {
    if raw.contains('%') {
        return Err(format!("IP address {raw:?} with zone value is not allowed"));
    }
    let addr: IpAddr = raw.parse().map_err(|_| {
        format!("IP Address {raw:?} parse error during conversion from string: ParseAddr({raw:?}): unable to parse IP")
    })?;
    if let IpAddr::V6(v6) = addr
        && v6.to_ipv4_mapped().is_some()
    {
        return Err(format!("IPv4-mapped IPv6 address {raw:?} is not allowed"));
    }
    Ok(addr)
}

/// Parses a prefix as `netip.ParsePrefix`, then applies Kubernetes' refusals.
fn parse_cidr(raw: &str) -> Result<Cidr, String> {
    let wrap =
        |e: String| format!("network address parse error during conversion from string: {e}");
    let (addr, bits) = raw
        .split_once('/')
        .ok_or_else(|| wrap(format!("netip.ParsePrefix({raw:?}): no '/'")))?;
    if addr.contains('%') {
        return Err(wrap(format!(
            "netip.ParsePrefix({raw:?}): IPv6 zones cannot be present in a prefix"
        )));
    }
    let addr: IpAddr = addr.parse().map_err(|_| {
        wrap(format!(
            "netip.ParsePrefix({raw:?}): ParseAddr({addr:?}): unable to parse IP"
        ))
    })?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let leading_zero = bits.len() > 1 && bits.starts_with('0');
    let bits: u8 = match bits.parse::<u8>() {
        Ok(b) if b <= max && !leading_zero && bits.bytes().all(|c| c.is_ascii_digit()) => b,
        _ => {
            return Err(wrap(format!(
                "netip.ParsePrefix({raw:?}): bad bits after slash: {bits:?}"
            )));
        }
    };
    if let IpAddr::V6(v6) = addr
        && v6.to_ipv4_mapped().is_some()
    {
        return Err(wrap(format!(
            "IPv4-mapped IPv6 address {raw:?} is not allowed"
        )));
    }
    Ok(Cidr { addr, bits })
}

impl Cidr {
    /// The address with the host bits cleared.
    fn masked_addr(&self) -> IpAddr {
        match self.addr {
            IpAddr::V4(v4) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.bits)).unwrap_or(0);
                IpAddr::V4(Ipv4Addr::from(u32::from(v4) & mask))
            }
            IpAddr::V6(v6) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.bits))
                    .unwrap_or(0);
                IpAddr::V6(Ipv6Addr::from(u128::from(v6) & mask))
            }
        }
    }

    fn contains(&self, addr: IpAddr) -> bool {
        let probe = Cidr {
            addr,
            bits: self.bits,
        };
        self.addr.is_ipv4() == addr.is_ipv4() && probe.masked_addr() == self.masked_addr()
    }
}

opaque_val!(Ip, IP_TYPE);
opaque_val!(Cidr, CIDR_TYPE);

/// Registers the IP and CIDR functions.
pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let ip = || IP_TYPE.to_owned();
    let cidr = || CIDR_TYPE.to_owned();
    env.add_type(ip())?;
    env.add_type(cidr())?;
    env.add_overload("ip", "k8s_string_to_ip", vec![STRING_TYPE], to_ip)?;
    env.add_overload("isIP", "k8s_is_ip", vec![STRING_TYPE], is_ip)?;
    env.add_overload(
        "ip.isCanonical",
        "k8s_ip_is_canonical",
        vec![STRING_TYPE],
        is_canonical,
    )?;
    env.add_overload("string", "k8s_ip_to_string", vec![ip()], ip_to_string)?;
    env.add_member_overload("family", "k8s_ip_family", ip(), vec![], family)?;
    env.add_member_overload(
        "isUnspecified",
        "k8s_ip_is_unspecified",
        ip(),
        vec![],
        is_unspecified,
    )?;
    env.add_member_overload(
        "isLoopback",
        "k8s_ip_is_loopback",
        ip(),
        vec![],
        is_loopback,
    )?;
    env.add_member_overload(
        "isLinkLocalMulticast",
        "k8s_ip_is_ll_multicast",
        ip(),
        vec![],
        is_link_local_multicast,
    )?;
    env.add_member_overload(
        "isLinkLocalUnicast",
        "k8s_ip_is_ll_unicast",
        ip(),
        vec![],
        is_link_local_unicast,
    )?;
    env.add_member_overload(
        "isGlobalUnicast",
        "k8s_ip_is_global_unicast",
        ip(),
        vec![],
        is_global_unicast,
    )?;
    env.add_overload("cidr", "k8s_string_to_cidr", vec![STRING_TYPE], to_cidr)?;
    env.add_overload("isCIDR", "k8s_is_cidr", vec![STRING_TYPE], is_cidr)?;
    env.add_overload("string", "k8s_cidr_to_string", vec![cidr()], cidr_to_string)?;
    env.add_member_overload(
        "containsIP",
        "k8s_cidr_contains_ip",
        cidr(),
        vec![ip()],
        contains_ip,
    )?;
    env.add_member_overload(
        "containsIP",
        "k8s_cidr_contains_ip_string",
        cidr(),
        vec![STRING_TYPE],
        contains_ip,
    )?;
    env.add_member_overload(
        "containsCIDR",
        "k8s_cidr_contains_cidr",
        cidr(),
        vec![cidr()],
        contains_cidr,
    )?;
    env.add_member_overload(
        "containsCIDR",
        "k8s_cidr_contains_cidr_string",
        cidr(),
        vec![STRING_TYPE],
        contains_cidr,
    )?;
    env.add_member_overload("ip", "k8s_cidr_ip", cidr(), vec![], cidr_ip)?;
    env.add_member_overload("masked", "k8s_cidr_masked", cidr(), vec![], masked)?;
    env.add_member_overload(
        "prefixLength",
        "k8s_cidr_prefix_length",
        cidr(),
        vec![],
        prefix_length,
    )
}

fn to_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [raw] = take("ip", args)?;
    let addr = parse_ip(string_arg("ip", raw.as_ref())?).map_err(|e| fail("ip", e))?;
    Ok(CowVal::owned(Ip(addr)))
}

fn is_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [raw] = take("isIP", args)?;
    boolean(parse_ip(string_arg("isIP", raw.as_ref())?).is_ok())
}

fn is_canonical<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [raw] = take("ip.isCanonical", args)?;
    let raw = string_arg("ip.isCanonical", raw.as_ref())?;
    let addr = parse_ip(raw).map_err(|e| fail("ip.isCanonical", e))?;
    boolean(addr.to_string() == raw)
}

fn ip_arg<'a>(function: &str, val: &'a dyn Val) -> Result<&'a Ip, ExecutionError> {
    typed_arg::<Ip>(function, val)
}

fn cidr_arg<'a>(function: &str, val: &'a dyn Val) -> Result<&'a Cidr, ExecutionError> {
    typed_arg::<Cidr>(function, val)
}

fn ip_to_string<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [ip] = take("string", args)?;
    string(ip_arg("string", ip.as_ref())?.0.to_string())
}

fn family<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [ip] = take("family", args)?;
    int(if ip_arg("family", ip.as_ref())?.0.is_ipv4() {
        4
    } else {
        6
    })
}

/// Applies an address predicate to the receiver.
fn ip_predicate<'b, 'v>(
    function: &str,
    args: Vec<CowVal<'b, 'v>>,
    test: fn(&IpAddr) -> bool,
) -> Outcome<'b, 'v> {
    let [ip] = take(function, args)?;
    boolean(test(&ip_arg(function, ip.as_ref())?.0))
}

fn is_unspecified<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    ip_predicate("isUnspecified", args, IpAddr::is_unspecified)
}

fn is_loopback<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    ip_predicate("isLoopback", args, IpAddr::is_loopback)
}

/// Go's `IsLinkLocalMulticast`: 224.0.0.0/24 and ff02::/16.
fn link_local_multicast(addr: &IpAddr) -> bool {
    match addr {
        IpAddr::V4(v4) => v4.octets()[..3] == [224, 0, 0],
        IpAddr::V6(v6) => v6.segments()[0] == 0xff02,
    }
}

/// Go's `IsLinkLocalUnicast`: 169.254.0.0/16 and fe80::/10.
fn link_local_unicast(addr: &IpAddr) -> bool {
    match addr {
        IpAddr::V4(v4) => v4.octets()[..2] == [169, 254],
        IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 == 0xfe80,
    }
}

/// Go's `IsGlobalUnicast`: not unspecified, loopback, multicast, link-local unicast or the IPv4
/// broadcast address (private ranges count as global).
fn global_unicast(addr: &IpAddr) -> bool {
    let broadcast = matches!(addr, IpAddr::V4(v4) if v4.is_broadcast());
    !(addr.is_unspecified()
        || addr.is_loopback()
        || addr.is_multicast()
        || link_local_unicast(addr)
        || broadcast)
}

fn is_link_local_multicast<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    ip_predicate("isLinkLocalMulticast", args, link_local_multicast)
}

fn is_link_local_unicast<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    ip_predicate("isLinkLocalUnicast", args, link_local_unicast)
}

fn is_global_unicast<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    ip_predicate("isGlobalUnicast", args, global_unicast)
}

fn to_cidr<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [raw] = take("cidr", args)?;
    let cidr = parse_cidr(string_arg("cidr", raw.as_ref())?).map_err(|e| fail("cidr", e))?;
    Ok(CowVal::owned(cidr))
}

fn is_cidr<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [raw] = take("isCIDR", args)?;
    boolean(parse_cidr(string_arg("isCIDR", raw.as_ref())?).is_ok())
}

fn cidr_to_string<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [cidr] = take("string", args)?;
    let cidr = cidr_arg("string", cidr.as_ref())?;
    string(format!("{}/{}", cidr.addr, cidr.bits))
}

fn contains_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [cidr, other] = take("containsIP", args)?;
    let cidr = cidr_arg("containsIP", cidr.as_ref())?;
    let addr = match other.downcast_ref::<Ip>() {
        Some(ip) => ip.0,
        None => parse_ip(string_arg("containsIP", other.as_ref())?)
            .map_err(|e| fail("containsIP", e))?,
    };
    boolean(cidr.contains(addr))
}

fn contains_cidr<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [cidr, other] = take("containsCIDR", args)?;
    let cidr = cidr_arg("containsCIDR", cidr.as_ref())?;
    let other = match other.downcast_ref::<Cidr>() {
        Some(c) => c.clone(),
        None => parse_cidr(string_arg("containsCIDR", other.as_ref())?)
            .map_err(|e| fail("containsCIDR", e))?,
    };
    boolean(cidr.bits <= other.bits && cidr.contains(other.addr))
}

fn cidr_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [cidr] = take("ip", args)?;
    Ok(CowVal::owned(Ip(cidr_arg("ip", cidr.as_ref())?.addr)))
}

fn masked<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [cidr] = take("masked", args)?;
    let cidr = cidr_arg("masked", cidr.as_ref())?;
    Ok(CowVal::owned(Cidr {
        addr: cidr.masked_addr(),
        bits: cidr.bits,
    }))
}

fn prefix_length<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [cidr] = take("prefixLength", args)?;
    int(i64::from(cidr_arg("prefixLength", cidr.as_ref())?.bits))
}
