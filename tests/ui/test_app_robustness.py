"""The running app answers odd files, bad parameters and many users; it stays up."""

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tools.corpus import corpus

EXAMPLES = Path(__file__).resolve().parents[2] / "assets" / "examples"


def _client(url):
    from gradio_client import Client

    return Client(url, verbose=False)


def _call(client, path, ratio=0.75, seed=0, pattern="random", model="mae-tiny"):
    from gradio_client import handle_file

    return client.predict(handle_file(str(path)), model, ratio, seed, pattern, api_name="/reconstruct")


def test_corpus_through_the_endpoint(app_url, tmp_path):
    client = _client(app_url)
    for name, data, ok in corpus():
        path = tmp_path / name
        path.write_bytes(data if data else b"\x00")
        if ok:
            out = _call(client, path)
            assert np.asarray(Image.open(out[2])).shape == (224, 224, 3), name
        else:
            with pytest.raises(Exception) as info:
                _call(client, path)
            assert "Traceback" not in str(info.value), name
    # still up and correct afterwards
    out = _call(client, EXAMPLES / "coffee.jpg")
    assert "of 196 tokens" in out[4]


@pytest.mark.parametrize("args", [
    dict(ratio=float("nan")), dict(ratio=-1.0), dict(ratio=0.99), dict(seed=-3), dict(seed=1e30),
    dict(pattern="spiral"), dict(model="../../etc/passwd"), dict(model="https://evil.example/x.pth"),
])
def test_bad_parameters_are_errors_not_crashes(app_url, args):
    client = _client(app_url)
    with pytest.raises(Exception) as info:
        _call(client, EXAMPLES / "chelsea.jpg", **args)
    assert "Traceback" not in str(info.value)
    assert "of 196 tokens" in _call(client, EXAMPLES / "chelsea.jpg")[4]


def test_sixteen_concurrent_clients_get_the_same_answers_as_alone(app_url):
    photos = sorted(EXAMPLES.glob("*.jpg"))
    requests = [(photos[i % len(photos)], round(0.05 * (i % 19), 2), i % 3) for i in range(10)]

    def pixels(out):
        return tuple(np.asarray(Image.open(p)).tobytes() for p in out[:4]) + (out[4],)

    alone = {}
    solo = _client(app_url)
    for req in requests:
        alone[req] = pixels(_call(solo, req[0], ratio=req[1], seed=req[2]))

    def user(k: int) -> list[bool]:
        client = _client(app_url)
        order = requests[k % len(requests):] + requests[: k % len(requests)]
        return [pixels(_call(client, r[0], ratio=r[1], seed=r[2])) == alone[r] for r in order]

    with ThreadPoolExecutor(max_workers=16) as pool:
        results = list(pool.map(user, range(16)))
    assert sum(len(r) for r in results) == 160
    assert all(all(r) for r in results)
