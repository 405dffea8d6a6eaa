//! Call overhead of the Rust binding: 16-element SiLU, ns per call.
//!
//!   c        kb_silu called in a loop from C (the baseline)
//!   sys      the raw declaration, kernelbridge_sys::kb_silu, from Rust
//!   safe     Context::silu (length checks, Result, message on error)
//!   safe-tls kernelbridge::silu (the same through the thread's default context)
//!
//! Every variant uses a one-thread CPU context.  Each round times every
//! variant once over ITERS calls, in rotating order; the min and median over
//! ROUNDS rounds are printed.  Usage: kernelbridge-bench [ROUNDS] [ITERS]
//!
//! `kernelbridge-bench --cuda [RUNS] [ITERS]` times the same call on CUDA
//! device buffers instead (src/cuda.rs; default 7 runs of 20000 calls).
mod cuda;

use std::hint::black_box;
use std::time::Instant;

use kernelbridge::{sys, Backend, Context};

extern "C" {
    fn kb_bench_c_silu(ctx: *mut sys::kb_context, n: i64, x: *const f32, y: *mut f32, iters: i64, failures: *mut i32) -> i64;
}

const N: usize = 16;

fn time_c(ctx: &Context, x: &[f32], y: &mut [f32], iters: u64) -> f64 {
    let mut failures = 0i32;
    // Safety: ctx is live and used by this thread only; x and y hold N elements.
    let ns = unsafe { kb_bench_c_silu(ctx.as_raw(), N as i64, x.as_ptr(), y.as_mut_ptr(), iters as i64, &mut failures) };
    assert_eq!(failures, 0);
    ns as f64 / iters as f64
}

fn time_sys(ctx: &Context, x: &[f32], y: &mut [f32], iters: u64) -> f64 {
    let raw = ctx.as_raw();
    let t = Instant::now();
    for _ in 0..iters {
        // Safety: as in time_c.
        let st = unsafe { sys::kb_silu(raw, N as i64, black_box(x.as_ptr()), y.as_mut_ptr()) };
        assert_eq!(st, sys::kb_status_KB_STATUS_OK);
    }
    t.elapsed().as_nanos() as f64 / iters as f64
}

fn time_safe(ctx: &Context, x: &[f32], y: &mut [f32], iters: u64) -> f64 {
    let t = Instant::now();
    for _ in 0..iters {
        ctx.silu(black_box(x), y).unwrap();
    }
    t.elapsed().as_nanos() as f64 / iters as f64
}

fn time_tls(_ctx: &Context, x: &[f32], y: &mut [f32], iters: u64) -> f64 {
    let t = Instant::now();
    for _ in 0..iters {
        kernelbridge::silu(black_box(x), y).unwrap();
    }
    t.elapsed().as_nanos() as f64 / iters as f64
}

type Bench = fn(&Context, &[f32], &mut [f32], u64) -> f64;

fn main() {
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().map(String::as_str) == Some("--cuda") {
        args.next();
        let runs: usize = args.next().map_or(7, |s| s.parse().expect("RUNS"));
        let iters: u64 = args.next().map_or(20_000, |s| s.parse().expect("ITERS"));
        return cuda::run(runs.max(1), iters.max(1));
    }
    let rounds: usize = args.next().map_or(15, |s| s.parse().expect("ROUNDS"));
    let iters: u64 = args.next().map_or(200_000, |s| s.parse().expect("ITERS"));
    let ctx = Context::new(Backend::Cpu, 1).unwrap();
    let x: Vec<f32> = (0..N).map(|i| i as f32 * 0.25 - 2.0).collect();
    let mut y = vec![0.0f32; N];
    let benches: [(&str, Bench); 4] = [("c", time_c), ("sys", time_sys), ("safe", time_safe), ("safe-tls", time_tls)];

    // Warm-up (also creates the thread's default context).
    for (_, f) in &benches {
        f(&ctx, &x, &mut y, iters / 10 + 1);
    }
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); benches.len()];
    for round in 0..rounds {
        for k in 0..benches.len() {
            let i = (round + k) % benches.len();
            samples[i].push((benches[i].1)(&ctx, &x, &mut y, iters));
        }
    }
    println!("kernelbridge {} - silu n={N}, {rounds} rounds x {iters} calls, ns/call", kernelbridge::version_string());
    println!("{:<10} {:>8} {:>8} {:>12} {:>12}", "variant", "min", "median", "min/c", "median/c");
    let stats: Vec<(f64, f64)> = samples
        .iter_mut()
        .map(|s| {
            s.sort_by(|a, b| a.partial_cmp(b).unwrap());
            (s[0], s[s.len() / 2])
        })
        .collect();
    let (c_min, c_med) = stats[0];
    for ((name, _), (min, med)) in benches.iter().zip(&stats) {
        println!("{:<10} {:>8.2} {:>8.2} {:>12.3} {:>12.3}", name, min, med, min / c_min, med / c_med);
    }
}
