//! BERT's uncased WordPiece tokeniser; the steps are those of the README
//! ("Tokenisation") and of python/sentence_embeddings/wordpiece.py.

use std::collections::HashMap;

use crate::unicode_tables::{
    CONTROL_RANGES, LOWER_PAIRS, MARKS_RANGES, PUNCT_RANGES, STRIP_INDEX, STRIP_KEYS, STRIP_POOL,
};

pub const SPECIAL_TOKENS: [&str; 5] = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"];
const MAX_WORD_CHARS: usize = 100;

const CJK_RANGES: [(u32, u32); 8] = [
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B920, 0x2CEAF),
    (0x2F800, 0x2FA1F),
];

fn in_ranges(c: char, table: &[(u32, u32)]) -> bool {
    let c = c as u32;
    let i = table.partition_point(|&(_, hi)| hi < c);
    i < table.len() && table[i].0 <= c
}

/// The White_Space property.
fn is_whitespace(c: char) -> bool {
    matches!(c, '\t'..='\r' | ' ' | '\u{85}' | '\u{A0}' | '\u{1680}' | '\u{2000}'..='\u{200A}'
        | '\u{2028}' | '\u{2029}' | '\u{202F}' | '\u{205F}' | '\u{3000}')
}

fn is_control(c: char) -> bool {
    !matches!(c, '\t' | '\n' | '\r') && in_ranges(c, &CONTROL_RANGES)
}

fn is_cjk(c: char) -> bool {
    in_ranges(c, &CJK_RANGES)
}

fn is_punct(c: char) -> bool {
    c.is_ascii_punctuation() || in_ranges(c, &PUNCT_RANGES)
}

/// Pushes c's canonical decomposition without nonspacing marks.
fn push_stripped(out: &mut Vec<char>, c: char) {
    if c.is_ascii() {
        out.push(c);
        return;
    }
    if in_ranges(c, &MARKS_RANGES) {
        return;
    }
    let cp = c as u32;
    if (0xAC00..=0xD7A3).contains(&cp) {
        // Hangul syllable: leading, vowel[, trailing] jamo.
        let s = cp - 0xAC00;
        let jamo = |v: u32| char::from_u32(v).unwrap_or('\u{FFFD}');
        out.push(jamo(0x1100 + s / 588));
        out.push(jamo(0x1161 + (s % 588) / 28));
        if s % 28 != 0 {
            out.push(jamo(0x11A7 + s % 28));
        }
        return;
    }
    match STRIP_KEYS.binary_search(&cp) {
        Ok(i) => {
            let pool = &STRIP_POOL[STRIP_INDEX[i] as usize..STRIP_INDEX[i + 1] as usize];
            out.extend(pool.iter().map(|&v| char::from_u32(v).unwrap_or('\u{FFFD}')));
        }
        Err(_) => out.push(c),
    }
}

fn to_lower(c: char) -> char {
    if c.is_ascii() {
        return c.to_ascii_lowercase();
    }
    match LOWER_PAIRS.binary_search_by_key(&(c as u32), |&(k, _)| k) {
        Ok(i) => char::from_u32(LOWER_PAIRS[i].1).unwrap_or(c),
        Err(_) => c,
    }
}

/// Clean-up, spaces around CJK ideographs, accents stripped, lower case.
fn normalize(text: &str) -> Vec<char> {
    let mut out = Vec::with_capacity(text.len());
    let mut tmp = Vec::new();
    for c in text.chars() {
        if c == '\0' || c == '\u{FFFD}' || is_control(c) {
            continue;
        }
        if is_whitespace(c) {
            out.push(' ');
            continue;
        }
        tmp.clear();
        push_stripped(&mut tmp, c);
        let cjk = is_cjk(c);
        if cjk {
            out.push(' ');
        }
        out.extend(tmp.iter().map(|&t| to_lower(t)));
        if cjk {
            out.push(' ');
        }
    }
    out
}

/// Words between spaces, each punctuation character a word of its own.
fn split_words(text: &[char]) -> Vec<&[char]> {
    let mut words = Vec::new();
    let mut start = None;
    for (i, &c) in text.iter().enumerate() {
        if c == ' ' || is_punct(c) {
            if let Some(s) = start.take() {
                words.push(&text[s..i]);
            }
            if c != ' ' {
                words.push(&text[i..i + 1]);
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(s) = start {
        words.push(&text[s..]);
    }
    words
}

pub struct WordPiece {
    vocab: HashMap<String, i32>,
    max_len: usize,
    unk: i32,
    cls: i32,
    sep: i32,
}

impl WordPiece {
    /// `vocab` must hold the special tokens (read_vocab checks it).
    pub fn new(vocab: HashMap<String, i32>, max_len: usize) -> WordPiece {
        let id = |t: &str| vocab.get(t).copied().unwrap_or(0);
        let (unk, cls, sep) = (id("[UNK]"), id("[CLS]"), id("[SEP]"));
        WordPiece {
            vocab,
            max_len,
            unk,
            cls,
            sep,
        }
    }

    /// Pushes the pieces of one word, or [UNK].
    fn push_word(&self, out: &mut Vec<i32>, word: &[char]) {
        if word.len() > MAX_WORD_CHARS {
            out.push(self.unk);
            return;
        }
        let n = out.len();
        let mut start = 0;
        let mut piece = String::new();
        while start < word.len() {
            let mut found = None;
            let mut end = word.len();
            while end > start {
                piece.clear();
                if start > 0 {
                    piece.push_str("##");
                }
                piece.extend(&word[start..end]);
                if let Some(&id) = self.vocab.get(&piece) {
                    found = Some(id);
                    break;
                }
                end -= 1;
            }
            match found {
                Some(id) => out.push(id),
                None => {
                    out.truncate(n);
                    out.push(self.unk);
                    return;
                }
            }
            start = end;
        }
    }

    /// [CLS] ids... [SEP], at most max_len ids.
    pub fn encode(&self, text: &str) -> Vec<i32> {
        let mut ids = Vec::new();
        let mut rest = text;
        loop {
            let (at, tok) = next_special(rest);
            for w in split_words(&normalize(&rest[..at])) {
                self.push_word(&mut ids, w);
            }
            let Some(tok) = tok else { break };
            ids.push(self.vocab.get(tok).copied().unwrap_or(self.unk));
            rest = &rest[at + tok.len()..];
        }
        ids.truncate(self.max_len - 2);
        let mut out = Vec::with_capacity(ids.len() + 2);
        out.push(self.cls);
        out.extend(ids);
        out.push(self.sep);
        out
    }
}

/// The byte offset of the first special token in s and the token, or (s.len(), None).
fn next_special(s: &str) -> (usize, Option<&'static str>) {
    for (i, _) in s.match_indices('[') {
        if let Some(t) = SPECIAL_TOKENS.iter().find(|t| s[i..].starts_with(**t)) {
            return (i, Some(t));
        }
    }
    (s.len(), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strip(c: char) -> String {
        let mut v = Vec::new();
        push_stripped(&mut v, c);
        v.into_iter().collect()
    }

    /// Character classes and mappings against facts of the Unicode standard.
    #[test]
    fn character_data() {
        for (c, want) in [
            ('é', "e"),
            ('Å', "A"),
            ('ǰ', "j"),
            ('\u{301}', ""),
            ('ß', "ß"),
            ('\u{F900}', "\u{8C48}"),
            ('한', "\u{1112}\u{1161}\u{11AB}"),
            ('가', "\u{1100}\u{1161}"),
        ] {
            assert_eq!(strip(c), want, "strip({c:?})");
        }
        for (c, want) in [
            ('A', 'a'),
            ('Σ', 'σ'),
            ('Ж', 'ж'),
            ('\u{1E9E}', 'ß'),
            ('ǅ', 'ǆ'),
            ('1', '1'),
        ] {
            assert_eq!(to_lower(c), want, "to_lower({c:?})");
        }
        for c in ['$', '+', '~', '«', '。', '—'] {
            assert!(is_punct(c), "is_punct({c:?})");
        }
        for c in ['a', '½', '€', '\u{2160}'] {
            assert!(!is_punct(c), "!is_punct({c:?})");
        }
        for c in [
            '\0',
            '\u{1B}',
            '\u{85}',
            '\u{200B}',
            '\u{FEFF}',
            '\u{AD}',
            '\u{E000}',
            '\u{E0001}',
        ] {
            assert!(is_control(c), "is_control({c:?})");
        }
        for c in ['\t', '\n', '\r', 'a', '\u{378}'] {
            assert!(!is_control(c), "!is_control({c:?})");
        }
        for c in ['\u{4E00}', '\u{2B81F}', '\u{2B920}', '\u{F900}'] {
            assert!(is_cjk(c), "is_cjk({c:?})");
        }
        for c in ['\u{3041}', '\u{2B820}', '\u{2CEB0}', '\u{AC00}'] {
            assert!(!is_cjk(c), "!is_cjk({c:?})");
        }
    }

    #[test]
    fn encode() {
        let vocab: HashMap<String, i32> = [
            ("[PAD]", 0),
            ("[UNK]", 1),
            ("[CLS]", 2),
            ("[SEP]", 3),
            ("[MASK]", 4),
            ("un", 5),
            ("##aff", 6),
        ]
        .into_iter()
        .chain([("##able", 7), ("aff", 8), ("a", 9), ("##a", 10)])
        .map(|(t, i)| (t.to_string(), i))
        .collect();
        let wp = WordPiece::new(vocab, 6);
        assert_eq!(wp.encode(""), [2, 3]);
        assert_eq!(wp.encode("unaffable"), [2, 5, 6, 7, 3]);
        assert_eq!(wp.encode("unaffablex"), [2, 1, 3]);
        assert_eq!(wp.encode("a [MASK]aff"), [2, 9, 4, 8, 3]);
        assert_eq!(wp.encode("a a a a a a a"), [2, 9, 9, 9, 9, 3]);
        assert_eq!(wp.encode("aaaa"), [2, 9, 10, 10, 10, 3]);
        assert_eq!(wp.encode(&"a".repeat(101)), [2, 1, 3]);
    }
}
