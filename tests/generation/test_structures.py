"""The shipped BNLearn structures and the families on them: they match the BIF files they were
read from, and their instances are anonymized, seeded and sized by the structure."""

import json
import os
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from heuresis_env.errors import HeuresisError, UnknownNameError
from heuresis_env.generation import (
    BNLEARN_LARGE_NETWORKS,
    BNLEARN_NETWORKS,
    BNLEARN_SHELF,
    STRUCTURE_FAMILIES,
    FamilySpec,
    InstanceKey,
    bnlearn_structure,
    expand_families,
    generate_instance,
    get_family,
)
from heuresis_env.generation.structures import Structure, parse_structure
from heuresis_env.registration import REGISTERED_STRUCTURES, env_id

FACTS = json.loads((Path(__file__).parent / "data" / "bnlearn_bif_facts.json").read_text())
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import extract_realdata  # noqa: E402  (the extraction script, kept in the repository)


@pytest.mark.parametrize("network", BNLEARN_SHELF)
def test_shipped_structure_matches_its_bif_file(network):
    facts = FACTS["networks"][network]
    structure = bnlearn_structure(network)
    assert list(structure.names) == facts["nodes"]
    assert len(structure.edges) == facts["arcs"]
    text = (ROOT / "heuresis_env" / "data" / "bnlearn" / f"{network}.txt").read_text()
    assert facts["bif_sha256"] in text  # the file names the BIF it was read from
    assert structure.graph().graph_type() == "dag"


def test_published_sizes():
    sizes = {n: (bnlearn_structure(n).d, len(bnlearn_structure(n).edges))
             for n in BNLEARN_SHELF}
    assert sizes == {"asia": (8, 8), "cancer": (5, 4), "earthquake": (5, 4), "sachs": (11, 17),
                     "child": (20, 25), "insurance": (27, 52), "alarm": (37, 46),
                     "hailfinder": (56, 66), "hepar2": (70, 123), "win95pts": (76, 112),
                     "andes": (223, 338)}
    assert sizes == extract_realdata.SIZES  # what the extraction checks against pgmpy's tags


def test_bif_parser_reads_parents_and_refuses_undeclared_names():
    text = """network x {
}
variable A {
  type discrete [ 2 ] { a, b };
}
variable B {
  type discrete [ 2 ] { a, b };
}
variable C {
  type discrete [ 2 ] { a, b };
}
probability ( A ) {
  table 0.5, 0.5;
}
probability ( C | A, B ) {
  (a, a) 0.1, 0.9;
}
probability ( B | A ) {
  (a) 0.1, 0.9;
}
"""
    names, edges = extract_realdata.parse_bif(text)
    assert names == ["A", "B", "C"]
    assert sorted(edges) == [("A", "B"), ("A", "C"), ("B", "C")]
    with pytest.raises(ValueError, match="undeclared"):
        extract_realdata.parse_bif(text.replace("variable C", "variable D"))


@pytest.mark.skipif(not os.environ.get("HEURESIS_PGMPY_WHEEL"),
                    reason="set HEURESIS_PGMPY_WHEEL to pgmpy 1.1.2's wheel to re-extract")
def test_extraction_reproduces_the_shipped_files(tmp_path):
    extract_realdata.extract_bnlearn(Path(os.environ["HEURESIS_PGMPY_WHEEL"]), tmp_path)
    for network in BNLEARN_SHELF:
        shipped = ROOT / "heuresis_env" / "data" / "bnlearn" / f"{network}.txt"
        assert (tmp_path / "bnlearn" / f"{network}.txt").read_text() == shipped.read_text()


def test_structure_files_are_checked():
    with pytest.raises(HeuresisError, match="nodes"):
        parse_structure("x", ["A --> B"])
    with pytest.raises(HeuresisError, match="line 2"):
        parse_structure("x", ["# nodes: A B", "A --> C"])
    with pytest.raises(HeuresisError, match="directed"):
        parse_structure("x", ["# nodes: A B", "A --- B"])
    with pytest.raises(HeuresisError, match="DAG"):
        Structure("x", ("A", "B"), (("A", "B"), ("B", "A")))
    with pytest.raises(UnknownNameError, match="asia"):
        bnlearn_structure("asiaa")


def test_families_registered_with_ids_and_groups():
    assert STRUCTURE_FAMILIES == REGISTERED_STRUCTURES
    assert STRUCTURE_FAMILIES == tuple(f"bnlearn-{n}" for n in BNLEARN_SHELF)
    assert expand_families("bnlearn") == [f"bnlearn-{n}" for n in BNLEARN_NETWORKS]
    assert expand_families("bnlearn-large") == [f"bnlearn-{n}" for n in BNLEARN_LARGE_NETWORKS]
    assert expand_families("shelf") == list(STRUCTURE_FAMILIES)
    assert expand_families("all") == ["lg", "anm", "hetero", "wild", "mixed", "gauntlet"]
    assert expand_families("lg,bnlearn-asia") == ["lg", "bnlearn-asia"]
    for family in STRUCTURE_FAMILIES:
        spec = get_family(family)
        assert spec.structure is not None
        assert FamilySpec.from_dict(spec.to_dict()) == spec
        assert spec.mechanisms == get_family("lg").mechanisms
        assert env_id(family) in gym.registry


@pytest.mark.parametrize("network", ["asia", "alarm"])
def test_instances_are_the_structure_anonymized(network):
    structure = bnlearn_structure(network)
    family = f"bnlearn-{network}"
    key = InstanceKey(family, "dev", 3)
    assert (key.d, key.n, key.graph_model) == (structure.d, 600, "fixed")
    instance = generate_instance(key)
    assert instance.names == tuple(f"X{i + 1}" for i in range(structure.d))
    X = np.asarray(instance.X)
    assert np.max(np.abs(X.mean(0))) < 1e-12 and np.max(np.abs(X.var(0) - 1)) < 1e-12
    # the same graph up to the column permutation: degree sequences and edge count agree
    truth = instance.record.dag.directed_adjacency()
    original = structure.adjacency()
    assert truth.sum() == original.sum()
    assert sorted(zip(truth.sum(0), truth.sum(1))) == sorted(zip(original.sum(0),
                                                                 original.sum(1)))
    assert {m["kind"] for m in instance.record.mechanisms.values()} <= {"linear",
                                                                       "root_gaussian"}
    # seeded: the same key gives the same bytes; another index another permutation/draw
    assert generate_instance(key).sha256 == instance.sha256
    assert generate_instance(InstanceKey(family, "dev", 4)).sha256 != instance.sha256
    assert generate_instance(InstanceKey(family, "test", 3)).sha256 != instance.sha256


def test_the_permutation_hides_the_original_order():
    # the structure's first node (a root) lands in different columns across instances
    first = bnlearn_structure("alarm").names[0]
    structure = bnlearn_structure("alarm")
    out_degree = structure.adjacency().sum(1)[0]
    in_degree = structure.adjacency().sum(0)[0]
    columns = set()
    for index in range(12):
        record = generate_instance(InstanceKey("bnlearn-alarm", "dev", index)).record
        adjacency = record.dag.directed_adjacency()
        matches = [j for j in range(adjacency.shape[0])
                   if adjacency[:, j].sum() == in_degree and adjacency[j].sum() == out_degree]
        columns.add(matches[0])
    assert len(columns) > 4, first


def test_size_of_a_structure_family_is_its_own():
    with pytest.raises(HeuresisError, match="fixed structure of 37 variables"):
        InstanceKey("bnlearn-alarm", "dev", 0, d=10)
    with pytest.raises(HeuresisError, match="graph_model"):
        InstanceKey("bnlearn-alarm", "dev", 0, graph_model="er")
    assert InstanceKey("bnlearn-alarm", "dev", 0, d=37, n=200).n == 200
    assert InstanceKey("lg", "dev", 0).to_dict()["d"] == 10  # unchanged defaults elsewhere


def test_the_largest_structure_samples_finite_standardized_data():
    # andes: d = 223, depth 40; the lg mechanisms' variance grows along paths, yet the raw
    # draw stays finite and the standardized table is clean
    key = InstanceKey("bnlearn-andes", "dev", 0)
    instance = generate_instance(key)
    X = np.asarray(instance.X)
    assert X.shape == (600, 223) and np.isfinite(X).all()
    assert np.max(np.abs(X.mean(0))) < 1e-9 and np.max(np.abs(X.var(0) - 1)) < 1e-9
    assert instance.record.dag.n_edges() == 338
    assert generate_instance(key).sha256 == instance.sha256


def test_a_large_structure_id_resets_and_is_scored():
    env = gym.make(env_id("bnlearn-andes"), max_steps=3)  # the text view
    observation, info = env.reset(seed=0)
    assert env.unwrapped.d == 223 and info["data"].shape == (600, 223)
    assert "223 columns named X1, X2" in observation["text"]
    _, _, terminated, _, info = env.step('{"tool": "submit", "args": {}}')
    assert terminated and info["scores"]["shd"] == 338  # the empty graph misses every arc
    env.close()
