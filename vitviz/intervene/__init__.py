"""Interventions on a model: head and token ablation (ablation.py) and the logit lens (lens.py)."""
