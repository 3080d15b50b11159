from ui.shared.hints import preview_hints, run_hints, status_hint


def test_loss_near_zero_is_explained_for_group_methods_only():
    assert "normal in GRPO" in run_hints("grpo", {"loss/policy": 2e-5})[0]
    assert "normal in RLOO" in run_hints("rloo", {"loss/policy": -1e-4})[0]
    assert run_hints("ppo", {"loss/policy": 0.0}) == []
    assert run_hints("grpo", {"loss/policy": 0.3}) == []


def test_zero_std_groups_and_truncation_get_hints_with_their_numbers():
    found = run_hints("grpo", {"reward/zero_std_fraction": 0.62, "completions/clipped_ratio": 0.25})
    assert len(found) == 2
    assert found[0].startswith("62% of prompt groups")
    assert found[1].startswith("25% of completions hit the length limit")
    assert run_hints("grpo", {"reward/zero_std_fraction": 0.2}) == []


def test_preview_truncation_hint():
    assert preview_hints([True, False, False, False])[0].startswith("25% of these")
    assert preview_hints([False] * 20) == []
    assert preview_hints([]) == []


def test_every_status_has_a_sentence():
    for status in ("queued", "running", "completed", "stopped", "failed", "interrupted"):
        assert status_hint(status)
