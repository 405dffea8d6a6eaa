//! Text generation from a GGUF model (architecture llama, dense or with
//! experts) on kernelbridge's kernels: the Rust version of ../c/main.c, with
//! the same options, the same tokens and the same bytes on stdout.
//!
//! ```text
//! text_generation --model FILE (--prompt TEXT | --prompt-ids 1,2,3) [--max-tokens N]
//!                 [--temperature T] [--top-k K | --top-p P] [--seed S] [--threads N]
//!                 [--print-ids] [--print-prompt-ids] [--logits-out FILE]
//! ```
//!
//! stdout: the prompt's ids first with --print-prompt-ids; then the generated
//! text as raw bytes, streamed (or, with --print-ids, the generated ids);
//! then a newline.  stderr: prefill and decode tokens per second, or one
//! "error: ..." line (exit status 1; 2 for bad options, with the usage).

mod cnum;
mod error;
mod forward;
mod generate;
mod model;
mod options;
mod vocab;

use std::ffi::OsString;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::process::ExitCode;
use std::time::Instant;

use kernelbridge::{Backend, Context, Gguf};

use error::{fail, plain, zeroed, Failure, Result};
use model::Model;
use options::{parse_args, parse_ids, USAGE};

/// The prompt's logits, float32 little-endian [prompt tokens, vocab].
fn write_logits(path: &OsString, logits: &[f32]) -> Result<()> {
    let cannot = || Failure::Run(format!("cannot write {}", path.to_string_lossy()));
    let mut f = BufWriter::new(File::create(path).map_err(|_| cannot())?);
    for v in logits {
        f.write_all(&v.to_le_bytes()).map_err(|_| cannot())?;
    }
    f.flush().map_err(|_| cannot())
}

/// Comma-separated ids, as C prints them.
fn id_line(ids: &[i32]) -> String {
    ids.iter().map(i32::to_string).collect::<Vec<_>>().join(",")
}

fn run(args: Vec<OsString>) -> Result<()> {
    let o = parse_args(args)?;
    let ctx = Context::new(Backend::Cpu, o.threads as usize).map_err(plain)?;
    let Some(path) = o.model.to_str() else {
        fail!("{}: the file name is not UTF-8", o.model.to_string_lossy());
    };
    let g = Gguf::open(&ctx, path).map_err(plain)?;
    let tok = vocab::make_tokenizer(&ctx, &g)?;

    // The prompt's ids, BOS first as the vocabulary says.
    let mut ids: Vec<i32>;
    if let Some(text) = &o.prompt {
        let cap = 4 * text.len() + 8;
        ids = zeroed(cap, "the prompt")?;
        let count = tok.tokenize(text, true, false, &mut ids).map_err(plain)?;
        if count as usize > cap {
            fail!("the prompt has {count} tokens, more than {cap}");
        }
        ids.truncate(count as usize);
    } else {
        let text = o.prompt_ids.as_deref().unwrap_or_default();
        ids = Vec::new();
        parse_ids(text, text.len() + 1, &mut ids)?;
    }
    let n_prompt = ids.len();
    if n_prompt == 0 {
        fail!("the prompt has no tokens");
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if o.print_prompt_ids {
        generate::emit(&mut out, format!("{}\n", id_line(&ids)).as_bytes())?;
    }
    let mut m = Model::load(&ctx, &g, n_prompt)?;
    if n_prompt as i64 + o.max_tokens > m.context as i64 {
        fail!(
            "{n_prompt} prompt tokens + {} new ones exceed the model's context of {}",
            o.max_tokens,
            m.context
        );
    }
    let rows = if o.logits_out.is_some() { n_prompt } else { 1 };
    let mut logits: Vec<f32> = zeroed(m.vocab * rows, "the logits")?;

    let t0 = Instant::now();
    m.forward(&ctx, &ids, o.logits_out.is_some(), &mut logits)?;
    let t_prefill = t0.elapsed().as_secs_f64();
    if let Some(path) = &o.logits_out {
        write_logits(path, &logits)?;
    }
    let last_at = (rows - 1) * m.vocab;
    let gen = generate::generate(&ctx, &mut m, &tok, &o, &mut logits, last_at, &mut out)?;
    if o.print_ids {
        generate::emit(&mut out, id_line(&gen.ids).as_bytes())?;
    }
    generate::emit(&mut out, b"\n")?;
    let produced = gen.ids.len();
    let decoded = produced.saturating_sub(1);
    let decode_rate = if produced > 1 && gen.decode_seconds > 0.0 {
        decoded as f64 / gen.decode_seconds
    } else {
        0.0
    };
    eprintln!(
        "prefill: {n_prompt} tokens, {:.1} tokens/s; decode: {decoded} tokens, {decode_rate:.1} tokens/s",
        n_prompt as f64 / t_prefill
    );
    Ok(())
}

fn main() -> ExitCode {
    match run(std::env::args_os().skip(1).collect()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(msg)) => {
            eprintln!("error: {msg}\n{USAGE}");
            ExitCode::from(2)
        }
        Err(Failure::Run(msg)) => {
            eprintln!("error: {msg}");
            ExitCode::from(1)
        }
    }
}
