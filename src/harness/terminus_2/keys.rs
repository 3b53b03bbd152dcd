//! terminus-2's keystrokes as one shell command (docs/harnesses.md). The
//! reference types them into a persistent tmux session; here the client's shell runs one command
//! per answer, so the keystrokes are read as a terminal's line editor would read them: printable
//! keys gather into the line being typed, a newline (or the `Enter` key) runs it, and the lines
//! run in order in one shell. The keys a shell command cannot carry are never dropped silently:
//!
//! - `C-c` drops the line being typed and shows `^C` (nothing runs between answers here, so
//!   there is nothing to interrupt); `C-d` shows `^D`; `C-z` shows `^Z`;
//! - any other tmux key name (`Escape`, `Tab`, `Up`, `C-x`, `M-x`, …) shows a note that it was
//!   not sent;
//! - text left typed without a newline at the end is not run, and a note says so;
//! - an empty keystroke with a duration waits (`sleep`), as the reference's does.
//!
//! The durations (each 1.0 s when absent, clamped to [0, 60]) bound the command's timeout by the
//! reference's formula: min(⌈Σd·1000 + 10000 + 8000·n⌉, 180000) ms, at least 1000.

use super::parse::Keystrokes;

/// One answer's command and the timeout its durations allow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    pub command: String,
    pub timeout_ms: u64,
}

/// The keys that are key names rather than text.
const NAMED: [&str; 24] = [
    "Escape", "Tab", "BTab", "BSpace", "Space", "Up", "Down", "Left", "Right", "Home", "End",
    "PageUp", "PageDown", "PPage", "NPage", "IC", "DC", "F1", "F2", "F3", "F4", "F5", "F6", "F7",
];

enum Key<'a> {
    Enter,
    Interrupt,
    EndOfInput,
    Suspend,
    Other(&'a str),
}

fn key(keys: &str) -> Option<Key<'_>> {
    match keys {
        "Enter" | "C-m" | "C-j" | "KPEnter" => Some(Key::Enter),
        "C-c" => Some(Key::Interrupt),
        "C-d" => Some(Key::EndOfInput),
        "C-z" => Some(Key::Suspend),
        _ => {
            let modified = |prefix: &str| {
                keys.strip_prefix(prefix)
                    .is_some_and(|rest| rest.chars().count() == 1)
            };
            let function = keys
                .strip_prefix('F')
                .and_then(|n| n.parse::<u8>().ok())
                .is_some_and(|n| (1..=12).contains(&n));
            (NAMED.contains(&keys) || modified("C-") || modified("M-") || function)
                .then_some(Key::Other(keys))
        }
    }
}

/// The command one answer's keystrokes become.
pub fn batch(commands: &[Keystrokes]) -> Batch {
    let mut script: Vec<String> = Vec::new();
    let mut line = String::new();
    let mut seconds = 0.0f64;
    for command in commands {
        let duration = command.duration.unwrap_or(1.0);
        let duration = if duration.is_finite() {
            duration.clamp(0.0, 60.0)
        } else {
            1.0
        };
        seconds += duration;
        match key(&command.keys) {
            Some(Key::Enter) => run(&mut script, &mut line),
            Some(Key::Interrupt) => {
                line.clear();
                script.push("echo '^C'".to_owned());
            }
            Some(Key::EndOfInput) => script.push("echo '^D'".to_owned()),
            Some(Key::Suspend) => script.push("echo '^Z'".to_owned()),
            Some(Key::Other(name)) => script.push(note(&format!(
                "[key {name} not sent: the keystrokes of a reply run as one shell command, with no program waiting for keys]"
            ))),
            None if command.keys.is_empty() => {
                if duration > 0.0 {
                    script.push(format!("sleep {}", seconds_text(duration)));
                }
            }
            None => {
                for c in command.keys.chars() {
                    if c == '\n' {
                        run(&mut script, &mut line);
                    } else {
                        line.push(c);
                    }
                }
            }
        }
    }
    if !line.trim().is_empty() {
        script.push(note(&format!(
            "[typed without a final newline, so not run: {line}]"
        )));
    }
    let command = if script.is_empty() {
        "true".to_owned()
    } else {
        script.join("\n")
    };
    Batch {
        command,
        timeout_ms: timeout_ms(seconds, commands.len()),
    }
}

/// The line typed so far runs (a blank one is a fresh prompt: nothing to run).
fn run(script: &mut Vec<String>, line: &mut String) {
    let typed = std::mem::take(line);
    if !typed.trim().is_empty() {
        script.push(typed);
    }
}

/// A line the model reads in the output.
fn note(text: &str) -> String {
    let quoted = shlex::try_quote(text).map_or_else(
        |_| "'[a note could not be shown]'".to_owned(),
        std::borrow::Cow::into_owned,
    );
    format!("printf '%s\\n' {quoted}")
}

fn seconds_text(seconds: f64) -> String {
    let text = format!("{seconds:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss
)]
fn timeout_ms(seconds: f64, count: usize) -> u64 {
    let ms = (seconds * 1000.0 + 10_000.0 + 8_000.0 * count as f64).ceil();
    (ms.min(180_000.0) as u64).max(1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(list: &[(&str, Option<f64>)]) -> Vec<Keystrokes> {
        list.iter()
            .map(|(k, d)| Keystrokes {
                keys: (*k).to_owned(),
                duration: *d,
            })
            .collect()
    }

    #[test]
    fn lines_ending_in_a_newline_run_in_order() {
        let batch = batch(&keys(&[
            ("cd project\n", Some(0.1)),
            ("ls -la\nmake\n", Some(1.0)),
        ]));
        assert_eq!(batch.command, "cd project\nls -la\nmake");
        // 1.1 s of durations + 10 s + 8 s per command.
        assert_eq!(batch.timeout_ms, 27_100);
    }

    /// The reference's `long_wait_command_has_capture_budget_after_sleep`: one wait of 60 s →
    /// 78 s.
    #[test]
    fn a_long_wait_sleeps_and_bounds_the_timeout() {
        let batch = batch(&keys(&[("", Some(60.0))]));
        assert_eq!(batch.command, "sleep 60");
        assert_eq!(batch.timeout_ms, 78_000);
        assert_eq!(
            self::batch(&keys(&[("", Some(500.0))])).timeout_ms,
            78_000,
            "clamped to 60 s"
        );
    }

    #[test]
    fn the_timeout_is_capped_and_floored() {
        let many = vec![("ls\n", Some(60.0)); 10];
        assert_eq!(batch(&keys(&many)).timeout_ms, 180_000);
        assert_eq!(batch(&[]).timeout_ms, 10_000);
        assert_eq!(batch(&[]).command, "true");
    }

    #[test]
    fn text_gathers_until_enter_and_c_c_drops_it() {
        let batch = batch(&keys(&[
            ("git log", None),
            ("Enter", None),
            ("vim x", None),
            ("C-c", None),
            ("echo done\n", None),
        ]));
        assert_eq!(batch.command, "git log\necho '^C'\necho done");
    }

    #[test]
    fn keys_a_command_cannot_carry_are_told_not_dropped() {
        let batch = batch(&keys(&[
            ("Escape", None),
            ("C-d", None),
            ("M-x", None),
            ("q", None),
        ]));
        assert_eq!(
            batch.command,
            "printf '%s\\n' '[key Escape not sent: the keystrokes of a reply run as one shell command, with no program waiting for keys]'\necho '^D'\nprintf '%s\\n' '[key M-x not sent: the keystrokes of a reply run as one shell command, with no program waiting for keys]'\nprintf '%s\\n' '[typed without a final newline, so not run: q]'"
        );
    }

    #[test]
    fn odd_durations_are_bounded() {
        let batch = batch(&keys(&[
            ("", Some(-3.0)),
            ("", Some(f64::NAN)),
            ("", Some(0.25)),
        ]));
        assert_eq!(batch.command, "sleep 1\nsleep 0.25");
    }
}
