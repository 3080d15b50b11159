"""The error a tool raises to end one call: TRL's tool loop reports it to the model as
``{"error": message}`` and counts it in ``tools/failure_frequency``; the rollout goes on."""


class ToolError(ValueError):
    """A tool refused its arguments or could not answer; the message says why."""
