import json
import os
import subprocess
from pathlib import Path

import pytest


def _repo_root() -> Path:
    for parent in Path(__file__).resolve().parents:
        if (parent / "tests" / "vectors" / "hashline.json").is_file():
            return parent
    raise RuntimeError("cannot find tests/vectors/hashline.json above " + __file__)


@pytest.fixture(scope="session")
def vectors() -> dict:
    return json.loads((_repo_root() / "tests" / "vectors" / "hashline.json").read_text("utf-8"))


def scripted_model_binary() -> Path:
    """The project's scripted model server: $CODERIG_SCRIPTED_MODEL (what
    scripts/test.sh built, so no test waits on cargo), else built here."""
    given = os.environ.get("CODERIG_SCRIPTED_MODEL")
    if given:
        return Path(given)
    root = _repo_root()
    subprocess.run(["cargo", "build", "--quiet", "-p", "coderig-scripted-model"], cwd=root, check=True)
    meta = json.loads(subprocess.run(["cargo", "metadata", "--format-version", "1", "--no-deps"],
                                     cwd=root, check=True, capture_output=True, text=True).stdout)
    return Path(meta["target_directory"]) / "debug" / "coderig-scripted-model"
