// A program using kernelbridge as any other project would after
// `cargo add kernelbridge`: run by cargo_test.sh in a fresh `cargo new` crate.
use kernelbridge::{Backend, Context, Status};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let x = [-2.0f32, -0.5, 0.0, 0.5, 2.0, 4.0];
    let mut y = [0.0f32; 6];
    kernelbridge::silu(&x, &mut y)?;
    for (a, b) in x.iter().zip(&y) {
        let want = (f64::from(*a) / (1.0 + (-f64::from(*a)).exp())) as f32;
        if (want - b).abs() > 1e-6 {
            return Err(format!("silu({a}) = {b}, want {want}").into());
        }
    }

    let ctx = Context::new(Backend::Auto, 2)?;
    let mut probs = [0.0f32; 6];
    ctx.softmax(2, 3, &x, &mut probs)?;
    let sums: Vec<f32> = probs.chunks(3).map(|r| r.iter().sum()).collect();
    if sums.iter().any(|s| (s - 1.0).abs() > 1e-6) {
        return Err(format!("softmax rows sum to {sums:?}").into());
    }

    match ctx.softmax(2, 4, &x, &mut probs) {
        Err(e) if e.status() == Status::ShapeMismatch => println!("expected error: {e}"),
        other => return Err(format!("expected a shape mismatch, got {other:?}").into()),
    }
    // Buffers (host memory on a CPU context) and the _buf kernel forms.
    let cpu = Context::new(Backend::Cpu, 1)?;
    let xb = kernelbridge::Buffer::from_slice(&cpu, &x)?;
    let mut yb = kernelbridge::Buffer::new(&cpu, xb.len())?;
    cpu.silu_buf(&xb.view::<f32>()?, &mut yb.view_mut::<f32>()?)?;
    if yb.to_vec::<f32>(&cpu)? != y {
        return Err("silu on buffers differs from silu on slices".into());
    }

    // bfloat16 bits.
    let h = kernelbridge::half::to_bf16(&x);
    let mut hy = vec![0u16; h.len()];
    kernelbridge::silu_bf16(&h, &mut hy)?;
    println!("silu_bf16(2) = {}", kernelbridge::half::bf16_to_f32(hy[4]));

    // CUDA is loaded at run time: built without CUDA, it reports why it is unavailable.
    match kernelbridge::cuda::device_count() {
        Ok(n) => println!("{n} CUDA device(s)"),
        Err(e) if e.status() == Status::BackendUnavailable => println!("no CUDA: {}", e.message()),
        Err(e) => return Err(e.into()),
    }
    println!("consumer OK: kernelbridge {}", kernelbridge::version_string());
    Ok(())
}
