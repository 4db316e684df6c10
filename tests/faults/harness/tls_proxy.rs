//! A TLS-terminating proxy for one test: TLS accepted on a free port of 127.0.0.1 with the
//! certificate and key of a directory written by [`super::write_tls_files`], the plain bytes
//! passed to an upstream address (the in-process REST simulator, s3s-fs) and back. Optionally it
//! requires a client certificate signed by that directory's CA. Dropped, it stops accepting.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::{CancellationToken, DropGuard};

pub(crate) struct TlsProxy {
    addr: SocketAddr,
    _stop: DropGuard,
}

fn certs(path: &Path) -> Vec<CertificateDer<'static>> {
    CertificateDer::pem_file_iter(path)
        .expect("read a PEM file")
        .collect::<Result<_, _>>()
        .expect("PEM certificates")
}

impl TlsProxy {
    /// HTTPS at a free port in front of `upstream`, with `dir`'s server certificate; with
    /// `client_certs`, a client certificate of `dir`'s CA required.
    pub(crate) async fn start(upstream: SocketAddr, dir: &Path, client_certs: bool) -> TlsProxy {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .expect("protocol versions");
        let builder = if client_certs {
            let mut roots = rustls::RootCertStore::empty();
            for c in certs(&dir.join("ca.pem")) {
                roots.add(c).expect("CA");
            }
            let verifier =
                rustls::server::WebPkiClientVerifier::builder_with_provider(roots.into(), provider)
                    .build()
                    .expect("client verifier");
            builder.with_client_cert_verifier(verifier)
        } else {
            builder.with_no_client_auth()
        };
        let key = PrivateKeyDer::from_pem_file(dir.join("server-key.pem")).expect("server key");
        let config = builder
            .with_single_cert(certs(&dir.join("server-cert.pem")), key)
            .expect("server certificate");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let stop = CancellationToken::new();
        let token = stop.clone();
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    _ = token.cancelled() => return,
                    a = listener.accept() => a,
                };
                let Ok((sock, _)) = accepted else { continue };
                let (acceptor, token) = (acceptor.clone(), token.clone());
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(sock).await else {
                        return;
                    };
                    let Ok(mut up) = TcpStream::connect(upstream).await else {
                        return;
                    };
                    tokio::select! {
                        _ = token.cancelled() => {}
                        _ = tokio::io::copy_bidirectional(&mut tls, &mut up) => {}
                    }
                });
            }
        });
        TlsProxy {
            addr,
            _stop: stop.drop_guard(),
        }
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `https://127.0.0.1:PORT`.
    pub(crate) fn url(&self) -> String {
        format!("https://{}", self.addr)
    }
}
