//! A loopback TCP proxy that injects network faults for real: it forwards
//! bytes both ways, or holds them, or applies requests and loses the
//! replies, or cuts every connection.
//!
//! ```no_run
//! # async fn demo(upstream: std::net::SocketAddr) -> std::io::Result<()> {
//! use steadfast_tests::tcp_proxy::{Mode, TcpProxy};
//!
//! let proxy = TcpProxy::start(upstream).await?;
//! // point the client at proxy.address() ...
//! proxy.set(Mode::DropReplies); // requests arrive, answers do not
//! proxy.set(Mode::DropRequests); // what clients send is lost
//! proxy.set(Mode::Forward);
//! # Ok(())
//! # }
//! ```

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// What the proxy does with the bytes it carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Forward both ways.
    Forward,
    /// Forward nothing, either way, and keep every connection open: a
    /// network that stalls without an error. Held bytes go on when the mode
    /// changes back.
    Hold,
    /// Forward requests to the upstream but throw its replies away: the
    /// server acts, the client never hears.
    DropReplies,
    /// Throw away what clients send, and forward what the upstream sends
    /// them: for a protocol whose messages flow from client to server,
    /// every message is lost in flight.
    DropRequests,
    /// Close every connection and refuse new ones: a network that fails
    /// fast.
    Cut,
}

/// A running proxy; dropping it stops it and closes its connections.
pub struct TcpProxy {
    address: SocketAddr,
    mode: watch::Sender<Mode>,
    task: tokio::task::JoinHandle<()>,
}

impl TcpProxy {
    /// Starts a proxy on a free port of 127.0.0.1, forwarding to `upstream`.
    ///
    /// # Errors
    ///
    /// If no port can be bound.
    pub async fn start(upstream: SocketAddr) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?;
        let (mode, _) = watch::channel(Mode::Forward);
        let modes = mode.clone();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                if *modes.borrow() == Mode::Cut {
                    continue;
                }
                tokio::spawn(carry(client, upstream, modes.subscribe()));
            }
        });
        Ok(TcpProxy {
            address,
            mode,
            task,
        })
    }

    /// Where clients connect.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Changes what the proxy does, at once, for every connection.
    pub fn set(&self, mode: Mode) {
        self.mode.send_replace(mode);
    }
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        self.set(Mode::Cut);
        self.task.abort();
    }
}

/// Carries one connection until either side closes it or the mode is `Cut`.
async fn carry(client: TcpStream, upstream: SocketAddr, mode: watch::Receiver<Mode>) {
    let Ok(server) = TcpStream::connect(upstream).await else {
        return;
    };
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    let up = pump(client_read, server_write, mode.clone(), Direction::Requests);
    let down = pump(server_read, client_write, mode, Direction::Replies);
    // Either direction ending ends the connection.
    tokio::select! {
        () = up => {}
        () = down => {}
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    Requests,
    Replies,
}

async fn pump(
    mut from: impl AsyncReadExt + Unpin,
    mut to: impl AsyncWriteExt + Unpin,
    mut mode: watch::Receiver<Mode>,
    direction: Direction,
) {
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        // Wait out a hold before reading, so that held bytes stay queued.
        let current = match mode.wait_for(|m| *m != Mode::Hold).await {
            Ok(current) => *current,
            Err(_) => return,
        };
        if current == Mode::Cut {
            return;
        }
        let read = tokio::select! {
            read = from.read(&mut buffer) => read,
            _ = mode.changed() => continue,
        };
        let n = match read {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let current = *mode.borrow();
        match current {
            Mode::Cut => return,
            Mode::DropReplies if direction == Direction::Replies => continue,
            Mode::DropRequests if direction == Direction::Requests => continue,
            _ => {}
        }
        if current == Mode::Hold {
            // Read just before a hold began: deliver it when the hold ends.
            if mode.wait_for(|m| *m != Mode::Hold).await.is_err() {
                return;
            }
        }
        if to.write_all(&buffer[..n]).await.is_err() {
            return;
        }
    }
}
