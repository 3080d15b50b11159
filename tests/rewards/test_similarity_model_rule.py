"""The similarity component's embedding model passes the web app's model rule (as reward and
judge models do) before the server looks at the folder: a visitor cannot make the app load,
or learn about, a server folder outside the operator's model roots."""

from __future__ import annotations

import importlib

import pytest

from rewards.components.reward_model import restrict_models
from rewards.errors import RewardSpecError
from rewards.spec import RewardSpec
from ui.shared.context import AppContext


@pytest.fixture
def web_rule(data_dir, tmp_path, monkeypatch):
    """The rule app.py installs, and an importable sentence-transformers package (an empty
    stand-in: the component's own check only asks whether it is installed)."""
    package = tmp_path / "site" / "sentence_transformers"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    importlib.invalidate_caches()
    ctx = AppContext(data_dir)
    restrict_models(ctx.check_reward_model)
    yield
    restrict_models(None)
    ctx.close()


def embedding_spec(folder: str) -> RewardSpec:
    params = {"metric": "embedding", "embedding_model": folder}
    return RewardSpec.from_dict({"components": [{"name": "similarity", "params": params}]})


def test_an_embedding_folder_outside_the_model_roots_is_refused_alike(web_rule, tmp_path):
    private = tmp_path / "operator-private-model"
    private.mkdir()
    (private / "config.json").write_text("{}")
    errors = []
    for folder in (private, tmp_path / "no-such-folder"):
        with pytest.raises(RewardSpecError) as err:
            embedding_spec(str(folder))
        assert err.value.field == "components[0].params.embedding_model"
        errors.append(str(err.value).replace(str(folder), "<folder>"))
    assert errors[0] == errors[1]  # an existing folder reads like a missing one
    assert "other server paths are not loadable from the web" in errors[0]
