//! XML from outside (clients' request documents, a remote tier's answers) turned into typed
//! values. Document type declarations are refused before the deserialiser sees them (S3
//! takes none, and quick-xml's deserialiser can reach an `unreachable!` on text split around
//! one), and a panic of the deserialiser on some other input is an error, never a crash.

use quick_xml::events::Event;
use serde::de::DeserializeOwned;

/// Deserialises `text`, or says why it cannot.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    let mut reader = quick_xml::Reader::from_str(text);
    loop {
        match reader.read_event() {
            Ok(Event::DocType(_)) => {
                return Err("document type declarations are not accepted".into())
            }
            Ok(Event::Eof) => break,
            Ok(_) => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    let deserialised = std::panic::catch_unwind(|| quick_xml::de::from_str::<T>(text));
    match deserialised {
        Ok(parsed) => parsed.map_err(|e| e.to_string()),
        Err(_) => Err("the XML deserialiser failed on this document".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    struct Complete {
        #[serde(rename = "Quiet")]
        _quiet: Option<String>,
    }

    #[test]
    fn a_document_type_declaration_is_refused_not_a_panic() {
        let text = "<CompleteMultipartUpload><Quiet> <!DOCTYPE x [>AWS4-HMAC-SHA256";
        assert!(from_str::<Complete>(text).is_err());
        let text = "<!DOCTYPE x><CompleteMultipartUpload></CompleteMultipartUpload>";
        assert!(from_str::<Complete>(text).is_err());
        let plain = "<CompleteMultipartUpload><Quiet>true</Quiet></CompleteMultipartUpload>";
        assert!(from_str::<Complete>(plain).is_ok());
    }
}
