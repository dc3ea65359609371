from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np
import pytest
from PIL import Image
from pytest_django.fixtures import Settings

from apps.ingest.enrich import CLIP, TEXT, ModelSet, images_describe, models_check, units_embed
from apps.ingest.graph_build import Unit
from apps.ingest.types import ParsedImage
from apps.models.interfaces import ImageDescription, Vectors
from apps.vectors.errors import IndexMismatch


class FakeText:
    def __init__(self, name: str = "all-MiniLM-L6-v2", dim: int = 384) -> None:
        self.name, self.dim = name, dim

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        vectors = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            vectors[row, len(text) % self.dim] = 1.0
        return vectors

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        return self.embed_documents(texts)


class FakeClip:
    name, dim = "ragkg-tiny-clip", 32

    def embed_images(self, images: Sequence[Image.Image]) -> Vectors:
        return np.eye(self.dim, dtype=np.float32)[[image.width % self.dim for image in images]]

    def embed_texts(self, texts: Sequence[str]) -> Vectors:
        return np.zeros((len(texts), self.dim), dtype=np.float32)


class FakeTagger:
    name = "fake-tagger"

    def describe(self, images: Sequence[Image.Image]) -> list[ImageDescription]:
        return [ImageDescription((("tabby cat", 0.9),), "tabby cat: a cat", f"{image.width} px") for image in images]


def png(width: int) -> ParsedImage:
    data = io.BytesIO()
    Image.new("RGB", (width, 4), "red").save(data, format="PNG")
    return ParsedImage(name=f"{width}.png", data=data.getvalue(), format="PNG", width=width, height=4)


def test_image_rows_get_labels_scores_ocr_text_and_text() -> None:
    rows: list[dict[str, object]] = [{"id": "a"}, {"id": "b"}]
    images_describe(tagger=FakeTagger(), rows=rows, images=[png(5), png(7)])
    assert rows[1] == {
        "id": "b",
        "labels": ["tabby cat"],
        "label_scores": [0.9],
        "ocr_text": "7 px",
        "text": "Image of tabby cat. Text in the image: 7 px tabby cat: a cat",
    }


def test_units_embed_keeps_each_document_s_vectors_with_its_units() -> None:
    models = ModelSet(text=FakeText(), tagger=FakeTagger(), clip=FakeClip())
    first = [Unit("Chunk", "c1", "one"), Unit("Row", "r1", "three")]
    second = [Unit("Chunk", "c2", "sixteen chars!!!")]
    embedded = units_embed(
        models=models,
        collection="demo",
        documents=[(first, [], []), (second, [png(9)], [{"id": "i1"}])],
    )
    assert [item.node_id for item in embedded[0].items[TEXT]] == ["c1", "r1"]
    assert [int(np.argmax(vector)) for vector in embedded[0].vectors[TEXT]] == [3, 5]
    [picture] = embedded[1].items[CLIP]
    assert (picture.node_id, picture.label, picture.collection) == ("i1", "Image", "demo")
    assert int(np.argmax(embedded[1].vectors[CLIP][0])) == 9
    assert embedded[0].items[CLIP] == []


def test_a_model_that_does_not_match_its_space_is_refused(settings: Settings) -> None:
    settings.VECTORS_TEXT_MODEL, settings.VECTORS_TEXT_DIM = "all-MiniLM-L6-v2", 384
    models_check(ModelSet(text=FakeText(), tagger=FakeTagger(), clip=None))
    with pytest.raises(IndexMismatch, match=r"multilingual-e5-small.*vectors rebuild --space text"):
        models_check(ModelSet(text=FakeText("multilingual-e5-small"), tagger=FakeTagger(), clip=None))
    with pytest.raises(IndexMismatch, match="1024-d"):
        models_check(ModelSet(text=FakeText(dim=1024), tagger=FakeTagger(), clip=None))


def test_a_multilingual_collections_units_go_to_the_mtext_space_with_its_embedder(settings: Settings) -> None:
    settings.VECTORS_MTEXT_MODEL, settings.VECTORS_MTEXT_DIM = "multilingual-e5-small", 384
    loads: list[str] = []

    def multilingual() -> FakeText:
        loads.append("e5")
        return FakeText("multilingual-e5-small")

    models = ModelSet(text=FakeText(dim=8), tagger=FakeTagger(), clip=None, mtext=multilingual)
    [embedded] = units_embed(
        models=models, collection="zh-docs", documents=[([Unit("Chunk", "c1", "四个字符")], [], [])], space="mtext"
    )
    assert embedded.items[TEXT] == [] and [item.node_id for item in embedded.items["mtext"]] == ["c1"]
    assert embedded.vectors["mtext"][0].shape == (384,) and loads == ["e5"]
    with pytest.raises(IndexMismatch, match="no embedder for the mtext space"):
        ModelSet(text=FakeText(), tagger=FakeTagger(), clip=None).text_for("mtext")
    wrong = ModelSet(text=FakeText(), tagger=FakeTagger(), clip=None, mtext=lambda: FakeText("all-MiniLM-L6-v2"))
    with pytest.raises(IndexMismatch, match="the mtext space holds multilingual-e5-small"):
        wrong.text_for("mtext")
