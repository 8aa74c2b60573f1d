//! What the scheduler's and the controller's drivers share: the time between
//! steps, timers the roles arm, and the trace a driver records.

use std::collections::HashMap;
use std::hash::Hash;
use std::path::Path;
use std::time::Duration;

use steadfast_spec::leasequeue::controller::Key;
use steadfast_spec::leasequeue::trace::Named;
use steadfast_spec::trace::Header;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::etcd::Etcd;
use super::network::Network;
use super::tls::NodeTls;
use super::wire::Message;
use super::StartError;
use crate::trace::Recorder;

/// What a node listens with, and where its trace goes: set up before its
/// driver starts.
pub(crate) struct Opened<F> {
    pub(crate) network: Network,
    /// The listener: the driver runs it alongside its loop.
    pub(crate) serving: F,
    /// The messages that arrive.
    pub(crate) messages: mpsc::UnboundedReceiver<Message>,
    /// The messages it sent that bounced, each with the address it was
    /// sent to.
    pub(crate) bounced: mpsc::UnboundedReceiver<(String, Message)>,
    pub(crate) recorder: Option<Recorder>,
}

/// Listens on `listen` (over TLS with `tls`, if given), named by
/// `advertise` if given (else by the address bound), and, given a `trace`
/// path, opens the trace with the header `header` makes of that name.
pub(crate) async fn open(
    listen: &str,
    advertise: Option<&str>,
    tls: Option<NodeTls>,
    trace: Option<&Path>,
    header: impl FnOnce(&str) -> Header,
) -> Result<Opened<impl std::future::Future<Output = ()> + Send + 'static>, StartError> {
    if let Some(advertised) = advertise {
        check_advertised(advertised)?;
    }
    let (inbox, messages) = mpsc::unbounded_channel();
    let (network, serving) = Network::bind_with(listen, inbox, tls)
        .await
        .map_err(|source| StartError::Listen {
            address: listen.to_owned(),
            source,
        })?;
    let (bounces, bounced) = mpsc::unbounded_channel();
    let network = network.with_bounces(bounces);
    let network = match advertise {
        Some(advertised) => network.with_address(advertised),
        None => network,
    };
    let recorder = match trace {
        Some(path) => Some(Recorder::create(path, &header(network.address()))?),
        None => None,
    };
    Ok(Opened {
        network,
        serving,
        messages,
        bounced,
        recorder,
    })
}

/// An advertised address must be `host:port`, with a host and a port other
/// than 0: peers dial it as it is.
fn check_advertised(address: &str) -> Result<(), StartError> {
    let port = address
        .rsplit_once(':')
        .filter(|(host, _)| !host.is_empty())
        .and_then(|(_, port)| port.parse::<u16>().ok());
    match port {
        Some(port) if port != 0 => Ok(()),
        _ => Err(StartError::Config(format!(
            "advertised address {address:?} is not host:port with a port above 0; \
             give the address peers reach this node at, such as 10.0.0.7:8081"
        ))),
    }
}

/// Runs `call` against etcd as a task of its own; the event it returns, if
/// it returns one, goes to `events`.
pub(crate) fn ask<E, F, Fut>(etcd: &Etcd, events: &mpsc::UnboundedSender<E>, call: F)
where
    E: Send + 'static,
    F: FnOnce(Etcd) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Option<E>> + Send,
{
    let etcd = etcd.clone();
    let events = events.clone();
    tokio::spawn(async move {
        if let Some(event) = call(etcd).await {
            let _ = events.send(event);
        }
    });
}

/// Milliseconds between steps: what the scheduler's `step` takes as
/// `elapsed`.
pub(crate) struct Clock {
    last: Instant,
}

impl Clock {
    pub(crate) fn new() -> Self {
        Clock {
            last: Instant::now(),
        }
    }

    /// Milliseconds since the last call (whole ones: the rest carries over).
    pub(crate) fn elapsed_ms(&mut self) -> u64 {
        let now = Instant::now();
        let elapsed = now - self.last;
        let ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
        self.last += Duration::from_millis(ms);
        ms
    }
}

/// Timers by key: arming one again replaces it.
pub(crate) struct Timers<K> {
    due: HashMap<K, Instant>,
}

impl<K: Clone + Eq + Hash> Timers<K> {
    pub(crate) fn new() -> Self {
        Timers {
            due: HashMap::new(),
        }
    }

    /// Arms `key` to fire `after_ms` from now.
    pub(crate) fn set(&mut self, key: K, after_ms: u64) {
        self.due
            .insert(key, Instant::now() + Duration::from_millis(after_ms));
    }

    /// When the next timer fires, if one is armed.
    pub(crate) fn next(&self) -> Option<Instant> {
        self.due.values().min().copied()
    }

    /// Takes every timer due by now, earliest first.
    pub(crate) fn take_due(&mut self) -> Vec<K> {
        let now = Instant::now();
        let mut due: Vec<(Instant, K)> = self
            .due
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(key, at)| (*at, key.clone()))
            .collect();
        due.sort_by_key(|(at, _)| *at);
        for (_, key) in &due {
            self.due.remove(key);
        }
        due.into_iter().map(|(_, key)| key).collect()
    }
}

/// Sleeps until `at`, or forever when it is `None`.
pub(crate) async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Warns of a key this node cannot read an owner from, found by a watch, a
/// listing, a lookup or a claim: its value is one no steadfast node wrote
/// (another system's under the same prefix, or one edited by hand), or
/// etcd refuses this node access to it. The roles read it as no key (a
/// member out of sight, an action whose calls are answered as not routed)
/// until it is deleted, put right, or access is granted.
pub(crate) fn warn_unreadable(key: &Key<Named>, reason: &str) {
    let key = match key {
        Key::Endpoint(action) => format!("the endpoint key of action {action:?}"),
        Key::Member(scheduler) => format!("the member key of scheduler {scheduler:?}"),
    };
    tracing::warn!(%key, %reason, "an etcd key cannot be read by this node: it is read as \
        no key until it is deleted or put right, or this node's etcd user is granted access");
}
