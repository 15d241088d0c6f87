"""The user's TFX module file, in the shape of TFX's penguin example (penguin_utils_keras).

TFX's Transform runs ``preprocessing_fn`` and TFX's Trainer ``run_fn`` on
ShardedExampleGen's shards, read by TFX's own DataAccessor. The Palmer data
has empty cells (read as missing values) and a string label, which TFX's
example, on a cleaned copy with an integer label, has not: missing values
are filled and the label becomes an index through a vocabulary.
"""

import tensorflow as tf
import tensorflow_transform as tft
from tfx import v1 as tfx
from tfx_bsl.public import tfxio

FEATURE_KEYS = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g"]
LABEL_KEY = "species"
CLASSES = 3


def transformed_name(key: str) -> str:
    return key + "_xf"


def _fill_in_missing(x):
    """A dense [batch, 1] tensor of a feature with missing values (a SparseTensor), 0 filled in."""
    if not isinstance(x, tf.sparse.SparseTensor):
        return x
    default = "" if x.dtype == tf.string else 0
    return tf.sparse.to_dense(tf.SparseTensor(x.indices, x.values, [x.dense_shape[0], 1]), default)


# --8<-- [start:preprocessing_fn]
def preprocessing_fn(inputs):
    """z-scores of the measurements; the species as an index into its vocabulary."""
    outputs = {
        transformed_name(key): tft.scale_to_z_score(_fill_in_missing(inputs[key]))
        for key in FEATURE_KEYS
    }
    outputs[transformed_name(LABEL_KEY)] = tft.compute_and_apply_vocabulary(
        _fill_in_missing(inputs[LABEL_KEY]), vocab_filename=LABEL_KEY
    )
    return outputs


# --8<-- [end:preprocessing_fn]


def _dataset(files, data_accessor, transform_output, batch_size: int) -> tf.data.Dataset:
    return data_accessor.tf_dataset_factory(
        files,
        tfxio.TensorFlowDatasetOptions(
            batch_size=batch_size, label_key=transformed_name(LABEL_KEY)
        ),
        transform_output.transformed_metadata.schema,
    ).repeat()


def _model() -> tf.keras.Model:
    inputs = [tf.keras.layers.Input(shape=(1,), name=transformed_name(f)) for f in FEATURE_KEYS]
    hidden = tf.keras.layers.Dense(8, activation="relu")(tf.keras.layers.concatenate(inputs))
    model = tf.keras.Model(inputs=inputs, outputs=tf.keras.layers.Dense(CLASSES)(hidden))
    model.compile(
        optimizer=tf.keras.optimizers.Adam(1e-2),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=[tf.keras.metrics.SparseCategoricalAccuracy()],
    )
    return model


def _signatures(model, transform_output) -> dict:
    """serving_default (raw examples in, logits out) and transform_features (for TFMA's label)."""
    model.tft_layer = transform_output.transform_features_layer()

    @tf.function(input_signature=[tf.TensorSpec(shape=[None], dtype=tf.string, name="examples")])
    def serve(serialized):
        spec = transform_output.raw_feature_spec()
        spec.pop(LABEL_KEY)
        features = model.tft_layer(tf.io.parse_example(serialized, spec))
        return {"outputs": model(features)}

    @tf.function(input_signature=[tf.TensorSpec(shape=[None], dtype=tf.string, name="examples")])
    def transform_features(serialized):
        spec = transform_output.raw_feature_spec()
        return model.tft_layer(tf.io.parse_example(serialized, spec))

    return {"serving_default": serve, "transform_features": transform_features}


def run_fn(fn_args: tfx.components.FnArgs):
    """Trains on Transform's transformed examples; saves the model with both signatures."""
    transform_output = tft.TFTransformOutput(fn_args.transform_output)
    train = _dataset(fn_args.train_files, fn_args.data_accessor, transform_output, 20)
    evaluation = _dataset(fn_args.eval_files, fn_args.data_accessor, transform_output, 10)
    model = _model()
    model.fit(
        train,
        steps_per_epoch=fn_args.train_steps,
        validation_data=evaluation,
        validation_steps=fn_args.eval_steps,
    )
    tf.saved_model.save(
        model, fn_args.serving_model_dir, signatures=_signatures(model, transform_output)
    )
