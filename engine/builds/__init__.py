"""The scripts that build the two shipped models in engine/models/ (default_model/,
agent_model/): their training, their evaluation and their model cards."""
