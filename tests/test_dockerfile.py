"""Static checks of docker/Dockerfile and .dockerignore (no Docker engine is needed).

hadolint lints the Dockerfile; a small parser checks what a lint cannot: the image
installs from uv.lock, the GPU target alone adds the `gpu` extra, both runtime targets
run as a numeric non-root user, and every COPY source exists in the build context.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import shlex
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conftest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "docker"))
import build_context  # noqa: E402
import compiled_wheels  # noqa: E402

DOCKERFILE = REPO_ROOT / "docker" / "Dockerfile"
DOCKERIGNORE = REPO_ROOT / ".dockerignore"
HADOLINT = REPO_ROOT / ".venv" / "bin" / "hadolint"
BASE_IMAGE = re.compile(r"python:3\.11-slim-bookworm(@sha256:[0-9a-f]{64})?")
TARGETS = ("cpu", "gpu")


@dataclass
class Stage:
    name: str
    base: str
    instructions: list[tuple[str, str]] = field(default_factory=list)


def _instructions(text: str) -> list[tuple[str, str]]:
    """Returns (KEYWORD, arguments) pairs, line continuations joined, comments dropped."""
    result, pending = [], ""
    for line in text.splitlines():
        if line.lstrip().startswith("#") or not line.strip():
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        keyword, _, args = (pending + line).strip().partition(" ")
        result.append((keyword.upper(), args.strip()))
        pending = ""
    return result


def _stages() -> dict[str, Stage]:
    """The stages by name; a FROM's ${ARG} is the default of the ARG declared before it."""
    stages: dict[str, Stage] = {}
    arguments: dict[str, str] = {}
    stage = None
    for keyword, args in _instructions(DOCKERFILE.read_text()):
        if keyword == "FROM":
            base, _, name = args.partition(" AS ")
            base = _expand(base.strip(), arguments)
            stage = stages.setdefault(name.strip(), Stage(name.strip(), base))
        elif keyword == "ARG" and stage is None:
            name, _, default = args.partition("=")
            arguments[name] = default
        else:
            stage.instructions.append((keyword, args))
    return stages


def _global_arguments() -> dict[str, str]:
    """The ARGs declared before the first FROM, with their defaults."""
    arguments = {}
    for keyword, args in _instructions(DOCKERFILE.read_text()):
        if keyword == "FROM":
            return arguments
        if keyword == "ARG":
            name, _, default = args.partition("=")
            arguments[name] = default
    return arguments


def _chain(name: str) -> list[Stage]:
    """The stage and its ancestors, root first."""
    chain = [STAGES[name]]
    while chain[0].base in STAGES:
        chain.insert(0, STAGES[chain[0].base])
    return chain


def _all(name: str, keyword: str) -> list[str]:
    return [args for stage in _chain(name) for kw, args in stage.instructions if kw == keyword]


def _env(name: str) -> dict[str, str]:
    """The environment a stage ends with, ${VAR} and $VAR expanded where known."""
    env: dict[str, str] = {}
    for args in _all(name, "ENV"):
        before = dict(env)  # Docker expands with the values from before this ENV.
        for pair in shlex.split(args):
            key, _, value = pair.partition("=")
            env[key] = _expand(value, before)
    return env


def _expand(value: str, env: dict[str, str]) -> str:
    def lookup(match: re.Match) -> str:
        return env.get(match.group(1) or match.group(2), match.group(0))

    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lookup, value)


STAGES = _stages()


def _copy_args(args: str) -> tuple[dict[str, str], list[str]]:
    words = shlex.split(args)
    flags = dict(w[2:].partition("=")[::2] for w in words if w.startswith("--"))
    return flags, [w for w in words if not w.startswith("--")]


def _ignored(path: str) -> bool:
    """Whether .dockerignore leaves `path` out (Docker: last match wins, parents count)."""
    return build_context.ignored(path, build_context.patterns(DOCKERIGNORE))


def _hadolint(dockerfile: Path, config: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HADOLINT_")}
    command = [str(HADOLINT), "--config", str(config), "--no-color", "--disable-ignore-pragma"]
    command += ["--failure-threshold", "style", str(dockerfile)]
    return subprocess.run(command, capture_output=True, text=True, env=env, check=False)


@pytest.fixture
def empty_config(tmp_path: Path) -> Path:
    # An explicit empty config, so that no user or project config ignores rules.
    config = tmp_path / "hadolint.yaml"
    config.write_text("{}\n")
    return config


def test_hadolint_reports_nothing(empty_config: Path) -> None:
    result = _hadolint(DOCKERFILE, empty_config)
    assert (result.returncode, result.stdout + result.stderr) == (0, "")


def test_hadolint_fails_a_bad_dockerfile(empty_config: Path, tmp_path: Path) -> None:
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python\nRUN cd /src && pip install tfx\n")
    result = _hadolint(bad, empty_config)
    assert result.returncode != 0
    assert "DL3006" in result.stdout and "DL3003" in result.stdout


def test_cpu_is_the_default_target() -> None:
    assert list(STAGES)[-1] == "cpu"


def test_cpu_image_has_the_java_runtime_the_spark_engine_starts() -> None:
    # ExampleGen runs in the CPU image; with --example-gen-engine spark it is Spark's driver.
    runs = " ".join(_all("cpu", "RUN"))
    assert '"openjdk-17-jre-headless=17.0.*"' in runs
    assert "openjdk" not in " ".join(_all("gpu", "RUN")), "the Trainer needs no JVM"


@pytest.mark.parametrize("target", TARGETS)
def test_runtime_runs_as_numeric_non_root_user(target: str) -> None:
    users = _all(target, "USER")
    assert users, f"{target} sets no USER and would run as root"
    assert users[-1].isdigit() and int(users[-1]) != 0, users[-1]
    assert not _all(target, "ENTRYPOINT"), "KFP sets the command; an ENTRYPOINT would wrap it"


@pytest.mark.parametrize("target", TARGETS)
def test_runtime_environment(target: str) -> None:
    assert BASE_IMAGE.fullmatch(_chain(target)[0].base), _chain(target)[0].base
    env = _env(target)
    assert env["TF_USE_LEGACY_KERAS"] == "1"
    assert env["PYTHONUNBUFFERED"] == "1"
    assert env["PATH"].split(":")[1 if target == "gpu" else 0] == f"{env['VIRTUAL_ENV']}/bin"
    assert env["VIRTUAL_ENV"] == "/app/.venv", "uv sync in WORKDIR /app creates /app/.venv"


def test_uv_version_matches_makefile() -> None:
    makefile = (REPO_ROOT / "Makefile").read_text()
    version = re.search(r"^UV_VERSION := (\S+)", makefile, re.M).group(1)
    assert STAGES["uv"].base == f"ghcr.io/astral-sh/uv:{version}"


@pytest.mark.parametrize("target", TARGETS)
def test_installs_from_the_lock(target: str) -> None:
    steps = [(kw, a) for s in _chain(target) for kw, a in s.instructions if kw in ("COPY", "RUN")]
    [sync] = [i for i, (kw, a) in enumerate(steps) if kw == "RUN" and "uv sync" in a]
    words = steps[sync][1].split()
    assert {"--frozen", "--no-dev", "--no-install-project"} <= set(words), steps[sync][1]
    extras = [words[j + 1] for j, w in enumerate(words) if w == "--extra"]
    assert extras == (["gpu"] if target == "gpu" else []), steps[sync][1]
    # The compiled packages are left to their wheels, built from the lock's sources.
    assert '--no-install-package "$package"' in steps[sync][1]
    assert "uv pip install --no-deps /wheels/*.whl" in steps[sync][1]
    copied = [(i, _copy_args(a)) for i, (kw, a) in enumerate(steps) if kw == "COPY"]
    lock_at = next(i for i, (_, srcs) in copied if {"uv.lock", "pyproject.toml"} <= set(srcs))
    wheels_at = next(i for i, (flags, _) in copied if flags.get("from") == "wheels")
    source_at = next(i for i, (_, srcs) in copied if "components/" in srcs)
    [project] = [i for i, (kw, a) in enumerate(steps) if kw == "RUN" and "--editable ." in a]
    # The dependencies' layer comes before any project file, so a source edit reuses it; the
    # project alone after.
    assert lock_at < sync and wheels_at < sync < source_at < project
    assert "uv pip install --no-deps --editable ." in steps[project][1]


@pytest.mark.parametrize("target", TARGETS)
def test_runtime_has_neither_compiler_nor_uv(target: str) -> None:
    chain = _chain(target)
    assert "wheels" not in [s.name for s in chain], "the compiler's stage is not a runtime's base"
    steps = [a for s in chain for kw, a in s.instructions if kw in ("COPY", "RUN")]
    assert not [a for a in steps if "--from=uv" in a and not a.startswith("--mount")]
    assert "uv" not in [_copy_args(a)[0].get("from") for a in _all(target, "COPY")]
    assert not [a for a in steps if "g++" in a or "gcc" in a]
    for run in [a for a in _all(target, "RUN") if re.search(r"\buv (sync|pip)\b", a)]:
        assert "--mount=type=bind,from=uv,source=/uv" in run
    assert "g++" in " ".join(a for kw, a in STAGES["wheels"].instructions if kw == "RUN")


@pytest.mark.parametrize("target", TARGETS)
def test_uv_caches_only_in_the_build_cache_mount(target: str) -> None:
    # HOME is the runtime user's from the runtime stage on: uv's default cache there
    # would be a root-owned layer in that user's home (4.5 MB with the project alone).
    runs = [
        a for s in [STAGES["wheels"], *_chain(target)] for kw, a in s.instructions if kw == "RUN"
    ]
    uv_runs = [a for a in runs if re.search(r"\buv (sync|pip)\b|compiled_wheels\.py", a)]
    assert len(uv_runs) == 3
    for run in uv_runs:
        [mount] = re.findall(r"--mount=type=cache,target=(\S+)", run)
        assert f"UV_CACHE_DIR={mount} " in run, run


def test_the_compiled_packages_are_the_locks_sources_only(tmp_path: Path) -> None:
    lock = (REPO_ROOT / "uv.lock").read_text()
    names = _global_arguments()["COMPILED_PACKAGES"].strip('"').split()
    assert sorted(compiled_wheels.sources(lock, names)) == sorted(names) == ["crcmod", "pyfarmhash"]
    with pytest.raises(compiled_wheels.LockError, match="six .*has wheels of it"):
        compiled_wheels.sources(lock, ["six"])
    with pytest.raises(compiled_wheels.LockError, match="no-such: uv.lock has no source"):
        compiled_wheels.sources(lock, ["no-such"])
    sdist = tmp_path / "served" / "p-1.tar.gz"
    sdist.parent.mkdir()
    sdist.write_bytes(b"the source")
    digest = hashlib.sha256(b"the source").hexdigest()
    fetched = compiled_wheels.fetch(sdist.as_uri(), f"sha256:{digest}", tmp_path)
    assert fetched.read_bytes() == b"the source"
    with pytest.raises(compiled_wheels.LockError, match="uv.lock says 0+$"):
        compiled_wheels.fetch(sdist.as_uri(), "sha256:" + "0" * 64, tmp_path)


@pytest.mark.parametrize("target", TARGETS)
def test_the_ca_bundle_is_a_build_secret_never_a_layer(target: str) -> None:
    downloads = [
        a
        for s in [STAGES["wheels"], *_chain(target)]
        for kw, a in s.instructions
        if kw == "RUN" and re.search(r"uv sync|compiled_wheels\.py|--editable \.", a)
    ]
    assert len(downloads) == 3, downloads
    for step in downloads:
        assert "--mount=type=secret,id=ca-bundle" in step and "with-ca-bundle " in step
    assert "SSL_CERT_FILE" not in _env(target)
    script = (REPO_ROOT / "docker" / "with-ca-bundle").read_text()
    assert "SSL_CERT_FILE=/run/secrets/ca-bundle" in script


def test_base_images_are_build_arguments_defaulting_to_the_public_ones() -> None:
    text = DOCKERFILE.read_text()
    assert "FROM ${PYTHON_IMAGE} AS python-base" in text
    assert "FROM ${UV_IMAGE} AS uv" in text
    assert BASE_IMAGE.fullmatch(STAGES["python-base"].base)


def test_gpu_extra_is_tensorflow_with_cuda_in_the_lock() -> None:
    lock = tomllib.loads((REPO_ROOT / "uv.lock").read_text())
    project = next(p for p in lock["package"] if p["name"] == "tfrecord-pipelines")
    assert project["optional-dependencies"]["gpu"] == [
        {"name": "tensorflow", "extra": ["and-cuda"]}
    ]


def test_gpu_loader_path_covers_the_locked_cuda_wheels() -> None:
    lock = tomllib.loads((REPO_ROOT / "uv.lock").read_text())
    tensorflow = next(p for p in lock["package"] if p["name"] == "tensorflow")
    wheels = [d["name"] for d in tensorflow["optional-dependencies"]["and-cuda"]]
    env = _env("gpu")
    root = env["NVIDIA_PIP_ROOT"]
    assert root == f"{env['VIRTUAL_ENV']}/lib/python3.11/site-packages/nvidia"
    folders = {w.removeprefix("nvidia-").removesuffix("-cu12").replace("-", "_") for w in wheels}
    expected = {f"{root}/{f}/lib" for f in folders - {"cuda_nvcc"}}
    assert set(env["LD_LIBRARY_PATH"].split(":")) == expected
    assert env["PATH"].split(":")[0] == f"{root}/cuda_nvcc/bin"
    assert "LD_LIBRARY_PATH" not in _env("cpu")


def test_copy_sources_exist_and_are_in_the_context() -> None:
    sources = {
        s
        for kw, a in _instructions(DOCKERFILE.read_text())
        if kw in ("COPY", "ADD")
        for s in _copy_args(a)[1][:-1]
        if "from" not in _copy_args(a)[0]
    }
    needed = {"pyproject.toml", "uv.lock", "setup.py", "components/", "pipelines/", "schemas/"}
    assert needed <= sources
    for source in sorted(sources):
        path = REPO_ROOT / source
        assert path.exists(), f"COPY {source}: not in the repository"
        files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
        kept = [f for f in files if "__pycache__" not in f.parts]
        assert kept, f"COPY {source}: nothing to copy"
        for file in kept:
            relative = file.relative_to(REPO_ROOT).as_posix()
            assert not _ignored(relative), f"{relative} is copied but .dockerignore drops it"


def test_dockerignore_leaves_out_local_state() -> None:
    for path in (
        ".venv/bin/python",
        ".tools/bin/uv",
        "output/kubeflow/x.yaml",
        ".git/HEAD",
        "data/write_digits.py",
        "tests/conftest.py",
        "benchmarks/example_gen.py",
        "tfrecord_pipelines.egg-info/PKG-INFO",
        "components/__pycache__/task.pyc",
        "components/task.pyc",
    ):
        assert _ignored(path), f".dockerignore keeps {path}"


def test_project_code_imports_only_what_the_image_holds() -> None:
    copied = {"components", "pipelines"}
    # What an import could find at the root (not .venv, build outputs or egg-info).
    local = {p.name for p in REPO_ROOT.iterdir() if p.is_dir() and p.name.isidentifier()}
    local |= {p.stem for p in REPO_ROOT.glob("*.py")}
    for package in copied:
        for module in (REPO_ROOT / package).rglob("*.py"):
            tree = ast.parse(module.read_text())
            names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
            names |= {
                n.module
                for n in ast.walk(tree)
                if isinstance(n, ast.ImportFrom) and n.module and not n.level
            }
            missing = {n.split(".")[0] for n in names} & (local - copied)
            assert not missing, f"{module.relative_to(REPO_ROOT)} imports {missing}"


def test_the_context_is_the_files_dockers_own_rules_keep() -> None:
    # The Docker SDK's exclude_paths, written apart from ours from Docker's rules; it keeps
    # .dockerignore itself, which the digest hashes on its own.
    from docker.utils.build import exclude_paths

    lines = [line.strip() for line in DOCKERIGNORE.read_text().splitlines()]
    rules = [line for line in lines if line and not line.startswith("#")]
    docker_kept = {
        path for path in exclude_paths(str(REPO_ROOT), rules) if (REPO_ROOT / path).is_file()
    }
    ours = build_context.context_files(REPO_ROOT)
    assert set(ours) == docker_kept - {".dockerignore"}
    assert "components/task.py" in ours and "docker/with-ca-bundle" in ours


def test_the_build_digest_follows_every_input_and_nothing_else(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "components").mkdir(parents=True)
    (root / "output").mkdir()
    (root / ".dockerignore").write_text("*\n!components/\n**/*.pyc\n")
    (root / "components" / "task.py").write_text("A = 1\n")
    dockerfile = root / "Dockerfile"
    dockerfile.write_text("FROM python\nCOPY components/ components/\n")

    def digest(target: str = "cpu", bases: dict | None = None) -> str:
        return build_context.inputs_digest(root, dockerfile, target, bases or {"PY": "sha256:1"})

    first = digest()
    # Outside the context: a run's output, a bytecode file.
    (root / "output" / "run.json").write_text("{}")
    (root / "components" / "task.pyc").write_bytes(b"x")
    assert digest() == first
    changed = {
        "a file of the context": lambda: (root / "components" / "task.py").write_text("A = 2\n"),
        "a new file": lambda: (root / "components" / "new.py").write_text(""),
        "the Dockerfile": lambda: dockerfile.write_text(dockerfile.read_text() + "USER 1000\n"),
        ".dockerignore": lambda: (root / ".dockerignore").write_text("*\n!components/\n"),
    }
    seen = {first}
    for what, change in changed.items():
        change()
        assert digest() not in seen, what
        seen.add(digest())
    assert digest(target="gpu") not in seen
    assert digest(bases={"PY": "sha256:2"}) not in seen
