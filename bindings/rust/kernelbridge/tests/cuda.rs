//! The CUDA path of the binding.
//!
//! Without a usable CUDA device (no backend library, no NVIDIA driver or no
//! GPU, as on this project's build machine) every CUDA entry point must fail
//! with `BackendUnavailable` and a message naming the missing part; the GPU
//! part then prints `SKIPPED: <reason>` and returns.  With a device
//! (`$KB_CUDA_LIBRARY` naming libkernelbridge_cuda.so, as
//! //bindings/rust:cuda_test does), device queries, CUDA contexts, device
//! buffers and kernels on them are checked against the CPU.

use kernelbridge::{cuda, half, Backend, Buffer, Context, Error, Status};

fn inputs(n: usize) -> Vec<f32> {
    (0..n).map(|i| ((i * 7919) % 101) as f32 * 0.08 - 4.0).collect()
}

fn expect_unavailable(err: &Error, func: &str) {
    assert_eq!(err.status(), Status::BackendUnavailable, "{err}");
    let prefix = format!("{func}: ");
    assert!(err.message().starts_with(&prefix), "{err}");
    let reason = &err.message()[prefix.len()..];
    assert!(reason.to_lowercase().contains("cuda"), "the message says what is missing: {err}");
}

#[test]
fn cuda() {
    match cuda::device_count() {
        Ok(n) if n > 0 => gpu(n),
        Ok(_) => println!("SKIPPED: kb_cuda_device_count found no CUDA device"),
        Err(err) => {
            without_cuda(&err);
            println!("SKIPPED: no usable CUDA device ({})", err.message());
        }
    }
}

/// Every CUDA entry point fails cleanly, with the reason.
fn without_cuda(err: &Error) {
    expect_unavailable(err, "kb_cuda_device_count");
    // The message is the calling thread's last_error, until its next call
    // without a context ...
    assert_eq!(kernelbridge::last_error(), err.message());
    std::thread::spawn(|| {
        assert_eq!(kernelbridge::last_error(), "", "per thread");
        Context::new(Backend::Cpu, 1).unwrap();
    })
    .join()
    .unwrap();
    assert_eq!(kernelbridge::last_error(), err.message(), "another thread's calls do not change it");
    // ... which clears it when it succeeds.
    Context::new(Backend::Cpu, 1).unwrap();
    assert_eq!(kernelbridge::last_error(), "");

    assert!(!cuda::is_available());
    expect_unavailable(&cuda::device_name(0).unwrap_err(), "kb_cuda_device_name");
    expect_unavailable(&cuda::compute_capability(0).unwrap_err(), "kb_cuda_device_compute_capability");
    expect_unavailable(&cuda::total_memory(0).unwrap_err(), "kb_cuda_device_total_memory");
    expect_unavailable(&cuda::free_memory(0).unwrap_err(), "kb_cuda_device_free_memory");
    expect_unavailable(&kernelbridge::cuda_device_count().unwrap_err(), "kb_cuda_device_count");
    expect_unavailable(&Context::cuda(0).unwrap_err(), "kb_context_create_cuda");
    let err = Context::new(Backend::Cuda, 1).unwrap_err();
    expect_unavailable(&err, "kb_context_create");
    assert_eq!(err.to_string(), format!("{} (BACKEND_UNAVAILABLE)", err.message()));

    // Auto falls back to the CPU; CPU contexts and host buffers have no device.
    let ctx = Context::new(Backend::Auto, 1).unwrap();
    assert_eq!(ctx.backend().unwrap(), Backend::Cpu);
    assert_eq!(ctx.device(), -1);
    ctx.synchronize().unwrap();
    let buf = Buffer::new(&ctx, 8).unwrap();
    assert_eq!(buf.device(), -1);
}

/// Units in the last place between two finite floats of the same sign.
fn ulps(a: f32, b: f32) -> u32 {
    if a == b {
        return 0;
    }
    assert_eq!(a.is_sign_negative(), b.is_sign_negative(), "{a} vs {b}");
    a.to_bits().abs_diff(b.to_bits())
}

fn within_ulps(what: &str, gpu: &[f32], cpu: &[f32], max: u32) {
    assert_eq!(gpu.len(), cpu.len());
    for (i, (&g, &c)) in gpu.iter().zip(cpu).enumerate() {
        assert!(ulps(g, c) <= max || (g - c).abs() <= 1e-37, "{what}[{i}]: gpu {g:e}, cpu {c:e}");
    }
}

fn gpu(count: usize) {
    let cpu = Context::new(Backend::Cpu, 1).unwrap();
    for d in 0..count {
        let name = cuda::device_name(d).unwrap();
        let (major, minor) = cuda::compute_capability(d).unwrap();
        let total = cuda::total_memory(d).unwrap();
        let free = cuda::free_memory(d).unwrap();
        assert!(!name.is_empty() && major >= 1 && minor < 10 && total > 0 && free <= total);
        println!("cuda: device {d}: {name}, sm_{major}{minor}, {free} of {total} bytes free");
    }
    let err = cuda::device_name(count).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument, "{err}");
    let err = Context::cuda(count as i64).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument, "{err}");

    let ctx = Context::cuda(0).unwrap();
    assert_eq!(ctx.backend().unwrap(), Backend::Cuda);
    assert_eq!(ctx.device(), 0);
    ctx.synchronize().unwrap();
    assert_eq!(Context::new(Backend::Auto, 1).unwrap().backend().unwrap(), Backend::Cuda);
    assert_eq!(Context::new(Backend::Cuda, 1).unwrap().device(), 0);

    // Device buffers: transfers, fill, copy.
    let x = inputs(1000);
    let xb = Buffer::from_slice(&ctx, &x).unwrap();
    assert_eq!((xb.device(), xb.is_host(), xb.len()), (0, false, 4000));
    assert_eq!(xb.to_vec::<f32>(&ctx).unwrap(), x);
    let mut zb = Buffer::zeroed(&ctx, 4000).unwrap();
    assert!(zb.to_vec::<f32>(&ctx).unwrap().iter().all(|&v| v == 0.0));
    zb.copy_from(&ctx, 0, &xb, 4, 3996).unwrap();
    assert_eq!(zb.to_vec::<f32>(&ctx).unwrap()[..999], x[1..]);
    zb.fill(&ctx, 0, 4000, 0).unwrap();
    let err = xb.to_vec::<f32>(&cpu).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument, "a device buffer needs a CUDA context: {err}");
    let err = zb.upload(&ctx, 3998, &[0u8; 4]).unwrap_err();
    assert!(err.message().starts_with("kb_buffer_upload: offset 3998"), "{err}");

    // Kernels on device buffers against the CPU kernels (docs/cuda.md tolerances).
    let b = inputs(1001)[1..].to_vec();
    let bb = Buffer::from_slice(&ctx, &b).unwrap();
    let mut yb = Buffer::new(&ctx, 4000).unwrap();
    let mut want = vec![0.0f32; 1000];

    cpu.add(&x, &b, &mut want).unwrap();
    ctx.add_buf(&xb.view().unwrap(), &bb.view().unwrap(), &mut yb.view_mut().unwrap()).unwrap();
    within_ulps("add", &yb.to_vec(&ctx).unwrap(), &want, 0);

    cpu.silu(&x, &mut want).unwrap();
    ctx.silu_buf(&xb.view().unwrap(), &mut yb.view_mut().unwrap()).unwrap();
    within_ulps("silu", &yb.to_vec(&ctx).unwrap(), &want, 3);
    let mut ib = Buffer::from_slice(&ctx, &x).unwrap();
    ctx.silu_inplace_buf(&mut ib.view_mut().unwrap()).unwrap();
    within_ulps("silu in place", &ib.to_vec(&ctx).unwrap(), &want, 3);

    cpu.softmax(10, 100, &x, &mut want).unwrap();
    ctx.softmax_buf(10, 100, &xb.view().unwrap(), &mut yb.view_mut().unwrap()).unwrap();
    within_ulps("softmax", &yb.to_vec(&ctx).unwrap(), &want, 2);

    let mut ids = Buffer::new(&ctx, 40).unwrap();
    let mut cpu_ids = [0i32; 10];
    cpu.argmax(100, &x, &mut cpu_ids).unwrap();
    ctx.argmax_buf(100, &xb.view().unwrap(), &mut ids.view_mut().unwrap()).unwrap();
    assert_eq!(ids.to_vec::<i32>(&ctx).unwrap(), cpu_ids);

    // bf16 add: one rounding of the same f32 sum on both (docs/cuda.md allows
    // 1.6e-2 relative; one bf16 ulp is at most 2^-7 relative).
    let (xh, bh) = (half::to_bf16(&x), half::to_bf16(&b));
    let mut want_h = vec![0u16; 1000];
    cpu.add_bf16(&xh, &bh, &mut want_h).unwrap();
    let (xhb, bhb) = (Buffer::from_slice(&ctx, &xh).unwrap(), Buffer::from_slice(&ctx, &bh).unwrap());
    let mut yhb = Buffer::new(&ctx, 2000).unwrap();
    ctx.add_bf16_buf(&xhb.view().unwrap(), &bhb.view().unwrap(), &mut yhb.view_mut().unwrap()).unwrap();
    for (i, (g, c)) in yhb.to_vec::<u16>(&ctx).unwrap().into_iter().zip(want_h).enumerate() {
        assert!(g == c || (g >> 15 == c >> 15 && g.abs_diff(c) <= 1), "add_bf16[{i}]: gpu {g:#06x}, cpu {c:#06x}");
    }

    // Memory of the wrong kind is an error naming the argument, nothing written.
    let mut host_out = vec![7.0f32; 1000];
    let err = ctx.silu(&x, &mut host_out).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument, "host slices on a CUDA context: {err}");
    assert!(err.message().starts_with("kb_silu: "), "{err}");
    assert!(host_out.iter().all(|&v| v == 7.0));
    let hb = Buffer::from_slice(&cpu, &x).unwrap();
    let err = ctx.silu_buf(&hb.view().unwrap(), &mut yb.view_mut().unwrap()).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument, "a host buffer on a CUDA context: {err}");
    let mut hy = Buffer::new(&cpu, 4000).unwrap();
    let err = cpu.silu_buf(&xb.view().unwrap(), &mut hy.view_mut().unwrap()).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument, "a device buffer on a CPU context: {err}");

    // A device buffer outlives its context.
    drop(ctx);
    let again = Context::cuda(0).unwrap();
    assert_eq!(xb.to_vec::<f32>(&again).unwrap(), x);
    println!("cuda: {count} device(s): queries, contexts, buffers and kernels OK");
}
