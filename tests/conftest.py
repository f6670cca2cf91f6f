"""Results directories of the tests' runs go to a temporary folder, not ~/rlconf_results."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest

# Each of pytest-xdist's workers (one per core) runs torch on one thread: where
# num_cpus_for_driver is not set, the learner gives a large network every core, and two workers
# doing so would run four busy threads on two cores. A test of the thread policy unsets it.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")

# Ray workers of the tests' sessions import test modules (``tests.envs``): the repository root
# is on the path of every process started from here. Through the environment rather than a
# ``runtime_env`` of each ``ray.init``: a runtime env costs every worker Ray starts for it a
# second or more, and it cannot take Ray's prestarted workers.
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in os.environ.get("PYTHONPATH", "").split(os.pathsep):
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (_ROOT, os.environ.get("PYTHONPATH")) if p
    )

#: The longest modules of each tier, longest first (their time in CI's --durations).
#: pytest-xdist's ``--dist loadfile`` hands whole modules to the workers in collection order
#: (with the reordering by test count turned off in ``pytest_configure``): starting the long
#: ones first keeps one worker from running a long module alone at the end.
LONGEST_FIRST = (
    # the slow tier (-m slow)
    "test_examples.py",
    "test_rllib_new_stack_examples.py",
    "test_learning_continuous.py",
    "test_cluster.py",
    "test_readme_blocks.py",
    "test_sweep_run.py",
    "test_memory_learning.py",
    "test_schedulers.py",
    "test_parallel_evaluation.py",
    "test_remote_workers.py",
    "test_learning.py",
    "test_async_learning.py",
    "test_dqn_integration.py",
    "test_interrupted_run.py",
    "test_tune.py",
    "test_custom_algorithm.py",
    "test_multi_agent_ray.py",
    "test_rllib_real_workload_files.py",
    "test_learner_workers.py",
    "test_gpu_sharing.py",
    "test_impala_integration.py",
    "test_serving_example.py",
    "test_multi_agent_learning.py",
    # the fast tier (test_examples.py's fast examples and test_readme_blocks.py run first there)
    "test_editor_completion.py",
    "test_typing.py",
    "test_multi_agent_examples.py",
    "test_cli.py",
    "test_ddpg.py",
    "test_multi_agent_api.py",
    "test_record_env.py",
    "test_experiment_files.py",
    "test_rllib_tuned_files.py",
    "test_every_setting.py",
)


def pytest_configure(config: pytest.Config) -> None:
    """Keep the collection order for ``--dist loadfile``: pytest-xdist (3.6 and newer) by
    default hands out the modules with the most tests first, which put a 3-test module of
    7 minutes last, run alone by one worker while the other idled."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest modules first (a stable sort: each module's tests keep their order)."""
    rank = {name: index for index, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


#: runtime.results.result_logger.RESULTS_ROOT_ENV (not imported: conftest stays free of torch
#: and ray)
RESULTS_ROOT_ENV = "RLCONF_RESULTS_DIR"


@pytest.fixture(scope="session", autouse=True)
def results_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = str(tmp_path_factory.mktemp("rlconf_results"))
    previous = os.environ.get(RESULTS_ROOT_ENV)
    os.environ[RESULTS_ROOT_ENV] = root
    yield root
    if previous is None:
        os.environ.pop(RESULTS_ROOT_ENV, None)
    else:
        os.environ[RESULTS_ROOT_ENV] = previous


def _shutdown_shared_ray() -> None:
    """Shut down the Ray session ``tests.ray_session.local_ray`` left up for the next module
    (looked up, not imported: conftest stays free of torch and ray)."""
    sessions = sys.modules.get("tests.ray_session")
    if sessions is not None:
        sessions.shutdown_shared()


@pytest.fixture(scope="module", autouse=True)
def shared_ray_only_for_its_modules(request: pytest.FixtureRequest) -> None:
    """A module that does not start Ray through ``local_ray`` never meets the session an
    earlier module left up for the next one (it would find Ray running, with 2 CPUs)."""
    if "local_ray" not in vars(request.module):
        _shutdown_shared_ray()


@pytest.fixture(scope="session", autouse=True)
def no_shared_ray_left() -> Iterator[None]:
    yield
    _shutdown_shared_ray()
