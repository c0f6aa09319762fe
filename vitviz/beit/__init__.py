"""BEiT: masked image modeling with discrete visual tokens (tokenize, blockwise masks, predict, baselines)."""
