//! Tokenizer: a hand-built vocabulary whose ids are worked out by hand
//! (core/tokenizer_test.c has the full set), the capacity protocol of the
//! generated methods, round trips and errors.

use kernelbridge::{Status, Tokenizer};

const SPACE: i32 = 259; // "▁"
const AB: i32 = 262; // "ab"
const SPACE_A: i32 = 263; // "▁a"
const UD: i32 = 264; // "<ud>", user-defined

fn small() -> Tokenizer {
    let mut pieces: Vec<String> = vec!["<unk>".into(), "<s>".into(), "</s>".into()];
    let mut types = vec![2, 3, 3];
    for b in 0..256 {
        pieces.push(format!("<0x{b:02X}>"));
        types.push(6);
    }
    for p in ["\u{2581}", "a", "b", "ab", "\u{2581}a", "<ud>"] {
        pieces.push(p.to_string());
    }
    types.extend([1, 1, 1, 1, 1, 4]);
    let mut scores = vec![0.0f32; 259];
    scores.extend([-1.0, -2.0, -2.0, -3.0, -4.0, 0.0]);
    let (blob, offsets) = Tokenizer::pack_pieces(&pieces).unwrap();
    Tokenizer::new(&blob, &offsets, &scores, &types, 1, 2, 0, true, false, true).unwrap()
}

#[test]
fn ids_by_hand() {
    let tok = small();
    assert_eq!((tok.n_tokens(), tok.bos(), tok.eos()), (265, 1, 2));
    assert_eq!(tok.encode("ab a", true, false).unwrap(), vec![1, SPACE, AB, SPACE_A]);
    assert_eq!(tok.encode("a<ud>b", false, false).unwrap(), vec![SPACE_A, UD, SPACE, 261]);
    assert_eq!(tok.encode("<s>a", false, true).unwrap(), vec![1, SPACE_A]);
    assert_eq!(tok.encode("", true, false).unwrap(), vec![1]);
    assert_eq!(tok.decode(&[1, SPACE_A, 2], false, true).unwrap(), b"<s> a</s>");
    assert_eq!(tok.piece_bytes(SPACE_A as i64, false).unwrap(), b" a");
}

#[test]
fn short_buffers_are_left_alone() {
    let tok = small();
    let mut ids = [-7i32; 2];
    assert_eq!(tok.tokenize("ab a".as_bytes(), true, false, &mut ids).unwrap(), 4);
    assert_eq!(ids, [-7, -7]);
}

#[test]
fn round_trips() {
    let tok = small();
    for text in ["ab a", "  a b  ", "\u{4e2d}\u{6587} \u{1F600}", "a\nb"] {
        let ids = tok.encode(text, false, false).unwrap();
        assert_eq!(tok.decode(&ids, false, false).unwrap(), text.as_bytes(), "{text:?}");
    }
    let raw: &[u8] = b"\xff\xfe";
    let ids = tok.encode(raw, false, false).unwrap();
    assert_eq!(tok.decode(&ids, false, false).unwrap(), raw);
}

#[test]
fn errors_name_the_argument() {
    let (blob, offsets) = Tokenizer::pack_pieces(&["a", "a"]).unwrap();
    let e = Tokenizer::new(&blob, &offsets, &[0.0, 0.0], &[1, 1], -1, -1, -1, false, false, true).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
    assert!(e.message().contains("same piece"), "{}", e.message());
    let tok = small();
    let e = tok.decode(&[1, 100_000], false, false).unwrap_err();
    assert!(e.message().contains("ids[1]"), "{}", e.message());
}
