//! A small WebDriver client for the tests that open a page in a real browser: it starts
//! Debian's `chromedriver` on a free loopback port, opens one headless Chromium session with a
//! fresh profile, and offers the few commands such a test needs (navigate, run a script, wait
//! for a condition, take a screenshot).
//!
//! It speaks HTTP/1.1 with one request per connection over `std::net::TcpStream`, to the
//! driver on `127.0.0.1` only. It knows the WebDriver protocol, not what a page shows. A test
//! calls [`Browser::missing`] first and skips, saying what is missing, when it returns `Some`.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::scratch::ScratchDir;

/// Where Debian installs the driver (package `chromium-driver`).
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// Where Debian installs the browser (package `chromium`).
pub const CHROMIUM: &str = "/usr/bin/chromium";

/// The browser's flags: headless, no sandbox (tests run as root in CI), nothing that phones
/// out.
const FLAGS: [&str; 6] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
    "--window-size=1100,900",
];

/// How long one driver command may take to answer.
const REPLY_LIMIT: Duration = Duration::from_secs(120);
/// How long the driver may take to answer its status.
const DRIVER_START: Duration = Duration::from_secs(20);

/// A script for [`Browser::execute_async`] on the watch page: the step it shows and the hex
/// SHA-256 of that step's native RGBA pixels, read in one task so the two belong together.
pub const WATCH_STEP_AND_DIGEST: &str = "const done = arguments[arguments.length - 1];
const step = window.flysim.step;
window.flysim.viewDigest().then((d) => done([step, d]), (e) => done(['error', String(e)]));";

/// A script for [`Browser::execute`] on the watch page: whether its native canvas holds a pixel
/// that is not black.
pub const WATCH_NOT_BLANK: &str = "const c = document.getElementById('native');
const p = c.getContext('2d', {willReadFrequently: true}).getImageData(0, 0, c.width, c.height).data;
for (let i = 0; i < p.length; i += 4) { if (p[i] || p[i + 1] || p[i + 2]) return true; }
return false;";

/// One headless Chromium session under its own chromedriver, ended (and the driver killed)
/// on drop.
#[derive(Debug)]
pub struct Browser {
    driver: Child,
    port: u16,
    session: String,
    _profile: ScratchDir,
}

/// A failed WebDriver step: what was asked and what came back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrowserError(pub String);

impl std::fmt::Display for BrowserError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BrowserError {}

impl Browser {
    /// What is missing to run a browser test (the driver or the browser), or `None`.
    #[must_use]
    pub fn missing() -> Option<String> {
        let absent: Vec<&str> = [
            (
                CHROMEDRIVER,
                "chromedriver (Debian package chromium-driver)",
            ),
            (CHROMIUM, "chromium (Debian package chromium)"),
        ]
        .into_iter()
        .filter(|(path, _)| !Path::new(path).exists())
        .map(|(_, what)| what)
        .collect();
        (!absent.is_empty()).then(|| format!("missing {}", absent.join(" and ")))
    }

    /// Starts the driver and opens a session with a fresh profile directory.
    ///
    /// # Errors
    ///
    /// When the driver cannot start, does not answer in time, or refuses the session.
    pub fn start() -> Result<Self, BrowserError> {
        let port = free_port()?;
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| BrowserError(format!("start {CHROMEDRIVER}: {e}")))?;
        let profile = ScratchDir::new();
        let mut browser = Self {
            driver,
            port,
            session: String::new(),
            _profile: profile,
        };
        browser.await_driver()?;
        let mut args: Vec<String> = FLAGS.iter().map(|f| (*f).to_owned()).collect();
        args.push(format!(
            "--user-data-dir={}",
            browser._profile.path().display()
        ));
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": CHROMIUM, "args": args},
        }}});
        let created = browser.request("POST", "/session", Some(&capabilities))?;
        browser.session = created
            .get("sessionId")
            .and_then(Value::as_str)
            .ok_or_else(|| BrowserError(format!("a new session without an id: {created}")))?
            .to_owned();
        Ok(browser)
    }

    /// Waits until the driver says it is ready.
    fn await_driver(&mut self) -> Result<(), BrowserError> {
        let started = now();
        loop {
            if let Ok(status) = self.request("GET", "/status", None)
                && status.get("ready").and_then(Value::as_bool) == Some(true)
            {
                return Ok(());
            }
            if let Ok(Some(exit)) = self.driver.try_wait() {
                return Err(BrowserError(format!("{CHROMEDRIVER} exited: {exit}")));
            }
            if started.elapsed() > DRIVER_START {
                return Err(BrowserError(format!(
                    "{CHROMEDRIVER} did not get ready in {DRIVER_START:?}"
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Opens `url` and waits for the page to load.
    ///
    /// # Errors
    ///
    /// The driver's refusal.
    pub fn goto(&self, url: &str) -> Result<(), BrowserError> {
        self.command("POST", "url", &json!({"url": url})).map(drop)
    }

    /// Runs `script` (a function body; `arguments` holds `args`) and returns its value.
    ///
    /// # Errors
    ///
    /// The driver's refusal, or the script's exception.
    pub fn execute(&self, script: &str, args: &[Value]) -> Result<Value, BrowserError> {
        self.command(
            "POST",
            "execute/sync",
            &json!({"script": script, "args": args}),
        )
    }

    /// Runs `script`, whose last argument is a callback it calls with its result.
    ///
    /// # Errors
    ///
    /// As [`Browser::execute`], or the driver's script timeout.
    pub fn execute_async(&self, script: &str, args: &[Value]) -> Result<Value, BrowserError> {
        self.command(
            "POST",
            "execute/async",
            &json!({"script": script, "args": args}),
        )
    }

    /// Evaluates `expression` every 50 ms until it is truthy, returning its value; `None` after
    /// `limit`.
    ///
    /// # Errors
    ///
    /// As [`Browser::execute`].
    pub fn wait_for(
        &self,
        expression: &str,
        limit: Duration,
    ) -> Result<Option<Value>, BrowserError> {
        let started = now();
        let script = format!("return ({expression});");
        loop {
            let value = self.execute(&script, &[])?;
            let truthy = match &value {
                Value::Null => false,
                Value::Bool(b) => *b,
                Value::Number(n) => n.as_f64().is_some_and(|x| x != 0.0),
                Value::String(s) => !s.is_empty(),
                Value::Array(_) | Value::Object(_) => true,
            };
            if truthy {
                return Ok(Some(value));
            }
            if started.elapsed() > limit {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A PNG screenshot of the viewport.
    ///
    /// # Errors
    ///
    /// The driver's refusal, or a reply that is not base64.
    pub fn screenshot(&self) -> Result<Vec<u8>, BrowserError> {
        let value = self.command("GET", "screenshot", &Value::Null)?;
        let text = value
            .as_str()
            .ok_or_else(|| BrowserError("a screenshot that is not a string".to_owned()))?;
        base64_decode(text).ok_or_else(|| BrowserError("a screenshot that is not base64".into()))
    }

    /// A session command: `/session/<id>/<path>`, returning the reply's `value`.
    fn command(&self, method: &str, path: &str, body: &Value) -> Result<Value, BrowserError> {
        let path = format!("/session/{}/{path}", self.session);
        let body = (method == "POST").then_some(body);
        self.request(method, &path, body)
    }

    /// One HTTP request to the driver; the reply's `value`, or its WebDriver error.
    fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, BrowserError> {
        let body = body.map(Value::to_string).unwrap_or_default();
        let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, self.port))
            .map_err(|e| BrowserError(format!("reach the driver: {e}")))?;
        stream
            .set_read_timeout(Some(REPLY_LIMIT))
            .map_err(|e| BrowserError(format!("reach the driver: {e}")))?;
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            self.port,
            body.len()
        );
        stream
            .write_all(head.as_bytes())
            .and_then(|()| stream.write_all(body.as_bytes()))
            .map_err(|e| BrowserError(format!("{method} {path}: {e}")))?;
        let (status_line, payload) =
            read_reply(&mut stream).map_err(|e| BrowserError(format!("{method} {path}: {e}")))?;
        let doc: Value = serde_json::from_slice(&payload).map_err(|e| {
            BrowserError(format!(
                "{method} {path}: a reply that is not JSON ({e}): {status_line}"
            ))
        })?;
        let value = doc.get("value").cloned().unwrap_or(Value::Null);
        if let Some(error) = value.get("error").and_then(Value::as_str) {
            let message = value.get("message").and_then(Value::as_str).unwrap_or("");
            return Err(BrowserError(format!("{method} {path}: {error}: {message}")));
        }
        Ok(value)
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = self.request("DELETE", &format!("/session/{}", self.session), None);
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// A loopback port nobody listens on right now.
fn free_port() -> Result<u16, BrowserError> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| BrowserError(format!("find a free port: {e}")))
}

/// Reads one HTTP reply: its head and its body (by `Content-Length`, or chunked to its last
/// chunk, or to the end of the stream). The driver may keep the connection open, so the body's
/// length is what ends it.
fn read_reply(stream: &mut TcpStream) -> Result<(String, Vec<u8>), String> {
    let mut reply = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    let split = loop {
        if let Some(at) = reply.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        let n = stream.read(&mut chunk).map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("the driver closed without a reply".to_owned());
        }
        reply.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&reply[..split]).into_owned();
    let mut body = reply[split + 4..].to_vec();
    let lower = head.to_ascii_lowercase();
    let length = lower
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok());
    let chunked = lower.contains("transfer-encoding: chunked");
    loop {
        let complete = match length {
            Some(n) => body.len() >= n,
            None => chunked && body.ends_with(b"0\r\n\r\n"),
        };
        if complete {
            break;
        }
        let n = stream.read(&mut chunk).map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    if let Some(n) = length {
        body.truncate(n);
    }
    let body = dechunk(&head, &body);
    Ok((head, body))
}

/// The body of a reply whose head is `head`, undoing chunked transfer encoding if it says so.
fn dechunk(head: &str, body: &[u8]) -> Vec<u8> {
    if !head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        return body.to_vec();
    }
    let mut out = Vec::new();
    let mut rest = body;
    while let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") {
        let size = std::str::from_utf8(&rest[..eol])
            .ok()
            .and_then(|s| usize::from_str_radix(s.trim().split(';').next().unwrap_or(""), 16).ok())
            .unwrap_or(0);
        rest = &rest[eol + 2..];
        if size == 0 || size > rest.len() {
            break;
        }
        out.extend_from_slice(&rest[..size]);
        rest = rest.get(size + 2..).unwrap_or_default();
    }
    out
}

/// Standard base64 (with padding, no line breaks) to bytes.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let value = |c: u8| -> Option<u32> {
        match c {
            b'A'..=b'Z' => Some(u32::from(c - b'A')),
            b'a'..=b'z' => Some(u32::from(c - b'a') + 26),
            b'0'..=b'9' => Some(u32::from(c - b'0') + 52),
            b'+' => Some(62),
            b'/' => Some(63),
            _ => None,
        }
    };
    let bytes: Vec<u8> = text.bytes().filter(|c| !c.is_ascii_whitespace()).collect();
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    for chunk in bytes.chunks(4) {
        let pad = chunk.iter().rev().take_while(|&&c| c == b'=').count();
        let mut n = 0u32;
        for &c in &chunk[..chunk.len() - pad] {
            n = (n << 6) | value(c)?;
        }
        n <<= 6 * pad;
        let three = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&three[..3 - pad]);
    }
    Some(out)
}

/// The monotonic clock, for the deadlines of waits only.
#[expect(
    clippy::disallowed_methods,
    reason = "bounds the wait for the driver and for page conditions"
)]
fn now() -> std::time::Instant {
    std::time::Instant::now()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_decodes_with_and_without_padding() {
        assert_eq!(base64_decode("aGVsbG8="), Some(b"hello".to_vec()));
        assert_eq!(base64_decode("aGVsbG8h"), Some(b"hello!".to_vec()));
        assert_eq!(base64_decode("aGk="), Some(b"hi".to_vec()));
        assert_eq!(base64_decode("a*=="), None);
    }

    #[test]
    fn a_chunked_body_is_joined() {
        let head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked";
        assert_eq!(dechunk(head, b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"), b"abcde");
        assert_eq!(dechunk("HTTP/1.1 200 OK", b"plain"), b"plain");
    }
}
