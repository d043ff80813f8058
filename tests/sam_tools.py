"""The AWS SAM CLI for tests, and template.yaml as CloudFormation would deploy it.

``transform`` runs the SAM transform (samtranslator, from the SAM CLI's own virtualenv that
scripts/install-test-deps makes) on the template, as CloudFormation does at deploy time with the stack's
parameters and region. ``Deployed`` then resolves what CloudFormation resolves next (parameters, pseudo
parameters, conditions, ``Fn::If``/``Fn::Sub``/...) so a test can read each resource's effective properties.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from support import ROOT

TEMPLATE_PATH = ROOT / "template.yaml"
SAM_VENV = ROOT / ".tools" / "sam-venv"
SAM = SAM_VENV / "bin" / "sam"
ACCOUNT_ID = "123456789012"


def need_sam() -> None:
    if not SAM.exists():
        pytest.fail(f"{SAM} is missing: run scripts/install-test-deps (installs the AWS SAM CLI from PyPI)")


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


class _NoValue:
    def __repr__(self) -> str:
        return "AWS::NoValue"


NO_VALUE = _NoValue()


@dataclass
class Deployed:
    """A transformed template with CloudFormation's own intrinsics resolved for one stack. References to
    resources and their attributes stay symbolic: ``<Name>`` and ``<Name.Attribute>``."""

    template: dict[str, Any]
    stack: Stack
    params: dict[str, str] = field(init=False)
    conditions: dict[str, bool] = field(init=False)

    def __post_init__(self) -> None:
        given = dict(self.stack.parameters)
        self.params = {
            name: str(given.get(name, spec.get("Default", "")))
            for name, spec in self.template.get("Parameters", {}).items()
        }
        self.params |= {
            "AWS::Region": self.stack.region,
            "AWS::Partition": "aws-cn" if self.stack.region.startswith("cn-") else "aws",
            "AWS::AccountId": ACCOUNT_ID,
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::StackName": "codap-relay",
        }
        self.conditions = {}
        for name, expr in self.template.get("Conditions", {}).items():
            self.conditions[name] = bool(self.resolve(expr))

    def resources(self, kind: str | None = None) -> dict[str, dict[str, Any]]:
        """Resources CloudFormation creates (their Condition holds), with resolved properties."""
        out = {}
        for name, res in self.template["Resources"].items():
            if "Condition" in res and not self.conditions[res["Condition"]]:
                continue
            if kind is None or res["Type"] == kind:
                out[name] = {"Type": res["Type"], "Properties": self.resolve(res.get("Properties", {}))}
        return out

    def properties(self, name: str) -> dict[str, Any]:
        props: dict[str, Any] = self.resources()[name]["Properties"]
        return props

    def resolve(self, value: Any) -> Any:
        if isinstance(value, list):
            resolved = [self.resolve(v) for v in value]
            return [v for v in resolved if v is not NO_VALUE]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            key, arg = next(iter(value.items()))
            if key == "Ref" or key.startswith("Fn::") or key == "Condition":
                return self._intrinsic(key, arg)
        fields = {k: self.resolve(v) for k, v in value.items()}
        return {k: v for k, v in fields.items() if v is not NO_VALUE}

    def _ref(self, name: str) -> Any:
        if name == "AWS::NoValue":
            return NO_VALUE
        return self.params.get(name, f"<{name}>")

    def _intrinsic(self, key: str, arg: Any) -> Any:
        if key == "Ref":
            return self._ref(arg)
        if key == "Condition":
            return self.conditions[arg]
        if key == "Fn::If":
            name, yes, no = arg
            return self.resolve(yes if self.conditions[name] else no)
        if key == "Fn::Equals":
            left, right = (self.resolve(a) for a in arg)
            return str(left) == str(right)
        if key == "Fn::Not":
            return not self.resolve(arg[0])
        if key == "Fn::And":
            return all(self.resolve(a) for a in arg)
        if key == "Fn::Or":
            return any(self.resolve(a) for a in arg)
        if key == "Fn::GetAtt":
            parts = arg.split(".", 1) if isinstance(arg, str) else arg
            return f"<{parts[0]}.{parts[1]}>"
        if key == "Fn::Join":
            sep, items = arg
            return sep.join(str(i) for i in self.resolve(items))
        if key == "Fn::Split":
            sep, text = arg
            return str(self.resolve(text)).split(sep)
        if key == "Fn::Select":
            index, items = arg
            return self.resolve(items)[int(self.resolve(index))]
        if key == "Fn::FindInMap":
            mapping, top, second = (self.resolve(a) for a in arg)
            return self.template["Mappings"][mapping][top][second]
        if key == "Fn::Sub":
            text, names = (arg, {}) if isinstance(arg, str) else (arg[0], self.resolve(arg[1]))

            def one(match: re.Match[str]) -> str:
                name = match.group(1)
                if name in names:
                    return str(names[name])
                if "." in name and not name.startswith("AWS::"):
                    return f"<{name}>"
                return str(self._ref(name))

            return re.sub(r"\$\{([^}!]+)\}", one, text)
        raise AssertionError(f"intrinsic {key} is not modelled by tests/sam_tools.py")
