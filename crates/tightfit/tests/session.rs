//! Sessions on real agent runs grown turn by turn: every request within budget and valid,
//! each one extending the one before until a compaction, the same decisions from a second
//! session on the same store, and clear errors from a broken store.

use std::borrow::Cow;
use std::sync::Arc;

use tightfit::format::{messages_to_value, parse_str, Conversation, Format, FormatHint};
use tightfit::message::Message;
use tightfit::models::Registry;
use tightfit::pricing::Pricing;
use tightfit::repair::ABORTED_RESULT;
use tightfit::session::{
    store_keys, MemoryStore, Peeked, Policy, Session, SessionError, Settings, Store, StoreErrorKind,
};
use tightfit::tokens::message_fingerprint;
use tightfit::units::{message_ends, turn_ends};
use tightfit::validate::validate;
use tightfit::Target;

use crate::{lines, shared};

fn conversations(file: &str, take: usize) -> Vec<Conversation> {
    lines(&shared(file)).iter().take(take).map(|l| parse_str(l, FormatHint::Auto).unwrap()).collect()
}

fn prefix(conversation: &Conversation, len: usize) -> Conversation {
    Conversation { messages: conversation.messages[..len].to_vec(), ..conversation.clone() }
}

fn wire(messages: &[Cow<'_, Message>], format: Format) -> Vec<String> {
    messages.iter().map(|m| messages_to_value(std::slice::from_ref(m.as_ref()), format).to_string()).collect()
}

fn target(model: &str, budget: usize) -> Target {
    Target::for_model(Registry::embedded().lookup(model).unwrap(), None).with_budget(budget)
}

/// What one agent loop did: requests, compactions, and each request's messages as bytes.
struct Loop {
    requests: Vec<Vec<String>>,
    tokens: Vec<usize>,
    compactions: usize,
}

/// Sends `conversation` turn by turn through `session`, checking each request.
fn agent_loop(session: &Session, conversation: &Conversation) -> Loop {
    agent_loop_over(session, conversation, &turn_ends(&conversation.messages))
}

/// [`agent_loop`] over the turns that end at `ends`.
fn agent_loop_over(session: &Session, conversation: &Conversation, ends: &[usize]) -> Loop {
    let budget = session.target().budget;
    let provider = session.target().provider.unwrap_or(conversation.format);
    let mut requests: Vec<Vec<String>> = Vec::new();
    let mut tokens = Vec::new();
    let mut compactions = 0;
    for &end in ends {
        let turn = prefix(conversation, end);
        let before = turn.clone();
        let fitted = match session.fit(&turn) {
            Ok(fitted) => fitted,
            Err(SessionError::Fit(e)) => panic!("turn at {end} messages: {e}"),
            Err(e) => panic!("{e}"),
        };
        assert_eq!(turn, before, "the input is not mutated");
        let report = &fitted.report;
        assert!(report.compressed_token_count <= budget, "{} over {budget}", report.compressed_token_count);
        assert_eq!(validate(&fitted.messages, provider), vec![], "turn at {end} messages is valid");
        let info = report.session.as_ref().expect("a session fit says so");
        let sent = wire(&fitted.messages, turn.format);
        if info.compacted {
            compactions += 1;
            assert!(
                sent.iter().any(|m| m.contains("[tightfit: ")) || report.compressed_message_count == end,
                "turn at {end} messages: a compaction that removed messages leaves a trace: {:?}",
                report
                    .steps
                    .iter()
                    .map(|s| (&s.step, s.messages_before, s.messages_after, s.tokens_before, s.tokens_after))
                    .collect::<Vec<_>>()
            );
        } else if let Some(previous) = requests.last() {
            assert!(
                sent.len() >= previous.len() && sent[..previous.len()] == previous[..],
                "{}: turn at {end} messages: without a compaction the request extends the previous one",
                conversation
                    .request
                    .as_ref()
                    .and_then(|r| r.extra.get("id"))
                    .map(|v| v.to_string())
                    .unwrap_or_default()
            );
        }
        requests.push(sent);
        tokens.push(report.compressed_token_count);
    }
    Loop { requests, tokens, compactions }
}

#[test]
fn agent_runs_grow_turn_by_turn_with_few_compactions() {
    for (file, model, budget) in [
        ("data/agent_mini_swe_deepseek.jsonl", "gpt-4o", 8_000),
        ("data/agent_tau_bench_airline_gpt4o.jsonl", "gpt-4o", 4_000),
        ("data2/agent_tau2_airline_claude45_thinking_anthropic.jsonl", "claude-sonnet-4-5", 4_000),
        ("data2/agent_claude_code_sessions_anthropic.jsonl", "claude-sonnet-4-5", 6_000),
        ("data2/agent_openhands.jsonl", "gpt-4o", 8_000),
    ] {
        let mut turns = 0;
        let mut compactions = 0;
        for conversation in conversations(file, 4) {
            let session = Session::new(target(model, budget), Policy::cache(), Arc::new(MemoryStore::new()));
            let run = agent_loop(&session, &conversation);
            turns += run.requests.len();
            compactions += run.compactions;
        }
        assert!(turns > 0);
        // each compaction cuts to 60% of the budget, so a turn compacts only when 40% of the
        // budget arrived since the last one
        assert!(compactions * 5 <= turns, "{file}: {compactions} compactions in {turns} turns");
    }
}

/// A turn that appends to the previous one is answered from it, exactly as replaying the
/// decision over the whole history answers it: the same messages, report and plan, turn after
/// turn, over real agent runs and chats of both corpora, OpenAI and Anthropic (thinking
/// blocks with signatures, Claude Code sessions; cache breakpoints placed, for one), grown
/// one message per turn (turns that end on a call, which a repair answers, included) and a
/// request per turn, with compactions, an edit and a branch between them.
#[test]
fn a_turn_answered_from_the_previous_one_is_the_replay_exactly() {
    // aider's chats are short: forty of them back to back make one long chat
    let chats = conversations("data/chat_aider_sessions.jsonl", 40);
    let chat = Conversation {
        messages: chats.iter().flat_map(|c| c.messages.iter().cloned()).collect(),
        ..chats[0].clone()
    };
    let runs = |file: &str, take: usize| conversations(file, take);
    let breakpoints = Settings::default().with_cache_breakpoints(true);
    for (file, runs, model, budget, settings) in [
        (
            "data/agent_mini_swe_deepseek.jsonl",
            runs("data/agent_mini_swe_deepseek.jsonl", 2),
            "gpt-4o",
            6_000,
            Settings::default(),
        ),
        (
            "data/agent_tau_bench_airline_gpt4o.jsonl",
            runs("data/agent_tau_bench_airline_gpt4o.jsonl", 2),
            "gpt-4o",
            3_000,
            Settings::default(),
        ),
        ("data/chat_aider_sessions.jsonl", vec![chat], "gpt-4o", 4_000, Settings::default()),
        (
            "data2/agent_openhands.jsonl",
            runs("data2/agent_openhands.jsonl", 3),
            "gpt-4o",
            12_000,
            Settings::default(),
        ),
        (
            "data2/agent_tau2_mixed.jsonl",
            runs("data2/agent_tau2_mixed.jsonl", 4),
            "gpt-4o",
            9_000,
            Settings::default(),
        ),
        (
            "data2/agent_tau2_airline_claude45_thinking_anthropic.jsonl",
            runs("data2/agent_tau2_airline_claude45_thinking_anthropic.jsonl", 3),
            "claude-sonnet-4-5",
            9_000,
            Settings::default(),
        ),
        (
            "data2/agent_claude_code_sessions_anthropic.jsonl",
            runs("data2/agent_claude_code_sessions_anthropic.jsonl", 3),
            "claude-sonnet-4-5",
            12_000,
            Settings::default(),
        ),
        (
            "data2/agent_moatless_claude35_anthropic.jsonl",
            runs("data2/agent_moatless_claude35_anthropic.jsonl", 3),
            "claude-sonnet-4-5",
            8_000,
            breakpoints,
        ),
    ] {
        let session = |previous_turns: usize| {
            Session::new(target(model, budget), Policy::cache(), Arc::new(MemoryStore::new()))
                .with_settings(settings.clone().with_previous_turns(previous_turns))
                .unwrap()
        };
        let (answered, replayed) = (session(64), session(0));
        let mut compared = 0;
        let mut held = 0;
        let mut in_place = 0;
        for conversation in runs.iter().filter(|c| c.messages.len() > 3) {
            let mut turns: Vec<Conversation> = message_ends(&conversation.messages)
                .into_iter()
                .chain(turn_ends(&conversation.messages))
                .map(|end| prefix(conversation, end))
                .collect();
            // an edit of an early message, then a branch back to the first half
            let mut edited = turns.last().unwrap().clone();
            edited.messages[1] = Message::text(edited.messages[1].role, "edited by the caller");
            turns.push(edited);
            let half = conversation.messages.len() / 2;
            turns.push(prefix(conversation, half));
            turns.push(prefix(conversation, (half + 3).min(conversation.messages.len())));
            for turn in &turns {
                let where_ = format!("{file}: turn of {} messages", turn.messages.len());
                // the answering session is asked first as the proxy asks it on its async
                // worker (`answer_appended`: only a turn answered from the previous one), then
                // as a whole for the turns that one leaves
                let fingerprints: Vec<u128> = turn.messages.iter().map(message_fingerprint).collect();
                let a = match answered.answer_appended(&Session::key_of(turn), turn, &fingerprints) {
                    Ok(Some(fitted)) => {
                        in_place += 1;
                        Ok(fitted)
                    }
                    Ok(None) => answered.fit(turn),
                    Err(e) => panic!("{where_}: {e}"),
                };
                let r = replayed.fit(turn);
                match (a, r) {
                    (Ok(a), Ok(r)) => {
                        assert_eq!(
                            wire(&a.messages, turn.format),
                            wire(&r.messages, turn.format),
                            "{where_}"
                        );
                        assert_eq!(a.report, r.report, "{where_}");
                        assert_eq!(a.plan, r.plan, "{where_}");
                        compared += 1;
                        held += answered.previous_turns_held();
                    }
                    (Err(a), Err(r)) => assert_eq!(a.to_string(), r.to_string(), "{where_}"),
                    (a, r) => panic!("{where_}: {:?} against {:?}", a.map(|f| f.report), r.map(|f| f.report)),
                }
            }
        }
        assert!(compared > 50, "{file}: {compared} turns compared");
        assert!(held > compared / 4, "{file}: a previous turn held after {held} of {compared} turns");
        assert!(in_place > compared / 10, "{file}: {in_place} of {compared} turns answered in place");
        assert_eq!(replayed.previous_turns_held(), 0);
        let none = replayed.answer_appended(&Session::key_of(&runs[0]), &runs[0], &[]).unwrap();
        assert!(none.is_none(), "{file}: fingerprints of another length answer nothing");
    }
}

/// The issue's agent stream (the mini-swe runs back to back, from 1,000 messages, Claude's
/// counts at 32k; a turn after the user's or the tools' messages): every compaction sends again, unchanged, the head the one before kept, the part a
/// provider's prompt cache holds from one compaction to the next. (A compaction that cut
/// the head's results when the cut alone left it over its mark, and kept them whole when not,
/// lost half its cache this way.)
#[test]
fn compactions_keep_the_head_the_one_before_kept() {
    let runs = conversations("data/agent_mini_swe_deepseek.jsonl", usize::MAX);
    let mut stream = runs[0].clone();
    stream.messages = runs.iter().flat_map(|c| c.messages.iter().cloned()).collect();
    let ends: Vec<usize> =
        turn_ends(&stream.messages).into_iter().filter(|&e| (1_000..=1_400).contains(&e)).collect();
    let session =
        Session::new(target("claude-sonnet-4-5", 32_000), Policy::cache(), Arc::new(MemoryStore::new()));
    let run = agent_loop_over(&session, &stream, &ends);
    let head = |request: &[String]| request.iter().take_while(|m| !m.contains("[tightfit: ")).count();
    let mut compactions = 0;
    for (turn, pair) in run.requests.windows(2).enumerate() {
        let (before, now) = (&pair[0], &pair[1]);
        if now.len() >= before.len() && now[..before.len()] == before[..] {
            continue;
        }
        compactions += 1;
        let kept = head(before);
        assert!(kept > 1, "a head of the task and more");
        let differs = (0..kept).find(|&i| now.get(i) != Some(&before[i]));
        assert_eq!(
            differs,
            None,
            "turn {}: the compaction changed message {differs:?} of a head of {kept}",
            turn + 1
        );
    }
    assert!(compactions >= 3, "{compactions} compactions");
}

/// One message a turn, so that some turns end on the assistant's call before its results:
/// such a turn is sent with the call answered by a synthetic result, and the next turn, with
/// the real result in its place, still extends it (a compaction on such a turn does not
/// freeze the synthetic result, which would be sent beside the real one and force a second
/// compaction).
#[test]
fn turns_that_end_on_a_call_are_answered_for_that_turn_only() {
    for (file, model, budget) in [
        ("data/agent_mini_swe_deepseek.jsonl", "gpt-4o", 8_000),
        ("data2/agent_claude_code_sessions_anthropic.jsonl", "claude-sonnet-4-5", 6_000),
        ("data/agent_tau_bench_airline_gpt4o.jsonl", "gpt-4o", 4_000),
    ] {
        let (mut on_a_call, mut compacted_on_a_call) = (0, 0);
        for conversation in conversations(file, 3) {
            let session = Session::new(target(model, budget), Policy::cache(), Arc::new(MemoryStore::new()));
            let provider = session.target().provider.unwrap_or(conversation.format);
            let mut previous: Option<(Vec<String>, bool, bool)> = None;
            for end in message_ends(&conversation.messages) {
                let turn = prefix(&conversation, end);
                let fitted = session.fit(&turn).unwrap();
                assert!(fitted.report.compressed_token_count <= budget);
                assert_eq!(validate(&fitted.messages, provider), vec![], "{file}: turn at {end} is valid");
                let compacted = fitted.report.session.as_ref().unwrap().compacted;
                let ends_on_a_call = turn.messages[end - 1].tool_calls().next().is_some();
                let sent = wire(&fitted.messages, turn.format);
                if let Some((before, was_compacted, was_on_a_call)) = &previous {
                    assert!(!(compacted && *was_compacted), "{file}: two compactions in a row at {end}");
                    if *was_on_a_call && !compacted {
                        // the previous request without the synthetic result it ended with
                        // (none when its compaction removed the call)
                        let kept = before.iter().take_while(|m| !m.contains(ABORTED_RESULT)).count();
                        assert_eq!(
                            sent[..kept],
                            before[..kept],
                            "{file}: turn at {end} extends the one before"
                        );
                        assert!(!sent.iter().any(|m| m.contains(ABORTED_RESULT)), "{file}: at {end}");
                        compacted_on_a_call += usize::from(*was_compacted);
                    }
                }
                on_a_call += usize::from(ends_on_a_call);
                previous = Some((sent, compacted, ends_on_a_call));
            }
        }
        assert!(on_a_call > 10, "{file}: {on_a_call} turns end on a call");
        if file.contains("mini_swe") {
            assert!(compacted_on_a_call > 0, "{file}: some compaction falls on a turn that ends on a call");
        }
    }
}

/// A framework that keeps the fitted history as its own (pydantic-ai's history processors,
/// LangChain's `before_model` rewriting the state) hands the session its own output plus the
/// new messages: that is sent as it comes until the high-water mark, not compacted again
/// every turn, and each request extends the one before between compactions.
#[test]
fn a_session_given_its_own_output_back_compacts_only_at_the_mark() {
    for (file, model, budget) in [
        ("data/agent_mini_swe_deepseek.jsonl", "gpt-4o", 8_000),
        ("data2/agent_claude_code_sessions_anthropic.jsonl", "claude-sonnet-4-5", 6_000),
    ] {
        let (mut compactions, mut turns) = (0, 0);
        for conversation in conversations(file, 4) {
            let session = Session::new(target(model, budget), Policy::cache(), Arc::new(MemoryStore::new()));
            let ends = turn_ends(&conversation.messages);
            let (mut kept, mut from) = (Vec::<Message>::new(), 0);
            let mut previous: Vec<String> = Vec::new();
            for &end in &ends {
                // what the framework holds: the last fitted history, then the new messages
                kept.extend(conversation.messages[from..end].iter().cloned());
                from = end;
                let turn = Conversation { messages: kept.clone(), ..conversation.clone() };
                let fitted = session.fit(&turn).unwrap_or_else(|e| panic!("{file} at {end}: {e}"));
                assert!(fitted.report.compressed_token_count <= budget);
                assert_eq!(validate(&fitted.messages, turn.format), vec![], "{file} at {end}");
                let sent = wire(&fitted.messages, turn.format);
                if fitted.report.session.as_ref().unwrap().compacted {
                    compactions += 1;
                } else if !previous.is_empty() {
                    assert_eq!(
                        sent[..previous.len()],
                        previous[..],
                        "{file} at {end}: the request extends the last"
                    );
                }
                turns += 1;
                previous = sent;
                kept = fitted.messages.iter().map(|m| m.as_ref().clone()).collect();
            }
        }
        assert!(compactions > 0, "{file}: the loops outgrow the budget");
        assert!(compactions * 5 <= turns, "{file}: {compactions} compactions in {turns} turns");
    }
}

#[test]
fn a_second_session_on_the_same_store_makes_the_same_decisions() {
    let conversation = &conversations("data/agent_mini_swe_deepseek.jsonl", 1)[0];
    let session =
        |store: &Arc<dyn Store>| Session::new(target("gpt-4o", 6_000), Policy::cache(), Arc::clone(store));
    let whole = agent_loop(&session(&(Arc::new(MemoryStore::new()) as Arc<dyn Store>)), conversation);
    assert!(whole.compactions >= 2, "the run compacts more than once at this budget");
    // the same loop, its second half by a new session (another process: nothing in memory)
    let ends = turn_ends(&conversation.messages);
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let half = ends.len() / 2;
    let mut requests = agent_loop_over(&session(&store), conversation, &ends[..half]).requests;
    requests.extend(agent_loop_over(&session(&store), conversation, &ends[half..]).requests);
    assert_eq!(requests.len(), whole.requests.len());
    for (i, (a, b)) in requests.iter().zip(&whole.requests).enumerate() {
        assert!(a == b, "turn {i} differs");
    }
}

#[test]
fn replicas_on_a_shared_store_taking_turns_make_the_same_decisions() {
    // two sessions (two proxy replicas) serving alternate turns of one conversation: each
    // reads back the compaction the other made, so the requests are those of one session
    let conversation = &conversations("data/agent_mini_swe_deepseek.jsonl", 1)[0];
    let shared = Settings::default().with_shared_store(true);
    let session = |store: &Arc<dyn Store>, settings: Settings| {
        Session::new(target("gpt-4o", 6_000), Policy::cache(), Arc::clone(store))
            .with_settings(settings)
            .unwrap()
    };
    let alone = agent_loop(
        &session(&(Arc::new(MemoryStore::new()) as Arc<dyn Store>), Settings::default()),
        conversation,
    );
    assert!(alone.compactions >= 2, "the run compacts more than once at this budget");
    let ends = turn_ends(&conversation.messages);
    for settings in [shared.clone(), Settings::default()] {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let replicas = [session(&store, settings.clone()), session(&store, settings.clone())];
        let mut requests = Vec::new();
        for (i, end) in ends.iter().enumerate() {
            requests
                .extend(agent_loop_over(&replicas[i % 2], conversation, std::slice::from_ref(end)).requests);
        }
        let same = requests == alone.requests;
        // without reading the store back, a replica replays its own stale epoch and compacts
        // on its own, elsewhere
        assert_eq!(same, settings.shared_store, "shared_store: {}", settings.shared_store);
    }
}

/// A store that counts the bytes read from it, in front of a memory store.
#[derive(Debug, Default)]
struct CountingStore {
    inner: MemoryStore,
    read: std::sync::atomic::AtomicUsize,
}

impl Store for CountingStore {
    fn load(&self, key: &str) -> Result<Option<Vec<u8>>, tightfit::session::StoreError> {
        let loaded = self.inner.load(key)?;
        self.read.fetch_add(loaded.as_ref().map_or(0, Vec::len), std::sync::atomic::Ordering::Relaxed);
        Ok(loaded)
    }
    fn save(&self, key: &str, checkpoint: &[u8]) -> Result<(), tightfit::session::StoreError> {
        self.inner.save(key, checkpoint)
    }
    fn remove(&self, key: &str) -> Result<bool, tightfit::session::StoreError> {
        self.inner.remove(key)
    }
    fn describe(&self) -> String {
        "counting".into()
    }
}

/// On a shared store a replica checks every turn that the checkpoint it holds is the latest by
/// reading its version (16 bytes), not the checkpoint; it reads the checkpoint when another
/// replica wrote a newer one, and reads a checkpoint written without a version (by a build from
/// before versions) whole.
#[test]
fn a_replica_on_a_shared_store_reads_the_checkpoint_only_when_it_changed() {
    let conversation = &conversations("data/agent_mini_swe_deepseek.jsonl", 1)[0];
    let store = Arc::new(CountingStore::default());
    let replica = || {
        Session::new(target("gpt-4o", 6_000), Policy::cache(), Arc::clone(&store) as Arc<dyn Store>)
            .with_settings(Settings::default().with_shared_store(true))
            .unwrap()
    };
    let (first, second) = (replica(), replica());
    let ends = turn_ends(&conversation.messages);
    let read = || store.read.load(std::sync::atomic::Ordering::Relaxed);
    let mut compacted_at = None;
    for (turn, &end) in ends.iter().enumerate() {
        let sent = prefix(conversation, end);
        if first.fit(&sent).unwrap().report.session.unwrap().compacted {
            compacted_at = Some(turn);
            break;
        }
    }
    let turn = compacted_at.expect("the run compacts at this budget");
    let compacted = prefix(conversation, ends[turn]);
    let key = first.fit(&compacted).unwrap().report.session.unwrap().key;
    let checkpoint = store.inner.load(&key).unwrap().expect("the compaction's checkpoint");
    assert!(checkpoint.len() > 1_000);
    // the other replica reads it whole once, then only its version
    let next = prefix(conversation, ends[turn + 1]);
    let before = read();
    second.fit(&next).unwrap();
    assert!(read() - before >= checkpoint.len(), "the new checkpoint is read");
    let before = read();
    let replayed = second.fit(&next).unwrap();
    assert_eq!(read() - before, 16, "only the version is read");
    assert_eq!(
        wire(&replayed.messages, next.format),
        wire(&first.fit(&next).unwrap().messages, next.format),
        "both replicas send the same"
    );
    // a checkpoint from a build that wrote no version is read whole, every turn
    let version = format!("tightfit-checkpoint-version:{key}");
    assert!(store.inner.remove(&version).unwrap(), "the version is kept beside the checkpoint");
    let before = read();
    second.fit(&next).unwrap();
    assert_eq!(read() - before, checkpoint.len());
}

#[test]
fn between_the_marks_a_compaction_waits_until_it_pays_for_its_cache_misses() {
    let registry = Registry::embedded();
    let price = |model: &str| Pricing::of(registry.lookup(model).unwrap()).unwrap();
    let budget = 8_000;
    let high = budget * 7 / 10;
    // Anthropic caches only where requests are marked: these sessions mark them (the marks
    // go on Anthropic requests only, so these OpenAI-shaped requests come out alike)
    let session = |pricing: Option<Pricing>, store: &Arc<dyn Store>| {
        let settings = Settings::default().with_marks(0.5, 0.7).with_cache_breakpoints(true);
        let session = Session::new(target("gpt-4o", budget), Policy::cache(), Arc::clone(store))
            .with_settings(settings)
            .unwrap();
        match pricing {
            Some(pricing) => session.with_pricing(pricing),
            None => session,
        }
    };
    let fresh = || Arc::new(MemoryStore::new()) as Arc<dyn Store>;
    let (mut waited, mut weighed_compactions, mut marked_compactions) = (0, 0, 0);
    for conversation in conversations("data/agent_mini_swe_deepseek.jsonl", 3) {
        // Anthropic's prices: a cached token costs a tenth, a miss is written at 1.25x
        let weighed = agent_loop(&session(Some(price("claude-sonnet-4-5")), &fresh()), &conversation);
        let marked = agent_loop(&session(None, &fresh()), &conversation);
        assert!(marked.tokens.iter().all(|&t| t <= high), "without prices the mark is where it compacts");
        waited += weighed.tokens.iter().filter(|&&t| t > high).count();
        weighed_compactions += weighed.compactions;
        marked_compactions += marked.compactions;
        // Anthropic's prices but no marks: nothing is cached, nothing to lose
        let unmarked = Session::new(target("gpt-4o", budget), Policy::cache(), fresh())
            .with_settings(Settings::default().with_marks(0.5, 0.7))
            .unwrap()
            .with_pricing(price("claude-sonnet-4-5"));
        assert_eq!(agent_loop(&unmarked, &conversation).requests, marked.requests);
        // no discount for cached tokens: nothing to lose, compact at the mark
        let mut flat = price("gpt-4o");
        flat.cached_input = flat.input;
        assert_eq!(agent_loop(&session(Some(flat), &fresh()), &conversation).requests, marked.requests);
        // the growth is measured on the history: a second session on the same store (another
        // process) waits and compacts alike
        let store = fresh();
        let ends = turn_ends(&conversation.messages);
        let half = ends.len() / 2;
        let mut requests =
            agent_loop_over(&session(Some(price("claude-sonnet-4-5")), &store), &conversation, &ends[..half])
                .requests;
        requests.extend(
            agent_loop_over(&session(Some(price("claude-sonnet-4-5")), &store), &conversation, &ends[half..])
                .requests,
        );
        assert!(requests == weighed.requests);
    }
    assert!(waited > 0, "some turns wait past the mark");
    assert!(
        weighed_compactions < marked_compactions,
        "waiting compacts less often: {weighed_compactions} against {marked_compactions}"
    );
}

#[test]
fn an_edit_or_a_branch_keeps_what_still_applies() {
    let conversation = &conversations("data/agent_mini_swe_deepseek.jsonl", 1)[0];
    let session = Session::new(target("gpt-4o", 6_000), Policy::cache(), Arc::new(MemoryStore::new()));
    let run = agent_loop(&session, conversation);
    assert!(run.compactions >= 1);
    // the caller edits an old message (the task): nothing the decision covered can be trusted
    let mut edited = conversation.clone();
    edited.messages[1] = Message::text(tightfit::Role::User, "a different task");
    let fitted = session.fit(&edited).unwrap();
    assert!(fitted.report.compressed_token_count <= 6_000);
    assert_eq!(validate(&fitted.messages, Format::OpenAi), vec![]);
    // a branch: the last turns are taken back and the loop goes on from an earlier point
    let ends = turn_ends(&conversation.messages);
    let back = prefix(conversation, ends[ends.len() - 4]);
    let fitted = session.fit(&back).unwrap();
    assert!(fitted.report.compressed_token_count <= 6_000);
    assert_eq!(validate(&fitted.messages, Format::OpenAi), vec![]);
}

#[test]
fn a_corrupt_checkpoint_is_an_error_naming_the_store_and_conversation() {
    let conversation = &conversations("data/agent_mini_swe_deepseek.jsonl", 1)[0];
    let store = Arc::new(MemoryStore::new());
    let session = Session::new(target("gpt-4o", 6_000), Policy::cache(), store.clone());
    let key = Session::key_of(conversation);
    for (bytes, kind) in [
        (&b"not json"[..], StoreErrorKind::Corrupt),
        (br#"{"something": "else"}"#, StoreErrorKind::Corrupt),
        (br#"{"tightfit_session": 99}"#, StoreErrorKind::Version),
    ] {
        store.save(&key, bytes).unwrap();
        match session.fit(conversation) {
            Err(SessionError::Store(e)) => {
                assert_eq!(e.kind, kind);
                assert!(e.to_string().contains(&key), "{e}");
                assert!(e.to_string().starts_with("memory: "), "{e}");
            }
            other => panic!("expected a store error, got {:?}", other.map(|f| f.report)),
        }
        // nothing was overwritten: the bad checkpoint is still there for a person to look at
        assert_eq!(store.load(&key).unwrap().as_deref(), Some(bytes));
    }
}

/// Checkpoints hold the messages a compaction rewrote, read back through an untagged enum:
/// numbers an `f64` cannot hold (kept as their text) come back from them as they went in.
#[test]
fn a_checkpoint_keeps_numbers_beyond_an_f64() {
    let line = &lines(&shared("data/agent_mini_swe_deepseek.jsonl"))[0];
    let mut value: serde_json::Value = serde_json::from_str(line).unwrap();
    let numbers = r#"{"big": 123456789012345678901234567890, "precise": 0.1000000000000000000000000000001, "tenth": 0.1, "huge": 1e400}"#;
    for message in value["messages"].as_array_mut().unwrap() {
        message["meta"] = serde_json::from_str(numbers).unwrap();
    }
    let conversation = parse_str(&value.to_string(), FormatHint::Auto).unwrap();
    let ends = turn_ends(&conversation.messages);
    let half = ends.len() / 2;
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let session = || Session::new(target("gpt-4o", 6_000), Policy::cache(), Arc::clone(&store));
    let first = agent_loop_over(&session(), &conversation, &ends[..half]);
    assert!(first.compactions >= 1, "a checkpoint is written");
    // a new session (nothing in memory) reads the checkpoint and sends the numbers as they came
    // (serde_json writes an exponent with its sign: `1e400` as `1e+400`, the same value)
    let rest = agent_loop_over(&session(), &conversation, &ends[half..]).requests;
    let last = rest.last().unwrap().join("");
    assert!(
        last.contains(r#""precise":0.1000000000000000000000000000001"#) && last.contains(r#""huge":1e+400"#)
    );
    let whole = agent_loop(
        &Session::new(target("gpt-4o", 6_000), Policy::cache(), Arc::new(MemoryStore::new())),
        &conversation,
    );
    assert_eq!(rest, whole.requests[half..]);
}

#[test]
fn a_checkpoint_of_version_1_is_read() {
    let conversation = &conversations("data/agent_mini_swe_deepseek.jsonl", 1)[0];
    let ends = turn_ends(&conversation.messages);
    let half = ends.len() / 2;
    let store = Arc::new(MemoryStore::new());
    let session =
        |store: &Arc<MemoryStore>| Session::new(target("gpt-4o", 6_000), Policy::cache(), store.clone());
    assert!(agent_loop_over(&session(&store), conversation, &ends[..half]).compactions >= 1);
    let key = Session::key_of(conversation);
    let written = store.load(&key).unwrap().expect("a checkpoint after a compaction");
    let rest = agent_loop_over(&session(&store), conversation, &ends[half..]).requests;
    // the same checkpoint as an earlier build wrote it: version 1, no `tokens`
    let mut old: serde_json::Value = serde_json::from_slice(&written).unwrap();
    old["tightfit_session"] = 1.into();
    assert!(old.as_object_mut().unwrap().remove("tokens").is_some());
    let older = Arc::new(MemoryStore::new());
    older.save(&key, &serde_json::to_vec(&old).unwrap()).unwrap();
    assert_eq!(agent_loop_over(&session(&older), conversation, &ends[half..]).requests, rest);
}

#[test]
fn marks_are_checked() {
    let session = || Session::new(target("gpt-4o", 6_000), Policy::cache(), Arc::new(MemoryStore::new()));
    assert!(session().with_settings(Settings::default().with_marks(0.9, 0.8)).is_err());
    assert!(session().with_settings(Settings::default().with_marks(0.5, 1.2)).is_err());
    assert!(session().with_settings(Settings::default().with_marks(0.5, 0.9)).is_ok());
    assert!(Policy::by_name("no-such-policy").unwrap_err().to_string().contains("no-such-policy"));
}

/// The `cache_control` marks of a request, as (message index, block type).
fn cache_marks(messages: &[Cow<'_, Message>]) -> Vec<(usize, String)> {
    let wire = messages_to_value(
        &messages.iter().map(|m| m.as_ref().clone()).collect::<Vec<_>>(),
        Format::Anthropic,
    );
    let mut marks = Vec::new();
    for (i, message) in wire.as_array().unwrap().iter().enumerate() {
        for block in message["content"].as_array().into_iter().flatten() {
            if block.get("cache_control").is_some() {
                marks.push((i, block["type"].as_str().unwrap_or_default().to_string()));
            }
        }
    }
    marks
}

#[test]
fn anthropic_cache_breakpoints_are_placed_when_asked_and_the_plan_still_replays() {
    let model = "claude-sonnet-4-5";
    let with_marks = || {
        Session::new(target(model, 4_000), Policy::cache(), Arc::new(MemoryStore::new()))
            .with_settings(Settings::default().with_cache_breakpoints(true))
            .unwrap()
    };
    let (first, second) = (with_marks(), with_marks());
    let plain = Session::new(target(model, 4_000), Policy::cache(), Arc::new(MemoryStore::new()));
    let mut turns_with_a_trace = 0;
    for conversation in conversations("data2/agent_tau2_airline_claude45_thinking_anthropic.jsonl", 2) {
        for end in turn_ends(&conversation.messages) {
            let turn = prefix(&conversation, end);
            let fitted = first.fit(&turn).unwrap();
            assert!(fitted.report.compressed_token_count <= 4_000);
            assert_eq!(validate(&fitted.messages, Format::Anthropic), vec![], "turn at {end} messages");
            let marks = cache_marks(&fitted.messages);
            assert!((1..=3).contains(&marks.len()), "turn at {end} messages: {marks:?}");
            assert!(marks.iter().all(|(_, kind)| !kind.contains("thinking")), "{marks:?}");
            assert_eq!(marks.last().unwrap().0, fitted.messages.len() - 1, "the last message is marked");
            // the plan records the marked messages: it replays the request exactly
            assert_eq!(fitted.plan.replay(&turn.messages).unwrap(), fitted.messages);
            // two sessions mark alike; without the setting nothing is marked
            assert_eq!(second.fit(&turn).unwrap().messages, fitted.messages);
            let unmarked = plain.fit(&turn).unwrap();
            assert!(cache_marks(&unmarked.messages).is_empty());
            turns_with_a_trace += usize::from(fitted.plan.output.iter().any(|e| e.input.is_none()));
        }
    }
    assert!(turns_with_a_trace > 0, "some turns compacted, so the head's end was marked too");
    // a caller who marks its own breakpoints keeps them as they are
    let mut own = conversations("data2/agent_tau2_airline_claude45_thinking_anthropic.jsonl", 1).remove(0);
    own.messages.truncate(turn_ends(&own.messages)[2]);
    let first_text = own.messages.iter_mut().flat_map(|m| m.parts.iter_mut()).find_map(|p| match p {
        tightfit::Part::Text(t) => Some(t),
        _ => None,
    });
    first_text.unwrap().extra.insert("cache_control".into(), serde_json::json!({"type": "ephemeral"}));
    let fitted = with_marks().fit(&own).unwrap();
    assert_eq!(cache_marks(&fitted.messages).len(), 1, "only the caller's own mark");
}

/// A chat of `exchanges` rounds in `format`'s JSON, each round `round(i)` messages.
fn chat_json(exchanges: usize, round: impl Fn(usize) -> Vec<serde_json::Value>) -> Vec<serde_json::Value> {
    (0..exchanges).flat_map(round).collect()
}

#[test]
fn a_history_the_repair_pass_changes_is_replayed_not_compacted_every_turn() {
    use serde_json::json;
    let words = |who: &str, i: usize| format!("{who} {i}: {}", "the quick brown fox jumps ".repeat(12));
    // Anthropic: two user turns in a row, merged by the repair pass every turn
    let anthropic = chat_json(60, |i| {
        vec![
            json!({"role": "user", "content": words("question", i)}),
            json!({"role": "user", "content": words("and also", i)}),
            json!({"role": "assistant", "content": words("answer", i)}),
        ]
    });
    // OpenAI: a tool result whose call a framework trimmed away, dropped by the repair pass
    let mut openai = vec![
        json!({"role": "system", "content": "You are terse."}),
        json!({"role": "tool", "tool_call_id": "call_gone", "content": "orphan output"}),
    ];
    openai.extend(chat_json(60, |i| {
        vec![
            json!({"role": "user", "content": words("question", i)}),
            json!({"role": "assistant", "content": words("answer", i)}),
        ]
    }));
    for (format, model, messages) in
        [(Format::Anthropic, "claude-sonnet-4-5", anthropic), (Format::OpenAi, "gpt-4o", openai)]
    {
        let conversation =
            parse_str(&serde_json::Value::Array(messages).to_string(), FormatHint::Exactly(format)).unwrap();
        let session = Session::new(target(model, 2_500), Policy::cache(), Arc::new(MemoryStore::new()));
        // from the first user turn on (the orphan alone is a request of nothing)
        let ends: Vec<usize> = turn_ends(&conversation.messages).into_iter().filter(|&e| e > 2).collect();
        let (mut compactions, mut previous): (usize, Vec<String>) = (0, Vec::new());
        for &end in &ends {
            let turn = prefix(&conversation, end);
            let fitted = session.fit(&turn).unwrap_or_else(|e| panic!("{format:?} at {end}: {e}"));
            assert!(fitted.report.compressed_token_count <= 2_500);
            assert_eq!(validate(&fitted.messages, format), vec![], "{format:?} at {end}");
            // the newest words are sent, merged into the turn before or not
            let newest = turn.messages[end - 1].text_content();
            assert!(fitted.messages.last().unwrap().text_content().contains(&newest), "{format:?} at {end}");
            let sent = wire(&fitted.messages, format);
            if fitted.report.session.as_ref().unwrap().compacted {
                compactions += 1;
            } else if !previous.is_empty() {
                // the previous request stays, but for its last message (a user turn the newest
                // one was merged into)
                let stable = previous.len() - 1;
                assert_eq!(
                    sent[..stable],
                    previous[..stable],
                    "{format:?} at {end}: the request extends the previous one"
                );
            }
            previous = sent;
        }
        assert!(
            compactions * 5 <= ends.len(),
            "{format:?}: {compactions} compactions in {} turns",
            ends.len()
        );
    }
}

#[test]
fn what_a_compaction_removes_is_offloaded_and_named_in_its_trace() {
    use tightfit::offload;
    for (file, model) in [
        ("data/agent_mini_swe_deepseek.jsonl", "gpt-4o"),
        ("data2/agent_tau2_airline_claude45_thinking_anthropic.jsonl", "claude-sonnet-4-5"),
    ] {
        let conversation =
            conversations(file, 6).into_iter().max_by_key(|c| c.messages.len()).expect("conversations");
        let store = Arc::new(MemoryStore::new());
        let session = Session::new(target(model, 6_000), Policy::cache(), store.clone());
        let mut compactions = 0;
        for end in turn_ends(&conversation.messages) {
            let turn = prefix(&conversation, end);
            let fitted = session.fit(&turn).unwrap();
            if !fitted.report.session.as_ref().unwrap().compacted {
                continue;
            }
            compactions += 1;
            assert!(!fitted.report.offloaded.is_empty(), "{file} at {end}: the report lists the handles");
            // every input message is sent, or recallable as it came through a handle the
            // request names
            let sent: Vec<String> = wire(&fitted.messages, turn.format);
            let mut recallable = vec![false; end];
            for entry in &fitted.report.offloaded {
                assert!(
                    sent.iter().any(|m| m.contains(&entry.handle)),
                    "{file} at {end}: {} named",
                    entry.handle
                );
                for (index, message) in offload::recall(store.as_ref(), &entry.handle).unwrap().messages {
                    assert_eq!(message, turn.messages[index], "{file} at {end}: message {index} as it came");
                    recallable[index] = true;
                }
            }
            for entry in &fitted.plan.output {
                if let (Some(i), None) = (entry.input, &entry.message) {
                    recallable[i] = true;
                }
            }
            let lost: Vec<usize> = (0..end).filter(|&i| !recallable[i]).collect();
            // (or merged into the turn before it, for Anthropic: its content is sent there)
            let merged = |i: &usize| {
                let line = format!("messages[{i}]: dropped by ");
                fitted
                    .plan
                    .units
                    .iter()
                    .flat_map(|u| &u.details)
                    .any(|d| d.starts_with(&line) && d.contains(": merged into the "))
                    || fitted.plan.output.iter().any(|e| e.input == Some(*i))
            };
            assert!(lost.iter().all(merged), "{file} at {end}: {lost:?} neither sent nor recallable");
        }
        assert!(compactions >= 2, "{file}: {compactions} compactions");
    }
}

/// A summarizer that holds the session call it runs in until released (the session's lock is
/// held while a summarizer runs).
#[derive(Debug)]
struct HeldSummarizer {
    entered: std::sync::Mutex<std::sync::mpsc::Sender<()>>,
    release: std::sync::Mutex<std::sync::mpsc::Receiver<()>>,
}

impl tightfit::summary::Summarizer for HeldSummarizer {
    fn name(&self) -> &str {
        "held"
    }

    fn summarize(
        &self,
        _: &tightfit::summary::SummaryRequest<'_>,
    ) -> Result<String, tightfit::summary::SummaryError> {
        let _ = self.entered.lock().unwrap().send(());
        let _ = self.release.lock().unwrap().recv_timeout(std::time::Duration::from_secs(60));
        Ok("What happened before.".into())
    }
}

/// `answer_appended` is what an async server runs in place: it never waits for a session busy
/// with another call (a compaction, a summary), it answers `None` and the caller fits the
/// turn on its blocking pool; once the session is free the same turn is answered in place.
#[test]
fn answering_in_place_does_not_wait_for_a_busy_session() {
    let (entered_tx, entered) = std::sync::mpsc::channel();
    let (release, release_rx) = std::sync::mpsc::channel();
    let summarizer = HeldSummarizer {
        entered: std::sync::Mutex::new(entered_tx),
        release: std::sync::Mutex::new(release_rx),
    };
    let session = Arc::new(
        Session::new(target("gpt-4o", 4_000), Policy::cache(), Arc::new(MemoryStore::new()))
            .with_summarizer(Arc::new(summarizer)),
    );
    // a short chat under the mark: its next turn appends to the one the session holds
    let chats = conversations("data/chat_aider_sessions.jsonl", 40);
    let chat = chats.iter().find(|c| c.messages.len() >= 4).expect("a chat of four messages");
    let (turn, next) = (prefix(chat, 2), prefix(chat, 3));
    session.fit(&turn).unwrap();
    let key = Session::key_of(&next);
    let fingerprints: Vec<u128> = next.messages.iter().map(message_fingerprint).collect();
    // a long agent run compacts, and its summary holds the session
    let long = conversations("data/agent_mini_swe_deepseek.jsonl", 1).remove(0);
    let compacting = {
        let session = Arc::clone(&session);
        std::thread::spawn(move || session.fit(&long).map(|f| f.report.compressed_token_count))
    };
    entered.recv_timeout(std::time::Duration::from_secs(60)).expect("the compaction asks for its summary");
    assert!(
        session.answer_appended(&key, &next, &fingerprints).unwrap().is_none(),
        "a busy session is not waited for"
    );
    release.send(()).unwrap();
    assert!(compacting.join().unwrap().unwrap() <= 4_000);
    let answered = session.answer_appended(&key, &next, &fingerprints).unwrap().expect("answered in place");
    assert_eq!(answered.messages.len(), next.messages.len());
}

/// A store whose reads are always busy for callers that will not wait
/// ([`Store::try_load`]), as a file store is while a save holds its connection.
#[derive(Debug, Default)]
struct BusyStore(MemoryStore);

impl Store for BusyStore {
    fn load(&self, key: &str) -> Result<Option<Vec<u8>>, tightfit::session::StoreError> {
        self.0.load(key)
    }

    fn try_load(&self, _: &str) -> Option<Result<Option<Vec<u8>>, tightfit::session::StoreError>> {
        None
    }

    fn save(&self, key: &str, checkpoint: &[u8]) -> Result<(), tightfit::session::StoreError> {
        self.0.save(key, checkpoint)
    }

    fn remove(&self, key: &str) -> Result<bool, tightfit::session::StoreError> {
        self.0.remove(key)
    }

    fn describe(&self) -> String {
        "busy".into()
    }
}

/// On a shared store a turn is answered in place only while the checkpoint the session holds
/// is the latest, known without waiting: a compaction by another process (a replica) sends
/// its next turn to the whole fit, which takes the replica's decision; a store that is busy
/// does too.
#[test]
fn answering_in_place_on_a_shared_store_needs_the_latest_checkpoint_known_at_once() {
    let chats = conversations("data/chat_aider_sessions.jsonl", 40);
    let chat = chats.iter().find(|c| c.messages.len() >= 6).expect("a chat of six messages");
    let shared = Settings::default().with_shared_store(true);
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let replica = |store: &Arc<dyn Store>| {
        Session::new(target("gpt-4o", 4_000), Policy::cache(), Arc::clone(store))
            .with_settings(shared.clone())
            .unwrap()
    };
    let (one, other) = (replica(&store), replica(&store));
    let fingerprints = |c: &Conversation| c.messages.iter().map(message_fingerprint).collect::<Vec<u128>>();
    let in_place = |session: &Session, turn: &Conversation| {
        session.answer_appended("k", turn, &fingerprints(turn)).unwrap().map(|f| f.report)
    };
    let (t1, t2, t3) = (prefix(chat, 2), prefix(chat, 4), prefix(chat, 6));
    one.fit_keyed(Some("k"), &t1).unwrap();
    let answered = in_place(&one, &t2).expect("no checkpoint anywhere: answered in place");
    assert_eq!(answered, replica(&store).fit_keyed(Some("k"), &t2).unwrap().report);
    // the other replica compacts the conversation (a long history under the same key)
    let long = conversations("data/agent_mini_swe_deepseek.jsonl", 1).remove(0);
    assert!(other.fit_keyed(Some("k"), &long).unwrap().report.session.unwrap().compacted);
    assert!(in_place(&one, &t3).is_none(), "a newer checkpoint in the store is not answered in place");
    // a store that cannot answer at once is not waited for
    let busy: Arc<dyn Store> = Arc::new(BusyStore::default());
    let waiting = replica(&busy);
    waiting.fit_keyed(Some("k"), &t1).unwrap();
    assert!(in_place(&waiting, &t2).is_none());
    assert!(waiting.fit_keyed(Some("k"), &t2).is_ok());
}

/// On a store whose reads wait on the network, a caller that must not wait (the proxy's
/// async worker) reads the checkpoint's version and presence beforehand, with its own async
/// client, and hands them over: the turn is answered in place exactly when the decision held
/// is the one those reads show, with the answer of a replica that reads the store itself.
#[test]
fn answering_in_place_from_the_store_read_beforehand_needs_the_latest_checkpoint() {
    // reads never answer at once: only what the caller read lets a turn be answered in place
    let store = Arc::new(BusyStore::default());
    let shared: Arc<dyn Store> = store.clone();
    let replica = || {
        Session::new(target("gpt-4o", 4_000), Policy::cache(), Arc::clone(&shared))
            .with_settings(Settings::default().with_shared_store(true))
            .unwrap()
    };
    let peek = |key: &str| {
        let keys = store_keys(key);
        Peeked {
            key: key.to_string(),
            version: store.load(&keys.version).unwrap(),
            has_checkpoint: store.load(&keys.checkpoint).unwrap().is_some(),
        }
    };
    let fingerprints = |c: &Conversation| c.messages.iter().map(message_fingerprint).collect::<Vec<u128>>();
    let in_place = |session: &Session, turn: &Conversation, peeked: &Peeked| {
        session.answer_appended_peeked("k", turn, &fingerprints(turn), peeked).unwrap().map(|f| f.report)
    };
    let chats = conversations("data/chat_aider_sessions.jsonl", 40);
    let chat = chats.iter().find(|c| c.messages.len() >= 6).expect("a chat of six messages");
    let (one, other) = (replica(), replica());
    let (t1, t2, t3) = (prefix(chat, 2), prefix(chat, 4), prefix(chat, 6));
    one.fit_keyed(Some("k"), &t1).unwrap();
    assert!(one.answer_appended("k", &t2, &fingerprints(&t2)).unwrap().is_none(), "the store is busy");
    let answered = in_place(&one, &t2, &peek("k")).expect("no version, no checkpoint: the initial decision");
    assert_eq!(answered, replica().fit_keyed(Some("k"), &t2).unwrap().report);
    // reads made for another conversation say nothing of this one
    assert!(in_place(&one, &t3, &peek("another")).is_none());
    let mut stale = peek("k");
    stale.has_checkpoint = true;
    assert!(in_place(&one, &t3, &stale).is_none(), "a checkpoint without a version: the whole path");
    // the other replica compacts the conversation: what is read now shows it
    let long = conversations("data/agent_mini_swe_deepseek.jsonl", 1).remove(0);
    let before = prefix(&long, long.messages.len() - 2);
    assert!(other.fit_keyed(Some("k"), &before).unwrap().report.session.unwrap().compacted);
    assert!(in_place(&one, &t3, &peek("k")).is_none(), "a newer checkpoint is not answered in place");
    // the replica holding the latest checkpoint (and a turn fitted under it) answers its
    // next turn in place, as a replica reading the checkpoint from the store does
    let turn = prefix(&long, long.messages.len() - 1);
    assert!(!other.fit_keyed(Some("k"), &turn).unwrap().report.session.unwrap().compacted);
    let next = prefix(&long, long.messages.len());
    let mut newer = peek("k");
    newer.version = Some(b"0123456789abcdef".to_vec());
    assert!(in_place(&other, &next, &newer).is_none(), "a version that is not the held checkpoint's");
    let answered = in_place(&other, &next, &peek("k")).expect("the latest checkpoint is the one held");
    assert_eq!(answered, replica().fit_keyed(Some("k"), &next).unwrap().report);
}
