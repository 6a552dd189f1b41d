use wasm_bindgen::prelude::*;

/// A newtype that represents Serde errors as JavaScript exceptions.
#[derive(Debug)]
pub struct Error(JsValue);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        #[wasm_bindgen]
        extern "C" {
            #[wasm_bindgen(js_name = String)]
            pub fn to_string(value: &JsValue) -> String;
        }

        to_string(&self.0).fmt(f)
    }
}

impl std::error::Error for Error {}

impl Error {
    /// Creates a JavaScript `Error` with a given message.
    pub fn new<T: std::fmt::Display>(msg: T) -> Self {
        Error(JsError::new(&msg.to_string()).into())
    }
}

impl serde::ser::Error for Error {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        Error::new(msg)
    }
}

impl serde::de::Error for Error {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        Error::new(msg)
    }

    // IRIS patch: serde's own wording of what was found (`Unexpected`'s Display) prints a
    // floating point value with core's float formatting, 15 KB of code in the wasm for an
    // error message; this one says "floating point number" without the digits.
    fn invalid_type(unexp: serde::de::Unexpected, exp: &dyn serde::de::Expected) -> Self {
        Error::new(format_args!("invalid type: {}, expected {}", Found(unexp), exp))
    }

    fn invalid_value(unexp: serde::de::Unexpected, exp: &dyn serde::de::Expected) -> Self {
        Error::new(format_args!("invalid value: {}, expected {}", Found(unexp), exp))
    }
}

/// What a value was, in an error message (IRIS patch, see `invalid_type`).
struct Found<'a>(serde::de::Unexpected<'a>);

impl std::fmt::Display for Found<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        use serde::de::Unexpected::*;
        match self.0 {
            Bool(b) => write!(f, "boolean `{}`", b),
            Unsigned(i) => write!(f, "integer `{}`", i),
            Signed(i) => write!(f, "integer `{}`", i),
            Float(_) => f.write_str("floating point number"),
            Char(c) => write!(f, "character `{}`", c),
            Str(s) => write!(f, "string {:?}", s),
            Bytes(_) => f.write_str("byte array"),
            Unit => f.write_str("unit value"),
            Option => f.write_str("Option value"),
            NewtypeStruct => f.write_str("newtype struct"),
            Seq => f.write_str("sequence"),
            Map => f.write_str("map"),
            Enum => f.write_str("enum"),
            UnitVariant => f.write_str("unit variant"),
            NewtypeVariant => f.write_str("newtype variant"),
            TupleVariant => f.write_str("tuple variant"),
            StructVariant => f.write_str("struct variant"),
            Other(other) => f.write_str(other),
        }
    }
}

/// This conversion is needed for `?` to just work when using wasm-bindgen
/// imports that return JavaScript exceptions as `Result<T, JsValue>`.
impl From<JsValue> for Error {
    fn from(error: JsValue) -> Error {
        Error(error)
    }
}

// This conversion is needed for `?` to just work in wasm-bindgen exports
// that return `Result<T, JsValue>` to throw JavaScript exceptions.
impl From<Error> for JsValue {
    fn from(error: Error) -> JsValue {
        error.0
    }
}
