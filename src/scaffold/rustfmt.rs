//! Formats generated Rust the way `cargo fmt` would, in memory, before anything is written.
//!
//! rustfmt's line breaks depend on name lengths (a 28-letter kind in a long group breaks lines
//! a `Guestbook` does not), so no template can be formatted for every name in advance.

use std::io::Write;
use std::process::{Command, Stdio};

use anyhow::Context as _;

/// The rustfmt of the user's toolchain, if one runs.
pub struct Rustfmt {
    available: bool,
}

impl Rustfmt {
    /// Looks for `rustfmt` on the PATH (the rustup proxy picks the project's toolchain).
    pub fn detect() -> Self {
        let available = Command::new("rustfmt")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        Self { available }
    }

    /// A formatter that leaves sources as they are (for tests).
    pub fn none() -> Self {
        Self { available: false }
    }

    pub fn available(&self) -> bool {
        self.available
    }

    /// `source` formatted with edition 2024 and the `rustfmt.toml` found from the current
    /// directory, or the source itself when rustfmt is not available.
    ///
    /// One rustfmt pass does not always reach rustfmt's own fixed point (a statement it breaks
    /// can let the enclosing item fit differently), so it runs until the text stops changing.
    pub fn format(&self, source: &str, file: &str) -> anyhow::Result<String> {
        if !self.available {
            return Ok(source.to_string());
        }
        let mut text = source.to_string();
        for _ in 0..4 {
            let next = self.pass(&text, file)?;
            if next == text {
                break;
            }
            text = next;
        }
        Ok(text)
    }

    fn pass(&self, source: &str, file: &str) -> anyhow::Result<String> {
        let mut child = Command::new("rustfmt")
            .args(["--edition", "2024", "--emit", "stdout"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("cannot run rustfmt")?;
        child
            .stdin
            .take()
            .expect("stdin is piped")
            .write_all(source.as_bytes())
            .context("cannot write to rustfmt")?;
        let output = child.wait_with_output().context("cannot run rustfmt")?;
        anyhow::ensure!(
            output.status.success(),
            "rustfmt rejected the generated `{file}`: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
        String::from_utf8(output.stdout).context("rustfmt printed non-UTF-8")
    }
}

/// `<declaration> = "<value>";` laid out as rustfmt lays it out at the top level (line width
/// 100): on one line if it fits, else with the string on the next line if that fits, else left
/// on one line. Lets a template hold a string constant of any length, already formatted.
pub fn str_const(declaration: &str, value: &str) -> String {
    let one_line = format!("{declaration} = \"{value}\";");
    let broken = format!("    \"{value}\";");
    if one_line.len() <= MAX_WIDTH || broken.len() > MAX_WIDTH {
        one_line
    } else {
        format!("{declaration} =\n{broken}")
    }
}

/// rustfmt's default `max_width`.
const MAX_WIDTH: usize = 100;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_constants_break_as_rustfmt_breaks_them() {
        let short = str_const("pub const C: &str", &"y".repeat(77));
        assert_eq!(short.lines().count(), 1);
        assert_eq!(short.len(), 100);
        let broken = str_const("pub const B: &str", &"y".repeat(78));
        assert_eq!(
            broken,
            format!("pub const B: &str =\n    \"{}\";", "y".repeat(78))
        );
        let huge = str_const("pub const A: &str", &"x".repeat(150));
        assert_eq!(huge.lines().count(), 1);
    }
}
