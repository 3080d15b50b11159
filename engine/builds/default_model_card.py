"""The shipped default model's evaluation and model card, written at the end of its build
(:mod:`engine.builds.build_default_model`): held-out accuracy and format by difficulty and by
phrasing family, pass@k, and the README that reports them."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from engine.generation.settings import SamplingSettings
from engine.tasks import ArithmeticTask
from engine.tasks.arithmetic import LEVEL_NAMES
from engine.tasks.phrasings import FAMILY_NAMES, HELD_OUT_FAMILY_NAMES

if TYPE_CHECKING:
    from engine.builds.build_default_model import BuildConfig


def _rates_row(label: str, r: dict[str, Any]) -> str:
    return (
        f"| {label} | {r['n']} | {r['accuracy']:.1%} | {r['strict_accuracy']:.1%} | "
        f"{r['format_rate']:.1%} |"
    )


def model_card(cfg: BuildConfig, stats: dict[str, Any], evals: dict[str, Any]) -> str:
    """The README.md written next to the weights (``evals`` from :func:`evaluate_model`)."""
    report = evals.get("builtin")
    mix = ", ".join(f"{k} {v:.0%}" for k, v in cfg.style_mix.items())
    command = (
        f"python -m engine.builds.build_default_model --seed {cfg.seed} --steps {stats['steps']}"
    )
    if cfg.batch_size != type(cfg).batch_size:
        command += f" --batch-size {cfg.batch_size}"
    if cfg.threads != type(cfg).threads:
        command += f" --threads {cfg.threads}"
    load = stats.get("load_average")
    lines = [
        "# Reward Studio default model",
        "",
        "A tiny character-level chat model trained from scratch on Reward Studio's built-in",
        "arithmetic word problems (`engine.tasks`), shipped so the app works offline at once.",
        "",
        "It reads addition and subtraction asked in many ways: the built-in word-problem",
        "templates, bare expressions (`What is 17 + 25?`, `Compute 17+25.`, `17 plus 25 equals",
        "what?`), instructions that name the operation with the numbers in another order",
        "(`Subtract 25 from 42.`), stories told in another order, with other verbs or with",
        "units, in the second person or in shorthand, with changed case, spacing, punctuation",
        "or a `Q:` prefix, with or without the system message (`engine.tasks.phrasings`).",
        "Some phrasing families are never used in training; the evaluation below reports how",
        "it reads them.",
        "",
        "Its quality is set on purpose to leave reinforcement learning room to work. It writes",
        "the column method inside `<think>` (`52-38: 12-8=4, borrow 1; 5-1-3=1; so 14`) but",
        "makes digit and copying slips, and about a quarter of its replies miss the strict",
        "`<think>…</think><answer>…</answer>` format: its training targets mixed in loose habits",
        "(an answer after the think without tags, `The answer is 14.`, a missing closing tag,",
        "no working at all) so a format reward has something to teach, and training stopped",
        "well before the procedure was mastered so a correctness reward has something to",
        "sharpen. Answers given without working are rarely right on held-out problems.",
        "",
        "## Build",
        "",
        "```",
        command,
        "```",
        "",
        "Deterministic for a seed and thread count on a given machine; the held-out split",
        "(problems never seen in training) is fixed by the same seed.",
        "",
        f"- architecture: Llama, hidden {cfg.hidden_size}, {cfg.num_layers} layers, "
        f"{cfg.num_heads} heads, MLP {cfg.intermediate_size}, tied embeddings, "
        f"{stats.get('parameters', 0):,} parameters, context {cfg.max_positions} tokens",
        f"- tokenizer: one token per printable ASCII character and newline plus the chat role "
        f"tokens ({stats.get('vocab_size')} in all); `<think>`/`<answer>` are plain text",
        "- chat layout: `<|system|>…<|end|><|user|>…<|end|><|assistant|>…<|end|>`",
        f"- training: {stats['steps']} AdamW steps of {cfg.batch_size} problems "
        f"({stats['sequences_seen']:,} in all, levels 1-4 in equal shares), lr {cfg.lr} "
        f"(warmup {cfg.warmup_steps} steps, cosine to {cfg.min_lr_ratio:.0%}), weight decay "
        f"{cfg.weight_decay}, loss on the reply only, seed {cfg.seed}, final loss "
        f"{stats['final_loss']}",
        f"- reply styles in the training targets: {mix}",
        f"- prompts in the training stream: built-in templates {cfg.builtin_share:.0%}, the "
        f"other trained phrasing families ({', '.join(FAMILY_NAMES[1:])}) evenly for the rest; "
        f"a surface change on {cfg.noise_share:.0%}, no system message on "
        f"{cfg.no_system_share:.0%}",
        f"- build time: {stats['train_seconds'] / 60:.1f} min training, "
        f"{stats['total_seconds'] / 60:.1f} min in all (with the evaluation below), on "
        f"{stats['machine']}"
        + (
            f"; mean 1-minute load average during the build {load:.1f} on "
            f"{stats.get('cpu_count')} cores (other jobs shared the machine)"
            if load is not None
            else ""
        )
        + (
            f"; {stats['cpu_seconds'] / 60:.1f} min of CPU time" if stats.get("cpu_seconds") else ""
        ),
        f"- size on disk: {stats.get('disk_mb', 0):.1f} MB",
    ]
    if report:
        lines += [
            "",
            "## Held-out evaluation: built-in templates",
            "",
            f"{report['n']} held-out prompts (`builtin_task({cfg.seed}).eval_rows("
            f"{report['n']})`: levels in turn, problems never seen in training), one sample "
            f"each at temperature {report['temperature']}, top_p 1.0, at most "
            f"{report['max_new_tokens']} new tokens, sampling seed {report['seed']}:",
            "",
            "| level | n | accuracy | strict accuracy | strict format |",
            "|---|---|---|---|---|",
            _rates_row("all", report),
        ]
        for level, r in sorted(report["by_difficulty"].items(), key=lambda kv: int(kv[0])):
            lines.append(_rates_row(f"{level}: {LEVEL_NAMES.get(int(level), '')}", r))
        lines += [
            "",
            "Accuracy: the `correctness` reward (final answer equals the gold). Strict format:",
            "the strict `format` reward (the whole reply is `<think>…</think><answer>…</answer>`).",
            "Strict accuracy: both. Scores come from the reward library itself",
            f"(`engine.tracking.evaluation`). Replies cut at the token limit: "
            f"{report.get('truncated_rate', 0):.1%}.",
        ]
        lines += _unseen_section(cfg, evals) + _pass_at_k_section(evals)
    lines += [
        "",
        "## Use",
        "",
        "```python",
        "from engine.models.loading import ModelSpec, load_model_and_tokenizer",
        "model, tokenizer = load_model_and_tokenizer(ModelSpec())",
        "```",
        "",
        'or `AutoModelForCausalLM.from_pretrained("engine/models/default_model")` and',
        "`AutoTokenizer.from_pretrained(...)`. Replies need up to about 90 new tokens. The model",
        "knows nothing but this task; for real text, load a pretrained model.",
        "",
    ]
    return "\n".join(lines)


def evaluate_model(model: Any, tokenizer: Any, cfg: BuildConfig) -> dict[str, Any]:
    """The model card's evaluations, all sampled at ``cfg.eval_temperature`` with seed
    ``cfg.seed``: one sample per held-out prompt in the built-in templates (``builtin``) and in
    the held-out phrasing families (``unseen_phrasings``), and ``cfg.eval_pass_k`` samples per
    prompt on the first ``cfg.eval_pass_rows`` of each (``*_pass_at_k``), the room a
    reinforcement learner has above one sample's accuracy."""
    from engine.tracking.evaluation import evaluate

    task = ArithmeticTask(seed=cfg.seed)
    settings = SamplingSettings(
        temperature=cfg.eval_temperature,
        max_new_tokens=cfg.eval_max_new_tokens,
        num_samples=1,
        seed=cfg.seed,
    )
    sets = {
        "builtin": task.eval_rows(cfg.eval_rows),
        "unseen_phrasings": task.unseen_phrasing_rows(cfg.eval_rows),
    }
    out: dict[str, Any] = {}
    for name, rows in sets.items():
        report = evaluate(model, tokenizer, rows, settings)
        out[name] = report.to_dict()
        if name == "unseen_phrasings":
            out[name]["by_family"] = family_rates(rows, report.samples)
        if cfg.eval_pass_rows > 0 and cfg.eval_pass_k > 1:
            pass_k = replace(settings, num_samples=cfg.eval_pass_k)
            multi = evaluate(model, tokenizer, rows[: cfg.eval_pass_rows], pass_k)
            out[f"{name}_pass_at_k"] = multi.to_dict()
    return out


def family_rates(rows: list[dict[str, Any]], samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Accuracy and strict-format rate per phrasing family of evaluated rows."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for s in samples:
        groups.setdefault(rows[s["prompt_index"]]["family"], []).append(s)
    return {
        family: {
            "n": len(group),
            "accuracy": sum(bool(s["correct"]) for s in group) / len(group),
            "format_rate": sum(s["strict"] for s in group) / len(group),
        }
        for family, group in groups.items()
    }


def _unseen_section(cfg: BuildConfig, evals: dict[str, Any]) -> list[str]:
    unseen = evals.get("unseen_phrasings")
    if not unseen:
        return []
    lines = [
        "",
        "## Held-out evaluation: phrasings never trained on",
        "",
        f"The same held-out problems asked in phrasing families the training stream never uses "
        f"(`builtin_task({cfg.seed}).unseen_phrasing_rows({unseen['n']})`: "
        f"{', '.join(HELD_OUT_FAMILY_NAMES)}; a surface change on a quarter of them), same "
        "sampling:",
        "",
        "| rows | n | accuracy | strict accuracy | strict format |",
        "|---|---|---|---|---|",
        _rates_row("all", unseen),
    ]
    for level, r in sorted(unseen["by_difficulty"].items(), key=lambda kv: int(kv[0])):
        lines.append(_rates_row(f"level {level}", r))
    lines += ["", "| family | n | accuracy | strict format |", "|---|---|---|---|"]
    for family, r in unseen.get("by_family", {}).items():
        lines.append(f"| {family} | {r['n']} | {r['accuracy']:.1%} | {r['format_rate']:.1%} |")
    return lines


def _pass_at_k_section(evals: dict[str, Any]) -> list[str]:
    rows = [(name, evals.get(f"{key}_pass_at_k"), evals.get(key))
            for name, key in (("built-in templates", "builtin"),
                              ("unseen phrasings", "unseen_phrasings"))]  # fmt: skip
    rows = [(name, multi, single) for name, multi, single in rows if multi]
    if not rows:
        return []
    k = rows[0][1]["num_samples"]
    lines = [
        "",
        "## Room for reinforcement learning",
        "",
        f"pass@{k}: the share of prompts with at least one right answer among {k} samples (the "
        f"first {rows[0][1]['n'] // k} prompts of each set above, same sampling), next to one "
        "sample's accuracy. A reward can only sharpen what the model sometimes gets right.",
        "",
        f"| prompts | accuracy (1 sample) | mean accuracy ({k} samples) | pass@{k} |",
        "|---|---|---|---|",
    ]
    for name, multi, single in rows:
        lines.append(
            f"| {name} | {single['accuracy']:.1%} | {multi['accuracy']:.1%} | "
            f"{multi['pass_at_k']:.1%} |"
        )
    return lines
