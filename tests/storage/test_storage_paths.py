"""Data dir precedence: --data-dir > STUDIO_DATA_DIR > /data/studio (Spaces) > ./studio-data."""

from __future__ import annotations

import pytest

from storage.paths import db_path, persistence_note, resolve_data_dir, runs_dir


@pytest.fixture
def no_spaces(tmp_path):
    return tmp_path / "no-such-root"


def test_flag_beats_env_and_spaces(tmp_path):
    spaces = tmp_path / "data"
    spaces.mkdir()
    got = resolve_data_dir(
        str(tmp_path / "flag"),
        environ={"STUDIO_DATA_DIR": str(tmp_path / "env")},
        spaces_root=spaces,
    )
    assert got == tmp_path / "flag"
    assert got.is_dir()
    assert not (tmp_path / "env").exists()
    assert not (spaces / "studio").exists()


def test_env_beats_spaces(tmp_path):
    spaces = tmp_path / "data"
    spaces.mkdir()
    got = resolve_data_dir(
        None, environ={"STUDIO_DATA_DIR": str(tmp_path / "env")}, spaces_root=spaces
    )
    assert got == tmp_path / "env"
    assert got.is_dir()


def test_spaces_persistent_storage_when_data_exists(tmp_path):
    spaces = tmp_path / "data"
    spaces.mkdir()
    assert resolve_data_dir(None, environ={}, spaces_root=spaces) == spaces / "studio"
    assert (spaces / "studio").is_dir()


def test_default_is_studio_data_in_cwd(tmp_path, monkeypatch, no_spaces):
    monkeypatch.chdir(tmp_path)
    assert resolve_data_dir(None, environ={}, spaces_root=no_spaces) == tmp_path / "studio-data"
    assert (tmp_path / "studio-data").is_dir()


def test_blank_values_count_as_unset(tmp_path, monkeypatch, no_spaces):
    monkeypatch.chdir(tmp_path)
    got = resolve_data_dir("  ", environ={"STUDIO_DATA_DIR": ""}, spaces_root=no_spaces)
    assert got == tmp_path / "studio-data"


def test_real_environment_is_read(tmp_path, monkeypatch, no_spaces):
    monkeypatch.setenv("STUDIO_DATA_DIR", str(tmp_path / "from-env"))
    assert resolve_data_dir(spaces_root=no_spaces) == tmp_path / "from-env"


def test_relative_and_home_paths_become_absolute(tmp_path, monkeypatch, no_spaces):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert resolve_data_dir("rel/dir", environ={}, spaces_root=no_spaces) == tmp_path / "rel/dir"
    assert resolve_data_dir("~/d", environ={}, spaces_root=no_spaces) == tmp_path / "home/d"


def test_a_file_in_the_way_is_an_error_naming_the_source(tmp_path, no_spaces):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ValueError, match=r"STUDIO_DATA_DIR.*not a directory"):
        resolve_data_dir(None, environ={"STUDIO_DATA_DIR": str(blocker)}, spaces_root=no_spaces)
    with pytest.raises(ValueError, match="--data-dir"):
        resolve_data_dir(str(blocker / "sub"), environ={}, spaces_root=no_spaces)


def test_unusable_spaces_root_falls_back_to_default(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spaces = tmp_path / "data"
    spaces.mkdir()
    (spaces / "studio").write_text("not a dir")
    assert resolve_data_dir(None, environ={}, spaces_root=spaces) == tmp_path / "studio-data"


def test_db_and_runs_paths(tmp_path):
    assert db_path(tmp_path) == tmp_path / "studio.db"
    assert runs_dir(tmp_path) == tmp_path / "runs"
    assert (tmp_path / "runs").is_dir()


def test_the_persistence_note_warns_only_on_a_space_without_persistent_storage(tmp_path):
    spaces_root = tmp_path / "data"
    (spaces_root / "studio").mkdir(parents=True)
    local = tmp_path / "studio-data"
    assert persistence_note(local, environ={}, spaces_root=spaces_root) == (
        f"Runs are saved in {local}."
    )
    on_space = {"SPACE_ID": "alice/reward-studio"}
    kept = persistence_note(spaces_root / "studio", environ=on_space, spaces_root=spaces_root)
    assert kept.endswith("on this Space's persistent storage.")
    lost = persistence_note(local, environ=on_space, spaces_root=spaces_root)
    assert "loses when it restarts" in lost and "turn on persistent storage" in lost
