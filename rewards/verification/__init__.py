"""Checking answers within a time bound: finding the final answer, math-verify in supervised
worker processes, numeric and string checks, and the deadline a scoring call shares."""
