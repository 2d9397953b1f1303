//! The exception classes of `amber`, and the one place that turns an encode or decode failure
//! into one of them with its attributes (`.path`; `.offset`, `.kind`, `.module`, `.qualname`).

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

use crate::decode::DecodeFailure;
use crate::encode::{EncodeFail, FailKind};

pyo3::create_exception!(
    amber,
    EncodeError,
    PyTypeError,
    "A value could not be encoded. `.path` says where it sits in the graph (e.g. `root[\"users\"][3]`)."
);
pyo3::create_exception!(
    amber,
    DecodeError,
    PyValueError,
    "The bytes are not a valid amber payload. `.offset` is the byte position, `.kind` the error kind."
);
pyo3::create_exception!(
    amber,
    ClassNotAllowedError,
    DecodeError,
    "The payload names a class the caller did not allow. `.module` and `.qualname` name it; pass the class in `types=[...]` to allow it."
);
pyo3::create_exception!(
    amber,
    DecodeLimitError,
    DecodeError,
    "The payload exceeds a decoding limit (max_depth, max_alloc, max_decompressed or the hash-flooding limits)."
);
pyo3::create_exception!(
    amber,
    SignatureError,
    DecodeError,
    "The payload is not authentic or not fresh for this decoder: unsigned where a key was given, signed where none was, signed by an unknown key, altered, expired or dated in the future. `.kind` says which."
);

/// An encode failure as the `EncodeError` the caller sees, `.path` set.
pub(crate) fn encode_error(py: Python<'_>, fail: EncodeFail) -> PyErr {
    let path = fail.path();
    let message = match &fail.kind {
        FailKind::Unsupported(name) => format!("unsupported type {name} at {path}"),
        FailKind::TooDeep(limit) => {
            format!("nesting deeper than max_depth={limit} at {path}")
        }
        FailKind::Cycle => {
            format!("cycle at {path}: a container contains itself, which refs=False cannot encode")
        }
        FailKind::Python(err) => format!("{} at {path}", err.value(py)),
        FailKind::Restart => format!("internal error: unfinished encoding pass at {path}"),
        FailKind::Refused(reason) => format!("{reason} at {path}"),
    };
    let err = EncodeError::new_err(message);
    let _ = err.value(py).setattr("path", path);
    if let FailKind::Python(cause) = fail.into_kind() {
        err.set_cause(py, Some(cause));
    }
    err
}

/// A decode failure as the exception the caller sees: `DecodeError` or the subclass its kind
/// belongs to, with `.offset` and `.kind` (and the class named by a `ClassNotAllowedError`).
pub(crate) fn decode_error(py: Python<'_>, failure: DecodeFailure) -> PyErr {
    match failure {
        DecodeFailure::Python(err) => err,
        DecodeFailure::Format(error, refused) => {
            let amber_format::error::DecodeErrorFields {
                kind,
                offset,
                detail,
            } = error.into_fields();
            let message = format!("{detail} (at byte {offset}, {})", kind.name());
            let err = if kind.is_limit() {
                DecodeLimitError::new_err(message)
            } else if kind.is_signature() {
                SignatureError::new_err(message)
            } else if kind == amber_format::ErrorKind::ClassNotAllowed {
                ClassNotAllowedError::new_err(message)
            } else {
                DecodeError::new_err(message)
            };
            let value = err.value(py);
            let _ = value.setattr("offset", offset);
            let _ = value.setattr("kind", kind.name());
            if let Some((module, qualname)) = refused {
                let _ = value.setattr("module", module);
                let _ = value.setattr("qualname", qualname);
            }
            err
        }
    }
}
