//! Hearing every server's writes: each store keeps one connection of its own that LISTENs on
//! [`CHANNEL`], and every write transaction that draws a number NOTIFYs it at commit (in
//! [`crate::rows::Writer::commit`] and [`crate::rows::insert_new`]). PostgreSQL delivers a notification only when its
//! transaction commits, so a follower woken by it always finds the write.
//!
//! The payload is the schema the write went to, so stores of different schemas on one database
//! (tests, benchmarks) do not wake each other. A notification is only a hint to read the store
//! now: followers read it on their timer all the same, so a lost connection costs latency,
//! never a change.

use std::future::poll_fn;
use std::sync::Arc;
use std::time::Duration;

use lore_core::ports::bell::ChangeBell;
use tokio_postgres::{AsyncMessage, NoTls};

use crate::connect::Scrubber;

/// The channel every Lore write notifies.
pub(crate) const CHANNEL: &str = "lore_changes";

/// How long to wait before listening again after the connection failed.
const RETRY: Duration = Duration::from_secs(1);

/// Listens until the runtime shuts down, ringing `bell` for each write to this store's schema,
/// and reconnecting when the connection fails.
pub(crate) async fn listen(
    config: tokio_postgres::Config,
    bell: Arc<ChangeBell>,
    scrubber: Scrubber,
) {
    loop {
        if let Err(err) = hear(&config, &bell).await {
            let err = scrubber.error(crate::connect::Fail::Db(err));
            tracing::warn!(error = %err, "cannot hear other servers' writes; retrying");
        }
        // Writes made while nobody listened were not announced: let followers look.
        bell.ring();
        tokio::time::sleep(RETRY).await;
    }
}

/// One listening connection, until it fails.
async fn hear(
    config: &tokio_postgres::Config,
    bell: &ChangeBell,
) -> Result<(), tokio_postgres::Error> {
    let (client, mut conn) = config.connect(NoTls).await?;
    let (heard, mut payloads) = tokio::sync::mpsc::unbounded_channel::<String>();
    let driver = tokio::spawn(async move {
        loop {
            match poll_fn(|cx| conn.poll_message(cx)).await {
                Some(Ok(AsyncMessage::Notification(n))) => {
                    let _ = heard.send(n.payload().to_owned());
                }
                Some(Ok(_)) => {}
                Some(Err(err)) => return Err(err),
                None => return Ok(()),
            }
        }
    });
    let schema: String = client
        .query_one("SELECT current_schema()", &[])
        .await?
        .get(0);
    client.batch_execute(&format!("LISTEN {CHANNEL}")).await?;
    // Writes committed before LISTEN took effect were not heard.
    bell.ring();
    while let Some(payload) = payloads.recv().await {
        if payload == schema {
            bell.ring();
        }
    }
    drop(client);
    match driver.await {
        Ok(result) => result,
        Err(_) => Ok(()),
    }
}
