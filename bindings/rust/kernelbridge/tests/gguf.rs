//! Gguf (the generated kb_gguf wrapper) on a small GGUF file written here
//! byte by byte: keys, the vocabulary, tensor shapes (row-major) and bytes,
//! from memory and from a path, and errors naming the key.

use kernelbridge::{Backend, Context, Gguf, GgufType, Status};

fn string(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

const TOKENS: [&str; 3] = ["<unk>", "<s>", "\u{2581}hi"];

fn tiny_file() -> Vec<u8> {
    let mut f = b"GGUF".to_vec();
    f.extend_from_slice(&3u32.to_le_bytes());
    f.extend_from_slice(&1u64.to_le_bytes()); // tensors
    f.extend_from_slice(&3u64.to_le_bytes()); // keys
    string(&mut f, "general.architecture");
    f.extend_from_slice(&8u32.to_le_bytes());
    string(&mut f, "llama");
    string(&mut f, "llama.block_count");
    f.extend_from_slice(&4u32.to_le_bytes());
    f.extend_from_slice(&2u32.to_le_bytes());
    string(&mut f, "tokenizer.ggml.tokens");
    f.extend_from_slice(&9u32.to_le_bytes());
    f.extend_from_slice(&8u32.to_le_bytes());
    f.extend_from_slice(&(TOKENS.len() as u64).to_le_bytes());
    for t in TOKENS {
        string(&mut f, t);
    }
    string(&mut f, "token_embd.weight"); // F32, ne = [2, 3]: shape [3, 2]
    f.extend_from_slice(&2u32.to_le_bytes());
    f.extend_from_slice(&2u64.to_le_bytes());
    f.extend_from_slice(&3u64.to_le_bytes());
    f.extend_from_slice(&0u32.to_le_bytes());
    f.extend_from_slice(&0u64.to_le_bytes());
    while f.len() % 32 != 0 {
        f.push(0);
    }
    for i in 0..6 {
        f.extend_from_slice(&(i as f32 / 2.0).to_le_bytes());
    }
    f
}

fn check(ctx: &Context, g: &Gguf) {
    assert_eq!(g.version(ctx).unwrap(), 3);
    assert_eq!(g.key_count(ctx).unwrap(), 3);
    assert_eq!(g.key_name(ctx, 0).unwrap(), "general.architecture");
    let arch = g.find_key(ctx, "general.architecture").unwrap();
    assert_eq!(arch, 0);
    assert_eq!(g.find_key(ctx, "no.such.key").unwrap(), -1);
    let n = g.string_bytes(ctx, arch).unwrap() as usize;
    let mut s = vec![0u8; n];
    g.get_string(ctx, arch, &mut s).unwrap();
    assert_eq!(s, b"llama");
    let blocks = g.find_key(ctx, "llama.block_count").unwrap();
    assert_eq!(g.get_int64(ctx, blocks).unwrap(), 2);
    let toks = g.find_key(ctx, "tokenizer.ggml.tokens").unwrap();
    assert_eq!(g.key_type(ctx, toks).unwrap(), i64::from(GgufType::Array.code()));
    assert_eq!(g.array_type(ctx, toks).unwrap(), i64::from(GgufType::String.code()));
    let count = g.array_length(ctx, toks).unwrap() as usize;
    let mut blob = vec![0u8; g.string_array_bytes(ctx, toks).unwrap() as usize];
    let mut offsets = vec![0i32; count + 1];
    g.get_string_array_data(ctx, toks, &mut blob).unwrap();
    g.get_string_array_offsets(ctx, toks, &mut offsets).unwrap();
    for (i, t) in TOKENS.iter().enumerate() {
        assert_eq!(&blob[offsets[i] as usize..offsets[i + 1] as usize], t.as_bytes());
    }
    let t = g.find_tensor(ctx, "token_embd.weight").unwrap();
    assert_eq!(g.tensor_type(ctx, t).unwrap(), 0);
    assert_eq!(g.tensor_n_dims(ctx, t).unwrap(), 2);
    assert_eq!((g.tensor_dim(ctx, t, 0).unwrap(), g.tensor_dim(ctx, t, 1).unwrap()), (3, 2));
    let mut data = vec![0f32; 6];
    g.tensor_read(ctx, t, &mut data).unwrap();
    assert_eq!(data, [0.0, 0.5, 1.0, 1.5, 2.0, 2.5]);
    let err = g.get_int64(ctx, arch).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert!(err.message().contains("key 'general.architecture' is a STRING, not an integer"), "{err}");
    let err = g.find_key(ctx, "a\0b").unwrap_err();
    assert!(err.message().contains("holds a NUL byte"), "{err}");
}

#[test]
fn gguf_from_memory_and_path() {
    let ctx = Context::new(Backend::Cpu, 1).unwrap();
    let file = tiny_file();
    let g = Gguf::open_memory(&ctx, &file).unwrap();
    check(&ctx, &g);
    let path = std::env::temp_dir().join(format!("kernelbridge-gguf-{}.gguf", std::process::id()));
    std::fs::write(&path, &file).unwrap();
    let g = Gguf::open(&ctx, path.to_str().unwrap()).unwrap();
    check(&ctx, &g);
    drop(g);
    std::fs::remove_file(&path).unwrap();
    let err = Gguf::open_memory(&ctx, &file[..file.len() - 4]).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert!(err.message().contains("lies past the end of the file"), "{err}");
}
