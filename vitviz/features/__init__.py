"""What each layer of a ViT holds: its tokens.

- :mod:`.layer_tokens`: every layer's tokens for any registry model (one forward pass, cached;
  recorded by :func:`vitviz.explain.capture.capture_block_tokens`);
- :mod:`.shipped`: the example photos' tokens shipped for dinov2-small (checked against the
  loaded weights), so a view beside the examples encodes only the new photo;
- :mod:`.pca`: joint PCA of patch tokens to RGB feature maps, foreground split on PC1;
- :mod:`.similarity`: patch correspondence within and across images (cosine);
- :mod:`.targets` and :mod:`.probes`: label-free ridge probes by depth, fitted on some
  images and scored on others, with a shuffled-target control;
- :mod:`.pooling`: class token vs average pooling;
- :mod:`.llrd`: layer-wise learning-rate decay multipliers.

Importing this package loads no model.
"""
