"""The deployment as SAM sees it: template.yaml lints clean, and `sam build` makes every artifact the template names.

Uses the SAM CLI that scripts/install-test-deps puts in .tools/sam-venv and the functions' runtime Python (sam build
refuses a runtime it cannot find on PATH; the layer's Makefile runs pip with it). `sam build` runs as a deployer runs
it (samconfig.toml's settings, cached builds included) in a copy of the project, so a test may change the copy's
sources and build again: that cached rebuild (its layer made for the machine the tests run on) is where the built
handlers are imported; the first build serves every other assertion. The only network use is the layer build's pip
reaching the package index.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from codap_relay.sam_template import load_template
from codap_relay_tooling.testing import CHECKOUT
from codap_relay_tooling.testing.real_parts import missing
from codap_relay_tooling.testing.sam import SAM, TEMPLATE_PATH, need_sam, sam_env

pytestmark = pytest.mark.slow

TEMPLATE = load_template(TEMPLATE_PATH)
[ARCHITECTURE] = TEMPLATE["Globals"]["Function"]["Architectures"]  # one for all (test_template.py checks)
MACHINE = {"x86_64": "x86_64", "arm64": "aarch64"}  # the uname -m / wheel tag of a Lambda architecture
REGION = "us-east-1"
# What `sam build` reads: the template, its settings, and the sources it names (infra/layer links to the rest).
PROJECT_FILES = ("template.yaml", "samconfig.toml", "pyproject.toml", "README.md", "core", "functions", "infra")
PYENV_ROOT = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")


@dataclass(frozen=True)
class Function:
    name: str  # logical id; sam build puts it in <build dir>/<name>/
    code_uri: str
    handler: str
    runtime: str


def resources(kind: str) -> dict[str, dict[str, Any]]:
    return {name: r.get("Properties", {}) for name, r in TEMPLATE["Resources"].items() if r["Type"] == kind}


def functions() -> list[Function]:
    runtime = TEMPLATE["Globals"]["Function"]["Runtime"]
    return [
        Function(name, props["CodeUri"], props["Handler"], props.get("Runtime", runtime))
        for name, props in resources("AWS::Serverless::Function").items()
    ]


FUNCTIONS = functions()
LAYERS = resources("AWS::Serverless::LayerVersion")


def runtime_version() -> str:
    """'3.12' for python3.12; the template must use one Python runtime for all its functions and layers."""
    runtimes = {f.runtime for f in FUNCTIONS}
    for props in LAYERS.values():
        runtimes.update(props.get("CompatibleRuntimes", []))
    assert len(runtimes) == 1, f"one Python runtime expected across functions and layers, got {sorted(runtimes)}"
    match = re.fullmatch(r"python(3\.\d+)", runtimes.pop())
    assert match, "the functions are expected to run on a pythonX.Y runtime"
    return match.group(1)


def reports_version(python: Path, version: str) -> bool:
    # A pyenv shim for a version that is not selected exits non-zero, so run it rather than trusting the name.
    probe = [str(python), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"]
    result = subprocess.run(probe, capture_output=True, text=True, timeout=60)
    return result.returncode == 0 and result.stdout.strip() == version


def find_runtime_python(version: str) -> Path | None:
    """The highest pyenv patch release of `version`, else a real `pythonX.Y` on PATH."""

    def patch(path: Path) -> int:
        tail = path.parent.parent.name.rsplit(".", 1)[-1]
        return int(tail) if tail.isdigit() else -1

    candidates = sorted(PYENV_ROOT.glob(f"versions/{version}.*/bin/python{version}"), key=patch, reverse=True)
    on_path = shutil.which(f"python{version}")
    if on_path:
        candidates.append(Path(on_path))
    return next((c for c in candidates if reports_version(c, version)), None)


@dataclass(frozen=True)
class Built:
    project: Path  # the copy of the project that was built
    dir: Path
    python: Path
    env: dict[str, str]


def copy_project(target: Path) -> Path:
    """The project's build inputs, links kept as links (infra/layer's point into the copy)."""
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", ".aws-sam")
    target.mkdir(parents=True)
    for name in PROJECT_FILES:
        source = CHECKOUT / name
        if source.is_dir():
            shutil.copytree(source, target / name, symlinks=True, ignore=ignore)
        else:
            shutil.copy2(source, target / name)
    return target


def sam_build(built_project: Path, env: dict[str, str], *args: str) -> str:
    """`sam build` as a deployer runs it in the project folder (samconfig.toml applies); its output."""
    cmd = [str(SAM), "build", *args]
    result = subprocess.run(cmd, cwd=built_project, env=env, capture_output=True, text=True, timeout=900)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "Build Succeeded" in output, output
    return output


def is_script(function: Function, built_function: Path) -> bool:
    """A bootstrap script as handler (the stream function's run.sh, started by the Lambda Web Adapter)."""
    return (built_function / function.handler).is_file()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    need_sam()
    version = runtime_version()
    python = find_runtime_python(version)
    if python is None:
        missing(
            f"Python {version}",
            f"`sam build` needs the functions' runtime on PATH; none found under {PYENV_ROOT}/versions/{version}.* "
            f"or as python{version}: `pyenv install {version}`, or the system's python{version} package",
        )
    work = tmp_path_factory.mktemp("sam")
    env = sam_env(work / "sam-config", python, REGION)
    project = copy_project(work / "project")
    sam_build(project, env)
    yield Built(project, project / ".aws-sam" / "build", python, env)
    shutil.rmtree(work, ignore_errors=True)  # ~100 MB of layer; pytest would keep the last three runs' copies


CHANGED_CORE_FILE = Path("core") / "codap_relay" / "relay" / "__init__.py"
MARKER = "# marker: changed after the first build"


@dataclass(frozen=True)
class Rebuilt:
    build: Built  # the second build dir, beside the first in the same project (one cache)
    output: str  # what `sam build` said


@pytest.fixture(scope="module")
def rebuilt(built: Built) -> Rebuilt:
    """samconfig.toml builds with the cache: a change to the core, then `sam build` again into a second build dir,
    so the first stays as the other tests read it. The change invalidates the layer's cache entry, so the layer is
    built afresh anyway: this build makes it for the machine the tests run on (LAYER_MACHINE in
    infra/layer/Makefile), and the handlers are imported from it here. One layer build serves both checks instead
    of a third build in a second copy of the project (about 45 s each)."""
    changed = built.project / CHANGED_CORE_FILE
    changed.write_text(changed.read_text() + f"\n{MARKER}\n")
    env = {**built.env, "LAYER_MACHINE": os.uname().machine}
    build_dir = built.project / ".aws-sam" / "rebuilt"
    output = sam_build(built.project, env, "--build-dir", str(build_dir))
    return Rebuilt(Built(built.project, build_dir, built.python, env), output)


def test_template_lints_clean(tmp_path: Path) -> None:
    need_sam()
    cmd = [str(SAM), "validate", "--lint", "--template-file", str(TEMPLATE_PATH), "--region", REGION]
    env = sam_env(tmp_path / "sam-config", None, REGION)
    result = subprocess.run(cmd, cwd=CHECKOUT, env=env, capture_output=True, text=True, timeout=300)
    # Any cfn-lint match, a warning or an informational one included, makes `sam validate --lint` exit 1.
    assert result.returncode == 0, result.stdout + result.stderr
    assert "is a valid SAM Template" in result.stdout, result.stdout + result.stderr


def test_template_has_what_the_build_checks_cover() -> None:
    assert FUNCTIONS, "template.yaml declares no function"
    assert set(LAYERS) == {"CoreLayer"}
    code_uris = {f.code_uri.rstrip("/") for f in FUNCTIONS}
    on_disk = {str(p.parent.relative_to(CHECKOUT)) for p in (CHECKOUT / "functions").glob("*/app.py")}
    assert code_uris == on_disk, "every functions/*/app.py should be one function in template.yaml, and back"


def test_built_template_points_at_the_built_artifacts(built: Built) -> None:
    out = load_template(built.dir / "template.yaml")["Resources"]
    for f in FUNCTIONS:
        assert out[f.name]["Properties"]["CodeUri"] == f.name
        assert (built.dir / f.name).is_dir(), f.name
    for name in LAYERS:
        assert out[name]["Properties"]["ContentUri"] == name
        assert (built.dir / name).is_dir(), name


@pytest.mark.parametrize("function", FUNCTIONS, ids=lambda f: f.name)
def test_each_function_is_built_from_its_code_uri(built: Built, function: Function) -> None:
    source = CHECKOUT / function.code_uri
    target = built.dir / function.name
    files = [p.relative_to(source) for p in source.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert Path("app.py") in files, f"{function.code_uri} has no app.py"
    for rel in files:
        copied = target / rel
        assert copied.is_file(), f"{rel} of {function.code_uri} is missing from the build of {function.name}"
        assert os.access(copied, os.X_OK) == os.access(source / rel, os.X_OK), f"{copied}: executable bit lost"
    if is_script(function, target):
        assert os.access(target / function.handler, os.X_OK), f"{function.handler} must be executable"
        assert "app:app" in (target / function.handler).read_text(), "the script is expected to serve app:app"
    else:
        module, _, attr = function.handler.rpartition(".")
        assert (target / f"{module}.py").is_file() and attr == "handler", function.handler


def test_layer_holds_the_package_the_plugin_and_the_glue(built: Built) -> None:
    site = built.dir / "CoreLayer" / "python"  # Lambda mounts it at /opt/python, which is on sys.path
    package = CHECKOUT / "core" / "codap_relay"

    def files(root: Path) -> set[Path]:
        return {p.relative_to(root) for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts}

    expected, present = files(package), files(site / "codap_relay")
    assert Path("plugin/index.html") in expected
    missing = sorted(str(p) for p in expected - present)
    assert not missing, f"files of core/codap_relay not in the layer: {missing}"
    # The Makefile's `pip wheel` builds in the repository's build/, where setuptools never deletes old copies.
    stale = sorted(str(p) for p in present - expected)
    assert not stale, f"files in the layer's codap_relay that core/codap_relay no longer has (rm -rf build/): {stale}"
    assert (site / "relay_lambda.py").read_bytes() == (CHECKOUT / "functions/shared/relay_lambda.py").read_bytes()
    # Developer tooling (local-api's emulator, the test harnesses) is a package of its own that the layer never holds.
    tooling = [p.name for p in site.iterdir() if p.name.startswith(("codap_relay_tooling", "codap_relay-tooling"))]
    tooling += [name for name in ("localapi", "testing") if (site / "codap_relay" / name).exists()]
    tooling += [name for name in ("pytest", "playwright", "moto") if (site / name).exists()]
    assert not tooling, f"developer tooling in the layer: {tooling}"
    for dependency in ("pydantic_core", "mangum", "aws_lambda_powertools", "mcp", "boto3"):
        assert (site / dependency).is_dir(), f"{dependency} (a dependency of the core's aws/mcp extras) is missing"
    abi = f"cpython-{runtime_version().replace('.', '')}-{MACHINE[ARCHITECTURE]}-linux-gnu"
    assert list((site / "pydantic_core").glob(f"*{abi}.so")), f"compiled parts should be built for {abi}"


# Run by the runtime Python with Lambda's search path: the function's own directory, then the layer (/opt/python).
IMPORT_CHECK = """
import importlib, sys
task_root, layer, module_name = sys.argv[1:4]
sys.path[:0] = [task_root, layer]
module = importlib.import_module(module_name)
for attr in sys.argv[4:]:
    assert callable(getattr(module, attr, None)), f"{module_name}.{attr} is missing or not callable"
assert module.__file__.startswith(task_root), module.__file__
for shared in ("relay_lambda", "codap_relay"):
    assert sys.modules[shared].__file__.startswith(layer), sys.modules[shared].__file__
print(type(getattr(module, "runtime", module).relay.store).__name__)  # push/app.py holds its relay itself
"""


@pytest.mark.parametrize("function", FUNCTIONS, ids=lambda f: f.name)
def test_each_built_handler_imports(rebuilt: Rebuilt, function: Function) -> None:
    built = rebuilt.build  # its layer holds this machine's compiled wheels
    task_root = built.dir / function.name
    # run.sh serves the ASGI app app:app; app.handler is its buffered fallback (sam local invoke, ?mode=poll)
    if is_script(function, task_root):
        module, attrs = "app", ["app", "handler"]
    else:
        module, attr = function.handler.rsplit(".", 1)
        attrs = [attr]
    env = {
        **built.env,
        # The template's store, pointed at a closed loopback port: importing creates a client, never a connection.
        "RELAY_STORE": f"dynamodb://codap-relay-built?region={REGION}&endpoint_url=http://127.0.0.1:9",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "POWERTOOLS_SERVICE_NAME": "codap-relay",
        "POWERTOOLS_TRACE_DISABLED": "true",
    }
    layer = built.dir / "CoreLayer" / "python"
    cmd = [str(built.python), "-I", "-c", IMPORT_CHECK, str(task_root), str(layer), module, *attrs]
    result = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, cwd=task_root)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "DynamoStore", result.stdout


def test_a_cached_rebuild_ships_the_changed_core(built: Built, rebuilt: Rebuilt) -> None:
    """A change to the core reaches the layer of a cached rebuild, and the first build is left as it was."""
    output = rebuilt.output
    assert "use cache" in output, "samconfig.toml is expected to ask for cached builds"
    shipped = rebuilt.build.dir / "CoreLayer" / "python" / CHANGED_CORE_FILE.relative_to("core")
    assert MARKER in shipped.read_text(), "the rebuilt CoreLayer still holds the old core (stale cache)"
    assert MARKER not in (built.dir / "CoreLayer" / "python" / CHANGED_CORE_FILE.relative_to("core")).read_text()
    # The layer's cache entry was there and judged out of date (not merely bypassed).
    assert "Cache is invalid, running build and copying resources for following layers (CoreLayer)" in output, output
