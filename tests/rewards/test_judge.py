"""The judge: real judge answer formats, and the HTTP path against a real local server."""

import contextlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rewards.completions.text import prompt_text
from rewards.components.judge_http import JUDGE_URLS_ENV
from rewards.components.judge_parse import parse_pass_fail, parse_score
from rewards.composer import score
from rewards.spec import RewardSpec, RewardSpecError
from rewards.verification.deadline import call_deadline

# Answers in the shapes real judges write (MT-Bench, Prometheus, JSON-mode, chatty models).
SCORES = [
    ("Rating: [[7]]", 0.7),
    ("Score: 8/10\nReason: accurate but wordy.", 0.8),
    ("**Score:** 8\n**Reason:** concise and accurate.", 0.8),
    ("I would rate this response 7 out of 10 because it misses a detail.", 0.7),
    ("7", 0.7),
    ('{"score": 9, "reason": "covers all the key points"}', 0.9),
    ('```json\n{"rating": "6", "explanation": "too long"}\n```', 0.6),
    ("On a scale of 1 to 10, where 10 is best, I give it 6/10.\nReason: too long.", 0.6),
    ("Feedback: The summary is faithful and short. [RESULT] 4", 0.4),
    ("Score: 8.5", 0.85),
    ("The response is excellent.\n\nScore: 10", 1.0),
]
UNREADABLE_SCORES = ["Score: 11", "I cannot judge this response.", "", "Score: 0"]
VERDICTS = [
    ("PASS", 1.0),
    ("Verdict: FAIL\nReason: wrong number", 0.0),
    ('{"verdict": "pass", "reason": "ok"}', 1.0),
    ("Yes, the answer is correct.", 1.0),
    ("The answer is incorrect: it says 5.", 0.0),
    ("**Decision:** Passed. The summary keeps every fact.", 1.0),
]


@pytest.mark.parametrize("answer, value", SCORES)
def test_scores_in_real_judge_formats(answer, value):
    verdict = parse_score(answer)
    assert verdict.score == pytest.approx(value)
    assert verdict.reason and "\n" not in verdict.reason


@pytest.mark.parametrize("answer", UNREADABLE_SCORES)
def test_unreadable_scores_are_none_with_a_reason(answer):
    verdict = parse_score(answer)
    assert verdict.score is None and "no 1-10 score" in verdict.reason


@pytest.mark.parametrize("answer, value", VERDICTS)
def test_pass_fail_in_real_judge_formats(answer, value):
    assert parse_pass_fail(answer).score == value


def test_reasons_are_one_line():
    assert parse_score("Score: 8\nReason: accurate but wordy.").reason == "accurate but wordy."
    assert parse_score('{"score": 9, "reason": "covers\\nall"}').reason == "covers all"


class JudgeServer:
    """A real OpenAI-compatible endpoint on localhost; its answers follow the completion."""

    def __init__(self):
        self.requests = []
        self.fail_first = 0
        self.sleep_s = 0.0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append((self.path, self.headers.get("Authorization"), body))
                if server.fail_first > 0:
                    server.fail_first -= 1
                    self.send_response(503)
                    self.end_headers()
                    return
                time.sleep(server.sleep_s)
                response = body["messages"][1]["content"].split("[Response]\n", 1)[1]
                answer = "Score: 9\nReason: says thanks." if "thanks" in response else "2"
                data = {"choices": [{"message": {"role": "assistant", "content": answer}}]}
                payload = json.dumps(data).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError):  # the client gave up (timeout test)
                    self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server(monkeypatch):
    s = JudgeServer()
    monkeypatch.setenv(JUDGE_URLS_ENV, s.url)
    monkeypatch.setenv("STUDIO_JUDGE_KEYS", "MY_JUDGE_KEY")
    monkeypatch.setenv("MY_JUDGE_KEY", "sk-test-secret")
    yield s
    s.close()


def judge_spec(url, **params):
    base = {"model": "judge-1", "url": url, "api_key_env": "MY_JUDGE_KEY", "timeout_s": 1.0}
    component = {"name": "judge", "params": {**base, **params}}
    return RewardSpec.from_dict({"components": [component]})


def test_http_judge_scores_caches_and_sends_the_key_from_the_environment(server):
    spec = judge_spec(server.url)
    fn = spec.build()[0][0]
    prompts = ["Say hi", "Say hi", "Say hi"]
    texts = ["hi, thanks!", "hi", "hi, thanks!"]  # the third repeats the first
    first = score(spec, prompts, texts)
    assert [s.total for s in first] == [0.9, 0.2, 0.9]
    assert first[0].trace[0].explanation == "judge: says thanks."
    assert len(server.requests) == 2  # identical pairs judged once
    path, auth, body = server.requests[0]
    assert path == "/v1/chat/completions" and auth == "Bearer sk-test-secret"
    assert body["model"] == "judge-1" and "Rubric:" in body["messages"][0]["content"]
    assert "sk-test-secret" not in spec.to_json()
    assert fn(texts, prompts=prompts) == [0.9, 0.2, 0.9]  # a fresh component asks again
    assert fn(texts, prompts=prompts) == [0.9, 0.2, 0.9]  # then answers from its cache
    assert len(server.requests) == 4


def test_the_judge_reads_a_chat_prompt_as_stored_samples_do(server):
    """Typed content parts read as their text, each message with its role
    (rewards.completions.text)."""
    chat = [
        {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
        {"role": "user", "content": "Say hi"},
    ]
    score(judge_spec(server.url), [chat], ["hi, thanks!"])
    user = server.requests[0][2]["messages"][1]["content"]
    assert user.startswith(f"[Prompt]\n{prompt_text(chat)}\n\n[Response]")
    assert prompt_text(chat) == "system: Be brief.\nuser: Say hi"


def test_http_judge_retries_server_errors(server):
    server.fail_first = 2
    got = score(judge_spec(server.url, retries=2), ["p"], ["ok thanks"])
    assert got[0].total == 0.9 and len(server.requests) == 3


def test_a_failed_judgement_is_none_not_zero(server):
    server.fail_first = 10
    got = score(judge_spec(server.url, retries=1), ["p"], ["ok thanks"])
    assert got[0].total is None
    assert "failed after 2 tries: HTTP 503" in got[0].trace[0].explanation
    assert "sk-test-secret" not in got[0].trace[0].explanation


def test_a_slow_judge_times_out_to_none(server):
    server.sleep_s = 3.0
    got = score(judge_spec(server.url, retries=0, timeout_s=1.0), ["p"], ["ok thanks"])
    assert got[0].total is None and "timed out" in got[0].trace[0].explanation


def test_pass_fail_scale_over_http(server):
    got = score(judge_spec(server.url, scale="pass_fail"), ["p", "p"], ["thanks", "no"])
    # "Score: 9 / Reason: says thanks." has no pass/fail word: unreadable, so not scored
    assert [s.total for s in got] == [None, None]


def test_urls_outside_the_operators_list_are_refused(monkeypatch):
    monkeypatch.setenv(JUDGE_URLS_ENV, "https://judge.example/v1")
    for url in ("http://169.254.169.254/latest", "file:///etc/passwd", "https://judge.exampl"):
        with pytest.raises(RewardSpecError) as err:
            judge_spec(url)
        assert err.value.field == "components[0].params.url"
    monkeypatch.delenv(JUDGE_URLS_ENV)
    with pytest.raises(RewardSpecError, match=JUDGE_URLS_ENV):
        judge_spec("https://judge.example/v1")


def test_a_local_judge_runs_through_transformers(tmp_path):
    from engine.models.char_tokenizer import build_char_tokenizer
    from tests.tiny_models import save_tiny_llama

    folder = save_tiny_llama(tmp_path / "judge", build_char_tokenizer())
    component = {
        "name": "judge",
        "params": {"backend": "local", "model": str(folder), "max_new_tokens": 8},
    }
    spec = RewardSpec.from_dict({"components": [component]})
    got = score(spec, ["Say hi", "Say hi"], ["hi", "hello"])
    # a random tiny model writes 8 random characters: never a readable score, so not scored
    for sample in got:
        assert sample.total is None
        assert sample.trace[0].explanation.startswith("judge: no 1-10 score in the judge's answer")


def test_urls_must_lie_under_a_listed_prefix_parsed_not_as_text(monkeypatch):
    # A bare origin as the operator wrote it: text prefixes would admit other hosts and ports.
    monkeypatch.setenv(JUDGE_URLS_ENV, "https://judge.example,http://127.0.0.1:80")
    for url in (
        "https://judge.example.evil.net/v1",
        "https://judge.example@evil.net/v1",
        "http://127.0.0.1:8000/v1",
        "https://judge.example/v1/../../admin",
        "https://judge.example\\@evil.net/v1",
    ):
        with pytest.raises(RewardSpecError) as err:
            judge_spec(url)
        assert err.value.field == "components[0].params.url", url
    monkeypatch.setenv("STUDIO_JUDGE_KEYS", "MY_JUDGE_KEY")
    for url in ("https://judge.example", "https://judge.example/v1", "http://127.0.0.1:80/v1"):
        judge_spec(url)


def test_the_key_variable_must_be_one_the_operator_allows(monkeypatch):
    monkeypatch.setenv(JUDGE_URLS_ENV, "https://judge.example/v1")
    monkeypatch.setenv("HF_TOKEN", "hf_server_secret")
    with pytest.raises(RewardSpecError) as err:
        judge_spec("https://judge.example/v1", api_key_env="HF_TOKEN")
    assert err.value.field == "components[0].params.api_key_env"
    assert "hf_server_secret" not in str(err.value) and "OPENAI_API_KEY" in str(err.value)
    judge_spec("https://judge.example/v1", api_key_env="OPENAI_API_KEY")


def test_a_redirect_is_not_followed_with_the_key(server):
    target = JudgeServer()
    try:

        def redirect(self):
            self.send_response(302)
            self.send_header("Location", target.url + "/chat/completions")
            self.end_headers()

        server.httpd.RequestHandlerClass.do_POST = redirect
        got = score(judge_spec(server.url, retries=0), ["p"], ["ok thanks"])
        assert got[0].total is None and "HTTP 302" in got[0].trace[0].explanation
        assert target.requests == []
    finally:
        target.close()


def test_a_web_call_s_time_budget_bounds_timeouts_and_retries(server):
    server.sleep_s = 3.0  # answers, but only after the budget of the call below
    with call_deadline(1.0):
        got = score(judge_spec(server.url, retries=5, timeout_s=60.0), ["p"], ["ok thanks"])
    assert got[0].total is None
    assert "failed after 1 tries: timed out; this call's time budget ran out" in (
        got[0].trace[0].explanation
    )
    assert len(server.requests) == 1


def test_a_local_judge_keeps_within_the_web_call_s_time_budget(tmp_path):
    from engine.models.char_tokenizer import build_char_tokenizer
    from tests.tiny_models import save_tiny_llama

    folder = save_tiny_llama(tmp_path / "judge", build_char_tokenizer())
    params = {"backend": "local", "model": str(folder), "max_new_tokens": 200}
    spec = RewardSpec.from_dict({"components": [{"name": "judge", "params": params}]})
    with call_deadline(0.0):  # spent before the judge starts: it does not generate at all
        got = score(spec, ["Say hi"], ["hi"])
    assert got[0].total is None
    assert "this call's time budget ran out" in got[0].trace[0].explanation
    with call_deadline(5.0):  # generate's max_time is the budget left; it still judges
        got = score(spec, ["Say hi"], ["hi"])
    assert got[0].trace[0].explanation.startswith("judge: no 1-10 score in the judge's answer")


def test_a_local_judge_batches_by_tokens_and_skips_what_the_model_cannot_read(
    tmp_path, monkeypatch
):
    from engine.models.char_tokenizer import build_char_tokenizer
    from rewards.components import judge
    from tests.tiny_models import save_tiny_llama

    folder = save_tiny_llama(tmp_path / "judge", build_char_tokenizer())  # reads 512 positions
    monkeypatch.setattr(judge, "MAX_BATCH_TOKENS", 600)  # two short pairs a batch
    model, _ = judge.load_judge_model(str(folder), "cpu")
    prefills = []
    hook = model.register_forward_pre_hook(
        lambda _m, _a, kw: prefills.append(kw["input_ids"].shape), with_kwargs=True
    )
    params = {"backend": "local", "model": str(folder), "max_new_tokens": 8}
    spec = RewardSpec.from_dict({"components": [{"name": "judge", "params": params}]})
    try:
        got = score(spec, ["p"] * 4, ["a", "bb", "x" * 600, "ccc"])
    finally:
        hook.remove()
    too_long = got[2].trace[0].explanation
    assert "not judged, " in too_long and "the judge model reads 504 before its answer" in too_long
    assert all("no 1-10 score" in got[i].trace[0].explanation for i in (0, 1, 3))
    batches = [rows for rows, length in prefills if length > 1]  # decode steps read one token
    assert batches == [2, 1] and all(rows * length <= 600 for rows, length in prefills)
