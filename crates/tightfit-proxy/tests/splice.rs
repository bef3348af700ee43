//! The fitted body written by splicing the request's own bytes: on real agent runs it reads
//! as the body the whole writer gives, every message the fit kept goes on as its own bytes,
//! the ones it changed are written anew; through the proxy, the client's spelling survives.
//! And each turn read taking what it shares with the previous turn from that one's reading:
//! an agent loop through the proxy forwards what the engine fits from each turn read whole.

use std::sync::Arc;

use serde_json::{json, Value};
use tightfit::format::{
    convert, messages_to_value, parse_str, request_to_string, splice_request, FormatHint, RequestLayout,
};
use tightfit::models::Registry;
use tightfit::session::{Policy, Session, Settings};
use tightfit::store::MemoryStore;
use tightfit::{Format, Message, Target};

use crate::support::{capped, client, corpus, turns_in_place, url};

/// Request bodies of an agent loop over `record` in `api`: one every `step` assistant
/// messages, with every message before it.
fn turns(record: &Value, api: Format, model: &str, step: usize) -> Vec<String> {
    let messages = record["messages"].as_array().unwrap();
    let ends: Vec<usize> =
        (1..messages.len()).filter(|&i| messages[i]["role"] == "assistant").step_by(step).collect();
    match api {
        Format::Responses => {
            // the run as Responses items, its system prompt as `instructions`
            let chat = parse_str(&json!({"messages": messages}).to_string(), FormatHint::Auto).unwrap();
            let (system, rest) = chat.messages.split_first().unwrap();
            assert_eq!(system.role, tightfit::Role::System);
            let items = convert(
                &tightfit::Conversation { messages: rest.to_vec(), ..chat.clone() },
                Format::Responses,
            )
            .conversation
            .messages;
            let items = messages_to_value(&items, Format::Responses);
            let items = items.as_array().unwrap();
            (10..items.len())
                .step_by(step * 2)
                .map(|end| {
                    json!({"model": model, "instructions": system.text_content(), "input": &items[..end], "store": false})
                        .to_string()
                })
                .collect()
        }
        _ => ends
            .into_iter()
            .map(|end| {
                let mut body = json!({"model": model, "max_tokens": 1024, "messages": &messages[..end]});
                if api == Format::Anthropic && !record["system"].is_null() {
                    body["system"] = record["system"].clone();
                }
                body.to_string()
            })
            .collect(),
    }
}

/// The index in `messages` of `message`, when it is one of them (a message the fit kept
/// borrows it; one it changed or added is its own).
fn origin(messages: &[Message], message: &Message) -> Option<usize> {
    messages.iter().position(|m| std::ptr::eq(m, message))
}

#[test]
fn spliced_bodies_read_as_the_whole_writer_s_on_real_agent_runs() {
    for (file, api, model, budget, step) in [
        ("data/agent_mini_swe_deepseek.jsonl", Format::OpenAi, "gpt-4o", 6_000, 3),
        ("data/agent_mini_swe_deepseek.jsonl", Format::Responses, "gpt-4o", 6_000, 3),
        (
            "data2/agent_claude_code_sessions_anthropic.jsonl",
            Format::Anthropic,
            "claude-sonnet-4-5",
            8_000,
            2,
        ),
        (
            "data2/agent_tau2_airline_claude45_thinking_anthropic.jsonl",
            Format::Anthropic,
            "claude-sonnet-4-5",
            10_000,
            1,
        ),
    ] {
        let model_info = Registry::embedded().lookup(model).unwrap();
        let target = Target::for_model(model_info, Some(1024)).with_budget(budget).with_provider(api);
        // marks on Anthropic requests: messages the fit copies to add one
        let settings = Settings::default().with_cache_breakpoints(true);
        let session = Session::new(target, Policy::cache(), Arc::new(MemoryStore::new()))
            .with_settings(settings)
            .unwrap();
        let records = corpus(file);
        let records: Vec<&Value> =
            records.iter().filter(|r| r["messages"].as_array().unwrap().len() > 20).take(4).collect();
        let (mut spliced, mut whole, mut kept, mut rewritten) = (0, 0, 0, 0);
        for (r, record) in records.iter().enumerate() {
            for (t, body) in turns(record, api, model, step).iter().enumerate() {
                let conversation = parse_str(body, FormatHint::Exactly(api)).unwrap();
                let fitted = session.fit_keyed(Some(&format!("{file}-{r}")), &conversation).unwrap();
                let layout = RequestLayout::find(body, api).expect("a request body's list is found");
                let Some(out) = splice_request(body, &layout, &fitted.messages, &conversation) else {
                    whole += 1;
                    continue;
                };
                spliced += 1;
                let whole: Value =
                    serde_json::from_str(&request_to_string(&fitted.messages, &conversation)).unwrap();
                let read: Value = serde_json::from_str(&out).unwrap();
                assert_eq!(read, whole, "{file} ({api:?}) record {r} turn {t}");
                // every kept message is its own bytes, in its place; the others are new
                let written = RequestLayout::find(&out, api).unwrap();
                let head = conversation.messages.len() - layout.elements().len();
                assert_eq!(written.elements().len() + head, fitted.messages.len());
                for (element, message) in written.elements().iter().zip(&fitted.messages[head..]) {
                    match origin(&conversation.messages, message) {
                        Some(at) => {
                            assert_eq!(&out[element.clone()], &body[layout.elements()[at - head].clone()]);
                            kept += 1;
                        }
                        None => rewritten += 1,
                    }
                }
            }
        }
        let said = format!(
            "{file} ({api:?}): {spliced} bodies spliced ({whole} written whole), {kept} messages kept, {rewritten} rewritten"
        );
        eprintln!("{said}");
        assert!(spliced > 5 && kept > 30 && rewritten > 0, "{said}");
    }
}

#[tokio::test]
async fn a_fitted_request_goes_on_with_the_client_s_own_bytes_for_what_was_kept() {
    let (fake, proxy) = capped(8_000).await;
    let record = &corpus("data/agent_mini_swe_deepseek.jsonl")[2];
    let messages = record["messages"].as_array().unwrap();
    // the client's spelling, which no writer reproduces: spaces, `\u` escapes, key order
    let last = r#"{ "content" : "caf\u00e9 \u2014 go on" , "role" : "user" }"#;
    let listed: Vec<String> = messages.iter().map(Value::to_string).chain([last.to_string()]).collect();
    let body = format!(
        "{{ \"stream\" : false,\n  \"messages\" : [ {} ],\n  \"model\" : \"gpt-4o\", \"temperature\" : 1e-1 }}",
        listed.join(" ,\n")
    );
    let response =
        client().post(url(&proxy, "/v1/chat/completions")).body(body.clone()).send().await.unwrap();
    assert_eq!(response.status(), 200, "{:?}", response.text().await);
    assert_eq!(response.headers()["x-tightfit-epoch"], "1");
    let sent = fake.last();
    let sent_text = std::str::from_utf8(&sent.body).unwrap();
    assert!(sent_text.starts_with("{ \"stream\" : false,\n  \"messages\" : ["), "{}", &sent_text[..80]);
    assert!(sent_text.ends_with("],\n  \"model\" : \"gpt-4o\", \"temperature\" : 1e-1 }"));
    let layout = RequestLayout::find(sent_text, Format::OpenAi).unwrap();
    let elements: Vec<&str> = layout.elements().iter().map(|r| &sent_text[r.clone()]).collect();
    assert_eq!(*elements.last().unwrap(), last, "the last message, kept, is the client's bytes");
    let originals: Vec<&str> = listed.iter().map(String::as_str).collect();
    let new = elements.iter().filter(|e| !originals.contains(e)).count();
    assert!(new > 0 && new < elements.len(), "{new} of {} messages written anew", elements.len());
    // a turn within the budget goes on as it came, byte for byte
    let small = format!("{{\"model\" : \"gpt-4o\", \"messages\" : [ {last} ] }}");
    let response =
        client().post(url(&proxy, "/v1/chat/completions")).body(small.clone()).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(fake.last().body, small.as_bytes());
    proxy.stop().await.unwrap();
}

#[tokio::test]
async fn agent_loops_forward_what_the_engine_fits_though_each_turn_is_read_from_the_last() {
    for (file, api, model, path) in [
        ("data/agent_mini_swe_deepseek.jsonl", Format::OpenAi, "gpt-4o", "/v1/chat/completions"),
        ("data/agent_mini_swe_deepseek.jsonl", Format::Responses, "gpt-4o", "/v1/responses"),
        (
            "data2/agent_claude_code_sessions_anthropic.jsonl",
            Format::Anthropic,
            "claude-sonnet-4-5",
            "/v1/messages",
        ),
    ] {
        let (fake, proxy) = capped(8_000).await;
        let records = corpus(file);
        let record = records.iter().max_by_key(|r| r["messages"].as_array().unwrap().len()).unwrap();
        let bodies = turns(record, api, model, 2);
        // the engine alone, each turn read whole, in the proxy's settings
        let model_info = Registry::embedded().lookup(model).unwrap();
        let target = Target::for_model(model_info, Some(1024)).with_budget(8_000).with_provider(api);
        let mut session = Session::new(target, Policy::cache(), Arc::new(MemoryStore::new()))
            .with_settings(tightfit_proxy::Config::default().session_settings())
            .unwrap();
        if let Some(pricing) = tightfit::pricing::Pricing::of(model_info) {
            session = session.with_pricing(pricing);
        }
        let mut fitted_turns = 0;
        for (t, body) in bodies.iter().enumerate() {
            let response = client()
                .post(url(&proxy, path))
                .header("x-tightfit-session", "loop")
                .body(body.clone())
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 200, "{file} turn {t}: {:?}", response.text().await);
            let conversation = parse_str(body, FormatHint::Exactly(api)).unwrap();
            let fitted = session.fit_keyed(Some("loop"), &conversation).unwrap();
            let expected: Value =
                serde_json::from_str(&request_to_string(&fitted.messages, &conversation)).unwrap();
            assert_eq!(fake.last().json(), expected, "{file} ({api:?}) turn {t}");
            fitted_turns +=
                usize::from(fitted.messages.iter().any(|m| matches!(m, std::borrow::Cow::Owned(_))));
        }
        assert!(fitted_turns > 10, "{file} ({api:?}): {fitted_turns} of {} turns fitted", bodies.len());
        // the warm turns were answered in place, where the session extends turns (Chat
        // Completions and Anthropic; Responses turns are replayed on the blocking pool)
        let in_place = turns_in_place(&proxy).await;
        match api {
            Format::Responses => assert_eq!(in_place, 0, "{file} ({api:?})"),
            _ => assert!(
                in_place > bodies.len() / 4,
                "{file} ({api:?}): {in_place} of {} in place",
                bodies.len()
            ),
        }
        proxy.stop().await.unwrap();
    }
}

/// A turn that edits a message the previous turn sent, or removes one, is not answered in place:
/// the whole fit reads it (taking what it can from the previous reading) and forwards what the
/// engine fits; the appending turns between are answered in place.
#[tokio::test]
async fn an_edited_or_shortened_turn_is_fitted_whole_and_forwards_what_the_engine_fits() {
    let (fake, proxy) = capped(8_000).await;
    let records = corpus("data/agent_mini_swe_deepseek.jsonl");
    let messages = records[0]["messages"].as_array().unwrap();
    let body = |messages: &[Value]| json!({"model": "gpt-4o", "messages": messages}).to_string();
    // each turn ends on the tools' results, as an agent loop sends it
    let mut edited = messages[..8].to_vec();
    edited[1]["content"] = Value::from("the task, as the caller rewrote it");
    let bodies = [
        body(&messages[..4]),
        body(&messages[..6]),
        body(&messages[..8]),
        body(&edited),
        body(&edited[..6]),
        body(&[&edited[..6], &messages[6..8]].concat()),
    ];
    let target = Target::for_model(Registry::embedded().lookup("gpt-4o").unwrap(), Some(1024))
        .with_budget(8_000)
        .with_provider(Format::OpenAi);
    let session = Session::new(target, Policy::cache(), Arc::new(MemoryStore::new()))
        .with_settings(tightfit_proxy::Config::default().session_settings())
        .unwrap();
    let mut in_place = Vec::new();
    for (t, body) in bodies.iter().enumerate() {
        let response = client()
            .post(url(&proxy, "/v1/chat/completions"))
            .header("x-tightfit-session", "edited")
            .body(body.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "turn {t}: {:?}", response.text().await);
        let conversation = parse_str(body, FormatHint::Exactly(Format::OpenAi)).unwrap();
        let fitted = session.fit_keyed(Some("edited"), &conversation).unwrap();
        let expected: Value =
            serde_json::from_str(&request_to_string(&fitted.messages, &conversation)).unwrap();
        assert_eq!(fake.last().json(), expected, "turn {t}");
        in_place.push(turns_in_place(&proxy).await);
    }
    // appended: turns 1, 2 and 5; the edit (3) and the removal (4) are fitted whole
    assert_eq!(in_place, [0, 1, 2, 2, 2, 3]);
    proxy.stop().await.unwrap();
}
