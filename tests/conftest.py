"""Results directories of the tests' runs go to a temporary folder, not ~/rlconf_results."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

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
