"""Route 3, the RL models: a model file crafted to run code when unpickled is refused with a
clear error and runs nothing — a stable-baselines3 ``model.zip`` whose pickled parts write a
marker file, an ``.npz`` holding an object array with such a pickle (its hash recorded, so
only the no-pickle read stops it), and a ``model.json`` naming a foreign class or keyword
argument. The shipped models load from ``model.npz`` + ``model.json`` only."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import pickle
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

from agents.rl.model_files import DESCRIPTION_FILE, WEIGHTS_FILE
from agents.rl.policy import CONFIG_FILE, SHIPPED_MODELS, load
from heuresis_env.errors import HeuresisError


class _Exploit:
    """Unpickling it creates the marker file (what an attacker's payload would do instead)."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _copy_shipped(tmp_path: Path) -> Path:
    directory = tmp_path / "model"
    shutil.copytree(SHIPPED_MODELS["lg"], directory)
    return directory


def _sb3_zip(path: Path, marker: Path) -> None:
    """An archive laid out as stable-baselines3 saves one, its policy class a pickle."""
    payload = base64.b64encode(pickle.dumps(_Exploit(marker))).decode()
    data = {"policy_class": {":type:": "<class 'abc.ABCMeta'>", ":serialized:": payload},
            "observation_space": {":type:": "<class 'gymnasium.spaces.dict.Dict'>",
                                  ":serialized:": payload}}
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("data", json.dumps(data))
        archive.writestr("policy.pth", pickle.dumps(_Exploit(marker)))
        archive.writestr("_stable_baselines3_version", "2.9.2")


def test_a_stable_baselines3_zip_with_a_malicious_pickle_is_refused_and_runs_nothing(tmp_path):
    directory = _copy_shipped(tmp_path)
    marker = tmp_path / "pwned"
    for name in (WEIGHTS_FILE, DESCRIPTION_FILE):
        (directory / name).unlink()
    _sb3_zip(directory / "model.zip", marker)
    for target in (directory, directory / "model.zip"):
        with pytest.raises(HeuresisError, match="stable-baselines3 archive.*never loads it"):
            load(target).configure  # noqa: B018 - refused before any model is built
    from heuresis_env.evaluation.policies import make_policy

    with pytest.raises(HeuresisError, match="stable-baselines3 archive"):
        make_policy("rl", {"path": str(directory)})
    assert not marker.exists()


def test_a_zip_renamed_to_the_weights_file_is_refused_and_runs_nothing(tmp_path):
    directory = _copy_shipped(tmp_path)
    marker = tmp_path / "pwned"
    _sb3_zip(directory / WEIGHTS_FILE, marker)
    policy = load(directory)
    with pytest.raises(HeuresisError, match="SHA-256"):
        policy.model  # noqa: B018
    # the same archive with its hash recorded: still no pickle is read
    description = json.loads((directory / DESCRIPTION_FILE).read_text())
    description["weights"]["sha256"] = hashlib.sha256(
        (directory / WEIGHTS_FILE).read_bytes()).hexdigest()
    (directory / DESCRIPTION_FILE).write_text(json.dumps(description))
    with pytest.raises(HeuresisError, match="not an archive of plain arrays|holds the arrays"):
        load(directory).model  # noqa: B018
    assert not marker.exists()


def test_an_npz_with_an_object_array_is_refused_and_runs_nothing(tmp_path):
    directory = _copy_shipped(tmp_path)
    marker = tmp_path / "pwned"
    with np.load(directory / WEIGHTS_FILE, allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    first = sorted(arrays)[0]
    exploit = np.empty(1, dtype=object)
    exploit[0] = _Exploit(marker)
    arrays[first] = exploit
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)  # numpy pickles the object array into the archive
    (directory / WEIGHTS_FILE).write_bytes(buffer.getvalue())
    description = json.loads((directory / DESCRIPTION_FILE).read_text())
    description["weights"]["sha256"] = hashlib.sha256(buffer.getvalue()).hexdigest()
    (directory / DESCRIPTION_FILE).write_text(json.dumps(description))
    with pytest.raises(HeuresisError, match="not an archive of plain arrays.*never unpickled"):
        load(directory).model  # noqa: B018
    assert not marker.exists()


@pytest.mark.parametrize(("change", "message"), [
    ({"policy_class": "os:system"}, "policy class 'os:system'"),
    ({"policy_kwargs": {"hidden": 64, "activation_fn": "os.system"}}, "activation_fn"),
    ({"format": {"name": "pickle", "version": 1}}, "not a model description"),
    ({"observation_space": {"type": "Tuple"}}, "unknown space type 'Tuple'"),
])
def test_a_model_description_naming_anything_else_is_refused(tmp_path, change, message):
    directory = _copy_shipped(tmp_path)
    description = json.loads((directory / DESCRIPTION_FILE).read_text())
    (directory / DESCRIPTION_FILE).write_text(json.dumps({**description, **change}))
    with pytest.raises(HeuresisError, match=message):
        load(directory).model  # noqa: B018


def test_every_shipped_model_loads_from_plain_arrays_and_a_description():
    for name, directory in SHIPPED_MODELS.items():
        assert sorted(p.name for p in directory.glob("model.*")) == [DESCRIPTION_FILE,
                                                                      WEIGHTS_FILE], name
        description = json.loads((directory / DESCRIPTION_FILE).read_text())
        config = json.loads((directory / CONFIG_FILE).read_text())
        assert (description["algo"], description["architecture"]) == (
            config["algo"], config["architecture"])
        assert description["provenance"]["converted_from"]["file"] == "model.zip"


# ---- issue 46, route 10: the conversion script -------------------------------------------------

def test_the_conversion_script_reads_no_pickle_it_was_not_vouched_for(tmp_path):
    """On main ``scripts/convert_models.py rl DIR`` unpickled any ``model.zip`` it was given
    (and, with no argument, any under agents/data/rl_*): a planted zip ran its code. It now
    reads a pickle only with ``--trusted-sha256`` naming that very file's hash."""
    import hashlib
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    directory, marker = tmp_path / "model", tmp_path / "ran"
    directory.mkdir()
    _sb3_zip(directory / "model.zip", marker)
    wrong = hashlib.sha256(b"another file").hexdigest()
    for arguments in (["rl", str(directory)], ["rl"], ["rl", "--trusted-sha256", wrong,
                                                       str(directory)]):
        done = subprocess.run([sys.executable, "scripts/convert_models.py", *arguments],
                              cwd=root, capture_output=True, text=True, timeout=300)
        assert done.returncode != 0 and not marker.exists(), done.stderr[-2000:]
        assert "Traceback" not in done.stderr
    assert (directory / "model.zip").exists()
