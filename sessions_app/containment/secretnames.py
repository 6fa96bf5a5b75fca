"""What is secret by its name, and a team's additions to the detector (``SecretRules``)."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from roles.writes import path_allowed

_SECRET_NAMES = re.compile(
    r"""^(?:
        \.env(?:\.(?!(?:example|sample|template|dist|defaults?|schema)$).*)?|.*\.env|\.envrc|
        \.netrc|_netrc|\.npmrc|\.pypirc|\.pgpass|
        pgpass\.conf|\.?passwd-s3fs|\.my\.cnf|\.mylogin\.cnf|\.git-credentials|\.gitcookies|\.vault-token|\.htpasswd|\.s3cfg|\.boto|
        \.dockercfg|\.terraformrc|terraform\.rc|\.tfvars|.*\.tfvars(?:\.json)?|
        terraform\.tfstate(?:\.backup)?|.*\.tfstate|kubeconfig(?:\..*)?|
        id_(?:rsa|dsa|ecdsa|ed25519)(?:_sk)?|.*\.key|.*\.p12|.*\.pfx|
        .*\.keystore|.*\.jks|.*\.ppk|.*\.asc|.*\.gpg|.*\.pgp|.*\.kdbx|.*\.keytab|.*\.ovpn|
        credentials|credentials\.(?:json|ya?ml|toml|ini|xml|csv|txt|cfg|conf)|
        client_secrets?(?:_.*)?\.json|.*service[-_]account.*\.json|
        secrets?|secrets?\.(?:json|ya?ml|toml|ini|xml|txt|cfg|conf|env|properties)|.*\.secrets?|
        wp-config\.php|local\.settings\.json|\.composer-auth\.json|
        \.credentials(?:\.json)?|\.token|.*\.token|token\.json|
        \.(?:bash|zsh|sh|ksh|fish|python|psql|mysql|sqlite|rediscli|node_repl|irb|lesshst)_?history|
        \.history|fish_history|\.viminfo
    )$""",
    re.IGNORECASE | re.VERBOSE,
)
# What an editor, a tool or a person adds to a file's name when keeping a copy of it
# (``.env.bak``, ``deploy.ppk.old``, ``.htpasswd~``): the copy is as secret as the file.
_COPY_SUFFIX = re.compile(
    r"(?:\.(?:bak|backup|bkp|old|orig|save|saved|sav|swp|swo|tmp|temp|copy|prev|dist-old|\d{1,3})|~)$",
    re.IGNORECASE,
)
# Files secret by the directory they are in (the whole directory is a credential store;
# directory names are compared in lower case, as file names are). Files under a ``.git``
# directory below the workspace's own (a nested repository) hold its history and config.
_SECRET_DIRS = {
    ".git": None,
    ".ssh": None,  # every file in it
    ".gnupg": None,
    ".aws": None,
    ".docker": {"config.json"},
    ".kube": {"config"},
    ".azure": None,
    "gcloud": {"credentials.db", "access_tokens.db", "application_default_credentials.json"},
    ".cargo": {"credentials", "credentials.toml"},
    ".gem": {"credentials"},
    ".config": None,  # checked further below (gh/hosts.yml, hub, ...)
}
_CONFIG_SECRETS = re.compile(
    r"^(?:gh/hosts\.ya?ml|hub|gcloud/.*|git/credentials|rclone/rclone\.conf|pip/pip\.conf)$"
)


@dataclass(frozen=True)
class SecretRules:
    """A team's additions to the detector: ``patterns`` (RE2 syntax, linear time) mark
    secrets in any file or output (the match, or its group named ``secret``);
    ``allow_paths`` (write-path globs) are files never hidden for their name or content;
    ``allow_values`` (RE2) are values known not to be secrets."""

    patterns: tuple[str, ...] = ()
    allow_paths: tuple[str, ...] = ()
    allow_values: tuple[str, ...] = ()

    @property
    def version(self) -> str:
        """Changes whenever what the detector decides could change (rules or detector)."""
        data = json.dumps([DETECTOR_VERSION, self.patterns, self.allow_paths, self.allow_values])
        return hashlib.sha256(data.encode()).hexdigest()[:16]


NO_RULES = SecretRules()
DETECTOR_VERSION = "4"  # bump when the built-in rules change: indexes are scanned again


def secret_by_name(path: str, rules: SecretRules = NO_RULES) -> bool:
    """Whether the file at ``path`` (workspace-relative) is a secret for its name alone."""
    if rules.allow_paths and path_allowed(path, rules.allow_paths):
        return False
    parts = PurePosixPath(path).parts
    if not parts:
        return False
    name = parts[-1]
    if len(parts) == 1 and name.lower() == "auth.json":  # Composer's, beside composer.json
        return True
    while True:
        if _SECRET_NAMES.match(name):
            return True
        copy = _COPY_SUFFIX.sub("", name)
        if copy == name or not copy:
            break
        name = copy
    for index, raw in enumerate(parts[:-1]):
        part = raw.lower()
        if part in _SECRET_DIRS:
            names = _SECRET_DIRS[part]
            rest = "/".join(parts[index + 1 :]).lower()
            if part == ".config":
                if _CONFIG_SECRETS.match(rest):
                    return True
            elif names is None or rest in names:
                return True
    return False
