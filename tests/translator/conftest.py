"""Fixtures of the translator's tests."""
import pytest
from warpboard.translator.ir.program import load_program

from support.sass_texts import NVDISASM


@pytest.fixture(scope="module")
def first():
    """The first kernel of the nvdisasm listing in support/sass_texts.py, decoded."""
    return load_program(NVDISASM, "first", "k.sass")
