"""The pipeline's definition, where the local and Kubeflow runners meet it."""
