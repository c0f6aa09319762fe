"""Pure array code: images, patches, masks, position embeddings, Swin window geometry.

Nothing here knows about models, files of weights or the app; everything above builds on it.
"""
