//! The `strata` binary: everything is in the library (src/lib.rs), so that tests
//! can walk the command tree clap builds (every command and flag) as the
//! binary parses it.

fn main() -> std::process::ExitCode {
    strata_cli::main()
}
