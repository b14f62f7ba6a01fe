//! Cuts an expression into tokens, each with its byte position for error messages.
//!
//! - punctuation: `(` `)` `[` `]` `,`;
//! - operators: `==` `!=` `<` `<=` `>` `>=` `~` `!~` `!in` `!ni` `&&` `||` `!`, and the
//!   words `in`, `ni`;
//! - `"strings"` with the escapes `\"` `\\` `\n` `\t` `\r` `\0` `\xHH`;
//! - `/patterns/` (a `/` that starts a token), where `\/` is a slash;
//! - words: a run of letters, digits and `_ - : . / + @ ? #` (field names, type and meta
//!   extractors, unquoted literals). The parser decides what a word is.

use super::error::ParseError;

/// What a token is.
#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    /// `(`
    Open,
    /// `)`
    Close,
    /// `[`
    ListOpen,
    /// `]`
    ListClose,
    /// `,`
    Comma,
    /// `&&`
    And,
    /// `||`
    Or,
    /// `!` (negation)
    Not,
    /// A comparison operator.
    Op(super::op::Op),
    /// A quoted string, escapes resolved.
    Str(Vec<u8>),
    /// A `/pattern/`, its text between the slashes (`\/` resolved).
    Pattern(String),
    /// A bare word.
    Word(String),
}

/// A token and its byte position in the expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    /// The token.
    pub tok: Tok,
    /// Byte offset of its first character.
    pub pos: usize,
    /// Byte offset after its last character.
    pub end: usize,
}

fn is_word_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric()
        || matches!(
            c,
            b'_' | b'-' | b':' | b'.' | b'/' | b'+' | b'@' | b'?' | b'#'
        )
}

/// The tokens of `text`.
pub fn lex(text: &str) -> Result<Vec<Token>, ParseError> {
    use super::op::Op;
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let err = |pos: usize, msg: &str| Err(ParseError::new(text, pos, msg));
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        let two = b.get(i..i + 2).unwrap_or(&[]);
        let word_after = |n: usize, w: &[u8]| {
            b.get(i + n..i + n + w.len()) == Some(w)
                && !b.get(i + n + w.len()).copied().is_some_and(is_word_byte)
        };
        let (tok, len) = match c {
            b'(' => (Tok::Open, 1),
            b')' => (Tok::Close, 1),
            b'[' => (Tok::ListOpen, 1),
            b']' => (Tok::ListClose, 1),
            b',' => (Tok::Comma, 1),
            b'&' if two == b"&&" => (Tok::And, 2),
            b'|' if two == b"||" => (Tok::Or, 2),
            b'=' if two == b"==" => (Tok::Op(Op::Eq), 2),
            b'!' if two == b"!=" => (Tok::Op(Op::Ne), 2),
            b'!' if two == b"!~" => (Tok::Op(Op::NotMatch), 2),
            b'!' if word_after(1, b"in") => (Tok::Op(Op::NotIn), 3),
            b'!' if word_after(1, b"ni") => (Tok::Op(Op::NotNi), 3),
            b'!' => (Tok::Not, 1),
            b'<' if two == b"<=" => (Tok::Op(Op::Le), 2),
            b'<' => (Tok::Op(Op::Lt), 1),
            b'>' if two == b">=" => (Tok::Op(Op::Ge), 2),
            b'>' => (Tok::Op(Op::Gt), 1),
            b'~' => (Tok::Op(Op::Match), 1),
            b'"' => {
                let (s, len) = string(text, i)?;
                (Tok::Str(s), len)
            }
            b'/' => {
                let mut j = i + 1;
                let mut pat = String::new();
                loop {
                    match b.get(j) {
                        None => return err(i, "unterminated pattern: expected a closing /"),
                        Some(b'/') => break,
                        Some(b'\\') if b.get(j + 1) == Some(&b'/') => {
                            pat.push('/');
                            j += 2;
                        }
                        Some(_) => {
                            let ch = text[j..].chars().next().unwrap_or('\u{fffd}');
                            pat.push(ch);
                            j += ch.len_utf8();
                        }
                    }
                }
                (Tok::Pattern(pat), j + 1 - i)
            }
            c if is_word_byte(c) => {
                let len = b[i..].iter().take_while(|&&c| is_word_byte(c)).count();
                let w = &text[i..i + len];
                match w {
                    "in" => (Tok::Op(Op::In), len),
                    "ni" => (Tok::Op(Op::Ni), len),
                    _ => (Tok::Word(w.to_string()), len),
                }
            }
            // A lone `=` is the common slip for `==` (a `=` after `!<>=` is lexed above).
            b'=' => return err(i, "unexpected `=`; did you mean `==`?"),
            _ => {
                let ch = text[i..].chars().next().unwrap_or('?');
                return err(i, &format!("unexpected character {ch:?}"));
            }
        };
        i += len;
        out.push(Token {
            tok,
            pos: start,
            end: i,
        });
    }
    Ok(out)
}

/// The string starting with the `"` at `start`: its bytes and its length in the text.
fn string(text: &str, start: usize) -> Result<(Vec<u8>, usize), ParseError> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut j = start + 1;
    loop {
        match b.get(j) {
            None => {
                return Err(ParseError::new(
                    text,
                    start,
                    "unterminated string: expected a closing \"",
                ))
            }
            Some(b'"') => return Ok((out, j + 1 - start)),
            Some(b'\\') => {
                let esc = b.get(j + 1).copied();
                let byte = match esc {
                    Some(b'"') => b'"',
                    Some(b'\\') => b'\\',
                    Some(b'n') => b'\n',
                    Some(b't') => b'\t',
                    Some(b'r') => b'\r',
                    Some(b'0') => 0,
                    Some(b'/') => b'/',
                    Some(b'x') => {
                        let hex = b
                            .get(j + 2..j + 4)
                            .and_then(|h| std::str::from_utf8(h).ok())
                            .and_then(|h| u8::from_str_radix(h, 16).ok());
                        match hex {
                            Some(v) => {
                                out.push(v);
                                j += 4;
                                continue;
                            }
                            None => {
                                return Err(ParseError::new(
                                    text,
                                    j,
                                    "invalid escape: expected two hex digits after \\x",
                                ))
                            }
                        }
                    }
                    _ => {
                        return Err(ParseError::new(
                            text,
                            j,
                            "invalid escape: expected one of \\\" \\\\ \\n \\t \\r \\0 \\xHH",
                        ))
                    }
                };
                out.push(byte);
                j += 2;
            }
            Some(&c) => {
                out.push(c);
                j += 1;
            }
        }
    }
}
