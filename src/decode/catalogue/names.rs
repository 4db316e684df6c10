//! Event-name rules: a full name is `<type>-<version>`, the version being the last `-v<digits>`
//! or `-<major>.<minor>.<patch>` suffix.

/// Splits a full event name into `(type, version)`; `None` when it has no version suffix.
///
/// ```
/// use event_audit::decode::catalogue::split_name;
/// assert_eq!(split_name("tech.kraken.workflow.created.v1-v1"), Some(("tech.kraken.workflow.created.v1", "v1")));
/// assert_eq!(split_name("lifecycle.support-site.sale-1.0.0"), Some(("lifecycle.support-site.sale", "1.0.0")));
/// assert_eq!(split_name("account.created"), None);
/// ```
pub fn split_name(name: &str) -> Option<(&str, &str)> {
    let dash = name.rfind('-')?;
    let (ty, version) = (&name[..dash], &name[dash + 1..]);
    let is_v = version.len() > 1
        && version.starts_with('v')
        && version[1..].bytes().all(|b| b.is_ascii_digit());
    let mut parts = 0;
    let is_semver = version.split('.').all(|p| {
        parts += 1;
        !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())
    }) && parts == 3;
    (!ty.is_empty() && (is_v || is_semver)).then_some((ty, version))
}

#[cfg(test)]
mod tests {
    use super::split_name;

    #[test]
    fn golden_name_splits() {
        let cases = [
            ("account.created-v1", Some(("account.created", "v1"))),
            (
                "tech.kraken.workflow.created.v1-v1",
                Some(("tech.kraken.workflow.created.v1", "v1")),
            ),
            (
                "comms.push-notification.received-unregistered-or-expired-token-v1",
                Some((
                    "comms.push-notification.received-unregistered-or-expired-token",
                    "v1",
                )),
            ),
            (
                "lifecycle.support-site.sale-1.0.0",
                Some(("lifecycle.support-site.sale", "1.0.0")),
            ),
            (
                "billing.ledger.entry_posted-v12",
                Some(("billing.ledger.entry_posted", "v12")),
            ),
            (
                "leads.opportunity.offer-group.created-v2",
                Some(("leads.opportunity.offer-group.created", "v2")),
            ),
            ("account.created", None),
            ("account.created-v", None),
            ("account.created-vx", None),
            ("account.created-V1", None),
            ("account.created-1.0", None),
            ("account.created-1.0.0.0", None),
            ("account.created-1..0", None),
            ("-v1", None),
            ("", None),
            (
                "loyalty-points.user-role-removal-v1",
                Some(("loyalty-points.user-role-removal", "v1")),
            ),
        ];
        for (name, want) in cases {
            assert_eq!(split_name(name), want, "{name}");
        }
    }
}
