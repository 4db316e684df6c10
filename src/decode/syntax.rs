//! A JSON syntax error in plain words: what was found (a letter, a digit, an unquoted word, a
//! punctuation mark by name, the end of the input), where (line and column), and what JSON
//! wanted there. Never quotes the input: a payload is personal data, so a word or a number of
//! it never reaches an error, a log or a metric. Pure.

/// `not JSON: …` for a message serde_json refused as JSON.
pub(crate) fn not_json(text: &str, err: &serde_json::Error) -> String {
    let (line, column) = (err.line(), err.column());
    let msg = err.to_string();
    let core = msg.split(" at line ").next().unwrap_or(&msg);
    if err.is_eof() {
        let inside = match core {
            "EOF while parsing a string" => "inside a string",
            "EOF while parsing an object" => "inside an object",
            "EOF while parsing a list" => "inside an array",
            _ => "before a JSON value is complete",
        };
        return format!("not JSON: the input ends {inside} (line {line}, column {column})");
    }
    let Some(at) = offset(text, line, column) else {
        return format!("not JSON: {core} (line {line}, column {column})");
    };
    let bytes = text.as_bytes();
    let wants_value = matches!(core, "expected value" | "expected ident");
    if wants_value && bytes[at].is_ascii_alphabetic() {
        // Back to the start of the word: that is where the reader sees it begin.
        let start = bytes[..at]
            .iter()
            .rposition(|b| !b.is_ascii_alphanumeric() && *b != b'_')
            .map_or(0, |i| i + 1);
        return format!(
            "not JSON: an unquoted word at line {line}, column {} (JSON text is quoted; only \
             true, false and null are written bare)",
            column.saturating_sub(at - start)
        );
    }
    let wanted = match core {
        "expected value" => "where a JSON value should start".to_owned(),
        "expected ident" => "inside a word that is not true, false or null".to_owned(),
        "trailing characters" => "after the end of the JSON value".to_owned(),
        "key must be a string" => "where an object key (a quoted string) should start".to_owned(),
        c => match c.strip_prefix("expected ") {
            Some(what) => format!("where {what} should come"),
            None => format!("({c})"),
        },
    };
    format!(
        "not JSON: {} at line {line}, column {column}, {wanted}",
        found(bytes[at])
    )
}

/// The byte offset of serde_json's (line, column) in `text` (both from 1), when inside it.
fn offset(text: &str, line: usize, column: usize) -> Option<usize> {
    let start = if line <= 1 {
        0
    } else {
        text.match_indices('\n').nth(line - 2)?.0 + 1
    };
    let at = start + column.checked_sub(1)?;
    (at < text.len()).then_some(at)
}

/// What one byte of the input is, named without its value when it could carry data.
fn found(b: u8) -> String {
    match b {
        b' ' => "a space".into(),
        b'\t' => "a tab".into(),
        b'0'..=b'9' => "a digit".into(),
        b if b.is_ascii_alphabetic() => "a letter".into(),
        b if b.is_ascii_punctuation() => format!("`{}`", char::from(b)),
        b if b.is_ascii() => "a control character".into(),
        _ => "a non-ASCII character".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn say(text: &str) -> String {
        let e = serde_json::from_str::<serde::de::IgnoredAny>(text).expect_err("not JSON");
        not_json(text, &e)
    }

    #[test]
    fn an_unquoted_word_is_named_as_such_where_it_starts() {
        let m = say("not json at all");
        assert_eq!(
            m,
            "not JSON: an unquoted word at line 1, column 1 (JSON text is quoted; only true, \
             false and null are written bare)"
        );
        assert!(say("hello").contains("an unquoted word at line 1, column 1"));
        assert!(say("  {\"a\": secret}").contains("an unquoted word at line 1, column 9"));
        assert!(say("{\"a\":\n  secret}").contains("an unquoted word at line 2, column 3"));
    }

    #[test]
    fn what_was_found_and_what_was_wanted_without_the_input() {
        assert_eq!(
            say("{\"a\":1;"),
            "not JSON: `;` at line 1, column 7, where `,` or `}` should come"
        );
        assert_eq!(
            say("{} 4"),
            "not JSON: a digit at line 1, column 4, after the end of the JSON value"
        );
        assert_eq!(
            say("{\"a\":1} Smith"),
            "not JSON: a letter at line 1, column 9, after the end of the JSON value"
        );
        assert_eq!(
            say("{7:1}"),
            "not JSON: a digit at line 1, column 2, where an object key (a quoted string) should start"
        );
        assert_eq!(
            say("{\"name\":\"Jo"),
            "not JSON: the input ends inside a string (line 1, column 11)"
        );
        assert_eq!(
            say("{\"a\":"),
            "not JSON: the input ends before a JSON value is complete (line 1, column 5)"
        );
        assert!(say("é").contains("a non-ASCII character at line 1, column 1"));
        for input in ["{\"a\":1} Smith", "Jo Smith", "{\"n\":\"Jo Smith"] {
            let m = say(input);
            assert!(!m.contains("Smith") && !m.contains("Jo"), "{m}");
        }
    }
}
