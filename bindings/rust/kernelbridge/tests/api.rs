//! Behaviour of the safe API: results, in-place forms, errors, contexts.
//! (tests/contracts.rs, generated, covers every length check.)

use std::ffi::CStr;

use kernelbridge::{sys, Backend, Context, Error, Status};

fn silu_ref(x: f32) -> f32 {
    let x = f64::from(x);
    (x / (1.0 + (-x).exp())) as f32
}

fn inputs(n: usize) -> Vec<f32> {
    (0..n).map(|i| (i as f32 - n as f32 / 2.0) * 0.37).collect()
}

#[test]
fn version_matches_the_header() {
    assert_eq!(kernelbridge::version_number(), kernelbridge::VERSION_NUMBER);
    assert_eq!(kernelbridge::version_string(), kernelbridge::VERSION_STRING);
    assert_eq!(kernelbridge::VERSION_NUMBER, sys::KB_VERSION_NUMBER);
}

#[test]
fn status_names_match_the_library() {
    for &s in Status::ALL {
        assert_eq!(kernelbridge::status_string(s), s.name());
        assert_eq!(Status::from_code(s.code()), Some(s));
        assert_eq!(Status::from_raw(s.to_raw()), Some(s));
    }
    assert_eq!(Status::ShapeMismatch.code(), 2);
    assert_eq!(Status::from_code(1000), None);
}

#[test]
fn silu_matches_reference_and_raw_call_bit_for_bit() {
    let x = inputs(37);
    let mut y = vec![0.0f32; x.len()];
    kernelbridge::silu(&x, &mut y).unwrap();
    for (a, b) in x.iter().zip(&y) {
        assert!((silu_ref(*a) - b).abs() <= 1e-6 * (1.0 + b.abs()), "{a}: {b}");
    }
    let mut raw = vec![0.0f32; x.len()];
    // Safety: valid pointers of x.len() elements; NULL context is allowed.
    let st = unsafe { sys::kb_silu(std::ptr::null_mut(), x.len() as i64, x.as_ptr(), raw.as_mut_ptr()) };
    assert_eq!(st, sys::kb_status_KB_STATUS_OK);
    assert_eq!(y.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), raw.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
}

#[test]
fn inplace_forms_equal_out_of_place() {
    let ctx = Context::new(Backend::Cpu, 1).unwrap();
    let x = inputs(16);
    let mut y = vec![0.0f32; 16];
    ctx.gelu(&x, &mut y).unwrap();
    let mut z = x.clone();
    ctx.gelu_inplace(&mut z).unwrap();
    assert_eq!(y, z);

    let a = inputs(8);
    let b: Vec<f32> = (0..8).map(|i| i as f32).collect();
    let mut sum = vec![0.0f32; 8];
    ctx.add(&a, &b, &mut sum).unwrap();
    let mut into_a = a.clone();
    ctx.add_inplace(&mut into_a, &b).unwrap();
    let mut into_b = b.clone();
    ctx.add_inplace_b(&a, &mut into_b).unwrap();
    assert_eq!(sum, into_a);
    assert_eq!(sum, into_b);
}

#[test]
fn softmax_rows_sum_to_one() {
    let x = inputs(12);
    let mut y = vec![0.0f32; 12];
    kernelbridge::softmax(3, 4, &x, &mut y).unwrap();
    for row in y.chunks(4) {
        assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-6);
    }
}

#[test]
fn c_errors_carry_status_and_the_contexts_message() {
    let ctx = Context::new(Backend::Cpu, 1).unwrap();
    let mut y = [0.0f32; 0];
    let err = ctx.softmax(2, 0, &[], &mut y).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert!(err.message().starts_with("kb_softmax: "), "{err}");
    assert!(err.message().contains("cols"), "{err}");
    // The message was copied: a later successful call does not change it.
    ctx.silu(&[1.0], &mut [0.0]).unwrap();
    assert!(err.message().contains("cols"));
    assert_eq!(ctx.last_error(), "");
    assert_eq!(err.to_string(), format!("{} (INVALID_ARGUMENT)", err.message()));
    let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(err.clone());
    assert_eq!(boxed.to_string(), err.to_string());

    let err = kernelbridge::scale(f32::NAN, &[1.0], &mut [0.0]).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert!(err.message().starts_with("kb_scale: "), "{err}");
}

#[test]
fn shape_mismatch_names_the_argument() {
    let x = [1.0f32; 4];
    let mut y = [0.0f32; 3];
    let err = kernelbridge::silu(&x, &mut y).unwrap_err();
    assert_eq!(err.status(), Status::ShapeMismatch);
    assert_eq!(err.code(), 2);
    assert_eq!(err.message(), "kb_silu: y has 3 elements, expected 4 for shape [n] = [4]");
    let err = kernelbridge::rmsnorm(2, &[0.0; 5], &[1.0; 3], 1e-5, &mut [0.0; 6]).unwrap_err();
    assert!(err.message().starts_with("kb_rmsnorm: x has 5 elements, expected 6"), "{err}");
}

#[test]
fn sizes_beyond_c_range_are_rejected() {
    let err = kernelbridge::softmax(usize::MAX, 0, &[], &mut []).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert!(err.message().contains("rows must be <="), "{err}");
    let err = kernelbridge::softmax(usize::MAX, 3, &[], &mut []).unwrap_err();
    assert_eq!(err.status(), Status::OutOfMemory);
}

#[test]
fn optional_tensors_are_null() {
    let x = inputs(6);
    let mut plain = vec![0.0f32; 6];
    let mut affine = vec![0.0f32; 6];
    kernelbridge::layernorm(2, 3, &x, None, None, 1e-5, &mut plain).unwrap();
    kernelbridge::layernorm(2, 3, &x, Some(&[1.0; 3]), Some(&[0.0; 3]), 1e-5, &mut affine).unwrap();
    assert_eq!(plain, affine);
    let err = kernelbridge::layernorm(2, 3, &x, Some(&[1.0; 2]), None, 1e-5, &mut plain).unwrap_err();
    assert!(err.message().starts_with("kb_layernorm: weight has 2 elements"), "{err}");
}

#[test]
fn gemm_with_strides_and_transposes() {
    // A = [[1, 2], [3, 4]] stored with row stride 3; B = I; C = A.
    let a = [1.0f32, 2.0, 99.0, 3.0, 4.0];
    let b = [1.0f32, 0.0, 0.0, 1.0];
    let mut c = [f32::NAN; 4];
    kernelbridge::gemm(false, false, 2, 2, 2, 1.0, &a, 3, &b, 2, 0.0, &mut c, 2).unwrap();
    assert_eq!(c, [1.0, 2.0, 3.0, 4.0]);
    kernelbridge::gemm(true, false, 2, 2, 2, 1.0, &a, 3, &b, 2, 0.0, &mut c, 2).unwrap();
    assert_eq!(c, [1.0, 3.0, 2.0, 4.0]);
    let err = kernelbridge::gemm(false, false, 2, 2, 2, 1.0, &a[..4], 3, &b, 2, 0.0, &mut c, 2).unwrap_err();
    assert_eq!(err.status(), Status::ShapeMismatch);
    assert!(err.message().contains("expected at least 5"), "{err}");
}

#[test]
fn integer_tensors() {
    let x = [0.0f32, 3.0, 1.0, 5.0, -1.0, 2.0];
    let mut out = [0i32; 2];
    kernelbridge::argmax(3, &x, &mut out).unwrap();
    assert_eq!(out, [1, 0]);

    let table = [0.0f32, 0.5, 1.0, 1.5, 2.0, 2.5];
    let mut rows = [0.0f32; 4];
    kernelbridge::embedding(3, 2, &[2, 0], &table, &mut rows).unwrap();
    assert_eq!(rows, [2.0, 2.5, 0.0, 0.5]);
    let err = kernelbridge::embedding(3, 2, &[3, 0], &table, &mut rows).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert_eq!(rows, [2.0, 2.5, 0.0, 0.5], "nothing is written on error");

    let logits = inputs(10);
    let mut a = [0i32; 2];
    let mut b = [0i32; 2];
    kernelbridge::sample(5, &logits, 0.7, 42, &mut a).unwrap();
    kernelbridge::sample(5, &logits, 0.7, 42, &mut b).unwrap();
    assert_eq!(a, b);
    assert!(a.iter().all(|&t| (0..5).contains(&t)));
}

#[test]
fn cross_entropy_mean() {
    let logits = [0.0f32; 6];
    let mut losses = [0.0f32; 2];
    let mut mean = [0.0f32; 1];
    kernelbridge::cross_entropy(3, &logits, &[0, 2], -100, &mut losses, &mut mean).unwrap();
    let want = 3.0f32.ln();
    assert!((mean[0] - want).abs() < 1e-6 && (losses[1] - want).abs() < 1e-6);
}

#[test]
fn contexts() {
    // (With a usable CUDA device, e.g. KB_CUDA_LIBRARY set on a GPU machine,
    // Cuda and Auto give CUDA contexts; tests/cuda.rs covers that case.)
    let cuda = kernelbridge::cuda::is_available();
    if !cuda {
        let err = Context::new(Backend::Cuda, 1).unwrap_err();
        assert_eq!(err.status(), Status::BackendUnavailable);
        assert!(err.message().starts_with("kb_context_create"), "{err}");
    }
    let ctx = Context::new(Backend::Auto, 3).unwrap();
    assert_eq!(ctx.backend().unwrap(), if cuda { Backend::Cuda } else { Backend::Cpu });
    assert_eq!(ctx.num_threads(), 3);
    assert!(!ctx.as_raw().is_null());
    // Safety: the pointer is live and owned by ctx.
    let msg = unsafe { CStr::from_ptr(sys::kb_context_last_error(ctx.as_raw())) };
    assert_eq!(msg.to_bytes(), b"");
    assert!(format!("{ctx:?}").starts_with("Context"));
}

#[test]
fn contexts_move_between_threads_and_results_do_not_depend_on_threads() {
    let x = inputs(4096);
    let one = Context::new(Backend::Cpu, 1).unwrap();
    let mut want = vec![0.0f32; x.len()];
    one.softmax(64, 64, &x, &mut want).unwrap();
    let handles: Vec<_> = (1..=4)
        .map(|threads| {
            let ctx = Context::new(Backend::Cpu, threads).unwrap();
            let x = x.clone();
            std::thread::spawn(move || {
                let mut y = vec![0.0f32; x.len()];
                ctx.softmax(64, 64, &x, &mut y).unwrap();
                let mut z = vec![0.0f32; x.len()];
                kernelbridge::softmax(64, 64, &x, &mut z).unwrap(); // this thread's default context
                assert_eq!(y, z);
                y
            })
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), want);
    }
}

#[test]
fn default_context_is_per_thread_and_reusable() {
    let a = kernelbridge::with_default_context(|c| Ok(c.as_raw() as usize)).unwrap();
    let b = kernelbridge::with_default_context(|c| Ok(c.as_raw() as usize)).unwrap();
    assert_eq!(a, b);
    let other = std::thread::spawn(|| kernelbridge::with_default_context(|c| Ok(c.num_threads())).unwrap());
    assert_eq!(other.join().unwrap(), 1);
    let threads = kernelbridge::with_default_context(|c| Ok(c.num_threads())).unwrap();
    assert_eq!(threads, 1);
    let e: Result<(), Error> = kernelbridge::with_default_context(|_| Err(Error::new(Status::Unsupported, "x")));
    assert_eq!(e.unwrap_err().status(), Status::Unsupported);
}

#[test]
fn device_lost_is_a_status_like_the_others() {
    assert_eq!(Status::from_code(8), Some(Status::DeviceLost));
    assert_eq!(Status::from_raw(sys::kb_status_KB_STATUS_DEVICE_LOST), Some(Status::DeviceLost));
    assert_eq!(Status::DeviceLost.to_raw(), sys::kb_status_KB_STATUS_DEVICE_LOST);
    assert_eq!(kernelbridge::status_string(Status::DeviceLost), "DEVICE_LOST");
    let err = Error::new(Status::DeviceLost, "kb_softmax: device lost");
    assert_eq!(err.code(), 8);
    assert_eq!(err.to_string(), "kb_softmax: device lost (DEVICE_LOST)");
    // Status is non_exhaustive: a match outside the crate needs a `_` arm.
    let advice = match err.status() {
        Status::DeviceLost => "destroy the context",
        Status::BackendUnavailable => "use the CPU",
        _ => "fix the call",
    };
    assert_eq!(advice, "destroy the context");
}

#[test]
fn context_free_errors_carry_the_threads_message() {
    // kb_context_create with a negative thread count cannot be reached
    // (usize); an unavailable backend is the context-free failure here.
    if !kernelbridge::cuda::is_available() {
        let err = Context::new(Backend::Cuda, 0).unwrap_err();
        assert_eq!(err.status(), Status::BackendUnavailable);
        assert!(err.message().starts_with("kb_context_create: ") && err.message().len() > 30, "{err}");
        assert_eq!(kernelbridge::last_error(), err.message());
    }
    let err = Context::new(Backend::Cpu, usize::MAX).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert!(err.message().contains("num_threads"), "{err}");
}

/// Run only as the child of `cpu_isa_levels_agree` (KB_CPU_ISA is read once
/// per process): prints the level and the bits of a gemm on a two-thread
/// context, or the error of a refused context.
#[test]
fn isa_probe() {
    if std::env::var_os("KB_RUST_ISA_PROBE").is_none() {
        return;
    }
    println!("level {}", kernelbridge::cpu_isa());
    let ctx = match Context::new(Backend::Cpu, 2) {
        Ok(c) => c,
        Err(e) => {
            println!("error {:?} {}", e.status(), e);
            return;
        }
    };
    let (m, n, k) = (10, 10, 100);
    let a: Vec<f32> = (0..m * k).map(|i| (i as f32 * 0.37).sin()).collect();
    let mut c = vec![0.0f32; m * n];
    ctx.gemm(false, true, m, n, k, 1.0, &a, k, &a, k, 0.0, &mut c, n).unwrap();
    let bits = c.iter().fold(0u64, |h, v| h.wrapping_mul(31).wrapping_add(u64::from(v.to_bits())));
    println!("bits {bits}");
}

fn probe_isa(level: &str) -> (String, String) {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "isa_probe", "--nocapture", "--test-threads=1"])
        .env("KB_RUST_ISA_PROBE", "1")
        .env("KB_CPU_ISA", level)
        .output()
        .unwrap();
    assert!(out.status.success(), "probe {level}: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut got = String::new();
    let mut result = String::new();
    // The harness prints "test isa_probe ... " before the probe's first line.
    for line in text.lines() {
        if line.starts_with("bits ") || line.starts_with("error ") {
            result = line.to_string();
        } else if let Some(at) = line.find("level ") {
            got = line[at + 6..].to_string();
        }
    }
    (got, result)
}

/// `cpu_isa()` names the level; KB_CPU_ISA forces a lower one with the same
/// result bits; a value that is no level makes `Context::new` fail with
/// InvalidArgument naming the variable.
#[test]
fn cpu_isa_levels_agree() {
    let isa = kernelbridge::cpu_isa();
    assert!(["scalar", "avx2", "avx512"].contains(&isa), "{isa}");
    let (level, scalar) = probe_isa("scalar");
    assert_eq!(level, "scalar");
    assert!(scalar.starts_with("bits "), "{scalar}");
    for want in ["avx2", "avx512"] {
        let (level, got) = probe_isa(want);
        if got.contains("is not supported by this CPU") {
            continue;
        }
        assert_eq!(level, want);
        assert_eq!(got, scalar, "{want}");
    }
    let (_, bad) = probe_isa("sse9");
    assert!(bad.starts_with("error InvalidArgument"), "{bad}");
    assert!(bad.contains("KB_CPU_ISA=\"sse9\" is not an instruction-set level"), "{bad}");
}
