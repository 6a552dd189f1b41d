//! What `iris` prints on standard output, for a person or a pipe.
//!
//! `println!` panics when the reader has gone ("failed printing to stdout: Broken pipe", as in
//! `iris approvals list | head -1`): Rust ignores SIGPIPE, and the workspace forbids the unsafe
//! call that would restore it. Every CLI line goes through [`write`] instead (the macros
//! `out!` and `outln!`, `print!`'s and `println!`'s twins), which ends the process quietly, as
//! Unix tools do. The server's own start-up lines (`iris serve`) keep `println!`: a server does
//! not stop because its log's reader did.

/// Writes `args` to standard output (line-buffered, as `print!`). When the reader has closed
/// the pipe (EPIPE) the process ends at once with exit code 0 and nothing more is said; any
/// other write error ends it with exit code 1 after one line on standard error. Never panics.
pub fn write(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let written = std::io::stdout().lock().write_fmt(args);
    match written {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => {
            eprintln!("iris: could not write to standard output: {e}");
            std::process::exit(1)
        }
    }
}

/// `print!` through [`write`].
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::stdout::write(format_args!($($arg)*))
    };
}

/// `println!` through [`write`].
macro_rules! outln {
    () => {
        $crate::cli::stdout::write(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::cli::stdout::write(format_args!("{}\n", format_args!($($arg)*)))
    };
}
