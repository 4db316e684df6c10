//! A JetStream stream per test, with subjects `NAME.>`, deleted when the guard drops.

use std::time::Duration;

use async_nats::jetstream::{self, consumer, stream};

use super::{nats_url, unique};
use event_audit::config::{NatsSettings, Settings, StreamSettings};

/// A JetStream stream of this test alone, with subjects `NAME.>`; deleted when dropped (also
/// when the test panics).
pub(crate) struct TestStream {
    pub name: String,
    pub consumer: String,
    /// The connection the stream was made on, kept open for the test's life.
    #[allow(dead_code)]
    pub client: async_nats::Client,
    pub js: jetstream::Context,
}

impl TestStream {
    pub(crate) async fn create(tag: &str) -> TestStream {
        let name = unique(tag);
        let consumer = format!("{name}_C");
        let client = async_nats::connect(nats_url())
            .await
            .expect("connect to NATS");
        let js = jetstream::new(client.clone());
        js.create_stream(stream::Config {
            name: name.clone(),
            subjects: vec![format!("{name}.>")],
            storage: stream::StorageType::File,
            // Insurance should a test process die before its guard runs.
            max_age: Duration::from_secs(3600),
            ..Default::default()
        })
        .await
        .expect("create the test stream");
        TestStream {
            name,
            consumer,
            client,
            js,
        }
    }

    /// Settings naming this stream, its subjects and its consumer on the test server; the rest
    /// default. The daemon's, the simulator's and the publisher's settings start here.
    pub(crate) fn settings(&self) -> Settings {
        Settings {
            nats: NatsSettings {
                url: nats_url(),
                ..NatsSettings::default()
            },
            stream: StreamSettings {
                name: self.name.clone(),
                subjects: vec![self.subjects()],
                consumer: self.consumer.clone(),
                ..StreamSettings::default()
            },
            ..Settings::default()
        }
    }

    /// The stream's subjects, as `--subjects` takes them.
    pub(crate) fn subjects(&self) -> String {
        format!("{}.>", self.name)
    }

    /// The subject prefix for bare payloads named by their subject.
    pub(crate) fn prefix(&self) -> String {
        format!("{}.", self.name)
    }

    pub(crate) fn subject(&self, rest: &str) -> String {
        format!("{}.{rest}", self.name)
    }

    /// Publishes one message and returns its stream sequence.
    pub(crate) async fn publish(
        &self,
        subject: &str,
        headers: &[(&str, &str)],
        bytes: &[u8],
    ) -> u64 {
        let ack = if headers.is_empty() {
            self.js
                .publish(subject.to_owned(), bytes.to_vec().into())
                .await
        } else {
            let mut h = async_nats::HeaderMap::new();
            for (k, v) in headers {
                h.append(*k, *v);
            }
            self.js
                .publish_with_headers(subject.to_owned(), h, bytes.to_vec().into())
                .await
        };
        let ack = ack
            .expect("publish")
            .await
            .expect("JetStream stored the message");
        assert_eq!(ack.stream, self.name);
        ack.sequence
    }

    pub(crate) async fn consumer_info(&self) -> consumer::Info {
        let stream = self.js.get_stream(&self.name).await.expect("get stream");
        stream
            .consumer_info(&self.consumer)
            .await
            .expect("consumer info")
    }

    pub(crate) async fn delete_consumer(&self) {
        let stream = self.js.get_stream(&self.name).await.expect("get stream");
        stream
            .delete_consumer(&self.consumer)
            .await
            .expect("delete consumer");
    }

    /// Publishes `n` messages of the load mix (seeded) to subject `NAME.load`, in-process.
    pub(crate) async fn publish_load(&self, n: usize, seed: u64) {
        let mut s = self.settings();
        s.publish.count = n;
        s.publish.subject = self.subject("load");
        s.publish.seed = Some(seed);
        let (sent, _) = event_audit::test_support::dev::publish::run(&s, None)
            .await
            .expect("publish the load");
        assert_eq!(sent, n);
        let held = self
            .js
            .get_stream(&self.name)
            .await
            .expect("get stream")
            .info()
            .await
            .expect("stream info")
            .state
            .messages;
        assert!(
            held >= n as u64,
            "stream holds {held} messages after publishing {n}"
        );
    }
}

impl Drop for TestStream {
    fn drop(&mut self) {
        // Drop cannot await, and the test's runtime may be the one running us: delete from a
        // thread with its own runtime and connection.
        let name = self.name.clone();
        let deleted = super::blocking(move || {
            Box::pin(async move {
                let client = async_nats::connect(nats_url()).await.ok()?;
                let js = jetstream::new(client);
                match js.delete_stream(&name).await {
                    Ok(_) => Some(()),
                    Err(e) => {
                        eprintln!("could not delete stream {name}: {e}");
                        None
                    }
                }
            })
        });
        if deleted.is_none() {
            eprintln!("stream {} may be left behind", self.name);
        }
    }
}
