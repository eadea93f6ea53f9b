//! MCP over standard input and output, with a line filter in front of rmcp.
//!
//! rmcp's stdio transport drops a line that is not a JSON-RPC message without a word, so a
//! client that sent garbage waits forever. The filter reads the lines first: a valid message
//! goes on to rmcp through an in-memory pipe, anything else is answered at once with a JSON-RPC
//! error ([`super::wire::check_message`]) and the server keeps serving. Output is written a whole
//! line at a time by one task, so an error answer never lands inside one of rmcp's messages.

use std::sync::Arc;

use lore_engine::Engine;
use rmcp::ServiceExt;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use super::LoreMcp;
use super::wire::check_message;

/// How many bytes rmcp may have in flight in each direction of the in-memory pipes.
const PIPE_BYTES: usize = 1 << 20;

/// Serves the tools over `input` and `output` (stdin and stdout in `lore mcp`) until the client
/// closes `input`.
///
/// # Errors
/// When the handshake fails, or reading or writing the transport does.
pub async fn serve_lines<R, W>(engine: Arc<Engine>, input: R, output: W) -> anyhow::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_lines_with(LoreMcp::new(engine), input, output).await
}

/// [`serve_lines`] with these tools (a [`LoreMcp::with_tools`] selection).
///
/// # Errors
/// As [`serve_lines`].
pub async fn serve_lines_with<R, W>(tools: LoreMcp, input: R, output: W) -> anyhow::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (to_rmcp, rmcp_in) = tokio::io::duplex(PIPE_BYTES);
    let (rmcp_out, from_rmcp) = tokio::io::duplex(PIPE_BYTES);
    let (lines, outbox) = mpsc::channel::<Vec<u8>>(64);
    let writer = tokio::spawn(write_lines(outbox, output));
    let relay = tokio::spawn(relay_lines(from_rmcp, lines.clone()));
    let filter = tokio::spawn(filter_lines(input, to_rmcp, lines));
    let served = async {
        let running = tools.serve((rmcp_in, rmcp_out)).await?;
        running.waiting().await?;
        anyhow::Ok(())
    }
    .await;
    // The answers already queued are written before returning, whatever rmcp's fate.
    let filtered = filter.await?;
    relay.await??;
    writer.await??;
    served?;
    Ok(filtered?)
}

/// Passes each JSON-RPC line of `input` to rmcp and answers every other line with an error.
async fn filter_lines<R, W>(
    input: R,
    mut to_rmcp: W,
    answers: mpsc::Sender<Vec<u8>>,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut input = BufReader::new(input);
    let mut line = Vec::new();
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line).await? == 0 {
            // End of input: closing the pipe tells rmcp the client left.
            return to_rmcp.shutdown().await;
        }
        let text = line.trim_ascii();
        if text.is_empty() {
            continue;
        }
        match check_message(text) {
            None => {
                to_rmcp.write_all(text).await?;
                to_rmcp.write_all(b"\n").await?;
                to_rmcp.flush().await?;
            }
            Some(error) => {
                tracing::warn!(%error, "answered a line that is not a JSON-RPC message");
                let mut answer = error.to_string().into_bytes();
                answer.push(b'\n');
                if answers.send(answer).await.is_err() {
                    return Ok(());
                }
            }
        }
    }
}

/// Forwards rmcp's output line by line to the writer.
async fn relay_lines<R: AsyncRead + Unpin>(
    from_rmcp: R,
    lines: mpsc::Sender<Vec<u8>>,
) -> std::io::Result<()> {
    let mut from_rmcp = BufReader::new(from_rmcp);
    loop {
        let mut line = Vec::new();
        if from_rmcp.read_until(b'\n', &mut line).await? == 0 || lines.send(line).await.is_err() {
            return Ok(());
        }
    }
}

/// Writes whole lines to `output`, flushing each, until every sender is gone.
async fn write_lines<W: AsyncWrite + Unpin>(
    mut outbox: mpsc::Receiver<Vec<u8>>,
    mut output: W,
) -> std::io::Result<()> {
    while let Some(line) = outbox.recv().await {
        output.write_all(&line).await?;
        output.flush().await?;
    }
    Ok(())
}
