"""Model definitions, the model registry and loading."""
