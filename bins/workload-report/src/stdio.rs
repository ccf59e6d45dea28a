//! Writing to stdout and stderr without panicking when the reader has gone away.
//!
//! `workload-report eval … | head` closes the pipe after a few lines; `print!` would then panic
//! ("failed printing to stdout: Broken pipe"). As ripgrep does, a closed pipe ends the output
//! quietly: [`print`] treats it as written, and the command exits with the code it would have had
//! (the run's status for `run`, 0 for `routes`). Any other write error is returned.

use std::io::{ErrorKind, Write};

/// Writes `text` to stdout and flushes it; a closed pipe is not an error (see the module docs).
pub(crate) fn print(text: &str) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    quiet_on_closed_pipe(
        stdout
            .write_all(text.as_bytes())
            .and_then(|()| stdout.flush()),
    )
}

/// Writes `line` and a line break to stderr (progress and log lines); a stderr that cannot be
/// written to (`2>&1 | head`) loses the line, it never panics.
pub(crate) fn log(line: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "{line}");
}

fn quiet_on_closed_pipe(result: std::io::Result<()>) -> std::io::Result<()> {
    match result {
        Err(error) if error.kind() == ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_closed_pipe_is_quiet() {
        let closed = std::io::Error::from(ErrorKind::BrokenPipe);
        assert!(quiet_on_closed_pipe(Err(closed)).is_ok());
        let full = std::io::Error::from(ErrorKind::StorageFull);
        assert!(quiet_on_closed_pipe(Err(full)).is_err());
    }
}
