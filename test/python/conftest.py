"""The Python module's tests run against the vkdml package in PYTHONPATH (<build>/python), on one
Device with the Vulkan validation layer: any message it gives during a test fails that test."""
import os
import sys

import pytest

# The NumPy references the CLI's tests use (test/cli/onnx_reference.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))

import vkdml  # noqa: E402


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
