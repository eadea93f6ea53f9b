//! Tokens and scopes: a token for domain `hr` can neither read nor write `finance`, through any
//! REST endpoint or MCP, and roles gate what scopes cannot.

use std::sync::Arc;

use crate::common::{Home, ids, jwt};
use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use lore_core::model::{AuthorKind, Outcome};
use lore_core::{Scope, SkillPath};
use lore_engine::{NewCorrection, NewExecution};
use lore_server::auth::{Access, Role, TokenFile, parse_scope};
use lore_server::{Limits, app};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

const HR: &str = "hr/screen";
const FIN: &str = "finance/audit";

/// How a test's credentials are made: opaque tokens from the token file, or JWTs.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Opaque,
    Hs256,
    EdDsa,
}

struct World {
    kind: Kind,
    home: Home,
    app: Router,
    tokens: std::path::PathBuf,
    /// (execution, lesson) per skill.
    hr: (String, String),
    fin: (String, String),
}

fn seed(home: &Home, skill: &str) -> (String, String) {
    let e = &home.engine;
    let exec = e
        .record_execution(NewExecution {
            skill: SkillPath::parse(skill).unwrap(),
            input: json!({"q": format!("{skill} input")}),
            output: json!({"a": "wrong"}),
            outcome: Outcome::Rejected,
            cost_usd: None,
            latency_ms: None,
            model: None,
            session: None,
            lessons_shown: Vec::new(),
        })
        .unwrap();
    let lesson = e
        .correct(NewCorrection {
            skill: exec.skill.clone(),
            execution_id: exec.id.clone(),
            text: "Always double-check the totals before answering.".into(),
            author_kind: AuthorKind::Human,
            author: None,
        })
        .unwrap()
        .lesson
        .unwrap();
    (exec.id.to_string(), lesson.id.to_string())
}

fn world() -> World {
    world_of(Kind::Opaque)
}

/// One world per kind of credential: every cross-scope test runs with each.
fn worlds() -> [World; 3] {
    [Kind::Opaque, Kind::Hs256, Kind::EdDsa].map(world_of)
}

fn world_of(kind: Kind) -> World {
    let home = Home::new();
    let hr = seed(&home, HR);
    let fin = seed(&home, FIN);
    let tokens = home.lore_home().join("tokens.json");
    // A token must exist before the server starts for authentication to be on.
    TokenFile::load(&tokens)
        .unwrap()
        .create(Role::Admin, Scope::unrestricted())
        .unwrap();
    let verifier = match kind {
        Kind::Opaque => None,
        Kind::Hs256 => Some(jwt::verifier(true, false)),
        Kind::EdDsa => Some(jwt::verifier(false, true)),
    };
    let access = Access::new(&TokenFile::load(&tokens).unwrap(), verifier);
    let app = app(
        Arc::clone(&home.engine),
        Limits::default(),
        access,
        CancellationToken::new(),
    );
    World {
        kind,
        home,
        app,
        tokens,
        hr,
        fin,
    }
}

impl World {
    fn token(&self, role: Role, scope: &str) -> String {
        let mint = match self.kind {
            Kind::Opaque => return self.opaque(role, scope),
            Kind::Hs256 => jwt::hs256,
            Kind::EdDsa => jwt::eddsa,
        };
        let scope = parse_scope(scope).unwrap();
        let domains: Vec<&str> = match &scope.domains {
            Some(d) => d.iter().map(String::as_str).collect(),
            None => vec!["*"],
        };
        let role = format!("{role:?}").to_lowercase();
        mint(&jwt::claims(&role, &domains))
    }

    fn opaque(&self, role: Role, scope: &str) -> String {
        let mut file = TokenFile::load(&self.tokens).unwrap();
        file.create(role, parse_scope(scope).unwrap()).unwrap().1
    }

    async fn send(
        &self,
        token: Option<&str>,
        method: Method,
        uri: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut req = Request::builder().method(method).uri(uri);
        if let Some(t) = token {
            req = req.header(header::AUTHORIZATION, format!("Bearer {t}"));
        }
        let body = match body {
            Some(v) => {
                req = req.header(header::CONTENT_TYPE, "application/json");
                Body::from(v.to_string())
            }
            None => Body::empty(),
        };
        let res = self
            .app
            .clone()
            .oneshot(req.body(body).unwrap())
            .await
            .unwrap();
        let status = res.status();
        let bytes = axum::body::to_bytes(res.into_body(), usize::MAX)
            .await
            .unwrap();
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }
}

#[tokio::test]
async fn requests_without_a_valid_token_are_refused() {
    let w = world();
    for token in [None, Some("lore_not-a-token"), Some("")] {
        for uri in ["/v1/status", "/v1/lessons", "/v1/executions"] {
            let (status, body) = w.send(token, Method::GET, uri, None).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{uri} {token:?}");
            assert_eq!(body["error"]["code"], "unauthenticated");
        }
    }
    let (status, _) = w.send(None, Method::POST, "/mcp", Some(json!({}))).await;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "MCP over HTTP without a token"
    );

    let token = w.token(Role::Agent, "domain:hr");
    let (status, _) = w.send(Some(&token), Method::GET, "/v1/status", None).await;
    assert_eq!(status, StatusCode::OK);
    let id = TokenFile::load(&w.tokens)
        .unwrap()
        .records()
        .last()
        .unwrap()
        .id
        .clone();
    TokenFile::load(&w.tokens).unwrap().revoke(&id).unwrap();
    // Revocation is read from the file on the next request, without a restart.
    let (status, _) = w.send(Some(&token), Method::GET, "/v1/status", None).await;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "a revoked token still works"
    );
}

/// Every REST read of `finance` through an `hr` token comes back empty or not found.
#[tokio::test]
async fn an_hr_token_reads_nothing_of_finance() {
    for w in worlds() {
        let hr = w.token(Role::Reviewer, "domain:hr");
        let t = Some(hr.as_str());

        let (_, page) = w.send(t, Method::GET, "/v1/executions", None).await;
        assert_eq!(ids(&page["items"]), std::slice::from_ref(&w.hr.0));
        let (_, page) = w.send(t, Method::GET, "/v1/lessons", None).await;
        assert_eq!(ids(&page["items"]), std::slice::from_ref(&w.hr.1));
        let (_, page) = w
            .send(t, Method::GET, "/v1/executions?skill=finance/audit", None)
            .await;
        assert_eq!(page["items"], json!([]));
        let (_, found) = w
            .send(
                t,
                Method::GET,
                "/v1/search?q=totals%20answering&limit=50",
                None,
            )
            .await;
        let skills: Vec<&str> = found["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["skill"].as_str().unwrap())
            .collect();
        assert!(
            !skills.is_empty() && skills.iter().all(|s| *s == HR),
            "{found}"
        );
        let (_, status) = w.send(t, Method::GET, "/v1/status", None).await;
        assert_eq!(status["counts"]["executions"], 1);
        assert_eq!(status["counts"]["lessons"], 1);

        for uri in [
            format!("/v1/executions/{}", w.fin.0),
            format!("/v1/lessons/{}", w.fin.1),
        ] {
            let (status, body) = w.send(t, Method::GET, &uri, None).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{uri}: {body}");
        }
        let (status, body) = w
            .send(t, Method::GET, "/v1/skills/finance/audit/prompt", None)
            .await;
        assert!(matches!(status.as_u16(), 403 | 404), "{status}: {body}");
    }
}

/// Every REST write to `finance` through an `hr` token is refused, and nothing changes.
#[tokio::test]
async fn an_hr_token_writes_nothing_to_finance() {
    for w in worlds() {
        let hr = w.token(Role::Admin, "domain:hr");
        let t = Some(hr.as_str());
        let before = w.home.snapshot();
        let fin_lesson = format!("/v1/lessons/{}", w.fin.1);
        let cases = [
            (
                Method::POST,
                "/v1/executions".to_owned(),
                json!({"skill": FIN, "input": {}, "output": {}}),
                403,
            ),
            (
                Method::POST,
                "/v1/corrections".to_owned(),
                json!({"skill": FIN, "execution_id": w.fin.0, "text": "Use the ledger."}),
                403,
            ),
            // Naming an hr skill with a finance execution does not smuggle the write through.
            (
                Method::POST,
                "/v1/corrections".to_owned(),
                json!({"skill": HR, "execution_id": w.fin.0, "text": "Use the ledger."}),
                404,
            ),
            (
                Method::PATCH,
                fin_lesson.clone(),
                json!({"rule": "Use the ledger."}),
                404,
            ),
            (Method::POST, format!("{fin_lesson}/retire"), json!({}), 404),
            (
                Method::POST,
                format!("/v1/executions/{}/signals", w.fin.0),
                json!({"channel": "hard_failure", "message": "boom"}),
                404,
            ),
            (
                Method::POST,
                "/v1/memory/archival".to_owned(),
                json!({"skill": FIN, "text": "Use the ledger."}),
                403,
            ),
            (
                Method::PUT,
                "/v1/memory/core".to_owned(),
                json!({"skill": FIN, "block": "user", "text": "Use the ledger."}),
                403,
            ),
            (
                Method::POST,
                "/v1/memory/recall".to_owned(),
                json!({"skill": FIN, "session": "s", "text": "Use the ledger."}),
                403,
            ),
            // An hr run cannot claim it was shown a finance lesson.
            (
                Method::POST,
                "/v1/executions".to_owned(),
                json!({"skill": HR, "input": {}, "output": {}, "lessons_shown": [w.fin.1]}),
                422,
            ),
        ];
        for (method, uri, body, expected) in cases {
            let shown = format!("{method} {uri} {body}");
            let (status, answer) = w.send(t, method, &uri, Some(body)).await;
            assert_eq!(status.as_u16(), expected, "{shown}: {answer}");
        }
        assert_eq!(
            w.home.snapshot(),
            before,
            "a refused cross-scope write changed the store"
        );

        // The same token writes inside its own scope.
        let (status, _) = w
            .send(
                t,
                Method::POST,
                "/v1/executions",
                Some(json!({"skill": HR, "input": {}, "output": {}})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED);
    }
}

#[tokio::test]
async fn only_reviewers_and_admins_edit_or_retire_lessons() {
    for w in worlds() {
        let agent = w.token(Role::Agent, "domain:hr");
        let reviewer = w.token(Role::Reviewer, "domain:hr");
        let uri = format!("/v1/lessons/{}", w.hr.1);
        let edit = json!({"rule": "Check the totals twice."});
        let (status, body) = w
            .send(Some(&agent), Method::PATCH, &uri, Some(edit.clone()))
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        assert_eq!(body["error"]["code"], "forbidden");
        let (status, _) = w
            .send(
                Some(&agent),
                Method::POST,
                &format!("{uri}/retire"),
                Some(json!({})),
            )
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        let (status, body) = w
            .send(Some(&reviewer), Method::PATCH, &uri, Some(edit))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        // Agents still record and correct.
        let (status, _) = w
            .send(
                Some(&agent),
                Method::POST,
                "/v1/executions",
                Some(json!({"skill": HR, "input": {}, "output": {}})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED);
    }
}

#[test]
fn a_public_address_is_allowed_only_with_tokens() {
    let w = world();
    let addr = "0.0.0.0:7077".parse().unwrap();
    assert!(lore_server::check_bind(addr, &Access::Open).is_err());
    let access = Access::from_file(&TokenFile::load(&w.tokens).unwrap());
    assert!(lore_server::check_bind(addr, &access).is_ok());
}

/// Recall and review through an `hr` token see nothing of `finance` and change nothing there.
#[tokio::test]
async fn recall_and_review_stay_inside_the_token_scope() {
    for w in worlds() {
        let hr = w.token(Role::Reviewer, "domain:hr");
        let t = Some(hr.as_str());
        let before = w.home.snapshot();

        let query = json!({"query": "double-check the totals before answering", "explain": true});
        let (status, found) = w.send(t, Method::POST, "/v1/recall", Some(query)).await;
        assert_eq!(status, StatusCode::OK, "{found}");
        assert_eq!(ids(&found["lessons"]), std::slice::from_ref(&w.hr.1));
        assert_eq!(ids(&found["explain"]), std::slice::from_ref(&w.hr.1));
        assert!(!found.to_string().contains(&w.fin.1), "{found}");
        let query = json!({"query": "totals", "skill": FIN});
        let (status, body) = w.send(t, Method::POST, "/v1/recall", Some(query)).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");

        let (status, queue) = w
            .send(t, Method::GET, "/v1/review?status=approved,trial", None)
            .await;
        assert_eq!(status, StatusCode::OK, "{queue}");
        let queued: Vec<&Value> = queue["items"].as_array().unwrap().iter().collect();
        assert_eq!(queued.len(), 1, "{queue}");
        assert_eq!(queued[0]["lesson"]["id"], w.hr.1.as_str());
        let (_, queue) = w
            .send(
                t,
                Method::GET,
                "/v1/review?status=approved&skill=finance/audit",
                None,
            )
            .await;
        assert_eq!(queue["items"], json!([]));

        for (decision, body) in [
            ("reject", json!({"ids": [w.fin.1]})),
            ("sensitive", json!({"ids": [w.hr.1, w.fin.1]})),
            (
                "supersede",
                json!({"ids": [w.hr.1], "superseded_by": w.fin.1}),
            ),
            (
                "supersede",
                json!({"ids": [w.fin.1], "superseded_by": w.hr.1}),
            ),
        ] {
            let shown = format!("{decision} {body}");
            let uri = format!("/v1/review/{decision}");
            let (status, answer) = w.send(t, Method::POST, &uri, Some(body)).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{shown}: {answer}");
        }
        assert_eq!(
            w.home.snapshot(),
            before,
            "a cross-scope review changed the store"
        );
    }
}

#[tokio::test]
async fn review_needs_the_reviewer_role_and_metrics_the_admin_role() {
    for w in worlds() {
        let agent = w.token(Role::Agent, "domain:hr");
        let reviewer = w.token(Role::Reviewer, "domain:hr");
        let before = w.home.snapshot();
        let (status, body) = w.send(Some(&agent), Method::GET, "/v1/review", None).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        let reject = json!({"ids": [w.hr.1]});
        let (status, body) = w
            .send(
                Some(&agent),
                Method::POST,
                "/v1/review/reject",
                Some(reject.clone()),
            )
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        assert_eq!(w.home.snapshot(), before);
        let (status, body) = w
            .send(
                Some(&reviewer),
                Method::POST,
                "/v1/review/reject",
                Some(reject),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["lessons"][0]["status"], "rejected");

        // Agents still recall.
        let query = json!({"query": "totals"});
        let (status, _) = w
            .send(Some(&agent), Method::POST, "/v1/recall", Some(query))
            .await;
        assert_eq!(status, StatusCode::OK);

        for token in [&agent, &reviewer] {
            let (status, _) = w.send(Some(token), Method::GET, "/metrics", None).await;
            assert_eq!(status, StatusCode::FORBIDDEN);
        }
        let admin = w.token(Role::Admin, "");
        let (status, _) = w.send(Some(&admin), Method::GET, "/metrics", None).await;
        assert_eq!(status, StatusCode::OK);
    }
}

#[tokio::test]
async fn only_admins_learn_where_the_store_lives() {
    for w in worlds() {
        let path = w.home.lore_home().join("lore.db").display().to_string();
        for (role, shown) in [
            (Role::Agent, false),
            (Role::Reviewer, false),
            (Role::Admin, true),
        ] {
            let token = w.token(role, "domain:hr");
            let (status, body) = w.send(Some(&token), Method::GET, "/v1/status", None).await;
            assert_eq!(status, StatusCode::OK, "{body}");
            assert_eq!(body.to_string().contains(&path), shown, "{role:?}: {body}");
            assert_eq!(body["store"]["backend"], "sqlite");
        }
    }
}

/// Both kinds of JWT work beside opaque tokens, and every bad JWT is a 401 with the stable
/// `unauthenticated` code and a message naming the problem.
#[tokio::test]
async fn jwts_are_checked_and_bad_ones_refused() {
    let hs = world_of(Kind::Hs256);
    let ed = world_of(Kind::EdDsa);
    let ok = jwt::claims("agent", &["hr"]);
    for (w, token) in [(&hs, jwt::hs256(&ok)), (&ed, jwt::eddsa(&ok))] {
        let (status, body) = w.send(Some(&token), Method::GET, "/v1/lessons", None).await;
        assert_eq!(status, StatusCode::OK, "{:?}: {body}", w.kind);
        assert_eq!(ids(&body["items"]), std::slice::from_ref(&w.hr.1));
        // Opaque tokens keep working on a server that accepts JWTs.
        let opaque = w.opaque(Role::Agent, "domain:finance");
        let (status, body) = w
            .send(Some(&opaque), Method::GET, "/v1/lessons", None)
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(ids(&body["items"]), std::slice::from_ref(&w.fin.1));
        // A token minted with the gateway's claim name scopes the same way.
        let mut gateway = ok.clone();
        let claims = gateway.as_object_mut().unwrap();
        claims.remove("domains");
        claims.insert("domain_scope".into(), json!("hr"));
        let minted = match w.kind {
            Kind::EdDsa => jwt::eddsa(&gateway),
            _ => jwt::hs256(&gateway),
        };
        let (status, body) = w
            .send(Some(&minted), Method::GET, "/v1/lessons", None)
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(ids(&body["items"]), std::slice::from_ref(&w.hr.1));
    }

    let with = |patch: Value| {
        let mut c = ok.clone();
        c.as_object_mut()
            .unwrap()
            .extend(patch.as_object().unwrap().clone());
        c
    };
    let without = |claim: &str| {
        let mut c = ok.clone();
        c.as_object_mut().unwrap().remove(claim);
        c
    };
    let public_key = jwt::public_pem();
    let cases: Vec<(&World, String, &str)> = vec![
        (
            &hs,
            jwt::hs256(&with(json!({"exp": jwt::now() - 3600}))),
            "expired",
        ),
        (
            &ed,
            jwt::eddsa(&with(json!({"exp": jwt::now() - 3600}))),
            "expired",
        ),
        (
            &hs,
            jwt::hs256(&with(json!({"nbf": jwt::now() + 3600}))),
            "not valid yet",
        ),
        (
            &hs,
            jwt::hs256_with(&ok, b"another secret, also longer than 32 bytes"),
            "signature",
        ),
        (
            &ed,
            jwt::eddsa_with(&ok, "ed25519-other-private.pem"),
            "signature",
        ),
        (&hs, jwt::unsigned(&ok), "malformed"),
        (&ed, jwt::unsigned(&ok), "malformed"),
        (&ed, jwt::hs256(&ok), "HS256 are not accepted"),
        // The classic confusion: the EdDSA public key used as an HMAC secret.
        (
            &ed,
            jwt::hs256_with(&ok, &public_key),
            "HS256 are not accepted",
        ),
        (&hs, jwt::eddsa(&ok), "EdDSA are not accepted"),
        (
            &hs,
            jwt::hs256(&with(json!({"aud": "someone-else"}))),
            "audience",
        ),
        (
            &hs,
            jwt::hs256(&with(json!({"iss": "https://evil.test"}))),
            "issuer",
        ),
        (&hs, jwt::hs256(&without("aud")), "\"aud\""),
        (&hs, jwt::hs256(&without("exp")), "\"exp\""),
        (&hs, jwt::hs256(&without("domains")), "malformed"),
        (&hs, jwt::hs256(&with(json!({"domains": []}))), "domains"),
        (&hs, jwt::hs256(&with(json!({"role": "root"}))), "role"),
        (
            &hs,
            jwt::hs256(&with(json!({"skills": ["../etc"]}))),
            "skill path",
        ),
        (&hs, "eyJhbGciOiJIUzI1NiJ9.e30".to_owned(), "malformed"),
        (&hs, "not.a.jwt".to_owned(), "malformed"),
    ];
    for (w, token, why) in cases {
        let before = w.home.snapshot();
        let record = json!({"skill": HR, "input": {}, "output": {}});
        for (method, uri, body) in [
            (Method::GET, "/v1/lessons", None),
            (Method::POST, "/v1/executions", Some(record)),
        ] {
            let (status, body) = w.send(Some(&token), method, uri, body).await;
            assert_eq!(
                status,
                StatusCode::UNAUTHORIZED,
                "{:?} {why}: {body}",
                w.kind
            );
            assert_eq!(body["error"]["code"], "unauthenticated", "{body}");
            let message = body["error"]["message"].as_str().unwrap();
            assert!(
                message.contains(why),
                "{:?} expected {why:?}: {message}",
                w.kind
            );
        }
        assert_eq!(w.home.snapshot(), before, "a refused JWT wrote");
    }
    let (status, _) = hs
        .send(
            Some(&jwt::hs256(&ok)),
            Method::POST,
            "/mcp",
            Some(json!({})),
        )
        .await;
    assert_ne!(status, StatusCode::UNAUTHORIZED, "MCP refused a valid JWT");
}

#[test]
fn jwt_configuration_is_checked_at_start_up() {
    use lore_server::jwt::{JwtConfig, JwtVerifier};
    let config = |secret: &[u8], pem: Option<Vec<u8>>, issuer: &str| JwtConfig {
        hs256_secret: Some(secret.to_vec()).filter(|s| !s.is_empty()),
        eddsa_public_pem: pem,
        issuer: issuer.into(),
        audience: "lore".into(),
    };
    let short = JwtVerifier::new(config(b"short", None, "iss")).unwrap_err();
    assert!(short.to_string().contains("at least 32"), "{short}");
    let bad_pem = JwtVerifier::new(config(b"", Some(b"not a key".to_vec()), "iss")).unwrap_err();
    assert!(bad_pem.to_string().contains("Ed25519"), "{bad_pem}");
    let no_issuer = JwtVerifier::new(config(jwt::SECRET, None, " ")).unwrap_err();
    assert!(no_issuer.to_string().contains("issuer"), "{no_issuer}");
    assert!(
        JwtVerifier::new(config(b"", None, "iss"))
            .unwrap()
            .is_none()
    );
    // The secret never shows in a debug print.
    let shown = format!("{:?}", config(jwt::SECRET, None, "iss"));
    assert!(!shown.contains("thirty-two"), "{shown}");

    // JWTs alone turn authentication on, which is what allows a public address.
    let dir = tempfile::tempdir().unwrap();
    let empty = TokenFile::load(dir.path().join("tokens.json")).unwrap();
    let addr = "0.0.0.0:7077".parse().unwrap();
    assert!(lore_server::check_bind(addr, &Access::new(&empty, None)).is_err());
    let access = Access::new(&empty, Some(jwt::verifier(true, false)));
    assert!(lore_server::check_bind(addr, &access).is_ok());
}

/// `/mcp` refuses a `Host` it was not told about (DNS rebinding), even with a valid token, and
/// answers the names a public deployment lists.
#[tokio::test]
async fn mcp_answers_only_known_host_names() {
    let w = world();
    let token = w.token(Role::Agent, "*");
    let mcp = |app: Router, host: &'static str| {
        let token = token.clone();
        async move {
            let request = Request::post("/mcp")
                .header(header::HOST, host)
                .header(header::AUTHORIZATION, format!("Bearer {token}"))
                .header(header::CONTENT_TYPE, "application/json")
                .header(header::ACCEPT, "application/json, text/event-stream")
                .body(Body::from("{}"))
                .unwrap();
            let response = app.oneshot(request).await.unwrap();
            let status = response.status();
            let bytes = axum::body::to_bytes(response.into_body(), 1 << 16)
                .await
                .unwrap();
            (status, String::from_utf8_lossy(&bytes).into_owned())
        }
    };
    for host in ["127.0.0.1:7077", "localhost"] {
        let (status, body) = mcp(w.app.clone(), host).await;
        assert_ne!(status, StatusCode::FORBIDDEN, "{host}: {body}");
    }
    let (status, body) = mcp(w.app.clone(), "lore.example").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(body.contains("Host"), "{body}");

    let access = Access::from_file(&TokenFile::load(&w.tokens).unwrap());
    let listed = lore_server::app_with_hosts(
        Arc::clone(&w.home.engine),
        Limits::default(),
        access,
        CancellationToken::new(),
        &lore_server::McpOptions {
            hosts: vec!["lore.example".to_owned()],
            ..Default::default()
        },
    );
    let (status, body) = mcp(listed.clone(), "lore.example").await;
    assert_ne!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, _) = mcp(listed, "evil.example").await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}

fn episode_of(id: &str, skill: &str, context: &str, chosen: &str) -> Value {
    json!({
        "id": id, "skill": skill, "timestamp": "2026-01-01T17:00:00Z", "outcome": "failure",
        "task": "Close the books",
        "decisions": [{"id": "d1", "type": "design", "context": context,
                       "options": [chosen, "other"], "chosen": chosen}]
    })
}

#[tokio::test]
async fn episodes_and_graph_queries_stay_inside_the_token_scope() {
    for w in worlds() {
        let admin = w.token(Role::Admin, "*");
        for (id, skill, context, chosen) in [
            ("hr-ep", HR, "Choosing screening order", "by seniority"),
            ("fin-ep", FIN, "Choosing ledger export", "parquet"),
        ] {
            let body = episode_of(id, skill, context, chosen);
            let (status, answer) = w
                .send(Some(&admin), Method::POST, "/v1/episodes", Some(body))
                .await;
            assert_eq!(status, StatusCode::CREATED, "{answer}");
        }
        let hr = w.token(Role::Agent, "domain:hr");
        let (_, page) = w.send(Some(&hr), Method::GET, "/v1/episodes", None).await;
        assert_eq!(ids(&page["items"]), ["hr-ep"], "{:?}", w.kind);
        let (status, _) = w
            .send(Some(&hr), Method::GET, "/v1/episodes/fin-ep", None)
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        let body = episode_of("fin-2", FIN, "Choosing ledger export", "parquet");
        let (status, _) = w
            .send(Some(&hr), Method::POST, "/v1/episodes", Some(body))
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        // An hr token cannot overwrite finance's episode by reusing its ID.
        let body = episode_of("fin-ep", HR, "Choosing screening order", "by seniority");
        let (status, _) = w
            .send(
                Some(&hr),
                Method::POST,
                "/v1/episodes?replace=true",
                Some(body),
            )
            .await;
        assert_eq!(status, StatusCode::CONFLICT);
        let (status, _) = w
            .send(
                Some(&hr),
                Method::GET,
                "/v1/graph/path?from=decision:parquet&to=outcome:failure",
                None,
            )
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "finance's node is invisible");
        let (_, similar) = w
            .send(
                Some(&hr),
                Method::GET,
                "/v1/graph/similar?context=choosing%20export",
                None,
            )
            .await;
        let episodes: Vec<&str> = similar["decisions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["episode"].as_str().unwrap())
            .collect();
        assert_eq!(episodes, ["hr-ep"]);
        let (_, anti) = w
            .send(
                Some(&hr),
                Method::GET,
                "/v1/graph/anti-patterns?min_occurrences=1",
                None,
            )
            .await;
        assert_eq!(anti["patterns"].as_array().unwrap().len(), 1, "{anti}");
        assert_eq!(anti["patterns"][0]["episodes"], json!(["hr-ep"]));
        let (status, _) = w
            .send(
                Some(&hr),
                Method::GET,
                "/v1/graph/what-if?episode=fin-ep&decision=d1&alternative=other",
                None,
            )
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        let (_, all) = w
            .send(
                Some(&admin),
                Method::GET,
                "/v1/graph/anti-patterns?min_occurrences=1",
                None,
            )
            .await;
        assert_eq!(all["patterns"].as_array().unwrap().len(), 2);
    }
}
