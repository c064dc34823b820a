//! User metadata beyond US-ASCII, as S3 carries it in headers: values sent as RFC 2047
//! encoded-words (`=?UTF-8?B?Y2Fmw6k=?=`) are decoded before they are stored, and values
//! that are not plain visible ASCII are answered as encoded-words, "mail-safe", as S3
//! answers them. Only what S3 metadata needs is handled: the UTF-8, US-ASCII and ISO-8859-1
//! charsets and both encodings (`B`, `Q`); any other value is taken as it was sent. (The
//! crates that decode RFC 2047 in full bring a parser-combinator library for this.)

use base64::Engine as _;

/// A header value as S3 stores it: the text of its encoded-words when it is made of them
/// only (separated by white space, which then counts for nothing), else the value as sent.
pub fn decode(value: &str) -> String {
    let mut decoded = String::new();
    for word in value.split_ascii_whitespace() {
        match decode_word(word) {
            Some(text) => decoded.push_str(&text),
            None => return value.to_string(),
        }
    }
    match value.trim().is_empty() {
        true => value.to_string(),
        false => decoded,
    }
}

/// A stored value as S3 answers it: as it is when it is visible ASCII (spaces and tabs
/// included), else one UTF-8 `B` encoded-word.
pub fn encode(value: &str) -> String {
    if value
        .bytes()
        .all(|b| b == b'\t' || (b' '..=b'~').contains(&b))
    {
        return value.to_string();
    }
    let base64 = base64::engine::general_purpose::STANDARD.encode(value.as_bytes());
    format!("=?UTF-8?B?{base64}?=")
}

/// One `=?charset?encoding?text?=`, decoded; `None` when `word` is not one this knows.
fn decode_word(word: &str) -> Option<String> {
    let inner = word.strip_prefix("=?")?.strip_suffix("?=")?;
    let mut fields = inner.splitn(3, '?');
    let (charset, encoding, text) = (fields.next()?, fields.next()?, fields.next()?);
    // RFC 2231 lets a charset name its language after a `*`.
    let charset = charset.split('*').next()?;
    let bytes = match encoding {
        "B" | "b" => base64::engine::general_purpose::STANDARD
            .decode(text)
            .ok()?,
        "Q" | "q" => decode_q(text)?,
        _ => return None,
    };
    match charset.to_ascii_uppercase().as_str() {
        "UTF-8" | "US-ASCII" => String::from_utf8(bytes).ok(),
        "ISO-8859-1" | "LATIN1" => Some(bytes.iter().map(|&b| char::from(b)).collect()),
        _ => None,
    }
}

/// The `Q` encoding: `_` is a space, `=XX` a byte in hex, any other printable ASCII itself.
fn decode_q(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len());
    let mut bytes = text.bytes();
    while let Some(b) = bytes.next() {
        match b {
            b'_' => out.push(b' '),
            b'=' => {
                let hex = [bytes.next()?, bytes.next()?];
                out.push(u8::from_str_radix(std::str::from_utf8(&hex).ok()?, 16).ok()?);
            }
            b'!'..=b'~' => out.push(b),
            _ => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoded_words_are_decoded_and_other_values_kept() {
        assert_eq!(decode("=?UTF-8?B?Y2Fmw6k=?="), "café");
        assert_eq!(decode("=?utf-8?q?caf=C3=A9_au_lait?="), "café au lait");
        assert_eq!(decode("=?UTF-8?Q?=04mymeta?="), "\u{4}mymeta");
        assert_eq!(decode("=?ISO-8859-1?Q?caf=E9?="), "café");
        // Adjacent words join; the white space between them is no text.
        assert_eq!(decode("=?UTF-8?B?Y2Fm?= =?UTF-8?B?w6k=?="), "café");
        for kept in [
            "plain",
            "café",
            "=?UTF-8?B?Y2Fmw6k=?= and more",
            "=?KOI8-R?B?wc/=?=",
            "=?UTF-8?X?abc?=",
            "=?UTF-8?B?not base64!?=",
            "=?UTF-8?B?/w==?=",
            "=?UTF-8?Q?=4?=",
            "",
            "  ",
        ] {
            assert_eq!(decode(kept), kept);
        }
    }

    #[test]
    fn values_beyond_visible_ascii_are_answered_as_encoded_words() {
        assert_eq!(encode("plain value\t~"), "plain value\t~");
        assert_eq!(encode("café"), "=?UTF-8?B?Y2Fmw6k=?=");
        assert_eq!(encode("\u{4}mymeta"), "=?UTF-8?B?BG15bWV0YQ==?=");
        for value in ["café", "\u{4}mymeta", "日本語", "a\u{7f}b"] {
            assert_eq!(decode(&encode(value)), value);
        }
    }
}
