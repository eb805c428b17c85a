"""The repository layout: it never hides the Hugging Face `datasets` library, and the layers only import downwards
(import-linter's contracts in pyproject.toml, and nothing below the flows imports them)."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FLOWS_IMPORT = re.compile(r"from flows|import flows")  # the README's grep pattern


def test_import_datasets_from_repo_root_is_huggingface():
    code = "import datasets, sys; print(datasets.__file__); print(hasattr(datasets, 'load_from_disk'))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    path, has_api = out.stdout.split()
    assert "site-packages" in path and not path.startswith(str(ROOT / "datasets"))
    assert has_api == "True"


def test_datasets_folder_is_not_a_package():
    assert (ROOT / "datasets").is_dir()
    assert not (ROOT / "datasets" / "__init__.py").exists()


def lint_imports(*args: str) -> subprocess.CompletedProcess:
    """Run import-linter (the venv's `lint-imports`) from the repository root."""
    binary = Path(sys.executable).parent / "lint-imports"
    return subprocess.run([str(binary), "--no-cache", *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_the_import_contracts_are_kept():
    done = lint_imports()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout and " KEPT" in done.stdout


def test_a_broken_layers_contract_is_reported(tmp_path):
    """The check bites: with the layers reversed (synthesis imports explorer, so explorer may not be above it)
    import-linter reports the contract broken and exits non-zero."""
    config = tmp_path / "reversed.toml"
    config.write_text(
        '[tool.importlinter]\nroot_packages = ["explorer", "synthesis"]\n\n'
        '[[tool.importlinter.contracts]]\nname = "reversed layers"\ntype = "layers"\n'
        'layers = ["explorer", "synthesis"]\n'
    )
    done = lint_imports("--config", str(config))
    assert done.returncode != 0
    assert "reversed layers BROKEN" in done.stdout and "synthesis" in done.stdout


def test_no_lower_layer_imports_the_flows():
    """`grep -rn "from flows\\|import flows" explorer synthesis training` prints nothing."""
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for folder in ("explorer", "synthesis", "training")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if FLOWS_IMPORT.search(line)
    ]
    assert found == []
