//! The network between nodes: a listener that turns lines into
//! [`Message`]s, and one outgoing link per peer address; over TLS with
//! client certificates both ways when the node has a [`NodeTls`].
//!
//! The links' tasks end with the network that owns them.
//!
//! Sending never blocks and never fails: a line that cannot be written (the
//! peer is down, the connection broke) is dropped and logged. Delivery
//! guarantees are the drivers': what must arrive is sent again until
//! acknowledged. A message to an address where nothing listens (the
//! connection refused: the node there is gone) is handed back to the
//! sender's driver ([`Network::with_bounces`]), whose role routes it again.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use super::tls::{self, NodeTls};
use super::wire::Message;

/// How long connecting to a peer (its TLS handshake included) may take
/// before the line is dropped, and how long a peer that connected has to
/// finish its handshake.
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
/// let ack = Message::Ack {
///     id: "a-1".into(),
///     from: network.address().into(),
///     reply_to: None,
/// };
/// network.send(network.address(), &ack);
/// assert_eq!(messages.recv().await, Some(ack));
/// # Ok(())
/// # }
/// ```
pub struct Network {
    address: String,
    links: Mutex<HashMap<String, mpsc::UnboundedSender<Message>>>,
    tls: Option<NodeTls>,
    bounces: Option<Bounces>,
}

/// Where messages that bounced go: each with the address it was sent to.
pub type Bounces = mpsc::UnboundedSender<(String, Message)>;

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
        Self::bind_with(listen, inbox, None).await
    }

    /// As [`Network::bind`], over TLS with `tls`, when given: it accepts
    /// only peers whose client certificate its CA signed, and sends only to
    /// peers whose certificate names the host it dials.
    ///
    /// # Errors
    ///
    /// If the address cannot be bound.
    pub async fn bind_with(
        listen: &str,
        inbox: mpsc::UnboundedSender<Message>,
        tls: Option<NodeTls>,
    ) -> std::io::Result<(Self, impl Future<Output = ()> + Send + 'static)> {
        let listener = TcpListener::bind(listen).await?;
        let address = listener.local_addr()?.to_string();
        let network = Network {
            address,
            links: Mutex::new(HashMap::new()),
            tls: tls.clone(),
            bounces: None,
        };
        Ok((network, serve(listener, inbox, tls)))
    }

    /// Names it `address` rather than the address it bound: the one its
    /// peers reach it at (through a proxy, a NAT or a Kubernetes Service).
    #[must_use]
    pub fn with_address(mut self, address: impl Into<String>) -> Self {
        self.address = address.into();
        self
    }

    /// Hands every message that bounces (nothing listens at its address:
    /// the connection was refused) to `bounces`, with that address; without
    /// it, such a message is dropped like any other that cannot be written.
    #[must_use]
    pub fn with_bounces(mut self, bounces: Bounces) -> Self {
        self.bounces = Some(bounces);
        self
    }

    /// The node's name: the address its peers reach it at (the one it
    /// listens on, unless [`Network::with_address`] named another).
    pub fn address(&self) -> &str {
        &self.address
    }

    /// Sends `message` to the node at `to`, if it can be reached.
    pub fn send(&self, to: &str, message: &Message) {
        let mut links = self.links.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(link) = links.get(to) {
            if link.send(message.clone()).is_ok() {
                return;
            }
        }
        let (link, messages) = mpsc::unbounded_channel();
        // The receiver is alive: the task below holds it.
        let _ = link.send(message.clone());
        let carrying = carry(
            to.to_owned(),
            messages,
            self.tls.clone(),
            self.bounces.clone(),
        );
        tokio::spawn(carrying);
        links.insert(to.to_owned(), link);
    }
}

/// Accepts connections and reads lines from each (once its TLS handshake,
/// if any, succeeded); dropped, it stops listening and closes every
/// incoming connection.
async fn serve(listener: TcpListener, inbox: mpsc::UnboundedSender<Message>, tls: Option<NodeTls>) {
    let mut readers = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    readers.spawn(accept(stream, peer.to_string(), inbox.clone(), tls.clone()));
                }
                Err(error) => tracing::warn!(%error, "failed to accept a connection"),
            },
            Some(_) = readers.join_next() => {}
        }
    }
}

/// Reads a connection from `peer`, over TLS when the node has it: a peer
/// that does not prove a certificate its CA signed is refused.
async fn accept(
    stream: TcpStream,
    peer: String,
    inbox: mpsc::UnboundedSender<Message>,
    tls: Option<NodeTls>,
) {
    let Some(tls) = tls else {
        return read(stream, peer, inbox).await;
    };
    match tokio::time::timeout(CONNECT_TIMEOUT, tls.acceptor().accept(stream)).await {
        Ok(Ok(stream)) => read(stream, peer, inbox).await,
        Ok(Err(error)) => {
            tracing::warn!(
                %peer,
                %error,
                "refused a peer without a valid certificate (TLS with client certificates is on)"
            );
        }
        Err(_) => tracing::warn!(%peer, "refused a peer that did not finish its TLS handshake"),
    }
}

/// Reads one connection's lines into `inbox`.
async fn read(stream: impl AsyncRead + Unpin, peer: String, inbox: mpsc::UnboundedSender<Message>) {
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

/// A connection to a peer, plain or TLS.
type Link = Box<dyn AsyncWrite + Unpin + Send>;

/// Why a peer could not be reached.
enum Unreachable {
    /// Nothing listens at its address: the node there is gone.
    Refused,
    /// Anything else (no route, a failed handshake), which says nothing
    /// of whether the node is there.
    Failed(String),
}

/// Connects to `to`, over TLS with `tls` when given.
async fn connect(to: &str, tls: Option<&NodeTls>) -> Result<Link, Unreachable> {
    let stream = TcpStream::connect(to).await.map_err(|e| match e.kind() {
        std::io::ErrorKind::ConnectionRefused => Unreachable::Refused,
        _ => Unreachable::Failed(e.to_string()),
    })?;
    let _ = stream.set_nodelay(true);
    let Some(tls) = tls else {
        return Ok(Box::new(stream));
    };
    let Some(name) = tls::server_name(to) else {
        return Err(Unreachable::Failed(
            "the address has no host to check its certificate against".into(),
        ));
    };
    let stream = tls.connector().connect(name, stream).await;
    let stream = stream.map_err(|e| Unreachable::Failed(format!("TLS handshake failed: {e}")))?;
    Ok(Box::new(stream))
}

/// Writes the messages for `to`, connecting (again) when needed; one that
/// cannot be written is dropped, or handed to `bounces` if nothing listens
/// at `to`.
async fn carry(
    to: String,
    mut messages: mpsc::UnboundedReceiver<Message>,
    tls: Option<NodeTls>,
    bounces: Option<Bounces>,
) {
    let mut stream: Option<Link> = None;
    while let Some(message) = messages.recv().await {
        if stream.is_none() {
            match tokio::time::timeout(CONNECT_TIMEOUT, connect(&to, tls.as_ref())).await {
                Ok(Ok(connected)) => stream = Some(connected),
                Ok(Err(Unreachable::Refused)) => {
                    tracing::warn!(%to, "nothing listens at the peer's address; message returned");
                    if let Some(bounces) = &bounces {
                        let _ = bounces.send((to.clone(), message));
                    }
                    continue;
                }
                Ok(Err(Unreachable::Failed(error))) => {
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
            let line = message.to_line();
            let written = async {
                connected.write_all(line.as_bytes()).await?;
                connected.flush().await
            };
            if let Err(error) = written.await {
                tracing::debug!(%to, %error, "connection broke; message dropped");
                stream = None;
            }
        }
    }
}
