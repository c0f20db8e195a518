"""Boolean environment switches (CUTE_DSL_KEEP_PTX=1, CUTE_DSL_ENABLE_TVM_FFI=true ...) are read
by one rule, support::env_flag, which Python reaches as _core.env_flag: unset, empty, 0, false,
no and off, in any case and with surrounding white space, are false; anything else is true."""
import pytest

from cutlass import _core

NAME = "CUTE_DSL_TEST_ENV_FLAG_RULE"


@pytest.mark.parametrize("value", ["", "0", "false", "False", "NO", "off", " 0 ", "\tfalse\n", "   "])
def test_false_spellings(monkeypatch, value):
    monkeypatch.setenv(NAME, value)
    assert _core.env_flag(NAME) is False


@pytest.mark.parametrize("value", ["1", "true", "yes", "on", " 1 ", "2", "enable"])
def test_anything_else_is_true(monkeypatch, value):
    monkeypatch.setenv(NAME, value)
    assert _core.env_flag(NAME) is True


def test_unset_is_false(monkeypatch):
    monkeypatch.delenv(NAME, raising=False)
    assert _core.env_flag(NAME) is False
