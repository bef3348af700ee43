//! The HTTP summarizers against a fake server on loopback that the test starts: the request
//! each API gets, retries, timeouts, refusals and malformed answers, and the `summarize` step
//! falling back to the extractive summary when the model fails.

mod fake;

use std::time::Duration;

use serde_json::{json, Value};
use tightfit::fit::{Fitter, RunOptions, Services};
use tightfit::format::{parse_str, FormatHint};
use tightfit::message::Message;
use tightfit::pipeline::Pipeline;
use tightfit::steps::Summarize;
use tightfit::summary::{Summarizer, SummaryRequest};
use tightfit::tokens::{ChatCounter, OpenAiEncoding};
use tightfit_llm::{Api, HttpSummarizer, ANTHROPIC_VERSION};

use fake::{Reply, Server};

fn messages() -> Vec<Message> {
    parse_str(
        r#"[{"role": "user", "content": "Fix the failing test in tests/test_date.py"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "a", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"pytest -x\"}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "ValueError: day is out of range for month"}]"#,
        FormatHint::Auto,
    )
    .unwrap()
    .messages
}

fn words(text: &str) -> usize {
    text.split_whitespace().count()
}

/// Summarizes [`messages`] with `summarizer` in at most `max_tokens` words.
fn summarize(
    summarizer: &HttpSummarizer,
    max_tokens: usize,
) -> Result<String, tightfit::summary::SummaryError> {
    let messages = messages();
    let refs: Vec<&Message> = messages.iter().collect();
    let indices: Vec<Option<usize>> = (3..6).map(Some).collect();
    summarizer.summarize(&SummaryRequest::new(&refs, &indices, max_tokens, &words))
}

fn quick(summarizer: HttpSummarizer) -> HttpSummarizer {
    summarizer.with_timeout(Duration::from_secs(5)).with_retries(2, Duration::from_millis(10))
}

#[test]
fn an_openai_compatible_endpoint_gets_the_prompt_and_the_transcript() {
    let server = Server::start(vec![Reply::json(
        200,
        json!({"choices": [{"message": {"role": "assistant", "content": " Goal: fix it. "}}]}),
    )]);
    std::env::set_var("TIGHTFIT_LLM_TEST_OPENAI_KEY", "sk-test");
    let summarizer = quick(HttpSummarizer::new(Api::OpenAi, format!("{}/v1/", server.url()), "small-model"))
        .with_api_key_env("TIGHTFIT_LLM_TEST_OPENAI_KEY");
    assert_eq!(summarize(&summarizer, 300).unwrap(), "Goal: fix it.");
    let requests = server.finish();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!((request.method.as_str(), request.path.as_str()), ("POST", "/v1/chat/completions"));
    assert_eq!(request.header("authorization"), Some("Bearer sk-test"));
    let body: Value = serde_json::from_str(&request.body).unwrap();
    assert_eq!(body["model"], "small-model");
    assert_eq!(body["max_tokens"], 300);
    assert_eq!(body["temperature"], 0);
    assert_eq!(body["messages"][0]["role"], "system");
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("at most 300 tokens") && system.contains("Facts:"), "{system}");
    let transcript = body["messages"][1]["content"].as_str().unwrap();
    assert!(transcript.contains("[3] user: Fix the failing test in tests/test_date.py"), "{transcript}");
    assert!(transcript.contains("call bash({\"command\": \"pytest -x\"})"), "{transcript}");
    assert!(transcript.contains("[5] tool: ValueError: day is out of range for month"), "{transcript}");
}

#[test]
fn anthropic_gets_its_headers_and_the_text_blocks_are_read() {
    let answer = json!({"content": [{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "Facts:"}, {"type": "text", "text": "- tests/test_date.py"}]});
    let server = Server::start(vec![Reply::json(200, answer)]);
    std::env::set_var("TIGHTFIT_LLM_TEST_ANTHROPIC_KEY", "sk-ant-test");
    let summarizer = quick(HttpSummarizer::new(Api::Anthropic, server.url(), "claude-haiku"))
        .with_api_key_env("TIGHTFIT_LLM_TEST_ANTHROPIC_KEY");
    assert_eq!(summarize(&summarizer, 200).unwrap(), "Facts:\n- tests/test_date.py");
    let request = &server.finish()[0];
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(request.header("anthropic-version"), Some(ANTHROPIC_VERSION));
    let body: Value = serde_json::from_str(&request.body).unwrap();
    assert!(body["system"].as_str().unwrap().contains("Requests (verbatim)"));
    assert_eq!(body["messages"][0]["role"], "user");
}

#[test]
fn a_500_and_a_429_are_tried_again_a_400_is_not() {
    let server = Server::start(vec![
        Reply::json(500, json!({"error": "overloaded"})),
        Reply::json(429, json!({"error": "slow down"})).with_header("retry-after", "0"),
        Reply::json(200, json!({"choices": [{"message": {"content": "third time"}}]})),
    ]);
    let summarizer = quick(HttpSummarizer::new(Api::OpenAi, server.url(), "m"));
    assert_eq!(summarize(&summarizer, 100).unwrap(), "third time");
    assert_eq!(server.finish().len(), 3);

    let server = Server::start(vec![Reply::json(400, json!({"error": {"message": "bad model"}}))]);
    let summarizer = quick(HttpSummarizer::new(Api::OpenAi, server.url(), "m"));
    let error = summarize(&summarizer, 100).unwrap_err().to_string();
    assert!(
        error.contains("HTTP 400") && error.contains("bad model") && error.contains("after 1 attempt"),
        "{error}"
    );
    assert_eq!(server.finish().len(), 1);
}

#[test]
fn a_slow_answer_times_out_and_a_refused_connection_is_an_error() {
    let server =
        Server::start(vec![Reply::json(200, json!({"choices": [{"message": {"content": "late"}}]}))
            .after(Duration::from_secs(3))]);
    let summarizer = HttpSummarizer::new(Api::OpenAi, server.url(), "m")
        .with_timeout(Duration::from_millis(300))
        .with_retries(0, Duration::from_millis(10));
    let started = std::time::Instant::now();
    let error = summarize(&summarizer, 100).unwrap_err().to_string();
    assert!(started.elapsed() < Duration::from_secs(2), "no hang: {:?}", started.elapsed());
    assert!(
        error.to_lowercase().contains("timeout") || error.to_lowercase().contains("timed out"),
        "{error}"
    );
    drop(server);

    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let summarizer = HttpSummarizer::new(Api::OpenAi, format!("http://127.0.0.1:{port}"), "m")
        .with_retries(1, Duration::from_millis(10));
    let error = summarize(&summarizer, 100).unwrap_err().to_string();
    assert!(error.contains(&format!("127.0.0.1:{port}")) && error.contains("after 2 attempts"), "{error}");
}

#[test]
fn malformed_empty_and_oversize_answers_are_errors() {
    for (reply, expected) in [
        (Reply::text(200, "<html>gateway</html>"), "not JSON"),
        (Reply::json(200, json!({"choices": []})), "no text where the API puts it"),
        (Reply::json(200, json!({"choices": [{"message": {"content": "   "}}]})), "empty summary"),
        (
            Reply::json(200, json!({"choices": [{"message": {"content": "word ".repeat(50)}}]})),
            "over its budget of 20",
        ),
        (Reply::text(200, "data: {\"garbage\"\n\ndata: [DONE]"), "not JSON"),
    ] {
        let server = Server::start(vec![reply]);
        let server_url = server.url();
        let summarizer = quick(HttpSummarizer::new(Api::OpenAi, server.url(), "m"));
        let error = summarize(&summarizer, 20).unwrap_err().to_string();
        assert!(error.contains(expected), "{expected}: {error}");
        assert!(error.starts_with(&format!("summarizer openai:m@{}: ", server_url)), "{error}");
    }
    // a key whose variable is not set is said so, and nothing is sent
    let summarizer = HttpSummarizer::new(Api::OpenAi, "http://127.0.0.1:9", "m")
        .with_api_key_env("TIGHTFIT_LLM_TEST_UNSET");
    assert!(summarize(&summarizer, 20)
        .unwrap_err()
        .to_string()
        .contains("TIGHTFIT_LLM_TEST_UNSET is not set"));
}

#[test]
fn the_summarize_step_uses_the_model_and_falls_back_when_it_fails() {
    let mut json = vec![json!({"role": "system", "content": "You are terse."})];
    for i in 0..12 {
        json.push(json!({"role": "user", "content": format!("question {i} about src/mod_{i}.rs")}));
        json.push(json!({"role": "assistant", "content": format!("answer {i}")}));
    }
    let conversation = parse_str(&Value::Array(json).to_string(), FormatHint::Auto).unwrap();
    let pipeline = Pipeline::builder()
        .step(Summarize { threshold: 10, keep_recent: 4, ..Summarize::default() })
        .build()
        .unwrap();
    let counter = ChatCounter::openai(OpenAiEncoding::O200kBase);
    let run = |summarizer: &HttpSummarizer| {
        Fitter::new()
            .run_with(
                &conversation,
                &counter,
                Some(&pipeline),
                &RunOptions::transform(),
                Services::default().with_summarizer(summarizer),
            )
            .unwrap()
            .into_messages()
    };
    let summary_of = |out: &[Message]| {
        out.iter().map(Message::text_content).find(|t| t.starts_with("[tightfit: summary of ")).unwrap()
    };

    let server = Server::start(vec![Reply::json(
        200,
        json!({"choices": [{"message": {"content": "The user asked twenty questions."}}]}),
    )]);
    let summary = summary_of(&run(&quick(HttpSummarizer::new(Api::OpenAi, server.url(), "m"))));
    assert!(summary.ends_with("\nThe user asked twenty questions."), "{summary}");
    drop(server);

    let server = Server::start(vec![Reply::json(503, json!({})); 3]);
    let summary = summary_of(&run(&quick(HttpSummarizer::new(Api::OpenAi, server.url(), "m"))));
    assert!(summary.contains("HTTP 503") && summary.contains("the extractive summary instead"), "{summary}");
    assert!(summary.contains("\"question 1 about src/mod_1.rs\""), "the extractive summary: {summary}");
    assert_eq!(server.finish().len(), 3, "tried three times");
}
