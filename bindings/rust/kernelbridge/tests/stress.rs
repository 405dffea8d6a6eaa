//! Concurrency stress (docs/reliability.md): 8 threads make 10 000 kernel
//! calls each, first through the free functions (each thread's default
//! context), then each on a private `Context` with two threads; every result
//! must be bit-identical to the same call made alone on one thread.  A
//! `Context` is `Send`, so the contexts are also handed from thread to
//! thread between rounds.

use std::sync::Arc;
use std::thread;

use kernelbridge::{Backend, Context, Result};

const THREADS: usize = 8;
const CALLS: usize = 10_000;
const KINDS: usize = 8;

struct Data {
    x64: Vec<f32>,
    y64: Vec<f32>,
    w16: Vec<f32>,
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    logits: Vec<f32>,
    a8: Vec<f32>,
    b8: Vec<f32>,
    a64: Vec<f32>,
    b64: Vec<f32>,
}

fn values(n: usize, seed: u32) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            ((s >> 8) as i32 % 2000) as f32 / 500.0
        })
        .collect()
}

fn data() -> Data {
    Data {
        x64: values(64, 1),
        y64: values(64, 2),
        w16: values(16, 3),
        q: values(2 * 4 * 8, 4),
        k: values(6 * 8, 5),
        v: values(6 * 8, 6),
        logits: values(2 * 16, 7),
        a8: values(64, 8),
        b8: values(64, 9),
        a64: values(64 * 64, 10),
        b64: values(64 * 64, 11),
    }
}

/// Call `kind` on `ctx` (`None`: the free function, on the thread's default
/// context); the output's bits.
fn call(ctx: Option<&Context>, kind: usize, d: &Data) -> Result<Vec<u32>> {
    let mut out = vec![0.0f32; if kind == KINDS - 1 { 64 * 64 } else { 64 }];
    let mut tokens = vec![0i32; 2];
    match (kind, ctx) {
        (0, Some(c)) => c.silu(&d.x64, &mut out)?,
        (0, None) => kernelbridge::silu(&d.x64, &mut out)?,
        (1, Some(c)) => c.gemm(false, true, 8, 8, 8, 1.0, &d.a8, 8, &d.b8, 8, 0.0, &mut out, 8)?,
        (1, None) => kernelbridge::gemm(false, true, 8, 8, 8, 1.0, &d.a8, 8, &d.b8, 8, 0.0, &mut out, 8)?,
        (2, Some(c)) => c.softmax(4, 16, &d.x64, &mut out)?,
        (2, None) => kernelbridge::softmax(4, 16, &d.x64, &mut out)?,
        (3, Some(c)) => c.rmsnorm(4, &d.x64, &d.w16, 1e-5, &mut out)?,
        (3, None) => kernelbridge::rmsnorm(4, &d.x64, &d.w16, 1e-5, &mut out)?,
        (4, Some(c)) => c.attention(1, 2, 1, 4, 6, 8, &d.q, &d.k, &d.v, true, 0.0, &mut out)?,
        (4, None) => kernelbridge::attention(1, 2, 1, 4, 6, 8, &d.q, &d.k, &d.v, true, 0.0, &mut out)?,
        (5, Some(c)) => c.topk_sample(16, &d.logits, 5, 0.8, 1234, &mut tokens)?,
        (5, None) => kernelbridge::topk_sample(16, &d.logits, 5, 0.8, 1234, &mut tokens)?,
        (6, Some(c)) => c.add(&d.x64, &d.y64, &mut out)?,
        (6, None) => kernelbridge::add(&d.x64, &d.y64, &mut out)?,
        // Large enough for the packed gemm path and, on two threads, a split.
        (_, Some(c)) => c.gemm(false, false, 64, 64, 64, 1.0, &d.a64, 64, &d.b64, 64, 0.0, &mut out, 64)?,
        (_, None) => kernelbridge::gemm(false, false, 64, 64, 64, 1.0, &d.a64, 64, &d.b64, 64, 0.0, &mut out, 64)?,
    }
    let mut bits: Vec<u32> = out.iter().map(|f| f.to_bits()).collect();
    if kind == 5 {
        bits = tokens.iter().map(|&t| t as u32).collect();
    }
    Ok(bits)
}

/// The kinds spread over the calls, the large gemm one call in 64.
fn kind_of(t: usize, j: usize) -> usize {
    if j % 64 == 63 {
        KINDS - 1
    } else {
        (t + j) % (KINDS - 1)
    }
}

fn reference(d: &Data) -> Vec<Vec<u32>> {
    let ctx = Context::new(Backend::Cpu, 1).unwrap();
    (0..KINDS).map(|kind| call(Some(&ctx), kind, d).unwrap()).collect()
}

/// Runs `CALLS` calls on each of `THREADS` threads; thread t uses
/// `contexts[t]` (or the default context when there are none) and gives
/// it back.
fn round(d: &Arc<Data>, want: &Arc<Vec<Vec<u32>>>, contexts: Vec<Option<Context>>) -> Vec<Option<Context>> {
    let handles: Vec<_> = contexts
        .into_iter()
        .enumerate()
        .map(|(t, ctx)| {
            let d = Arc::clone(d);
            let want = Arc::clone(want);
            thread::spawn(move || {
                for j in 0..CALLS {
                    let kind = kind_of(t, j);
                    let got = call(ctx.as_ref(), kind, &d)
                        .unwrap_or_else(|e| panic!("thread {t} call {j} (kind {kind}): {e}"));
                    assert_eq!(got, want[kind], "thread {t} call {j} (kind {kind}) differs from the call made alone");
                }
                ctx
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().expect("a stress thread panicked")).collect()
}

#[test]
fn eight_threads_default_and_private_contexts_bit_identical() {
    let d = Arc::new(data());
    let want = Arc::new(reference(&d));
    // Default (per-thread) contexts.
    round(&d, &want, (0..THREADS).map(|_| None).collect());
    // Private two-thread contexts; then the same contexts again, each moved
    // to another thread (a context may change threads between calls).
    let mine: Vec<Option<Context>> = (0..THREADS).map(|_| Some(Context::new(Backend::Cpu, 2).unwrap())).collect();
    let mut back = round(&d, &want, mine);
    back.rotate_left(1);
    round(&d, &want, back);
}

/// One `Context` shared by 8 threads (`&Context` in scoped threads): every
/// result is the call made alone, and each thread's failing call carries its
/// own message.
#[test]
fn eight_threads_share_one_context() {
    let d = data();
    let want = reference(&d);
    let shared = Context::new(Backend::Cpu, 2).unwrap();
    thread::scope(|s| {
        for t in 0..THREADS {
            let (shared, d, want) = (&shared, &d, &want);
            s.spawn(move || {
                for j in 0..3000 {
                    // Every 16th call the large gemm, which uses the pool.
                    let kind = if j % 16 == 15 { KINDS - 1 } else { kind_of(t, j) };
                    let got = call(Some(shared), kind, d).unwrap_or_else(|e| panic!("thread {t} call {j}: {e}"));
                    assert_eq!(got, want[kind], "thread {t} call {j} (kind {kind}) differs from the call made alone");
                    if j % 100 == 0 {
                        let eps = -((t + 1) as f32);
                        let err = shared.rmsnorm(2, &[0.0; 8], &[1.0; 4], eps, &mut [0.0; 8]).unwrap_err();
                        assert_eq!(err.status(), kernelbridge::Status::InvalidArgument);
                        assert!(err.message().contains(&format!("got {}", eps as i32)), "thread {t}: {err}");
                    }
                }
            });
        }
    });
}
