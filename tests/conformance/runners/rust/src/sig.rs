//! Kernel signatures from the corpus (`signatures` of manifest.json /
//! bad_input.json) and the tensor sizes they imply, computed the way the safe
//! crate computes them (docs/rust.md): dense tensors hold the product of their
//! shape, strided ones (with an `ld`) span `(rows - 1) * ld + cols`, batches
//! of items (with a `stride`) span `(count - 1) * stride + the extent of one`;
//! a product that does not fit `usize` overflows.

use crate::dispatch::Args;
use crate::json::Json;

#[derive(Debug, Clone)]
pub struct Param {
    pub name: String,
    pub role: String,
    pub dtype: String,
    pub shape: Vec<String>,
    pub ld: Option<String>,
    pub stride: Option<String>,
    pub nullable: bool,
}

impl Param {
    pub fn is_tensor(&self) -> bool {
        matches!(self.role.as_str(), "in" | "out" | "inout")
    }
}

pub fn params(signatures: &Json, kernel: &str) -> Result<Vec<Param>, String> {
    let sig = signatures.get(kernel).ok_or_else(|| format!("no signature for kernel {kernel}"))?;
    Ok(sig
        .as_arr()
        .iter()
        .map(|p| Param {
            name: p.get("name").and_then(Json::as_str).unwrap_or("").to_string(),
            role: p.get("role").and_then(Json::as_str).unwrap_or("").to_string(),
            dtype: p.get("dtype").and_then(Json::as_str).unwrap_or("").to_string(),
            shape: p.get("shape").map(|s| s.str_list().iter().map(|x| x.to_string()).collect()).unwrap_or_default(),
            ld: p.get("ld").and_then(Json::as_str).map(str::to_string),
            stride: p.get("stride").and_then(Json::as_str).map(str::to_string),
            nullable: p.get("nullable").and_then(Json::as_bool).unwrap_or(false),
        })
        .collect())
}

/// The sizes the safe API takes from a slice rather than as an argument: a
/// dim is derived when some non-nullable tensor is one-dimensional with
/// exactly that size (docs/rust.md).
pub fn derived_dims(params: &[Param]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in params.iter().filter(|p| p.is_tensor() && !p.nullable && p.shape.len() == 1) {
        let d = &p.shape[0];
        if params.iter().any(|q| q.role == "dim" && &q.name == d) && !out.contains(d) {
            out.push(d.clone());
        }
    }
    out
}

/// Number of elements a tensor spans for the dims/flags of `a`: `Some(n)`, or
/// `None` when the size overflows usize.  `Err` for an unknown name.
pub fn size(p: &Param, a: &Args) -> Result<Option<usize>, String> {
    fn extent(e: &str, a: &Args) -> Result<i128, String> {
        if let Some((flag, rest)) = e.split_once('?') {
            let (t, f) = rest.split_once(':').ok_or_else(|| format!("bad shape expression {e}"))?;
            let on = a.flag(flag.trim()).ok_or_else(|| format!("case lacks flag {flag}"))?;
            return extent(if on { t.trim() } else { f.trim() }, a);
        }
        if let Ok(v) = e.parse::<i64>() {
            return Ok(v as i128);
        }
        a.dim(e).map(|v| v as i128).ok_or_else(|| format!("case lacks dim {e}"))
    }
    let dims: Vec<i128> = p.shape.iter().map(|e| extent(e, a)).collect::<Result<_, _>>()?;
    if dims.iter().any(|&d| d < 0) {
        return Err(format!("{}: negative extent", p.name));
    }
    let max = usize::MAX as i128;
    let fit = |v: Option<i128>| v.filter(|&v| v <= max).map(|v| v as usize);
    if let Some(stride) = &p.stride {
        // A batch: the extent of one item (the last axes), then
        // (count - 1) * stride + item, as the crate's batched_len.
        let item = Param { shape: p.shape[1..].to_vec(), stride: None, ..p.clone() };
        let Some(one) = size(&item, a)? else { return Ok(None) };
        if dims[0] == 0 || one == 0 {
            return Ok(Some(0));
        }
        let stride = a.dim(stride).ok_or_else(|| format!("case lacks dim {stride}"))? as i128;
        let Some(span) = fit((dims[0] - 1).checked_mul(stride)) else { return Ok(None) };
        return Ok(fit((span as i128).checked_add(one as i128)));
    }
    if let (Some(ld), 2) = (&p.ld, dims.len()) {
        let ld = a.dim(ld).ok_or_else(|| format!("case lacks dim {ld}"))? as i128;
        let (rows, cols) = (dims[0], dims[1]);
        if rows == 0 || cols == 0 {
            return Ok(Some(0));
        }
        // Overflow as in the crate: (rows - 1) * ld, then + cols, in usize.
        let Some(span) = fit((rows - 1).checked_mul(ld)) else { return Ok(None) };
        return Ok(fit((span as i128).checked_add(cols)));
    }
    let mut n: i128 = 1;
    for d in dims {
        match fit(n.checked_mul(d)) {
            Some(v) => n = v as i128,
            None => return Ok(None),
        }
    }
    Ok(Some(n as usize))
}
