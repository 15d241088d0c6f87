"""Earlier blessed models a run builds on: the Evaluator's baseline (the latest blessed model
other than the candidate) and the Trainer's base model for a warm start (the latest blessed
model trained on earlier spans only)."""

from __future__ import annotations

from tfx import types
from tfx.components.evaluator import constants as evaluator_constants
from tfx.dsl.components.common.resolver import Resolver, ResolverStrategy
from tfx.types import standard_artifacts
from tfx.types.channel import Channel

from tfrecord_pipelines.components.daily import choices
from tfrecord_pipelines.components.daily.resolvers import outputs_of, spans_read
from tfrecord_pipelines.components.keys import BLESSING_KEY, MODEL_BLESSING_KEY, MODEL_KEY

# The baseline Resolver's input of this run's model, which it never picks.
CANDIDATE_KEY = "candidate"
BASELINE_RESOLVER = "latest_blessed_model_resolver"
BASE_MODEL_RESOLVER = "warm_start_model_resolver"


class LatestOtherBlessedModelStrategy(ResolverStrategy):
    """Resolves the latest blessed Model that is not this run's candidate.

    TFX's LatestBlessedModelStrategy returns the latest blessed model even
    when it is the model this run evaluates (a re-run whose Trainer was
    reused): the Evaluator's inputs then change, so it and the Pusher run
    again only to compare a model with itself and push a copy of it.
    """

    def resolve_artifacts(self, store, input_dict: dict[str, list[types.Artifact]]):
        candidates = {a.id for a in input_dict.get(CANDIDATE_KEY, [])}
        blessings = _blessed(input_dict.get(MODEL_BLESSING_KEY, []))
        others = [
            choices.Trained(frozenset(), model.id in blessings, model.id, model)
            for model in input_dict.get(MODEL_KEY, [])
            if model.id not in candidates
        ]
        baseline = choices.baseline_model(others)
        return {
            MODEL_KEY: [baseline.item] if baseline else [],
            MODEL_BLESSING_KEY: [blessings[baseline.item.id]] if baseline else [],
            CANDIDATE_KEY: input_dict.get(CANDIDATE_KEY, []),
        }


def _blessed(blessings: list[types.Artifact]) -> dict[int, types.Artifact]:
    """The blessings that blessed their model, by the model's id."""
    return {
        b.get_int_custom_property(evaluator_constants.ARTIFACT_PROPERTY_CURRENT_MODEL_ID_KEY): b
        for b in blessings
        if b.get_int_custom_property(evaluator_constants.ARTIFACT_PROPERTY_BLESSED_KEY) == 1
    }


class LatestBlessedModelBeforeSpanStrategy(ResolverStrategy):
    """Resolves the latest blessed Model whose training read only spans before ``end``.

    A warm start's base: the model of an earlier day. Not the latest blessed
    model whatever it read: a re-run of day 30 would start from day 30's own
    model, so its Trainer's inputs would change on every re-run and nothing
    would be reused.
    """

    def __init__(self, end: int):
        self._end = end

    def resolve_artifacts(self, store, input_dict: dict[str, list[types.Artifact]]):  # noqa: D102
        blessings = _blessed(input_dict.get(MODEL_BLESSING_KEY, []))
        trained = [
            choices.Trained(frozenset(spans_read(store, m.id)), m.id in blessings, m.id, m)
            for m in input_dict.get(MODEL_KEY, [])
        ]
        base = choices.base_model(trained, self._end)
        if base is None:
            # A Resolver's result has every key of its inputs.
            return {MODEL_KEY: [], MODEL_BLESSING_KEY: []}
        return {MODEL_KEY: [base.item], MODEL_BLESSING_KEY: [blessings[base.item.id]]}


def base_model_resolver(trainer_id: str, evaluator_id: str, end: int) -> Resolver:
    """The Resolver giving the Trainer its base model: the latest blessed model that
    ``trainer_id`` trained on spans before ``end``, blessed by ``evaluator_id``."""
    return Resolver(
        strategy_class=LatestBlessedModelBeforeSpanStrategy,
        config={"end": end},
        model=outputs_of(standard_artifacts.Model, trainer_id, MODEL_KEY),
        model_blessing=outputs_of(standard_artifacts.ModelBlessing, evaluator_id, BLESSING_KEY),
    ).with_id(BASE_MODEL_RESOLVER)


def baseline_model_resolver(candidate: types.BaseChannel) -> Resolver:
    """The Resolver giving the Evaluator its baseline for ``candidate``, the new model."""
    return Resolver(
        strategy_class=LatestOtherBlessedModelStrategy,
        model=Channel(type=standard_artifacts.Model),
        model_blessing=Channel(type=standard_artifacts.ModelBlessing),
        candidate=candidate,
    ).with_id(BASELINE_RESOLVER)
