import pytest


def pytest_addoption(parser):
    parser.addoption("--regen-golden", action="store_true", default=False,
                     help="rewrite golden files under tests/golden/ (review the diff)")


@pytest.fixture
def regen_golden(request):
    return request.config.getoption("--regen-golden")
