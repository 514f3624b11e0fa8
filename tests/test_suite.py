"""The suite's own machinery: what `make test` relies on to share costly fixtures."""

import pytest

pytestmark = pytest.mark.xdist_group("test_suite")


def test_an_xdist_group_keeps_its_tests_on_one_worker(request):
    """Under `--dist loadgroup` (make test) a test of an xdist_group carries the group in its id,
    which is how pytest-xdist sends the group to one worker; without it, every worker makes a
    module's fixtures (an export, a package, the documented commands' runs) again."""
    if not getattr(request.config.option, "loadgroup", False):  # set in each pytest-xdist worker
        pytest.skip("not run with pytest-xdist's --dist loadgroup (make test runs it so)")
    assert request.node.nodeid.endswith("@test_suite"), request.node.nodeid
