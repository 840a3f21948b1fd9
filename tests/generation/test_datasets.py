"""Data tables as instances: reading and checking CSVs and graphs, anonymization,
standardization, the shipped Sachs data and the Tübingen pair descriptions."""

from importlib import resources

import numpy as np
import pytest

from heuresis_env.generation import (
    InstanceKey,
    NoGroundTruthError,
    NoSCMError,
    cached_instance,
    dataset_instance,
    load_dataset,
    read_graph,
    read_table,
)
from heuresis_env.generation.datasets import (
    DatasetError,
    register_dataset,
    sachs_consensus_graph,
    sachs_table,
    tuebingen_pairs,
)
from heuresis_env.generation.instances import get_source, split_size
from heuresis_env.graphs import Graph, graph_from_edge_lines, has_directed_cycle
from heuresis_env.metrics import score_graph


def write(path, text):
    path.write_text(text)
    return path


def chain_csv(tmp_path, n=120, names=("alpha", "beta", "gamma")):
    rng = np.random.default_rng(0)
    a = rng.normal(size=n)
    b = 2 * a + rng.normal(size=n)
    c = -b + 0.5 * rng.normal(size=n)
    lines = [",".join(names)] + [f"{x:.6f},{y:.6f},{z:.6f}" for x, y, z in zip(a, b, c)]
    return write(tmp_path / "chain.csv", "\n".join(lines) + "\n")


def test_read_table_and_graph(tmp_path):
    X, names = read_table(chain_csv(tmp_path))
    assert X.shape == (120, 3) and names == ("alpha", "beta", "gamma")
    graph = read_graph(write(tmp_path / "g.txt", "# the chain\nalpha --> beta\n\nbeta --- gamma\n"),
                       names)
    assert graph.edge("alpha", "beta").is_directed and graph.edge("beta", "gamma").is_undirected


def test_bad_tables_name_the_columns(tmp_path):
    csv = write(tmp_path / "bad.csv", "a,b,c,d\n" + "\n".join(
        f"{i},{'' if i == 3 else i * 2},{'x' if i == 5 else i},7" for i in range(20)) + "\n")
    with pytest.raises(DatasetError) as info:
        read_table(csv)
    message = str(info.value)
    assert "missing values in column(s) 'b'" in message and "line 5" in message
    assert "non-numeric column(s) 'c'" in message and "'x'" in message
    constant = write(tmp_path / "constant.csv", "a,b,c\n" + "\n".join(
        f"{i},{i * 3 % 7},1" for i in range(20)) + "\n")
    with pytest.raises(DatasetError, match=r"constant column\(s\) \['c'\]"):
        read_table(constant)
    ragged = write(tmp_path / "ragged.csv", "a,b\n1,2\n3\n")
    with pytest.raises(DatasetError, match="line 3: 1 fields"):
        read_table(ragged)
    with pytest.raises(DatasetError, match="empty"):
        read_table(write(tmp_path / "empty.csv", ""))
    with pytest.raises(DatasetError, match="no such file"):
        read_table(tmp_path / "nothing.csv")
    with pytest.raises(DatasetError, match="at least 2 columns and 10 rows"):
        read_table(write(tmp_path / "short.csv", "a,b\n1,2\n3,4\n"))
    spaced = write(tmp_path / "spaced.csv", "tumour size,age\n" + "\n".join(
        f"{i},{i * i % 11}" for i in range(20)) + "\n")
    with pytest.raises(DatasetError, match="anonymize=True"):
        load_dataset(spaced)
    assert load_dataset(spaced, anonymize=True).names == ("X1", "X2")


def test_bad_graphs_are_refused(tmp_path):
    names = ("a", "b", "c")
    with pytest.raises(DatasetError, match="line 1.*'d'"):
        read_graph(["a --> d"], names)
    with pytest.raises(DatasetError, match="cycle"):
        read_graph(["a --> b", "b --> c", "c --> a"], names)
    with pytest.raises(DatasetError, match="same pair"):
        read_graph(["a --> b", "b --> a"], names)
    with pytest.raises(DatasetError, match="cannot read the edge"):
        read_graph(["a ==> b"], names)
    with pytest.raises(DatasetError, match="no such graph file"):
        read_graph(tmp_path / "none.txt", names)


def test_anonymized_instance_keeps_names_only_in_the_hidden_record(tmp_path):
    instance = load_dataset(chain_csv(tmp_path), ["alpha --> beta", "beta --> gamma"],
                            anonymize=True)
    assert instance.names == ("X1", "X2", "X3")
    columns = instance.record.source["columns"]
    assert sorted(columns.values()) == ["alpha", "beta", "gamma"]
    # the graph follows the columns: each true edge joins the renamed endpoints
    renamed = {v: k for k, v in columns.items()}
    assert instance.record.dag.edge(renamed["alpha"], renamed["beta"]).is_directed
    assert instance.record.dag.adjacent(renamed["beta"], renamed["gamma"])
    assert not instance.record.dag.adjacent(renamed["alpha"], renamed["gamma"])
    # the same table gives the same permutation; the data are the permuted columns
    again = load_dataset(chain_csv(tmp_path), anonymize=True)
    assert again.sha256 == instance.sha256
    raw, _ = read_table(chain_csv(tmp_path))
    standardized = (raw - raw.mean(0)) / raw.std(0)
    for k, name in enumerate(instance.names):
        j = ["alpha", "beta", "gamma"].index(columns[name])
        assert np.allclose(instance.X[:, k], standardized[:, j])


def test_standardization_is_optional_and_recorded(tmp_path):
    kept = load_dataset(chain_csv(tmp_path), standardize=False)
    raw, _ = read_table(chain_csv(tmp_path))
    assert np.array_equal(kept.X, raw) and kept.record.source["standardized"] is False
    scaled = load_dataset(chain_csv(tmp_path))
    assert np.allclose(scaled.X.std(0), 1) and scaled.record.source["standardized"] is True


def test_a_table_has_no_scm_and_maybe_no_graph(tmp_path):
    instance = load_dataset(chain_csv(tmp_path))
    assert instance.record.scm is None and not instance.record.has_ground_truth
    with pytest.raises(NoSCMError, match="interventional samples needs the structural"):
        instance.record.require_scm("interventional samples")
    with pytest.raises(NoGroundTruthError, match="no ground truth"):
        instance.record.require_graph("scoring")
    restored = type(instance.record).from_dict(instance.record.to_dict())
    assert restored.dag is None and restored.graph_model == "data"


def test_partially_directed_truth_is_scored_by_adjacency_and_class_shd(tmp_path):
    instance = load_dataset(chain_csv(tmp_path), ["alpha --> beta", "beta --- gamma"])
    output = Graph.from_edges(instance.names, [("alpha", "beta"), ("beta", "gamma")])
    scores = score_graph(output, instance.record.dag)
    assert scores["f1"] == 1.0 and np.isnan(scores["shd"]) and scores["shd_cpdag"] == 1


def test_registered_table_works_as_a_family_name(tmp_path):
    source = register_dataset(chain_csv(tmp_path), name="chain-table")
    assert get_source("chain-table") is source and source.details["path"].endswith("chain.csv")
    key = InstanceKey("chain-table", "test", 0)
    assert (key.d, key.n, key.graph_model) == (3, 120, "data")
    assert split_size("chain-table", "dev") == 1
    with pytest.raises(Exception, match="0..0"):
        InstanceKey("chain-table", "dev", 1)
    assert cached_instance(key).key == key
    with pytest.raises(Exception, match="generated family"):
        register_dataset(chain_csv(tmp_path), name="lg")


def test_a_table_name_registered_again_with_another_shape_serves_the_new_table(tmp_path):
    """register_instance replaces a table of the same name, whatever its size; a key of the
    old size is refused by the new table's loader."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    old = register_dataset(chain_csv(tmp_path / "a", names=("p", "q", "r")), name="cells")
    rng = np.random.default_rng(1)
    narrow = write(tmp_path / "b" / "cells.csv", "p,q\n" + "\n".join(
        f"{x:.4f},{y:.4f}" for x, y in rng.normal(size=(80, 2))))
    new = register_dataset(narrow, name="cells")
    assert (old.d, new.d) == (3, 2) and get_source("cells") is new
    assert cached_instance(InstanceKey("cells", "test", 0)).X.shape == (80, 2)
    with pytest.raises(Exception, match="has 2 columns and 80 rows"):
        cached_instance(InstanceKey("cells", "test", 0, d=3, n=120, graph_model="data"))


def test_sachs_data_and_graphs():
    X, names = sachs_table()
    assert X.shape == (853, 11)
    assert names == ("Raf", "Mek", "Plcg", "PIP2", "PIP3", "Erk", "Akt", "PKA", "PKC", "P38",
                     "Jnk")
    assert np.allclose(X[0], [26.4, 13.2, 8.82, 18.3, 58.8, 6.61, 17, 414, 17, 44.9, 40])
    consensus = sachs_consensus_graph()
    assert consensus.n_edges() == 17 and consensus.graph_type() == "dag"
    cdt_text = resources.files("heuresis_env").joinpath("data/sachs/sachs_cdt_18.txt")
    cdt = graph_from_edge_lines(names, cdt_text.read_text().splitlines())
    assert cdt.n_edges() == 18
    assert has_directed_cycle(cdt.directed_adjacency())  # PIP2 → PIP3 → Plcg → PIP2
    with pytest.raises(DatasetError, match="cycle"):
        read_graph(cdt, names)
    instance = cached_instance(InstanceKey("sachs", "dev", 0))
    assert instance.names == tuple(f"X{i}" for i in range(1, 12))
    assert instance.record.dag.n_edges() == 17
    assert sorted(instance.record.source["columns"].values()) == sorted(names)


def test_tuebingen_descriptions():
    pairs = tuebingen_pairs()
    assert len(pairs) == 99 and len(tuebingen_pairs(usable_only=False)) == 108
    first = pairs[0]
    assert (first["pair"], first["var1"], first["var2"], first["truth"]) == (
        "pair0001", "Altitude", "Temperature", "->")
    assert all(p["truth"] in ("->", "<-") and p["var1"].lower() != p["var2"].lower()
               for p in pairs)
    excluded = {p["pair"]: p["status"] for p in tuebingen_pairs(False) if p["status"] != "ok"}
    assert excluded == {"pair0052": "multivariate", "pair0053": "multivariate",
                        "pair0054": "multivariate", "pair0055": "multivariate",
                        "pair0071": "multivariate", "pair0105": "multivariate",
                        "pair0093": "no ground truth", "pair0089": "same description",
                        "pair0090": "same description"}


def test_dataset_instance_from_arrays():
    rng = np.random.default_rng(1)
    data = rng.normal(size=(50, 4))
    instance = dataset_instance(data, ["a", "b", "c", "d"], name="arrays")
    assert instance.key.family == "arrays" and instance.d == 4
    with pytest.raises(DatasetError, match="non-finite"):
        dataset_instance(np.where(data > 2, np.nan, data), ["a", "b", "c", "d"])
    with pytest.raises(DatasetError, match="duplicate"):
        dataset_instance(data, ["a", "a", "c", "d"])
