//! The `event-audit` binary: parses arguments, sets up tracing, calls into the library.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = event_audit::cli::Cli::parse();
    event_audit::cli::init_tracing(&cli);
    match event_audit::cli::run(cli) {
        Ok(code) => code,
        // `event-audit catalogue list | head` is not an error.
        Err(err)
            if err
                .downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) =>
        {
            std::process::ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("event-audit: {err:#}");
            std::process::ExitCode::from(2)
        }
    }
}
