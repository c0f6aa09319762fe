"""What each layer of a ViT holds: its tokens.

- :mod:`.pca`: joint PCA of patch tokens to RGB feature maps, foreground split on PC1;
- :mod:`.similarity`: patch correspondence within and across images (cosine);
- :mod:`.targets` and :mod:`.probes`: label-free ridge probes by depth, fitted on some
  images and scored on others;
- :mod:`.pooling`: class token vs average pooling;
- :mod:`.llrd`: layer-wise learning-rate decay multipliers.

Importing this package loads no model.
"""
