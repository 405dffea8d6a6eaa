//! vocab.txt: one token per line, its id the line number (from 0).

use std::collections::HashMap;
use std::path::Path;

use crate::error::{fail, Result};
use crate::files::read_file;
use crate::wordpiece::SPECIAL_TOKENS;

pub fn read_vocab(path: &Path, vocab_size: usize) -> Result<HashMap<String, i32>> {
    let bytes = read_file(path)?;
    let Ok(text) = std::str::from_utf8(&bytes) else {
        fail!("{}: not UTF-8", path.display())
    };
    let mut lines: Vec<&str> = text.split('\n').collect();
    if lines.last() == Some(&"") {
        lines.pop(); // the newline ending the last line
    }
    if lines.len() != vocab_size {
        fail!(
            "{}: {} tokens, config.json says vocab_size {vocab_size}",
            path.display(),
            lines.len()
        );
    }
    // A repeated token keeps its last id.
    let vocab: HashMap<String, i32> = lines
        .iter()
        .enumerate()
        .map(|(i, t)| (t.to_string(), i as i32))
        .collect();
    for tok in SPECIAL_TOKENS {
        if !vocab.contains_key(tok) {
            fail!("{}: special token {tok} is missing", path.display());
        }
    }
    Ok(vocab)
}
