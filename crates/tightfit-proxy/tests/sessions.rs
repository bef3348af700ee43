//! Agent loops through the proxy: every forwarded request within budget and valid, the cut
//! stable across turns, and replicas on one SQLite store deciding alike, a restart losing
//! nothing.

use serde_json::{json, Value};
use tightfit::format::{parse_str, Format, FormatHint};
use tightfit::models::Registry;
use tightfit::validate::validate;
use tightfit::Target;

use crate::support::{capped, client, config_for, corpus, proxy, url, Fake};

/// The request bodies of an agent loop over `record`: one per assistant message, with every
/// message before it.
fn turns(record: &Value, api: Format, model: &str) -> Vec<String> {
    let messages = record["messages"].as_array().unwrap();
    (1..messages.len())
        .filter(|&i| messages[i]["role"] == "assistant")
        .map(|i| {
            let mut body = json!({"model": model, "max_tokens": 1024, "messages": &messages[..i]});
            if api == Format::Anthropic && !record["system"].is_null() {
                body["system"] = record["system"].clone();
            }
            body.to_string()
        })
        .collect()
}

/// Sends `bodies` through the proxy at `urls[i % urls.len()]`; returns the forwarded bodies
/// and the epochs.
async fn run(urls: &[String], bodies: &[String], fake: &Fake) -> (Vec<Value>, Vec<u64>) {
    let mut forwarded = Vec::new();
    let mut epochs = Vec::new();
    for (i, body) in bodies.iter().enumerate() {
        let response = client()
            .post(&urls[i % urls.len()])
            .header("authorization", "Bearer sk-agent")
            .body(body.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "turn {i}: {:?}", response.text().await);
        epochs.push(response.headers()["x-tightfit-epoch"].to_str().unwrap().parse().unwrap());
        forwarded.push(fake.last().json());
    }
    (forwarded, epochs)
}

/// The share of the previous request's messages that the next one repeats as its prefix,
/// averaged over the turns.
fn prefix_reuse(forwarded: &[Value]) -> f64 {
    let shares: Vec<f64> = forwarded
        .windows(2)
        .map(|pair| {
            let (a, b) = (pair[0]["messages"].as_array().unwrap(), pair[1]["messages"].as_array().unwrap());
            let common = a.iter().zip(b).take_while(|(x, y)| x == y).count();
            common as f64 / a.len() as f64
        })
        .collect();
    shares.iter().sum::<f64>() / shares.len() as f64
}

#[tokio::test]
async fn agent_loops_keep_their_cut_and_every_request_fits() {
    for (file, api, model, path, budget) in [
        ("data/agent_mini_swe_deepseek.jsonl", Format::OpenAi, "gpt-4o", "/v1/chat/completions", 16_000),
        (
            "data2/agent_claude_code_sessions_anthropic.jsonl",
            Format::Anthropic,
            "claude-sonnet-4-5",
            "/v1/messages",
            8_000,
        ),
    ] {
        let (fake, proxy) = capped(budget).await;
        let records = corpus(file);
        let record = records.iter().max_by_key(|r| r["messages"].as_array().unwrap().len()).unwrap();
        let bodies = turns(record, api, model);
        let (forwarded, epochs) = run(&[url(&proxy, path)], &bodies, &fake).await;
        let counter = Target::for_model(Registry::embedded().lookup(model).unwrap(), None).counter;
        for (i, body) in forwarded.iter().enumerate() {
            let conversation = parse_str(&body.to_string(), FormatHint::Exactly(api)).unwrap();
            let tokens = counter.count(&conversation.messages, conversation.tools.as_deref()).total;
            assert!(tokens <= budget, "{file} turn {i}: {tokens} tokens");
            assert_eq!(validate(&conversation.messages, api), vec![], "{file} turn {i}");
        }
        let compactions = *epochs.last().unwrap();
        assert!(compactions >= 1, "{file}: the loop outgrows the budget");
        assert!(
            compactions as usize * 5 <= bodies.len(),
            "{file}: {compactions} compactions in {} turns",
            bodies.len()
        );
        let reuse = prefix_reuse(&forwarded);
        assert!(reuse >= 0.9, "{file}: prefix reuse {reuse:.3}");
        proxy.stop().await.unwrap();
    }
}

#[tokio::test]
async fn replicas_on_one_sqlite_store_decide_alike_and_a_restart_loses_nothing() {
    let fake = Fake::start().await;
    let records = corpus("data/agent_mini_swe_deepseek.jsonl");
    let record = records.iter().max_by_key(|r| r["messages"].as_array().unwrap().len()).unwrap();
    let bodies = turns(record, Format::OpenAi, "gpt-4o");
    let configured = |store: String| {
        let mut config = config_for(&fake);
        config.policy.max_input_tokens = Some(12_000);
        config.store = store;
        config
    };
    // the reference: one proxy, state in memory
    let alone = proxy(configured("memory".into())).await;
    let (reference, epochs) = run(&[url(&alone, "/v1/chat/completions")], &bodies, &fake).await;
    assert!(*epochs.last().unwrap() >= 2, "the loop compacts more than once");
    alone.stop().await.unwrap();

    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("sessions.db").display());
    // two replicas taking turns on one store
    let (a, b) = (proxy(configured(store.clone())).await, proxy(configured(store.clone())).await);
    let urls = [url(&a, "/v1/chat/completions"), url(&b, "/v1/chat/completions")];
    let half = bodies.len() / 2;
    let (mut forwarded, _) = run(&urls, &bodies[..half], &fake).await;
    a.stop().await.unwrap();
    b.stop().await.unwrap();
    // both restart: nothing in memory, everything in the store
    let restarted = proxy(configured(store)).await;
    let (rest, _) = run(&[url(&restarted, "/v1/chat/completions")], &bodies[half..], &fake).await;
    forwarded.extend(rest);
    assert_eq!(forwarded.len(), reference.len());
    for (i, (got, want)) in forwarded.iter().zip(&reference).enumerate() {
        assert!(got == want, "turn {i} differs from the single proxy's");
    }
    restarted.stop().await.unwrap();
}
