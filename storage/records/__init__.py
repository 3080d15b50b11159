"""What a run's worker records and the UI reads back, one module per kind of row: metrics,
samples, log lines, notes (warnings, retries) and phases."""
