"""What a run's process reads and writes while it trains: its folder's names, checkpoints
published whole, its devices, the stop request, the compile cache, the heap, the fault hooks."""
