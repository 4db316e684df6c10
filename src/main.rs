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
            eprintln!("event-audit: {}", message(&err));
            std::process::ExitCode::from(2)
        }
    }
}

/// The error and its causes, each said once (a cause already quoted by its parent is skipped).
fn message(err: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in err.chain() {
        let c = cause.to_string();
        if !text.contains(&c) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&c);
        }
    }
    text
}
