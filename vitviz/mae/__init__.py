"""Masked autoencoders at work: reconstruction, every slider stop at once, a non-learned baseline."""
