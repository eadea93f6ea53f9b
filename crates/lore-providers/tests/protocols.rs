//! Both clients against a fake provider on loopback, speaking each real protocol.

use std::time::{Duration, Instant};

use lore_core::ports::llm::{LlmError, LlmRequest, complete_json};
use lore_providers::fake::{FakeServer, Protocol, Reply};
use lore_providers::{ApiKey, LlmConfig, ProviderKind, RetryPolicy, connect};
use serde_json::json;

fn config(kind: ProviderKind, server: &FakeServer) -> LlmConfig {
    LlmConfig {
        kind,
        base_url: match kind {
            ProviderKind::OpenAi => format!("{}/v1", server.url()),
            _ => server.url(),
        },
        model: "test-model".into(),
        api_key: Some(ApiKey::new("sk-test-secret")),
        timeout: Duration::from_secs(5),
        retry: RetryPolicy {
            max_retries: 2,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_secs(2),
        },
    }
}

fn request() -> LlmRequest {
    LlmRequest::new("You screen resumes.", "Jane, 5 years Python")
}

fn schema() -> serde_json::Value {
    json!({"type": "object", "required": ["overall_score"],
           "properties": {"overall_score": {"type": "integer"}}})
}

#[test]
fn openai_requests_carry_the_system_prompt_key_and_model() {
    let server = FakeServer::scripted(vec![Protocol::OpenAi.answer("hello", "gpt-served")]);
    let llm = connect(&config(ProviderKind::OpenAi, &server));
    let out = llm.complete(&request()).unwrap();
    assert_eq!(out.text, "hello");
    assert_eq!(out.model, "gpt-served");
    assert_eq!((out.usage.input_tokens, out.usage.output_tokens), (100, 20));
    let seen = &server.requests()[0];
    assert_eq!(seen.path, "/v1/chat/completions");
    assert_eq!(seen.header("authorization"), Some("Bearer sk-test-secret"));
    assert_eq!(seen.body["model"], "test-model");
    assert_eq!(
        seen.body["messages"][0],
        json!({"role": "system", "content": "You screen resumes."})
    );
    assert_eq!(seen.body["messages"][1]["role"], "user");
    assert!(seen.body.get("response_format").is_none());
}

#[test]
fn anthropic_requests_use_the_messages_protocol() {
    let server = FakeServer::scripted(vec![
        Protocol::Anthropic.answer("{\"overall_score\": 55}", "claude-x"),
    ]);
    let llm = connect(&config(ProviderKind::Anthropic, &server));
    let out = complete_json(llm.as_ref(), &request().with_schema(schema())).unwrap();
    assert_eq!(out.json, Some(json!({"overall_score": 55})));
    assert_eq!(out.model, "claude-x");
    let seen = &server.requests()[0];
    assert_eq!(seen.path, "/v1/messages");
    assert_eq!(seen.header("x-api-key"), Some("sk-test-secret"));
    assert_eq!(seen.header("anthropic-version"), Some("2023-06-01"));
    assert!(
        seen.body["system"]
            .as_str()
            .unwrap()
            .starts_with("You screen resumes.")
    );
    assert_eq!(seen.body["max_tokens"], 4096);
    assert_eq!(seen.body["messages"].as_array().unwrap().len(), 1);
}

#[test]
fn a_malformed_json_answer_is_repaired_once_then_refused() {
    for protocol in [Protocol::OpenAi, Protocol::Anthropic] {
        let kind = match protocol {
            Protocol::OpenAi => ProviderKind::OpenAi,
            Protocol::Anthropic => ProviderKind::Anthropic,
        };
        let server = FakeServer::scripted(vec![
            protocol.answer("{\"overall_score\": 55", "m"),
            protocol.answer("{\"overall_score\": 55}", "m"),
            protocol.answer("Sorry, I cannot.", "m"),
            protocol.answer("{\"overall_score\": \"low\"}", "m"),
        ]);
        let llm = connect(&config(kind, &server));
        let req = request().with_schema(schema());
        let repaired = complete_json(llm.as_ref(), &req).unwrap();
        assert_eq!(
            repaired.json,
            Some(json!({"overall_score": 55})),
            "{protocol:?}"
        );
        assert_eq!(repaired.usage.input_tokens, 200, "both calls are paid for");
        match complete_json(llm.as_ref(), &req).unwrap_err() {
            LlmError::InvalidOutput { why, text, .. } => {
                assert!(why.contains("expected integer, got string"), "{why}");
                assert_eq!(text, "{\"overall_score\": \"low\"}");
            }
            other => panic!("{protocol:?}: {other:?}"),
        }
        let repair = &server.requests()[1];
        let last = repair.body["messages"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone();
        assert!(
            last["content"].as_str().unwrap().contains("cannot be used"),
            "{last}"
        );
    }
}

#[test]
fn a_body_that_is_not_the_protocol_is_a_protocol_error() {
    let server = FakeServer::scripted(vec![
        Reply::Raw {
            status: 200,
            body: "<html>proxy</html>".into(),
            retry_after: None,
        },
        Reply::Raw {
            status: 200,
            body: "{\"choices\": []}".into(),
            retry_after: None,
        },
    ]);
    let llm = connect(&config(ProviderKind::OpenAi, &server));
    for _ in 0..2 {
        let err = llm.complete(&request()).unwrap_err();
        assert!(matches!(err, LlmError::Protocol(_)), "{err}");
    }
}

#[test]
fn a_429_is_retried_after_the_retry_after_it_names() {
    let server = FakeServer::scripted(vec![
        Reply::rate_limited(1),
        Protocol::OpenAi.answer("ok", "m"),
    ]);
    let llm = connect(&config(ProviderKind::OpenAi, &server));
    let started = Instant::now();
    assert_eq!(llm.complete(&request()).unwrap().text, "ok");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn server_errors_are_retried_with_backoff_and_gives_up_after_the_policy() {
    let server = FakeServer::scripted(vec![
        Reply::status(503, "overloaded"),
        Protocol::Anthropic.answer("ok", "m"),
    ]);
    let llm = connect(&config(ProviderKind::Anthropic, &server));
    assert_eq!(llm.complete(&request()).unwrap().text, "ok");

    let server = FakeServer::start(|_| Reply::rate_limited(0));
    let llm = connect(&config(ProviderKind::OpenAi, &server));
    let err = llm.complete(&request()).unwrap_err();
    assert!(
        matches!(err, LlmError::RateLimited { attempts: 3 }),
        "{err}"
    );
    assert_eq!(server.requests().len(), 3);
}

#[test]
fn client_errors_are_not_retried_and_never_echo_the_key() {
    let server =
        FakeServer::start(|_| Reply::status(401, "Incorrect API key provided: sk-test-secret"));
    let llm = connect(&config(ProviderKind::OpenAi, &server));
    let err = llm.complete(&request()).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, LlmError::Http { status: 401, .. }), "{text}");
    assert!(!text.contains("sk-test-secret"), "{text}");
    assert!(text.contains("<redacted>"), "{text}");
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn a_silent_provider_times_out() {
    let server = FakeServer::start(|_| Reply::Hang(Duration::from_secs(3)));
    let mut cfg = config(ProviderKind::Anthropic, &server);
    cfg.timeout = Duration::from_millis(300);
    let started = Instant::now();
    let err = connect(&cfg).complete(&request()).unwrap_err();
    assert!(matches!(err, LlmError::Timeout(_)), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn an_unreachable_provider_is_a_transport_error() {
    let url = {
        let server = FakeServer::start(|_| Reply::status(500, "x"));
        server.url()
    };
    let mut cfg = LlmConfig::offline();
    cfg.kind = ProviderKind::OpenAi;
    cfg.base_url = url;
    std::thread::sleep(Duration::from_millis(50));
    let err = connect(&cfg).complete(&request()).unwrap_err();
    assert!(matches!(err, LlmError::Transport(_)), "{err}");
}

/// A request naming its own model and sampling, as the lesson proposer sends it.
fn tuned_request() -> LlmRequest {
    let mut request = request();
    request.model = Some("proposer-model".into());
    request.temperature = Some(0.3);
    request.max_tokens = Some(1500);
    request
}

#[test]
fn a_request_s_model_temperature_and_token_limit_reach_both_protocols_as_written() {
    for (kind, protocol) in [
        (ProviderKind::OpenAi, Protocol::OpenAi),
        (ProviderKind::Anthropic, Protocol::Anthropic),
    ] {
        let server = FakeServer::scripted(vec![protocol.answer("ok", "served")]);
        let llm = connect(&config(kind, &server));
        llm.complete(&tuned_request()).unwrap();
        let body = &server.requests()[0].body;
        assert_eq!(body["model"], "proposer-model", "{kind:?}: {body}");
        // 0.3 exactly: an f32 widened on the way would arrive as 0.30000001192092896.
        assert_eq!(body["temperature"].as_f64(), Some(0.3), "{kind:?}: {body}");
        assert_eq!(body["max_tokens"], 1500, "{kind:?}: {body}");

        // Without them, the configured model and the protocol's defaults.
        let server = FakeServer::scripted(vec![protocol.answer("ok", "served")]);
        connect(&config(kind, &server))
            .complete(&request())
            .unwrap();
        let body = &server.requests()[0].body;
        assert_eq!(body["model"], "test-model", "{kind:?}");
        assert!(body.get("temperature").is_none(), "{kind:?}: {body}");
    }
}
