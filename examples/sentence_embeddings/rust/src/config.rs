//! The model's JSON configuration files, checked.

use std::path::Path;

use crate::error::{fail, Result};
use crate::files::read_json_object;
use crate::json::Json;

pub struct Config {
    pub vocab_size: usize,
    pub hidden: usize,
    pub layers: usize,
    pub heads: usize,
    pub intermediate: usize,
    pub max_positions: usize,
    pub type_vocab: usize,
    pub head_dim: usize,
    pub max_seq_length: usize,
    pub layer_norm_eps: f64,
}

fn brief(v: Option<&Json>) -> String {
    v.map_or_else(|| "nothing".to_string(), Json::brief)
}

impl Config {
    pub fn read(dir: &Path) -> Result<Config> {
        let path = dir.join("config.json");
        let shown = path.display();
        let doc = read_json_object(&path, true)?.unwrap_or(Json::Null);
        let int = |key: &str| -> Result<usize> {
            match doc.get(key).and_then(Json::as_i64) {
                Some(v) if 0 < v && v <= 1 << 30 => Ok(v as usize),
                _ => fail!("{shown}: {key} must be a positive integer, got {}", brief(doc.get(key))),
            }
        };
        let vocab_size = int("vocab_size")?;
        let hidden = int("hidden_size")?;
        let layers = int("num_hidden_layers")?;
        let heads = int("num_attention_heads")?;
        let intermediate = int("intermediate_size")?;
        let max_positions = int("max_position_embeddings")?;
        let type_vocab = int("type_vocab_size")?;
        let layer_norm_eps = match doc.get("layer_norm_eps").and_then(Json::as_f64) {
            Some(v) if (0.0..1.0).contains(&v) => v,
            _ => fail!(
                "{shown}: layer_norm_eps must be a number in [0, 1), got {}",
                brief(doc.get("layer_norm_eps"))
            ),
        };
        if doc.get("hidden_act").and_then(Json::as_str) != Some("gelu") {
            fail!(
                "{shown}: hidden_act must be \"gelu\", got {}",
                brief(doc.get("hidden_act"))
            );
        }
        if let Some(t) = doc.get("position_embedding_type") {
            if t.as_str() != Some("absolute") {
                fail!("{shown}: position_embedding_type must be \"absolute\"");
            }
        }
        if hidden % heads != 0 {
            fail!("{shown}: hidden_size {hidden} is not a multiple of num_attention_heads {heads}");
        }

        let mut max_seq_length = max_positions;
        let st_path = dir.join("sentence_bert_config.json");
        if let Some(st) = read_json_object(&st_path, false)? {
            if let Some(v) = st.get("max_seq_length") {
                match v.as_i64() {
                    Some(n) if 2 <= n && n <= max_positions as i64 => max_seq_length = n as usize,
                    _ => fail!(
                        "{}: max_seq_length must be an integer in [2, {max_positions}], got {}",
                        st_path.display(),
                        v.brief()
                    ),
                }
            }
        }
        let tc_path = dir.join("tokenizer_config.json");
        if let Some(tc) = read_json_object(&tc_path, false)? {
            if tc.get("do_lower_case").is_some_and(|v| v.as_bool() != Some(true)) {
                fail!(
                    "{}: do_lower_case is not true; only uncased tokenisers are supported",
                    tc_path.display()
                );
            }
        }
        let pool_path = dir.join("1_Pooling").join("config.json");
        if let Some(pool) = read_json_object(&pool_path, false)? {
            if pool.get("pooling_mode_mean_tokens").and_then(Json::as_bool) != Some(true) {
                fail!(
                    "{}: pooling_mode_mean_tokens is not true; only mean pooling is supported",
                    pool_path.display()
                );
            }
        }
        Ok(Config {
            vocab_size,
            hidden,
            layers,
            heads,
            intermediate,
            max_positions,
            type_vocab,
            head_dim: hidden / heads,
            max_seq_length,
            layer_norm_eps,
        })
    }
}
