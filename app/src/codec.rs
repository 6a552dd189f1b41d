//! How the app's JSON travels between the server and the browser: one writer (serde_json) and,
//! in the browser, one reader ([`read_json`]) for every answer of a server function
//! ([`TextJsonEncoding`], also [`AppError`]'s encoder), the data a page was rendered with
//! ([`PageJson`], the resources' codec) and the live stream's events (crate::live).
//!
//! The reader in the browser is the engine's `JSON.parse` with serde_wasm_bindgen: the wasm
//! then has no JSON parser and no copy of one per answer type (BENCHMARKS.md: 10.7 KB gzip of
//! Activity's wasm). The answers are the same JSON as server_fn's own `Json`
//! (`application/json`, `serde_json::to_vec` on the server).
//!
//! [`AppError`]: crate::error::AppError

use leptos::server_fn::codec::Post;
use leptos::server_fn::{Bytes, ContentType, Decodes, Encodes, Format, FormatType};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// JSON written by serde_json and read by [`read_json`] (see the module's doc).
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
    type Error = String;

    fn decode(bytes: Bytes) -> Result<T, Self::Error> {
        let text = std::str::from_utf8(&bytes).map_err(|e| e.to_string())?;
        read_json(text)
    }
}

/// Reads JSON text into a `T`.
///
/// In the browser (`hydrate`) the engine parses it (`JSON.parse`, app/src/json_client.js) and
/// serde_wasm_bindgen reads the parsed value, so the wasm holds no JSON parser and no
/// per-type copy of one (BENCHMARKS.md); an integer beyond 2^53 - 1 stays exact (a BigInt).
/// Elsewhere (the server, tests) serde_json reads it.
///
/// # Errors
/// A sentence: the text is not JSON, or not a `T` (which field, which type).
pub fn read_json<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    #[cfg(feature = "hydrate")]
    {
        serde_wasm_bindgen::from_value(browser::parse(text)?).map_err(|e| e.to_string())
    }
    #[cfg(not(feature = "hydrate"))]
    {
        serde_json::from_str(text).map_err(|e| e.to_string())
    }
}

#[cfg(feature = "hydrate")]
mod browser {
    use wasm_bindgen::prelude::*;

    #[wasm_bindgen(module = "/src/json_client.js")]
    extern "C" {
        /// `JSON.parse` with big integers kept exact; throws an `Error` on bad text.
        #[wasm_bindgen(js_name = parseJson, catch)]
        fn parse_json(text: &str) -> Result<JsValue, JsValue>;
    }

    /// The parsed value, or the parser's sentence. Not inlined: one copy, not one per type
    /// `read_json` reads.
    #[inline(never)]
    pub fn parse(text: &str) -> Result<JsValue, String> {
        parse_json(text).map_err(|e| {
            js_sys::Error::from(e)
                .message()
                .as_string()
                .unwrap_or_else(|| "the answer is not JSON".to_owned())
        })
    }
}

/// The codec of the pages' resources (`Resource::new_with_options`): the data the server
/// rendered with travels in the page as serde_json's text and is read with [`read_json`], the
/// reader of every answer, rather than Leptos' default (`JsonSerdeCodec`, serde_json's reader).
pub struct PageJson;

impl<T: Serialize> leptos::server::codee::Encoder<T> for PageJson {
    type Error = serde_json::Error;
    type Encoded = String;

    fn encode(val: &T) -> Result<String, serde_json::Error> {
        serde_json::to_string(val)
    }
}

impl<T: DeserializeOwned> leptos::server::codee::Decoder<T> for PageJson {
    type Error = String;
    type Encoded = str;

    fn decode(val: &str) -> Result<T, String> {
        read_json(val)
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

    #[test]
    fn page_data_reads_back_as_written_and_big_integers_stay_exact() {
        use leptos::server::codee::{Decoder, Encoder};
        let value =
            serde_json::json!({"id": 12345678901234567890_u64, "low": i64::MIN, "half": 1.5});
        let text = <PageJson as Encoder<serde_json::Value>>::encode(&value).unwrap();
        assert_eq!(text, serde_json::to_string(&value).unwrap());
        let back: serde_json::Value = <PageJson as Decoder<_>>::decode(&text).unwrap();
        assert_eq!(back, value);
        assert_eq!(back["id"].as_u64(), Some(12345678901234567890));
        let bad = <PageJson as Decoder<serde_json::Value>>::decode("{\"id\": 1");
        assert!(bad.unwrap_err().contains("EOF"));
    }
}
