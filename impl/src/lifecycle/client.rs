//! The operator's client: kube-rs's, without its own retries, and with the
//! server's `Retry-After` header read off a refused request, so that the
//! engine alone decides when to ask the API server again and the trace
//! shows every answer the server gave.
//!
//! kube-rs's default client retries 429, 503 and 504 up to 15 times with a
//! backoff of its own before its caller hears anything; an engine fed by it
//! would decide on the sixteenth answer and record none of the others.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use http::header::RETRY_AFTER;
use http::{Request, Response};
use http_body_util::BodyExt;
use kube::client::{Body, ClientBuilder, DynBody};
use kube::core::Status;
use steadfast_spec::lifecycle::ClientError;
use tower::{BoxError, Layer, Service};

/// The client to give an [`Operator`](super::Operator): one of the API
/// server `config` names, with kube-rs's own retries off
/// (`Config::default_retry`), and whose refusals that carry a `Retry-After`
/// header are told to the engine with it. Built as kube-rs builds its
/// default client otherwise (TLS, authentication, timeouts).
///
/// ```no_run
/// # async fn example() -> Result<(), Box<dyn std::error::Error>> {
/// let client = steadfast::lifecycle::client(kube::Config::infer().await?)?;
/// # let _ = client;
/// # Ok(())
/// # }
/// ```
///
/// # Errors
///
/// What kube-rs says when it cannot build a client of `config` (a TLS
/// identity it cannot read, an authentication it cannot use).
pub fn client(mut config: kube::Config) -> Result<kube::Client, kube::Error> {
    config.default_retry = false;
    Ok(ClientBuilder::try_from(config)?
        .with_layer(&ReadRetryAfter)
        .build())
}

/// What kind of error the client met on a request that got no answer it
/// could read, as the client tells it: one that could not be made or sent
/// (building it, credentials, a connection or a TLS handshake that
/// failed), an answer lost (a timeout, a connection closed or reset), or
/// one that could not be decoded. What each means is the engine's to
/// decide ([`Failure::of_patch`](steadfast_spec::lifecycle::Failure::of_patch)).
pub(crate) fn client_error(error: &kube::Error) -> ClientError {
    match error {
        kube::Error::SerdeError(_)
        | kube::Error::FromUtf8(_)
        | kube::Error::LinesCodecMaxLineLengthExceeded => ClientError::Undecodable,
        kube::Error::HyperError(_) | kube::Error::ReadEvents(_) => ClientError::NoAnswer,
        kube::Error::Service(error) => {
            // The connection pool says whether it could connect, under
            // whatever layers wrap its error.
            let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error.as_ref());
            while let Some(error) = source {
                if let Some(pool) = error.downcast_ref::<hyper_util::client::legacy::Error>() {
                    if pool.is_connect() {
                        return ClientError::Unsent;
                    }
                }
                source = error.source();
            }
            ClientError::NoAnswer
        }
        _ => ClientError::Unsent,
    }
}

/// The client's words for `error`: its own, then those of each error under
/// it that says more (kube-rs's "client error (SendRequest)" says little of
/// the connection closed under it).
pub(crate) fn words(error: &kube::Error) -> String {
    let mut words = error.to_string();
    let mut under = std::error::Error::source(error);
    while let Some(cause) = under {
        let said = cause.to_string();
        if !words.contains(&said) {
            words.push_str(": ");
            words.push_str(&said);
        }
        under = cause.source();
    }
    words
}

/// A request the API server refused with a `Retry-After` header: its
/// `Status` (as kube-rs reads it), and the wait the header asked for.
#[derive(Debug, thiserror::Error)]
#[error("{} {}: {} (retry after {retry_after_ms} ms)", status.code, status.reason, status.message)]
pub(crate) struct Refused {
    /// What the server said.
    pub(crate) status: Box<Status>,
    /// The header's wait, in milliseconds.
    pub(crate) retry_after_ms: u64,
}

/// The [`Layer`] of [`RetryAfterService`].
struct ReadRetryAfter;

impl<S> Layer<S> for ReadRetryAfter {
    type Service = RetryAfterService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RetryAfterService(inner)
    }
}

/// Turns an error answer that carries a `Retry-After` header into a
/// [`Refused`] error, which kube-rs hands on as `Error::Service`; any other
/// answer goes through as it came (an error answer without the header is
/// kube-rs's `Error::Api`, as before).
#[derive(Clone)]
struct RetryAfterService<S>(S);

impl<S> Service<Request<Body>> for RetryAfterService<S>
where
    S: Service<Request<Body>, Response = Response<Box<DynBody>>, Error = BoxError>,
    S::Future: Send + 'static,
{
    type Response = Response<Box<DynBody>>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), BoxError>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let answer = self.0.call(request);
        Box::pin(async move {
            let response = answer.await?;
            let code = response.status();
            if !(code.is_client_error() || code.is_server_error()) {
                return Ok(response);
            }
            let Some(retry_after_ms) = retry_after_ms(&response) else {
                return Ok(response);
            };
            let body = response.into_body().collect().await?.to_bytes();
            let status = serde_json::from_slice::<Status>(&body).unwrap_or_else(|_| {
                // A proxy's answer, not the API server's: kept as kube-rs
                // keeps it.
                let text = String::from_utf8_lossy(&body);
                Status::failure(text.trim(), "Failed to parse error data").with_code(code.as_u16())
            });
            Err(Box::new(Refused {
                status: status.boxed(),
                retry_after_ms,
            }) as BoxError)
        })
    }
}

/// The wait a `Retry-After` header asks for, in milliseconds, if it gives
/// one in seconds (as the API server does; a date is not read).
fn retry_after_ms<B>(response: &Response<B>) -> Option<u64> {
    let seconds = response.headers().get(RETRY_AFTER)?.to_str().ok()?;
    seconds
        .trim()
        .parse::<u64>()
        .ok()
        .map(|s| s.saturating_mul(1000))
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use http_body_util::Full;
    use tower::ServiceExt;

    use super::*;

    /// The answer `code` with `headers` and `body`, served through the
    /// layer.
    async fn through(code: u16, headers: &[(&str, &str)], body: &str) -> Result<u16, BoxError> {
        let body = Bytes::from(body.to_owned());
        let inner = tower::service_fn(move |_: Request<Body>| {
            let mut response = Response::builder().status(code);
            for (name, value) in headers {
                response = response.header(*name, *value);
            }
            let body: Box<DynBody> = Box::new(Full::new(body.clone()).map_err(BoxError::from));
            std::future::ready(Ok::<_, BoxError>(response.body(body).unwrap()))
        });
        let request = Request::get("/api/v1/namespaces")
            .body(Body::empty())
            .unwrap();
        let response = ReadRetryAfter.layer(inner).oneshot(request).await?;
        Ok(response.status().as_u16())
    }

    fn refused(error: &BoxError) -> &Refused {
        error.downcast_ref::<Refused>().expect("a Refused error")
    }

    #[tokio::test]
    async fn a_refusal_with_retry_after_should_carry_the_wait_and_the_servers_words() {
        let status = r#"{"kind":"Status","apiVersion":"v1","status":"Failure",
            "message":"too many requests","reason":"TooManyRequests","code":429}"#;
        let error = through(429, &[("retry-after", "3")], status)
            .await
            .unwrap_err();
        let refused = refused(&error);
        assert_eq!(refused.retry_after_ms, 3000);
        assert_eq!(refused.status.code, 429);
        assert_eq!(refused.status.message, "too many requests");
    }

    #[tokio::test]
    async fn a_proxys_refusal_with_retry_after_should_carry_its_code_and_text() {
        let error = through(503, &[("retry-after", "1")], "upstream busy\n")
            .await
            .unwrap_err();
        let refused = refused(&error);
        assert_eq!(refused.retry_after_ms, 1000);
        assert_eq!(refused.status.code, 503);
        assert_eq!(refused.status.message, "upstream busy");
    }

    #[tokio::test]
    async fn answers_without_a_readable_retry_after_should_go_through_as_they_came() {
        assert_eq!(
            through(200, &[("retry-after", "3")], "{}").await.unwrap(),
            200
        );
        assert_eq!(through(429, &[], "{}").await.unwrap(), 429);
        let date = [("retry-after", "Wed, 21 Oct 2026 07:28:00 GMT")];
        assert_eq!(through(503, &date, "").await.unwrap(), 503);
    }

    /// A request to a port of loopback on which nothing listens.
    async fn to_a_closed_port() -> kube::Error {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        drop(listener);
        let config = kube::Config::new(format!("http://{address}").parse().unwrap());
        let client = client(config).unwrap();
        client
            .apiserver_version()
            .await
            .expect_err("nothing listens there")
    }

    #[tokio::test]
    async fn a_request_that_found_no_server_should_be_unsent_in_the_clients_words() {
        let error = to_a_closed_port().await;
        assert_eq!(client_error(&error), ClientError::Unsent, "{error:?}");
        let said = words(&error);
        // kube-rs's own words say only that the client failed; those of the
        // errors under it say why.
        assert!(said.len() > error.to_string().len(), "{said}");
        assert!(said.to_lowercase().contains("refused"), "{said}");
    }

    #[test]
    fn an_answer_that_cannot_be_decoded_should_be_undecodable() {
        let bad = serde_json::from_str::<serde_json::Value>("<html>").unwrap_err();
        let error = kube::Error::SerdeError(bad);
        assert_eq!(client_error(&error), ClientError::Undecodable);
        assert!(
            words(&error).contains("expected value"),
            "{}",
            words(&error)
        );
    }
}
