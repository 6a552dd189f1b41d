//! The server functions' answer encoding: the same JSON as server_fn's own `Json`
//! (`application/json`, `serde_json::to_vec` on the server), but read in the browser with
//! `serde_json::from_str`, the reader Leptos uses for a resource's data in the page. Every answer
//! type (an Activity snapshot, a card) is then deserialised by one copy of its code in the wasm
//! instead of two (`from_slice` and `from_str` are distinct monomorphisations). [`AppError`]
//! travels the same way (its `FromServerFnError::Encoder`).
//!
//! [`AppError`]: crate::error::AppError

use leptos::server_fn::codec::Post;
use leptos::server_fn::{Bytes, ContentType, Decodes, Encodes, Format, FormatType};
use serde::de::{DeserializeOwned, Error as _};
use serde::Serialize;

/// JSON, decoded from text (see the module's doc).
pub struct TextJsonEncoding;

impl ContentType for TextJsonEncoding {
    const CONTENT_TYPE: &'static str = "application/json";
}

impl FormatType for TextJsonEncoding {
    const FORMAT_TYPE: Format = Format::Text;
}

impl<T: Serialize> Encodes<T> for TextJsonEncoding {
    type Error = serde_json::Error;

    fn encode(output: &T) -> Result<Bytes, Self::Error> {
        serde_json::to_vec(output).map(Bytes::from)
    }
}

impl<T: DeserializeOwned> Decodes<T> for TextJsonEncoding {
    type Error = serde_json::Error;

    fn decode(bytes: Bytes) -> Result<T, Self::Error> {
        let text = std::str::from_utf8(&bytes).map_err(serde_json::Error::custom)?;
        serde_json::from_str(text)
    }
}

/// A server function's output as [`TextJsonEncoding`] in a POST's answer
/// (`#[server(…, output = TextJson)]`).
pub type TextJson = Post<TextJsonEncoding>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_read_back_as_written() {
        let value =
            serde_json::json!({"approvals": [{"id": "a1", "lines": ["é", "😀"]}], "next": null});
        let bytes = <TextJsonEncoding as Encodes<_>>::encode(&value).unwrap();
        assert_eq!(bytes, serde_json::to_vec(&value).unwrap());
        let back: serde_json::Value = <TextJsonEncoding as Decodes<_>>::decode(bytes).unwrap();
        assert_eq!(back, value);
        let bad =
            <TextJsonEncoding as Decodes<serde_json::Value>>::decode(Bytes::from_static(b"\xff"));
        assert!(bad.is_err());
    }
}
