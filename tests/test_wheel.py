"""Package data through `importlib.resources`: in this checkout the dataset files are the top-level `datasets/`; a
wheel built from the checkout and installed into a fresh venv outside the repo carries every data file (the
explorer's scripts and prompts, the sites' templates and static files, the dataset recipes, schemas and card), its
`scalehop observe`, `explore` and `dataset build` work from there, and `import datasets` stays Hugging Face's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml

from synthesis.recipe import load_recipe
from synthesis.resources import datasets_dir, recipe_names
from synthesis.rows import features
from tests.test_cli import check_observation_dir

ROOT = Path(__file__).resolve().parents[1]

# Run by the fresh venv's python, from outside the repo: where everything comes from, and the package data in use.
PROBE = r"""
import json, sys
from urllib.request import urlopen

import datasets, explorer, flows, sites, synthesis
from explorer.observe import page_script
from explorer.roles.prompts import template as role_prompt
from sites import serve_sites
from synthesis.prompting import template as dataset_prompt
from synthesis.recipe import load_recipe
from synthesis.resources import datasets_dir, recipe_names
from synthesis.rows import features

servers = serve_sites(port=0)
try:
    pages = {name: urlopen(url).status for name, url in servers.urls.items()}
    css = urlopen(servers.urls["shop"] + "static/sites.css").read().decode()
finally:
    servers.stop()
print(json.dumps({
    "sys_path": sys.path,
    "editable": sorted(m for m in sys.modules if m.startswith("__editable__")),
    "files": {m.__name__: m.__file__ for m in (explorer, flows, sites, synthesis)},
    "datasets": datasets.__file__,
    "hf": hasattr(datasets, "load_from_disk"),
    "datasets_dir": str(datasets_dir()),
    "recipes": recipe_names(),
    "quick": load_recipe("quick").model_dump(mode="json"),
    "features": sorted(features("page_qa")),
    "script": len(page_script("extract")),
    "prompts": [bool(role_prompt("selector")[0]), bool(dataset_prompt("instruction")[0])],
    "pages": pages,
    "css": len(css),
}))
"""


def test_datasets_dir_in_a_checkout_is_the_top_level_folder():
    assert Path(str(datasets_dir())).resolve() == ROOT / "datasets"
    assert recipe_names() == sorted(p.stem for p in (ROOT / "datasets" / "recipes").glob("*.toml"))


def test_recipes_load_by_name_and_by_path():
    for name in recipe_names():
        assert load_recipe(name).name == name
    assert load_recipe(ROOT / "datasets" / "recipes" / "quick.toml") == load_recipe("quick")


def test_prefect_build_dataset_default_recipe_loads():
    spec = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    (deployment,) = [d for d in spec["deployments"] if d["name"] == "build-dataset"]
    assert load_recipe(deployment["parameters"]["recipe"]).name


def _checkout_copy(dest: Path) -> Path:
    """The files of this checkout (tracked or not ignored, as they are in the working tree), links kept."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    )
    for rel in sorted(set(out.stdout.decode().split("\0")) - {""}):
        src, dst = ROOT / rel, dest / rel
        if not os.path.lexists(src):  # deleted in the working tree
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            dst.symlink_to(os.readlink(src))
        else:
            shutil.copy2(src, dst)
    return dest


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory) -> Path:
    """A fresh venv outside the repo with the scalehop wheel installed; the dependencies are the project venv's
    (a .pth line adds its site-packages, whose own .pth files, the editable install's finder included, stay
    unprocessed)."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = _checkout_copy(tmp / "src")  # build a copy: setuptools writes build/ and *.egg-info next to the sources
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    build = [*pip, "wheel", str(src), "--no-deps", "--no-build-isolation", "-w", str(tmp / "dist")]
    subprocess.run(build, cwd=tmp, check=True, timeout=300)
    (wheel,) = (tmp / "dist").glob("scalehop-*.whl")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    install = [*pip, "--python", str(python), "install", "--no-deps", "--no-index", str(wheel)]
    subprocess.run(install, cwd=tmp, check=True, timeout=300)
    where = [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]
    site_packages = Path(subprocess.run(where, capture_output=True, text=True, check=True).stdout.strip())
    (site_packages / "scalehop_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv


def _run(venv: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{args}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.mark.slow
def test_installed_wheel_carries_its_package_data(wheel_venv, tmp_path):
    probe = json.loads(_run(wheel_venv, str(wheel_venv / "bin" / "python"), "-c", PROBE, cwd=tmp_path).stdout)
    venv = str(wheel_venv.resolve())
    assert all(path.startswith(venv) for path in probe["files"].values()), probe["files"]
    assert not probe["editable"] and not any(p and Path(p).resolve() == ROOT for p in probe["sys_path"])
    assert probe["hf"] and not probe["datasets"].startswith(venv)  # Hugging Face's, from the project venv
    assert probe["datasets_dir"].startswith(venv) and probe["datasets_dir"].endswith("synthesis/_datasets")
    assert probe["recipes"] == recipe_names() and probe["quick"] == load_recipe("quick").model_dump(mode="json")
    assert probe["features"] == sorted(features("page_qa")) and probe["script"] > 1000 and all(probe["prompts"])
    assert set(probe["pages"].values()) == {200} and probe["css"] > 1000


@pytest.mark.slow
def test_installed_wheel_observes_explores_and_builds_a_dataset(wheel_venv, site_urls, tmp_path):
    scalehop = str(wheel_venv / "bin" / "scalehop")
    _run(wheel_venv, scalehop, "observe", site_urls["forum"], "--out", "observed", "--json", cwd=tmp_path)
    assert len(check_observation_dir(tmp_path / "observed")["elements"]) > 10

    explore = ["explore", site_urls["shop"], "--strategy", "random", "--steps", "6", "--run-id", "shop-random"]
    _run(wheel_venv, scalehop, *explore, "--runs-dir", "runs", "--json", cwd=tmp_path)
    run_dir = tmp_path / "runs" / "shop-random"
    _run(wheel_venv, scalehop, "dataset", "build", str(run_dir), "--recipe", "quick", "--out", "ds", cwd=tmp_path)
    out = tmp_path / "ds"
    stats = json.loads((out / "stats.json").read_text())
    assert stats["recipe"] == "quick" and sum(stats["counts"].values()) > 0
    assert "scalehop dataset (quick)" in (out / "README.md").read_text()  # the card, from the wheel's template
    assert {p.name for p in (out / "parquet").glob("*.parquet")} == {f"{t}.parquet" for t in stats["counts"]}
