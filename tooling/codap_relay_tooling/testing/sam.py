"""The AWS SAM CLI for tests, and template.yaml as CloudFormation would deploy it.

``transform`` runs the SAM transform (samtranslator, from the SAM CLI's own virtualenv that
scripts/install-test-deps makes) on the template, as CloudFormation does at deploy time with the stack's
parameters and region. ``Deployed`` then resolves what CloudFormation resolves next (parameters, pseudo
parameters, conditions, ``Fn::If``/``Fn::Sub``/...) so a test can read each resource's effective properties.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codap_relay_tooling.localapi.template import Resolver
from codap_relay_tooling.testing import CHECKOUT
from codap_relay_tooling.testing.real_parts import need

TEMPLATE_PATH = CHECKOUT / "template.yaml"
SAM_VENV = CHECKOUT / ".tools" / "sam-venv"
SAM = SAM_VENV / "bin" / "sam"


def need_sam() -> None:
    need(SAM.exists(), "the SAM CLI")


def sam_env(config_dir: Path, python: Path | None, region: str) -> dict[str, str]:
    """An environment for the SAM CLI that never reaches AWS or writes to the user's ~/.aws-sam."""
    # SAM checks PyPI for a newer release once a week, recorded in its config dir: give it a private one that says
    # it just checked (and telemetry off), so runs neither reach out nor write to the user's ~/.aws-sam.
    config_dir.mkdir(parents=True, exist_ok=True)
    metadata = {"telemetryEnabled": False, "lastVersionCheck": time.time()}
    (config_dir / "metadata.json").write_text(json.dumps(metadata))
    env = {
        **os.environ,
        "SAM_CLI_TELEMETRY": "0",
        "__SAM_CLI_APP_DIR": str(config_dir),
        "AWS_REGION": region,
        "AWS_DEFAULT_REGION": region,
        "AWS_EC2_METADATA_DISABLED": "true",  # never probe the instance metadata endpoint for a region
    }
    if python is not None:
        env["PATH"] = f"{python.parent}{os.pathsep}{env.get('PATH', '')}"
    return env


@dataclass(frozen=True)
class Stack:
    """One deployment: the region and the parameters given (the rest take their defaults)."""

    region: str = "us-east-1"
    parameters: tuple[tuple[str, str], ...] = ()

    @staticmethod
    def of(region: str = "us-east-1", **parameters: str) -> Stack:
        return Stack(region, tuple(sorted(parameters.items())))


# Runs in the SAM CLI's virtualenv. Local CodeUri/ContentUri become S3 locations, as `sam package` makes them.
TRANSFORM = """
import json, sys
import boto3
from samcli.yamlhelper import yaml_parse
from samtranslator.parser.parser import Parser
from samtranslator.translator.translator import Translator

path, stacks = sys.argv[1], json.loads(sys.stdin.read())
out = []
for stack in stacks:
    template = yaml_parse(open(path).read())
    for resource in template["Resources"].values():
        props = resource.get("Properties", {})
        for key in ("CodeUri", "ContentUri"):
            if isinstance(props.get(key), str):
                props[key] = "s3://codap-relay-artifacts/" + props[key].strip("/")
    translator = Translator(None, Parser(), boto_session=boto3.session.Session(region_name=stack["region"]))
    out.append(translator.translate(template, dict(stack["parameters"]), get_managed_policy_map=lambda: {}))
print(json.dumps(out))
"""


def transform(stacks: list[Stack], template: Path = TEMPLATE_PATH) -> list[Deployed]:
    """The template as CloudFormation deploys it for each stack (one SAM CLI process for all of them)."""
    need_sam()
    env = {**os.environ, "AWS_EC2_METADATA_DISABLED": "true", "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x"}
    payload = json.dumps([{"region": s.region, "parameters": list(s.parameters)} for s in stacks])
    result = subprocess.run(
        [str(SAM_VENV / "bin" / "python"), "-c", TRANSFORM, str(template)],
        input=payload,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return [Deployed(out, stack) for out, stack in zip(json.loads(result.stdout), stacks, strict=True)]


GUIDED_AUTH = """
import sys
from samcli.commands.deploy.auth_utils import auth_per_resource
from samcli.lib.providers.sam_stack_provider import SamLocalStackProvider
stacks, _ = SamLocalStackProvider.get_stacks(sys.argv[1])
for resource, ok in auth_per_resource(stacks):
    print(resource if not ok else "")
"""


def guided_auth_questions(template: Path = TEMPLATE_PATH) -> list[str]:
    """The resources ``sam deploy --guided`` asks "has no authentication. Is this okay?" about (Enter answers no and
    stops the deploy), found by the SAM CLI's own code."""
    need_sam()
    result = subprocess.run(
        [str(SAM_VENV / "bin" / "python"), "-c", GUIDED_AUTH, str(template)],
        capture_output=True,
        text=True,
        env={**os.environ, "SAM_CLI_TELEMETRY": "0"},
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return [line for line in result.stdout.splitlines() if line]


@dataclass
class Deployed:
    """A transformed template with CloudFormation's own intrinsics resolved for one stack, by the resolver
    local-api uses. References to resources and their attributes stay symbolic: ``<Name>``, ``<Name.Attribute>``."""

    template: dict[str, Any]
    stack: Stack
    params: dict[str, str] = field(init=False)

    def __post_init__(self) -> None:
        given = dict(self.stack.parameters)
        self.params = {
            name: str(given.get(name, spec.get("Default", "")))
            for name, spec in self.template.get("Parameters", {}).items()
        }
        self._resolver = Resolver(
            self.template, self.params, self.stack.region, stack_name="codap-relay", symbolic=True
        )
        self.params |= self._resolver.pseudo

    def resolve(self, value: Any) -> Any:
        return self._resolver.resolve(value)

    def condition(self, name: str) -> bool:
        return self._resolver.condition(name)

    def resources(self, kind: str | None = None) -> dict[str, dict[str, Any]]:
        """Resources CloudFormation creates (their Condition holds), with resolved properties."""
        out = {}
        for name, res in self.template["Resources"].items():
            if "Condition" in res and not self.condition(res["Condition"]):
                continue
            if kind is None or res["Type"] == kind:
                out[name] = {"Type": res["Type"], "Properties": self.resolve(res.get("Properties", {}))}
        return out

    def properties(self, name: str) -> dict[str, Any]:
        props: dict[str, Any] = self.resources()[name]["Properties"]
        return props
