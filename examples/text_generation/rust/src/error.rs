//! The example's errors: a message for the one "error: ..." line on stderr,
//! and whether it is a problem with the options (exit status 2, with the
//! usage) or with the model, the prompt or the run (exit status 1).

use std::fmt;

#[derive(Debug, PartialEq)]
pub enum Failure {
    /// Bad options: the message, then the usage; exit status 2.
    Usage(String),
    /// Anything else (the file, the prompt, a kernel): exit status 1.
    Run(String),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Usage(m) | Failure::Run(m) => f.write_str(m),
        }
    }
}

pub type Result<T> = std::result::Result<T, Failure>;

/// `return Err(Failure::Run(format!(...)))`.
macro_rules! fail {
    ($($arg:tt)*) => { return Err($crate::error::Failure::Run(format!($($arg)*))) };
}
pub(crate) use fail;

/// A failed library call as C's drivers print it: what was being done, then
/// the library's own message (the binding's `Error` adds the status name,
/// which the C driver does not print).
pub fn lib(what: &str) -> impl Fn(kernelbridge::Error) -> Failure + '_ {
    move |e| Failure::Run(format!("{what}: {}", e.message()))
}

/// A failed library call whose message is printed as it is (C prints
/// `kb_context_last_error` alone after kb_gguf_open, kb_tokenize, ...).
pub fn plain(e: kernelbridge::Error) -> Failure {
    Failure::Run(e.message().to_string())
}

/// A zero-filled vector of `n` elements, or an error naming `what` when the
/// memory cannot be had (C's drivers check malloc; Rust's `vec!` would abort).
pub fn zeroed<T: Clone + Default>(n: usize, what: &str) -> Result<Vec<T>> {
    let mut v = Vec::new();
    if v.try_reserve_exact(n).is_err() {
        fail!("no memory for {what}");
    }
    v.resize(n, T::default());
    Ok(v)
}
