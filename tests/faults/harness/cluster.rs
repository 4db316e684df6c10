//! A real three-node NATS 2.9 JetStream cluster on loopback: one [`PrivateNats`] per node, each
//! with its own `server_name`, client port, store and a `cluster { name, listen, routes }` block
//! naming the other nodes' route ports. Nodes are killed and restarted by PID, one at a time,
//! keeping their port and store; the test's own client follows the cluster through every URL.

use std::time::{Duration, Instant};

use async_nats::jetstream;

use super::free_port;
use super::nats::{NatsConfig, PrivateNats};

/// The cluster's name in every node's `cluster` block.
const CLUSTER: &str = "event-audit-faults";

pub(crate) struct NatsCluster {
    pub nodes: Vec<PrivateNats>,
}

impl NatsCluster {
    /// Starts `n` nodes (route ports chosen first, so each node's routes name the others) and
    /// waits until JetStream answers with a meta leader.
    pub(crate) async fn start(n: usize) -> NatsCluster {
        let routes: Vec<u16> = (0..n).map(|_| free_port()).collect();
        let mut nodes = Vec::with_capacity(n);
        for (i, port) in routes.iter().enumerate() {
            let others: Vec<String> = routes
                .iter()
                .filter(|p| *p != port)
                .map(|p| format!("\"nats-route://127.0.0.1:{p}\""))
                .collect();
            let extra = format!(
                "server_name: {}\ncluster {{\n  name: {CLUSTER}\n  listen: \"127.0.0.1:{port}\"\n  routes: [{}]\n}}\n",
                Self::name(i),
                others.join(", ")
            );
            let config = NatsConfig {
                extra,
                ..NatsConfig::default()
            };
            nodes.push(PrivateNats::start(config).await);
        }
        let cluster = NatsCluster { nodes };
        cluster.wait_jetstream(Duration::from_secs(60)).await;
        cluster
    }

    /// The `server_name` of node `i`.
    pub(crate) fn name(i: usize) -> String {
        format!("n{}", i + 1)
    }

    /// The node whose `server_name` is `name`.
    pub(crate) fn index_of(&self, name: &str) -> usize {
        (0..self.nodes.len())
            .find(|i| Self::name(*i) == name)
            .unwrap_or_else(|| panic!("no node named {name}"))
    }

    /// Every node's client URL, comma-separated, as a user lists seed servers.
    pub(crate) fn urls(&self) -> String {
        let urls: Vec<String> = self.nodes.iter().map(PrivateNats::url).collect();
        urls.join(",")
    }

    /// A client given every node (it moves to a live one when its server dies).
    pub(crate) async fn client(&self) -> async_nats::Client {
        let urls: Vec<String> = self.nodes.iter().map(PrivateNats::url).collect();
        async_nats::ConnectOptions::new()
            .retry_on_initial_connect()
            .connect(urls)
            .await
            .expect("connect to the cluster")
    }

    pub(crate) async fn js(&self) -> jetstream::Context {
        jetstream::new(self.client().await)
    }

    /// Waits until a JetStream API call succeeds (the meta group has a leader).
    pub(crate) async fn wait_jetstream(&self, limit: Duration) {
        let js = self.js().await;
        let started = Instant::now();
        loop {
            // Any answer of the JetStream API, "no such stream" included, means a meta leader.
            let asked = tokio::time::timeout(Duration::from_secs(2), js.get_stream("PROBE")).await;
            if let Ok(Err(e)) = &asked {
                if let jetstream::context::GetStreamErrorKind::JetStream(e) = e.kind() {
                    if e.error_code() == jetstream::ErrorCode::STREAM_NOT_FOUND {
                        return;
                    }
                }
            }
            assert!(
                started.elapsed() < limit,
                "JetStream cluster not ready after {limit:?}: {:?}\n{}",
                asked.map(|r| r.map(|_| ())),
                self.logs()
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// The node leading `stream` now (its Raft group's leader), once one is elected.
    pub(crate) async fn stream_leader(&self, js: &jetstream::Context, stream: &str) -> usize {
        self.leader_of(|| async {
            let s = js.get_stream(stream).await.ok()?;
            s.cached_info().cluster.as_ref()?.leader.clone()
        })
        .await
    }

    /// The node leading the durable `consumer` of `stream` now.
    pub(crate) async fn consumer_leader(
        &self,
        js: &jetstream::Context,
        stream: &str,
        consumer: &str,
    ) -> usize {
        self.leader_of(|| async {
            let s = js.get_stream(stream).await.ok()?;
            let info = s.consumer_info(consumer).await.ok()?;
            info.cluster.as_ref()?.leader.clone()
        })
        .await
    }

    async fn leader_of<F, Fut>(&self, ask: F) -> usize
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Option<String>>,
    {
        let started = Instant::now();
        loop {
            let asked = tokio::time::timeout(Duration::from_secs(3), ask()).await;
            if let Ok(Some(name)) = asked {
                return self.index_of(&name);
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "no leader after 30 s\n{}",
                self.logs()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Waits until each of `streams` has a leader and every other replica is online and
    /// current (a restarted node has caught up).
    pub(crate) async fn wait_current(&self, js: &jetstream::Context, streams: &[&str]) {
        let started = Instant::now();
        for stream in streams {
            loop {
                let asked = tokio::time::timeout(Duration::from_secs(3), async {
                    let s = js.get_stream(*stream).await.ok()?;
                    let c = s.cached_info().cluster.as_ref()?;
                    let peers = &c.replicas;
                    Some(
                        c.leader.is_some()
                            && peers.len() + 1 == self.nodes.len()
                            && peers.iter().all(|p| p.current && !p.offline),
                    )
                })
                .await;
                if let Ok(Some(true)) = asked {
                    break;
                }
                assert!(
                    started.elapsed() < Duration::from_secs(60),
                    "{stream}: replicas not current after 60 s\n{}",
                    self.logs()
                );
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        }
    }

    /// SIGKILLs node `i` by its PID.
    pub(crate) async fn kill(&mut self, i: usize) {
        self.nodes[i].kill().await;
    }

    /// Starts node `i` again (same port, store and routes).
    pub(crate) async fn start_again(&mut self, i: usize) {
        self.nodes[i].start_again().await;
    }

    /// The tail of every node's log, for failure messages.
    pub(crate) fn logs(&self) -> String {
        let mut out = String::new();
        for (i, n) in self.nodes.iter().enumerate() {
            let log = n.log();
            let from = log.len().saturating_sub(3000);
            let tail = log.get(from..).unwrap_or(&log);
            out.push_str(&format!("--- {} ---\n{tail}\n", Self::name(i)));
        }
        out
    }
}
