//! Agent loops through the proxy: every forwarded request within budget and valid, the cut
//! stable across turns, and replicas on one store (an SQLite file; Redis and PostgreSQL,
//! each replica a process) deciding alike, a restart losing nothing.

use serde_json::{json, Value};
use tightfit::format::{parse_str, Format, FormatHint};
use tightfit::models::Registry;
use tightfit::validate::validate;
use tightfit::Target;

use tightfit_proxy::Config;

use crate::support::{capped, client, config_for, corpus, proxy, turns_in_place, url, Fake};

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
        // the metrics' estimate of the cache reuse: high, and never above what was forwarded
        let metrics = client().get(url(&proxy, "/metrics")).send().await.unwrap().text().await.unwrap();
        let total = |name: &str| -> f64 {
            metrics
                .lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.rsplit(' ').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("{name} missing from\n{metrics}"))
        };
        let (prefix, after) =
            (total("tightfit_cache_prefix_tokens_total"), total("tightfit_tokens_after_total"));
        assert!(
            prefix <= after && prefix >= 0.8 * after,
            "{file}: estimated reuse {prefix} of {after} tokens"
        );
        proxy.stop().await.unwrap();
    }
}

/// The longest mini-swe run as an agent loop, capped at 12,000 tokens, and what one proxy
/// with its state in memory forwards for it: the reference replicas must match.
async fn reference_loop(fake: &Fake) -> (Vec<String>, Vec<Value>) {
    let records = corpus("data/agent_mini_swe_deepseek.jsonl");
    let record = records.iter().max_by_key(|r| r["messages"].as_array().unwrap().len()).unwrap();
    let bodies = turns(record, Format::OpenAi, "gpt-4o");
    let alone = proxy(capped_config(fake, "memory")).await;
    let (reference, epochs) = run(&[url(&alone, "/v1/chat/completions")], &bodies, fake).await;
    assert!(*epochs.last().unwrap() >= 2, "the loop compacts more than once");
    alone.stop().await.unwrap();
    (bodies, reference)
}

fn capped_config(fake: &Fake, store: &str) -> Config {
    let mut config = config_for(fake);
    config.policy.max_input_tokens = Some(12_000);
    config.store = store.to_string();
    config
}

fn assert_same(forwarded: &[Value], reference: &[Value], store: &str) {
    assert_eq!(forwarded.len(), reference.len());
    for (i, (got, want)) in forwarded.iter().zip(reference).enumerate() {
        assert!(got == want, "{store}: turn {i} differs from the single proxy's");
    }
}

#[tokio::test]
async fn replicas_on_one_sqlite_store_decide_alike_and_a_restart_loses_nothing() {
    let fake = Fake::start().await;
    let (bodies, reference) = reference_loop(&fake).await;
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("sessions.db").display());
    // two replicas taking turns on one store
    let (a, b) = (proxy(capped_config(&fake, &store)).await, proxy(capped_config(&fake, &store)).await);
    let urls = [url(&a, "/v1/chat/completions"), url(&b, "/v1/chat/completions")];
    let half = bodies.len() / 2;
    let (mut forwarded, _) = run(&urls, &bodies[..half], &fake).await;
    a.stop().await.unwrap();
    b.stop().await.unwrap();
    // both restart: nothing in memory, everything in the store
    let restarted = proxy(capped_config(&fake, &store)).await;
    let (rest, _) = run(&[url(&restarted, "/v1/chat/completions")], &bodies[half..], &fake).await;
    forwarded.extend(rest);
    assert_same(&forwarded, &reference, &store);
    restarted.stop().await.unwrap();
}

/// On Redis and PostgreSQL, a warm turn is answered in place, from the checkpoint's version
/// the proxy's async client read: two replicas on one store, taking runs of ten turns in
/// turn (so each meets checkpoints the other wrote), forward exactly what one proxy alone
/// does, and a good part of the turns never leave the async worker.
#[tokio::test(flavor = "multi_thread")]
async fn warm_turns_on_redis_and_on_postgres_are_answered_in_place_and_decide_alike() {
    let fake = Fake::start().await;
    let (bodies, reference) = reference_loop(&fake).await;
    let redis = tightfit_test_servers::Redis::start();
    let postgres = tightfit_test_servers::Postgres::start();
    for store in [redis.url(), postgres.url()] {
        let (a, b) = (proxy(capped_config(&fake, &store)).await, proxy(capped_config(&fake, &store)).await);
        let mut forwarded = Vec::new();
        for (run_of_ten, turns) in bodies.chunks(10).enumerate() {
            let replica = if run_of_ten % 2 == 0 { &a } else { &b };
            forwarded.extend(run(&[url(replica, "/v1/chat/completions")], turns, &fake).await.0);
        }
        assert_same(&forwarded, &reference, &store);
        let in_place = turns_in_place(&a).await + turns_in_place(&b).await;
        assert!(in_place > bodies.len() / 2, "{store}: {in_place} of {} turns in place", bodies.len());
        a.stop().await.unwrap();
        b.stop().await.unwrap();
    }
}

/// Tells a run of this test binary to serve as a proxy replica on the store it names.
const REPLICA_STORE: &str = "TIGHTFIT_PROXY_TEST_REPLICA_STORE";
/// ... in front of this upstream.
const REPLICA_UPSTREAM: &str = "TIGHTFIT_PROXY_TEST_REPLICA_UPSTREAM";
const THIS_TEST: &str =
    "sessions::replica_processes_on_redis_and_on_postgres_decide_alike_and_a_restart_loses_nothing";

/// A proxy replica in a process of its own: this test binary run again, serving until its
/// standard input closes.
struct Replica {
    child: std::process::Child,
    /// Read to its end at the stop: the replica still writes the test harness's lines.
    stdout: std::io::BufReader<std::process::ChildStdout>,
    url: String,
}

impl Replica {
    fn spawn(store: &str, fake: &Fake) -> Replica {
        use std::io::BufRead;
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([THIS_TEST, "--exact", "--nocapture"])
            .env(REPLICA_STORE, store)
            .env(REPLICA_UPSTREAM, fake.url())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let addr = (&mut stdout)
            .lines()
            .map_while(Result::ok)
            .find_map(|line| line.strip_prefix("replica listening on ").map(str::to_string))
            .expect("the replica says where it listens");
        Replica { child, stdout, url: format!("http://{addr}/v1/chat/completions") }
    }

    /// Closes its standard input: it stops serving and exits.
    fn stop(mut self) {
        drop(self.child.stdin.take());
        let mut said = String::new();
        std::io::Read::read_to_string(&mut self.stdout, &mut said).unwrap();
        let status = self.child.wait().unwrap();
        assert!(status.success(), "the replica exited with {status}:\n{said}");
    }
}

/// The replica's side: serve on `store` until standard input closes.
async fn serve_as_replica(store: String, upstream: String) {
    let mut config = Config { listen: "127.0.0.1:0".into(), store, ..Config::default() };
    config.upstream.openai = Some(upstream);
    config.policy.max_input_tokens = Some(12_000);
    let running = proxy(config).await;
    println!("replica listening on {}", running.addr);
    tokio::task::spawn_blocking(|| std::io::copy(&mut std::io::stdin(), &mut std::io::sink()))
        .await
        .unwrap()
        .unwrap();
    running.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn replica_processes_on_redis_and_on_postgres_decide_alike_and_a_restart_loses_nothing() {
    if let (Ok(store), Ok(upstream)) = (std::env::var(REPLICA_STORE), std::env::var(REPLICA_UPSTREAM)) {
        return serve_as_replica(store, upstream).await;
    }
    let fake = Fake::start().await;
    let (bodies, reference) = reference_loop(&fake).await;
    let half = bodies.len() / 2;
    let redis = tightfit_test_servers::Redis::start();
    let postgres = tightfit_test_servers::Postgres::start();
    for store in [redis.url(), postgres.url()] {
        // two processes taking turns on one store
        let (a, b) = (Replica::spawn(&store, &fake), Replica::spawn(&store, &fake));
        let (mut forwarded, _) = run(&[a.url.clone(), b.url.clone()], &bodies[..half], &fake).await;
        a.stop();
        b.stop();
        // a third starts with nothing in memory: everything it needs is in the store
        let c = Replica::spawn(&store, &fake);
        let (rest, _) = run(std::slice::from_ref(&c.url), &bodies[half..], &fake).await;
        c.stop();
        forwarded.extend(rest);
        assert_same(&forwarded, &reference, &store);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_store_that_goes_away_is_a_503_in_the_provider_s_shape_and_the_proxy_recovers() {
    let fake = Fake::start().await;
    let mut redis = tightfit_test_servers::Redis::start();
    let proxy = proxy(capped_config(&fake, &redis.url())).await;
    let body = json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "hello"}]}).to_string();
    let send = || client().post(url(&proxy, "/v1/chat/completions")).body(body.clone()).send();
    assert_eq!(send().await.unwrap().status(), 200);
    let port = redis.port();
    drop(redis);
    let response = send().await.unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(response.headers()["x-tightfit-error"], "store_unavailable");
    let error: Value = response.json().await.unwrap();
    assert_eq!(error["error"]["code"], "service_unavailable", "{error}");
    assert!(
        error["error"]["message"].as_str().unwrap().contains(&format!("redis://127.0.0.1:{port}/")),
        "{error}"
    );
    // the store comes back (empty: no persistence): the proxy serves again
    redis = tightfit_test_servers::Redis::start_on(port);
    assert_eq!(send().await.unwrap().status(), 200);
    drop(redis);
    proxy.stop().await.unwrap();
}
