"""Shared helpers for the hub, catalogue and Models-dialog tests (no network: everything is local).
Their fixtures (hub_env, hub_server, tiny_catalogue) are in tests/conftest.py.

* :class:`HubServer` — an HTTP server on 127.0.0.1 serving files the way the
  Hugging Face Hub's file endpoints do: ``HEAD``/``GET /{repo}/resolve/{revision}/{filename}``
  with ``ETag`` (the content's sha256, as for LFS files), ``X-Repo-Commit``,
  ``Content-Length`` and ``Range`` support. Faults can be injected per file:
  ``drop_once`` (the first GET closes the connection half-way), ``truncate``
  (GET sends fewer bytes than HEAD announced), ``corrupt`` (same length, other bytes),
  ``drop_always`` (every GET closes the connection before the body), ``stall`` (GET sends half
  the body, then nothing until the server stops), ``stall_headers`` (GET never answers),
  ``drip`` (GET sends 64 bytes every 50 ms), ``redirect_loop`` (HEAD and GET redirect to themselves),
  ``redirect_loop_get`` (only GET does).
  Hostile headers: ``headers[(repo, filename)]`` replaces headers of every answer for that file;
  ``later_head_headers[(repo, filename)]`` only those of its second and later HEAD.
* tiny checkpoints in the official LlamaGen layouts (``torch.save({"model": sd})``) and a
  tiny T5 encoder + word-level tokenizer saved with ``save_pretrained``;
* catalogue entries for them (registered only inside tests).
"""

from __future__ import annotations

import hashlib
import io
import re
import tempfile
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import torch

C2I_REPO = "test-org/tiny-llamagen"
T2I_REPO = "test-org/tiny-llamagen-t2i"
T5_REPO = "test-org/tiny-t5"
GRID = 4
VOCAB = 32
CAPTION_LEN = 6
T5_DIM = 16


# --------------------------------------------------------------------------- the server


class HubServer:
    def __init__(self):
        self.files = {}  # (repo, filename) -> bytes
        self.faults = {}  # (repo, filename) -> fault name
        self.commits = {}  # repo -> 40-hex commit
        self.log = []  # (method, path, range header)
        self.headers = {}  # (repo, filename) -> {header: value} sent instead
        self.later_head_headers = {}  # (repo, filename) -> {header: value} from the second HEAD on
        self.release = threading.Event()  # set at stop(): stalled answers end
        self._heads = {}
        self._dropped = set()
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):  # quiet
                pass

            def do_HEAD(self):
                self._serve(head=True)

            def do_GET(self):
                self._serve(head=False)

            def _serve(self, head):
                path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
                rng = self.headers.get("Range")
                with server._lock:
                    server.log.append((self.command, path, rng))
                m = re.fullmatch(r"/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path)
                key = (m.group(1), m.group(3)) if m else None
                if key is None or key not in server.files:
                    body = b'{"error": "Entry not found"}'
                    self.send_response(404)
                    self.send_header("X-Error-Code", "EntryNotFound")
                    self.send_header("X-Error-Message", "Entry not found")
                    if m and m.group(1) in server.commits:
                        self.send_header("X-Repo-Commit", server.commits[m.group(1)])
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    if not head:
                        self.wfile.write(body)
                    return
                data = server.files[key]
                fault = server.faults.get(key)
                size = len(data)
                common = {"ETag": f'"{hashlib.sha256(data).hexdigest()}"', "X-Repo-Commit": server.commits[key[0]],
                          "Accept-Ranges": "bytes", "Content-Type": "application/octet-stream"}
                common.update(server.headers.get(key, {}))
                if head:
                    with server._lock:
                        server._heads[key] = server._heads.get(key, 0) + 1
                        if server._heads[key] > 1:
                            common.update(server.later_head_headers.get(key, {}))
                if fault == "redirect_loop" or (fault == "redirect_loop_get" and not head):
                    self.send_response(302)
                    self.send_header("Location", path if head else server.url + path)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if fault == "stall_headers" and not head:
                    server.release.wait(60)
                    self.close_connection = True
                    return
                if head:
                    self.send_response(200)
                    for k, v in common.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(size))
                    self.end_headers()
                    return
                if fault == "corrupt":
                    data = bytearray(data)
                    mid = len(data) // 2
                    data[mid : mid + 16] = bytes(b ^ 0xFF for b in data[mid : mid + 16])
                    data = bytes(data)
                if fault == "truncate":
                    data = data[: max(1, size - 100)]
                start = 0
                if rng:
                    start = int(re.fullmatch(r"bytes=(\d+)-\d*", rng).group(1))
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{size - 1}/{size}")
                else:
                    self.send_response(200)
                for k, v in common.items():
                    self.send_header(k, v)
                body = data[start:]
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if fault == "drop_always":
                    self.wfile.flush()
                    self.close_connection = True
                    return
                if fault == "stall":
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    server.release.wait(60)
                    self.close_connection = True
                    return
                if fault == "drip":
                    for i in range(0, len(body), 64):
                        if server.release.wait(0.05):
                            break
                        try:
                            self.wfile.write(body[i : i + 64])
                            self.wfile.flush()
                        except OSError:
                            break
                    self.close_connection = True
                    return
                if fault == "drop_once" and key not in server._dropped and not rng:
                    server._dropped.add(key)
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    import socket

                    try:
                        self.connection.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                    return
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.handle_error = lambda request, client_address: None  # a client that hung up: not news
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def add(self, repo: str, filename: str, data: bytes, fault=None):
        self.files[(repo, filename)] = data
        self.commits.setdefault(repo, hashlib.sha1(repo.encode()).hexdigest())
        if fault:
            self.faults[(repo, filename)] = fault

    def gets(self, filename=None):
        return [r for r in self.log if r[0] == "GET" and (filename is None or r[1].endswith("/" + filename))]

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def free_port() -> int:
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# --------------------------------------------------------------------------- tiny checkpoints


def _pt_bytes(obj) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def tiny_model_args(kind: str) -> dict:
    args = dict(dim=32, n_layer=2, n_head=4, multiple_of=16, vocab_size=VOCAB, block_size=GRID * GRID,
                model_type=kind)
    if kind == "c2i":
        args.update(num_classes=1000, cls_token_num=1)
    else:
        args.update(cls_token_num=CAPTION_LEN, caption_dim=T5_DIM)
    return args


def tiny_gpt_bytes(kind: str, seed: int = 0) -> bytes:
    from lantern_studio.engine.model import ModelArgs, Transformer

    from .tiny import randomise

    torch.manual_seed(seed)
    m = randomise(Transformer(ModelArgs(**tiny_model_args(kind))))
    return _pt_bytes({"model": m.state_dict()})


def tiny_vq_bytes(seed: int = 0) -> bytes:
    from lantern_studio.engine.tokenizer import VQArgs, VQModel

    torch.manual_seed(seed)
    args = VQArgs(codebook_size=VOCAB, codebook_embed_dim=4, encoder_ch_mult=[1, 1, 1], decoder_ch_mult=[1, 1, 1],
                  z_channels=8, ch=16, num_res_blocks=1, norm_groups=16)
    return _pt_bytes({"model": VQModel(args).state_dict()})


def tiny_t5_files(seed: int = 0) -> dict:
    """A tiny T5 encoder + word-level tokenizer, as save_pretrained writes them: {filename: bytes}."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast, T5Config, T5EncoderModel

    words = ("a an the of on in with and photo cat dog red blue green heart car house tree sky "
             "sea golden retriever sitting big small painting").split()
    vocab = {"<pad>": 0, "</s>": 1, "<unk>": 2}
    for w in words:
        vocab.setdefault(w, len(vocab))
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.normalizer = normalizers.Lowercase()
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    tk.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", eos_token="</s>", unk_token="<unk>")
    cfg = T5Config(vocab_size=len(vocab), d_model=T5_DIM, d_kv=8, d_ff=32, num_layers=1, num_heads=2,
                   feed_forward_proj="gated-gelu", decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    torch.manual_seed(seed)
    model = T5EncoderModel(cfg)
    with tempfile.TemporaryDirectory() as d:
        model.save_pretrained(d)
        fast.save_pretrained(d)
        return {p.name: p.read_bytes() for p in sorted(Path(d).iterdir()) if p.is_file()}


_BUILT = {}


def tiny_files() -> dict:
    """{(repo, filename): bytes} for both tiny models (built once per session)."""
    if not _BUILT:
        _BUILT[(C2I_REPO, "c2i_tiny.pt")] = tiny_gpt_bytes("c2i")
        _BUILT[(C2I_REPO, "vq_tiny.pt")] = tiny_vq_bytes()
        _BUILT[(T2I_REPO, "t2i_tiny.pt")] = tiny_gpt_bytes("t2i", seed=1)
        _BUILT[(T2I_REPO, "vq_tiny.pt")] = tiny_vq_bytes(seed=1)
        for name, data in tiny_t5_files().items():
            _BUILT[(T5_REPO, name)] = data
    return dict(_BUILT)


def tiny_entries(files: dict):
    """Catalogue entries for the tiny c2i and t2i models, sizes and sha256 pinned."""
    from lantern_studio.engine.settings import GenerationSettings
    from lantern_studio.models.catalogue import Entry, TextEncoderSpec
    from lantern_studio.models.hub import HubFile

    def hf(repo, name, role):
        data = files[(repo, name)]
        return HubFile(repo, name, size=len(data), role=role, size_exact=True, sha256=hashlib.sha256(data).hexdigest())

    defaults = GenerationSettings(cfg_scale=2.0, top_k=0, temperature=1.0, drafter="none")
    c2i = Entry(name="tiny-c2i", title="tiny class→image (test)", kind="c2i",
                gpt=hf(C2I_REPO, "c2i_tiny.pt", "gpt"), vq=hf(C2I_REPO, "vq_tiny.pt", "vq"),
                model_args=tiny_model_args("c2i"), image_size=GRID * 4, downsample=4, defaults=defaults,
                params=40_000, vq_params=20_000, licence="test only")
    t5 = TextEncoderSpec(T5_REPO, tuple(hf(T5_REPO, n, "text-encoder") for (r, n) in files if r == T5_REPO),
                         length=CAPTION_LEN, dim=T5_DIM, params=2_000)
    t2i = Entry(name="tiny-t2i", title="tiny text→image (test)", kind="t2i",
                gpt=hf(T2I_REPO, "t2i_tiny.pt", "gpt"), vq=hf(T2I_REPO, "vq_tiny.pt", "vq"),
                model_args=tiny_model_args("t2i"), image_size=GRID * 4, downsample=4, defaults=defaults,
                params=40_000, vq_params=20_000, licence="test only", text_encoder=t5)
    return c2i, t2i


def go_offline(monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)


def go_online(monkeypatch):
    """Undo :func:`go_offline` inside a test (the environment variable and huggingface_hub's copy of it)."""
    from huggingface_hub import constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
