//! The Rust conformance runner (docs/conformance.md, "Runners").
//!
//!     rust_runner --corpus DIR --out FILE [--threads N]
//!
//! Reads DIR/manifest.json and DIR/bad_input.json, calls every kernel through
//! the safe crate's public API (`kernelbridge::Context`; never
//! `kernelbridge::sys`) on a real CPU context, and writes the result JSON that
//! tests/conformance/report.py reads, with the same case names, error metric
//! and FNV-1a hashes as the C runner (runners/c/runner.c).  Bad-input cases
//! that the safe API cannot express are recorded as "n/a" with the reason.
//! Exit status: 0 when every golden case passed and every bad-input case
//! returned the expected status, 1 otherwise, 2 on a usage or corpus error.

mod dispatch;
mod json;
mod npy;
mod sig;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use dispatch::{Args, Buf};
use json::Json;
use kernelbridge::{Backend, Context};
use npy::Data;
use sig::Param;

// ---------------------------------------------------------------------------
// Error metric and hash (docs/conformance.md), exactly as runner.c.

/// 2^(max(E - 1023, -126) - 23) with E the exponent field of `want`.
fn ulp32(want: f64) -> f64 {
    let e = ((want.to_bits() >> 52) & 0x7ff) as i32 - 1023;
    let e = e.max(-126);
    2f64.powi(e - 23)
}

/// 0 when an integer output equals its expected value, else infinity.
fn exact(got: f64, want: f64) -> f64 {
    if got == want {
        0.0
    } else {
        f64::INFINITY
    }
}

fn element_error(got: f64, want: f64, floor: f64) -> f64 {
    if got.is_nan() && want.is_nan() {
        return 0.0;
    }
    if got == want {
        return 0.0;
    }
    if !got.is_finite() || !want.is_finite() {
        return f64::INFINITY;
    }
    let mut denom = ulp32(want);
    if floor > denom {
        denom = floor;
    }
    (got - want).abs() / denom
}

fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

/// Largest element error of an output against its expected values.
fn max_error(got: &Buf, want: &Data, floor: f64) -> f64 {
    let want_at = |j: usize| -> f64 {
        match want {
            Data::F64(w) => w[j],
            Data::F32(w) => w[j] as f64,
            Data::I32(w) => w[j] as f64,
            Data::U8(w) => w[j] as f64,
            Data::U16(w) => w[j] as f64,
        }
    };
    let mut max_err = 0.0f64;
    let n = got.len().min(want.len());
    for j in 0..n {
        let e = match got {
            // Integers are exact whatever the tolerance (kb_moe_route's ids
            // sit beside float weights with a tolerance of ulps).
            Buf::I32(g) => exact(g[j] as f64, want_at(j)),
            Buf::U8(g) => exact(g[j] as f64, want_at(j)),
            // bfloat16 / float16 bit patterns (a copied row): exact, as
            // integers; a float expected file never matches them.
            Buf::U16(g) => match want {
                Data::U16(_) => exact(g[j] as f64, want_at(j)),
                _ => f64::INFINITY,
            },
            Buf::F32(g) => element_error(g[j] as f64, want_at(j), floor),
        };
        #[allow(clippy::neg_cmp_op_on_partial_ord)]
        if !(e <= max_err) {
            max_err = e;
        }
    }
    max_err
}

// ---------------------------------------------------------------------------

struct Tally {
    golden: usize,
    golden_failed: usize,
    bad: usize,
    bad_failed: usize,
}

fn read_json(dir: &Path, file: &str) -> Result<Json, String> {
    let path = dir.join(file);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    json::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

fn status_name(e: &kernelbridge::Error) -> &'static str {
    kernelbridge::status_string(e.status())
}

/// The dims, flags and scalars of a case (golden or bad input).
fn base_args(case: &Json) -> Result<Args, String> {
    let kernel = case.get("kernel").and_then(Json::as_str).ok_or("case without kernel")?;
    let mut a = Args { kernel: kernel.to_string(), ..Args::default() };
    for (k, v) in case.get("dims").map(Json::as_obj).unwrap_or(&[]) {
        a.dims.push((k.clone(), v.as_i64().ok_or_else(|| format!("dim {k} is not an integer"))?));
    }
    for (k, v) in case.get("flags").map(Json::as_obj).unwrap_or(&[]) {
        a.flags.push((k.clone(), v.as_bool().ok_or_else(|| format!("flag {k} is not a boolean"))?));
    }
    for (k, v) in case.get("scalars").map(Json::as_obj).unwrap_or(&[]) {
        a.scalars.push((k.clone(), v.clone()));
    }
    Ok(a)
}

/// Checks that every tensor passed has the size the case's dims give it
/// (dense: exactly; strided: at least), so that the sizes the safe API
/// derives from slices are the case's sizes and the call is the C runner's.
fn check_sizes(params: &[Param], a: &Args) -> Result<(), String> {
    for p in params.iter().filter(|p| p.is_tensor()) {
        let Some(b) = a.buf(&p.name) else { continue };
        let want = sig::size(p, a)?;
        let ok = match want {
            Some(w) if p.ld.is_some() => b.len() >= w,
            Some(w) => b.len() == w,
            None => false,
        };
        if !ok {
            return Err(format!(
                "{} has {} elements, the case's sizes give {}",
                p.name,
                b.len(),
                want.map_or("an overflow".to_string(), |w| w.to_string())
            ));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Golden cases.

fn run_golden(ctx: &Context, case: &Json, manifest: &Json, dir: &Path, out: &mut String, tl: &mut Tally) {
    let name = case.get("name").and_then(Json::as_str).unwrap_or("?").to_string();
    let kernel = case.get("kernel").and_then(Json::as_str).unwrap_or("?").to_string();
    // A case's own tolerance (one whose bound depends on its data) replaces
    // its kernel's.
    let tol = case.get("tolerance").or_else(|| manifest.get("tolerances").and_then(|t| t.get(&kernel)));
    let tol_ulp = tol.and_then(|t| t.get("ulp")).and_then(Json::as_f64).unwrap_or(0.0);
    let tol_abs = tol.and_then(|t| t.get("abs")).and_then(Json::as_f64).unwrap_or(0.0);

    // Outputs in the order of the kernel's parameters (the C runner's order,
    // from manifest.tsv); the JSON file lists them sorted by name.
    let mut expected: Vec<(String, String)> = case
        .get("expected")
        .map(Json::as_obj)
        .unwrap_or(&[])
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
        .collect();
    if let Some(order) = manifest.get("signatures").and_then(|s| s.get(&kernel)) {
        let pos = |n: &str| order.as_arr().iter().position(|p| p.get("name").and_then(Json::as_str) == Some(n));
        expected.sort_by_key(|(k, _)| pos(k).unwrap_or(usize::MAX));
    }
    let aliases: Vec<(String, String)> = case
        .get("alias")
        .map(Json::as_obj)
        .unwrap_or(&[])
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
        .collect();
    // The buffer an output is read from: its own, or the input it aliases.
    let source = |o: &str| -> String {
        aliases.iter().find(|(k, _)| k == o).map_or(o.to_string(), |(_, v)| v.clone())
    };

    let mut wants: Vec<Data> = Vec::new();
    let mut status = "OK";
    let result: Result<Args, String> = (|| {
        let mut a = base_args(case)?;
        if aliases.len() > 1 {
            return Err("more than one alias".to_string());
        }
        a.alias = aliases.first().cloned();
        for (k, v) in case.get("inputs").map(Json::as_obj).unwrap_or(&[]) {
            let file = v.as_str().ok_or_else(|| format!("input {k} is not a file name"))?;
            let b = match npy::read(&dir.join(file))? {
                Data::F32(d) => Buf::F32(d),
                Data::I32(d) => Buf::I32(d),
                Data::U8(d) => Buf::U8(d),
                Data::U16(d) => Buf::U16(d),
                Data::F64(_) => return Err(format!("{file}: inputs must be <f4, <i4, <u2 or |u1")),
            };
            a.bufs.push((k.clone(), b));
        }
        // Outputs that are neither inputs nor aliases of inputs get fresh
        // buffers sized from the expected file, prefilled with the quiet NaN
        // 0x7FC00000 (f32), -1 (i32) or 0xFF (u8).
        for (o, file) in &expected {
            let w = npy::read(&dir.join(file))?;
            let src = source(o);
            match a.buf(&src) {
                Some(b) if b.len() != w.len() => {
                    return Err(format!("{o}: expected {} elements, buffer has {}", w.len(), b.len()))
                }
                Some(_) => {}
                None if src != *o => return Err(format!("alias of unknown input {src}")),
                None => {
                    let b = match w {
                        Data::I32(_) => Buf::I32(vec![-1; w.len()]),
                        Data::U8(_) => Buf::U8(vec![0xff; w.len()]),
                        Data::U16(_) => Buf::U16(vec![0xffff; w.len()]), // a NaN pattern in both formats
                        _ => Buf::F32(vec![f32::from_bits(0x7fc0_0000); w.len()]),
                    };
                    a.bufs.push((o.clone(), b));
                }
            }
            wants.push(w);
        }
        let signatures = manifest.get("signatures").ok_or("manifest has no signatures")?;
        check_sizes(&sig::params(signatures, &kernel)?, &a)?;
        Ok(a)
    })();

    let mut err = String::new();
    let mut args = None;
    match result {
        Err(e) => {
            status = "RUNNER_ERROR";
            err = e;
        }
        Ok(mut a) => match dispatch::call(ctx, &mut a) {
            Err(e) => {
                status = "RUNNER_ERROR";
                err = e;
            }
            Ok(Err(e)) => {
                status = status_name(&e);
                err = format!("{}: {}", status, e.message());
            }
            Ok(Ok(())) => args = Some(a),
        },
    }
    let ok = args.is_some();

    let floor = if tol_ulp > 0.0 { tol_abs / tol_ulp } else { 0.0 };
    let mut max_err = 0.0f64;
    let mut hashes = String::new();
    if let Some(a) = &args {
        for (i, ((o, _), w)) in expected.iter().zip(&wants).enumerate() {
            let Some(b) = a.buf(&source(o)) else { continue };
            let e = max_error(b, w, floor);
            #[allow(clippy::neg_cmp_op_on_partial_ord)]
            if !(e <= max_err) {
                max_err = e;
            }
            let _ = write!(hashes, "{}{}: \"{:016x}\"", if i > 0 { ", " } else { "" }, json::string(o), fnv1a64(&b.bytes()));
        }
    }
    let passed = ok && max_err <= tol_ulp;
    let _ = write!(
        out,
        "{}\n  {{\"name\": {}, \"kernel\": {}, \"status\": {}, \"hashes\": {{{}}}, \"max_ulp\": {}, \"passed\": {}",
        if tl.golden > 0 { "," } else { "" },
        json::string(&name),
        json::string(&kernel),
        json::string(status),
        hashes,
        if ok { json::number(max_err) } else { "\"inf\"".to_string() },
        passed
    );
    if !ok {
        let _ = write!(out, ", \"error\": {}", json::string(&err));
    }
    out.push('}');
    tl.golden += 1;
    if !passed {
        tl.golden_failed += 1;
        eprintln!(
            "FAIL {name}: {} (max_ulp {}, tolerance {})",
            if ok { "out of tolerance" } else { &err },
            json::fmt_g17(max_err),
            tol_ulp
        );
    }
}

// ---------------------------------------------------------------------------
// Bad-input cases.

/// Why the safe API cannot make this call, or None when it can.
fn cannot_express(case: &Json, params: &[Param], a: &Args) -> Result<Option<String>, String> {
    let requires = case.get("requires").map(Json::str_list).unwrap_or_default();
    let param = |n: &str| params.iter().find(|p| p.name == n);
    for r in &requires {
        match *r {
            "negative_dim" => {
                let neg: Vec<String> = a.dims.iter().filter(|(_, v)| *v < 0).map(|(k, v)| format!("{k} = {v}")).collect();
                return Ok(Some(format!(
                    "sizes are usize in the safe API (or the length of a slice): a negative size ({}) cannot be passed",
                    neg.join(", ")
                )));
            }
            "overlap" => {
                let ov: Vec<String> = case
                    .get("overlap")
                    .map(Json::as_obj)
                    .unwrap_or(&[])
                    .iter()
                    .map(|(k, v)| format!("{k} inside {}", v.get("with").and_then(Json::as_str).unwrap_or("?")))
                    .collect();
                return Ok(Some(format!(
                    "the borrow rules forbid an output slice overlapping another argument ({}); the safe API only \
                     offers exact in-place aliasing through its *_inplace forms",
                    ov.join(", ")
                )));
            }
            "null" => {
                let non_nullable: Vec<&str> = case
                    .get("null")
                    .map(Json::str_list)
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|n| !param(n).is_some_and(|p| p.nullable))
                    .collect();
                if !non_nullable.is_empty() {
                    return Ok(Some(format!(
                        "slices are never NULL: the safe API cannot pass NULL for the non-nullable tensor(s) {} \
                         (an empty tensor is an empty slice, whose pointer is not NULL)",
                        non_nullable.join(", ")
                    )));
                }
                // Only nullable tensors are NULL: passed as None.
            }
            "huge_dim" => {
                // Expressible only when no slice length contradicts the sizes
                // short of an overflow: every size the safe API derives from a
                // slice has the case's value, and every tensor whose size fits
                // usize has a slice of that size.
                for d in sig::derived_dims(params) {
                    let want = a.dim(&d).unwrap_or(0);
                    for p in params.iter().filter(|p| p.is_tensor() && p.shape.len() == 1 && p.shape[0] == d) {
                        if let Some(b) = a.buf(&p.name) {
                            if b.len() as i128 != want as i128 {
                                return Ok(Some(format!(
                                    "the safe API takes {d} from the length of {}: {d} = {want} would need a slice \
                                     of that many elements, and a short one is a length mismatch (SHAPE_MISMATCH)",
                                    p.name
                                )));
                            }
                        }
                    }
                }
                for p in params.iter().filter(|p| p.is_tensor()) {
                    let Some(b) = a.buf(&p.name) else { continue };
                    if let Some(s) = sig::size(p, a)? {
                        let short = if p.ld.is_some() { b.len() < s } else { b.len() != s };
                        if short {
                            return Ok(Some(format!(
                                "{} spans {s} elements for these sizes, which does not overflow; with a slice of {} \
                                 the call is a length mismatch, reported (SHAPE_MISMATCH) before the overflow of \
                                 another size: huge sizes with small buffers cannot be expressed with checked slices",
                                p.name,
                                b.len()
                            )));
                        }
                    }
                }
            }
            "explicit_ld" | "length_mismatch" => {} // ld is an explicit argument; slices carry lengths
            "bad_enum" => {
                return Ok(Some(
                    "C enums are Rust enums in the safe API (Activation, Dtype, RopeStyle, RopeScaling): a value \
                     outside the enum cannot be constructed"
                        .to_string(),
                ))
            }
            other => return Ok(Some(format!("unknown requirement {other}"))),
        }
    }
    Ok(None)
}

/// Fills the case's tensors: `shape` elements (what a binding deriving sizes
/// from its arrays builds; strided tensors: the whole `len` buffer, since ld
/// is explicit), 1.0 / 0 / zero bytes unless `values` are given.
fn bad_tensors(case: &Json, params: &[Param], a: &mut Args) -> Result<(), String> {
    for (name, t) in case.get("tensors").map(Json::as_obj).unwrap_or(&[]) {
        let p = params.iter().find(|p| &p.name == name).ok_or_else(|| format!("unknown tensor {name}"))?;
        let len = t.get("len").and_then(Json::as_i64).ok_or_else(|| format!("{name}: no len"))?;
        let mut n = usize::try_from(len).map_err(|_| format!("{name}: bad len {len}"))?;
        if p.ld.is_none() {
            if let Some(shape) = t.get("shape") {
                let mut prod: usize = 1;
                for d in shape.as_arr() {
                    let d = d.as_i64().and_then(|d| usize::try_from(d).ok()).ok_or_else(|| format!("{name}: bad shape"))?;
                    prod = prod.checked_mul(d).ok_or_else(|| format!("{name}: shape overflows"))?;
                }
                n = prod;
            }
        }
        let values = t.get("values").map(Json::as_arr).unwrap_or(&[]);
        let b = if p.dtype == "u8" {
            let mut v = vec![0u8; n];
            for (j, x) in values.iter().take(n).enumerate() {
                v[j] = x.as_i64().and_then(|x| u8::try_from(x).ok()).ok_or_else(|| format!("{name}: bad value"))?;
            }
            Buf::U8(v)
        } else if p.dtype == "bf16" || p.dtype == "f16" {
            let mut v = vec![0u16; n];
            for (j, x) in values.iter().take(n).enumerate() {
                v[j] = x.as_i64().and_then(|x| u16::try_from(x).ok()).ok_or_else(|| format!("{name}: bad value"))?;
            }
            Buf::U16(v)
        } else if p.dtype == "i32" {
            let mut v = vec![0i32; n];
            for (j, x) in values.iter().take(n).enumerate() {
                v[j] = x.as_i64().and_then(|x| i32::try_from(x).ok()).ok_or_else(|| format!("{name}: bad value"))?;
            }
            Buf::I32(v)
        } else {
            let mut v = vec![1.0f32; n];
            for (j, x) in values.iter().take(n).enumerate() {
                v[j] = dispatch::scalar_f32(x).ok_or_else(|| format!("{name}: bad value"))?;
            }
            Buf::F32(v)
        };
        a.bufs.push((name.clone(), b));
    }
    Ok(())
}

fn bit_equal(x: &Buf, y: &Buf) -> bool {
    x.bytes() == y.bytes()
}

fn run_bad(ctx: &Context, case: &Json, signatures: &Json, out: &mut String, tl: &mut Tally) {
    let name = case.get("name").and_then(Json::as_str).unwrap_or("?").to_string();
    let kernel = case.get("kernel").and_then(Json::as_str).unwrap_or("?").to_string();
    let expected = case.get("expected").and_then(Json::as_str).unwrap_or("?").to_string();

    let mut got = "n/a".to_string();
    let mut na: Option<String> = None;
    let mut err = String::new();
    let mut untouched = true;
    let mut ok = false;
    let setup = (|| -> Result<(Args, Vec<Param>, Option<String>), String> {
        let params = sig::params(signatures, &kernel)?;
        let mut a = base_args(case)?;
        bad_tensors(case, &params, &mut a)?;
        let na = cannot_express(case, &params, &a)?;
        Ok((a, params, na))
    })();
    match setup {
        Err(e) => {
            got = "RUNNER_ERROR".into();
            err = e;
        }
        Ok((_, _, Some(reason))) => na = Some(reason),
        Ok((mut a, _, None)) => {
            let before: Vec<(String, Buf)> = a.bufs.clone();
            match dispatch::call(ctx, &mut a) {
                Err(e) => {
                    got = "RUNNER_ERROR".into();
                    err = format!("cannot call {kernel}: {e}");
                }
                Ok(r) => {
                    if let Err(e) = &r {
                        got = status_name(e).to_string();
                        err = format!("{}: {}", got, e.message());
                        for (n, b) in &before {
                            if a.buf(n).map_or(true, |now| !bit_equal(now, b)) {
                                untouched = false;
                            }
                        }
                    } else {
                        got = "OK".into();
                    }
                    ok = got == expected && untouched;
                }
            }
        }
    }
    let _ = write!(
        out,
        "{}\n  {{\"name\": {}, \"kernel\": {}, \"expected\": {}, \"got\": {}",
        if tl.bad > 0 { "," } else { "" },
        json::string(&name),
        json::string(&kernel),
        json::string(&expected),
        json::string(&got)
    );
    match &na {
        Some(reason) => {
            let _ = write!(out, ", \"reason\": {}", json::string(reason));
        }
        None => {
            let _ = write!(out, ", \"untouched\": {}", untouched);
            if got == "RUNNER_ERROR" {
                let _ = write!(out, ", \"reason\": {}", json::string(&err));
            }
        }
    }
    out.push('}');
    tl.bad += 1;
    if na.is_none() && !ok {
        tl.bad_failed += 1;
        eprintln!(
            "FAIL {name}: expected {expected}, got {got}{} {err}",
            if untouched { "" } else { " and an output was modified" }
        );
    }
}

// ---------------------------------------------------------------------------

fn usage() -> ExitCode {
    eprintln!("usage: rust_runner --corpus DIR --out FILE [--threads N]");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let (mut dir, mut out_path, mut threads): (Option<PathBuf>, Option<PathBuf>, usize) = (None, None, 4);
    let mut i = 0;
    while i < argv.len() {
        match (argv[i].as_str(), argv.get(i + 1)) {
            ("--corpus", Some(v)) => dir = Some(PathBuf::from(v)),
            ("--out", Some(v)) => out_path = Some(PathBuf::from(v)),
            ("--threads", Some(v)) => match v.parse() {
                Ok(n) => threads = n,
                Err(_) => return usage(),
            },
            _ => return usage(),
        }
        i += 2;
    }
    let (Some(dir), Some(out_path)) = (dir, out_path) else { return usage() };

    let ctx = match Context::new(Backend::Cpu, threads) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("Context::new: {e}");
            return ExitCode::from(2);
        }
    };
    let (manifest, bad) = match (read_json(&dir, "manifest.json"), read_json(&dir, "bad_input.json")) {
        (Ok(m), Ok(b)) => (m, b),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let mut tl = Tally { golden: 0, golden_failed: 0, bad: 0, bad_failed: 0 };
    let mut out = String::new();
    let _ = write!(
        out,
        "{{\n  \"format\": 1,\n  \"language\": \"rust\",\n  \"backend\": \"cpu\",\n  \"version\": {},\n  \"threads\": {},\n",
        json::string(kernelbridge::version_string()),
        ctx.num_threads()
    );
    out.push_str("  \"cases\": [");
    for case in manifest.get("cases").map(Json::as_arr).unwrap_or(&[]) {
        run_golden(&ctx, case, &manifest, &dir, &mut out, &mut tl);
    }
    out.push_str("\n  ],\n  \"bad_input\": [");
    let no_sigs = Json::Obj(Vec::new());
    let signatures = bad.get("signatures").unwrap_or(&no_sigs);
    for case in bad.get("cases").map(Json::as_arr).unwrap_or(&[]) {
        run_bad(&ctx, case, signatures, &mut out, &mut tl);
    }
    out.push_str("\n  ]\n}\n");
    if let Err(e) = std::fs::write(&out_path, out) {
        eprintln!("cannot write {}: {e}", out_path.display());
        return ExitCode::from(2);
    }
    println!(
        "rust runner: {}/{} golden cases passed, {}/{} bad-input cases as expected (threads {})",
        tl.golden - tl.golden_failed,
        tl.golden,
        tl.bad - tl.bad_failed,
        tl.bad,
        threads
    );
    if tl.golden_failed == 0 && tl.bad_failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
