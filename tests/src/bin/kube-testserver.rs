//! `kube-testserver`: the Kubernetes API test server as a process, for
//! clients outside the Rust tests (`kubectl`, an operator under development).
//!
//! ```sh
//! cargo run -p steadfast-tests --bin kube-testserver -- --kubeconfig /tmp/kubeconfig
//! kubectl --kubeconfig /tmp/kubeconfig get configmaps
//! curl -X POST -d '{"fault":"expireWatches"}' http://127.0.0.1:PORT/steadfast/faults
//! ```

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use steadfast_tests::kube_testserver::{ServerConfig, TestServer, FAULTS_PATH};

/// Serves the Kubernetes API (in memory, with faults on demand) until Ctrl-C.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// Address to listen on; only loopback addresses are accepted.
    #[arg(long, default_value = "127.0.0.1:0")]
    bind: SocketAddr,
    /// Events kept for watches; a watch from an older resourceVersion gets 410 Gone.
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u32).range(1..))]
    history: u32,
    /// Seconds between bookmarks on watches that allow them.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=3600))]
    bookmark_interval: u64,
    /// Write a kubeconfig pointing at the server to this file.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    if !args.bind.ip().is_loopback() {
        eprintln!("kube-testserver: --bind {} is not a loopback address; use 127.0.0.1 (this server has no authentication)", args.bind);
        return ExitCode::from(2);
    }
    let config = ServerConfig {
        bind: args.bind,
        history: args.history as usize,
        bookmark_interval: Duration::from_secs(args.bookmark_interval),
    };
    let server = match TestServer::start_with(config).await {
        Ok(server) => server,
        Err(error) => {
            eprintln!("kube-testserver: cannot listen on {}: {error}", args.bind);
            return ExitCode::FAILURE;
        }
    };
    if let Some(path) = &args.kubeconfig {
        if let Err(error) = std::fs::write(path, server.kubeconfig()) {
            eprintln!(
                "kube-testserver: cannot write the kubeconfig to {}: {error}",
                path.display()
            );
            return ExitCode::FAILURE;
        }
    }
    println!("serving the Kubernetes API on {}", server.url());
    println!("faults: POST JSON to {}{FAULTS_PATH}", server.url());
    if let Err(error) = tokio::signal::ctrl_c().await {
        eprintln!("kube-testserver: cannot wait for Ctrl-C: {error}");
    }
    server.shutdown().await;
    ExitCode::SUCCESS
}
