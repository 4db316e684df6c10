//! A list of NATS seed servers is taken as every NATS client takes it: comma-separated, with or
//! without schemes, credentials in any of them taken out, each server its own address. A list
//! whose first server is down connects to the one that answers.

use event_audit::config::NatsSettings;
use event_audit::test_support::bus::Bus;

fn shared_nats() -> String {
    std::env::var("NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".to_owned())
}

/// A port nothing listens on (bound, then released).
fn dead_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

#[tokio::test]
async fn a_comma_separated_server_list_connects_to_the_server_that_answers() {
    let live = shared_nats();
    let bare = live.trim_start_matches("nats://").to_owned();
    let dead = dead_port();
    for url in [
        format!("nats://127.0.0.1:{dead},{live}"),
        format!("127.0.0.1:{dead}, {bare}"),
        format!("nats://someone:secret@127.0.0.1:{dead},{live}"),
    ] {
        let s = NatsSettings {
            url: url.clone(),
            ..NatsSettings::default()
        };
        let bus = Bus::connect(&s)
            .await
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        assert!(bus.connected(), "{url}: not connected");
    }
}

#[tokio::test]
async fn a_list_of_servers_that_are_all_down_is_refused_naming_them_without_credentials() {
    let (a, b) = (dead_port(), dead_port());
    let s = NatsSettings {
        url: format!("nats://someone:secret@127.0.0.1:{a},127.0.0.1:{b}"),
        ..NatsSettings::default()
    };
    let e = Bus::connect(&s).await.err().expect("no server answers");
    let text = format!("{e}");
    assert!(!text.contains("secret"), "{text}");
    assert!(
        text.contains(&a.to_string()) && text.contains(&b.to_string()),
        "{text}"
    );
}
