"""The project's say: languages and frameworks detected from its files, ``.acode/config.yml``
validated by its schema, and the context strategies honouring it; a Coder sees signatures
and a style example, a Reviewer the project's lint rules; a job composes and sends it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from acode.errors import AcodeError
from sessions_app.agent.context import build_context
from sessions_app.agent.project_config import config_schema, project_config_load
from sessions_app.agent.project_detect import detect_project
from sessions_app.agent.selection import candidate_files
from sessions_app.models import JobStatus
from tests.sessions_app.jobkit import run, scripted_model, session_in


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def detect(root: Path) -> Any:
    return detect_project(root, candidate_files(root))


DJANGO_SHOP = {
    "pyproject.toml": "[project]\nname = 'shop'\ndependencies = [\n  \"Django>=5.2\",\n]\n"
    "\n[tool.ruff]\nline-length = 99\n\n[tool.ruff.lint]\nselect = ['E', 'F', 'I']\n"
    "\n[tool.other]\nx = 1\n",
    "manage.py": "import django\n",
    "shop/cart.py": "from shop.pricing import price_of\nfrom .models import Item\n\n"
    "def cart_total(items):\n    return sum(price_of(i) for i in items)\n",
    "shop/pricing.py": "TAX = 0.2\n\n\ndef price_of(item: 'Item') -> float:\n"
    '    """The price of one item, tax included.\n\n    Long text."""\n'
    '    return item.net * (1 + TAX)\n\n\nclass PriceList:\n    """Prices by code."""\n'
    "    def lookup(self, code: str) -> float:\n        return 0.0\n",
    "shop/models.py": 'class Item:\n    """A thing sold."""\n    net: float\n',
    "shop/orders.py": "def order_lines(order):\n    # one line per item\n    return [\n"
    "        line for line in order.lines\n    ]\n",
    "generated/big.py": "SECRET_TABLE = 1\n",
    "docs/notes.md": "Notes.\n",
    ".editorconfig": "root = true\n[*.py]\nindent_size = 4\n",
}


def test_detection_of_languages_and_frameworks(tmp_path: Path) -> None:
    django = detect(write(tmp_path / "d", DJANGO_SHOP))
    assert (django.languages, django.frameworks) == (["python"], ["django"])
    assert django.evidence["django"] in ("manage.py", "django in pyproject.toml")
    react = detect(write(tmp_path / "r", {
        "package.json": json.dumps({"dependencies": {"react": "^19"},
                                    "devDependencies": {"typescript": "^5"}}),
        "src/App.tsx": "export function App() { return null }\n",
    }))  # fmt: skip
    assert (react.languages, react.frameworks) == (["typescript"], ["react"])
    dotnet = detect(write(tmp_path / "c", {
        "Api/Api.csproj": '<Project Sdk="Microsoft.NET.Sdk.Web"></Project>',
        "Api/Program.cs": "var app = WebApplication.Create();\n",
    }))  # fmt: skip
    assert (dotnet.languages, dotnet.frameworks) == (["csharp"], ["aspnetcore"])
    mixed = detect(write(tmp_path / "m", {
        "go.mod": "module example.com/x\n", "main.go": "package main\n", "a.go": "package main\n",
        "b.go": "package main\n", "c/c.go": "package c\n",
        "pom.xml": "<project/>", "scripts/x.js": "1\n",
    }))  # fmt: skip
    assert set(mixed.languages) == {"go", "java"} and "javascript" not in mixed.languages


def test_a_valid_config_is_read(tmp_path: Path) -> None:
    write(tmp_path, {".acode/config.yml": "version: 1\npack: acode-standard\n"
                     "context:\n  max_tokens: 2000\n  exclude_patterns: ['generated/**']\n"
                     "  focus_patterns: ['shop/orders.py']\n"})  # fmt: skip
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("sessions_app.agent.project_config._check_names", lambda config: None)
        config = project_config_load(tmp_path)
    assert config.found and config.pack == "acode-standard"
    assert config.context.max_tokens == 2000
    assert config.context.excluded("generated/big.py") and not config.context.excluded("shop/x.py")
    (tmp_path / "e").mkdir()
    assert project_config_load(tmp_path / "e").found is False


def test_the_published_schema_is_the_one_that_validates() -> None:
    schema = config_schema()
    assert schema["$schema"].endswith("2020-12/schema")
    assert set(schema["properties"]) >= {"pack", "role_models", "context"}
    assert set(schema["properties"]["context"]["properties"]) == {
        "max_tokens", "exclude_patterns", "focus_patterns",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("text", "code", "said"),
    [
        ("context: [unclosed\n", "ACODE-CFG-001", "Not valid YAML"),
        ("context:\n  max_tokens: lots\n", "ACODE-CFG-001", "context/max_tokens: 'lots' is not of type 'integer'"),
        ("colour: blue\n", "ACODE-CFG-001", "Additional properties are not allowed ('colour'"),
    ],
)  # fmt: skip
def test_a_bad_config_is_a_clear_error(tmp_path: Path, text: str, code: str, said: str) -> None:
    write(tmp_path, {".acode/config.yml": text})
    with pytest.raises(AcodeError) as info:
        project_config_load(tmp_path)
    assert info.value.code == code
    assert said in info.value.message
    assert info.value.message.startswith(".acode/config.yml: ")


@pytest.mark.django_db
def test_a_config_naming_what_the_server_lacks_is_a_clear_error(tmp_path: Path) -> None:
    write(tmp_path, {".acode/config.yml": "pack: team-pack\nrole_models:\n  coder: gpt-huge\n"})
    with pytest.raises(AcodeError) as info:
        project_config_load(tmp_path)
    assert info.value.code == "ACODE-CFG-002"
    assert "pack: no prompt pack 'team-pack'" in info.value.message
    assert "role_models/coder: no enabled model endpoint 'gpt-huge'" in info.value.message


def test_context_honours_exclude_focus_and_max_tokens(tmp_path: Path) -> None:
    from sessions_app.agent.project_config import ContextSettings

    root = write(tmp_path, DJANGO_SHOP)
    settings = ContextSettings(max_tokens=1500, exclude_patterns=("generated/**", "docs/**"),
                               focus_patterns=("shop/orders.py",))  # fmt: skip
    bundle = build_context(workspace=root, role_name="Planner", strategy="broad",
                           request="Change the tax in pricing", project=settings)  # fmt: skip
    got = [f.path for f in bundle.files]
    assert got[:3] == ["(request)", "shop/orders.py", "(structure)"]
    assert "generated/big.py" not in got and "SECRET_TABLE" not in bundle.text
    assert "docs/notes.md" not in got
    assert bundle.budget == 1500 and bundle.token_count <= 1500 + 50
    assert "budget 1500 tokens set by the project config" in bundle.notes


def test_coder_context_gains_signatures_and_a_style_example(tmp_path: Path) -> None:
    root = write(tmp_path, DJANGO_SHOP)
    bundle = build_context(workspace=root, role_name="Coder", strategy="focused",
                           request="Round cart_total in shop/cart.py", writes=True)  # fmt: skip
    modes = {f.path: f.mode for f in bundle.files}
    assert modes["shop/cart.py"] == "full"
    assert modes["shop/pricing.py"] == "signatures"
    assert modes["shop/models.py"] == "signatures"
    text = bundle.text
    assert "def price_of(item: 'Item') -> float:  # The price of one item, tax included." in text
    assert "class PriceList:  # Prices by code." in text
    assert "return item.net" not in text  # signatures only, no bodies
    style = next(f.path for f in bundle.files if f.mode == "style")
    assert style.startswith("shop/") and "## Style example: shop/" in text


def test_reviewer_context_gains_the_projects_lint_rules(tmp_path: Path) -> None:
    root = write(tmp_path, DJANGO_SHOP)
    pending = {"shop/cart.py": "--- a/shop/cart.py\n+++ b/shop/cart.py\n@@ -1 +1 @@\n-x\n+y\n"}
    bundle = build_context(workspace=root, role_name="Reviewer", strategy="change_focused",
                           request="Review", pending=pending, reviews=True)  # fmt: skip
    modes = {f.path: f.mode for f in bundle.files}
    assert modes["pyproject.toml (rules)"] == "rules"
    assert modes[".editorconfig (rules)"] == "rules"
    assert "select = ['E', 'F', 'I']" in bundle.text and "[tool.other]" not in bundle.text


@pytest.mark.django_db
def test_a_job_sends_the_layered_prompt_and_the_configured_context(
    user: Any, tmp_path: Path
) -> None:
    root = write(tmp_path / "ws", {**DJANGO_SHOP, ".acode/config.yml":
                 "context:\n  exclude_patterns: ['generated/**']\n"})  # fmt: skip
    scripted_model("planner", [{"content": "1. Change the tax"}])
    job = run(session_in("planner", user, workspace=root, plan=False), "Plan the tax change", user)
    assert job.status == JobStatus.SUCCEEDED, job.error_message
    prompt = job.events.get(kind="prompt_composed").data
    assert prompt["languages"] == ["python"] and prompt["frameworks"] == ["django"]
    assert [p["key"] for p in prompt["parts"]] == [
        "system", "roles/planner", "languages/python", "frameworks/django", "constraints",
    ]  # fmt: skip
    request = job.events.filter(kind="llm_request").order_by("seq").first().data
    system, user_message = request["messages"][0]["content"], request["messages"][1]["content"]
    assert (
        "The workspace uses Python." in system and "The project is a Django application." in system
    )
    assert "SECRET_TABLE" not in user_message and "generated/big.py" not in user_message


@pytest.mark.django_db
def test_a_bad_config_fails_the_job_clearly_and_loses_nothing(user: Any, tmp_path: Path) -> None:
    root = write(
        tmp_path / "ws", {**DJANGO_SHOP, ".acode/config.yml": "context:\n  max_tokens: -1\n"}
    )
    scripted_model("planner", [{"content": "never asked"}])
    session = session_in("planner", user, workspace=root, plan=False)
    job = run(session, "Plan the tax change", user)
    assert job.status == JobStatus.FAILED
    assert job.error_code == "ACODE-CFG-001"
    assert "context/max_tokens: -1 is less than the minimum of 500" in job.error_message
    assert not job.events.filter(kind="llm_request").exists()
    assert (root / "shop/cart.py").read_text() == DJANGO_SHOP["shop/cart.py"]
    session.refresh_from_db()
    assert session.current_role.slug == "planner"


@pytest.mark.django_db
def test_the_model_server_receives_the_layers_and_the_coder_context(
    user: Any, tmp_path: Path
) -> None:
    from roles.models import EndpointKind, ModelEndpoint
    from tests.fake_openai import fake_openai

    config = "role_models:\n  coder: team-coder\n"
    root = write(tmp_path / "ws", {**DJANGO_SHOP, ".acode/config.yml": config})
    with fake_openai(["Done."]) as server:
        ModelEndpoint.objects.create(name="team-coder", kind=EndpointKind.OPENAI,
                                     base_url=server.base_url, model="fake")  # fmt: skip
        job = run(
            session_in("coder", user, workspace=root), "Round cart_total in shop/cart.py", user
        )
    assert job.status == JobStatus.SUCCEEDED, job.error_message
    (body,) = server.requests  # the role has no model of its own: the project's routes it
    system, context = body["messages"][0]["content"], body["messages"][1]["content"]
    assert system.index("You are the Coder agent") < system.index("The workspace uses Python.")
    assert system.index("The workspace uses Python.") < system.index(
        "The project is a Django application."
    )
    assert system.index("The project is a Django application.") < system.index(
        "## Role in force: Coder"
    )
    assert "## Interface: shop/pricing.py (signatures)" in context
    assert "def price_of(item: 'Item') -> float:  # The price of one item, tax included." in context


@pytest.mark.django_db
def test_a_roles_own_model_wins_over_the_project_config(user: Any, tmp_path: Path) -> None:
    from roles.models import EndpointKind, ModelEndpoint

    ModelEndpoint.objects.create(name="team-planner", kind=EndpointKind.SCRIPTED, model="x",
                                 script=[{"content": "not this one"}])  # fmt: skip
    root = write(tmp_path / "ws", {".acode/config.yml": "role_models:\n  planner: team-planner\n"})
    scripted_model("planner", [{"content": "1. The admin's model answered"}])
    job = run(session_in("planner", user, workspace=root, plan=False), "Plan it", user)
    assert job.status == JobStatus.SUCCEEDED, job.error_message
    assert job.events.filter(kind="llm_request").first().data["endpoints"] == ["scripted-planner"]


def test_the_pack_is_the_projects_unless_the_admin_set_one(monkeypatch: pytest.MonkeyPatch) -> None:
    from sessions_app.agent.project_config import ProjectConfig, effective_pack

    monkeypatch.delenv("ACODE_PROMPT_PACK", raising=False)
    assert effective_pack(ProjectConfig()) == "acode-standard"
    assert effective_pack(ProjectConfig(found=True, pack="team-pack")) == "team-pack"
    monkeypatch.setenv("ACODE_PROMPT_PACK", "acode-standard")
    assert effective_pack(ProjectConfig(found=True, pack="team-pack")) == "acode-standard"


@pytest.mark.django_db
def test_the_context_preview_honours_the_config_and_says_when_it_is_bad(
    api: Any, user: Any, tmp_path: Path
) -> None:
    root = write(
        tmp_path / "ws", {**DJANGO_SHOP, ".acode/config.yml": "context:\n  max_tokens: 3000\n"}
    )
    session = session_in("planner", user, workspace=root, plan=False)
    preview = api.get(
        f"/api/sessions/{session.pk}/context/", {"role": "coder", "task": "Fix shop/cart.py"}
    )
    assert preview.status_code == 200
    assert preview.json()["budget"] == 3000
    assert "signatures" in {f["mode"] for f in preview.json()["files"]}
    (root / ".acode/config.yml").write_text("context:\n  focus_patterns: nope\n")
    refused = api.get(f"/api/sessions/{session.pk}/context/")
    assert refused.status_code == 400
    assert refused.json()["code"] == "ACODE-CFG-001"
    assert "context/focus_patterns: 'nope' is not of type 'array'" in refused.json()["message"]


def test_the_readme_example_follows_the_published_schema() -> None:
    import yaml

    from acode.inputs import json_schema_problems

    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    start = readme.index("```yaml\nversion: 1") + len("```yaml\n")
    example = yaml.safe_load(readme[start : readme.index("```", start)])
    assert json_schema_problems(config_schema(), example) == []
    assert set(example["context"]) == {"max_tokens", "exclude_patterns", "focus_patterns"}


def test_an_excluded_files_pending_change_stays_out_of_the_review(tmp_path: Path) -> None:
    from sessions_app.agent.project_config import ContextSettings

    root = write(tmp_path, DJANGO_SHOP)
    pending = {
        "shop/cart.py": "--- a/shop/cart.py\n+++ b/shop/cart.py\n@@ -1 +1 @@\n-x\n+visible change\n",
        "generated/big.py": "--- a/generated/big.py\n+++ b/generated/big.py\n@@ -1 +1 @@\n-a\n+SECRET_TABLE = 2\n",
    }
    bundle = build_context(workspace=root, role_name="Reviewer", strategy="change_focused",
                           request="Review", pending=pending,
                           project=ContextSettings(exclude_patterns=("generated/**",)))  # fmt: skip
    assert "visible change" in bundle.text
    assert "SECRET_TABLE" not in bundle.text and "generated/big.py" not in bundle.text
    assert "1 pending changes excluded by the project config" in bundle.notes


@pytest.mark.parametrize(
    ("files", "target", "related", "signature"),
    [
        (
            {"go.mod": "module example.com/shop\n",
             "cmd/main.go": 'package main\n\nimport (\n\t"fmt"\n\t"example.com/shop/pricing"\n)\n\nfunc main() { fmt.Println(pricing.Of(1)) }\n',
             "pricing/pricing.go": "package pricing\n\n// Of prices one item.\nfunc Of(n int) int {\n\treturn n * 2\n}\n"},
            "cmd/main.go", "pricing/pricing.go", "func Of(n int) int  # Of prices one item.",
        ),
        (
            {"Shop/Services/Pricing.cs": "namespace Shop.Services;\n/// <summary>Prices.</summary>\npublic class Pricing {\n    public int Of(int n) { return n * 2; }\n}\n",
             "Shop/Program.cs": "using System;\nusing Shop.Services;\n\nvar p = new Pricing();\n"},
            "Shop/Program.cs", "Shop/Services/Pricing.cs", "    public int Of(int n)",
        ),
        (
            {"src/cart.ts": "import { price } from './pricing';\nexport const total = (n: number) => price(n);\n",
             "src/pricing.ts": "/** Price of n. */\nexport function price(n: number): number { return n * 2; }\n"},
            "src/cart.ts", "src/pricing.ts", "function price(n: number): number  # Price of n.",
        ),
    ],
)  # fmt: skip
def test_signatures_of_what_a_go_csharp_or_typescript_file_uses(
    tmp_path: Path, files: dict[str, str], target: str, related: str, signature: str
) -> None:
    root = write(tmp_path, files)
    bundle = build_context(workspace=root, role_name="Coder", strategy="focused",
                           request=f"Change {target}", writes=True)  # fmt: skip
    assert {f.path: f.mode for f in bundle.files}[related] == "signatures"
    assert signature in bundle.text
