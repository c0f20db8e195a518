"""CUTE_DSL_LOG_LEVEL takes Python logging's numbers and level names (any case); anything else
warns once and keeps the default level, 10 (DEBUG)."""
import pytest

from cutlass import _core
from test_compile_cache import run

DEBUG, INFO, WARNING, ERROR, CRITICAL = 10, 20, 30, 40, 50
LEVELS = (DEBUG, INFO, WARNING, ERROR, CRITICAL)


@pytest.fixture
def log_env(monkeypatch):
    """Sets the log switches for one test and re-reads them; restores the process's own after."""
    monkeypatch.setenv("CUTE_DSL_LOG_TO_CONSOLE", "1")
    monkeypatch.delenv("CUTE_DSL_LOG_TO_FILE", raising=False)

    def set_level(value):
        monkeypatch.setenv("CUTE_DSL_LOG_LEVEL", value)
        _core.reload_log_configuration()
        return [level for level in LEVELS if _core.log_enabled(level)]

    yield set_level
    monkeypatch.undo()
    _core.reload_log_configuration()


def at_or_above(threshold):
    return [level for level in LEVELS if level >= threshold]


@pytest.mark.parametrize("value, threshold", [("10", DEBUG), ("20", INFO), ("30", WARNING), ("40", ERROR),
                                              ("50", CRITICAL), ("35", 35), (" 20 ", INFO)])
def test_numbers_are_thresholds(log_env, value, threshold, capfd):
    assert log_env(value) == at_or_above(threshold)
    assert capfd.readouterr().err == ""


def test_zero_turns_logging_off(log_env):
    assert log_env("0") == []


@pytest.mark.parametrize("value, threshold", [
    ("DEBUG", DEBUG), ("debug", DEBUG), ("Info", INFO), ("INFO", INFO), ("WARNING", WARNING), ("warn", WARNING),
    ("Warn", WARNING), ("error", ERROR), ("ERROR", ERROR), ("critical", CRITICAL), ("CRITICAL", CRITICAL)])
def test_level_names_in_any_case(log_env, value, threshold, capfd):
    assert log_env(value) == at_or_above(threshold)
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize("value", ["verbose", "10abc", "INFOO", "2.5"])
def test_anything_else_warns_once_and_keeps_the_default(log_env, value, capfd):
    assert log_env(value) == at_or_above(DEBUG)
    expected = (f"opencute: CUTE_DSL_LOG_LEVEL={value} is not a log level; use a number (10 DEBUG, 20 INFO, "
                "30 WARNING, 40 ERROR, 50 CRITICAL, 0 off) or one of those names; logging at the default level, "
                "10 (DEBUG)\n")
    assert capfd.readouterr().err == expected
    assert log_env(value) == at_or_above(DEBUG)
    assert capfd.readouterr().err == ""  # once


def test_empty_is_the_default(log_env, capfd):
    assert log_env("") == at_or_above(DEBUG)
    assert capfd.readouterr().err == ""


def test_debug_by_name_logs_debug_lines(tmp_path):
    # The reported symptom: DEBUG used to read as 0 and turned the log off.
    log = tmp_path / "log.txt"
    run(tmp_path, env={"CUTE_DSL_LOG_TO_FILE": str(log), "CUTE_DSL_LOG_LEVEL": "DEBUG",
                       "CUTE_DSL_DISABLE_FILE_CACHING": "1"})
    assert " - opencute - DEBUG - traced scale" in log.read_text()
    run(tmp_path, env={"CUTE_DSL_LOG_TO_FILE": str(log), "CUTE_DSL_LOG_LEVEL": "info",
                       "CUTE_DSL_DISABLE_FILE_CACHING": "1"})
    assert log.read_text().count(" - DEBUG - traced scale") == 1  # the second run logged no debug line
