import os

# numba.cuda kernels run on numba's CUDA simulator in the tests (this machine has no GPU);
# a run on a real GPU sets NUMBA_ENABLE_CUDASIM=0 before pytest starts
os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import pytest


def pytest_addoption(parser):
    parser.addoption("--regen-golden", action="store_true", default=False,
                     help="rewrite golden files under tests/golden/ (review the diff)")


@pytest.fixture
def regen_golden(request):
    return request.config.getoption("--regen-golden")
