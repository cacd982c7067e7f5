"""Run benchmarks: time to first token added, concurrent runs on one worker, host overhead per round."""
