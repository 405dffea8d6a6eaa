//! Loading a Llama-architecture GGUF model (dense, or with experts as
//! Mixtral): hyperparameters from the llama.* keys, every weight read into
//! memory with its shape and type checked, and the float32 KV cache and
//! scratch buffers allocated once, as ../c/model.c does (same checks, same
//! messages, same sizes), so that the forward pass (forward.rs) never
//! allocates.

use kernelbridge::{Context, Dtype, Gguf};

use crate::error::{fail, lib, zeroed, Result};

/// A weight tensor as the kernels take it: its type, its bytes and its
/// [rows, cols] shape (3-D expert tensors: rows = experts * rows per expert).
pub struct Weight {
    pub dtype: Dtype,
    pub data: Vec<u8>,
    pub rows: usize,
    pub cols: usize,
}

pub struct Layer {
    pub attn_norm: Vec<f32>,
    pub wq: Weight,
    pub wk: Weight,
    pub wv: Weight,
    pub wo: Weight,
    pub ffn_norm: Vec<f32>,
    /// Dense: [ffn, hidden], [ffn, hidden], [hidden, ffn]; with experts the
    /// same per expert, stacked.
    pub gate: Weight,
    pub up: Weight,
    pub down: Weight,
    /// With experts: ffn_gate_inp, [experts, hidden], float32.
    pub router: Option<Weight>,
}

/// Per-call scratch for up to `rows` tokens (the prompt's length: prefill
/// runs the whole prompt in one call, decode one token).
pub struct Scratch {
    pub rows: usize,
    pub x: Vec<f32>,
    pub h: Vec<f32>,
    pub q: Vec<f32>,
    pub k: Vec<f32>,
    pub v: Vec<f32>,
    pub attn: Vec<f32>,
    pub o: Vec<f32>,
    pub g: Vec<f32>,
    pub route_logits: Vec<f32>,
    pub route_w: Vec<f32>,
    pub route_ids: Vec<i32>,
    pub pos: Vec<i32>,
}

pub struct Model {
    pub vocab: usize,
    pub hidden: usize,
    pub layers: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    pub ffn: usize,
    pub context: usize,
    pub rotary_dim: usize,
    pub experts: usize,
    pub experts_used: usize,
    pub eps: f32,
    pub rope_theta: f32,
    pub embed: Weight,
    pub out_norm: Vec<f32>,
    /// None: tied embeddings (the output is token_embd).
    pub output: Option<Weight>,
    pub layer: Vec<Layer>,
    /// Float32, [context, kv_heads, head_dim] per layer, layers one after
    /// the other (kb_attention_ex's seq_major layout, one sequence).
    pub k_cache: Vec<f32>,
    pub v_cache: Vec<f32>,
    /// Tokens in the cache.
    pub cached: usize,
    pub s: Scratch,
}

/// An integer key, or `default` when the file has none (None: required).
fn key_int(ctx: &Context, g: &Gguf, key: &str, default: Option<i64>) -> Result<i64> {
    let at = g.find_key(ctx, key).map_err(lib(key))?;
    if at < 0 {
        match default {
            Some(d) => return Ok(d),
            None => fail!("the model has no key '{key}'"),
        }
    }
    g.get_int64(ctx, at).map_err(lib(key))
}

fn key_float(ctx: &Context, g: &Gguf, key: &str, default: f32) -> Result<f32> {
    let at = g.find_key(ctx, key).map_err(lib(key))?;
    if at < 0 {
        return Ok(default);
    }
    let mut v = [0f32];
    g.get_f32(ctx, at, &mut v).map_err(lib(key))?;
    Ok(v[0])
}

/// Finds tensor `name`, checks its shape (`want`, outermost first) and that
/// its type is one the weight kernels take (float32 only when `f32_only`:
/// the norms and the router); its index, type and size in bytes.
fn check_tensor(ctx: &Context, g: &Gguf, name: &str, want: &[i64], f32_only: bool) -> Result<(i64, Dtype, usize)> {
    let at = g.find_tensor(ctx, name).map_err(lib(name))?;
    if at < 0 {
        fail!("the model has no tensor '{name}'");
    }
    let n_dims = g.tensor_n_dims(ctx, at).map_err(lib(name))?;
    if n_dims != want.len() as i64 {
        fail!("tensor '{name}' has {n_dims} dimensions, expected {}", want.len());
    }
    for (a, &w) in want.iter().enumerate() {
        let size = g.tensor_dim(ctx, at, a as i64).map_err(lib(name))?;
        if size != w {
            fail!("tensor '{name}' has size {size} on axis {a}, expected {w}");
        }
    }
    let ty = g.tensor_type(ctx, at).map_err(lib(name))?;
    let dtype = Dtype::from_code(ty as i32).filter(|d| *d == Dtype::F32 || !f32_only);
    let Some(dtype) = dtype.filter(|_| i32::try_from(ty).is_ok()) else {
        let why = if f32_only {
            "needs as F32"
        } else {
            "does not run (F32, F16, BF16, Q8_0 and Q4_0 it does)"
        };
        fail!("tensor '{name}' has GGML type {ty}, which this example {why}");
    };
    let bytes = g.tensor_bytes(ctx, at).map_err(lib(name))?;
    Ok((at, dtype, bytes as usize))
}

/// A weight of shape [d0, d1] ([d0, d1, d2] for the experts' tensors), its
/// bytes read as they are in the file.
fn load_weight(ctx: &Context, g: &Gguf, name: &str, want: &[i64], f32_only: bool) -> Result<Weight> {
    let (at, dtype, bytes) = check_tensor(ctx, g, name, want, f32_only)?;
    let mut data: Vec<u8> = zeroed(bytes, &format!("tensor '{name}'"))?;
    g.tensor_read(ctx, at, &mut data).map_err(lib(name))?;
    let (rows, cols) = if want.len() == 3 {
        (want[0] * want[1], want[2])
    } else {
        (want[0], want[1])
    };
    Ok(Weight {
        dtype,
        data,
        rows: rows as usize,
        cols: cols as usize,
    })
}

/// A float32 vector of `n` elements (a norm's weight), read as floats so the
/// norm kernels take it as it is.
fn load_norm(ctx: &Context, g: &Gguf, name: &str, n: usize) -> Result<Vec<f32>> {
    let (at, _, bytes) = check_tensor(ctx, g, name, &[n as i64], true)?;
    if bytes != 4 * n {
        fail!("tensor '{name}' has {bytes} bytes, expected {}", 4 * n);
    }
    let mut data: Vec<f32> = zeroed(n, &format!("tensor '{name}'"))?;
    g.tensor_read(ctx, at, &mut data).map_err(lib(name))?;
    Ok(data)
}

impl Model {
    /// Reads an open GGUF file of architecture "llama", with scratch for up
    /// to `max_rows` tokens per forward call.
    pub fn load(ctx: &Context, g: &Gguf, max_rows: usize) -> Result<Model> {
        let arch_key = "general.architecture";
        let at = g.find_key(ctx, arch_key).map_err(lib(arch_key))?;
        if at < 0 {
            fail!("the model has no key '{arch_key}'");
        }
        let bytes = g.string_bytes(ctx, at).map_err(lib(arch_key))?;
        if bytes >= 64 {
            fail!("architecture name of {bytes} bytes is not 'llama'");
        }
        let mut arch = vec![0u8; bytes as usize];
        g.get_string(ctx, at, &mut arch).map_err(lib(arch_key))?;
        // C compares (and prints) the NUL-terminated copy.
        let end = arch.iter().position(|&b| b == 0).unwrap_or(arch.len());
        if &arch[..end] != b"llama" {
            fail!(
                "architecture '{}' is not supported (only 'llama')",
                String::from_utf8_lossy(&arch[..end])
            );
        }
        let hidden = key_int(ctx, g, "llama.embedding_length", None)?;
        let layers = key_int(ctx, g, "llama.block_count", None)?;
        let ffn = key_int(ctx, g, "llama.feed_forward_length", None)?;
        let heads = key_int(ctx, g, "llama.attention.head_count", None)?;
        let kv_heads = key_int(ctx, g, "llama.attention.head_count_kv", Some(heads))?;
        let context = key_int(ctx, g, "llama.context_length", None)?;
        let experts = key_int(ctx, g, "llama.expert_count", Some(0))?;
        let experts_used = key_int(ctx, g, "llama.expert_used_count", Some(0))?;
        let eps = key_float(ctx, g, "llama.attention.layer_norm_rms_epsilon", 1e-5)?;
        let rope_theta = key_float(ctx, g, "llama.rope.freq_base", 10000.0)?;
        if heads <= 0
            || kv_heads <= 0
            || hidden <= 0
            || hidden % heads != 0
            || heads % kv_heads != 0
            || layers <= 0
            || ffn <= 0
            || context <= 0
            || layers > 4096
        {
            fail!(
                "inconsistent hyperparameters: hidden {hidden}, heads {heads}, kv heads {kv_heads}, layers {layers}, \
                 ffn {ffn}, context {context}"
            );
        }
        if experts < 0 || (experts > 0 && (experts_used <= 0 || experts_used > experts)) {
            fail!("expert_used_count {experts_used} of expert_count {experts}");
        }
        let head_dim = hidden / heads;
        let rotary_dim = key_int(ctx, g, "llama.rope.dimension_count", Some(head_dim))?;
        // The vocabulary size is the embedding's row count.
        let embd = "token_embd.weight";
        let at = g.find_tensor(ctx, embd).map_err(lib(embd))?;
        if at < 0 {
            fail!("the model has no tensor '{embd}'");
        }
        let vocab = g.tensor_dim(ctx, at, 0).map_err(lib(embd))?;

        let kvd = kv_heads * head_dim;
        let embed = load_weight(ctx, g, embd, &[vocab, hidden], false)?;
        let out_norm = load_norm(ctx, g, "output_norm.weight", hidden as usize)?;
        let has_output = matches!(g.find_tensor(ctx, "output.weight"), Ok(i) if i >= 0);
        let output = if has_output {
            Some(load_weight(ctx, g, "output.weight", &[vocab, hidden], false)?)
        } else {
            None
        };
        let mut layer = Vec::with_capacity(layers as usize);
        for l in 0..layers {
            let name = |suffix: &str| format!("blk.{l}.{suffix}");
            let attn_norm = load_norm(ctx, g, &name("attn_norm.weight"), hidden as usize)?;
            let wq = load_weight(ctx, g, &name("attn_q.weight"), &[hidden, hidden], false)?;
            let wk = load_weight(ctx, g, &name("attn_k.weight"), &[kvd, hidden], false)?;
            let wv = load_weight(ctx, g, &name("attn_v.weight"), &[kvd, hidden], false)?;
            let wo = load_weight(ctx, g, &name("attn_output.weight"), &[hidden, hidden], false)?;
            let ffn_norm = load_norm(ctx, g, &name("ffn_norm.weight"), hidden as usize)?;
            let (gate, up, down, router);
            if experts > 0 {
                router = Some(load_weight(
                    ctx,
                    g,
                    &name("ffn_gate_inp.weight"),
                    &[experts, hidden],
                    true,
                )?);
                gate = load_weight(ctx, g, &name("ffn_gate_exps.weight"), &[experts, ffn, hidden], false)?;
                up = load_weight(ctx, g, &name("ffn_up_exps.weight"), &[experts, ffn, hidden], false)?;
                down = load_weight(ctx, g, &name("ffn_down_exps.weight"), &[experts, hidden, ffn], false)?;
                if gate.dtype != up.dtype || gate.dtype != down.dtype {
                    fail!("layer {l}: the experts' tensors differ in type");
                }
            } else {
                router = None;
                gate = load_weight(ctx, g, &name("ffn_gate.weight"), &[ffn, hidden], false)?;
                up = load_weight(ctx, g, &name("ffn_up.weight"), &[ffn, hidden], false)?;
                down = load_weight(ctx, g, &name("ffn_down.weight"), &[hidden, ffn], false)?;
                if gate.dtype != up.dtype {
                    fail!("layer {l}: ffn_gate and ffn_up differ in type");
                }
            }
            layer.push(Layer {
                attn_norm,
                wq,
                wk,
                wv,
                wo,
                ffn_norm,
                gate,
                up,
                down,
                router,
            });
        }

        let [hidden, layers, heads, kv_heads, head_dim, ffn, context, rotary_dim, experts, experts_used, kvd] = [
            hidden,
            layers,
            heads,
            kv_heads,
            head_dim,
            ffn,
            context,
            rotary_dim,
            experts,
            experts_used,
            kvd,
        ]
        .map(|v| v as usize);
        let what = "the cache and scratch";
        let cache = layers
            .checked_mul(context)
            .and_then(|v| v.checked_mul(kvd))
            .unwrap_or(usize::MAX);
        let k_cache = zeroed(cache, what)?;
        let v_cache = zeroed(cache, what)?;
        let r = max_rows;
        let s = Scratch {
            rows: r,
            x: zeroed(r * hidden, what)?,
            h: zeroed(r * hidden, what)?,
            q: zeroed(r * hidden, what)?,
            k: zeroed(r * kvd, what)?,
            v: zeroed(r * kvd, what)?,
            attn: zeroed(r * hidden, what)?,
            o: zeroed(r * hidden, what)?,
            g: zeroed(r * ffn.max(hidden), what)?,
            route_logits: zeroed(r * experts.max(1), what)?,
            route_w: zeroed(r * experts_used.max(1), what)?,
            route_ids: zeroed(r * experts_used.max(1), what)?,
            pos: zeroed(r, what)?,
        };
        Ok(Model {
            vocab: vocab as usize,
            hidden,
            layers,
            heads,
            kv_heads,
            head_dim,
            ffn,
            context,
            rotary_dim,
            experts,
            experts_used,
            eps,
            rope_theta,
            embed,
            out_norm,
            output,
            layer,
            k_cache,
            v_cache,
            cached: 0,
            s,
        })
    }
}
