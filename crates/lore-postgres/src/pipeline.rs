//! A transaction sent whole: `BEGIN`, its statements and `COMMIT` go to the server together and
//! this process waits once, for all the answers.
//!
//! tokio-postgres writes a request to the connection when its future is first polled and
//! matches answers in the order requests went out, so polling every statement once, in order,
//! before waiting on any of them puts them on the wire in that order (a pipeline). The server
//! runs them one after the other; after a failed statement it refuses the rest of the
//! transaction and turns the `COMMIT` into a rollback, so nothing of a failed transaction stays.

use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::task::Poll;

use tokio_postgres::{Client, Error};

/// One statement's answer to come: rows affected.
pub(crate) type Call<'c> = Pin<Box<dyn Future<Output = Result<u64, Error>> + Send + 'c>>;

/// Runs `calls` between `BEGIN` and `COMMIT` in one round trip and returns the first failure,
/// in the order the statements ran (a statement refused because an earlier one failed says
/// less than that earlier one).
///
/// A statement whose request never left (one whose parameters could not be encoded answers at
/// its first poll) must not be followed by a `COMMIT` of the others: the end of the
/// transaction is chosen after every statement was polled once, and is a `ROLLBACK` when one
/// already failed. `BEGIN` cannot fail on a connection that answers (the pool hands out only
/// idle ones, and this leaves its connection idle, answered in full), so the statements never
/// run outside the transaction.
pub(crate) async fn transaction(client: &Client, calls: Vec<Call<'_>>) -> Result<(), Error> {
    let mut pending: Vec<Call<'_>> = Vec::with_capacity(calls.len() + 2);
    pending.push(Box::pin(async {
        client.batch_execute("BEGIN").await.map(|()| 0)
    }));
    pending.extend(calls);
    let mut answers: Vec<Option<Result<u64, Error>>> = Vec::new();
    answers.resize_with(pending.len(), || None);
    let mut ended = false;
    poll_fn(|cx| {
        for (call, answer) in pending.iter_mut().zip(answers.iter_mut()) {
            if answer.is_none()
                && let Poll::Ready(a) = call.as_mut().poll(cx)
            {
                *answer = Some(a);
            }
        }
        if !ended {
            ended = true;
            let failed = answers.iter().any(|a| matches!(a, Some(Err(_))));
            let end = if failed { "ROLLBACK" } else { "COMMIT" };
            let mut call: Call<'_> =
                Box::pin(async move { client.batch_execute(end).await.map(|()| 0) });
            let answer = match call.as_mut().poll(cx) {
                Poll::Ready(a) => Some(a),
                Poll::Pending => None,
            };
            pending.push(call);
            answers.push(answer);
        }
        if answers.iter().all(Option::is_some) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    answers
        .into_iter()
        .map(|a| a.expect("every call answered"))
        .find_map(Result::err)
        .map_or(Ok(()), Err)
}
