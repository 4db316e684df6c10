//! The `event-audit` binary: parses arguments, sets up telemetry, dispatches.

fn main() -> std::process::ExitCode {
    let cli = event_audit::parse();
    event_audit::init_telemetry(cli.log_json, event_audit::default_log_filter(&cli));
    match event_audit::dispatch(cli) {
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
            eprintln!(
                "event-audit: {}",
                event_audit_base::logging::error_line(&err)
            );
            std::process::ExitCode::from(2)
        }
    }
}
