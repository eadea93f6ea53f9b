//! Choosing an embedder by name and settings: the errors a person sees, and the HTTP embedder
//! reached through the same path the CLI and server use.

use lore_providers::embedders::{EmbedderConfig, EmbedderKind, connect};
use lore_providers::fake::{FakeServer, embeddings_answer};

/// The error text of a connection that must fail.
fn refused(config: &EmbedderConfig) -> String {
    match connect(config) {
        Ok(e) => panic!("connected to {}", e.id()),
        Err(e) => e.to_string(),
    }
}

fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let pairs: Vec<(String, String)> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name| {
        pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    }
}

#[test]
fn names_parse_and_unknown_ones_are_refused() {
    assert_eq!(EmbedderKind::parse("MiniLM").unwrap(), EmbedderKind::Minilm);
    assert_eq!(EmbedderKind::parse("http").unwrap().as_str(), "http");
    let err = EmbedderKind::parse("bert-large").unwrap_err().to_string();
    assert!(
        err.contains("bert-large") && err.contains("builtin, minilm or http"),
        "{err}"
    );
    let err = EmbedderConfig::from_vars(vars(&[("LORE_EMBEDDER", "word2vec")]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("word2vec"), "{err}");
    let default = EmbedderConfig::from_vars(vars(&[])).unwrap();
    assert_eq!(default.kind, EmbedderKind::Builtin);
    assert!(
        connect(&default)
            .unwrap()
            .id()
            .name
            .starts_with("builtin-hash")
    );
}

#[test]
fn the_http_embedder_is_configured_from_the_environment() {
    let server = FakeServer::start(|request| {
        let n = request.body["input"].as_array().map_or(0, Vec::len);
        embeddings_answer(&vec![vec![3.0, 4.0]; n], "nomic-embed-text")
    });
    let base = format!("{}/v1", server.url());
    let config = EmbedderConfig::from_vars(vars(&[
        ("LORE_EMBEDDER", "http"),
        ("LORE_EMBEDDER_MODEL", "nomic-embed-text"),
        ("LORE_EMBEDDER_BASE_URL", &base),
        ("LORE_EMBEDDER_API_KEY", "sk-local-secret"),
    ]))
    .unwrap();
    assert!(!format!("{config:?}").contains("sk-local-secret"));
    let embedder = connect(&config).unwrap();
    assert_eq!(embedder.id().dim, 2);
    assert_eq!(embedder.embed("hello").unwrap(), [0.6, 0.8]);
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some("Bearer sk-local-secret")
    );
}

#[test]
fn missing_settings_name_the_variable_to_set() {
    let http = EmbedderConfig::default().with_kind(EmbedderKind::Http);
    let err = refused(&http);
    assert!(err.contains("LORE_EMBEDDER_MODEL"), "{err}");
    let openai_without_key = EmbedderConfig {
        model: Some("text-embedding-3-small".into()),
        ..http
    };
    let err = refused(&openai_without_key);
    assert!(err.contains("LORE_EMBEDDER_API_KEY"), "{err}");
    // A service that is not there fails at connection, naming the transport problem.
    let unreachable = EmbedderConfig {
        base_url: "http://127.0.0.1:9/v1".into(),
        ..openai_without_key
    };
    let err = refused(&unreachable);
    assert!(
        err.contains("127.0.0.1:9") || err.contains("onnect"),
        "{err}"
    );

    let minilm = EmbedderConfig::default().with_kind(EmbedderKind::Minilm);
    let err = refused(&minilm);
    assert!(err.contains("LORE_MINILM_PATH"), "{err}");
}

#[test]
fn splitting_a_question_over_two_threads_is_a_yes_or_no_setting() {
    let vars = |value: &'static str| {
        move |name: &str| (name == "LORE_MINILM_SPLIT_QUERIES").then(|| value.to_owned())
    };
    assert!(
        EmbedderConfig::from_vars(vars("true"))
            .unwrap()
            .minilm_split_queries
    );
    assert!(
        !EmbedderConfig::from_vars(vars("0"))
            .unwrap()
            .minilm_split_queries
    );
    // On unless turned off: a question shares its products only while no other embedding runs.
    assert!(
        EmbedderConfig::from_vars(|_| None)
            .unwrap()
            .minilm_split_queries
    );
    assert!(EmbedderConfig::default().minilm_split_queries);
    let err = EmbedderConfig::from_vars(vars("sometimes"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("LORE_MINILM_SPLIT_QUERIES") && err.contains("sometimes"),
        "{err}"
    );
}

#[cfg(not(feature = "minilm"))]
#[test]
fn a_build_without_the_model_says_how_to_get_it() {
    let config = EmbedderConfig {
        minilm_path: Some("/nonexistent".into()),
        ..EmbedderConfig::default().with_kind(EmbedderKind::Minilm)
    };
    let err = refused(&config);
    assert!(err.contains("--features minilm"), "{err}");
}
