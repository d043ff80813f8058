"""Reading ``template.yaml``: YAML with CloudFormation's short tags (``!Ref``, ``!Sub``, ...) kept as data.

The template is the one source of truth for the table (``codap-relay dynamodb create-table``) and for the routes,
functions and environment that ``codap-relay local-api`` runs; both read it through here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


class TemplateError(ValueError):
    """The template cannot be read or does not describe what the caller needs; the message says which."""


def default_template() -> Path:
    """template.yaml in the working directory, else the one at the root of a source checkout."""
    here = Path.cwd() / "template.yaml"
    if here.exists():
        return here
    return Path(__file__).resolve().parents[2] / "template.yaml"


def load_template(path: Path) -> dict[str, Any]:
    """The template as plain data: ``!Ref X`` becomes ``{"Ref": X}``, ``!Sub s`` becomes ``{"Fn::Sub": s}``."""
    import yaml

    class CfnLoader(yaml.SafeLoader):  # type: ignore[misc]
        pass

    def any_tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
        name = "Ref" if suffix == "Ref" else "Condition" if suffix == "Condition" else f"Fn::{suffix}"
        if isinstance(node, yaml.ScalarNode):
            value: Any = loader.construct_scalar(node)
            if name == "Fn::GetAtt":  # the short form is "Resource.Attribute"
                value = str(value).split(".", 1)
            return {name: value}
        if isinstance(node, yaml.SequenceNode):
            return {name: loader.construct_sequence(node, deep=True)}
        return {name: loader.construct_mapping(node, deep=True)}  # type: ignore[arg-type]

    CfnLoader.add_multi_constructor("!", any_tag)
    try:
        text = path.read_text()
    except OSError as exc:
        raise TemplateError(f"cannot read {path}: {exc.strerror}; pass --template PATH to template.yaml") from exc
    data = yaml.load(text, Loader=CfnLoader)  # a SafeLoader subclass: builds no Python objects
    if not isinstance(data, dict):
        raise TemplateError(f"{path} is not a CloudFormation template")
    return data
