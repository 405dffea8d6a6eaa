//! The file's own vocabulary (the tokenizer.ggml.* keys) as a kernelbridge
//! Tokenizer: llama.cpp's SentencePiece algorithm on these pieces, scores and
//! types.  Read key by key as the C driver's make_tokenizer does, with the
//! same defaults for absent keys (no BOS/EOS/UNK ids; add BOS and the space
//! prefix, no EOS).

use kernelbridge::{Context, Gguf, Tokenizer};

use crate::error::{fail, zeroed, Failure, Result};

/// The library's message after a failed call, as C prints it: "vocabulary: ...".
fn vocab_err(e: kernelbridge::Error) -> Failure {
    Failure::Run(format!("vocabulary: {}", e.message()))
}

pub fn make_tokenizer(ctx: &Context, g: &Gguf) -> Result<Tokenizer> {
    // Only llama.cpp's "llama" (SentencePiece) vocabulary is supported; a
    // name of 32 bytes or more is not looked at, as in C.
    let model_at = g.find_key(ctx, "tokenizer.ggml.model").map_err(vocab_err)?;
    if model_at >= 0 {
        let bytes = g.string_bytes(ctx, model_at).map_err(vocab_err)?;
        if bytes < 32 {
            let mut kind = vec![0u8; bytes as usize];
            if g.get_string(ctx, model_at, &mut kind).is_ok() {
                // C compares the NUL-terminated copy.
                let end = kind.iter().position(|&b| b == 0).unwrap_or(kind.len());
                if &kind[..end] != b"llama" {
                    fail!(
                        "tokenizer '{}' is not supported (only 'llama')",
                        String::from_utf8_lossy(&kind[..end])
                    );
                }
            }
        }
    }
    let at = g.find_key(ctx, "tokenizer.ggml.tokens").map_err(vocab_err)?;
    if at < 0 {
        fail!("the model has no vocabulary (tokenizer.ggml.tokens)");
    }
    let n = g.array_length(ctx, at).map_err(vocab_err)?;
    let bytes = g.string_array_bytes(ctx, at).map_err(vocab_err)?;
    let (n, bytes) = match (usize::try_from(n), usize::try_from(bytes)) {
        (Ok(n), Ok(b)) => (n, b),
        _ => fail!("vocabulary: {n} pieces of {bytes} bytes"),
    };
    let mut pieces: Vec<u8> = zeroed(bytes, "the vocabulary")?;
    let mut offsets: Vec<i32> = zeroed(n + 1, "the vocabulary")?;
    // Absent scores are zeros and absent types normal (1), as llama.cpp
    // and the other languages' examples take them.
    let mut scores: Vec<f32> = zeroed(n, "the vocabulary")?;
    let mut types: Vec<i32> = zeroed(n, "the vocabulary")?;
    types.fill(1);
    g.get_string_array_data(ctx, at, &mut pieces).map_err(vocab_err)?;
    g.get_string_array_offsets(ctx, at, &mut offsets).map_err(vocab_err)?;

    let int = |key: &str, default: i64| -> Result<i64> {
        let k = g.find_key(ctx, key).map_err(vocab_err)?;
        if k < 0 {
            return Ok(default);
        }
        g.get_int64(ctx, k).map_err(vocab_err)
    };
    // The keys in C's order, so that the first bad one is the one reported.
    let scores_at = g.find_key(ctx, "tokenizer.ggml.scores").map_err(vocab_err)?;
    if scores_at >= 0 {
        g.get_f32(ctx, scores_at, &mut scores).map_err(vocab_err)?;
    }
    let types_at = g.find_key(ctx, "tokenizer.ggml.token_type").map_err(vocab_err)?;
    if types_at >= 0 {
        g.get_i32(ctx, types_at, &mut types).map_err(vocab_err)?;
    }
    let bos = int("tokenizer.ggml.bos_token_id", -1)?;
    let eos = int("tokenizer.ggml.eos_token_id", -1)?;
    let unk = int("tokenizer.ggml.unknown_token_id", -1)?;
    let add_bos = int("tokenizer.ggml.add_bos_token", 1)?;
    let add_eos = int("tokenizer.ggml.add_eos_token", 0)?;
    let add_space = int("tokenizer.ggml.add_space_prefix", 1)?;
    Tokenizer::new(
        &pieces,
        &offsets,
        &scores,
        &types,
        bos,
        eos,
        unk,
        add_bos != 0,
        add_eos != 0,
        add_space != 0,
    )
    .map_err(vocab_err)
}
