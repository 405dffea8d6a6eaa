//! The encoder's tensors from model.safetensors, by name, with their shapes checked.

use std::ops::Range;
use std::path::Path;

use crate::config::Config;
use crate::error::Result;
use crate::safetensors::SafeTensors;

/// Where each tensor of one layer lies in the file's data.
pub struct Layer {
    pub q_w: Range<usize>,
    pub q_b: Range<usize>,
    pub k_w: Range<usize>,
    pub k_b: Range<usize>,
    pub v_w: Range<usize>,
    pub v_b: Range<usize>,
    pub o_w: Range<usize>,
    pub o_b: Range<usize>,
    pub ln1_w: Range<usize>,
    pub ln1_b: Range<usize>,
    pub ff1_w: Range<usize>,
    pub ff1_b: Range<usize>,
    pub ff2_w: Range<usize>,
    pub ff2_b: Range<usize>,
    pub ln2_w: Range<usize>,
    pub ln2_b: Range<usize>,
}

pub struct Weights {
    file: SafeTensors,
    pub word: Range<usize>,
    pub position: Range<usize>,
    pub token_type: Range<usize>,
    pub ln_w: Range<usize>,
    pub ln_b: Range<usize>,
    pub layers: Vec<Layer>,
}

impl Weights {
    pub fn load(dir: &Path, c: &Config) -> Result<Weights> {
        let file = SafeTensors::open(&dir.join("model.safetensors"))?;
        let (h, i) = (c.hidden as i64, c.intermediate as i64);
        let t = |name: &str, shape: &[i64]| file.float32(name, shape);
        let word = t("embeddings.word_embeddings.weight", &[c.vocab_size as i64, h])?;
        let position = t("embeddings.position_embeddings.weight", &[c.max_positions as i64, h])?;
        let token_type = t("embeddings.token_type_embeddings.weight", &[c.type_vocab as i64, h])?;
        let ln_w = t("embeddings.LayerNorm.weight", &[h])?;
        let ln_b = t("embeddings.LayerNorm.bias", &[h])?;
        let mut layers = Vec::with_capacity(c.layers);
        for n in 0..c.layers {
            let p = |s: &str| format!("encoder.layer.{n}.{s}");
            layers.push(Layer {
                q_w: t(&p("attention.self.query.weight"), &[h, h])?,
                q_b: t(&p("attention.self.query.bias"), &[h])?,
                k_w: t(&p("attention.self.key.weight"), &[h, h])?,
                k_b: t(&p("attention.self.key.bias"), &[h])?,
                v_w: t(&p("attention.self.value.weight"), &[h, h])?,
                v_b: t(&p("attention.self.value.bias"), &[h])?,
                o_w: t(&p("attention.output.dense.weight"), &[h, h])?,
                o_b: t(&p("attention.output.dense.bias"), &[h])?,
                ln1_w: t(&p("attention.output.LayerNorm.weight"), &[h])?,
                ln1_b: t(&p("attention.output.LayerNorm.bias"), &[h])?,
                ff1_w: t(&p("intermediate.dense.weight"), &[i, h])?,
                ff1_b: t(&p("intermediate.dense.bias"), &[i])?,
                ff2_w: t(&p("output.dense.weight"), &[h, i])?,
                ff2_b: t(&p("output.dense.bias"), &[h])?,
                ln2_w: t(&p("output.LayerNorm.weight"), &[h])?,
                ln2_b: t(&p("output.LayerNorm.bias"), &[h])?,
            });
        }
        Ok(Weights {
            file,
            word,
            position,
            token_type,
            ln_w,
            ln_b,
            layers,
        })
    }

    /// The values of a tensor.
    pub fn get(&self, r: &Range<usize>) -> &[f32] {
        &self.file.data()[r.clone()]
    }
}
