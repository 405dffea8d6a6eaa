//! Picking tokens and the generation loop, as ../c/main.c: greedy
//! (kb_argmax) at temperature 0, else kb_topk_sample (--top-k),
//! kb_topp_sample (--top-p) or kb_sample, with seed + step as the seed of
//! step `step`, so every language draws the same tokens.  Each token's bytes
//! are written and flushed as it comes; generation stops at the
//! vocabulary's end-of-sequence token (counted among the generated ids, not
//! printed as text) or after --max-tokens.  The loop allocates nothing: the
//! logits, the id list and the piece buffer are made before it.

use std::io::Write;
use std::time::Instant;

use kernelbridge::{Context, Tokenizer};

use crate::error::{Failure, Result};
use crate::model::Model;
use crate::options::Options;

/// How tokens are drawn from a row of logits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Sampler {
    Greedy,
    TopK { k: usize, temperature: f32 },
    TopP { p: f32, temperature: f32 },
    Full { temperature: f32 },
}

impl Sampler {
    /// The sampler the C driver picks for these options (float arguments are
    /// the options' doubles rounded to float, as C passes them).
    pub fn from_options(o: &Options) -> Sampler {
        let temperature = o.temperature as f32;
        if o.temperature == 0.0 {
            Sampler::Greedy
        } else if o.top_k > 0 {
            Sampler::TopK {
                k: o.top_k as usize,
                temperature,
            }
        } else if o.top_p < 1.0 {
            Sampler::TopP {
                p: o.top_p as f32,
                temperature,
            }
        } else {
            Sampler::Full { temperature }
        }
    }

    /// One token from `logits` (one row of the vocabulary's size).
    pub fn pick(self, ctx: &Context, logits: &[f32], seed: u64) -> kernelbridge::Result<i32> {
        let mut next = [0i32];
        let vocab = logits.len();
        match self {
            Sampler::Greedy => ctx.argmax(vocab, logits, &mut next)?,
            Sampler::TopK { k, temperature } => ctx.topk_sample(vocab, logits, k, temperature, seed, &mut next)?,
            Sampler::TopP { p, temperature } => ctx.topp_sample(vocab, logits, p, temperature, seed, &mut next)?,
            Sampler::Full { temperature } => ctx.sample(vocab, logits, temperature, seed, &mut next)?,
        }
        Ok(next[0])
    }
}

/// What a run produced, for the summary line.
pub struct Generated {
    /// The generated ids, the end-of-sequence token included when drawn.
    pub ids: Vec<i32>,
    /// Seconds spent in the decode forward calls.
    pub decode_seconds: f64,
}

/// Writes `bytes` to stdout and flushes (the text streams as it comes); a
/// reader that went away (| head) ends the program quietly, as SIGPIPE ends C's.
pub fn emit(out: &mut impl Write, bytes: &[u8]) -> Result<()> {
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => Err(Failure::Run(format!("writing the output: {e}"))),
    }
}

/// The decode loop.  `logits` holds the prefill's logits; the row of the
/// prompt's last token starts at `last_at`.  Tokens are streamed to `out`
/// unless `print_ids`.
pub fn generate(
    ctx: &Context,
    m: &mut Model,
    tok: &Tokenizer,
    o: &Options,
    logits: &mut [f32],
    last_at: usize,
    out: &mut impl Write,
) -> Result<Generated> {
    let sampler = Sampler::from_options(o);
    let max_tokens = o.max_tokens as usize;
    let vocab = m.vocab;
    let eos = tok.eos();
    let mut ids = Vec::with_capacity(max_tokens);
    let mut piece = vec![0u8; 256];
    let mut last_at = last_at;
    let mut decode_seconds = 0.0;
    for step in 0..max_tokens {
        let seed = o.seed.wrapping_add(step as u64);
        let next = sampler
            .pick(ctx, &logits[last_at..last_at + vocab], seed)
            .map_err(|e| Failure::Run(format!("sampling: {}", e.message())))?;
        ids.push(next);
        if i64::from(next) == eos {
            break;
        }
        if !o.print_ids {
            // The piece's raw bytes: a UTF-8 character may be split across
            // byte-fallback pieces, so nothing is decoded here.  A piece
            // longer than the buffer (a long user-defined token) grows it
            // once; C's fixed 256 bytes would print garbage there.
            if let Ok(mut n) = tok.piece(i64::from(next), false, &mut piece) {
                if n as usize > piece.len() {
                    piece.resize(n as usize, 0);
                    n = tok.piece(i64::from(next), false, &mut piece).unwrap_or(0);
                }
                emit(out, &piece[..n as usize])?;
            }
        }
        if step + 1 == max_tokens {
            break;
        }
        let t1 = Instant::now();
        m.forward(ctx, &[next], false, logits)?;
        decode_seconds += t1.elapsed().as_secs_f64();
        last_at = 0;
    }
    Ok(Generated { ids, decode_seconds })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::parse_args;

    fn sampler(extra: &[&str]) -> Sampler {
        let mut a: Vec<std::ffi::OsString> = ["--model", "m", "--prompt", "p"].iter().map(|s| s.into()).collect();
        a.extend(extra.iter().map(|s| s.into()));
        Sampler::from_options(&parse_args(a).unwrap())
    }

    #[test]
    fn the_c_drivers_choice_of_sampler() {
        assert_eq!(sampler(&[]), Sampler::Greedy);
        assert_eq!(sampler(&["--top-k", "40"]), Sampler::Greedy);
        assert_eq!(
            sampler(&["--temperature", "0.8", "--top-k", "40"]),
            Sampler::TopK {
                k: 40,
                temperature: 0.8
            }
        );
        assert_eq!(
            sampler(&["--temperature", "0.8", "--top-p", "0.9"]),
            Sampler::TopP {
                p: 0.9,
                temperature: 0.8
            }
        );
        assert_eq!(sampler(&["--temperature", "1"]), Sampler::Full { temperature: 1.0 });
        assert_eq!(
            sampler(&["--temperature", "1", "--top-p", "1"]),
            Sampler::Full { temperature: 1.0 }
        );
    }

    #[test]
    fn greedy_and_sampling_on_a_row() {
        let ctx = Context::new(kernelbridge::Backend::Cpu, 1).unwrap();
        let logits = [0.0f32, 3.0, 1.0, -2.0];
        assert_eq!(Sampler::Greedy.pick(&ctx, &logits, 7).unwrap(), 1);
        // Top-1 sampling is greedy whatever the seed.
        let top1 = Sampler::TopK { k: 1, temperature: 1.0 };
        assert_eq!(top1.pick(&ctx, &logits, 1).unwrap(), 1);
        assert_eq!(top1.pick(&ctx, &logits, 42).unwrap(), 1);
        // The same seed draws the same token.
        let full = Sampler::Full { temperature: 1.0 };
        assert_eq!(
            full.pick(&ctx, &logits, 5).unwrap(),
            full.pick(&ctx, &logits, 5).unwrap()
        );
    }
}
