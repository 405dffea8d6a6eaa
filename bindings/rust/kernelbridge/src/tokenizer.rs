//! Convenience methods of [`Tokenizer`] (the generated type wraps the C
//! calls as they are, with caller-sized buffers): whole results as `Vec`s.
//!
//! ```
//! use kernelbridge::Tokenizer;
//!
//! // <unk>, <s>, the 256 byte tokens <0x00>..<0xFF>, then "▁", "a", "▁a".
//! let mut pieces: Vec<String> = vec!["<unk>".into(), "<s>".into()];
//! pieces.extend((0..256).map(|b| format!("<0x{:02X}>", b)));
//! pieces.extend(["\u{2581}", "a", "\u{2581}a"].iter().map(|s| s.to_string()));
//! let mut types = vec![2, 3];
//! types.extend(std::iter::repeat(6).take(256));
//! types.extend([1, 1, 1]);
//! let mut scores = vec![0.0f32; 258];
//! scores.extend([-1.0, -2.0, -3.0]);
//! let (blob, offsets) = Tokenizer::pack_pieces(&pieces)?;
//! let tok = Tokenizer::new(&blob, &offsets, &scores, &types, 1, -1, 0, true, false, true)?;
//! let ids = tok.encode("a a", true, false)?;
//! assert_eq!(ids, vec![1, 260, 260]);
//! assert_eq!(tok.decode(&ids[1..], false, false)?, b"a a");
//! # Ok::<(), kernelbridge::Error>(())
//! ```

use crate::{Error, Result, Status, Tokenizer};

impl Tokenizer {
    /// The pieces as `kb_tokenizer_create` takes them: their UTF-8 bytes
    /// concatenated, and the offsets (`pieces.len() + 1` of them).
    ///
    /// # Errors
    ///
    /// `InvalidArgument` when the pieces take more than `i32::MAX` bytes.
    pub fn pack_pieces<S: AsRef<str>>(pieces: &[S]) -> Result<(Vec<u8>, Vec<i32>)> {
        let mut blob = Vec::new();
        let mut offsets = Vec::with_capacity(pieces.len() + 1);
        offsets.push(0i32);
        for p in pieces {
            blob.extend_from_slice(p.as_ref().as_bytes());
            let end = i32::try_from(blob.len())
                .map_err(|_| Error::new(Status::InvalidArgument, "kb_tokenizer_create: the pieces take more than 2^31 - 1 bytes"))?;
            offsets.push(end);
        }
        Ok((blob, offsets))
    }

    /// The token ids of `text` (any bytes: `&str` or `&[u8]`), as llama.cpp's
    /// `llama_tokenize(text, add_special, parse_special)`.
    ///
    /// # Errors
    ///
    /// The status of `kb_tokenize`, with its message.
    pub fn encode<T: AsRef<[u8]> + ?Sized>(&self, text: &T, add_special: bool, parse_special: bool) -> Result<Vec<i32>> {
        let text = text.as_ref();
        // Most text needs fewer tokens than bytes: one call, else a second one
        // with the count the first reported.
        let mut ids = vec![0i32; text.len() + 2];
        let mut n = self.tokenize(text, add_special, parse_special, &mut ids)? as usize;
        if n > ids.len() {
            ids = vec![0i32; n];
            n = self.tokenize(text, add_special, parse_special, &mut ids)? as usize;
        }
        ids.truncate(n);
        Ok(ids)
    }

    /// The bytes token `id` stands for (`kb_tokenizer_piece`); a byte token's
    /// byte may be part of a UTF-8 character (keep incomplete sequences until
    /// the next pieces complete them when streaming).
    ///
    /// # Errors
    ///
    /// `InvalidArgument` for an id outside the vocabulary.
    pub fn piece_bytes(&self, id: i64, special: bool) -> Result<Vec<u8>> {
        let mut buf = vec![0u8; 64];
        let mut n = self.piece(id, special, &mut buf)? as usize;
        if n > buf.len() {
            buf = vec![0u8; n];
            n = self.piece(id, special, &mut buf)? as usize;
        }
        buf.truncate(n);
        Ok(buf)
    }

    /// The bytes of a token sequence, as llama.cpp's `llama_detokenize`.
    ///
    /// # Errors
    ///
    /// `InvalidArgument` for an id outside the vocabulary.
    pub fn decode(&self, ids: &[i32], remove_special: bool, unparse_special: bool) -> Result<Vec<u8>> {
        let mut empty: [u8; 0] = [];
        let n = self.detokenize(ids, remove_special, unparse_special, &mut empty)? as usize;
        let mut out = vec![0u8; n];
        if n > 0 {
            self.detokenize(ids, remove_special, unparse_special, &mut out)?;
        }
        Ok(out)
    }
}
