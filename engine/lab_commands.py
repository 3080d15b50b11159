"""The reward lab's commands (issue 23): ``rescore`` a recorded run, ``ab`` two or more specs.

``python -m engine rescore RUN_ID spec.yaml``: the run's stored samples, every logged step,
re-scored with the spec; a table of per-step means, the samples that disagree most, and as the
last line one JSON object (``samples``, ``steps``, ``max_abs_diff``, ...).

``python -m engine ab A.yaml B.yaml [C.yaml D.yaml] [--model M] [--samples N]``: the model
writes N completions (8 per prompt) of the built-in task's prompts once; every spec scores
them; a table of per-spec statistics and the samples that disagree most; the whole comparison
as JSON in ``--output``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from engine.fields import ConfigError

#: Completions each prompt gets in ``ab`` (a GRPO group).
AB_GROUP = 8


def load_spec(path: str):
    """A reward spec from a YAML/JSON file: a spec, or a run config's ``reward`` section."""
    from engine.fields import parse_yaml
    from rewards.errors import RewardSpecError
    from rewards.spec import RewardSpec

    data = parse_yaml(Path(path).read_text(encoding="utf-8", errors="replace"))
    if isinstance(data, dict) and "reward" in data and "components" not in data:
        data = data["reward"]
    try:
        return RewardSpec.from_dict(data)
    except RewardSpecError as exc:
        raise ConfigError(f"{path}: {exc.field}" if exc.field else path, str(exc)) from None


def cmd_rescore(args: argparse.Namespace, data_dir: Path) -> int:
    from engine.run.launcher import LaunchError
    from engine.tracking.rescore import RescoreError, rescore_run
    from storage.paths import db_path
    from storage.sqlite.db import Database

    spec = load_spec(args.spec)
    with Database(db_path(data_dir)) as db:
        try:  # the command line is the machine's operator: any run (no owner scope)
            result = rescore_run(db, args.run_id, spec)
        except RescoreError as exc:
            raise LaunchError(str(exc)) from None
    for name, why in result.skipped.items():
        print(f"not re-scored: {name} ({why})")
    print(f"{'step':>6} {'stored':>9} {'new':>9}")
    for step, a, b in zip(result.steps, result.stored_mean, result.new_mean, strict=True):
        print(f"{step:>6} {_num(a):>9} {_num(b):>9}")
    for row in result.top[:5]:
        print(
            f"step {row['step']} #{row['index']}: stored {_num(row['stored_total'])} -> new "
            f"{_num(row['new_total'])}: {row['completion'][:70]!r}"
        )
    print(json.dumps({"run_id": args.run_id, **result.to_dict()} | {"top": len(result.top)}))
    return 0


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.4f}"


def cmd_ab(args: argparse.Namespace, data_dir: Path) -> int:
    from rewards.lab.compare import MAX_SPECS, compare

    if not 2 <= len(args.specs) <= MAX_SPECS:
        raise ConfigError("specs", f"give 2 to {MAX_SPECS} spec files, got {len(args.specs)}")
    if not AB_GROUP <= args.samples <= 1024:
        raise ConfigError("--samples", f"must be {AB_GROUP} to 1024, got {args.samples}")
    specs = [(Path(p).stem, load_spec(p)) for p in args.specs]
    if len({label for label, _ in specs}) < len(specs):
        specs = [(f"{i}:{label}", s) for i, (label, s) in enumerate(specs)]
    batch = generate(args.model, args.samples, args.seed)
    result = compare(specs, batch)
    out = result.to_dict()
    print(f"{'spec':<24} {'mean total':>10} {'zero-std':>9}  paying probes")
    for s in out["specs"]:
        print(
            f"{s['label']:<24} {_num(s['mean_total']):>10} {s['zero_std_fraction']:>9.0%}  "
            + (", ".join(s["paying_probes"]) or "none")
        )
    for v in out["versus"]:
        print(
            f"{v['label']} vs {specs[0][0]}: {len(v['sign_flips'])} advantages flip sign, "
            f"best sample changes in {v['best_changes']} of {v['groups']} groups, mean "
            f"Spearman {_num(v['mean_spearman'])}, max |diff| {_num(v['max_abs_diff'])}"
        )
    for line in out["verdicts"]:
        print(line)
    Path(args.output).write_text(json.dumps(out, indent=1), encoding="utf-8")
    print(f"wrote {args.output}")
    return 0


def generate(model: str, samples: int, seed: int) -> Any:
    """``samples`` completions of the model, ``AB_GROUP`` per prompt of the built-in task."""
    from engine.data.datasets import DataSpec, load_rows
    from engine.generation.sampling import sample_completions
    from engine.models.loading import load_model_and_tokenizer
    from engine.models.specs import ModelSpec
    from rewards.completions.text import question_text
    from rewards.lab.batch import Generations

    prompts_n = max(1, samples // AB_GROUP)
    rows = load_rows(DataSpec(max_rows=prompts_n))[:prompts_n]
    loaded, tokenizer = load_model_and_tokenizer(ModelSpec(model))
    out = sample_completions(
        loaded, tokenizer, [r["prompt"] for r in rows], num_samples=AB_GROUP, seed=seed
    )
    return Generations(
        prompts=[question_text(rows[s.prompt_index]["prompt"]) for s in out],
        completions=[s.text for s in out],
        groups=[s.prompt_index for s in out],
        answers=[rows[s.prompt_index].get("answer") for s in out],
        completion_ids=[list(s.token_ids) for s in out],
        tokenize=lambda text: tokenizer(text, add_special_tokens=False)["input_ids"],
    )


def add_commands(add) -> None:
    """Register ``rescore`` and ``ab`` with the CLI's ``add(name, func, help)``."""
    p = add(
        "rescore",
        _with_data_dir(cmd_rescore),
        "Re-score a run's stored samples with a reward spec; last line: one JSON object.",
    )
    p.add_argument("run_id")
    p.add_argument("spec", help="reward spec YAML/JSON (or a run config with a reward section)")
    p = add(
        "ab",
        _with_data_dir(cmd_ab),
        "Compare 2-4 reward specs on the same fresh generations (a table and a JSON file).",
        scan=False,
    )
    p.add_argument("specs", nargs="+", help="reward spec files; the first is the baseline")
    p.add_argument("--model", default="default", help="model that writes the completions")
    p.add_argument("--samples", type=int, default=64, help=f"completions, {AB_GROUP} a prompt")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--output", default="ab.json", help="JSON file to write")


def _with_data_dir(fn):
    def command(args: argparse.Namespace) -> int:
        from storage.paths import resolve_data_dir

        return fn(args, resolve_data_dir(args.data_dir))

    return command
