"""Which languages and frameworks a workspace uses, from its files and manifests.

Manifests decide (pyproject.toml, requirements*.txt, package.json, go.mod, pom.xml,
build.gradle, *.csproj...); without one, a language counts when at least a quarter of the
workspace's source files are written in it. Frameworks come from a manifest's
dependencies (``django``, ``react``, ``Microsoft.AspNetCore.*``) or a telling file
(``manage.py``). Files are read through the one view (``containment.read_bytes``) and a
secret file is never read. Each finding keeps its evidence, shown with the prompt's parts.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from sessions_app.containment import Refused, is_secret_file, read_bytes

MAX_MANIFEST_BYTES = 256 * 1024
MAX_DEPTH = 2  # manifests at the root or one or two directories down (monorepos)
MAX_LAYERS = 3
SOURCE_SHARE = 0.25
EXTENSIONS = {
    ".py": "python",
    ".js": "javascript",
    ".jsx": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".go": "go",
    ".java": "java",
    ".cs": "csharp",
}
PY_MANIFESTS = re.compile(
    r"(^|/)(pyproject\.toml|setup\.py|setup\.cfg|Pipfile|requirements[-\w]*\.txt)$"
)
DJANGO_DEP = re.compile(r"^\s*[\"']?django\b(?![-_])", re.I | re.M)
ASPNET = re.compile(r"Sdk=\"Microsoft\.NET\.Sdk\.Web\"|Include=\"Microsoft\.AspNetCore\.", re.I)


@dataclass
class ProjectProfile:
    """Languages and frameworks, most used first, each with why it was found."""

    languages: list[str] = field(default_factory=list)
    frameworks: list[str] = field(default_factory=list)
    evidence: dict[str, str] = field(default_factory=dict)

    def add(self, kind: str, name: str, why: str) -> None:
        names = self.languages if kind == "language" else self.frameworks
        if name not in names:
            names.append(name)
            self.evidence[name] = why


def _read(root: Path, rel: str) -> str:
    if is_secret_file(rel):
        return ""
    try:
        return read_bytes(root, rel, MAX_MANIFEST_BYTES, truncate=True).decode("utf-8", "replace")
    except (Refused, OSError):
        return ""


def _package_deps(text: str) -> set[str]:
    try:
        data = json.loads(text)
    except ValueError:
        return set()
    if not isinstance(data, dict):
        return set()
    deps: set[str] = set()
    for key in ("dependencies", "devDependencies", "peerDependencies"):
        section = data.get(key)
        if isinstance(section, dict):
            deps.update(str(k) for k in section)
    return deps


def detect_project(root: Path, files: list[str]) -> ProjectProfile:
    """The workspace's languages and frameworks; ``files`` is its listing (relative)."""
    found: list[tuple[str, str, str]] = []  # (kind, name, why), in the order found
    manifests = [f for f in files if f.count("/") <= MAX_DEPTH]
    for rel in manifests:
        name = PurePosixPath(rel).name
        if PY_MANIFESTS.search(rel):
            found.append(("language", "python", rel))
            if DJANGO_DEP.search(_read(root, rel)):
                found.append(("framework", "django", f"django in {rel}"))
        elif name == "manage.py" and "django" in _read(root, rel).lower():
            found += [("language", "python", rel), ("framework", "django", rel)]
        elif name == "package.json":
            deps = _package_deps(_read(root, rel))
            ts = "typescript" in deps or any(f.endswith(("tsconfig.json",)) for f in manifests)
            found.append(("language", "typescript" if ts else "javascript", rel))
            if "react" in deps:
                found.append(("framework", "react", f"react in {rel}"))
        elif name == "tsconfig.json":
            found.append(("language", "typescript", rel))
        elif name == "go.mod":
            found.append(("language", "go", rel))
        elif name in ("pom.xml", "build.gradle", "build.gradle.kts"):
            found.append(("language", "java", rel))
        elif name.endswith(".csproj"):
            found.append(("language", "csharp", rel))
            if ASPNET.search(_read(root, rel)):
                found.append(("framework", "aspnetcore", f"ASP.NET Core in {rel}"))
    counts = Counter(
        EXTENSIONS[s] for f in files if (s := PurePosixPath(f).suffix.lower()) in EXTENSIONS
    )
    total = sum(counts.values())
    for language, count in counts.most_common():
        if count / total >= SOURCE_SHARE:
            found.append(("language", language, f"{count} of {total} source files"))
    return _ranked(found, counts)


def _ranked(found: list[tuple[str, str, str]], counts: Counter[str]) -> ProjectProfile:
    """Languages by how many source files use them (manifest order breaks ties)."""
    first = {name: i for i, (_, name, _) in reversed(list(enumerate(found)))}
    profile = ProjectProfile()
    for kind, name, why in sorted(found, key=lambda f: (-counts[f[1]], first[f[1]])):
        profile.add(kind, name, why)
    profile.languages = profile.languages[:MAX_LAYERS]
    profile.frameworks = profile.frameworks[:MAX_LAYERS]
    return profile
