"""Planning a run before it starts: the memory it will take and the micro-batch that fits."""
