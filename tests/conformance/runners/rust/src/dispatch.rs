//! One call of a kernel through the safe crate's public API
//! (`kernelbridge::Context` methods): the Rust counterpart of the C runner's
//! `dispatch`.
//!
//! Sizes that the safe API derives from a slice (`n` of silu is `x.len()`,
//! `cols` of rmsnorm is `weight.len()`, ...) are not passed: the runner has
//! already checked that the slices it built agree with the case's sizes
//! (golden cases) or decided that a case cannot be expressed (bad inputs).

use kernelbridge::{Activation, AttentionOptions, Context, Dtype, MoeRouting, RopeScaling, RopeStyle};

use crate::json::Json;

/// A tensor buffer of the call.
#[derive(Debug, Clone, PartialEq)]
pub enum Buf {
    F32(Vec<f32>),
    I32(Vec<i32>),
    /// Raw bytes: a tensor in a storage format (kb_dtype).
    U8(Vec<u8>),
    /// bfloat16 / float16 bit patterns.
    U16(Vec<u16>),
}

impl Buf {
    pub fn len(&self) -> usize {
        match self {
            Buf::F32(v) => v.len(),
            Buf::I32(v) => v.len(),
            Buf::U8(v) => v.len(),
            Buf::U16(v) => v.len(),
        }
    }

    /// The raw little-endian bytes (what the hash covers).
    pub fn bytes(&self) -> Vec<u8> {
        match self {
            Buf::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Buf::I32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Buf::U8(v) => v.clone(),
            Buf::U16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        }
    }
}

/// Everything one call needs: sizes, flags, scalars (as in the corpus), the
/// tensors that are passed (absent ones are NULL / `None`), and the in-place
/// alias `(output, input)` if any.
#[derive(Debug, Default)]
pub struct Args {
    pub kernel: String,
    pub dims: Vec<(String, i64)>,
    pub flags: Vec<(String, bool)>,
    pub scalars: Vec<(String, Json)>,
    pub bufs: Vec<(String, Buf)>,
    pub alias: Option<(String, String)>,
}

type Call = Result<kernelbridge::Result<()>, String>;

impl Args {
    pub fn buf(&self, name: &str) -> Option<&Buf> {
        self.bufs.iter().find(|(n, _)| n == name).map(|(_, b)| b)
    }

    pub fn dim(&self, name: &str) -> Option<i64> {
        self.dims.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }

    pub fn flag(&self, name: &str) -> Option<bool> {
        self.flags.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }

    fn take(&mut self, name: &str) -> Option<Buf> {
        let i = self.bufs.iter().position(|(n, _)| n == name)?;
        Some(self.bufs.remove(i).1)
    }

    fn f(&mut self, name: &str) -> Result<Vec<f32>, String> {
        match self.take(name) {
            Some(Buf::F32(v)) => Ok(v),
            Some(_) => Err(format!("tensor {name} should be f32")),
            None => Err(format!("case lacks tensor {name}")),
        }
    }

    fn i(&mut self, name: &str) -> Result<Vec<i32>, String> {
        match self.take(name) {
            Some(Buf::I32(v)) => Ok(v),
            Some(_) => Err(format!("tensor {name} should be i32")),
            None => Err(format!("case lacks tensor {name}")),
        }
    }

    fn u(&mut self, name: &str) -> Result<Vec<u8>, String> {
        match self.take(name) {
            Some(Buf::U8(v)) => Ok(v),
            Some(_) => Err(format!("tensor {name} should be u8")),
            None => Err(format!("case lacks tensor {name}")),
        }
    }

    fn h(&mut self, name: &str) -> Result<Vec<u16>, String> {
        match self.take(name) {
            Some(Buf::U16(v)) => Ok(v),
            Some(_) => Err(format!("tensor {name} should be bf16 / f16 bits")),
            None => Err(format!("case lacks tensor {name}")),
        }
    }

    /// A nullable tensor: absent is `None` (NULL).
    fn of(&mut self, name: &str) -> Result<Option<Vec<f32>>, String> {
        match self.take(name) {
            Some(Buf::F32(v)) => Ok(Some(v)),
            Some(_) => Err(format!("tensor {name} should be f32")),
            None => Ok(None),
        }
    }

    fn put(&mut self, name: &str, b: Buf) {
        self.bufs.push((name.to_string(), b));
    }

    fn pf(&mut self, name: &str, v: Vec<f32>) {
        self.put(name, Buf::F32(v));
    }

    fn pi(&mut self, name: &str, v: Vec<i32>) {
        self.put(name, Buf::I32(v));
    }

    fn pu(&mut self, name: &str, v: Vec<u8>) {
        self.put(name, Buf::U8(v));
    }

    fn ph(&mut self, name: &str, v: Vec<u16>) {
        self.put(name, Buf::U16(v));
    }

    fn d(&self, name: &str) -> Result<usize, String> {
        let v = self.dim(name).ok_or_else(|| format!("case lacks parameter {name}"))?;
        usize::try_from(v).map_err(|_| format!("{name} = {v} cannot be passed as usize"))
    }

    fn fl(&self, name: &str) -> Result<bool, String> {
        self.flag(name).ok_or_else(|| format!("case lacks parameter {name}"))
    }

    fn scalar(&self, name: &str) -> Result<&Json, String> {
        self.scalars
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
            .ok_or_else(|| format!("case lacks parameter {name}"))
    }

    /// A float scalar: the double of the corpus rounded to float (exact for
    /// corpus values), or "nan" / "inf" / "-inf".
    fn sf(&self, name: &str) -> Result<f32, String> {
        let v = self.scalar(name)?;
        scalar_f32(v).ok_or_else(|| format!("scalar {name} is not a float: {v:?}"))
    }

    fn si(&self, name: &str) -> Result<i64, String> {
        let v = self.scalar(name)?;
        match v {
            Json::Num(_) => v.as_i64(),
            Json::Str(s) => s.parse().ok(),
            _ => None,
        }
        .ok_or_else(|| format!("scalar {name} is not an integer: {v:?}"))
    }

    fn si32(&self, name: &str) -> Result<i32, String> {
        let v = self.si(name)?;
        i32::try_from(v).map_err(|_| format!("scalar {name} = {v} does not fit i32"))
    }

    /// A u64 scalar (the sampling seed): a decimal string in the corpus.
    fn su(&self, name: &str) -> Result<u64, String> {
        let v = self.scalar(name)?;
        match v {
            Json::Str(s) => s.parse().ok(),
            Json::Num(s) => s.parse().ok(),
            _ => None,
        }
        .ok_or_else(|| format!("scalar {name} is not a u64: {v:?}"))
    }

    /// An enum scalar (an integer in the corpus, like C).
    fn act(&self, name: &str) -> Result<Activation, String> {
        let code = self.si32(name)?;
        Activation::from_code(code).ok_or_else(|| format!("{name} = {code} is no Activation"))
    }

    fn rope_style(&self, name: &str) -> Result<RopeStyle, String> {
        let code = self.si32(name)?;
        RopeStyle::from_code(code).ok_or_else(|| format!("{name} = {code} is no RopeStyle"))
    }

    fn rope_scaling(&self, name: &str) -> Result<RopeScaling, String> {
        let code = self.si32(name)?;
        RopeScaling::from_code(code).ok_or_else(|| format!("{name} = {code} is no RopeScaling"))
    }

    fn dtype(&self, name: &str) -> Result<Dtype, String> {
        let code = self.si32(name)?;
        Dtype::from_code(code).ok_or_else(|| format!("{name} = {code} is no Dtype"))
    }

    fn routing(&self, name: &str) -> Result<MoeRouting, String> {
        let code = self.si32(name)?;
        MoeRouting::from_code(code).ok_or_else(|| format!("{name} = {code} is no MoeRouting"))
    }

    fn alias_is(&self, out: &str, input: &str) -> bool {
        matches!(&self.alias, Some((o, i)) if o == out && i == input)
    }
}

pub fn scalar_f32(v: &Json) -> Option<f32> {
    match v {
        Json::Num(_) => v.as_f64().map(|d| d as f32),
        Json::Str(s) => match s.as_str() {
            "nan" => Some(f32::NAN),
            "inf" => Some(f32::INFINITY),
            "-inf" => Some(f32::NEG_INFINITY),
            _ => s.parse::<f64>().ok().map(|d| d as f32),
        },
        _ => None,
    }
}

/// Calls `a.kernel` with the arguments in `a` on `ctx`.  The buffers stay in
/// `a` (outputs hold what the kernel wrote).  `Err` is a runner error: an
/// unknown kernel, a missing parameter, an alias without an in-place form.
pub fn call(ctx: &Context, a: &mut Args) -> Call {
    if let Some((o, i)) = a.alias.clone() {
        let known: &[(&str, &str, &str)] = &[
            ("silu", "y", "x"),
            ("gelu", "y", "x"),
            ("gelu_tanh", "y", "x"),
            ("add", "y", "a"),
            ("add", "y", "b"),
            ("mul", "y", "a"),
            ("mul", "y", "b"),
            ("scale", "y", "x"),
            ("add_bias", "y", "x"),
            ("softmax", "y", "x"),
            ("log_softmax", "y", "x"),
            ("rmsnorm", "y", "x"),
            ("layernorm", "y", "x"),
            ("rope", "y", "x"),
            ("cross_entropy_backward", "dlogits", "logits"),
            ("add_rmsnorm", "y", "x"),
        ];
        if !known.iter().any(|&(k, ko, ki)| k == a.kernel && ko == o && ki == i) {
            return Err(format!("the safe API has no in-place form of {} with {o} = {i}", a.kernel));
        }
    }
    let kernel = a.kernel.clone();
    let r = match kernel.as_str() {
        "silu" | "gelu" | "gelu_tanh" => {
            let f: fn(&Context, &[f32], &mut [f32]) -> kernelbridge::Result<()> = match kernel.as_str() {
                "silu" => Context::silu,
                "gelu" => Context::gelu,
                _ => Context::gelu_tanh,
            };
            let fi: fn(&Context, &mut [f32]) -> kernelbridge::Result<()> = match kernel.as_str() {
                "silu" => Context::silu_inplace,
                "gelu" => Context::gelu_inplace,
                _ => Context::gelu_tanh_inplace,
            };
            let mut x = a.f("x")?;
            if a.alias_is("y", "x") {
                let r = fi(ctx, &mut x);
                a.pf("x", x);
                r
            } else {
                let mut y = a.f("y")?;
                let r = f(ctx, &x, &mut y);
                a.pf("x", x);
                a.pf("y", y);
                r
            }
        }
        "add" | "mul" => {
            let add = kernel == "add";
            let mut x = a.f("a")?;
            let mut b = a.f("b")?;
            let r = if a.alias_is("y", "a") {
                if add { ctx.add_inplace(&mut x, &b) } else { ctx.mul_inplace(&mut x, &b) }
            } else if a.alias_is("y", "b") {
                if add { ctx.add_inplace_b(&x, &mut b) } else { ctx.mul_inplace_b(&x, &mut b) }
            } else {
                let mut y = a.f("y")?;
                let r = if add { ctx.add(&x, &b, &mut y) } else { ctx.mul(&x, &b, &mut y) };
                a.pf("y", y);
                r
            };
            a.pf("a", x);
            a.pf("b", b);
            r
        }
        "scale" => {
            let alpha = a.sf("alpha")?;
            let mut x = a.f("x")?;
            let r = if a.alias_is("y", "x") {
                ctx.scale_inplace(alpha, &mut x)
            } else {
                let mut y = a.f("y")?;
                let r = ctx.scale(alpha, &x, &mut y);
                a.pf("y", y);
                r
            };
            a.pf("x", x);
            r
        }
        "add_bias" => {
            let rows = a.d("rows")?;
            let mut x = a.f("x")?;
            let bias = a.f("bias")?;
            let r = if a.alias_is("y", "x") {
                ctx.add_bias_inplace(rows, &mut x, &bias)
            } else {
                let mut y = a.f("y")?;
                let r = ctx.add_bias(rows, &x, &bias, &mut y);
                a.pf("y", y);
                r
            };
            a.pf("x", x);
            a.pf("bias", bias);
            r
        }
        "softmax" | "log_softmax" => {
            let soft = kernel == "softmax";
            let (rows, cols) = (a.d("rows")?, a.d("cols")?);
            let mut x = a.f("x")?;
            let r = if a.alias_is("y", "x") {
                if soft { ctx.softmax_inplace(rows, cols, &mut x) } else { ctx.log_softmax_inplace(rows, cols, &mut x) }
            } else {
                let mut y = a.f("y")?;
                let r = if soft { ctx.softmax(rows, cols, &x, &mut y) } else { ctx.log_softmax(rows, cols, &x, &mut y) };
                a.pf("y", y);
                r
            };
            a.pf("x", x);
            r
        }
        "rmsnorm" => {
            let rows = a.d("rows")?;
            let eps = a.sf("eps")?;
            let mut x = a.f("x")?;
            let weight = a.f("weight")?;
            let r = if a.alias_is("y", "x") {
                ctx.rmsnorm_inplace(rows, &mut x, &weight, eps)
            } else {
                let mut y = a.f("y")?;
                let r = ctx.rmsnorm(rows, &x, &weight, eps, &mut y);
                a.pf("y", y);
                r
            };
            a.pf("x", x);
            a.pf("weight", weight);
            r
        }
        "layernorm" => {
            let (rows, cols) = (a.d("rows")?, a.d("cols")?);
            let eps = a.sf("eps")?;
            let mut x = a.f("x")?;
            let weight = a.of("weight")?;
            let bias = a.of("bias")?;
            let r = if a.alias_is("y", "x") {
                ctx.layernorm_inplace(rows, cols, &mut x, weight.as_deref(), bias.as_deref(), eps)
            } else {
                let mut y = a.f("y")?;
                let r = ctx.layernorm(rows, cols, &x, weight.as_deref(), bias.as_deref(), eps, &mut y);
                a.pf("y", y);
                r
            };
            a.pf("x", x);
            if let Some(w) = weight {
                a.pf("weight", w);
            }
            if let Some(b) = bias {
                a.pf("bias", b);
            }
            r
        }
        "gemm" => {
            let (ta, tb) = (a.fl("trans_a")?, a.fl("trans_b")?);
            let (m, n, k) = (a.d("m")?, a.d("n")?, a.d("k")?);
            let (lda, ldb, ldc) = (a.d("lda")?, a.d("ldb")?, a.d("ldc")?);
            let (alpha, beta) = (a.sf("alpha")?, a.sf("beta")?);
            let x = a.f("a")?;
            let b = a.f("b")?;
            let mut c = a.f("c")?;
            let r = ctx.gemm(ta, tb, m, n, k, alpha, &x, lda, &b, ldb, beta, &mut c, ldc);
            a.pf("a", x);
            a.pf("b", b);
            a.pf("c", c);
            r
        }
        "embedding" => {
            let (vocab, dim) = (a.d("vocab")?, a.d("dim")?);
            let ids = a.i("ids")?;
            let table = a.f("table")?;
            let mut out = a.f("out")?;
            let r = ctx.embedding(vocab, dim, &ids, &table, &mut out);
            a.pi("ids", ids);
            a.pf("table", table);
            a.pf("out", out);
            r
        }
        "rope" => {
            let (heads, head_dim) = (a.d("heads")?, a.d("head_dim")?);
            let theta = a.sf("theta")?;
            let mut x = a.f("x")?;
            let positions = a.i("positions")?;
            let r = if a.alias_is("y", "x") {
                ctx.rope_inplace(heads, head_dim, &mut x, &positions, theta)
            } else {
                let mut y = a.f("y")?;
                let r = ctx.rope(heads, head_dim, &x, &positions, theta, &mut y);
                a.pf("y", y);
                r
            };
            a.pf("x", x);
            a.pi("positions", positions);
            r
        }
        "attention" => {
            let (batch, heads, kv_heads) = (a.d("batch")?, a.d("heads")?, a.d("kv_heads")?);
            let (seq_q, seq_kv, head_dim) = (a.d("seq_q")?, a.d("seq_kv")?, a.d("head_dim")?);
            let causal = a.fl("causal")?;
            let scale = a.sf("scale")?;
            let q = a.f("q")?;
            let k = a.f("k")?;
            let v = a.f("v")?;
            let mut out = a.f("out")?;
            let r = ctx.attention(batch, heads, kv_heads, seq_q, seq_kv, head_dim, &q, &k, &v, causal, scale, &mut out);
            a.pf("q", q);
            a.pf("k", k);
            a.pf("v", v);
            a.pf("out", out);
            r
        }
        "cross_entropy" => {
            let classes = a.d("classes")?;
            let ignore = a.si32("ignore_index")?;
            let logits = a.f("logits")?;
            let targets = a.i("targets")?;
            let mut losses = a.f("losses")?;
            let mut mean = a.f("mean_loss")?;
            let r = ctx.cross_entropy(classes, &logits, &targets, ignore, &mut losses, &mut mean);
            a.pf("logits", logits);
            a.pi("targets", targets);
            a.pf("losses", losses);
            a.pf("mean_loss", mean);
            r
        }
        "cross_entropy_backward" => {
            let classes = a.d("classes")?;
            let ignore = a.si32("ignore_index")?;
            let dloss = a.sf("dloss")?;
            let mut logits = a.f("logits")?;
            let targets = a.i("targets")?;
            let r = if a.alias_is("dlogits", "logits") {
                ctx.cross_entropy_backward_inplace(classes, &mut logits, &targets, ignore, dloss)
            } else {
                let mut dlogits = a.f("dlogits")?;
                let r = ctx.cross_entropy_backward(classes, &logits, &targets, ignore, dloss, &mut dlogits);
                a.pf("dlogits", dlogits);
                r
            };
            a.pf("logits", logits);
            a.pi("targets", targets);
            r
        }
        "adamw_step" => {
            let (lr, beta1, beta2) = (a.sf("lr")?, a.sf("beta1")?, a.sf("beta2")?);
            let (eps, wd) = (a.sf("eps")?, a.sf("weight_decay")?);
            let step = a.si("step")?;
            let mut params = a.f("params")?;
            let grads = a.f("grads")?;
            let mut m = a.f("m")?;
            let mut v = a.f("v")?;
            let r = ctx.adamw_step(&mut params, &grads, &mut m, &mut v, lr, beta1, beta2, eps, wd, step);
            a.pf("params", params);
            a.pf("grads", grads);
            a.pf("m", m);
            a.pf("v", v);
            r
        }
        "argmax" | "sample" | "topk_sample" | "topp_sample" => {
            let cols = a.d("cols")?;
            let x = a.f(if kernel == "argmax" { "x" } else { "logits" })?;
            let mut out = a.i("out")?;
            let r = match kernel.as_str() {
                "argmax" => ctx.argmax(cols, &x, &mut out),
                "sample" => ctx.sample(cols, &x, a.sf("temperature")?, a.su("seed")?, &mut out),
                "topk_sample" => ctx.topk_sample(cols, &x, a.d("k")?, a.sf("temperature")?, a.su("seed")?, &mut out),
                _ => ctx.topp_sample(cols, &x, a.sf("p")?, a.sf("temperature")?, a.su("seed")?, &mut out),
            };
            a.pf(if kernel == "argmax" { "x" } else { "logits" }, x);
            a.pi("out", out);
            r
        }
        "embedding_bf16" | "embedding_f16" => {
            let (vocab, dim) = (a.d("vocab")?, a.d("dim")?);
            let ids = a.i("ids")?;
            let table = a.h("table")?;
            let mut out = a.h("out")?;
            let r = if kernel == "embedding_bf16" {
                ctx.embedding_bf16(vocab, dim, &ids, &table, &mut out)
            } else {
                ctx.embedding_f16(vocab, dim, &ids, &table, &mut out)
            };
            a.pi("ids", ids);
            a.ph("table", table);
            a.ph("out", out);
            r
        }
        "argmax_bf16" | "argmax_f16" | "sample_bf16" | "sample_f16" | "topk_sample_bf16" | "topk_sample_f16"
        | "topp_sample_bf16" | "topp_sample_f16" => {
            let cols = a.d("cols")?;
            let argmax = kernel.starts_with("argmax");
            let x = a.h(if argmax { "x" } else { "logits" })?;
            let mut out = a.i("out")?;
            let r = match kernel.as_str() {
                "argmax_bf16" => ctx.argmax_bf16(cols, &x, &mut out),
                "argmax_f16" => ctx.argmax_f16(cols, &x, &mut out),
                "sample_bf16" => ctx.sample_bf16(cols, &x, a.sf("temperature")?, a.su("seed")?, &mut out),
                "sample_f16" => ctx.sample_f16(cols, &x, a.sf("temperature")?, a.su("seed")?, &mut out),
                "topk_sample_bf16" => {
                    ctx.topk_sample_bf16(cols, &x, a.d("k")?, a.sf("temperature")?, a.su("seed")?, &mut out)
                }
                "topk_sample_f16" => {
                    ctx.topk_sample_f16(cols, &x, a.d("k")?, a.sf("temperature")?, a.su("seed")?, &mut out)
                }
                "topp_sample_bf16" => {
                    ctx.topp_sample_bf16(cols, &x, a.sf("p")?, a.sf("temperature")?, a.su("seed")?, &mut out)
                }
                _ => ctx.topp_sample_f16(cols, &x, a.sf("p")?, a.sf("temperature")?, a.su("seed")?, &mut out),
            };
            a.ph(if argmax { "x" } else { "logits" }, x);
            a.pi("out", out);
            r
        }
        "rope_ex" => {
            let (batch, seq, q_heads, kv_heads) = (a.d("batch")?, a.d("seq")?, a.d("q_heads")?, a.d("kv_heads")?);
            let (head_dim, rotary_dim) = (a.d("head_dim")?, a.d("rotary_dim")?);
            let (style, scaling) = (a.rope_style("style")?, a.rope_scaling("scaling")?);
            let (theta, factor) = (a.sf("theta")?, a.sf("factor")?);
            let (low, high) = (a.sf("low_freq_factor")?, a.sf("high_freq_factor")?);
            let original = a.si("original_max_position")?;
            let positions = a.i("positions")?;
            let mut q = a.f("q")?;
            let mut k = a.of("k")?;
            let r = ctx.rope_ex(batch, seq, q_heads, kv_heads, head_dim, rotary_dim, style, &positions, theta, scaling,
                                factor, low, high, original, &mut q, k.as_deref_mut());
            a.pi("positions", positions);
            a.pf("q", q);
            if let Some(k) = k {
                a.pf("k", k);
            }
            r
        }
        "glu" => {
            let (rows, cols) = (a.d("rows")?, a.d("cols")?);
            let (ld_gate, ld_up) = (a.d("ld_gate")?, a.d("ld_up")?);
            let act = a.act("act")?;
            let gate = a.f("gate")?;
            let up = a.f("up")?;
            let mut y = a.f("y")?;
            let r = ctx.glu(rows, cols, &gate, ld_gate, &up, ld_up, act, &mut y);
            a.pf("gate", gate);
            a.pf("up", up);
            a.pf("y", y);
            r
        }
        "add_rmsnorm" => {
            let rows = a.d("rows")?;
            let eps = a.sf("eps")?;
            let mut x = a.f("x")?;
            let mut residual = a.f("residual")?;
            let weight = a.f("weight")?;
            let r = if a.alias_is("y", "x") {
                ctx.add_rmsnorm_inplace(rows, &mut x, &mut residual, &weight, eps)
            } else {
                let mut y = a.f("y")?;
                let r = ctx.add_rmsnorm(rows, &x, &mut residual, &weight, eps, &mut y);
                a.pf("y", y);
                r
            };
            a.pf("x", x);
            a.pf("residual", residual);
            a.pf("weight", weight);
            r
        }
        "linear" => {
            let (rows, inf, outf) = (a.d("rows")?, a.d("in_features")?, a.d("out_features")?);
            let act = a.act("act")?;
            let x = a.f("x")?;
            let w = a.f("weight")?;
            let bias = a.of("bias")?;
            let mut y = a.f("y")?;
            let _ = (rows, inf);
            let r = ctx.linear(rows, inf, outf, &x, &w, bias.as_deref(), act, &mut y);
            a.pf("x", x);
            a.pf("weight", w);
            if let Some(b) = bias {
                a.pf("bias", b);
            }
            a.pf("y", y);
            r
        }
        "attention_ex" => {
            // Through the options form (the idiomatic entry point); it calls
            // the generated attention_ex with every argument.
            let (batch, heads, kv_heads) = (a.d("batch")?, a.d("heads")?, a.d("kv_heads")?);
            let (seq_q, seq_kv, head_dim) = (a.d("seq_q")?, a.d("seq_kv")?, a.d("head_dim")?);
            let mask_dims = [a.d("mask_batch")?, a.d("mask_heads")?, a.d("mask_q")?];
            let q = a.f("q")?;
            let k = a.f("k")?;
            let v = a.f("v")?;
            let lengths = match a.take("kv_lengths") {
                Some(Buf::I32(l)) => Some(l),
                Some(_) => return Err("tensor kv_lengths should be i32".to_string()),
                None => None,
            };
            let mask = a.of("mask")?;
            let mut out = a.f("out")?;
            let mut opts = AttentionOptions::new(batch, heads, kv_heads, seq_q, seq_kv, head_dim)
                .seq_major(a.fl("seq_major")?)
                .causal(a.fl("causal")?)
                .causal_bottom_right(a.fl("causal_bottom_right")?)
                .scale(a.sf("scale")?);
            if let Some(l) = &lengths {
                opts = opts.kv_lengths(l);
            }
            if let Some(m) = &mask {
                opts = opts.mask(m, mask_dims);
            } else {
                opts = opts.mask_dims(mask_dims);
            }
            let r = ctx.attention_with(&opts, &q, &k, &v, &mut out);
            a.pf("q", q);
            a.pf("k", k);
            a.pf("v", v);
            if let Some(l) = lengths {
                a.pi("kv_lengths", l);
            }
            if let Some(m) = mask {
                a.pf("mask", m);
            }
            a.pf("out", out);
            r
        }
        "gemm_batched" => {
            let (ta, tb) = (a.fl("trans_a")?, a.fl("trans_b")?);
            let (batch, m, n, k) = (a.d("batch")?, a.d("m")?, a.d("n")?, a.d("k")?);
            let (lda, sa, ldb, sb) = (a.d("lda")?, a.d("stride_a")?, a.d("ldb")?, a.d("stride_b")?);
            let (ldc, sc) = (a.d("ldc")?, a.d("stride_c")?);
            let (alpha, beta) = (a.sf("alpha")?, a.sf("beta")?);
            let x = a.f("a")?;
            let b = a.f("b")?;
            let mut c = a.f("c")?;
            let r = ctx.gemm_batched(ta, tb, batch, m, n, k, alpha, &x, lda, sa, &b, ldb, sb, beta, &mut c, ldc, sc);
            a.pf("a", x);
            a.pf("b", b);
            a.pf("c", c);
            r
        }
        // Tensors in storage formats, through the generated one-to-one forms
        // (the byte counts are the lengths of the u8 slices): the corpus
        // passes sizes and byte counts that QTensor would reject before C
        // (tests/qtensor.rs checks QTensor against these forms bit for bit).
        "quantize" => {
            let (dtype, rows, cols) = (a.dtype("type")?, a.d("rows")?, a.d("cols")?);
            let x = a.f("x")?;
            let mut y = a.u("y")?;
            let r = ctx.quantize(dtype, rows, cols, &x, &mut y);
            a.pf("x", x);
            a.pu("y", y);
            r
        }
        "dequantize" => {
            let (dtype, rows, cols) = (a.dtype("type")?, a.d("rows")?, a.d("cols")?);
            let x = a.u("x")?;
            let mut y = a.f("y")?;
            let r = ctx.dequantize(dtype, rows, cols, &x, &mut y);
            a.pu("x", x);
            a.pf("y", y);
            r
        }
        "linear_w" => {
            let (rows, inf, outf) = (a.d("rows")?, a.d("in_features")?, a.d("out_features")?);
            let (dtype, act) = (a.dtype("weight_type")?, a.act("act")?);
            let x = a.f("x")?;
            let w = a.u("weight")?;
            let bias = a.of("bias")?;
            let mut y = a.f("y")?;
            let r = ctx.linear_w(rows, inf, outf, &x, dtype, &w, bias.as_deref(), act, &mut y);
            a.pf("x", x);
            a.pu("weight", w);
            if let Some(b) = bias {
                a.pf("bias", b);
            }
            a.pf("y", y);
            r
        }
        "linear_glu_w" => {
            let (rows, inf, outf) = (a.d("rows")?, a.d("in_features")?, a.d("out_features")?);
            let (dtype, act) = (a.dtype("weight_type")?, a.act("act")?);
            let x = a.f("x")?;
            let gate = a.u("gate_weight")?;
            let up = a.u("up_weight")?;
            let mut y = a.f("y")?;
            let r = ctx.linear_glu_w(rows, inf, outf, &x, dtype, &gate, &up, act, &mut y);
            a.pf("x", x);
            a.pu("gate_weight", gate);
            a.pu("up_weight", up);
            a.pf("y", y);
            r
        }
        "moe_experts" => {
            let (tokens, hidden, ffn) = (a.d("tokens")?, a.d("hidden")?, a.d("ffn")?);
            let (experts, top_k) = (a.d("experts")?, a.d("top_k")?);
            let (dtype, act) = (a.dtype("weight_type")?, a.act("act")?);
            let x = a.f("x")?;
            let ids = a.i("ids")?;
            let weights = a.f("weights")?;
            let gate = a.u("gate_weight")?;
            let up = a.u("up_weight")?;
            let down = a.u("down_weight")?;
            let mut y = a.f("y")?;
            let r = ctx.moe_experts(tokens, hidden, ffn, experts, top_k, &x, &ids, &weights, dtype, &gate, &up, &down,
                                    act, &mut y);
            a.pf("x", x);
            a.pi("ids", ids);
            a.pf("weights", weights);
            a.pu("gate_weight", gate);
            a.pu("up_weight", up);
            a.pu("down_weight", down);
            a.pf("y", y);
            r
        }
        "embedding_w" => {
            let (vocab, dim, dtype) = (a.d("vocab")?, a.d("dim")?, a.dtype("table_type")?);
            let ids = a.i("ids")?;
            let table = a.u("table")?;
            let mut out = a.f("out")?;
            let r = ctx.embedding_w(vocab, dim, &ids, dtype, &table, &mut out);
            a.pi("ids", ids);
            a.pu("table", table);
            a.pf("out", out);
            r
        }
        "moe_route" => {
            let (tokens, experts, top_k) = (a.d("tokens")?, a.d("experts")?, a.d("top_k")?);
            let routing = a.routing("routing")?;
            let logits = a.f("logits")?;
            let mut ids = a.i("ids")?;
            let mut weights = a.f("weights")?;
            let r = ctx.moe_route(tokens, experts, top_k, routing, &logits, &mut ids, &mut weights);
            a.pf("logits", logits);
            a.pi("ids", ids);
            a.pf("weights", weights);
            r
        }
        "kv_cache_append" => {
            let (kv_heads, seq_new, capacity) = (a.d("kv_heads")?, a.d("seq_new")?, a.d("capacity")?);
            let (head_dim, seq_major) = (a.d("head_dim")?, a.fl("seq_major")?);
            let k_new = a.f("k_new")?;
            let v_new = a.f("v_new")?;
            let positions = a.i("positions")?;
            let mut k_cache = a.f("k_cache")?;
            let mut v_cache = a.f("v_cache")?;
            let r = ctx.kv_cache_append(kv_heads, seq_new, capacity, head_dim, seq_major, &k_new, &v_new, &positions,
                                        &mut k_cache, &mut v_cache);
            a.pf("k_new", k_new);
            a.pf("v_new", v_new);
            a.pi("positions", positions);
            a.pf("k_cache", k_cache);
            a.pf("v_cache", v_cache);
            r
        }
        "kv_cache_append_to_bf16" | "kv_cache_append_to_f16" => {
            let (kv_heads, seq_new, capacity) = (a.d("kv_heads")?, a.d("seq_new")?, a.d("capacity")?);
            let (head_dim, seq_major) = (a.d("head_dim")?, a.fl("seq_major")?);
            let k_new = a.f("k_new")?;
            let v_new = a.f("v_new")?;
            let positions = a.i("positions")?;
            let mut k_cache = a.h("k_cache")?;
            let mut v_cache = a.h("v_cache")?;
            let append = if kernel == "kv_cache_append_to_bf16" {
                Context::kv_cache_append_to_bf16
            } else {
                Context::kv_cache_append_to_f16
            };
            let r = append(ctx, kv_heads, seq_new, capacity, head_dim, seq_major, &k_new, &v_new, &positions,
                           &mut k_cache, &mut v_cache);
            a.pf("k_new", k_new);
            a.pf("v_new", v_new);
            a.pi("positions", positions);
            a.ph("k_cache", k_cache);
            a.ph("v_cache", v_cache);
            r
        }
        "attention_ex_kv_bf16" | "attention_ex_kv_f16" => {
            let (batch, heads, kv_heads) = (a.d("batch")?, a.d("heads")?, a.d("kv_heads")?);
            let (seq_q, seq_kv, head_dim) = (a.d("seq_q")?, a.d("seq_kv")?, a.d("head_dim")?);
            let (mask_batch, mask_heads, mask_q) = (a.d("mask_batch")?, a.d("mask_heads")?, a.d("mask_q")?);
            let q = a.f("q")?;
            let k = a.h("k")?;
            let v = a.h("v")?;
            let lengths = match a.take("kv_lengths") {
                Some(Buf::I32(l)) => Some(l),
                Some(_) => return Err("tensor kv_lengths should be i32".to_string()),
                None => None,
            };
            let mask = a.of("mask")?;
            let mut out = a.f("out")?;
            let attend = if kernel == "attention_ex_kv_bf16" {
                Context::attention_ex_kv_bf16
            } else {
                Context::attention_ex_kv_f16
            };
            let r = attend(ctx, batch, heads, kv_heads, seq_q, seq_kv, head_dim, a.fl("seq_major")?, &q, &k, &v,
                           lengths.as_deref(), mask_batch, mask_heads, mask_q, mask.as_deref(), a.fl("causal")?,
                           a.fl("causal_bottom_right")?, a.sf("scale")?, &mut out);
            a.pf("q", q);
            a.ph("k", k);
            a.ph("v", v);
            if let Some(l) = lengths {
                a.pi("kv_lengths", l);
            }
            if let Some(m) = mask {
                a.pf("mask", m);
            }
            a.pf("out", out);
            r
        }
        _ => return Err(format!("unknown kernel {kernel}")),
    };
    Ok(r)
}
