//! Capped in-memory capture of what the submitted code prints.

/// Text written to one stream, kept up to a byte cap. What does not fit is
/// counted and dropped; [`Capture::finish`] says how much was cut.
#[derive(Debug)]
pub struct Capture {
    text: String,
    cap: usize,
    cut: usize,
}

impl Capture {
    /// An empty capture that keeps at most `cap` bytes.
    pub fn new(cap: usize) -> Self {
        Self { text: String::new(), cap, cut: 0 }
    }

    /// Append `s`, keeping whole characters only.
    pub fn push(&mut self, s: &str) {
        let room = self.cap - self.text.len();
        if s.len() <= room && self.cut == 0 {
            self.text.push_str(s);
            return;
        }
        // Once something was cut, later (smaller) writes are cut too, so the
        // kept text is always a prefix of what was printed.
        let keep = if self.cut == 0 { floor_char_boundary(s, room) } else { 0 };
        self.text.push_str(&s[..keep]);
        self.cut += s.len() - keep;
    }

    /// The kept text, followed by a note when something was cut.
    pub fn finish(self) -> String {
        let mut text = self.text;
        if self.cut > 0 {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&format!("[… {} bytes cut]", self.cut));
        }
        text
    }
}

/// Truncate `s` to at most `cap` bytes on a character boundary, followed by
/// a note saying how many bytes were cut.
pub fn truncate(mut s: String, cap: usize) -> String {
    if s.len() <= cap {
        return s;
    }
    let keep = floor_char_boundary(&s, cap);
    let cut = s.len() - keep;
    s.truncate(keep);
    s.push_str(&format!("[… {cut} bytes cut]"));
    s
}

/// The largest index `<= at` that is a character boundary of `s`.
fn floor_char_boundary(s: &str, at: usize) -> usize {
    if at >= s.len() {
        return s.len();
    }
    (0..=at).rev().find(|&i| s.is_char_boundary(i)).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_everything_under_the_cap() {
        let mut c = Capture::new(10);
        c.push("abc");
        c.push("def\n");
        assert_eq!(c.finish(), "abcdef\n");
    }

    #[test]
    fn cuts_on_a_char_boundary_and_says_how_much() {
        let mut c = Capture::new(4);
        c.push("aé"); // 3 bytes
        c.push("éé"); // 4 bytes: only room for 1, which is not a boundary
        c.push("x");
        assert_eq!(c.finish(), "aé\n[… 5 bytes cut]");
    }

    #[test]
    fn truncate_notes_the_cut() {
        assert_eq!(truncate("hello".into(), 10), "hello");
        assert_eq!(truncate("hello".into(), 2), "he[… 3 bytes cut]");
    }
}
