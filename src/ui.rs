//! The only place that prints: status lines on stdout, errors and hints on stderr.

#![allow(clippy::print_stderr)]

use std::io::Write as _;

use crate::error::UserError;

/// Writes `text` to stdout. A reader that went away (`kube-scaffold version | head -n 1`)
/// stops the output, not the program: nothing is printed after it, and no panic.
fn out(text: std::fmt::Arguments<'_>) {
    let _ = std::io::stdout().lock().write_fmt(text);
}

/// Prints `error: ...` with the cause chain on one line, then the `help:` line if the error
/// carries one.
pub fn error(err: &anyhow::Error) {
    eprintln!("error: {err:#}");
    if let Some(user) = err.chain().find_map(|e| e.downcast_ref::<UserError>()) {
        eprintln!("help: {}", user.help);
    }
}

/// A one-line note on stderr, for decisions the tool took on the user's behalf.
pub fn note(message: &str) {
    eprintln!("note: {message}");
}

/// One status line per file: `create`, `update`, `skip`, ...
pub fn status(action: &str, path: &str) {
    out(format_args!("{action:>8} {path}\n"));
}

/// A unified diff, on stdout.
pub fn diff(text: &str) {
    out(format_args!("{text}"));
}

/// Free text for the user, on stdout.
pub fn say(text: &str) {
    out(format_args!("{text}\n"));
}
