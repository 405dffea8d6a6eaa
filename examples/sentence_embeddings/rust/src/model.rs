//! A loaded model: configuration, tokeniser and encoder from one model folder.

use std::path::Path;

use kernelbridge::{Backend, Context};

use crate::config::Config;
use crate::encoder::Encoder;
use crate::error::{fail, Result};
use crate::vocab::read_vocab;
use crate::weights::Weights;
use crate::wordpiece::WordPiece;

pub struct Model {
    tokenizer: WordPiece,
    encoder: Encoder,
}

impl Model {
    pub fn load(dir: &Path, threads: usize) -> Result<Model> {
        if !dir.is_dir() {
            fail!(
                "{}: not a directory (the model folder holding model.safetensors)",
                dir.display()
            );
        }
        let cfg = Config::read(dir)?;
        let vocab = read_vocab(&dir.join("vocab.txt"), cfg.vocab_size)?;
        let weights = Weights::load(dir, &cfg)?;
        let tokenizer = WordPiece::new(vocab, cfg.max_seq_length);
        let ctx = Context::new(Backend::Cpu, threads)?;
        Ok(Model {
            tokenizer,
            encoder: Encoder::new(cfg, weights, ctx),
        })
    }

    pub fn hidden(&self) -> usize {
        self.encoder.c.hidden
    }

    pub fn tokenize(&self, texts: &[String]) -> Vec<Vec<i32>> {
        texts.iter().map(|t| self.tokenizer.encode(t)).collect()
    }

    /// `texts.len()` unit vectors of `hidden` floats, row after row.
    pub fn embed(&self, texts: &[String]) -> Result<Vec<f32>> {
        if texts.is_empty() {
            fail!("no sentences to embed");
        }
        self.encoder.embed(&self.tokenize(texts))
    }

    /// Cosine similarities of unit vectors: E E^T.
    pub fn similarity(&self, emb: &[f32], n: usize) -> Result<Vec<f32>> {
        let h = self.hidden();
        let mut sim = vec![0f32; n * n];
        self.encoder
            .context()
            .gemm(false, true, n, n, h, 1.0, emb, h, emb, h, 0.0, &mut sim, n)?;
        Ok(sim)
    }
}
