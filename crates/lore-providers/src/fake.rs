//! A fake model provider on loopback, for tests (feature `fake`).
//!
//! It speaks just enough HTTP/1.1 (one request per connection, `Content-Length` bodies) for the
//! real clients, the `lore` binary and promptfoo to talk to it as they would to OpenAI or
//! Anthropic, so tests exercise the real wire protocols without reaching the internet. A handler
//! decides each reply from the request; [`Reply`] covers what providers do to clients: answers,
//! error statuses with `Retry-After`, malformed bodies, and silence until the client times out.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use serde_json::{Value, json};

/// A request the server received.
#[derive(Clone, Debug)]
pub struct Captured {
    /// The request path (`/v1/chat/completions`).
    pub path: String,
    /// Header names (lower-cased) and values.
    pub headers: Vec<(String, String)>,
    /// The body, parsed as JSON (`Null` when it was not JSON).
    pub body: Value,
}

impl Captured {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every message text in the request (system prompt included), joined, for matching.
    pub fn all_text(&self) -> String {
        let mut out = self.body["system"].as_str().unwrap_or_default().to_owned();
        for m in self.body["messages"].as_array().into_iter().flatten() {
            out.push('\n');
            out.push_str(m["content"].as_str().unwrap_or_default());
        }
        out
    }
}

/// What the server answers.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A status and a raw body, with an optional `Retry-After` in seconds.
    Raw {
        /// The HTTP status.
        status: u16,
        /// The body as sent.
        body: String,
        /// `Retry-After`, in seconds.
        retry_after: Option<u64>,
    },
    /// Say nothing for this long, then close the connection.
    Hang(Duration),
}

impl Reply {
    /// An error status with a provider-style JSON error body.
    pub fn status(status: u16, message: &str) -> Self {
        Reply::Raw {
            status,
            body: json!({"error": {"message": message}}).to_string(),
            retry_after: None,
        }
    }

    /// A 429 with `Retry-After: seconds`.
    pub fn rate_limited(seconds: u64) -> Self {
        Reply::Raw {
            status: 429,
            body: json!({"error": {"message": "slow down"}}).to_string(),
            retry_after: Some(seconds),
        }
    }
}

/// The two wire protocols.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// OpenAI chat completions.
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
}

impl Protocol {
    /// A 200 answer carrying `text`, in this protocol, with token usage 100 in and 20 out.
    pub fn answer(self, text: &str, model: &str) -> Reply {
        let body = match self {
            Protocol::OpenAi => json!({
                "id": "chatcmpl-fake", "object": "chat.completion", "model": model,
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
            }),
            Protocol::Anthropic => json!({
                "id": "msg_fake", "type": "message", "role": "assistant", "model": model,
                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 100, "output_tokens": 20}
            }),
        };
        Reply::Raw {
            status: 200,
            body: body.to_string(),
            retry_after: None,
        }
    }
}

/// A 200 answer to `POST /embeddings` carrying `vectors`, listed last first (servers may answer
/// in any order; `index` says where each belongs).
pub fn embeddings_answer(vectors: &[Vec<f32>], model: &str) -> Reply {
    let data: Vec<Value> = vectors
        .iter()
        .enumerate()
        .rev()
        .map(|(i, v)| json!({"object": "embedding", "index": i, "embedding": v}))
        .collect();
    let body = json!({
        "object": "list", "data": data, "model": model,
        "usage": {"prompt_tokens": 8, "total_tokens": 8}
    });
    Reply::Raw {
        status: 200,
        body: body.to_string(),
        retry_after: None,
    }
}

type Handler = dyn Fn(&Captured) -> Reply + Send + Sync;

/// A running fake provider; it stops when dropped.
pub struct FakeServer {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Captured>>>,
    stop: Arc<AtomicBool>,
}

impl std::fmt::Debug for FakeServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeServer")
            .field("addr", &self.addr)
            .finish()
    }
}

impl FakeServer {
    /// Starts a server on a free loopback port that answers with `handler`.
    ///
    /// # Panics
    /// When no loopback port can be bound (a test environment problem).
    pub fn start(handler: impl Fn(&Captured) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let addr = listener.local_addr().expect("local address");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let handler: Arc<Handler> = Arc::new(handler);
        let (seen, stopping) = (requests.clone(), stop.clone());
        thread::spawn(move || {
            for stream in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (handler, seen) = (handler.clone(), seen.clone());
                thread::spawn(move || serve(stream, &*handler, &seen));
            }
        });
        Self {
            addr,
            requests,
            stop,
        }
    }

    /// Answers with `replies` in order; once they run out, with a 500.
    pub fn scripted(replies: Vec<Reply>) -> Self {
        let queue = Mutex::new(
            replies
                .into_iter()
                .collect::<std::collections::VecDeque<_>>(),
        );
        Self::start(move |_| {
            queue
                .lock()
                .expect("queue")
                .pop_front()
                .unwrap_or_else(|| Reply::status(500, "the fake server's script ran out"))
        })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<Captured> {
        self.requests.lock().expect("requests").clone()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

fn serve(stream: TcpStream, handler: &Handler, seen: &Mutex<Vec<Captured>>) {
    let Some(request) = read_request(&stream) else {
        return;
    };
    seen.lock().expect("requests").push(request.clone());
    match handler(&request) {
        Reply::Hang(duration) => thread::sleep(duration),
        Reply::Raw {
            status,
            body,
            retry_after,
        } => {
            let retry = retry_after
                .map(|s| format!("Retry-After: {s}\r\n"))
                .unwrap_or_default();
            let head = format!(
                "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                 Connection: close\r\n{retry}\r\n",
                reason(status),
                body.len()
            );
            let mut stream = stream;
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body.as_bytes());
            let _ = stream.flush();
        }
    }
}

fn read_request(stream: &TcpStream) -> Option<Captured> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let path = line.split_whitespace().nth(1)?.to_owned();
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Captured {
        path,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    })
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}
