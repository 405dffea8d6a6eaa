//! The CUDA code paths of the safe API without a GPU, against the core's fake
//! CUDA backend (core/testing/fake_cuda.c: host memory posing as device 0,
//! kernels that only record their calls), loaded as a backend library through
//! `$KB_CUDA_LIBRARY` by //bindings/rust:cuda_fake_test.  Device queries, CUDA
//! contexts, device buffers, memory-kind errors and DEVICE_LOST go through the
//! same C entry points as on a GPU.  Without the fake library (plain
//! `cargo test`) there is nothing to do.

use std::ffi::{c_char, c_int, c_void, CString};

use kernelbridge::{cuda, Backend, Buffer, Context, Status};

extern "C" {
    fn dlopen(filename: *const c_char, flag: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
}

const RTLD_NOW: c_int = 2;

/// The test hooks of tests/fake_cuda_shim.c.
struct Fake {
    fail_next_device_lost: extern "C" fn(),
    kernel_calls: extern "C" fn() -> c_int,
}

fn symbol(handle: *mut c_void, name: &str) -> *mut c_void {
    let name = CString::new(name).unwrap();
    // Safety: a live handle from dlopen and a NUL-terminated name.
    unsafe { dlsym(handle, name.as_ptr()) }
}

/// The fake backend's hooks, when $KB_CUDA_LIBRARY is the fake.  dlopen of
/// the same path gives the same loaded object as the core's loader (one copy
/// of its state); it is never closed.
fn fake() -> Option<Fake> {
    let path = CString::new(std::env::var("KB_CUDA_LIBRARY").ok()?).ok()?;
    // Safety: a NUL-terminated path; loading the library runs no code of it
    // besides static initialisers (none in the fake).
    let handle = unsafe { dlopen(path.as_ptr(), RTLD_NOW) };
    if handle.is_null() {
        return None;
    }
    let fail = symbol(handle, "kb_rust_test_fail_next_device_lost");
    let calls = symbol(handle, "kb_rust_test_kernel_calls");
    if fail.is_null() || calls.is_null() {
        return None;
    }
    // Safety: the shim defines these symbols with exactly these C signatures,
    // and the library stays loaded for the life of the process.
    unsafe {
        Some(Fake {
            fail_next_device_lost: std::mem::transmute::<*mut c_void, extern "C" fn()>(fail),
            kernel_calls: std::mem::transmute::<*mut c_void, extern "C" fn() -> c_int>(calls),
        })
    }
}

#[test]
fn cuda_paths_with_the_fake_backend() {
    let Some(fake) = fake() else {
        println!("cuda_fake: KB_CUDA_LIBRARY is not the fake backend of //bindings/rust:cuda_fake_test; nothing to do");
        return;
    };
    // One test function: the fake's failure injection is process-wide.

    // Device queries.
    assert_eq!(cuda::device_count().unwrap(), 1);
    assert!(cuda::is_available());
    assert_eq!(cuda::device_name(0).unwrap(), "Fake GPU");
    assert_eq!(cuda::compute_capability(0).unwrap(), (9, 0));
    let total = cuda::total_memory(0).unwrap();
    assert_eq!(total, 1 << 30);
    let free_at_start = cuda::free_memory(0).unwrap();
    let err = cuda::device_name(1).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert!(err.message().starts_with("kb_cuda_device_name: "), "{err}");
    assert_eq!(kernelbridge::last_error(), err.message());

    // Contexts.
    let err = Context::cuda(1).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert!(err.message().starts_with("kb_context_create_cuda: "), "{err}");
    let ctx = Context::cuda(0).unwrap();
    assert_eq!((ctx.backend().unwrap(), ctx.device()), (Backend::Cuda, 0));
    ctx.synchronize().unwrap();
    assert_eq!(Context::new(Backend::Auto, 1).unwrap().backend().unwrap(), Backend::Cuda);
    assert_eq!(Context::new(Backend::Cuda, 1).unwrap().device(), 0);
    let cpu = Context::new(Backend::Cpu, 1).unwrap();

    // Device buffers.
    let x: Vec<f32> = (0..16).map(|i| i as f32 - 8.0).collect();
    let xb = Buffer::from_slice(&ctx, &x).unwrap();
    assert_eq!((xb.device(), xb.is_host(), xb.len()), (0, false, 64));
    assert!(!xb.data().is_null());
    assert_eq!(xb.to_vec::<f32>(&ctx).unwrap(), x);
    assert!(cuda::free_memory(0).unwrap() <= free_at_start - 64);
    let mut yb = Buffer::zeroed(&ctx, 64).unwrap();
    assert_eq!(yb.to_vec::<f32>(&ctx).unwrap(), [0.0; 16]);
    yb.copy_from(&ctx, 0, &xb, 32, 32).unwrap();
    yb.fill(&ctx, 60, 4, 0).unwrap();
    assert_eq!(yb.to_vec::<f32>(&ctx).unwrap()[..8], x[8..]);
    {
        let (head, mut tail) = yb.view_mut::<f32>().unwrap().split_at_mut(8).unwrap();
        tail.copy_from(&ctx, &head.as_view()).unwrap();
        assert_eq!(tail.to_vec(&ctx).unwrap(), head.to_vec(&ctx).unwrap());
        assert_eq!(head.device(), 0);
    }

    // Memory of the wrong kind: an error naming the argument, nothing written.
    let mut host_y = vec![7.0f32; 16];
    let err = ctx.silu(&x, &mut host_y).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert!(err.message().starts_with("kb_silu: x is host memory"), "{err}");
    assert_eq!(host_y, [7.0; 16]);
    let hb = Buffer::from_slice(&cpu, &x).unwrap();
    let err = ctx.silu_buf(&hb.view().unwrap(), &mut yb.view_mut().unwrap()).unwrap_err();
    assert!(err.message().starts_with("kb_silu: x is host memory"), "{err}");
    let mut hy = Buffer::new(&cpu, 64).unwrap();
    let err = cpu.silu_buf(&xb.view().unwrap(), &mut hy.view_mut().unwrap()).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert!(err.message().starts_with("kb_silu: x is memory of CUDA device 0"), "{err}");
    let err = xb.to_vec::<f32>(&cpu).unwrap_err();
    assert!(err.message().starts_with("kb_buffer_download: buf is memory of CUDA device 0"), "{err}");
    let err = hy.copy_from(&cpu, 0, &xb, 0, 4).unwrap_err();
    assert!(err.message().contains("same kind"), "{err}");

    // Kernels on device views reach the backend; length checks come first.
    let before = (fake.kernel_calls)();
    ctx.silu_buf(&xb.view().unwrap(), &mut yb.view_mut().unwrap()).unwrap();
    ctx.add_bf16_buf(&xb.slice::<u16>(..8).unwrap(), &xb.slice::<u16>(8..16).unwrap(), &mut yb.slice_mut::<u16>(..8).unwrap())
        .unwrap();
    let mut zb = Buffer::from_slice(&ctx, &x).unwrap();
    ctx.softmax_inplace_buf(4, 4, &mut zb.view_mut().unwrap()).unwrap();
    assert_eq!((fake.kernel_calls)(), before + 3);
    let err = ctx.silu_buf(&xb.view().unwrap(), &mut yb.slice_mut(..15).unwrap()).unwrap_err();
    assert_eq!(err.status(), Status::ShapeMismatch);
    assert_eq!((fake.kernel_calls)(), before + 3, "rejected before C");

    // DEVICE_LOST: returned, then latched by the context; buffers survive it.
    (fake.fail_next_device_lost)();
    let err = ctx.silu_buf(&xb.view().unwrap(), &mut yb.view_mut().unwrap()).unwrap_err();
    assert_eq!(err.status(), Status::DeviceLost);
    assert_eq!(err.code(), 8);
    assert!(err.message().starts_with("kb_silu: ") && err.message().contains("device lost"), "{err}");
    assert!(err.to_string().ends_with("(DEVICE_LOST)"));
    let err = ctx.synchronize().unwrap_err();
    assert_eq!(err.status(), Status::DeviceLost, "latched: {err}");
    assert_eq!(yb.upload(&ctx, 0, &[1u8]).unwrap_err().status(), Status::DeviceLost);
    assert_eq!(ctx.silu_buf(&xb.view().unwrap(), &mut yb.view_mut().unwrap()).unwrap_err().status(), Status::DeviceLost);
    drop(ctx);
    let fresh = Context::cuda(0).unwrap();
    assert_eq!(xb.to_vec::<f32>(&fresh).unwrap(), x, "a buffer outlives its context");

    // Drop frees device memory.
    drop((xb, yb, zb));
    assert_eq!(cuda::free_memory(0).unwrap(), free_at_start);
    println!("cuda_fake: device queries, contexts, device buffers, memory kinds and DEVICE_LOST OK");
}
