//! Yes/no questions, asked only when a person is at a terminal.

use std::io::IsTerminal;

use crate::ui;

/// Returns `given` when the user passed the flag; otherwise asks `question` on a terminal,
/// or, with no terminal attached, takes yes and says so. Never blocks a script.
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
    let answer = dialoguer::Confirm::new()
        .with_prompt(question)
        .default(true)
        .interact_opt()?;
    answer.ok_or_else(|| {
        ui::user_error(
            "cancelled; nothing was written",
            format!("pass `{flag}=true` or `{flag}=false` to answer without a prompt"),
        )
    })
}
