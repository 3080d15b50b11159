"""Reading what a trainer hands a reward function: a completion as plain text, the tool calls of a
rollout, and the language of many texts at once."""
