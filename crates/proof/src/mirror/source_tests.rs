//! The read path's parsing of where a log is (a URL prefix, a file URL, a directory, a bucket),
//! how a copy under it is named, and the origin's directory name.

use super::*;

const T: Duration = Duration::from_secs(1);

#[test]
fn a_bucket_is_read_with_the_object_store_s_settings_and_named_by_its_location() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut settings = crate::config::ObjectStoreSettings {
        endpoint: Some("http://127.0.0.1:9".into()),
        path_style: true,
        ..Default::default()
    };
    for (file, set) in [("id", true), ("secret", false)] {
        let path = dir.path().join(file);
        std::fs::write(&path, "k").expect("write a credential file");
        if set {
            settings.access_key_id_file = Some(path);
        } else {
            settings.secret_access_key_file = Some(path);
        }
    }
    let s = Source::open("s3://bucket/log/tiles/", T, &settings, &Default::default())
        .expect("a bucket");
    assert!(matches!(s, Source::Store { .. }));
    assert_eq!(s.shown("checkpoint"), "s3://bucket/log/tiles/checkpoint");
    assert_eq!(
        s.child("ab12").shown("tile/0/000"),
        "s3://bucket/log/tiles/ab12/tile/0/000"
    );
    // Without credentials (neither files nor AWS_* here), refused, naming what to set.
    if std::env::var_os("AWS_ACCESS_KEY_ID").is_none() {
        let err = Source::open(
            "s3://bucket/log",
            T,
            &Default::default(),
            &Default::default(),
        )
        .err()
        .unwrap_or_default();
        assert!(err.contains("no S3 credentials"), "{err}");
    }
    // Elsewhere, as before.
    assert!(matches!(
        Source::open("/var/tiles", T, &settings, &Default::default()),
        Ok(Source::Dir(_))
    ));
}

#[test]
fn a_log_is_a_url_prefix_a_file_url_or_a_directory() {
    let Ok(Source::Http { base, .. }) = Source::parse("http://h:1/log", T, &Default::default())
    else {
        panic!("an HTTP prefix");
    };
    assert_eq!(base.as_str(), "http://h:1/log/");
    let s = Source::parse("https://u:secret@h/log/", T, &Default::default()).expect("https");
    assert_eq!(
        s.shown("tile/0/000"),
        "https://u:***@h/log/tile/0/000",
        "the password is never shown"
    );
    assert_eq!(
        s.child(&origin_dir("o")).shown("checkpoint"),
        format!("https://u:***@h/log/{}/checkpoint", origin_dir("o"))
    );
    let Ok(Source::Dir(d)) = Source::parse("file:///var/log/copy", T, &Default::default()) else {
        panic!("a file URL");
    };
    assert_eq!(d, PathBuf::from("/var/log/copy"));
    let Ok(Source::Dir(d)) = Source::parse("copy/log", T, &Default::default()) else {
        panic!("a directory");
    };
    assert_eq!(d, PathBuf::from("copy/log"));
    assert!(Source::parse("ftp://h/log", T, &Default::default()).is_err());
    assert!(Source::parse("file://host/x", T, &Default::default()).is_err());
}

#[test]
fn the_origin_directory_is_the_lowercase_hex_sha256_of_the_origin() {
    // `printf %s example.com/log | sha256sum`
    assert_eq!(
        origin_dir("example.com/log"),
        "4d3203c8f35cdf600e475f55fede6081a703d3d322f208865fca2ec4f0e030f8"
    );
}
