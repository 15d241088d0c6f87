"""Local Beam arguments: TFX does not package itself for a DirectRunner's workers."""

import tempfile

from tfx.utils import dependency_utils

from tfrecord_pipelines.local.beam_args import DEFAULT_BEAM_ARGS, local_beam_args


def test_direct_runner_args_keep_tfx_from_building_its_package(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    for user_args in ([], ["--runner=DirectRunner"], ["--direct_num_workers=2"]):
        args = local_beam_args(user_args)
        assert args[: len(DEFAULT_BEAM_ARGS)] == list(DEFAULT_BEAM_ARGS)
        # TFX's own check, as its Beam executors call it: nothing added, nothing built.
        assert dependency_utils.make_beam_dependency_flags(args) == args
    assert list(tmp_path.iterdir()) == []


def test_other_runners_and_a_users_image_are_left_to_tfx_and_beam():
    flink = local_beam_args(["--runner=FlinkRunner"])
    assert flink == [*DEFAULT_BEAM_ARGS, "--runner=FlinkRunner"]
    image = ["--sdk_container_image=example.com/beam:1"]
    assert local_beam_args(image) == [*DEFAULT_BEAM_ARGS, *image]
