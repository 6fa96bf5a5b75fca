from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from sessions_app.search import CodeIndex, Embedder, endpoint_embedder, packaged_embedder
from tests.sessions_app.search.fake_embeddings import fake_embeddings

TOPICS = ("payment", "weather", "parser")


def topic_vector(text: str) -> list[float]:
    return [float(topic in text.lower()) for topic in TOPICS] + [0.01]


def test_endpoint_embedder_sends_batches_and_its_vectors_rank_the_search(tmp_path: Path) -> None:
    with fake_embeddings(topic_vector) as server:
        embedder = endpoint_embedder(server.base_url, "nomic-embed-text", api_key="k")
        assert server.requests == []  # making one costs no call
        index = CodeIndex(tmp_path / "index", embedder)
        index.begin(3)
        index.put_many(
            [
                ("billing.py", "def charge():\n    # take the payment\n    pass\n"),
                ("sky.py", "def forecast():\n    # the weather tomorrow\n    pass\n"),
                ("lang.py", "def tokens():\n    # the parser's input\n    pass\n"),
            ]
        )
        index.finish()
        hits = index.search("Weather", mode="embedding", limit=3).hits
    assert (hits[0].path, hits[0].why) == ("sky.py", "words: weather; meaning 1.00")
    assert embedder.dimensions == 4 and embedder.name == "endpoint:nomic-embed-text"
    assert server.requests[0]["model"] == "nomic-embed-text"
    assert len(server.requests[0]["input"]) == 3  # one batch for the three files
    assert server.requests[-1]["input"] == ["Weather"]


@pytest.fixture(scope="module")
def packaged() -> Embedder:
    if importlib.util.find_spec("all_minilm_l6_v2") is None:
        pytest.skip("the packaged model is not installed (make install installs it, --no-deps)")
    return packaged_embedder()


def test_packaged_embedder_is_offline_minilm_with_unit_vectors(packaged: Embedder) -> None:
    vectors = np.asarray(packaged.embed(["retry with backoff", "the cat sat on the mat"]))
    assert vectors.shape == (2, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_packaged_embedder_finds_code_by_what_it_does(tmp_path: Path, packaged: Embedder) -> None:
    index = CodeIndex(tmp_path / "index", packaged)
    files = {
        "net/client.py": "def call_with_backoff(fn, attempts):\n    for n in range(attempts):\n"
        "        try:\n            return fn()\n        except ConnectionError:\n"
        "            time.sleep(2 ** n)\n",
        "ui/colors.py": "def hex_to_rgb(value):\n    value = value.lstrip('#')\n"
        "    return tuple(int(value[i:i + 2], 16) for i in (0, 2, 4))\n",
        "db/models.py": "class Invoice(Model):\n    total = DecimalField()\n    paid = BooleanField()\n",
    }
    index.begin(len(files))
    index.put_many(files.items())
    index.finish()
    hits = index.search("where do we retry after a network failure", mode="embedding").hits
    assert hits[0].path == "net/client.py" and hits[0].why.startswith("meaning 0.")


def test_the_packaged_default_is_the_whole_model_for_a_workspace_of_its_size(
    tmp_path: Path,
) -> None:
    from sessions_app.search.index import WHOLE_MODEL_MAX_FILES

    small = CodeIndex(tmp_path / "small")
    small.begin(WHOLE_MODEL_MAX_FILES)
    assert small.embedder.name == "all-MiniLM-L6-v2"
    large = CodeIndex(tmp_path / "large")
    large.begin(WHOLE_MODEL_MAX_FILES + 1)
    assert large.embedder.name == "all-MiniLM-L6-v2-static"
    assert CodeIndex(tmp_path / "large").embedder.name == "all-MiniLM-L6-v2-static"  # a reader


def test_a_hybrid_search_answers_by_words_when_the_endpoint_is_down(tmp_path: Path) -> None:
    with fake_embeddings(topic_vector) as server:
        embedder = endpoint_embedder(server.base_url, "nomic-embed-text")
        index = CodeIndex(tmp_path / "index", embedder)
        index.begin(1)
        index.put("sky.py", "def forecast():\n    # the weather tomorrow\n    pass\n")
        index.finish()
    hits = index.search("weather forecast").hits  # the server is gone now
    assert [(hit.path, hit.why) for hit in hits] == [("sky.py", "words: weather, forecast")]
    with pytest.raises(Exception):  # noqa: B017 (whatever the client raises)
        index.search("weather", mode="embedding")
