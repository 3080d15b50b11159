"""Guards for what a visitor hands in: the one JSON/YAML parser, RE2 patterns, Hugging Face
repo ids, and refused values described for error messages."""
