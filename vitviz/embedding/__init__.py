"""How an image becomes a sequence of tokens: the projection E, prefix tokens, position
embeddings, the encoder run on a token sequence, the shuffle experiment, other resolutions."""
