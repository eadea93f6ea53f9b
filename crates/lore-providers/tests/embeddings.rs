//! The HTTP embedder against a fake embeddings service on loopback, speaking OpenAI's protocol.

use std::time::Duration;

use lore_providers::fake::{Captured, FakeServer, Reply, embeddings_answer};
use lore_providers::{ApiKey, EMBED_BATCH, HttpEmbedder, HttpEmbedderConfig, RetryPolicy};
use lore_recall::{BuiltinEmbedder, Embedder, cosine};

fn config(server: &FakeServer) -> HttpEmbedderConfig {
    HttpEmbedderConfig {
        base_url: format!("{}/v1/", server.url()),
        model: "embed-small".into(),
        api_key: Some(ApiKey::new("sk-embed-secret")),
        timeout: Duration::from_secs(5),
        retry: RetryPolicy {
            max_retries: 2,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_secs(1),
        },
    }
}

/// A service whose vectors are the builtin embedder's over 16 buckets, scaled by 3 so the
/// client's normalization is observable.
fn service(request: &Captured) -> Reply {
    let model = BuiltinEmbedder::with_dim(16).unwrap();
    let vectors: Vec<Vec<f32>> = request.body["input"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let v = model.embed(t.as_str().unwrap()).unwrap();
            v.into_iter().map(|x| x * 3.0).collect()
        })
        .collect();
    embeddings_answer(&vectors, "embed-small")
}

#[test]
fn vectors_come_back_in_input_order_normalized_with_the_probed_dimension() {
    let server = FakeServer::start(service);
    let embedder = HttpEmbedder::connect(&config(&server)).unwrap();
    let id = embedder.id();
    assert_eq!(id.dim, 16);
    assert!(id.name.contains("embed-small"), "{id}");

    let texts = [
        "roll back the deploy",
        "invoice totals",
        "deploy rollback steps",
    ];
    let batch = embedder.embed_batch(&texts).unwrap();
    let reference = BuiltinEmbedder::with_dim(16).unwrap();
    for (text, v) in texts.iter().zip(&batch) {
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "{text}: norm {norm}");
        let expected = reference.embed(text).unwrap();
        assert!(cosine(v, &expected) > 0.999, "{text} out of order");
    }
    assert_eq!(embedder.embed(texts[1]).unwrap(), batch[1]);

    let seen = server.requests();
    assert_eq!(seen[0].path, "/v1/embeddings");
    assert_eq!(
        seen[0].header("authorization"),
        Some("Bearer sk-embed-secret")
    );
    assert_eq!(seen[1].body["model"], "embed-small");
    assert_eq!(seen[1].body["input"], serde_json::json!(texts));
}

#[test]
fn large_batches_are_split_into_requests() {
    let server = FakeServer::start(service);
    let embedder = HttpEmbedder::connect(&config(&server)).unwrap();
    let texts: Vec<String> = (0..EMBED_BATCH * 2 + 5)
        .map(|i| format!("memory {i}"))
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let vectors = embedder.embed_batch(&refs).unwrap();
    assert_eq!(vectors.len(), refs.len());
    let sizes: Vec<usize> = server.requests()[1..]
        .iter()
        .map(|r| r.body["input"].as_array().unwrap().len())
        .collect();
    assert_eq!(sizes, [EMBED_BATCH, EMBED_BATCH, 5]);
}

#[test]
fn busy_answers_are_retried_and_errors_are_clear() {
    let ok = embeddings_answer(&[vec![0.0, 2.0]], "m");
    let server = FakeServer::scripted(vec![
        Reply::rate_limited(0),
        Reply::status(503, "warming up"),
        ok.clone(),
        Reply::status(401, "bad key sk-embed-secret"),
    ]);
    let embedder = HttpEmbedder::connect(&config(&server)).unwrap();
    assert_eq!(embedder.id().dim, 2);
    assert_eq!(server.requests().len(), 3, "two retries, then the answer");
    let err = embedder.embed("x").unwrap_err().to_string();
    assert!(err.contains("401") && err.contains("bad key"), "{err}");
    assert!(
        !err.contains("sk-embed-secret"),
        "the key is redacted: {err}"
    );
}

#[test]
fn malformed_answers_are_refused() {
    let cases = [
        (r#"{"data": []}"#, "0 embeddings for 1"),
        (r#"{"nothing": 1}"#, "no data array"),
        (
            r#"{"data": [{"index": 0, "embedding": ["a"]}]}"#,
            "non-number",
        ),
        (
            r#"{"data": [{"index": 5, "embedding": [1.0]}]}"#,
            "bad embedding index",
        ),
        (r#"{"data": [{"index": 0, "embedding": []}]}"#, "empty"),
    ];
    for (body, expected) in cases {
        let server = FakeServer::scripted(vec![Reply::Raw {
            status: 200,
            body: body.into(),
            retry_after: None,
        }]);
        let err = HttpEmbedder::connect(&config(&server))
            .unwrap_err()
            .to_string();
        assert!(err.contains(expected), "{body}: {err}");
    }
    // A service that changes its dimension mid-way is refused, not mixed into the index.
    let server = FakeServer::scripted(vec![
        embeddings_answer(&[vec![1.0, 0.0]], "m"),
        embeddings_answer(&[vec![1.0, 0.0, 0.0]], "m"),
    ]);
    let embedder = HttpEmbedder::connect(&config(&server)).unwrap();
    let err = embedder.embed("x").unwrap_err().to_string();
    assert!(
        err.contains("3 dimensions") && err.contains("expects 2"),
        "{err}"
    );
}

#[test]
fn bad_configuration_is_refused_before_any_request() {
    let server = FakeServer::start(service);
    let mut bad_url = config(&server);
    bad_url.base_url = "localhost:11434".into();
    let err = HttpEmbedder::connect(&bad_url).unwrap_err().to_string();
    assert!(err.contains("LORE_EMBEDDER_BASE_URL"), "{err}");
    let mut no_model = config(&server);
    no_model.model = " ".into();
    let err = HttpEmbedder::connect(&no_model).unwrap_err().to_string();
    assert!(err.contains("LORE_EMBEDDER_MODEL"), "{err}");
    assert!(server.requests().is_empty());
    let debug = format!("{:?}", config(&server));
    assert!(!debug.contains("sk-embed-secret"), "{debug}");
}
