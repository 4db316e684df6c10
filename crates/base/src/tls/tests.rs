//! The refusals told as a real handshake meets them: a server of this test (tokio-rustls on
//! 127.0.0.1) presenting a certificate from a CA the client does not trust, an expired one, one
//! for another name, and one that is right; each through [`super::client_config`] and
//! [`super::refusal`].

use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};

use super::refusal::Hint;
use super::{client_config, refusal, Peer};

struct Ca {
    pem: String,
    issuer: Issuer<'static, KeyPair>,
}

fn ca(name: &str) -> Ca {
    let key = KeyPair::generate().expect("key");
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    let cert = params.self_signed(&key).expect("self-signed");
    Ca {
        pem: cert.pem(),
        issuer: Issuer::new(params, key),
    }
}

/// A leaf of `ca` for `names`, expired when `expired`.
fn leaf(
    ca: &Ca,
    names: &[&str],
    expired: bool,
) -> (CertificateDer<'static>, PrivateKeyDer<'static>) {
    let key = KeyPair::generate().expect("key");
    let mut params =
        CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
            .expect("params");
    if expired {
        params.not_before = rcgen::date_time_ymd(2020, 1, 1);
        params.not_after = rcgen::date_time_ymd(2021, 1, 1);
    }
    let cert = params.signed_by(&key, &ca.issuer).expect("signed");
    (
        cert.der().clone(),
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
    )
}

/// The handshake of a client trusting `trusted` (a CA's PEM) with a server presenting `cert`,
/// reached as `name`: `Ok` or the refusal.
async fn handshake(
    trusted: &str,
    cert: (CertificateDer<'static>, PrivateKeyDer<'static>),
    name: &str,
) -> Result<(), Option<super::Refusal>> {
    let server = rustls::ServerConfig::builder_with_provider(super::provider())
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(vec![cert.0], cert.1)
        .expect("server config");
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        if let Ok((sock, _)) = listener.accept().await {
            let _ = acceptor.accept(sock).await;
        }
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, trusted).expect("write");
    let peer = Peer::new("the test server", "test", Some(&ca_file), None, None);
    let config = client_config(&peer).expect("client config");
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let sock = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let server_name = ServerName::try_from(name.to_owned()).expect("name");
    match connector.connect(server_name, sock).await {
        Ok(_) => Ok(()),
        Err(e) => Err(refusal(&e)),
    }
}

#[tokio::test]
async fn each_refusal_says_why_and_what_the_certificate_held() {
    let company = ca("Company CA");
    let other = ca("Elsewhere CA");

    assert_eq!(
        handshake(
            &company.pem,
            leaf(&company, &["localhost"], false),
            "localhost"
        )
        .await,
        Ok(())
    );

    let r = handshake(
        &company.pem,
        leaf(&other, &["localhost"], false),
        "localhost",
    )
    .await
    .expect_err("another CA")
    .expect("a TLS refusal");
    assert_eq!(r.hint, Hint::Ca);
    assert!(
        r.reason.contains("CN=Elsewhere CA") && r.reason.contains("for localhost"),
        "{r:?}"
    );
    let line = r.line("the test server", "127.0.0.1:1", "test");
    assert!(
        line.starts_with("TLS refused with the test server at 127.0.0.1:1: "),
        "{line}"
    );
    assert!(
        line.contains("test.tls_ca_file") && !line.contains('\n'),
        "{line}"
    );

    let r = handshake(
        &company.pem,
        leaf(&company, &["localhost"], true),
        "localhost",
    )
    .await
    .expect_err("expired")
    .expect("a TLS refusal");
    assert_eq!(r.hint, Hint::Time);
    assert!(r.reason.contains("has expired"), "{r:?}");

    let r = handshake(
        &company.pem,
        leaf(&company, &["db.example"], false),
        "localhost",
    )
    .await
    .expect_err("another name")
    .expect("a TLS refusal");
    assert_eq!(r.hint, Hint::Name);
    assert!(
        r.reason.contains("is for db.example, not localhost"),
        "{r:?}"
    );
}

#[test]
fn errors_without_tls_in_them_are_no_refusal() {
    let e = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
    assert_eq!(refusal(&e), None);
}

#[test]
fn loopback_and_sockets_are_local() {
    for h in [
        "127.0.0.1",
        "127.3.2.1",
        "::1",
        "[::1]",
        "localhost",
        "/run/postgresql",
    ] {
        assert!(super::is_local(h), "{h}");
    }
    for h in ["10.0.0.1", "db.internal", "192.168.1.1", "localhost.evil"] {
        assert!(!super::is_local(h), "{h}");
    }
}
