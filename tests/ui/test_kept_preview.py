"""The last preview kept for a reload: a token opens its cache for its owner only, while it is
still kept (the store is bounded)."""

from ui.memory.kept_preview import KeptPreviews
from ui.preview.cache import PreviewCache


def cache(text: str) -> PreviewCache:
    return PreviewCache(
        prompts=["q"],
        completions=[text],
        answers=[None],
        completion_ids=[[1]],
        truncated=[False],
        groups=[0],
        source="test",
    )


def test_a_token_opens_its_cache_for_its_owner_only():
    kept = KeptPreviews()
    token = kept.put("alice", cache("a"))
    assert kept.get("alice", token).completions == ["a"]
    assert kept.get("bob", token) is None  # a token seen by another visitor opens nothing
    for junk in (None, 3, "", "x" * 10_000, ["t"], token + "x"):
        assert kept.get("alice", junk) is None


def test_one_preview_per_visitor_and_the_oldest_visitors_go_first_past_the_bound():
    kept = KeptPreviews(most=2)
    first = kept.put("alice", cache("1"))
    newer = kept.put("alice", cache("2"))
    assert kept.get("alice", first) is None  # a visitor's last preview only
    bobs = kept.put("bob", cache("b"))
    assert kept.get("alice", newer) is not None  # used: now the newest
    kept.put("carol", cache("c"))
    assert kept.get("bob", bobs) is None  # the least recently used went
    assert kept.get("alice", newer).completions == ["2"]
