"""The deployed stack as ``template.yaml`` describes it: the API's stage and routes, and each function's code,
handler, limits and environment, with parameters and intrinsic functions resolved as CloudFormation would.

Only what local-api needs is modelled: ``AWS::Serverless::Function`` (with ``Globals.Function``),
``AWS::Serverless::Api`` (stage, binary media types, throttling, gateway responses), the functions' ``Api``
events, and a WebSocket API (``AWS::ApiGatewayV2::Api`` with its ``Route``s, their Lambda proxy ``Integration``s
and its ``Stage``). A resource whose ``Condition`` is false is left out, as CloudFormation leaves it out.
Intrinsic functions: Ref, Fn::Sub, Fn::If, Fn::GetAtt, Fn::Join, Fn::Select, Fn::Split and the condition
functions; anything else is refused with its name, so a template change local-api cannot follow is seen at once.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codap_relay.sam_template import TemplateError, load_template

FUNCTION_TYPE = "AWS::Serverless::Function"
API_TYPE = "AWS::Serverless::Api"
WS_API_TYPE = "AWS::ApiGatewayV2::Api"
WS_ROUTE_TYPE = "AWS::ApiGatewayV2::Route"
WS_INTEGRATION_TYPE = "AWS::ApiGatewayV2::Integration"
WS_STAGE_TYPE = "AWS::ApiGatewayV2::Stage"
ACCOUNT_ID = "123456789012"  # the placeholder account SAM's sample events use
DEFAULT_INTEGRATION_TIMEOUT_MS = 29_000  # API Gateway's default (and, for buffered answers, maximum) timeout
LAMBDA_DEFAULT_TIMEOUT_S = 3
LAMBDA_DEFAULT_MEMORY_MB = 128
WEB_ADAPTER_WRAPPER = "/opt/bootstrap"  # AWS_LAMBDA_EXEC_WRAPPER of a function run by the Lambda Web Adapter


class _NoValue:
    """AWS::NoValue: the property it stands in is removed."""


NO_VALUE = _NoValue()


@dataclass(frozen=True)
class Route:
    """One ``Api`` event: a resource path (``/api/sessions/{code}``, ``/plugin/{proxy+}``) and a method."""

    path: str
    method: str  # upper case; "ANY" for SAM's `any`
    function: str  # logical id
    streaming: bool = False  # ResponseTransferMode: RESPONSE_STREAM
    timeout_ms: int = DEFAULT_INTEGRATION_TIMEOUT_MS


@dataclass(frozen=True)
class Function:
    logical_id: str
    code_dir: Path
    handler: str  # module.function, or a script the Web Adapter starts (run.sh)
    runtime: str
    timeout_s: float
    memory_mb: int
    environment: dict[str, str]
    reserved_concurrency: int | None = None

    @property
    def web_adapter(self) -> bool:
        """Run by the Lambda Web Adapter: its own web server answers HTTP, as under AWS_LAMBDA_EXEC_WRAPPER."""
        return self.environment.get("AWS_LAMBDA_EXEC_WRAPPER") == WEB_ADAPTER_WRAPPER


@dataclass(frozen=True)
class GatewayResponse:
    """A customised API Gateway response (``GatewayResponses`` of the Api): extra headers, another status."""

    headers: dict[str, str] = field(default_factory=dict)
    status: int | None = None
    templates: dict[str, str] = field(default_factory=dict)  # content type -> body with $context variables


@dataclass(frozen=True)
class Throttle:
    rate_per_second: float
    burst: int


@dataclass(frozen=True)
class SocketRoute:
    """A WebSocket API route (``$connect``, ``$disconnect``, ``$default`` or a custom key) and the function its
    Lambda proxy integration invokes. ``two_way``: the route has a RouteResponseSelectionExpression, so the body of
    the function's answer goes back to the client; without one API Gateway drops it."""

    key: str
    function: str  # logical id
    two_way: bool = False
    timeout_ms: int = DEFAULT_INTEGRATION_TIMEOUT_MS


@dataclass(frozen=True)
class SocketApi:
    """The template's WebSocket API: its stage, how a message picks its route, the routes, the stage's throttle."""

    logical_id: str
    stage: str
    route_selection_expression: str
    routes: dict[str, SocketRoute]
    throttle: Throttle | None = None


@dataclass(frozen=True)
class Stack:
    stage: str
    binary_media_types: tuple[str, ...]
    functions: dict[str, Function]
    routes: tuple[Route, ...]
    gateway_responses: dict[str, GatewayResponse]
    throttle: Throttle | None
    parameters: dict[str, str]
    #: MethodSettings' throttles for one resource: (resource path, method or "*") -> its limit, which replaces the
    #: stage-wide ``throttle`` for requests to that method.
    route_throttles: dict[tuple[str, str], Throttle] = field(default_factory=dict)
    #: The WebSocket API (the push channel), when the template has one its conditions keep.
    socket_api: SocketApi | None = None
    #: The Api's ``MinimumCompressionSize``: a buffered answer this large or larger is compressed for a client
    #: that accepts it (events.compressed); None: none is.
    compress_from: int | None = None


def partition(region: str) -> str:
    return "aws-cn" if region.startswith("cn-") else "aws-us-gov" if region.startswith("us-gov-") else "aws"


class Resolver:
    """Evaluates intrinsic functions against the template's parameters, conditions and resources.

    A resource's Ref is its logical id and a GetAtt an ARN-shaped name built from it, as good as any locally;
    with ``symbolic`` they stay visibly unresolved instead (``<Name>``, ``<Name.Attribute>``), for tests that
    read a transformed template the way CloudFormation would deploy it (testing/sam.py)."""

    def __init__(
        self,
        template: Mapping[str, Any],
        parameters: Mapping[str, str],
        region: str,
        *,
        stack_name: str = "local-api",
        symbolic: bool = False,
    ) -> None:
        self.template = template
        self.resources: Mapping[str, Any] = template.get("Resources") or {}
        self.parameters = dict(parameters)
        self.symbolic = symbolic
        self.pseudo = {
            "AWS::Region": region,
            "AWS::AccountId": ACCOUNT_ID,
            "AWS::Partition": partition(region),
            "AWS::URLSuffix": "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com",
            "AWS::StackName": stack_name,
            "AWS::StackId": f"arn:{partition(region)}:cloudformation:{region}:{ACCOUNT_ID}:stack/{stack_name}/local",
        }
        self._condition_defs: Mapping[str, Any] = template.get("Conditions") or {}
        self._conditions: dict[str, bool] = {}

    def condition(self, name: str) -> bool:
        if name not in self._conditions:
            if name not in self._condition_defs:
                raise TemplateError(f"unknown condition {name!r}")
            self._conditions[name] = bool(self.resolve(self._condition_defs[name]))
        return self._conditions[name]

    def ref(self, name: str) -> Any:
        if name == "AWS::NoValue":
            return NO_VALUE
        if name in self.parameters:
            return self.parameters[name]
        if name in self.pseudo:
            return self.pseudo[name]
        if name in self.resources:
            return f"<{name}>" if self.symbolic else name
        raise TemplateError(f"!Ref {name}: no such parameter or resource")

    def get_att(self, resource: str, attribute: str) -> str:
        if resource not in self.resources:
            raise TemplateError(f"!GetAtt {resource}.{attribute}: no such resource")
        if self.symbolic:
            return f"<{resource}.{attribute}>"
        kind = str(self.resources[resource].get("Type", "")).split("::")
        service = kind[1].lower() if len(kind) > 1 else "local"
        region = self.pseudo["AWS::Region"]
        return f"arn:{partition(region)}:{service}:{region}:{ACCOUNT_ID}:{resource}/{attribute}"

    def resolve(self, value: Any) -> Any:
        if isinstance(value, list):
            items = [self.resolve(v) for v in value]
            return [v for v in items if v is not NO_VALUE]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, arg),) = value.items()
            if key == "Ref":
                return self.ref(str(arg))
            if key == "Condition":
                return self.condition(str(arg))
            if key.startswith("Fn::"):
                return self._function(key, arg)
        resolved = {k: self.resolve(v) for k, v in value.items()}
        return {k: v for k, v in resolved.items() if v is not NO_VALUE}

    def _function(self, name: str, arg: Any) -> Any:
        if name == "Fn::If":
            condition, if_true, if_false = arg
            return self.resolve(if_true if self.condition(str(condition)) else if_false)
        if name == "Fn::Equals":
            left, right = (self.resolve(a) for a in arg)
            return str(left) == str(right)
        if name == "Fn::Not":
            return not self.resolve(arg[0])
        if name == "Fn::And":
            return all(self.resolve(a) for a in arg)
        if name == "Fn::Or":
            return any(self.resolve(a) for a in arg)
        if name == "Fn::Sub":
            text, variables = (arg, {}) if isinstance(arg, str) else (arg[0], arg[1])
            return self._sub(str(text), {k: self.resolve(v) for k, v in variables.items()})
        if name == "Fn::GetAtt":
            resource, attribute = arg if isinstance(arg, list) else str(arg).split(".", 1)
            return self.get_att(str(resource), str(attribute))
        if name == "Fn::Join":
            separator, parts = arg
            return str(separator).join(str(p) for p in self.resolve(parts))
        if name == "Fn::Select":
            index, items = arg
            return self.resolve(items)[int(self.resolve(index))]
        if name == "Fn::Split":
            separator, text = arg
            return str(self.resolve(text)).split(str(separator))
        if name == "Fn::FindInMap":
            mapping, top, second = (self.resolve(a) for a in arg)
            return self.template["Mappings"][mapping][top][second]
        raise TemplateError(f"intrinsic function {name} is not supported by local-api")

    def _sub(self, text: str, variables: Mapping[str, Any]) -> str:
        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            if name.startswith("!"):
                return "${" + name[1:] + "}"  # ${!Literal} stands for the text ${Literal}
            if name in variables:
                return str(variables[name])
            if "." in name and not name.startswith("AWS::"):
                resource, attribute = name.split(".", 1)
                return self.get_att(resource, attribute)
            return str(self.ref(name))

        return re.sub(r"\$\{([^}]+)\}", replace, text)


def parameter_values(template: Mapping[str, Any], overrides: Mapping[str, str]) -> dict[str, str]:
    """Every parameter's value: the override, else its default. A parameter with neither is an error."""
    declared: Mapping[str, Any] = template.get("Parameters") or {}
    unknown = sorted(set(overrides) - set(declared))
    if unknown:
        raise TemplateError(f"unknown parameter(s) {', '.join(unknown)}; the template declares {', '.join(declared)}")
    values: dict[str, str] = {}
    for name, spec in declared.items():
        if name in overrides:
            value = overrides[name]
        elif "Default" in spec:
            value = str(spec["Default"])
        else:
            raise TemplateError(f"parameter {name} has no default: pass --parameter {name}=VALUE")
        allowed = spec.get("AllowedValues")
        if allowed is not None and value not in [str(a) for a in allowed]:
            raise TemplateError(f"parameter {name}={value!r} is not one of {', '.join(str(a) for a in allowed)}")
        pattern = spec.get("AllowedPattern")
        if pattern is not None and not re.fullmatch(str(pattern), value):
            raise TemplateError(f"parameter {name}={value!r} does not match {pattern}")
        values[name] = value
    return values


def _env(properties: Mapping[str, Any]) -> dict[str, str]:
    variables = (properties.get("Environment") or {}).get("Variables") or {}
    return {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in variables.items()}


def _routes(logical_id: str, events: Mapping[str, Any], api_ids: set[str]) -> list[Route]:
    routes = []
    for name, event in events.items():
        if event.get("Type") != "Api":
            continue
        props = event.get("Properties") or {}
        rest_api = props.get("RestApiId")
        if rest_api not in api_ids:
            raise TemplateError(f"{logical_id}.{name}: RestApiId must be one of the template's APIs ({rest_api!r})")
        routes.append(
            Route(
                path=str(props["Path"]),
                method=str(props["Method"]).upper(),
                function=logical_id,
                streaming=props.get("ResponseTransferMode") == "RESPONSE_STREAM",
                timeout_ms=int(props.get("TimeoutInMillis", DEFAULT_INTEGRATION_TIMEOUT_MS)),
            )
        )
    return routes


def _gateway_responses(spec: Mapping[str, Any]) -> dict[str, GatewayResponse]:
    """SAM's GatewayResponses: header values are quoted literals ("'*'") as in API Gateway's mappings."""
    responses = {}
    for kind, response in spec.items():
        headers = ((response.get("ResponseParameters") or {}).get("Headers")) or {}
        status = response.get("StatusCode")
        responses[str(kind)] = GatewayResponse(
            headers={str(k): str(v).strip("'") for k, v in headers.items()},
            status=int(status) if status is not None else None,
            templates={str(k): str(v) for k, v in (response.get("ResponseTemplates") or {}).items()},
        )
    return responses


def _route_throttles(method_settings: list[Any]) -> dict[tuple[str, str], Throttle]:
    """The per-resource throttles: CloudFormation writes a resource path with a leading "/" and each "/" of the
    path as "~1" (``/~1mcp~1{code}`` is ``/mcp/{code}``); ``HttpMethod: *`` applies to every method of it."""
    found: dict[tuple[str, str], Throttle] = {}
    for setting in method_settings:
        resource = str(setting.get("ResourcePath", ""))
        rate, burst = setting.get("ThrottlingRateLimit"), setting.get("ThrottlingBurstLimit")
        if resource in ("", "/*") or rate is None or burst is None:
            continue
        path = resource[1:].replace("~1", "/")
        found[(path, str(setting.get("HttpMethod", "*")).upper())] = Throttle(float(rate), int(burst))
    return found


def _throttle(method_settings: list[Any]) -> Throttle | None:
    """The stage-wide throttle (``ResourcePath: /*``, ``HttpMethod: *``); per-resource ones: _route_throttles."""
    for setting in method_settings:
        if setting.get("ResourcePath") == "/*" and setting.get("HttpMethod") == "*":
            rate, burst = setting.get("ThrottlingRateLimit"), setting.get("ThrottlingBurstLimit")
            if rate is not None and burst is not None:
                return Throttle(float(rate), int(burst))
    return None


def _deployed(resolver: Resolver, resources: Mapping[str, Any], kind: str) -> dict[str, Mapping[str, Any]]:
    """The resources of one type CloudFormation would create: those without a Condition or whose Condition holds."""
    return {
        name: r
        for name, r in resources.items()
        if r.get("Type") == kind and ("Condition" not in r or resolver.condition(str(r["Condition"])))
    }


def _socket_api(
    resolver: Resolver, resources: Mapping[str, Any], functions: Mapping[str, Function]
) -> SocketApi | None:
    apis = _deployed(resolver, resources, WS_API_TYPE)
    if not apis:
        return None
    if len(apis) > 1:
        raise TemplateError(f"local-api serves at most one {WS_API_TYPE}; the template has {len(apis)}")
    [(api_id, api)] = apis.items()
    props = resolver.resolve(api.get("Properties") or {})
    if props.get("ProtocolType") != "WEBSOCKET":
        kind = props.get("ProtocolType")
        raise TemplateError(f"{api_id}: local-api serves a WebSocket API only (ProtocolType {kind})")
    # A function's invoke ARN names it by its Arn attribute: arn:…:apigateway:REGION:lambda:path/…/functions/ARN/…
    arns = {resolver.get_att(name, "Arn"): name for name in functions}
    integrations: dict[str, tuple[str, int]] = {}
    for name, resource in _deployed(resolver, resources, WS_INTEGRATION_TYPE).items():
        own = resolver.resolve(resource.get("Properties") or {})
        if own.get("ApiId") != api_id:
            continue
        if own.get("IntegrationType") != "AWS_PROXY":
            raise TemplateError(f"{name}: local-api runs Lambda proxy integrations (AWS_PROXY) only")
        uri = str(own.get("IntegrationUri", ""))
        found = [fn for arn, fn in arns.items() if f"/functions/{arn}/invocations" in uri]
        if len(found) != 1:
            raise TemplateError(f"{name}: IntegrationUri {uri!r} names none of the template's functions")
        integrations[name] = (found[0], int(own.get("TimeoutInMillis", DEFAULT_INTEGRATION_TIMEOUT_MS)))
    routes: dict[str, SocketRoute] = {}
    for name, resource in _deployed(resolver, resources, WS_ROUTE_TYPE).items():
        own = resolver.resolve(resource.get("Properties") or {})
        if own.get("ApiId") != api_id:
            continue
        target = str(own.get("Target", ""))
        integration = target.removeprefix("integrations/")
        if not target.startswith("integrations/") or integration not in integrations:
            raise TemplateError(f"{name}: Target {target!r} is not integrations/<one of the API's integrations>")
        function, timeout_ms = integrations[integration]
        key = str(own["RouteKey"])
        two_way = bool(own.get("RouteResponseSelectionExpression"))
        routes[key] = SocketRoute(key, function, two_way=two_way, timeout_ms=timeout_ms)
    stages = [
        resolver.resolve(r.get("Properties") or {})
        for r in _deployed(resolver, resources, WS_STAGE_TYPE).values()
        if resolver.resolve((r.get("Properties") or {}).get("ApiId")) == api_id
    ]
    if len(stages) != 1:
        raise TemplateError(f"{api_id}: local-api serves a WebSocket API with exactly one stage ({len(stages)} found)")
    settings = stages[0].get("DefaultRouteSettings") or {}
    rate, burst = settings.get("ThrottlingRateLimit"), settings.get("ThrottlingBurstLimit")
    return SocketApi(
        logical_id=api_id,
        stage=str(stages[0]["StageName"]),
        route_selection_expression=str(props.get("RouteSelectionExpression", "")),
        routes=routes,
        throttle=Throttle(float(rate), int(burst)) if rate is not None and burst is not None else None,
    )


def read_stack(path: Path, *, parameters: Mapping[str, str] | None = None, region: str | None = None) -> Stack:
    template = load_template(path)
    resolver = Resolver(
        template,
        parameter_values(template, parameters or {}),
        region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1",
    )
    resources: Mapping[str, Any] = template.get("Resources") or {}
    globals_ = template.get("Globals") or {}
    apis = {name: r for name, r in resources.items() if r.get("Type") == API_TYPE}
    if len(apis) != 1:
        raise TemplateError(f"local-api serves exactly one {API_TYPE}; the template has {len(apis)}")
    api_props = resolver.resolve({**(globals_.get("Api") or {}), **(next(iter(apis.values())).get("Properties") or {})})

    function_globals = resolver.resolve(globals_.get("Function") or {})
    functions: dict[str, Function] = {}
    routes: list[Route] = []
    for logical_id, resource in _deployed(resolver, resources, FUNCTION_TYPE).items():
        own = resolver.resolve(resource.get("Properties") or {})
        props = {**function_globals, **own}
        environment = {**_env(function_globals), **_env(own)}
        reserved = props.get("ReservedConcurrentExecutions")
        functions[logical_id] = Function(
            logical_id=logical_id,
            code_dir=(path.parent / str(props["CodeUri"])).resolve(),
            handler=str(props["Handler"]),
            runtime=str(props.get("Runtime", "")),
            timeout_s=float(props.get("Timeout", LAMBDA_DEFAULT_TIMEOUT_S)),
            memory_mb=int(props.get("MemorySize", LAMBDA_DEFAULT_MEMORY_MB)),
            environment=environment,
            reserved_concurrency=int(reserved) if reserved is not None else None,
        )
        routes.extend(_routes(logical_id, own.get("Events") or {}, set(apis)))
    return Stack(
        stage=str(api_props["StageName"]),
        binary_media_types=tuple(str(t) for t in api_props.get("BinaryMediaTypes") or ()),
        functions=functions,
        routes=tuple(routes),
        gateway_responses=_gateway_responses(api_props.get("GatewayResponses") or {}),
        throttle=_throttle(api_props.get("MethodSettings") or []),
        parameters=resolver.parameters,
        route_throttles=_route_throttles(api_props.get("MethodSettings") or []),
        socket_api=_socket_api(resolver, resources, functions),
        compress_from=None
        if api_props.get("MinimumCompressionSize") is None
        else int(api_props["MinimumCompressionSize"]),
    )
