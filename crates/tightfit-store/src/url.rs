//! Store URLs as they may be shown: in errors, logs and reports, never with a password.

/// `url` with the password of its user part removed: `redis://user:secret@host/0` →
/// `redis://user@host/0`. A URL without one comes back as it was.
pub(crate) fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    let path = without_password_parameter(path);
    match authority.rsplit_once('@') {
        Some((user, host)) => {
            let user = user.split_once(':').map_or(user, |(name, _password)| name);
            let at = if user.is_empty() { "" } else { "@" };
            format!("{scheme}://{user}{at}{host}{path}")
        }
        None => format!("{scheme}://{authority}{path}"),
    }
}

/// A path and query without a `password=` parameter (PostgreSQL URLs may carry one).
fn without_password_parameter(path: &str) -> String {
    let Some((before, query)) = path.split_once('?') else { return path.to_string() };
    let kept: Vec<&str> = query.split('&').filter(|pair| !pair.starts_with("password=")).collect();
    if kept.is_empty() {
        before.to_string()
    } else {
        format!("{before}?{}", kept.join("&"))
    }
}

#[cfg(test)]
mod tests {
    use super::redacted;

    #[test]
    fn passwords_never_show() {
        assert_eq!(redacted("redis://u:s3cret@h:6379/2"), "redis://u@h:6379/2");
        assert_eq!(redacted("redis://:s3cret@h/"), "redis://h/");
        assert_eq!(
            redacted("postgres://app:p%40ss@db.internal/app?sslmode=prefer"),
            "postgres://app@db.internal/app?sslmode=prefer"
        );
        assert_eq!(redacted("redis://h:6379"), "redis://h:6379");
        assert_eq!(redacted("postgres://h/db?password=x&sslmode=disable"), "postgres://h/db?sslmode=disable");
        assert_eq!(redacted("postgres://h/db?password=x"), "postgres://h/db");
        assert_eq!(redacted("sessions.db"), "sessions.db");
    }
}
