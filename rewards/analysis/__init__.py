"""What a batch of scores says beyond its totals: group statistics, hacking probes, and
components that pay the same on every sample."""
