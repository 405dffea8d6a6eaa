//! The one error type of the example: a problem with the model files or the
//! input, with a message naming the file (and tensor).

use std::fmt;

#[derive(Debug)]
pub struct ModelError(pub String);

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ModelError {}

impl From<kernelbridge::Error> for ModelError {
    fn from(e: kernelbridge::Error) -> Self {
        ModelError(format!("kernelbridge: {e}"))
    }
}

pub type Result<T> = std::result::Result<T, ModelError>;

/// `Err(ModelError(format!(...)))`.
macro_rules! fail {
    ($($arg:tt)*) => { return Err($crate::error::ModelError(format!($($arg)*))) };
}
pub(crate) use fail;
