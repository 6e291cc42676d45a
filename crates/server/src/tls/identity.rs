//! The `x509` auth scheme's identity: a client certificate's subject as Java prints it with
//! `X500Principal.getName()` (RFC 2253), which is what ZooKeeper's
//! `X509AuthenticationProvider.getClientId` uses and what operators write in `x509` ACLs.
//!
//! Java's rules (`sun.security.x509.X500Name.getRFC2253Name`, `AVA.toRFC2253String`):
//! * RDNs in reverse order of the certificate's encoding (`CN=..,O=..,C=..`); the values of a
//!   multi-valued RDN joined with `+` in encoded order;
//! * keywords only for CN, C, L, ST, O, OU, STREET, DC and UID; any other attribute is its dotted
//!   OID with `#` and the value's DER in lower-case hex (so an e-mail address attribute prints as
//!   `1.2.840.113549.1.9.1=#16...`); so is a value that is not a string type;
//! * in string values `, = + < > # ; " \` get a backslash, NUL becomes `\00`, and leading or
//!   trailing spaces (and carriage returns) are escaped.

use x509_parser::der_parser::asn1_rs::{Any, Class, Tag};
use x509_parser::prelude::{FromDer, X509Certificate};

/// Keywords Java uses in RFC 2253 output, by OID.
const KEYWORDS: &[(&str, &str)] = &[
    ("2.5.4.3", "CN"),
    ("2.5.4.6", "C"),
    ("2.5.4.7", "L"),
    ("2.5.4.8", "ST"),
    ("2.5.4.10", "O"),
    ("2.5.4.11", "OU"),
    ("2.5.4.9", "STREET"),
    ("0.9.2342.19200300.100.1.25", "DC"),
    ("0.9.2342.19200300.100.1.1", "UID"),
];

/// Characters escaped with a backslash anywhere in a value.
const ESCAPED: &str = ",=+<>#;\"\\";

/// The subject of a DER certificate in Java's RFC 2253 form.
pub fn subject_name(certificate_der: &[u8]) -> Result<String, String> {
    let (_, certificate) = X509Certificate::from_der(certificate_der)
        .map_err(|e| format!("cannot parse the client certificate: {e}"))?;
    let rdns: Vec<_> = certificate.subject().iter().collect();
    let mut out = String::new();
    for (i, rdn) in rdns.iter().rev().enumerate() {
        if i > 0 {
            out.push(',');
        }
        for (j, attribute) in rdn.iter().enumerate() {
            if j > 0 {
                out.push('+');
            }
            let oid = attribute.attr_type().to_id_string();
            let keyword = KEYWORDS.iter().find(|(o, _)| *o == oid).map(|(_, k)| *k);
            let value = attribute.attr_value();
            match (keyword, java_string(value)) {
                (Some(keyword), Some(text)) => {
                    out.push_str(keyword);
                    out.push('=');
                    out.push_str(&escape(&text));
                }
                _ => {
                    out.push_str(keyword.unwrap_or(&oid));
                    out.push_str("=#");
                    out.push_str(&hex(&der(value)));
                }
            }
        }
    }
    Ok(out)
}

/// The value as text, for the string types Java prints as text (`AVA.isDerString`).
fn java_string(value: &Any<'_>) -> Option<String> {
    if value.header.class() != Class::Universal {
        return None;
    }
    let data = value.data;
    match value.header.tag() {
        Tag::PrintableString | Tag::Ia5String | Tag::GeneralString | Tag::Utf8String => {
            Some(String::from_utf8_lossy(data).into_owned())
        }
        // T61 as Java reads it: one byte per character.
        Tag::TeletexString => Some(data.iter().map(|&b| char::from(b)).collect()),
        Tag::BmpString => {
            let units: Vec<u16> = data
                .chunks_exact(2)
                .map(|pair| u16::from_be_bytes([pair[0], pair[1]]))
                .collect();
            Some(String::from_utf16_lossy(&units))
        }
        _ => None,
    }
}

fn escape(text: &str) -> String {
    let mut escaped: Vec<char> = Vec::with_capacity(text.len());
    for c in text.chars() {
        if ESCAPED.contains(c) {
            escaped.push('\\');
            escaped.push(c);
        } else if c == '\0' {
            escaped.extend(['\\', '0', '0']);
        } else {
            escaped.push(c);
        }
    }
    let blank = |c: &char| *c == ' ' || *c == '\r';
    let lead = escaped.iter().take_while(|c| blank(c)).count();
    let trail = escaped.iter().rev().take_while(|c| blank(c)).count();
    let mut out = String::with_capacity(escaped.len() + 4);
    let last_kept = escaped.len().saturating_sub(trail);
    for (i, c) in escaped.iter().enumerate() {
        if i < lead || i >= last_kept {
            out.push('\\');
        }
        out.push(*c);
    }
    out
}

/// The value's DER: identifier, definite length, content.
fn der(value: &Any<'_>) -> Vec<u8> {
    let header = &value.header;
    let mut out = match header.raw_tag() {
        Some(raw) => raw.to_vec(),
        None => {
            let class = (header.class() as u8) << 6;
            let constructed = if header.is_constructed() { 0x20 } else { 0 };
            vec![class | constructed | (header.tag().0 as u8 & 0x1f)]
        }
    };
    let len = value.data.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let skip = bytes.iter().take_while(|b| **b == 0).count();
        out.push(0x80 | (bytes.len() - skip) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }
    out.extend_from_slice(value.data);
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn certificate(dn: rcgen::DistinguishedName) -> Vec<u8> {
        let key = rcgen::KeyPair::generate().expect("key");
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        params.distinguished_name = dn;
        params.self_signed(&key).expect("cert").der().to_vec()
    }

    #[test]
    fn reversed_with_java_keywords() {
        let mut dn = rcgen::DistinguishedName::new();
        dn.push(rcgen::DnType::CountryName, "US");
        dn.push(rcgen::DnType::OrganizationName, "Acme, Inc.");
        dn.push(rcgen::DnType::OrganizationalUnitName, "ops");
        dn.push(rcgen::DnType::CommonName, " client#1 ");
        let name = subject_name(&certificate(dn)).expect("name");
        assert_eq!(name, r"CN=\ client\#1\ ,OU=ops,O=Acme\, Inc.,C=US");
    }

    #[test]
    fn other_attributes_are_hex_der() {
        let mut dn = rcgen::DistinguishedName::new();
        dn.push(
            rcgen::DnType::CustomDnType(vec![1, 2, 840, 113549, 1, 9, 1]),
            rcgen::DnValue::Ia5String("a@b".try_into().expect("ia5")),
        );
        dn.push(rcgen::DnType::CommonName, "x");
        let name = subject_name(&certificate(dn)).expect("name");
        assert_eq!(name, "CN=x,1.2.840.113549.1.9.1=#1603614062");
    }
}
