//! Yes/no questions, asked only when a person is at a terminal.

use std::io::IsTerminal;

use crate::ui;

/// Returns `given` when the user passed the flag; otherwise asks `question` on a terminal
/// (`Create Resource [Y/n]`), or, with no terminal attached, takes yes and says so. Never
/// blocks a script. Prompts come before anything is rendered: Ctrl-C at one leaves nothing.
pub fn confirm(given: Option<bool>, question: &str, flag: &str) -> anyhow::Result<bool> {
    if let Some(answer) = given {
        return Ok(answer);
    }
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        ui::note(&format!(
            "no terminal: taking yes for `{flag}` (pass `{flag}=false` to skip)"
        ));
        return Ok(true);
    }
    restore_cursor_on_ctrl_c();
    let answer = dialoguer::Confirm::new()
        .with_prompt(question)
        .default(true)
        .interact_opt()
        .map_err(|dialoguer::Error::IO(err)| {
            if err.kind() == std::io::ErrorKind::Interrupted {
                let _ = console::Term::stderr().show_cursor();
                anyhow::Error::new(Interrupted)
            } else {
                anyhow::Error::new(err).context("cannot read the answer")
            }
        })?;
    answer.ok_or_else(|| {
        crate::error::user_error(
            "cancelled; nothing was written",
            format!("pass `{flag}=true` or `{flag}=false` to answer without a prompt"),
        )
    })
}

/// Ctrl-C at a prompt: the read was interrupted. The process exits as a shell expects of
/// SIGINT (130), whether this error or the signal handler gets there first.
#[derive(Debug)]
pub struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted at a prompt; nothing was written")
    }
}

impl std::error::Error for Interrupted {}

/// The exit code of a process stopped by SIGINT.
pub const INTERRUPTED_EXIT_CODE: u8 = 130;

/// The prompt hides the cursor; a Ctrl-C would leave it hidden in the user's terminal. Show it
/// again and exit as a shell expects of SIGINT (130).
fn restore_cursor_on_ctrl_c() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = ctrlc::set_handler(|| {
            let _ = console::Term::stderr().show_cursor();
            std::process::exit(i32::from(INTERRUPTED_EXIT_CODE));
        });
    });
}
