"""The repository layout never hides the Hugging Face `datasets` library."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_import_datasets_from_repo_root_is_huggingface():
    code = "import datasets, sys; print(datasets.__file__); print(hasattr(datasets, 'load_from_disk'))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    path, has_api = out.stdout.split()
    assert "site-packages" in path and not path.startswith(str(ROOT / "datasets"))
    assert has_api == "True"


def test_datasets_folder_is_not_a_package():
    assert (ROOT / "datasets").is_dir()
    assert not (ROOT / "datasets" / "__init__.py").exists()


def test_design_card_folders_exist():
    for name in ["flows", "explorer", "training", "datasets", "docker", "tests", "sites", "bench", "configs"]:
        assert (ROOT / name).is_dir(), name
