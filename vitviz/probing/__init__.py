"""Linear probes on frozen features of the labelled photo set (the Pretraining tab).

:mod:`.features` computes and stores each encoder's pooled features once;
:mod:`.linear` fits the probes from them; :mod:`.protocols` reads the shipped
fine-tuning and from-scratch curves.
"""
