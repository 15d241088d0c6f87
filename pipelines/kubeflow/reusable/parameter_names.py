"""The KFP components' own parameter names (``definitions``), as the adapters read them.

KFP takes a container component's parameter names from its Python signature,
so ``definitions`` spells them there; the names TFX's components share are
``components.keys``'. tests/test_kfp_component_entry.py holds each name here
to a parameter of the specs.
"""

LABEL = "label"
PROBLEM = "problem"
TRAIN_STEPS = "train_steps"
NUM_CLASSES = "num_classes"
MIN_ACCURACY = "min_accuracy"
SERVING_DIR = "serving_dir"
