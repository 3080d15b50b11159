"""The built-in agent run: a config that trains the shipped agent model to use the calculator.

``python -m engine export-config run.yaml --task agent`` writes it, and the Design tab's
"calculator agent" preset goes with it. Everything is chosen for a CPU (issue 24's target: ten
minutes on a 2-core machine): the shipped agent model (``model: agent``, which calls the
calculator in about half its replies before RL), the agent task (multi-digit products a
0.7M-parameter model cannot compute in its head), the calculator (3 calls at most, 2 within the
reward's budget), the "calculator agent" reward (the final answer, well-formed calls, failed
calls, the budget), and room in ``max_completion_length`` for a call, its result and the answer
(one token per character: about 75 + 45 + 25). The learning rate is 2e-4: at 5e-4 a run called
in 97% of rollouts after 3 steps, then broke (malformed calls, wrong copies).
"""

from __future__ import annotations

from engine.config.run_config import RunConfig
from engine.models.specs import AGENT_MODEL_ALIAS
from rewards.spec import preset

AGENT_PRESET = "calculator agent"
AGENT_TASK = "calculator"

#: What the agent run changes of the default config, by dotted field path.
AGENT_SETTINGS: dict[str, object] = {
    "name": "calculator agent",
    "model.name_or_path": AGENT_MODEL_ALIAS,
    "data.task": AGENT_TASK,
    "tools.builtin": ["calculator"],
    "tools.max_tool_calls": 3,
    "generation.num_generations": 8,
    "generation.max_completion_length": 192,
    "training.learning_rate": 2e-4,
    "training.prompts_per_step": 4,
    "training.eval_steps": 8,
    "training.eval_samples": 100,
}


def agent_config() -> RunConfig:
    """The default config with :data:`AGENT_SETTINGS` and the "calculator agent" reward."""
    data = RunConfig().to_dict()
    for path, value in AGENT_SETTINGS.items():
        section, _, name = path.rpartition(".")
        (data[section] if section else data)[name] = value
    data["reward"] = preset(AGENT_PRESET).to_dict()
    return RunConfig.from_dict(data)
