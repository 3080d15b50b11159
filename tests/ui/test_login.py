"""The login check: right pairs only, and a sliding-window lockout per user name."""

from __future__ import annotations

import pytest

from tests.ui.fresh_loop import run_in_fresh_loop
from ui.access.login import LoginGuard
from ui.shared.context import SettingsError


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def check(guard: LoginGuard, username: str, password: str) -> bool:
    return run_in_fresh_loop(guard.check(username, password))


def test_only_configured_pairs_match():
    guard = LoginGuard([("alice", "a1"), ("bob", "b2")], failure_delay_s=0)
    assert guard.matches("alice", "a1") and guard.matches("bob", "b2")
    assert not guard.matches("alice", "b2") and not guard.matches("alice", "a1 ")
    assert not guard.matches("carol", "a1") and not guard.matches("", "")
    assert not guard.matches("alice", "\ud800")  # unencodable text is just a wrong password


def test_a_user_name_is_locked_after_too_many_failures_until_the_window_passes():
    clock = Clock()
    guard = LoginGuard(
        [("alice", "a1")], max_failures=3, window_s=60, failure_delay_s=0, clock=clock
    )
    for i in range(3):
        assert not check(guard, "alice", f"guess{i}")
        clock.now += 1
    assert guard.locked("alice")
    assert not check(guard, "alice", "a1")  # the right password waits too
    assert check(guard, "bob", "x") is False and not guard.locked("bob")
    clock.now += 58  # the first failure is 60 s old: two remain in the window
    assert not guard.locked("alice")
    assert check(guard, "alice", "a1")


def test_login_settings_name_their_variable():
    with pytest.raises(SettingsError, match="STUDIO_LOGIN_MAX_FAILURES"):
        LoginGuard.from_env([("a", "b")], {"STUDIO_LOGIN_MAX_FAILURES": "0"})
    with pytest.raises(SettingsError, match="STUDIO_LOGIN_WINDOW_S"):
        LoginGuard.from_env([("a", "b")], {"STUDIO_LOGIN_WINDOW_S": "nan"})
    guard = LoginGuard.from_env([("a", "b")], {"STUDIO_LOGIN_WINDOW_S": "5"})
    assert (guard.max_failures, guard.window_s) == (5, 5.0)
