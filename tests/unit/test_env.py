from pathlib import Path

import pytest

from ragkg.env import EnvError, env_bool, env_choice, env_float, env_int, env_list, env_path, env_str, env_url


def test_defaults_apply_when_unset_or_blank() -> None:
    environ = {"BLANK": "   "}
    assert env_str("MISSING", "d", environ=environ) == "d"
    assert env_str("BLANK", "d", environ=environ) == "d"
    assert env_int("MISSING", 7, environ=environ) == 7
    assert env_bool("BLANK", True, environ=environ) is True
    assert env_list("MISSING", ["a"], environ=environ) == ["a"]


def test_required_string_fails_loudly() -> None:
    with pytest.raises(EnvError, match="SECRET is required"):
        env_str("SECRET", environ={})


@pytest.mark.parametrize(("raw", "expected"), [("1", True), ("TRUE", True), ("on", True), ("0", False), ("no", False)])
def test_bool_values(raw: str, expected: bool) -> None:
    assert env_bool("FLAG", not expected, environ={"FLAG": raw}) is expected


def test_bad_values_name_the_variable_and_value() -> None:
    with pytest.raises(EnvError, match=r"FLAG='maybe' is not a boolean"):
        env_bool("FLAG", False, environ={"FLAG": "maybe"})
    with pytest.raises(EnvError, match=r"PORT='80a' is not an integer"):
        env_int("PORT", 1, environ={"PORT": "80a"})
    with pytest.raises(EnvError, match=r"PORT=70000 is above the maximum 65535"):
        env_int("PORT", 1, maximum=65535, environ={"PORT": "70000"})
    with pytest.raises(EnvError, match=r"N=0 is below the minimum 1"):
        env_int("N", 1, minimum=1, environ={"N": "0"})
    with pytest.raises(EnvError, match=r"T='fast' is not a number"):
        env_float("T", 1.0, environ={"T": "fast"})
    with pytest.raises(EnvError, match=r"P='gpu' is not one of offline, hub"):
        env_choice("P", "offline", ("offline", "hub"), environ={"P": "gpu"})
    with pytest.raises(EnvError, match=r"U='localhost:7687' is not a URL with scheme bolt or neo4j"):
        env_url("U", "bolt://x", ("bolt", "neo4j"), environ={"U": "localhost:7687"})


def test_list_and_path() -> None:
    assert env_list("L", [], environ={"L": " a, ,b ,"}) == ["a", "b"]
    base = Path("/srv/app")
    assert env_path("D", Path("var"), base=base, environ={}) == base / "var"
    assert env_path("D", Path("var"), base=base, environ={"D": "/data"}) == Path("/data")
