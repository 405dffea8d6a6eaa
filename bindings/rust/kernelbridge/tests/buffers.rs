//! Buffers on a CPU context: transfers, fill, copy, range errors, views, and
//! kernels on buffer views giving exactly the bits of the slice forms.

use kernelbridge::{half, Backend, Buffer, Context, DeviceSlice, Error, Status};

fn cpu() -> Context {
    Context::new(Backend::Cpu, 2).unwrap()
}

fn inputs(n: usize) -> Vec<f32> {
    (0..n).map(|i| ((i * 7919) % 23) as f32 * 0.37 - 4.0).collect()
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn expect_invalid(err: &Error, func: &str, needle: &str) {
    assert_eq!(err.status(), Status::InvalidArgument, "{err}");
    assert!(err.message().starts_with(&format!("{func}: ")), "{err}");
    assert!(err.message().contains(needle), "{err} should mention {needle:?}");
}

#[test]
fn host_buffer_basics() {
    let ctx = cpu();
    let buf = Buffer::new(&ctx, 100).unwrap();
    assert_eq!(buf.size(), 100);
    assert_eq!(buf.len(), 100);
    assert!(!buf.is_empty());
    assert_eq!(buf.device(), -1);
    assert!(buf.is_host());
    assert!(!buf.data().is_null());
    assert_eq!(buf.data() as usize % 64, 0, "host buffers are 64-byte aligned");
    assert!(format!("{buf:?}").starts_with("Buffer"));

    let empty = Buffer::new(&ctx, 0).unwrap();
    assert!(empty.is_empty());
    assert!(empty.data().is_null());
    assert_eq!(empty.to_vec::<f32>(&ctx).unwrap(), Vec::<f32>::new());
}

#[test]
fn round_trips_of_every_element_type() {
    let ctx = cpu();
    let f = inputs(9);
    let buf = Buffer::from_slice(&ctx, &f).unwrap();
    assert_eq!(buf.len(), 36);
    assert_eq!(bits(&buf.to_vec::<f32>(&ctx).unwrap()), bits(&f));

    let i = [i32::MIN, -1, 0, 7, i32::MAX];
    assert_eq!(Buffer::from_slice(&ctx, &i).unwrap().to_vec::<i32>(&ctx).unwrap(), i);
    let h = [0u16, 1, 0x7c00, 0xffff];
    assert_eq!(Buffer::from_slice(&ctx, &h).unwrap().to_vec::<u16>(&ctx).unwrap(), h);
    let b = [0u8, 1, 2, 255];
    assert_eq!(Buffer::from_slice(&ctx, &b).unwrap().to_vec::<u8>(&ctx).unwrap(), b);

    // Byte offsets: upload into the middle, download a part.
    let mut buf = Buffer::zeroed(&ctx, 16).unwrap();
    buf.upload(&ctx, 4, &[1.5f32, 2.5]).unwrap();
    assert_eq!(buf.to_vec::<f32>(&ctx).unwrap(), [0.0, 1.5, 2.5, 0.0]);
    let mut two = [0.0f32; 2];
    buf.download(&ctx, 8, &mut two).unwrap();
    assert_eq!(two, [2.5, 0.0]);
    // Bytes of an f32 seen as u8: native endianness, as memcpy.
    let mut raw = [0u8; 4];
    buf.download(&ctx, 4, &mut raw).unwrap();
    assert_eq!(raw, 1.5f32.to_ne_bytes());
}

#[test]
fn fill_and_copy() {
    let ctx = cpu();
    let mut a = Buffer::zeroed(&ctx, 8).unwrap();
    a.fill(&ctx, 2, 4, 0xab).unwrap();
    assert_eq!(a.to_vec::<u8>(&ctx).unwrap(), [0, 0, 0xab, 0xab, 0xab, 0xab, 0, 0]);

    let src = Buffer::from_slice(&ctx, &[1u8, 2, 3, 4, 5, 6, 7, 8]).unwrap();
    a.copy_from(&ctx, 0, &src, 4, 4).unwrap();
    assert_eq!(a.to_vec::<u8>(&ctx).unwrap(), [5, 6, 7, 8, 0xab, 0xab, 0, 0]);

    // Views: fill and copy element ranges.
    let mut f = Buffer::from_slice(&ctx, &[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    let g = Buffer::from_slice(&ctx, &[9.0f32, 8.0]).unwrap();
    {
        let mut tail = f.slice_mut::<f32>(2..).unwrap();
        tail.copy_from(&ctx, &g.view().unwrap()).unwrap();
    }
    f.slice_mut::<f32>(..1).unwrap().fill_bytes(&ctx, 0).unwrap();
    assert_eq!(f.to_vec::<f32>(&ctx).unwrap(), [0.0, 2.0, 9.0, 8.0]);

    // A copy between the disjoint halves of one buffer.
    let (head, mut tail) = f.view_mut::<f32>().unwrap().split_at_mut(2).unwrap();
    tail.copy_from(&ctx, &head.as_view()).unwrap();
    assert_eq!(f.to_vec::<f32>(&ctx).unwrap(), [0.0, 2.0, 0.0, 2.0]);
}

#[test]
fn range_errors_name_the_argument_and_change_nothing() {
    let ctx = cpu();
    let original = [1.0f32, 2.0, 3.0, 4.0];
    let mut buf = Buffer::from_slice(&ctx, &original).unwrap();

    let err = buf.upload(&ctx, 8, &[0.0f32; 3]).unwrap_err();
    expect_invalid(&err, "kb_buffer_upload", "offset 8 + bytes 12 exceeds the size of buf (16 bytes)");
    assert_eq!(ctx.last_error(), err.message());
    let err = buf.fill(&ctx, 17, 0, 0).unwrap_err();
    expect_invalid(&err, "kb_buffer_fill", "offset 17");
    let err = buf.fill(&ctx, 0, 4, 256).unwrap_err();
    expect_invalid(&err, "kb_buffer_fill", "value must be in [0, 255]");
    let other = Buffer::from_slice(&ctx, &[0u8; 4]).unwrap();
    let err = buf.copy_from(&ctx, 14, &other, 0, 4).unwrap_err();
    expect_invalid(&err, "kb_buffer_copy", "dst_offset 14");
    let err = buf.copy_from(&ctx, 0, &other, 1, 4).unwrap_err();
    expect_invalid(&err, "kb_buffer_copy", "src_offset 1");
    assert_eq!(buf.to_vec::<f32>(&ctx).unwrap(), original, "nothing was written");

    let mut out = [7.0f32; 2];
    let err = buf.download(&ctx, 12, &mut out).unwrap_err();
    expect_invalid(&err, "kb_buffer_download", "offset 12 + bytes 8");
    assert_eq!(out, [7.0; 2], "nothing was written");
    let err = buf.upload(&ctx, usize::MAX, &[0u8]).unwrap_err();
    expect_invalid(&err, "kb_buffer_upload", "offset must be <=");

    // Views check in Rust, before C.
    let err = buf.slice::<f32>(3..5).unwrap_err();
    expect_invalid(&err, "Buffer::slice", "range 3..5 is not within the 4 elements");
    let err = buf.view::<f32>().unwrap().split_at(5).unwrap_err();
    expect_invalid(&err, "DeviceSlice::slice", "range");
    let odd = Buffer::new(&ctx, 6).unwrap();
    expect_invalid(&odd.view::<f32>().unwrap_err(), "Buffer::view", "not a whole number of float elements");
    assert_eq!(odd.slice::<f32>(..1).unwrap().len(), 1);
    assert!(odd.slice::<f32>(..2).is_err());

    let mut view = buf.slice_mut::<f32>(1..3).unwrap();
    let err = view.upload(&ctx, &[0.0; 3]).unwrap_err();
    assert_eq!(err.status(), Status::ShapeMismatch);
    assert_eq!(err.message(), "kb_buffer_upload: src has 3 elements, expected 2 (the view's length)");
    let mut three = [5.0f32; 3];
    let err = view.download(&ctx, &mut three).unwrap_err();
    assert!(err.message().starts_with("kb_buffer_download: dst has 3 elements"), "{err}");
    assert_eq!(three, [5.0; 3]);
    view.upload(&ctx, &[-1.0, -2.0]).unwrap();
    assert_eq!(view.to_vec(&ctx).unwrap(), [-1.0, -2.0]);
    assert_eq!(buf.to_vec::<f32>(&ctx).unwrap(), [1.0, -1.0, -2.0, 4.0]);
}

#[test]
fn views_are_element_ranges() {
    let ctx = cpu();
    let mut buf = Buffer::from_slice(&ctx, &[0i32, 1, 2, 3, 4, 5]).unwrap();
    let v = buf.slice::<i32>(1..=4).unwrap();
    assert_eq!((v.len(), v.byte_offset(), v.device()), (4, 4, -1));
    assert_eq!(v.to_vec(&ctx).unwrap(), [1, 2, 3, 4]);
    let (a, b) = v.split_at(1).unwrap();
    assert_eq!(b.slice(1..).unwrap().to_vec(&ctx).unwrap(), [3, 4]);
    assert_eq!(a.as_ptr() as usize + 4, b.as_ptr() as usize);
    assert_eq!(a.as_ptr() as usize, buf.data() as usize + 4);
    let copy: DeviceSlice<'_, i32> = a; // Copy
    assert_eq!(copy.to_vec(&ctx).unwrap(), [1]);
    assert!(format!("{a:?}").contains("len: 1"));

    let mut m = buf.view_mut::<i32>().unwrap();
    let mut inner = m.slice_mut(2..4).unwrap();
    inner.upload(&ctx, &[20, 30]).unwrap();
    assert_eq!(inner.reborrow().len(), 2);
    assert_eq!(m.to_vec(&ctx).unwrap(), [0, 1, 20, 30, 4, 5]);
    // u16 views of the same bytes (bit patterns, native endianness).
    let b = 20i32.to_ne_bytes();
    let want = [u16::from_ne_bytes([b[0], b[1]]), u16::from_ne_bytes([b[2], b[3]])];
    assert_eq!(buf.slice::<u16>(4..6).unwrap().to_vec(&ctx).unwrap(), want);
}

#[test]
fn buffers_outlive_their_context_and_move_between_threads() {
    let buf = {
        let ctx = cpu();
        Buffer::from_slice(&ctx, &[1.0f32, 2.0]).unwrap()
    };
    let other = cpu();
    assert_eq!(buf.to_vec::<f32>(&other).unwrap(), [1.0, 2.0]);
    let back = std::thread::spawn(move || {
        let ctx = cpu();
        let mut buf = buf;
        buf.upload(&ctx, 0, &[3.0f32]).unwrap();
        buf
    })
    .join()
    .unwrap();
    assert_eq!(back.to_vec::<f32>(&other).unwrap(), [3.0, 2.0]);
}

/// A kernel on slices and on views of host buffers gives the same bits.
#[test]
fn kernels_on_buffers_equal_kernels_on_slices() {
    let ctx = cpu();
    let x = inputs(24);
    let w = inputs(6);

    // silu (derived n)
    let mut want = vec![0.0f32; 24];
    ctx.silu(&x, &mut want).unwrap();
    let xb = Buffer::from_slice(&ctx, &x).unwrap();
    let mut yb = Buffer::new(&ctx, 96).unwrap();
    ctx.silu_buf(&xb.view().unwrap(), &mut yb.view_mut().unwrap()).unwrap();
    assert_eq!(bits(&yb.to_vec(&ctx).unwrap()), bits(&want));

    // in place
    let mut zb = Buffer::from_slice(&ctx, &x).unwrap();
    ctx.silu_inplace_buf(&mut zb.view_mut().unwrap()).unwrap();
    assert_eq!(bits(&zb.to_vec(&ctx).unwrap()), bits(&want));

    // softmax on a sub-range of a larger buffer (explicit dims)
    let mut want = vec![0.0f32; 24];
    ctx.softmax(4, 6, &x, &mut want).unwrap();
    let mut big = Buffer::zeroed(&ctx, 4 * 60).unwrap();
    big.upload(&ctx, 4 * 8, &x).unwrap();
    let (_head, mut tail) = big.view_mut::<f32>().unwrap().split_at_mut(8).unwrap();
    let (input, mut output) = tail.reborrow().split_at_mut(24).unwrap();
    ctx.softmax_buf(4, 6, &input.as_view(), &mut output.slice_mut(..24).unwrap()).unwrap();
    assert_eq!(bits(&output.slice_mut(..24).unwrap().to_vec(&ctx).unwrap()), bits(&want));
    assert_eq!(tail.slice_mut(48..).unwrap().to_vec(&ctx).unwrap(), [0.0; 4], "nothing written past the view");

    // layernorm with and without affine weights (nullable views)
    for affine in [false, true] {
        let bias = inputs(7)[1..].to_vec();
        let (wt, bs) = if affine { (Some(&w[..]), Some(&bias[..])) } else { (None, None) };
        let mut want = vec![0.0f32; 24];
        ctx.layernorm(4, 6, &x, wt, bs, 1e-5, &mut want).unwrap();
        let wb = Buffer::from_slice(&ctx, &w).unwrap();
        let bb = Buffer::from_slice(&ctx, &bias).unwrap();
        let (wv, bv) = (wb.view::<f32>().unwrap(), bb.view::<f32>().unwrap());
        let (wo, bo) = if affine { (Some(&wv), Some(&bv)) } else { (None, None) };
        let mut out = Buffer::new(&ctx, 96).unwrap();
        ctx.layernorm_buf(4, 6, &xb.view().unwrap(), wo, bo, 1e-5, &mut out.view_mut().unwrap()).unwrap();
        assert_eq!(bits(&out.to_vec(&ctx).unwrap()), bits(&want), "affine {affine}");
    }

    // gemm with strides and a transpose; C is input and output
    let (m, n, k) = (3usize, 4usize, 5usize);
    let a = inputs(k * 4); // A^T stored [k, m] with lda 4
    let b = inputs(k * n + 3)[3..].to_vec();
    let c0 = inputs(m * 6);
    let mut want = c0.clone();
    ctx.gemm(true, false, m, n, k, 0.5, &a, 4, &b, n, 2.0, &mut want, 6).unwrap();
    let (ab, bb) = (Buffer::from_slice(&ctx, &a).unwrap(), Buffer::from_slice(&ctx, &b).unwrap());
    let mut cb = Buffer::from_slice(&ctx, &c0).unwrap();
    ctx.gemm_buf(true, false, m, n, k, 0.5, &ab.view().unwrap(), 4, &bb.view().unwrap(), n, 2.0, &mut cb.view_mut().unwrap(), 6)
        .unwrap();
    assert_eq!(bits(&cb.to_vec(&ctx).unwrap()), bits(&want));

    // i32 tensors: embedding and argmax
    let ids = [2i32, 0, 3];
    let table = inputs(4 * 6);
    let mut want = vec![0.0f32; 18];
    ctx.embedding(4, 6, &ids, &table, &mut want).unwrap();
    let idb = Buffer::from_slice(&ctx, &ids).unwrap();
    let tb = Buffer::from_slice(&ctx, &table).unwrap();
    let mut ob = Buffer::new(&ctx, 18 * 4).unwrap();
    ctx.embedding_buf(4, 6, &idb.view().unwrap(), &tb.view().unwrap(), &mut ob.view_mut().unwrap()).unwrap();
    assert_eq!(bits(&ob.to_vec(&ctx).unwrap()), bits(&want));
    let mut want = [0i32; 4];
    ctx.argmax(6, &x, &mut want).unwrap();
    let mut amax = Buffer::new(&ctx, 16).unwrap();
    ctx.argmax_buf(6, &xb.view().unwrap(), &mut amax.view_mut().unwrap()).unwrap();
    assert_eq!(amax.to_vec::<i32>(&ctx).unwrap(), want);

    // add: both in-place forms
    let (pa, pb) = (inputs(8), inputs(9)[1..].to_vec());
    let mut want = vec![0.0f32; 8];
    ctx.add(&pa, &pb, &mut want).unwrap();
    let mut ab = Buffer::from_slice(&ctx, &pa).unwrap();
    let mut bb = Buffer::from_slice(&ctx, &pb).unwrap();
    ctx.add_inplace_buf(&mut ab.view_mut().unwrap(), &bb.view().unwrap()).unwrap();
    assert_eq!(bits(&ab.to_vec(&ctx).unwrap()), bits(&want));
    let ab = Buffer::from_slice(&ctx, &pa).unwrap();
    ctx.add_inplace_b_buf(&ab.view().unwrap(), &mut bb.view_mut().unwrap()).unwrap();
    assert_eq!(bits(&bb.to_vec(&ctx).unwrap()), bits(&want));

    // bf16 on buffers
    let hx = half::to_bf16(&x);
    let mut want = vec![0u16; 24];
    ctx.gelu_bf16(&hx, &mut want).unwrap();
    let hb = Buffer::from_slice(&ctx, &hx).unwrap();
    let mut hy = Buffer::new(&ctx, 48).unwrap();
    ctx.gelu_bf16_buf(&hb.view().unwrap(), &mut hy.view_mut().unwrap()).unwrap();
    assert_eq!(hy.to_vec::<u16>(&ctx).unwrap(), want);
}

#[test]
fn kernel_errors_on_buffers() {
    let ctx = cpu();
    let xb = Buffer::from_slice(&ctx, &inputs(4)).unwrap();
    let mut yb = Buffer::from_slice(&ctx, &[9.0f32; 3]).unwrap();
    let err = ctx.silu_buf(&xb.view().unwrap(), &mut yb.view_mut().unwrap()).unwrap_err();
    assert_eq!(err.status(), Status::ShapeMismatch);
    assert_eq!(err.message(), "kb_silu: y has 3 elements, expected 4 for shape [n] = [4]");
    // The C library's checks, with its message.
    let mut ok = Buffer::new(&ctx, 16).unwrap();
    let err = ctx.scale_buf(f32::NAN, &xb.view().unwrap(), &mut ok.view_mut().unwrap()).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert!(err.message().starts_with("kb_scale: "), "{err}");
    assert_eq!(yb.to_vec::<f32>(&ctx).unwrap(), [9.0; 3], "nothing was written");
}
