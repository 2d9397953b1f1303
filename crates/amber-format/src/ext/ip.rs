//! IP_ADDRESS, IP_NETWORK and IP_INTERFACE (spec 5.16.3): `ipaddress` values as the packed
//! address (IPv6 with an optional scope zone), after a prefix length for networks and
//! interfaces.

use super::blob_reader::BlobReader;
use super::ExtError;
use crate::encode::Sink;

/// An address: what IP_ADDRESS holds, and the address part of the other two.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IpAddr<'a> {
    /// 4 bytes, network order.
    V4([u8; 4]),
    /// 16 bytes, network order, and the scope zone (`fe80::1%eth0`): non-empty UTF-8
    /// without `%` or `/`, or `None`.
    V6 {
        /// The packed address.
        octets: [u8; 16],
        /// The scope zone.
        scope: Option<&'a str>,
    },
}

impl<'a> IpAddr<'a> {
    /// Reads the rest of the blob as an address; its length tells IPv4 from IPv6.
    fn read(r: &mut BlobReader<'a>) -> Result<IpAddr<'a>, ExtError> {
        let bytes = r.rest();
        if let Ok(octets) = <[u8; 4]>::try_from(bytes) {
            return Ok(IpAddr::V4(octets));
        }
        let Some((octets, scope)) = bytes.split_first_chunk::<16>() else {
            return Err(r.invalid(format_args!(
                "address has {} bytes, not 4 (IPv4) or 16 (IPv6, then a scope id)",
                bytes.len()
            )));
        };
        let scope = match std::str::from_utf8(scope) {
            Ok("") => None,
            Ok(s) if !s.contains(['%', '/']) => Some(s),
            _ => {
                return Err(r.invalid(format_args!(
                    "IPv6 scope id is not UTF-8 without '%' and '/'"
                )))
            }
        };
        Ok(IpAddr::V6 {
            octets: *octets,
            scope,
        })
    }

    /// Whether this is an IPv6 address.
    pub const fn is_v6(&self) -> bool {
        matches!(self, IpAddr::V6 { .. })
    }

    /// The longest prefix for this family: 32 or 128.
    pub const fn max_prefix(&self) -> u8 {
        match self {
            IpAddr::V4(_) => 32,
            IpAddr::V6 { .. } => 128,
        }
    }

    /// The packed address, without the scope.
    pub fn packed(&self) -> &[u8] {
        match self {
            IpAddr::V4(octets) => octets,
            IpAddr::V6 { octets, .. } => octets,
        }
    }

    /// Whether any bit after the first `prefix` bits is set.
    fn has_host_bits(&self, prefix: u8) -> bool {
        let host = |width: u32| u128::MAX.checked_shr(128 - width + u32::from(prefix));
        match self {
            IpAddr::V4(octets) => {
                u128::from(u32::from_be_bytes(*octets)) & host(32).unwrap_or(0) != 0
            }
            IpAddr::V6 { octets, .. } => u128::from_be_bytes(*octets) & host(128).unwrap_or(0) != 0,
        }
    }

    fn encoded_len(&self) -> usize {
        match self {
            IpAddr::V4(_) => 4,
            IpAddr::V6 { scope, .. } => 16 + scope.map_or(0, str::len),
        }
    }

    fn write<S: Sink>(&self, out: &mut S) {
        out.extend_from_slice(self.packed());
        if let IpAddr::V6 {
            scope: Some(scope), ..
        } = self
        {
            out.extend_from_slice(scope.as_bytes());
        }
    }
}

/// IP_ADDRESS (spec 5.16.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpAddress<'a>(pub IpAddr<'a>);

impl<'a> IpAddress<'a> {
    pub(crate) fn read(r: &mut BlobReader<'a>) -> Result<IpAddress<'a>, ExtError> {
        IpAddr::read(r).map(IpAddress)
    }

    pub(crate) fn encoded_len(&self) -> usize {
        self.0.encoded_len()
    }

    pub(crate) fn write<S: Sink>(&self, out: &mut S) {
        self.0.write(out);
    }
}

/// IP_NETWORK and IP_INTERFACE (spec 5.16.3): a prefix length and an address. A network's
/// address is its network address: its host bits (those after the prefix) are 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpPrefixed<'a> {
    /// The prefix length: at most 32 for IPv4, 128 for IPv6.
    pub prefix: u8,
    /// The network address of a network; the interface's own address.
    pub address: IpAddr<'a>,
}

impl<'a> IpPrefixed<'a> {
    /// Reads an IP_INTERFACE blob, or an IP_NETWORK one when `network`.
    pub(crate) fn read(r: &mut BlobReader<'a>, network: bool) -> Result<IpPrefixed<'a>, ExtError> {
        let prefix = r.u8("prefix length")?;
        let address = IpAddr::read(r)?;
        let max = address.max_prefix();
        if prefix > max {
            return Err(r.invalid(format_args!("prefix length {prefix} is above {max}")));
        }
        if network && address.has_host_bits(prefix) {
            return Err(r.invalid(format_args!(
                "address has host bits set after its prefix length {prefix}"
            )));
        }
        Ok(IpPrefixed { prefix, address })
    }

    pub(crate) fn encoded_len(&self) -> usize {
        1 + self.address.encoded_len()
    }

    pub(crate) fn write<S: Sink>(&self, out: &mut S) {
        out.push(self.prefix);
        self.address.write(out);
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ExtBlob, ExtCode};
    use super::*;

    const V6: [u8; 16] = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];

    #[test]
    fn valid_values_round_trip() {
        let addresses = [
            IpAddr::V4([192, 0, 2, 1]),
            IpAddr::V6 {
                octets: V6,
                scope: None,
            },
            IpAddr::V6 {
                octets: V6,
                scope: Some("eth0"),
            },
        ];
        let mut blobs = Vec::new();
        for address in addresses {
            blobs.push(ExtBlob::IpAddress(IpAddress(address)));
            for prefix in [0, 16, address.max_prefix()] {
                blobs.push(ExtBlob::IpInterface(IpPrefixed { prefix, address }));
            }
            blobs.push(ExtBlob::IpNetwork(IpPrefixed {
                prefix: address.max_prefix(),
                address,
            }));
        }
        blobs.push(ExtBlob::IpNetwork(IpPrefixed {
            prefix: 24,
            address: IpAddr::V4([192, 0, 2, 0]),
        }));
        blobs.push(ExtBlob::IpNetwork(IpPrefixed {
            prefix: 0,
            address: IpAddr::V4([0; 4]),
        }));
        blobs.push(ExtBlob::IpNetwork(IpPrefixed {
            prefix: 10,
            address: IpAddr::V6 {
                octets: [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
                scope: Some("x"),
            },
        }));
        for blob in blobs {
            let mut bytes = Vec::new();
            blob.write(&mut bytes);
            assert_eq!(bytes.len(), blob.encoded_len());
            assert_eq!(
                ExtBlob::parse(blob.code(), &bytes),
                Ok(blob),
                "{bytes:02x?}"
            );
        }
    }

    #[test]
    fn every_rule_is_checked() {
        use ExtCode::{IpAddress as A, IpInterface as I, IpNetwork as N};
        let mut scoped = V6.to_vec();
        scoped.extend_from_slice(b"et%h0");
        let mut slashed = V6.to_vec();
        slashed.extend_from_slice(b"eth/0");
        let mut not_utf8 = V6.to_vec();
        not_utf8.push(0xff);
        let mut v6_host = vec![32, 0x20, 0x01, 0x0d, 0xb8];
        v6_host.extend_from_slice(&[0; 11]);
        v6_host.push(1);
        let mut v6_129 = vec![129];
        v6_129.extend_from_slice(&[0; 16]);
        let scope = "IP_ADDRESS IPv6 scope id is not UTF-8 without '%' and '/'";
        let cases: &[(ExtCode, &[u8], &str)] = &[
            (
                A,
                &[192, 0, 2, 1, 0],
                "IP_ADDRESS address has 5 bytes, not 4 (IPv4) or 16 (IPv6, then a scope id)",
            ),
            (
                A,
                &[],
                "IP_ADDRESS address has 0 bytes, not 4 (IPv4) or 16 (IPv6, then a scope id)",
            ),
            (A, &scoped, scope),
            (A, &slashed, scope),
            (A, &not_utf8, scope),
            (
                N,
                &[33, 192, 0, 2, 0],
                "IP_NETWORK prefix length 33 is above 32",
            ),
            (
                N,
                &[24, 192, 0, 2, 1],
                "IP_NETWORK address has host bits set after its prefix length 24",
            ),
            (
                N,
                &v6_host,
                "IP_NETWORK address has host bits set after its prefix length 32",
            ),
            (
                N,
                &[24],
                "IP_NETWORK address has 0 bytes, not 4 (IPv4) or 16 (IPv6, then a scope id)",
            ),
            (N, &[], "IP_NETWORK blob ends before its prefix length"),
            (I, &v6_129, "IP_INTERFACE prefix length 129 is above 128"),
            (
                I,
                &[33, 192, 0, 2, 1],
                "IP_INTERFACE prefix length 33 is above 32",
            ),
        ];
        for (code, blob, message) in cases {
            let e = ExtBlob::parse(*code, blob).expect_err("invalid");
            assert_eq!(e.message(), *message, "{blob:02x?}");
        }
        // An interface keeps its host bits.
        assert!(ExtBlob::parse(I, &[24, 192, 0, 2, 1]).is_ok());
    }
}
