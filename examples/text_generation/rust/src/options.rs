//! The command line, exactly as the C driver (../c/main.c) reads it: the same
//! options, defaults, ranges and messages, so that both accept and refuse the
//! same command lines.  Arguments are taken as bytes: the prompt is any
//! bytes, as in C.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;

use crate::cnum::{strtod_full, strtol10, strtoull10};
use crate::error::{Failure, Result};

pub const USAGE: &str = "\
usage: generate --model FILE (--prompt TEXT | --prompt-ids 1,2,3) [--max-tokens N] [--temperature T]
                [--top-k K | --top-p P] [--seed S] [--threads N] [--print-ids] [--print-prompt-ids]
                [--logits-out FILE]";

#[derive(Debug, PartialEq)]
pub struct Options {
    pub model: OsString,
    /// Exactly one of `prompt` and `prompt_ids` is set.
    pub prompt: Option<Vec<u8>>,
    pub prompt_ids: Option<Vec<u8>>,
    pub logits_out: Option<OsString>,
    pub max_tokens: i64,
    pub top_k: i64,
    pub threads: i64,
    pub temperature: f64,
    pub top_p: f64,
    pub seed: u64,
    pub print_ids: bool,
    pub print_prompt_ids: bool,
}

/// A number in [lo, hi] (`shown`: the range as C's "%g" prints it), read as
/// strtod reads it.
fn number(flag: &str, text: &[u8], lo: f64, hi: f64, shown: &str) -> Result<f64> {
    let parsed = std::str::from_utf8(text).ok().and_then(strtod_full);
    match parsed {
        Some(v) if v >= lo && v <= hi => Ok(v),
        _ => Err(Failure::Usage(format!(
            "{flag} expects a number in {shown}, got '{}'",
            String::from_utf8_lossy(text)
        ))),
    }
}

pub fn parse_args(args: Vec<OsString>) -> Result<Options> {
    let mut o = Options {
        model: OsString::new(),
        prompt: None,
        prompt_ids: None,
        logits_out: None,
        max_tokens: 32,
        top_k: 0,
        threads: 0,
        temperature: 0.0,
        top_p: 1.0,
        seed: 0,
        print_ids: false,
        print_prompt_ids: false,
    };
    let mut model = None;
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_bytes();
        let shown = String::from_utf8_lossy(a);
        i += 1;
        match a {
            b"--print-ids" => {
                o.print_ids = true;
                continue;
            }
            b"--print-prompt-ids" => {
                o.print_prompt_ids = true;
                continue;
            }
            _ => {}
        }
        // As in C, every other argument takes the next one as its value, and
        // is only then checked to be an option at all.
        let Some(value) = args.get(i) else {
            return Err(Failure::Usage(format!("{shown} needs a value")));
        };
        i += 1;
        let v = value.as_bytes();
        match a {
            b"--model" => model = Some(value.clone()),
            b"--prompt" => o.prompt = Some(v.to_vec()),
            b"--prompt-ids" => o.prompt_ids = Some(v.to_vec()),
            b"--logits-out" => o.logits_out = Some(value.clone()),
            // (long long)d in C: truncation toward zero.
            b"--max-tokens" => o.max_tokens = number(&shown, v, 0.0, 1e9, "[0, 1e+09]")? as i64,
            b"--top-k" => o.top_k = number(&shown, v, 0.0, 1e9, "[0, 1e+09]")? as i64,
            b"--threads" => o.threads = number(&shown, v, 0.0, 4096.0, "[0, 4096]")? as i64,
            b"--temperature" => o.temperature = number(&shown, v, 0.0, 1e6, "[0, 1e+06]")?,
            b"--top-p" => o.top_p = number(&shown, v, 0.0, 1.0, "[0, 1]")?,
            b"--seed" => {
                number(&shown, v, 0.0, 18446744073709551615.0, "[0, 1.84467e+19]")?;
                // C checks the value with strtod and then reads it with strtoull.
                o.seed = strtoull10(&String::from_utf8_lossy(v));
            }
            _ => return Err(Failure::Usage(format!("unknown option {shown}"))),
        }
    }
    match model {
        Some(m) if o.prompt.is_some() != o.prompt_ids.is_some() => o.model = m,
        _ => {
            return Err(Failure::Usage(
                "--model and one of --prompt / --prompt-ids are required".into(),
            ))
        }
    }
    if o.top_k > 0 && o.top_p < 1.0 {
        return Err(Failure::Usage(
            "--top-k and --top-p cannot be combined (the library samples with one of them)".into(),
        ));
    }
    Ok(o)
}

/// The ids of --prompt-ids ("1,2,3"; at most `cap`), read as C's parse_ids:
/// each strtol'd in [0, INT32_MAX] and followed by ',' or the end; "" is no
/// ids, and a trailing ',' ends the list.
pub fn parse_ids(text: &[u8], cap: usize, ids: &mut Vec<i32>) -> Result<()> {
    let bad = || {
        Failure::Run(format!(
            "--prompt-ids expects comma-separated token ids, got '{}'",
            String::from_utf8_lossy(text)
        ))
    };
    let mut p = 0;
    while p < text.len() {
        let (v, used) = strtol10(&text[p..]).ok_or_else(bad)?;
        let end = p + used;
        let sep_ok = end == text.len() || text[end] == b',';
        if v < 0 || v > i64::from(i32::MAX) || !sep_ok || ids.len() >= cap {
            return Err(bad());
        }
        ids.push(v as i32);
        p = if end < text.len() { end + 1 } else { end };
    }
    Ok(())
}

/// The arguments as given (bytes), for the tests.
#[cfg(test)]
fn args(list: &[&str]) -> Vec<OsString> {
    use std::os::unix::ffi::OsStringExt;
    list.iter().map(|a| OsString::from_vec(a.as_bytes().to_vec())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage_message(list: &[&str]) -> String {
        match parse_args(args(list)) {
            Err(Failure::Usage(m)) => m,
            other => panic!("{list:?}: {other:?}"),
        }
    }

    #[test]
    fn defaults_and_values() {
        let o = parse_args(args(&["--model", "m.gguf", "--prompt", "hi"])).unwrap();
        assert_eq!(o.model, OsString::from("m.gguf"));
        assert_eq!(o.prompt.as_deref(), Some(&b"hi"[..]));
        assert_eq!((o.max_tokens, o.top_k, o.threads, o.seed), (32, 0, 0, 0));
        assert_eq!((o.temperature, o.top_p), (0.0, 1.0));
        assert!(!o.print_ids && !o.print_prompt_ids && o.logits_out.is_none());

        let o = parse_args(args(&[
            "--prompt-ids",
            "1,2",
            "--model",
            "m",
            "--max-tokens",
            "3.7",
            "--temperature",
            "0.8",
            "--top-k",
            "40",
            "--seed",
            "18446744073709551615",
            "--threads",
            "2",
            "--print-ids",
            "--print-prompt-ids",
            "--logits-out",
            "l.bin",
        ]))
        .unwrap();
        assert_eq!(o.prompt_ids.as_deref(), Some(&b"1,2"[..]));
        assert_eq!((o.max_tokens, o.top_k, o.threads, o.seed), (3, 40, 2, u64::MAX));
        assert_eq!(o.temperature, 0.8);
        assert!(o.print_ids && o.print_prompt_ids);
        assert_eq!(o.logits_out, Some(OsString::from("l.bin")));
        assert_eq!(
            parse_args(args(&["--model", "m", "--prompt", "", "--seed", "1e3"]))
                .unwrap()
                .seed,
            1
        );
    }

    #[test]
    fn refusals() {
        assert_eq!(
            usage_message(&["--model", "m"]),
            "--model and one of --prompt / --prompt-ids are required"
        );
        assert_eq!(
            usage_message(&["--model", "m", "--prompt", "a", "--prompt-ids", "1"]),
            "--model and one of --prompt / --prompt-ids are required"
        );
        assert!(
            usage_message(&["--model", "m", "--prompt", "a", "--top-k", "5", "--top-p", "0.5"])
                .contains("cannot be combined")
        );
        // --top-p 1 is "no top-p": it combines with --top-k.
        assert!(parse_args(args(&["--model", "m", "--prompt", "a", "--top-k", "5", "--top-p", "1"])).is_ok());
        assert_eq!(usage_message(&["--model"]), "--model needs a value");
        assert_eq!(usage_message(&["--bogus", "x"]), "unknown option --bogus");
        assert_eq!(usage_message(&["hello"]), "hello needs a value");
        assert_eq!(
            usage_message(&["--top-p", "1.5"]),
            "--top-p expects a number in [0, 1], got '1.5'"
        );
        assert_eq!(
            usage_message(&["--max-tokens", "-1"]),
            "--max-tokens expects a number in [0, 1e+09], got '-1'"
        );
        assert_eq!(
            usage_message(&["--threads", "4097"]),
            "--threads expects a number in [0, 4096], got '4097'"
        );
        assert_eq!(
            usage_message(&["--seed", "x"]),
            "--seed expects a number in [0, 1.84467e+19], got 'x'"
        );
        assert_eq!(
            usage_message(&["--temperature", "nan"]),
            "--temperature expects a number in [0, 1e+06], got 'nan'"
        );
    }

    #[test]
    fn prompt_ids() {
        let ids = |t: &str| {
            let mut v = Vec::new();
            parse_ids(t.as_bytes(), t.len() + 1, &mut v).map(|()| v)
        };
        assert_eq!(ids("1,2,3").unwrap(), vec![1, 2, 3]);
        assert_eq!(ids("").unwrap(), Vec::<i32>::new());
        assert_eq!(ids("1,").unwrap(), vec![1]);
        assert_eq!(ids(" 4,+5,-0").unwrap(), vec![4, 5, 0]);
        assert_eq!(ids("2147483647").unwrap(), vec![i32::MAX]);
        for bad in [
            "1,x",
            ",1",
            "1,,2",
            "-1",
            "2147483648",
            "1;2",
            "1 ,2",
            "99999999999999999999",
        ] {
            match ids(bad) {
                Err(Failure::Run(m)) => assert!(m.starts_with("--prompt-ids expects"), "{bad}: {m}"),
                other => panic!("{bad:?}: {other:?}"),
            }
        }
    }
}
