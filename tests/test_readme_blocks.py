"""Every code block of README.md and of the manual (``docs/``) runs in the suite, as a user who
copies it would run it.

The blocks are collected with the heading they stand under and handled by their language:

* ``python`` blocks with ``>>> `` prompts are doctests: the output shown must be the output
  (``...`` where the README abbreviates it, doctest's ELLIPSIS).
* Every other ``python`` block is exec'd as written, in a fresh namespace, in a temporary
  working directory. The exceptions are listed below, each with its reason: ``EXCERPTS``
  (fragments of a file, checked to occur in it), ``CONTINUES`` (a block that goes on from the
  blocks before it in its section), ``SHORTENED`` (a stop made shorter for the suite) and
  ``MODULES`` (a block that is a module of the user's package). A new block that is none of
  these and doesn't run as written fails its test.
* ``bash`` blocks: each command (``\\``-continued lines joined, ``&&`` chains split) is run by
  ``child_process`` (default SIGINT, killed when the test stops waiting) in a temporary folder
  that links ``examples/`` and ``benchmarks/``, with the short stops and placeholders of
  ``Jobs._command`` (``SHORT_STOP``, ``SMALL_CONFIG``, ``--address auto``, an earlier run's
  results folder, ``REFERENCE_TUNED_YAML``), or checked where it can't run inside the suite:
  the install commands against ``.ci/run`` (which runs them from nothing; the suite itself is
  their tail), ``ray start`` / ``ray stop`` / ``ray get-auth-token`` by Ray's own argument
  parser (running them would start or stop Ray for every run on this machine, or write its
  token), and ``python examples/<name>.py`` by ``tests/test_examples.py``, which runs every
  example on a small budget. A command that fits no rule fails its test. The cluster section's
  ``rlconf train --address`` and ``ray status`` run against the local Ray of this module, with
  only the environment the section's ``export`` gives them.

Speed: the runnable commands start in a pool of threads when this module starts (the slow
sweeps first) and run while the Python blocks run; every command and block that uses Ray shares
one local Ray that this module starts (16 logical CPUs on however many cores), and training
commands stop after one iteration.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import json
import logging
import os
import re
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests import child_process
from tests.test_examples import EXAMPLES

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: The pages whose blocks run: the README, then the manual's pages in path order (a page whose
#: name starts with ``_`` is a draft, outside the manual).
DOC_PAGES = [README, *sorted(p for p in (ROOT / "docs").rglob("*.md") if p.name[0] != "_")]
CI_SCRIPT = ROOT / ".ci" / "run"
#: The console scripts of this environment (``rlconf``, ``ray``).
BIN = Path(sys.executable).parent
#: Seconds a command may take before its test fails.
COMMAND_TIMEOUT_S = 300.0


# ---------------------------------------------------------------------------------------------
# The blocks


@dataclass(frozen=True)
class Block:
    """A fenced code block: its language, its text (dedented by the fence's indentation), the
    heading above it and its place among that section's blocks."""

    section: str
    lang: str
    text: str
    line: int
    number: int
    #: The page, relative to the repository root.
    page: str = "README.md"

    @property
    def id(self) -> str:
        return f"{self.section}#{self.number}"

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


_FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w-]*)\s*$")
_HEADING = re.compile(r"^#+ (?P<title>.+?)\s*$")


def readme_blocks(text: str | None = None, page: str = "README.md") -> list[Block]:
    """Every fenced block of a page (README.md unless ``text`` is given), in order."""
    lines = (README.read_text() if text is None else text).splitlines()
    blocks: list[Block] = []
    section, counts = "(top)", dict[str, int]()
    i = 0
    while i < len(lines):
        heading, fence = _HEADING.match(lines[i]), _FENCE.match(lines[i])
        if heading:
            section = heading["title"]
        elif fence:
            indent = len(fence["indent"])
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == "```"), None)
            assert end is not None, f"{page}:{i + 1}: a ``` block that is never closed"
            body = [
                line[indent:] if line[:indent].strip() == "" else line
                for line in lines[i + 1 : end]
            ]
            counts[section] = counts.get(section, 0) + 1
            blocks.append(
                Block(section, fence["lang"], "\n".join(body) + "\n", i + 1, counts[section], page)
            )
            i = end
        i += 1
    return blocks


def doc_blocks() -> list[Block]:
    """Every fenced block of the README and the manual's pages."""
    return [
        block
        for path in DOC_PAGES
        for block in readme_blocks(path.read_text(), str(path.relative_to(ROOT)))
    ]


BLOCKS = doc_blocks()


def _find(section: str, marker: str) -> list[Block]:
    return [b for b in BLOCKS if b.section == section and marker in b.text]


# ---------------------------------------------------------------------------------------------
# The Python blocks that don't run as written, each with its reason. Keys: (section, a string
# that names the block within it).

#: Fragments of a file (``...`` lines mark what they leave out): each run of lines between them
#: must occur in the file, in order, whitespace aside.
EXCERPTS: dict[tuple[str, str], str] = {
    # The generated signature PPOConfig inherits, shortened.
    ("Editor support", "def training("): "src/rlconf/generated/ppo_fluent.py",
    # The three parts of a custom algorithm, from the example that runs them together.
    ("Writing your own algorithm", "class ReinforceTrainingArgs"): "examples/custom_algorithm.py",
    ("Writing your own algorithm", "class Reinforce(OnPolicyAlgorithm)"): (
        "examples/custom_algorithm.py"
    ),
    # The league callback of the self-play example (its mapping function stays there).
    ("Multi-agent", "class LeagueCallbacks"): "examples/self_play_rps.py",
    # The policy server's input and spaces, from the serving example that runs it.
    ("External applications: a policy server", "PolicyServerInput("): (
        "examples/serving/cartpole_server.py"
    ),
}

#: Blocks that go on from the blocks before them in their section (which run first, in the
#: same namespace), as the README says they do.
CONTINUES: dict[tuple[str, str], str] = {
    ("Multi-agent", ".multi_agent("): "trains MultiAgentCartPole, made by the first block",
}

#: Text replaced in a block before it runs: the short stops of the suite.
SHORTENED: dict[tuple[str, str], list[tuple[str, str]]] = {
    ("A sweep on Ray Tune", "sweep.run("): [
        ('stop={"training_iteration": 20}', 'stop={"training_iteration": 1}')
    ],
    # RLlib's getting-started sizes: an iteration of 2,000 Pendulum steps, 10 epochs, and 10
    # evaluation episodes of 200 steps each; the calls are what the block shows.
    ("RLlib's getting started and example scripts", "config.env_runners(num_env_runners=2)"): [
        ("train_batch_size_per_learner=2000", "train_batch_size_per_learner=400"),
        ("num_epochs=10", "num_epochs=2"),
        ("evaluation_duration=10", "evaluation_duration=2"),
    ],
    # CleanRL's Atari batch (8 envs, 1,024 steps an iteration, 4 epochs): a smaller one.
    ("Images and Atari", "gym_env_vectorize_mode="): [
        ("num_envs_per_env_runner=8", "num_envs_per_env_runner=2"),
        (
            "train_batch_size=1024, sgd_minibatch_size=256, num_sgd_iter=4",
            "train_batch_size=256, sgd_minibatch_size=128, num_sgd_iter=1",
        ),
    ],
    # PPO's defaults (2 env runners, 4,000 steps an iteration, 30 epochs) on the custom env:
    # the runners stay, the iteration is shorter.
    ("RLlib's getting started and example scripts", "class EchoEnv("): [
        (
            ".environment(EchoEnv).build_algo()",
            ".environment(EchoEnv).training(train_batch_size=400, num_sgd_iter=2).build_algo()",
        ),
    ],
}

#: Blocks that are a module of the user's own package (at this path): written to a temporary
#: package, its fluent mixin generated as the README says (``python -m rlconf.fluent_codegen
#: <module>``, here through its ``main``), then imported.
MODULES: dict[tuple[str, str], str] = {
    ("Editor support", "class MyConfig("): "my_package/configs.py",
}


def _policy_p(agent_id: Any, *args: Any, **kwargs: Any) -> str:
    return "p"


def _train_on_my_env(namespace: dict[str, Any]) -> None:
    """The env the block defines works: one PPO iteration on it, both agents on one policy."""
    from rlconf import PPOConfig

    algo = (
        PPOConfig()
        .environment(namespace["MyEnv"])
        .rollouts(num_workers=0)
        .training(train_batch_size=200, sgd_minibatch_size=100, num_sgd_iter=1)
        .multi_agent(policies={"p"}, policy_mapping_fn=_policy_p)
        .build()
    )
    try:
        result = algo.train()
    finally:
        algo.stop()
    assert result["agent_timesteps_total"] == 2 * result["timesteps_total"] > 0


#: Checks run on a block's namespace after it ran.
AFTER: dict[tuple[str, str], Callable[[dict[str, Any]], None]] = {
    ("Multi-agent", "class MyEnv("): _train_on_my_env,
}

RULES: tuple[dict[tuple[str, str], Any], ...] = (EXCERPTS, CONTINUES, SHORTENED, MODULES, AFTER)


def rule(rules: dict[tuple[str, str], Any], block: Block) -> Any:
    return next((v for (s, m), v in rules.items() if s == block.section and m in block.text), None)


def test_every_rule_names_one_block() -> None:
    for rules in RULES:
        for section, marker in rules:
            found = _find(section, marker)
            assert len(found) == 1, (
                f"README rule ({section!r}, {marker!r}) names {len(found)} blocks: update it"
            )
    for (section, marker), replacements in SHORTENED.items():
        (block,) = _find(section, marker)
        for old, _ in replacements:
            assert old in block.text, f"{block.id}: no {old!r} to shorten any more"


def test_every_block_has_an_id_of_its_own() -> None:
    """Blocks are named by the heading above them: a heading with blocks under it appears once
    in the README and the manual together."""
    seen: dict[str, str] = {}
    for block in BLOCKS:
        assert block.id not in seen, (
            f"{block.where} and {seen[block.id]} both have a block under {block.section!r}: "
            "give one of the headings another title"
        )
        seen[block.id] = block.where


def test_the_readme_has_its_blocks() -> None:
    langs = {b.lang for b in BLOCKS}
    assert langs <= {"python", "bash"}, f"no rule for README blocks of {langs - {'python', 'bash'}}"
    assert len([b for b in BLOCKS if b.lang == "python"]) >= 15
    assert len([b for b in BLOCKS if b.lang == "bash"]) >= 5


# ---------------------------------------------------------------------------------------------
# Paths the README names

#: Names in the README that are not files of this repository, with what they stand for.
NOT_IN_REPOSITORY = {
    "reference-tuned.yaml": "a tuned-example file of the reference (RLlib), the user's own",
}
_PATH = re.compile(
    r"(?<![\w./~<>-])"
    r"((?:\.ci|docs|examples|benchmarks|tests|src|rlconf|runtime)/[\w./*<>-]*[\w*>/]"
    r"|[\w-]+\.(?:md|toml|py|yaml|yml))"
    r"(?![\w/-])"
)
#: Where a name without its folder is looked for: the repository, its code, and the manual's
#: folders (its pages link to each other by relative paths).
_LOOK_IN = (
    "",
    "src",
    "examples",
    "examples/tuned",
    "benchmarks",
    "docs",
    "docs/guide",
    "docs/algorithms",
    "docs/benchmarks",
    "docs/reference",
)


def named_paths(text: str) -> set[str]:
    return set(_PATH.findall(text))


def test_every_path_the_readme_names_is_in_the_repository() -> None:
    text = "\n".join(path.read_text() for path in DOC_PAGES)
    paths = named_paths(text)
    assert {"examples/custom_algorithm.py", ".ci/run", "ARCHITECTURE.md"} <= paths
    missing = []
    for path in sorted(paths - set(NOT_IN_REPOSITORY)):
        pattern = re.sub(r"<[^>]*>", "*", path).rstrip("/")
        if not any(list((ROOT / base).glob(pattern)) for base in _LOOK_IN):
            missing.append(path)
    assert not missing, f"README.md or docs/ name files the repository doesn't have: {missing}"
    assert set(NOT_IN_REPOSITORY) <= paths, "a NOT_IN_REPOSITORY entry the README dropped"


def test_every_benchmark_prints_its_machine() -> None:
    """The README's absolute figures name the machine they were measured on, as every
    benchmark script prints it (benchmarks/machine.py) above its numbers."""
    scripts = [
        path
        for path in sorted((ROOT / "benchmarks").glob("*.py"))
        if 'if __name__ == "__main__":' in path.read_text()
    ]
    assert len(scripts) >= 10
    silent = [path.name for path in scripts if "print_machine()" not in path.read_text()]
    assert not silent, f"benchmarks that don't print the machine: {silent}"


# ---------------------------------------------------------------------------------------------
# Python blocks

PYTHON_BLOCKS = [b for b in BLOCKS if b.lang == "python"]


def check_excerpt(block: Block, source: Path) -> None:
    """Each run of lines between ``...`` lines occurs in ``source``, in order, whitespace
    aside."""
    squeezed = re.sub(r"\s+", "", source.read_text())
    runs: list[list[str]] = []
    run: list[str] = []
    for line in block.text.splitlines():
        if line.strip() == "...":
            runs.append(run)
            run = []
        else:
            run.append(line)
    runs.append(run)
    start = 0
    for lines in runs:
        piece = re.sub(r"\s+", "", "\n".join(lines))
        if not piece:
            continue
        found = squeezed.find(piece, start)
        assert found >= 0, (
            f"{block.where} ({block.id}) is no longer an excerpt of "
            f"{source.relative_to(ROOT)}: these lines aren't there (in this order):\n"
            + "\n".join(lines)
        )
        start = found + len(piece)


def run_doctest(block: Block) -> None:
    test = doctest.DocTestParser().get_doctest(
        block.text, {}, f"{block.page} ({block.id})", str(ROOT / block.page), block.line
    )
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report: list[str] = []
    runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)


def _runs_as_code(block: Block) -> bool:
    return (
        rule(EXCERPTS, block) is None
        and rule(MODULES, block) is None
        and not re.search(r"^>>> ", block.text, re.M)
    )


def exec_block(block: Block, namespace: dict[str, Any]) -> None:
    code = block.text
    for old, new in rule(SHORTENED, block) or []:
        code = code.replace(old, new)
    # Line numbers in tracebacks are the page's.
    exec(compile("\n" * block.line + code, str(ROOT / block.page), "exec"), namespace)


def run_module_block(block: Block, relpath: str, tmp_path: Path, monkeypatch: Any) -> None:
    from rlconf import fluent_codegen

    path = tmp_path / relpath
    path.parent.mkdir(parents=True)
    (path.parent / "__init__.py").write_text("")
    path.write_text(block.text)
    package, module = relpath.split("/")[0], relpath.removesuffix(".py").replace("/", ".")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert fluent_codegen.main([module]) == 0
        assert (path.parent / f"{path.stem}_fluent.py").is_file()
        imported = importlib.import_module(module)
        classes: list[Any] = [
            v for v in vars(imported).values() if isinstance(v, type) and v.__module__ == module
        ]
        (config_class,) = classes
        # The generated mixin gives the class its typed keywords, and they work.
        assert "lr" in inspect.signature(config_class.training).parameters
        assert config_class().training(lr=1e-3).lr == 1e-3
    finally:
        for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
            del sys.modules[name]


#: A block that runs a Tune experiment, or builds an algorithm with Ray workers.
_STARTS_RAY = re.compile(r"sweep\.run\(|Tuner\(|tune\.run\(")
_RAY_WORKERS = re.compile(
    r"(?<![\w.])(evaluation_)?(num_workers|num_env_runners|num_learner_workers|num_learners)=[1-9]"
)


_NO_WORKERS = re.compile(r"(?<![\w.])(num_workers|num_env_runners|num_rollout_workers)=0")
_CONFIG_CLASS = re.compile(r"\b(\w+Config)\(\)")


def _default_workers(text: str) -> bool:
    """Whether a config class the block makes has remote workers by default (PPO's 2, as in
    RLlib) and the block does not set their count to 0."""
    import rlconf

    if _NO_WORKERS.search(text):
        return False
    classes = [getattr(rlconf, name, None) for name in _CONFIG_CLASS.findall(text)]
    return any(cls is not None and cls().to_dict().get("num_workers", 0) > 0 for cls in classes)


def starts_ray(block: Block) -> bool:
    """Whether ``block`` starts Ray actors or Tune trials: it runs in the slow tier
    (``-m slow``); the other blocks run in one process, in the fast tier."""
    text = block.text
    return bool(_STARTS_RAY.search(text)) or (
        (".build()" in text or ".build_algo()" in text)
        and (bool(_RAY_WORKERS.search(text)) or _default_workers(text))
    )


@pytest.mark.parametrize(
    "block",
    [pytest.param(b, marks=pytest.mark.slow) if starts_ray(b) else b for b in PYTHON_BLOCKS],
    ids=[b.id for b in PYTHON_BLOCKS],
)
def test_python_block(
    block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shared_ray: str
) -> None:
    monkeypatch.chdir(tmp_path)
    source = rule(EXCERPTS, block)
    if source is not None:
        check_excerpt(block, ROOT / source)
        return
    if re.search(r"^>>> ", block.text, re.M):
        run_doctest(block)
        return
    relpath = rule(MODULES, block)
    if relpath is not None:
        run_module_block(block, relpath, tmp_path, monkeypatch)
        return
    namespace: dict[str, Any] = {"__name__": "__readme__"}
    if rule(CONTINUES, block) is not None:
        for earlier in PYTHON_BLOCKS:
            if earlier.section == block.section and earlier.number < block.number:
                assert _runs_as_code(earlier), f"{block.id} continues a block that is no code"
                exec_block(earlier, namespace)
    try:
        exec_block(block, namespace)
    except NameError as error:
        raise AssertionError(
            f"{block.where} ({block.id}) does not run as written ({error}): make it "
            "self-contained, or list it in CONTINUES with the reason"
        ) from error
    after = rule(AFTER, block)
    if after is not None:
        after(namespace)


# ---------------------------------------------------------------------------------------------
# Shell commands


@dataclass
class Step:
    """One command of a bash block: its words, the block's ``export``s before it, and how the
    suite covers it."""

    block: Block
    index: int
    words: list[str]
    env: dict[str, str]
    kind: str = ""

    @property
    def id(self) -> str:
        return f"{self.block.id}.{self.index}"

    @property
    def text(self) -> str:
        return shlex.join(self.words)


#: Placeholders with a space (which shlex would split), and what the suite reads for them.
SPACED_PLACEHOLDERS = {"<head ip>": "127.0.0.1"}


def _commands(text: str) -> list[list[str]]:
    """The commands of a shell block (or script), as words."""
    for placeholder, value in SPACED_PLACEHOLDERS.items():
        text = text.replace(placeholder, value)
    commands, pending = [], ""
    for line in text.replace("\\\n", " ").splitlines():
        pending += line
        try:
            words = shlex.split(pending, comments=True)
        except ValueError:  # a quoted string that goes on to the next line
            pending += "\n"
            continue
        pending = ""
        if words:
            commands.append(words)
    assert not pending, f"unclosed quote in {pending!r}"
    return commands


def _is_train(words: list[str]) -> bool:
    """``rlconf [--import X] train ...``."""
    rest = words[1:]
    while rest[:1] == ["--import"]:
        rest = rest[2:]
    return words[:1] == ["rlconf"] and rest[:1] == ["train"]


def _chain(words: list[str]) -> list[list[str]]:
    """``a && b`` -> ``[a, b]``."""
    parts: list[list[str]] = [[]]
    for word in words:
        if word == "&&":
            parts.append([])
        else:
            parts[-1].append(word)
    return parts


def classify(words: list[str]) -> str:
    chain = _chain(words)
    if len(chain) > 1 and chain[0][:3] == ["python3", "-m", "venv"]:
        return "install"
    if words[0] == "export":
        return "export"
    if words[0] == "rlconf":
        return "rlconf"
    if words[:2] == ["ray", "status"]:
        return "ray status"
    if words[0] == "ray" and words[1] in ("start", "stop", "get-auth-token"):
        return "ray parse"
    if words[0] == "python" and len(words) == 2 and words[1].startswith("examples/"):
        return "example"
    if words[:3] == ["python", "-m", "pytest"]:
        return "suite"
    return ""


def shell_steps() -> list[Step]:
    steps = []
    for block in BLOCKS:
        if block.lang != "bash":
            continue
        env: dict[str, str] = {}
        for index, words in enumerate(_commands(block.text), 1):
            step = Step(block, index, words, dict(env), classify(words))
            steps.append(step)
            if step.kind == "export":
                for assignment in words[1:]:
                    name, _, value = assignment.partition("=")
                    env[name] = value
    return steps


STEPS = shell_steps()
#: The environment of the cluster section's last command (its `export`s).
CLUSTER_ENV = next(s.env for s in reversed(STEPS) if s.block.section == "On a Ray cluster")

#: Config keys a `rlconf train --run` command gets for the suite, where it doesn't set them:
#: a small batch, and sampling in the driver (its default num_workers=2 would start two Ray
#: actors per trial).
SMALL_CONFIG = {"train_batch_size": 256, "num_workers": 0}
#: Merged into every training command's stop criteria.
SHORT_STOP = {"training_iteration": 1}
#: RLlib's tuned example rllib/tuned_examples/ppo/cartpole-ppo.yaml, as written, for the
#: README's `reference-tuned.yaml` (a file of the reference's tuned-example format).
REFERENCE_TUNED_YAML = """\
cartpole-ppo:
    env: CartPole-v1
    run: PPO
    stop:
        episode_reward_mean: 150
        timesteps_total: 100000
    config:
        # Works for both torch and tf.
        framework: tf
        gamma: 0.99
        lr: 0.0003
        num_workers: 1
        observation_filter: MeanStdFilter
        num_sgd_iter: 6
        vf_loss_coeff: 0.01
        model:
            fcnet_hiddens: [32]
            fcnet_activation: linear
            vf_share_layers: true
        enable_connectors: true
"""
#: A results folder of an earlier run (or a path in it): `~/rlconf_results/PPO_CartPole-v1_<time>`.
_RESULTS_FOLDER = re.compile(r"^~/rlconf_results/(?P<prefix>[\w.-]+_)<time>(?P<rest>/\S*)?$")


def _option(words: list[str], flag: str) -> int | None:
    assert not any(w.startswith(flag + "=") for w in words), f"write {flag} VALUE, not {flag}=VALUE"
    return words.index(flag) if flag in words else None


def shorten_train(words: list[str]) -> list[str]:
    """A training command with ``SHORT_STOP`` merged into its ``--stop`` and, for ``--run``,
    ``SMALL_CONFIG`` under its ``--config``."""
    words = list(words)
    at = _option(words, "--stop")
    if at is None:
        words += ["--stop", json.dumps(SHORT_STOP)]
    else:
        words[at + 1] = json.dumps({**json.loads(words[at + 1]), **SHORT_STOP})
    if "--run" in words:
        at = _option(words, "--config")
        if at is None:
            words += ["--config", json.dumps(SMALL_CONFIG)]
        else:
            words[at + 1] = json.dumps({**SMALL_CONFIG, **json.loads(words[at + 1])})
    return words


@dataclass
class Job:
    """A command running for a step (steps with the same command share one)."""

    step: Step
    results: Path
    future: Future[subprocess.CompletedProcess[str]] = field(default_factory=Future)
    argv: list[str] = field(default_factory=list)
    seconds: float = 0.0


class Jobs:
    """The runnable commands of the selected steps, started in threads when the module starts:
    at most ``workers`` at once, the sweeps first; a command that names an earlier run's
    results folder waits for the earlier commands of its block in a thread of its own."""

    def __init__(self, steps: list[Step], work: Path, address: str, workers: int = 3) -> None:
        self.work, self.address = work, address
        self.jobs: dict[str, Job] = {}
        self.by_text: dict[str, Job] = {}
        self.processes: set[subprocess.Popen[str]] = set()
        self.lock = threading.Lock()
        self.closed = False
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="readme")
        self.threads: list[threading.Thread] = []
        later = []
        for step in sorted(steps, key=lambda s: not _is_sweep(s.words)):
            key = shlex.join(f"{k}={v}" for k, v in sorted(step.env.items())) + step.text
            if key in self.by_text:
                self.jobs[step.id] = self.by_text[key]
                continue
            job = Job(step, self.work / "results" / f"job{len(self.by_text)}")
            self.jobs[step.id] = self.by_text[key] = job
            if any(_RESULTS_FOLDER.match(w) for w in step.words):
                later.append(job)
            else:
                self.pool.submit(self._run, job)
        for job in later:
            thread = threading.Thread(target=self._run, args=(job,), daemon=True)
            self.threads.append(thread)
            thread.start()

    def _run(self, job: Job) -> None:
        try:
            job.argv, env = self._command(job)
            start = time.perf_counter()
            done = self._execute(job.argv, env)
            job.seconds = time.perf_counter() - start
            job.future.set_result(done)
        except BaseException as error:  # the step's test reports it
            job.future.set_exception(error)

    def _execute(self, argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        with self.lock:
            if self.closed:
                raise RuntimeError("the module's tests ended before this command started")
            process = child_process.start(
                argv,
                cwd=self.work,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            self.processes.add(process)
        try:
            out, err = process.communicate(timeout=COMMAND_TIMEOUT_S)
        finally:
            child_process.kill(process)
            with self.lock:
                self.processes.discard(process)
        return subprocess.CompletedProcess(argv, process.returncode, out, err)

    def _command(self, job: Job) -> tuple[list[str], dict[str, str]]:
        """The argv and environment a step's command runs with here."""
        step = job.step
        words = [self._resolve(step, w) for w in step.words]
        if step.kind == "install":
            words = _chain(words)[-1]
        env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_AUTH_MODE")}
        env["RLCONF_RESULTS_DIR"] = str(job.results)
        # A command on a cluster has the environment the cluster section sets up.
        env.update(step.env or (CLUSTER_ENV if "--address" in words else {}))
        names_cluster = "--address" in words or step.kind == "ray status"
        if "--address" in words and words[words.index("--address") + 1] == "auto":
            # `auto` is the cluster this machine belongs to: here that may be another run's.
            words[words.index("--address") + 1] = self.address
        if step.kind == "ray status":
            words += ["--address", self.address]
        if not names_cluster:
            # A command that would start a Ray of its own joins the module's instead.
            env.update(RAY_ADDRESS=self.address, RAY_AUTH_MODE="token")
        if _is_train(words):
            words = shorten_train(words)
        unresolved = [w for w in words if re.search(r"<[\w ]+>", w)]
        assert not unresolved, f"placeholders without a rule: {unresolved}"
        assert words[0] in ("rlconf", "ray"), words
        return [str(BIN / words[0]), *words[1:]], env

    def _resolve(self, step: Step, word: str) -> str:
        """An earlier run's results folder for ``~/rlconf_results/<prefix>_<time>[/...]``: that
        of the first earlier command of the step's block that made one, else of the README's
        first earlier command that did (each waited for in turn)."""
        match = _RESULTS_FOLDER.match(word)
        if match is None:
            return word
        earlier = STEPS[: STEPS.index(step)]
        ordered = [s for s in earlier if s.block is step.block]
        ordered += [s for s in earlier if s.block is not step.block]
        for other in ordered:
            job = self.jobs.get(other.id)
            if job is None or job is self.jobs.get(step.id):
                continue
            job.future.result(timeout=COMMAND_TIMEOUT_S)
            found = sorted(job.results.glob(match["prefix"] + "*"))
            if found:
                return str(found[-1]) + (match["rest"] or "")
        raise AssertionError(f"{step.id}: no earlier README command made {word}")

    def close(self) -> None:
        with self.lock:
            self.closed = True
            for process in list(self.processes):
                child_process.kill(process)
        self.pool.shutdown(wait=True, cancel_futures=True)
        for thread in self.threads:
            thread.join(timeout=COMMAND_TIMEOUT_S)


def _is_sweep(words: list[str]) -> bool:
    return "--num-samples" in words or any("grid" in w for w in words)


def _producers(step: Step) -> list[Step]:
    """The earlier training commands that may make the results folder ``step`` names: those of
    its block, or where it has none, the README's."""
    earlier = [
        s for s in STEPS[: STEPS.index(step)] if _is_train(_chain(s.words)[-1]) and runs_here(s)
    ]
    return [s for s in earlier if s.block is step.block] or earlier


def runs_here(step: Step) -> bool:
    """Whether the suite runs the step's command (an install chain: its tail, when that is
    not the suite itself)."""
    if step.kind == "install":
        return _chain(step.words)[-1][0] == "rlconf"
    return step.kind in ("rlconf", "ray status")


@pytest.fixture(scope="module")
def shared_ray(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A local Ray for every block and command of the module: its GCS address."""
    import ray

    # Only RAY_ADDRESS is put back afterwards: a local ray.init() turns token authentication on
    # for the whole process (it sets RAY_AUTH_MODE=token and reloads Ray's cached config), and
    # taking the variable away again would leave this process demanding tokens from clusters
    # it later starts without them (test_cluster.py's, when it runs next in this worker).
    previous = {"RAY_ADDRESS": os.environ.get("RAY_ADDRESS")}
    os.environ.pop("RAY_ADDRESS", None)
    if ray.is_initialized():  # left running by an earlier test: not one to join
        ray.shutdown()
    ray.init(
        address="local",
        # Enough for every block and command at once (the cores are shared, not divided).
        num_cpus=16,
        include_dashboard=False,
        logging_level=logging.ERROR,
        # Not one idle worker process per logical CPU at the start: the commands' actors
        # belong to other jobs and can't use them.
        _system_config={"prestart_worker_first_driver": False},
    )
    try:
        yield str(ray.get_runtime_context().gcs_address)
    finally:
        ray.shutdown()
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.fixture(scope="module", autouse=True)
def jobs(
    request: pytest.FixtureRequest, shared_ray: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Jobs]:
    """The selected steps' commands, started as the module starts."""
    work = tmp_path_factory.mktemp("readme_commands")
    for name in ("examples", "benchmarks"):
        (work / name).symlink_to(ROOT / name, target_is_directory=True)
    (work / "reference-tuned.yaml").write_text(REFERENCE_TUNED_YAML)
    here = Path(__file__).resolve()
    selected = {
        item.callspec.params["step"].id
        for item in request.session.items
        if Path(item.path).resolve() == here
        and getattr(item, "originalname", "") == "test_shell_command"
        and hasattr(item, "callspec")
    }
    for step in [s for s in STEPS if s.id in selected]:
        if any(_RESULTS_FOLDER.match(w) for w in step.words):
            # Selected alone, it still needs the runs that make the folder it names.
            selected |= {s.id for s in _producers(step)}
    steps = [s for s in STEPS if s.id in selected and runs_here(s)]
    running = Jobs(steps, work, shared_ray)
    try:
        yield running
    finally:
        running.close()


def _ci_commands() -> list[list[str]]:
    return [words for chain in _commands(CI_SCRIPT.read_text()) for words in _chain(chain)]


#: pytest's options that change how the suite runs, not what: quiet, pytest-xdist's workers
#: (`-n 2 --dist loadfile`), each with its value, and the report of durations.
_RUN_OPTIONS = {"-q": 0, "-n": 1, "--dist": 1}


def _normal(words: list[str]) -> list[str]:
    """``python -m pip`` is ``pip``; ``-q``, pytest-xdist's options and the venv's name don't
    matter."""
    if words[:3] == ["python", "-m", "pip"]:
        words = ["pip", *words[3:]]
    kept: list[str] = []
    skip = 0
    for word in words:
        if skip:
            skip -= 1
        elif word in _RUN_OPTIONS:
            skip = _RUN_OPTIONS[word]
        elif not word.startswith("--durations="):
            kept.append(word.replace(".venv-ci", ".venv"))
    return kept


def _without_extras(words: list[str]) -> list[str]:
    return [re.sub(r"^\.\[[\w,-]+\]$", ".", w) for w in words]


def check_install(step: Step) -> None:
    """The install commands are the ones CI runs, in its order, from nothing: each equal to a
    command of .ci/run (the main job's `pip install -e .` to CI's with extras, less them)."""
    ci = [_normal(c) for c in _ci_commands()]
    chain = [_normal(c) for c in _chain(step.words)]
    *install, tail = chain
    position = 0
    for command in install:
        matches = [
            i for i in range(position, len(ci)) if command in (ci[i], _without_extras(ci[i]))
        ]
        assert matches, f"{step.id}: `{shlex.join(command)}` is not what .ci/run runs next"
        position = matches[0] + 1
    if tail[0] != "rlconf":
        assert tail in ci[position:], f"{step.id}: .ci/run doesn't run `{shlex.join(tail)}`"
        assert tail in (["python", "-m", "pytest"], ["python", "-m", "pytest", "-m", "slow"]), (
            "only the suite itself (its fast or slow tier) is not run here"
        )


def check_ray_command(step: Step) -> None:
    """``ray start``/``stop``/``get-auth-token`` parse with Ray's own command line (click)."""
    from ray.scripts.scripts import cli

    command = cli.commands[step.words[1]]
    command.make_context(step.words[1], step.words[2:])


_WORKERS_IN_FILE = re.compile(r"^\s*(evaluation_)?num_workers:\s*[1-9]", re.M)
_WORKERS_IN_FLAG = re.compile(r'"(evaluation_)?num_workers":\s*[1-9]')


def step_starts_ray(step: Step) -> bool:
    """Whether the step's command starts Ray actors or Tune trials (a cluster address, a
    sweep, workers in its --config or its -f file): it runs in the slow tier (``-m slow``)."""
    if step.kind == "ray status":
        return True
    if not runs_here(step):
        return False
    words = _chain(step.words)[-1]
    if "--address" in words or _is_sweep(words) or _WORKERS_IN_FLAG.search(step.text):
        return True
    if "-f" in words:
        name = words[words.index("-f") + 1]
        text = REFERENCE_TUNED_YAML if name == "reference-tuned.yaml" else None
        if text is None and (ROOT / name).is_file():
            text = (ROOT / name).read_text()
        return text is not None and bool(_WORKERS_IN_FILE.search(text))
    return False


@pytest.mark.parametrize(
    "step",
    [pytest.param(s, marks=pytest.mark.slow) if step_starts_ray(s) else s for s in STEPS],
    ids=[s.id for s in STEPS],
)
def test_shell_command(step: Step, jobs: Jobs) -> None:
    assert step.kind, f"README command with no rule in {__name__}: {step.text}"
    if step.kind == "export":
        assert all(re.fullmatch(r"[A-Z_]+=\S+", w) for w in step.words[1:]), step.text
        return
    if step.kind == "ray parse":
        check_ray_command(step)
        return
    if step.kind == "example":
        assert (ROOT / step.words[1]) in EXAMPLES, "tests/test_examples.py runs every example"
        return
    if step.kind == "suite":
        # A tier of the suite itself: not run here, but what .ci/run runs.
        assert _normal(step.words) in [_normal(c) for c in _ci_commands()], step.text
        return
    if step.kind == "install":
        check_install(step)
    if not runs_here(step):
        return
    job = jobs.jobs[step.id]
    done = job.future.result(timeout=COMMAND_TIMEOUT_S * 2)
    output = (
        f"$ {shlex.join(done.args)}  (exit code {done.returncode} after {job.seconds:.1f} s)\n"
        f"{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    )
    assert done.returncode == 0, output
    out = _option(job.argv, "--out")
    if out is not None:
        assert (jobs.work / job.argv[out + 1]).is_file(), output
