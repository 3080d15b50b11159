"""Sampling for a person waiting: the Preview's completions, the Playground's and ``/generate``'s
replies. The models these calls keep loaded, the choice between plain completions and tool
rollouts, the threads they may use and the bound on one call's time live here; ui/ renders."""
