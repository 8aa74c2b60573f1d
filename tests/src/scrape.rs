//! What a metrics endpoint serves, read as Prometheus and the kubelet read
//! it: one HTTP/1.1 GET on loopback, and a sample of the OpenMetrics text.
//!
//! ```no_run
//! # async fn demo(address: std::net::SocketAddr) {
//! use steadfast_tests::scrape::{get, sample};
//!
//! let (code, metrics) = get(address, "/metrics").await;
//! assert_eq!(code, 200);
//! let held = sample(&metrics, "steadfast_scheduler_lease_held");
//! # }
//! ```

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// `GET path` from `address`: the status code and the body.
///
/// # Panics
///
/// If nothing answers, or the answer is not HTTP.
pub async fn get(address: SocketAddr, path: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(address)
        .await
        .expect("the endpoint accepts");
    let request = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
    let code = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("a status code");
    (code, body.to_owned())
}

/// Reads `address`'s metrics every 50 ms until the sample `series` is
/// `value`, for at most `within`: the text that showed it, or `None` if it
/// never did.
pub async fn await_sample(
    address: SocketAddr,
    series: &str,
    value: f64,
    within: std::time::Duration,
) -> Option<String> {
    let shown = async {
        loop {
            let (_, text) = get(address, "/metrics").await;
            if sample(&text, series) == Some(value) {
                return text;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(within, shown).await.ok()
}

/// The value of the sample named `series` (a metric's name with its labels
/// as exposed, `name{label="value"}`), if the text has it.
pub fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| {
            let (name, value) = line.rsplit_once(' ')?;
            (name == series).then(|| value.parse().ok())?
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_should_be_found_by_its_name_and_labels() {
        let text = "# HELP x_total X.\n# TYPE x counter\nx_total{a=\"1\"} 3\nx_total{a=\"2\"} 5\ny 1.5\n# EOF\n";
        assert_eq!(sample(text, "x_total{a=\"2\"}"), Some(5.0));
        assert_eq!(sample(text, "y"), Some(1.5));
        assert_eq!(sample(text, "x_total"), None);
    }
}
