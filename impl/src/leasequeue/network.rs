//! The network between nodes: a listener that turns lines into
//! [`Message`]s, and one outgoing link per peer address.
//!
//! The links' tasks end with the network that owns them.
//!
//! Sending never blocks and never fails: a line that cannot be written (the
//! peer is down, the connection broke) is dropped and logged. Delivery
//! guarantees are the drivers': what must arrive is sent again until
//! acknowledged.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use super::wire::Message;

/// How long connecting to a peer may take before the line is dropped.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// A node's side of the network: its address, and its links to peers.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> std::io::Result<()> {
/// use steadfast::leasequeue::network::Network;
/// use steadfast::leasequeue::wire::Message;
///
/// let (inbox, mut messages) = tokio::sync::mpsc::unbounded_channel();
/// let (network, serving) = Network::bind("127.0.0.1:0", inbox).await?;
/// tokio::spawn(serving);
/// network.send(network.address(), &Message::Ack { id: "a-1".into() });
/// assert_eq!(messages.recv().await, Some(Message::Ack { id: "a-1".into() }));
/// # Ok(())
/// # }
/// ```
pub struct Network {
    address: String,
    links: Mutex<HashMap<String, mpsc::UnboundedSender<String>>>,
}

impl Network {
    /// Binds `listen` (`host:port`; port 0 picks a free one). Returns the
    /// network, and the future that accepts connections and hands every
    /// message that arrives to `inbox`: the node runs it in its own task,
    /// so that the port is free again once that task is gone.
    ///
    /// # Errors
    ///
    /// If the address cannot be bound.
    pub async fn bind(
        listen: &str,
        inbox: mpsc::UnboundedSender<Message>,
    ) -> std::io::Result<(Self, impl Future<Output = ()> + Send + 'static)> {
        let listener = TcpListener::bind(listen).await?;
        let address = listener.local_addr()?.to_string();
        let network = Network {
            address,
            links: Mutex::new(HashMap::new()),
        };
        Ok((network, serve(listener, inbox)))
    }

    /// Names it `address` rather than the address it bound: the one its
    /// peers reach it at (through a proxy, a NAT or a Kubernetes Service).
    #[must_use]
    pub fn with_address(mut self, address: impl Into<String>) -> Self {
        self.address = address.into();
        self
    }

    /// The node's name: the address its peers reach it at (the one it
    /// listens on, unless [`Network::with_address`] named another).
    pub fn address(&self) -> &str {
        &self.address
    }

    /// Sends `message` to the node at `to`, if it can be reached.
    pub fn send(&self, to: &str, message: &Message) {
        let line = message.to_line();
        let mut links = self.links.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(link) = links.get(to) {
            if link.send(line.clone()).is_ok() {
                return;
            }
        }
        let (link, lines) = mpsc::unbounded_channel();
        // The receiver is alive: the task below holds it.
        let _ = link.send(line);
        tokio::spawn(carry(to.to_owned(), lines));
        links.insert(to.to_owned(), link);
    }
}

/// Accepts connections and reads lines from each; dropped, it stops
/// listening and closes every incoming connection.
async fn serve(listener: TcpListener, inbox: mpsc::UnboundedSender<Message>) {
    let mut readers = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    readers.spawn(read(stream, peer.to_string(), inbox.clone()));
                }
                Err(error) => tracing::warn!(%error, "failed to accept a connection"),
            },
            Some(_) = readers.join_next() => {}
        }
    }
}

/// Reads one connection's lines into `inbox`.
async fn read(stream: TcpStream, peer: String, inbox: mpsc::UnboundedSender<Message>) {
    let mut lines = BufReader::new(stream).lines();
    loop {
        match lines.next_line().await {
            Ok(Some(line)) => match Message::from_line(&line) {
                Ok(message) => {
                    if inbox.send(message).is_err() {
                        return;
                    }
                }
                Err(error) => {
                    tracing::warn!(%peer, %error, line, "dropped a line that is not a message");
                }
            },
            Ok(None) => return,
            Err(error) => {
                tracing::debug!(%peer, %error, "connection broke");
                return;
            }
        }
    }
}

/// Writes the lines for `to`, connecting (again) when needed; a line that
/// cannot be written is dropped.
async fn carry(to: String, mut lines: mpsc::UnboundedReceiver<String>) {
    let mut stream: Option<TcpStream> = None;
    while let Some(line) = lines.recv().await {
        if stream.is_none() {
            match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(&to)).await {
                Ok(Ok(connected)) => {
                    let _ = connected.set_nodelay(true);
                    stream = Some(connected);
                }
                Ok(Err(error)) => {
                    tracing::warn!(%to, %error, "peer unreachable; message dropped");
                    continue;
                }
                Err(_) => {
                    tracing::warn!(%to, "connecting timed out; message dropped");
                    continue;
                }
            }
        }
        if let Some(connected) = &mut stream {
            if let Err(error) = connected.write_all(line.as_bytes()).await {
                tracing::debug!(%to, %error, "connection broke; message dropped");
                stream = None;
            }
        }
    }
}
