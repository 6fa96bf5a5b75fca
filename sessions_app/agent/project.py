"""What a job takes from its project: the config file and the detected languages and
frameworks, applied in the documented order (README, Project config)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roles.prompts import ComposedPrompt, compose_prompt
from roles.registry import RoleDef
from sessions_app.agent.project_config import (
    ProjectConfig,
    effective_model,
    effective_pack,
    project_config_load,
)
from sessions_app.agent.project_detect import ProjectProfile, detect_project
from sessions_app.agent.selection import candidate_files


@dataclass(frozen=True)
class JobProject:
    """The project config and profile one job works with, and the prompt they compose."""

    config: ProjectConfig
    profile: ProjectProfile
    prompt: ComposedPrompt

    def model_for(self, role: RoleDef) -> str:
        return effective_model(
            self.config, role_slug=role.slug, role_model=role.spec.preferred_model
        )

    def prompt_event(self) -> dict[str, Any]:
        """The job's PROMPT event: what was composed, from what, and why those layers."""
        prompt = self.prompt
        return {
            "components": prompt.components,
            "fell_back": prompt.fell_back,
            "notes": prompt.notes,
            "pack": prompt.pack,
            "chars": len(prompt.text),
            "tokens": prompt.tokens,
            "parts": [
                {
                    "key": p.key,
                    "layer": p.layer,
                    "origin": p.origin,
                    "tokens": p.tokens,
                    "cut": p.cut,
                }
                for p in prompt.parts
            ],
            "languages": prompt.languages,
            "frameworks": prompt.frameworks,
            "evidence": self.profile.evidence,
            "project_config": self.config.found,
        }


def job_project(role: RoleDef, workspace: Path, git_dir: Path | None) -> JobProject:
    """Load ``.acode/config.yml`` (ACODE-CFG-001/002 when it is bad), detect the workspace's
    languages and frameworks (the config's lists, when it has them, replace them) and
    compose the role's prompt with those layers."""
    config = project_config_load(workspace)
    profile = detect_project(workspace, candidate_files(workspace, git_dir))
    if config.languages is not None:
        profile.languages = list(config.languages)
        profile.evidence.update({n: "the project config" for n in config.languages})
    if config.frameworks is not None:
        profile.frameworks = list(config.frameworks)
        profile.evidence.update({n: "the project config" for n in config.frameworks})
    prompt = compose_prompt(
        role.slug,
        pack=effective_pack(config),
        languages=profile.languages,
        frameworks=profile.frameworks,
    )
    return JobProject(config, profile, prompt)
