import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ragkg.env import (
    EnvError,
    dotenv_load,
    dotenv_parse,
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_list,
    env_path,
    env_str,
    env_url,
)

BASE_DIR = Path(__file__).resolve().parents[2]


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


def test_dotenv_parse_values_are_verbatim() -> None:
    pairs = dotenv_parse('Q="x y"\nS=  x \nD=$HOME\nE=a=b\nN=\nC=x # not a comment\nR=x\r\n')
    assert pairs == [
        ("Q", '"x y"'),
        ("S", "  x "),
        ("D", "$HOME"),
        ("E", "a=b"),
        ("N", ""),
        ("C", "x # not a comment"),
        ("R", "x\r"),
    ]


def test_dotenv_parse_skips_blank_and_comment_lines_only() -> None:
    assert dotenv_parse("\n#A=1\n# note\nB=2\n\n") == [("B", "2")]


@pytest.mark.parametrize("line", ["NOEQUALS", " A=1", "  # indented comment", "export A=1", "A B=1", "1A=x", " "])
def test_dotenv_parse_refuses_what_shell_cannot_export(line: str) -> None:
    with pytest.raises(EnvError, match=r"settings\.env:2: .* is not a KEY=VALUE line"):
        dotenv_parse(f"OK=1\n{line}\n", source="settings.env")


def test_dotenv_load_sets_only_unset_variables(tmp_path: Path) -> None:
    path = tmp_path / ".env"
    path.write_text("A=from-file\nB=from-file\nC=from-file\nA=second\n")
    environ = {"B": "from-shell", "C": ""}
    assert dotenv_load(path, environ) == ["A", "RAGKG_HTTPS"]
    assert environ == {"A": "from-file", "B": "from-shell", "C": "", "RAGKG_HTTPS": "0"}


def test_dotenv_load_https_default(tmp_path: Path) -> None:
    """RAGKG_HTTPS=0 unless the environment or .env sets it, and a blank value gets it too (``${RAGKG_HTTPS:-0}``)."""
    (tmp_path / ".env").write_text("RAGKG_HTTPS=1\n")
    cases: list[tuple[Path, dict[str, str], list[str], str]] = [
        (tmp_path / "none.env", {}, ["RAGKG_HTTPS"], "0"),
        (tmp_path / "none.env", {"RAGKG_HTTPS": "1"}, [], "1"),
        (tmp_path / "none.env", {"RAGKG_HTTPS": ""}, ["RAGKG_HTTPS"], "0"),
        (tmp_path / ".env", {}, ["RAGKG_HTTPS"], "1"),
    ]
    for path, environ, added, value in cases:
        assert dotenv_load(path, environ) == added
        assert environ == {"RAGKG_HTTPS": value}


def test_dotenv_load_switched_off(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("A=1\n")
    environ = {"RAGKG_DOTENV": "0"}
    assert dotenv_load(tmp_path / ".env", environ) == []
    assert environ == {"RAGKG_DOTENV": "0"}


def test_dotenv_load_refuses_a_bad_file(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("A=1\nexport B=2\n")
    environ: dict[str, str] = {}
    with pytest.raises(EnvError, match=r"\.env:2: 'export B=2' is not a KEY=VALUE line"):
        dotenv_load(tmp_path / ".env", environ)
    assert environ == {}


def _exported_by_with_env(tmp_path: Path, dotenv: str, environ: dict[str, str]) -> dict[str, str]:
    """The environment scripts/with-env.sh hands its command, run from a copy beside ``dotenv``."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(BASE_DIR / "scripts" / "with-env.sh", tmp_path / "scripts" / "with-env.sh")
    (tmp_path / ".env").write_text(dotenv)
    run = subprocess.run(
        ["bash", "scripts/with-env.sh", "env", "-0"], cwd=tmp_path, env=environ, capture_output=True, check=True
    )
    return dict(item.split("=", 1) for item in os.fsdecode(run.stdout).split("\0") if item)


def test_dotenv_load_matches_with_env_sh(tmp_path: Path) -> None:
    dotenv = '# c\nA=1\n\nB=from-file\nQ="q" \nE=\nD=$HOME x\nA=2\nRAGKG_HTTPS=\nS=a=b\r\n'
    shell = {"PATH": os.environ["PATH"], "B": "from-shell", "E": "from-shell"}
    exported = _exported_by_with_env(tmp_path, dotenv, dict(shell))
    loaded = dict(shell)
    dotenv_load(tmp_path / ".env", loaded)
    bash_own = {"PWD", "OLDPWD", "SHLVL", "_"}
    assert loaded == {key: value for key, value in exported.items() if key not in bash_own}


def test_manage_py_reads_the_dotenv_beside_it(tmp_path: Path) -> None:
    """The README's `python manage.py …` with no make target around it: DJANGO_DEBUG=0 and the secret key
    come from .env, the shell's value wins over the file's, RAGKG_HTTPS gets make's default."""
    shutil.copy(BASE_DIR / "manage.py", tmp_path / "manage.py")
    (tmp_path / ".env").write_text("DJANGO_DEBUG=0\nDJANGO_SECRET_KEY=from-dotenv\nWHO=file\n")
    environ = {key: value for key, value in os.environ.items() if not key.startswith(("DJANGO_", "RAGKG_"))}
    environ.update(PYTHONPATH=str(BASE_DIR), RAGKG_STATE_DIR=str(tmp_path / "var"), WHO="shell")
    show = "import os; from django.conf import settings; print(settings.SECRET_KEY, os.environ['WHO'], settings.HTTPS)"
    run = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", show],
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split()[-3:] == ["from-dotenv", "shell", "False"]
