//! The only place that prints: status lines on stdout, errors and hints on stderr.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use crate::error::UserError;

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
    println!("{action:>8} {path}");
}

/// A unified diff, on stdout.
pub fn diff(text: &str) {
    print!("{text}");
}

/// Free text for the user, on stdout.
pub fn say(text: &str) {
    println!("{text}");
}
