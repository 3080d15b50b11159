"""Taking a run's model home: Hugging Face folders, merged weights, GGUF and Ollama.

``export_model`` (:mod:`engine.exports.run_export`) is the entry point the CLI
(``python -m engine export RUN_ID OUT --format ...``) and the Runs view share.
"""
