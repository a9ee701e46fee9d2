"""The Python module's tests run against the vkdml package in PYTHONPATH (<build>/python), on one
Device with the Vulkan validation layer: any message it gives during a test fails that test."""
import os
import sys

import pytest

# The NumPy references the CLI's tests use (test/cli/onnx_reference.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))

import vkdml  # noqa: E402

# VKDML_EXPECT_MODULE_DIR (.ci/packages.sh: the installed packages, the wheel in a venv): the
# tests must run the module installed there, never a build tree's.
_expected = os.environ.get("VKDML_EXPECT_MODULE_DIR")
if _expected and not os.path.realpath(vkdml.__file__).startswith(os.path.realpath(_expected) + "/"):
    raise ImportError(f"vkdml was imported from {vkdml.__file__}, expected under {_expected}")


def pytest_collection_modifyitems(config, items):
    """VKDML_TEST_SHARE=r/n (a rerun of the suite: python.min_limits, test/CMakeLists.txt): the
    tests at positions r, r + n, ... of the collection; the first run took every one."""
    share = os.environ.get("VKDML_TEST_SHARE", "")
    if not share:
        return
    r, _, n = share.partition("/")
    if not (r.isdigit() and n.isdigit() and 0 <= int(r) < int(n) <= 64):
        raise pytest.UsageError(f"VKDML_TEST_SHARE={share}: expected r/n with 0 <= r < n <= 64")
    config.hook.pytest_deselected(items=[i for k, i in enumerate(items) if k % int(n) != int(r)])
    items[:] = items[int(r)::int(n)]


@pytest.fixture(scope="session")
def device():
    d = vkdml.Device(validation=True)
    vkdml._default = d  # device=None runs there too
    return d


@pytest.fixture(autouse=True)
def no_validation_messages(device):
    device.take_validation_messages()
    yield
    messages = device.take_validation_messages()
    assert not messages, "\n".join(messages)
