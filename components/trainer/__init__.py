"""Trainer module code: the Keras model, its serving signatures and ``run_fn``."""
