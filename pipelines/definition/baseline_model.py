"""The baseline a new model is compared with: the latest blessed model other than itself."""

from __future__ import annotations

from tfx import types
from tfx import v1 as tfx
from tfx.components.evaluator import constants as evaluator_constants

MODEL_KEY = "model"
BLESSING_KEY = "model_blessing"
CANDIDATE_KEY = "candidate"
BASELINE_RESOLVER = "latest_blessed_model_resolver"


class LatestOtherBlessedModelStrategy(tfx.dsl.experimental.ResolverStrategy):
    """Resolves the latest blessed Model that is not this run's candidate.

    TFX's LatestBlessedModelStrategy returns the latest blessed model even
    when it is the model this run evaluates (a re-run whose Trainer was
    reused): the Evaluator's inputs then change, so it and the Pusher run
    again only to compare a model with itself and push a copy of it.
    """

    def resolve_artifacts(self, store, input_dict: dict[str, list[types.Artifact]]):
        candidates = {a.id for a in input_dict.get(CANDIDATE_KEY, [])}
        blessings = {
            b.get_int_custom_property(evaluator_constants.ARTIFACT_PROPERTY_CURRENT_MODEL_ID_KEY): b
            for b in input_dict.get(BLESSING_KEY, [])
            if b.get_int_custom_property(evaluator_constants.ARTIFACT_PROPERTY_BLESSED_KEY) == 1
        }
        result = {MODEL_KEY: [], BLESSING_KEY: [], CANDIDATE_KEY: input_dict.get(CANDIDATE_KEY, [])}
        for model in sorted(input_dict.get(MODEL_KEY, []), key=lambda a: a.id, reverse=True):
            if model.id in blessings and model.id not in candidates:
                result[MODEL_KEY] = [model]
                result[BLESSING_KEY] = [blessings[model.id]]
                break
        return result


def baseline_model_resolver(candidate: types.BaseChannel) -> tfx.dsl.Resolver:
    """The Resolver giving the Evaluator its baseline for ``candidate``, the new model."""
    return tfx.dsl.Resolver(
        strategy_class=LatestOtherBlessedModelStrategy,
        model=tfx.dsl.Channel(type=tfx.types.standard_artifacts.Model),
        model_blessing=tfx.dsl.Channel(type=tfx.types.standard_artifacts.ModelBlessing),
        candidate=candidate,
    ).with_id(BASELINE_RESOLVER)
