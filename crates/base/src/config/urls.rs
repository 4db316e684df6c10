//! The database and NATS URLs: whether one is usable, and the redaction every message, log
//! line and report uses (credentials and query strings never shown).

/// Why a PostgreSQL URL is unusable, if it is.
pub fn database_url_problem(url: &str) -> Option<&'static str> {
    let Ok(u) = url::Url::parse(url) else {
        return Some("not a URL (expected postgres://USER@HOST:PORT/DATABASE)");
    };
    if !matches!(u.scheme(), "postgres" | "postgresql") {
        return Some("the scheme must be postgres:// or postgresql://");
    }
    if u.host_str().is_none_or(str::is_empty) {
        return Some("the URL names no host (expected postgres://USER@HOST:PORT/DATABASE)");
    }
    if u.path().trim_start_matches('/').is_empty() {
        return Some("the URL names no database (expected postgres://USER@HOST:PORT/DATABASE)");
    }
    None
}

/// Why a NATS URL (or comma-separated list) is unusable, if it is.
pub fn nats_url_problem(url: &str) -> Option<&'static str> {
    for part in url.split(',') {
        let part = part.trim();
        let with_scheme = if part.contains("://") {
            part.to_owned()
        } else {
            format!("nats://{part}")
        };
        let Ok(u) = url::Url::parse(&with_scheme) else {
            return Some("not a NATS URL (expected nats://HOST:PORT)");
        };
        if !matches!(u.scheme(), "nats" | "tls" | "ws" | "wss") {
            return Some("the scheme must be nats://, tls://, ws:// or wss://");
        }
        if u.host_str().is_none_or(str::is_empty) {
            return Some("the URL names no host");
        }
    }
    None
}

/// `text` (a URL with `scheme`) with everything before its last `@` hidden, and its query: a URL
/// read without a user part (a typo such as `postgres:/u:pw@h/db`, where the parser sees a
/// path) may still hold a password there.
fn hide_before_at(scheme: &str, text: &str) -> String {
    let rest = text.rsplit_once('@').map_or("", |(_, rest)| rest);
    match rest.split_once('?') {
        Some((rest, _)) => format!("{scheme}://***@{rest}?..."),
        None => format!("{scheme}://***@{rest}"),
    }
}

/// `text` with the user and password part of every `scheme://user:password@host` in it hidden
/// (`scheme://***@host`): for messages that quote what a settings file holds, wherever a URL
/// was written (a URL pasted as a duration is still a URL with its password). Everything up to
/// the last `@` before the next whitespace is hidden, path included: a mistyped URL can hold its
/// password there. Only whitespace ends a URL here, not the quotes, backticks and commas that
/// messages put around values: a password may hold those too (the `settings` fuzz target found
/// one with a backtick shown), and hiding too much is safe where hiding too little is not.
pub fn hide_credentials(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        let end = tail.find(char::is_whitespace).unwrap_or(tail.len());
        match tail[..end].rfind('@') {
            Some(i) => {
                out.push_str("***");
                rest = &tail[i..];
            }
            None => rest = tail,
        }
    }
    out.push_str(rest);
    out
}

/// A database URL without its password and query string (`?password=` is valid for libpq).
pub fn redact_url(url: &str) -> String {
    match url::Url::parse(url) {
        // No credentials where a URL keeps them, yet an `@`; or a second `@` past them (a
        // mistyped URL can hold a password in its path): everything up to the last one hidden.
        Ok(u)
            if (u.username().is_empty() && u.password().is_none() && url.contains('@'))
                || url.matches('@').count() > 1 =>
        {
            hide_before_at(u.scheme(), url)
        }
        Ok(mut u) => {
            if u.password().is_some() {
                let _ = u.set_password(Some("***"));
            }
            if u.query().is_some() {
                u.set_query(Some("..."));
            }
            u.to_string()
        }
        Err(_) => "<unparsable URL>".into(),
    }
}

/// A NATS URL (or comma-separated list) with any credentials replaced.
pub fn redact_nats_url(url: &str) -> String {
    url.split(',')
        .map(|part| {
            let part = part.trim();
            let with_scheme = if part.contains("://") {
                part.to_owned()
            } else {
                format!("nats://{part}")
            };
            match url::Url::parse(&with_scheme) {
                // As for a database URL: no user where the parser keeps one, yet an `@`; or a
                // second `@` past it (a password in the path): hidden up to the last one.
                Ok(u)
                    if (with_scheme.contains('@') && u.username().is_empty())
                        || with_scheme.matches('@').count() > 1 =>
                {
                    hide_before_at(u.scheme(), &with_scheme)
                }
                Ok(mut u) if !u.username().is_empty() || u.password().is_some() => {
                    let _ = u.set_username("***");
                    let _ = u.set_password(None);
                    u.to_string()
                }
                Ok(u) => u.to_string(),
                Err(_) => "<unparsable NATS URL>".to_owned(),
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_at_sign_hides_everything_before_it() {
        // Found by the `settings` fuzz target: a password in the path of a mistyped URL.
        let shown = redact_url("postsreg://u:x@h,i//:tiadudbet-pw@nats.example:4222/db");
        assert!(!shown.contains("tiadudbet-pw"), "{shown}");
        assert_eq!(shown, "postsreg://***@nats.example:4222/db");
    }

    #[test]
    fn a_second_at_sign_in_a_nats_url_hides_everything_before_it_too() {
        // Found by the `settings` fuzz target: a NATS URL with a user kept a password that a
        // mistyped second URL left in its path (`https:` reads `\` as `/`).
        for url in [
            "nats://u:pw@n1:4222/x//@nats:S3cret-pw@@",
            "n:2@@,https://\\\\t-3cret-p@nq.1pstgres://@ucsp-pw@..:....S3cret-pw@@@@",
        ] {
            let r = redact_nats_url(url);
            assert!(!r.contains("S3cret-pw"), "{r}");
        }
        assert_eq!(
            redact_nats_url("nats://u:pw@n1:4222/x//@nats:S3cret-pw@h2:4222"),
            "nats://***@h2:4222"
        );
        assert_eq!(redact_nats_url("nats://u:pw@n1:4222"), "nats://***@n1:4222");
    }

    #[test]
    fn credentials_never_survive_redaction() {
        let r = redact_nats_url("nats://user:secret@h1:4222, nats://h2:4222");
        assert!(!r.contains("secret") && !r.contains("user"), "{r}");
        assert!(r.contains("h2"), "{r}");
        let d = redact_url("postgres://u:pw@h/db?password=hunter2");
        assert!(!d.contains("pw") && !d.contains("hunter2"), "{d}");
    }

    /// Found by tests/it/hostile_state.rs: one slash short, a URL parses with the user and
    /// password in its path, and the redaction showed them.
    #[test]
    fn a_password_where_the_parser_sees_a_path_is_hidden_too() {
        for url in [
            "postgres:./audit:S3cret@db:5432/audit",
            "postgres:/audit:S3cret@db:5432/audit?sslmode=require",
            "postgres:audit:S3cret@db/audit",
        ] {
            let r = redact_url(url);
            assert!(!r.contains("S3cret") && r.contains("***@db"), "{url}: {r}");
        }
        for url in [
            "nats:/ingest:S3cret@nats:4222",
            "nats://h1:4222, nats:/u:S3cret@h2",
        ] {
            let r = redact_nats_url(url);
            assert!(!r.contains("S3cret") && r.contains("***@"), "{url}: {r}");
        }
        assert_eq!(redact_url("postgres://db/audit"), "postgres://db/audit");
        let m = "`postgres://audit:S3cret@db/a` is not a duration; nats://u:S3cret@n, x://h/p";
        let h = hide_credentials(m);
        assert_eq!(
            h,
            "`postgres://***@db/a` is not a duration; nats://***@n, x://h/p"
        );
        // Found by the `settings` fuzz target: a password after a second `//` (the parser reads
        // it as the path) was shown.
        let typo = "postsreg://:***@nats.intes//:S3cret@nats.intes:4222";
        assert_eq!(hide_credentials(typo), "postsreg://***@nats.intes:4222");
    }

    /// Found by the `settings` fuzz target: a password holding a backtick (which messages put
    /// around the values they quote) was shown past it in a duration's refusal.
    #[test]
    fn a_password_holding_what_messages_quote_with_is_hidden_whole() {
        for pw in ["S3cret`pw", "S3cret\"pw", "S3cret'pw", "S3cret,pw"] {
            let m = format!("unknown unit `x://:{pw}@h/y` in `20x://:{pw}@h/y` (ms, s)");
            let h = hide_credentials(&m);
            assert!(!h.contains("S3cret"), "{h}");
            assert_eq!(h, "unknown unit `x://***@h/y` in `20x://***@h/y` (ms, s)");
        }
        // A list of URLs without spaces is hidden up to its last `@`: more than needed, never
        // less.
        assert_eq!(
            hide_credentials("`nats://u:p1@a,nats://v:p2@b`"),
            "`nats://***@b`"
        );
    }
}
