//! Reading the model folder's files; errors name the file.

use std::io::ErrorKind;
use std::path::Path;

use crate::error::{fail, Result};
use crate::json::{self, Json};

pub fn read_file(path: &Path) -> Result<Vec<u8>> {
    match std::fs::read(path) {
        Ok(b) => Ok(b),
        Err(e) if e.kind() == ErrorKind::NotFound => fail!("{}: missing", path.display()),
        Err(e) => fail!("{}: cannot read: {e}", path.display()),
    }
}

/// The JSON object in `path`; `None` when the file is absent and not required.
pub fn read_json_object(path: &Path, required: bool) -> Result<Option<Json>> {
    if !required && !path.exists() {
        return Ok(None);
    }
    let bytes = read_file(path)?;
    let Ok(text) = std::str::from_utf8(&bytes) else {
        fail!("{}: not UTF-8", path.display())
    };
    match json::parse(text) {
        Ok(v @ Json::Object(_)) => Ok(Some(v)),
        Ok(_) => fail!("{}: not a JSON object", path.display()),
        Err(e) => fail!("{}: not valid JSON: {e}", path.display()),
    }
}

pub fn shape_string(shape: &[i64]) -> String {
    let parts: Vec<String> = shape.iter().map(i64::to_string).collect();
    format!("[{}]", parts.join(", "))
}
