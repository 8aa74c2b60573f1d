//! What `steadfast explore` serves: stateright's Explorer, and beside it a
//! page of the check's report (`/steadfast/`) that shows what the Explorer
//! cannot: every property's verdict, liveness included, and each
//! counterexample as `steadfast check` prints it, a lasso's cycle marked as
//! the part that repeats forever, with the fairness classes it takes or
//! finds disabled.
//!
//! stateright's server takes no routes of ours, so it is started on a
//! loopback port of its own, and this server, on the user's address,
//! answers `/steadfast/...` itself and hands every other request to it: one
//! origin holds both, and the page opens a counterexample's states in the
//! Explorer by a relative link. The check runs in the background from the
//! first request for the report, with `check`'s default bounds.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::json;
use steadfast_checker::registry::{Entry, RegistryError};
use steadfast_checker::{CheckOptions, Progress, Spilling};
use tiny_http::{Header, Method, Request, Response, ResponseBox, Server, StatusCode};

/// The page, its script and its style: plain files, served as they are.
const PAGE: &str = include_str!("web/report.html");
const SCRIPT: &str = include_str!("web/report.js");
const STYLE: &str = include_str!("web/report.css");

/// Where the page lives on the server.
pub const REPORT_PATH: &str = "/steadfast/";

/// Why `explore` could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Registry(#[from] RegistryError),
    #[error(
        "cannot serve on {addr}: {why}; pick another address with --bind (port 0: any free port)"
    )]
    Bind { addr: SocketAddr, why: String },
    #[error("stateright's Explorer stopped before it listened")]
    ExplorerStopped,
}

/// The check of the explored model, as far as it has got.
enum Checking {
    /// Exploring: the states found so far and the depth reached.
    Running { states: u64, depth: u32 },
    /// The report, as `check --json` gives a run's.
    Done(serde_json::Value),
    /// The check could not run; why.
    Failed(String),
}

/// One explored model's site.
struct Site {
    entry: &'static dyn Entry,
    variant: String,
    scenario: String,
    options: CheckOptions,
    /// Where stateright's Explorer answers.
    explorer: SocketAddr,
    /// `None` until somebody asks for the report.
    checking: Mutex<Option<Checking>>,
}

/// Serves the Explorer of `entry`'s `variant` in `scenario`, and the page of
/// its report, on `bind`; `serving` is told the address once both listen.
/// Returns only if they cannot start.
pub fn serve(
    entry: &'static dyn Entry,
    variant: String,
    scenario: String,
    bind: SocketAddr,
    memory: Option<u64>,
    serving: impl FnOnce(SocketAddr),
) -> Result<(), ServeError> {
    let explorer = start_explorer(entry, &variant, &scenario)?;
    let server = Server::http(bind).map_err(|why| ServeError::Bind {
        addr: bind,
        why: why.to_string(),
    })?;
    let address = server
        .server_addr()
        .to_ip()
        .ok_or_else(|| ServeError::Bind {
            addr: bind,
            why: "the server did not listen on an IP address".into(),
        })?;
    let site = Arc::new(Site {
        entry,
        variant,
        scenario,
        options: CheckOptions {
            memory,
            spill: Some(Spilling {
                dir: std::env::temp_dir(),
                from_start: false,
            }),
            ..CheckOptions::default()
        },
        explorer,
        checking: Mutex::new(None),
    });
    serving(address);
    for request in server.incoming_requests() {
        let site = Arc::clone(&site);
        std::thread::spawn(move || site.answer(request));
    }
    Ok(())
}

/// Starts stateright's Explorer on a free loopback port, and returns that
/// port's address once the model is built (an unknown variant or scenario
/// is an error here).
fn start_explorer(
    entry: &'static dyn Entry,
    variant: &str,
    scenario: &str,
) -> Result<SocketAddr, ServeError> {
    let (tell, told) = std::sync::mpsc::channel();
    let (variant, scenario) = (variant.to_string(), scenario.to_string());
    std::thread::spawn(move || {
        let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
        let bound = |address: SocketAddr| {
            let _ = tell.send(Ok(address));
        };
        if let Err(error) = entry.explore(&variant, &scenario, loopback, &bound) {
            let _ = tell.send(Err(error));
        }
    });
    match told.recv() {
        Ok(answer) => Ok(answer?),
        Err(_) => Err(ServeError::ExplorerStopped),
    }
}

impl Site {
    fn answer(self: Arc<Self>, mut request: Request) {
        let url = request.url().to_string();
        let response = match (request.method(), url.as_str()) {
            (Method::Get, "/steadfast") => Response::empty(StatusCode(301))
                .with_header(header("Location", REPORT_PATH))
                .boxed(),
            (Method::Get, REPORT_PATH) => text(PAGE, "text/html; charset=utf-8"),
            (Method::Get, "/steadfast/report.js") => text(SCRIPT, "text/javascript; charset=utf-8"),
            (Method::Get, "/steadfast/report.css") => text(STYLE, "text/css; charset=utf-8"),
            (Method::Get, "/steadfast/report.json") => {
                let body = Arc::clone(&self).report().to_string();
                text(&body, "application/json")
            }
            (_, path) if path.starts_with(REPORT_PATH) => Response::from_string(format!(
                "steadfast serves {REPORT_PATH} (the report), its report.json, report.js and \
                 report.css; nothing else under it"
            ))
            .with_status_code(StatusCode(404))
            .boxed(),
            _ => forward(self.explorer, &mut request).unwrap_or_else(|error| {
                Response::from_string(format!("stateright's Explorer did not answer: {error}"))
                    .with_status_code(StatusCode(502))
                    .boxed()
            }),
        };
        // The browser may have gone; nothing is lost with its answer.
        let _ = request.respond(response);
    }

    /// The report as far as it has got, starting the check on the first
    /// call.
    fn report(self: Arc<Self>) -> serde_json::Value {
        let mut checking = self.checking.lock().unwrap_or_else(|e| e.into_inner());
        let checking = checking.get_or_insert_with(|| {
            let site = Arc::clone(&self);
            std::thread::spawn(move || site.run_check());
            Checking::Running {
                states: 0,
                depth: 0,
            }
        });
        let mut answer = json!({
            "model": self.entry.name(),
            "variant": self.variant,
            "scenario": self.scenario,
        });
        let status = match checking {
            Checking::Running { states, depth } => {
                json!({"status": "checking", "states": states, "depth": depth})
            }
            Checking::Done(report) => json!({"status": "done", "report": report}),
            Checking::Failed(why) => json!({"status": "failed", "error": why}),
        };
        if let (Some(answer), serde_json::Value::Object(status)) = (answer.as_object_mut(), status)
        {
            answer.extend(status);
        }
        answer
    }

    fn run_check(&self) {
        let progress = |p: &Progress| {
            *self.checking.lock().unwrap_or_else(|e| e.into_inner()) = Some(Checking::Running {
                states: p.states,
                depth: p.depth,
            });
        };
        let result = self.entry.check(
            &self.variant,
            &self.scenario,
            &self.options,
            Some(&progress),
        );
        let outcome = match result.map(|report| serde_json::to_value(&report)) {
            Ok(Ok(report)) => Checking::Done(report),
            Ok(Err(error)) => Checking::Failed(format!("the report could not be encoded: {error}")),
            Err(error) => Checking::Failed(error.to_string()),
        };
        *self.checking.lock().unwrap_or_else(|e| e.into_inner()) = Some(outcome);
    }
}

fn header(name: &str, value: &str) -> Header {
    Header::from_bytes(name.as_bytes(), value.as_bytes())
        .expect("header names and values here are ASCII")
}

fn text(body: &str, content_type: &str) -> ResponseBox {
    Response::from_string(body)
        .with_header(header("Content-Type", content_type))
        .with_header(header("Cache-Control", "no-store"))
        .boxed()
}

/// Hands `request` to the Explorer at `to` and returns its answer: its
/// status, its content type and its body.
fn forward(to: SocketAddr, request: &mut Request) -> std::io::Result<ResponseBox> {
    let mut body = Vec::new();
    request.as_reader().read_to_end(&mut body)?;
    let mut stream = TcpStream::connect(to)?;
    // HTTP/1.0 and `Connection: close`: the answer ends where the
    // connection does, with no chunks to undo.
    write!(
        stream,
        "{} {} HTTP/1.0\r\nHost: {to}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        request.method(),
        request.url(),
        body.len()
    )?;
    stream.write_all(&body)?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer)?;
    let malformed = || std::io::Error::other("its answer is not HTTP");
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(malformed)?;
    let head = std::str::from_utf8(&answer[..split]).map_err(|_| malformed())?;
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .and_then(|code| code.parse().ok())
        .ok_or_else(malformed)?;
    let mut response =
        Response::from_data(answer[split + 4..].to_vec()).with_status_code(StatusCode(status));
    for line in lines {
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-type") {
                if let Ok(kept) = Header::from_bytes("Content-Type", value.trim().as_bytes()) {
                    response = response.with_header(kept);
                }
            }
        }
    }
    Ok(response.boxed())
}
