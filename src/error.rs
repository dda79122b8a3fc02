//! The error every command returns when the user can fix what went wrong: its message, and the
//! `help:` line that names the fix. `ui::error` prints it; `main` maps it to exit code 1.

use std::fmt;

/// An error the user can fix, with the line that tells how.
#[derive(Debug)]
pub struct UserError {
    pub message: String,
    pub help: String,
}

impl fmt::Display for UserError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for UserError {}

/// Builds an error that prints as `error: <message>` followed by `help: <help>`.
pub fn user_error(message: impl Into<String>, help: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UserError {
        message: message.into(),
        help: help.into(),
    })
}
