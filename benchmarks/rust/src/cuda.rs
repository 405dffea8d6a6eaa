//! The GPU mode (`--cuda`): the 16-element silu on device buffers of a CUDA
//! context through the safe API (`Context::silu_buf` on buffer views).
//! benchmarks/cuda/overhead/run.sh compares it with a bare CUDA launch +
//! synchronize (bare_launch.cu), so it prints one machine-readable line,
//! `overhead SIDE MIN_NS MEDIAN_NS`, or `SKIPPED: reason` without a GPU.
use std::hint::black_box;
use std::time::Instant;

use kernelbridge::{cuda, Buffer, Context};

const SIDE: &str = "rust-Context::silu_buf";

pub fn run(runs: usize, iters: u64) {
    match cuda::device_count() {
        Ok(n) if n > 0 => {}
        Ok(_) => return println!("SKIPPED: {SIDE}: kb_cuda_device_count found no CUDA device"),
        Err(err) => return println!("SKIPPED: {SIDE}: no usable CUDA device ({})", err.message()),
    }
    let ctx = match Context::cuda(0) {
        Ok(ctx) => ctx,
        Err(err) => return println!("SKIPPED: {SIDE}: {err}"),
    };
    let x: Vec<f32> = (0..16).map(|i| i as f32 * 0.25 - 2.0).collect();
    let xb = Buffer::from_slice(&ctx, &x).expect("device buffer x");
    let mut yb = Buffer::new(&ctx, 4 * x.len()).expect("device buffer y");
    // Views made once, as a caller reusing its buffers would keep them.
    let xv = xb.view::<f32>().expect("view of x");
    let mut yv = yb.view_mut::<f32>().expect("view of y");
    let mut time_once = |n: u64| {
        let t = Instant::now();
        for _ in 0..n {
            ctx.silu_buf(black_box(&xv), &mut yv).expect("silu on the GPU");
        }
        t.elapsed().as_nanos() as f64 / n as f64
    };
    time_once(iters / 4 + 1); // warm-up: backend loading, first launches
    let mut ns: Vec<f64> = (0..runs).map(|_| time_once(iters)).collect();
    ns.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!("overhead {SIDE} {:.1} {:.1}", ns[0], ns[ns.len() / 2]);
}
