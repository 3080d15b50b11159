"""requirements.txt names exactly the distributions the product's code imports.

Imports are read with ``ast`` from app.py and the packages (module level and inside functions);
optional packages probed with ``importlib.util.find_spec`` are not imports and need no line.
"""

from __future__ import annotations

import re
from importlib.metadata import version

from tests.source_imports import PACKAGES, ROOT, third_party_imports

# Import names that differ from their distribution's name (after PEP 503 normalisation).
DISTRIBUTION_OF = {"yaml": "pyyaml", "re2": "google-re2"}
# Distributions whose private parts we read: an upgrade may change them, so they are pinned.
PRIVATE_PARTS_READ = {
    "py3langid": "rewards/completions/langid_batch.py",
    "trackio": "engine/tracking/trackers.py",
}
# Imported only when present, for a feature that says how to install it when it is not, or
# that another path serves without it.
OPTIONAL = {
    "sentence-transformers": "the similarity reward's embedding metric",
    "triton": "the decode-attention kernel; CUDA builds of torch ship it, elsewhere torch ops",
}


def normalise(name: str) -> str:
    """PEP 503: case-insensitive, runs of ``-``, ``_`` and ``.`` are one ``-``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def declared() -> dict[str, str]:
    """Distribution name -> its requirement line."""
    lines = (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()
    requirements = [line.split("#")[0].strip() for line in lines]
    return {
        normalise(re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", line).group(0)): line
        for line in requirements
        if line
    }


def imported() -> dict[str, set[str]]:
    """Distribution name -> the product files that import it."""
    paths = [ROOT / "app.py"] + [p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))]
    found: dict[str, set[str]] = {}
    for name, files in third_party_imports(paths).items():
        found.setdefault(normalise(DISTRIBUTION_OF.get(name, name)), set()).update(files)
    return found


def test_every_imported_distribution_is_declared():
    missing = {
        dist: sorted(files)[:3]
        for dist, files in imported().items()
        if dist not in declared() and dist not in OPTIONAL
    }
    assert missing == {}, f"imported but not in requirements.txt: {missing}"


def test_every_declared_distribution_is_imported():
    unused = sorted(set(declared()) - set(imported()))
    assert unused == [], f"in requirements.txt but imported nowhere: {unused}"


def test_distributions_whose_private_parts_are_read_are_pinned_to_the_installed_version():
    lines = declared()
    for dist, reader in PRIVATE_PARTS_READ.items():
        assert (ROOT / reader).is_file() and dist.replace("-", "_") in (ROOT / reader).read_text()
        assert lines[dist] == f"{dist}=={version(dist)}", f"{dist} (read by {reader})"


def test_the_requirement_parser_reads_extras_pins_and_comments():
    assert normalise("Math_Verify") == "math-verify" and normalise("google.re2") == "google-re2"
    assert {"gradio", "math-verify", "pyyaml", "torch"} <= set(declared())
    assert declared()["gradio"].startswith("gradio[oauth]==")
