import json
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
