//! The shape of a JSON text as it was printed: every object's keys in their printed order, each
//! with its value's kind (`s` string, `n` number, `b` boolean, `null`), arrays by the distinct
//! shapes of their elements; and a summary's lines with the test's own names replaced.

/// The shape of one JSON document (the whole text), or why it is not one.
pub(super) fn shape(text: &str) -> Result<String, String> {
    let mut p = Parser {
        s: text.as_bytes(),
        at: 0,
    };
    let out = p.value()?;
    p.space();
    if p.at != p.s.len() {
        return Err(format!("trailing text at byte {}", p.at));
    }
    Ok(out)
}

/// The lines of a summary, the test's `names` replaced by their stand-ins, digits
/// and ids by `#` (counts, sizes and ids vary with the run, what is said does not).
pub(super) fn text_lines(text: &str, names: &[(&str, &str)]) -> String {
    let mut t = text.trim_end().to_owned();
    for (name, stand_in) in names {
        t = t.replace(name, stand_in);
    }
    let mut out = String::new();
    let mut word = String::new();
    for c in t.chars().chain(std::iter::once('\n')) {
        if c.is_ascii_alphanumeric() {
            word.push(c);
            continue;
        }
        out.push_str(&stand_in(&word));
        word.clear();
        out.push(c);
    }
    out.pop();
    out
}

/// A word with its digits as `#`; an id (lowercase hex with a digit) as one `#`.
fn stand_in(word: &str) -> String {
    let hex = word
        .chars()
        .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c));
    if hex && word.chars().any(|c| c.is_ascii_digit()) {
        return "#".to_owned();
    }
    let mut out = String::new();
    let mut digits = false;
    for c in word.chars() {
        if c.is_ascii_digit() {
            if !digits {
                out.push('#');
            }
            digits = true;
        } else {
            digits = false;
            out.push(c);
        }
    }
    out
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn space(&mut self) {
        while self.s.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }

    fn peek(&mut self) -> Result<u8, String> {
        self.space();
        self.s
            .get(self.at)
            .copied()
            .ok_or_else(|| "unexpected end".to_owned())
    }

    fn expect(&mut self, b: u8) -> Result<(), String> {
        if self.peek()? != b {
            return Err(format!("expected {:?} at byte {}", b as char, self.at));
        }
        self.at += 1;
        Ok(())
    }

    fn string(&mut self) -> Result<String, String> {
        self.expect(b'"')?;
        let start = self.at;
        loop {
            match self.s.get(self.at) {
                None => return Err("unterminated string".to_owned()),
                Some(b'\\') => self.at += 2,
                Some(b'"') => break,
                Some(_) => self.at += 1,
            }
        }
        let text = String::from_utf8_lossy(&self.s[start..self.at]).into_owned();
        self.at += 1;
        Ok(text)
    }

    fn value(&mut self) -> Result<String, String> {
        match self.peek()? {
            b'{' => {
                self.at += 1;
                let mut keys = Vec::new();
                if self.peek()? == b'}' {
                    self.at += 1;
                    return Ok("{}".to_owned());
                }
                loop {
                    let k = self.string()?;
                    self.expect(b':')?;
                    let v = self.value()?;
                    keys.push(format!("{k}:{v}"));
                    match self.peek()? {
                        b',' => self.at += 1,
                        b'}' => {
                            self.at += 1;
                            return Ok(format!("{{{}}}", keys.join(",")));
                        }
                        c => return Err(format!("unexpected {:?} at {}", c as char, self.at)),
                    }
                }
            }
            b'[' => {
                self.at += 1;
                let mut kinds: Vec<String> = Vec::new();
                if self.peek()? == b']' {
                    self.at += 1;
                    return Ok("[]".to_owned());
                }
                loop {
                    let v = self.value()?;
                    if !kinds.contains(&v) {
                        kinds.push(v);
                    }
                    match self.peek()? {
                        b',' => self.at += 1,
                        b']' => {
                            self.at += 1;
                            return Ok(format!("[{}]", kinds.join("|")));
                        }
                        c => return Err(format!("unexpected {:?} at {}", c as char, self.at)),
                    }
                }
            }
            b'"' => self.string().map(|_| "s".to_owned()),
            b't' | b'f' => {
                let word = if self.s[self.at] == b't' { 4 } else { 5 };
                self.at += word;
                Ok("b".to_owned())
            }
            b'n' => {
                self.at += 4;
                Ok("null".to_owned())
            }
            _ => {
                let start = self.at;
                while self
                    .s
                    .get(self.at)
                    .is_some_and(|c| c.is_ascii_digit() || b"+-.eE".contains(c))
                {
                    self.at += 1;
                }
                if start == self.at {
                    return Err(format!("not a value at byte {start}"));
                }
                Ok("n".to_owned())
            }
        }
    }
}
