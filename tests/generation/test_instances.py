"""Instances: keys and seeds, determinism, splits and salt, data properties, the record,
the store (save/load and every bad-file case), bad input, and the two CLI subcommands."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from heuresis_env.errors import HeuresisError, InstanceFormatError, UnknownNameError
from heuresis_env.generation.families import get_family
from heuresis_env.generation.instances import (
    GENERATOR_VERSION,
    SPLIT_SIZES,
    Instance,
    InstanceKey,
    generate_instance,
    generate_split,
    instance_rngs,
    key_seed_sequence,
    load_instance,
    load_split,
    save_instance,
    save_split,
)
from heuresis_env.generation.record import HiddenRecord
from heuresis_env.graphs import cpdag_from_dag

FAMILIES = ("lg", "anm", "hetero", "wild", "mixed", "gauntlet")

#: SHA-256 of X for dev index 0 of each family at the defaults. A change here means the
#: generator changed: bump GENERATOR_VERSION (and update these) — old instances differ.
GOLDEN_DEV0 = {
    "lg": "977b5c99fef7b463a2dfdb910777ac878db0cd48cf1cbae1284b587b69a68619",
    "anm": "54ebd88b914fcc0eb2b2934a9034f3cb1ff8e1c85ebbfee89bcc1171407b949d",
    "hetero": "bd199cef3d20355d351207de853b9e292e4959e8be770d1e3cc145e22ef55344",
    "wild": "8cb29b424f5dff6451b4f7ca27e6b71d9fd394e78262c72a3631a4f926a59fc4",
    "mixed": "a854e097c61e10e70ed1cc301433e38bdf318ac386725379745bcd9ae0da0e90",
    "gauntlet": "c0699fcea5de4e8ae5e48d4090b7b37e4eecdd51b1801553c403a0243cf47387",
}
GOLDEN_TEST_BA = "8af22884ef7849e61cba5c883e918f4bc067e12c5d19e3ee7d81adaa09e908bb"


@pytest.fixture(autouse=True)
def _no_ambient_salt(monkeypatch):
    monkeypatch.delenv("HEURESIS_TEST_SALT", raising=False)


# ---- determinism ---------------------------------------------------------------------------------

def test_golden_hashes_pin_the_generator():
    assert GENERATOR_VERSION == "1"
    for family, expected in GOLDEN_DEV0.items():
        assert generate_instance(InstanceKey(family, "dev", 0)).sha256 == expected, family
    key = InstanceKey("wild", "test", 5, d=7, n=77, graph_model="ba")
    assert generate_instance(key).sha256 == GOLDEN_TEST_BA


def test_same_key_same_bytes_in_two_processes():
    code = ("from heuresis_env.generation.instances import InstanceKey, generate_instance\n"
            "import json\n"
            "out = {}\n"
            "for f in ('lg', 'wild', 'gauntlet'):\n"
            "    i = generate_instance(InstanceKey(f, 'dev', 17, d=12, n=90))\n"
            "    out[f] = [i.sha256, json.dumps(i.record.to_dict(), sort_keys=True)]\n"
            "print(json.dumps(out))\n")
    results = []
    for seed in ("0", "12345"):  # different hash seeds: nothing may depend on them
        env = {"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"}
        completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                   env=env, cwd=str(Path(__file__).resolve().parents[2]),
                                   check=True)
        results.append(json.loads(completed.stdout))
    assert results[0] == results[1]
    for family in ("lg", "wild", "gauntlet"):
        here = generate_instance(InstanceKey(family, "dev", 17, d=12, n=90))
        assert results[0][family][0] == here.sha256
        assert results[0][family][1] == json.dumps(here.record.to_dict(), sort_keys=True)


def test_scm_with_the_data_stream_reproduces_x():
    for family in FAMILIES:
        instance = generate_instance(InstanceKey(family, "dev", 3))
        again = instance.record.scm.sample(instance.n, instance_rngs(instance.key)["data"])
        assert again.tobytes() == instance.X.tobytes(), family


#: strong test salts (random tokens, as `heuresis salt` prints them)
SECRET = "d32aba12d757b4f6f472b17883ac65ee44ae24ef0ed5f40053a98d50c6b36e48"
OTHER_SECRET = "2e1669e6076d77274cb48eba32d51ad6635b4d180c1622fced5a0f81811135cf"


# ---- splits, seeds and salt -------------------------------------------------------------------------

def test_dev_and_test_seeds_are_disjoint():
    dev = {tuple(key_seed_sequence(InstanceKey("lg", "dev", i)).entropy)
           for i in range(SPLIT_SIZES["dev"])}
    test = {tuple(key_seed_sequence(InstanceKey("lg", "test", i)).entropy)
            for i in range(SPLIT_SIZES["test"])}
    sealed = {tuple(key_seed_sequence(InstanceKey("lg", "test", i), salt=SECRET).entropy)
              for i in range(SPLIT_SIZES["test"])}
    assert len(dev) == 100 and len(test) == 32 and len(sealed) == 32
    assert not dev & test and not dev & sealed and not test & sealed
    dev_hashes = {generate_instance(InstanceKey("wild", "dev", i)).sha256 for i in range(32)}
    test_hashes = {generate_instance(InstanceKey("wild", "test", i)).sha256 for i in range(32)}
    assert len(dev_hashes) == 32 and len(test_hashes) == 32 and not dev_hashes & test_hashes


def test_salt_changes_test_instances_and_nothing_else(monkeypatch):
    dev = InstanceKey("mixed", "dev", 2)
    test = InstanceKey("mixed", "test", 2)
    plain_dev, plain_test = generate_instance(dev), generate_instance(test)
    salted_dev = generate_instance(dev, salt=SECRET)
    salted_test = generate_instance(test, salt=SECRET)
    other_test = generate_instance(test, salt=OTHER_SECRET)
    assert salted_dev.sha256 == plain_dev.sha256 and not salted_dev.sealed
    assert salted_test.sha256 != plain_test.sha256 and salted_test.sealed
    assert other_test.sha256 != salted_test.sha256
    assert generate_instance(test, salt=SECRET).sha256 == salted_test.sha256
    # the environment variable seals the test split the same way
    monkeypatch.setenv("HEURESIS_TEST_SALT", SECRET)
    assert generate_instance(test).sha256 == salted_test.sha256
    assert generate_instance(dev).sha256 == plain_dev.sha256
    assert generate_instance(test, salt="").sha256 == plain_test.sha256  # explicit: unsealed


def test_key_fields_all_change_the_instance():
    base = InstanceKey("anm", "dev", 5)
    variants = [InstanceKey("anm", "dev", 6), InstanceKey("anm", "dev", 5, d=11),
                InstanceKey("anm", "dev", 5, n=601), InstanceKey("anm", "dev", 5, graph_model="ba"),
                InstanceKey("lg", "dev", 5)]
    hashes = {generate_instance(k).sha256 for k in [base, *variants]}
    assert len(hashes) == 6


# ---- data properties ----------------------------------------------------------------------------

@pytest.mark.parametrize("family", FAMILIES)
def test_columns_standardized_and_named(family):
    for index in range(3):
        instance = generate_instance(InstanceKey(family, "dev", index))
        X = np.asarray(instance.X)
        assert X.dtype == np.float64 and X.shape == (600, 10) and X.flags.c_contiguous
        assert np.max(np.abs(X.mean(axis=0))) < 1e-12
        assert np.max(np.abs(X.var(axis=0) - 1)) < 1e-12
        assert instance.names == tuple(f"X{i}" for i in range(1, 11))
        assert instance.record.dag.names == instance.names
        assert set(instance.record.mechanisms) == set(instance.names)


def test_x_is_read_only():
    instance = generate_instance(InstanceKey("lg", "dev", 0))
    with pytest.raises(ValueError):
        instance.X[0, 0] = 1.0


def test_mean_edge_count_is_about_d():
    for family in ("lg", "wild"):
        counts = [generate_instance(InstanceKey(family, "dev", i, n=50)).record.dag.n_edges()
                  for i in range(100)]
        # Binomial(45, 2/9): sd 2.79, so the mean of 100 has sd 0.28
        assert abs(np.mean(counts) - 10) < 4 * 0.279, (family, np.mean(counts))


def test_source_nodes_sit_uniformly_among_the_columns():
    """Column names carry no causal order: the first node of the causal order lands in every
    column equally often, and so do all sources."""
    first = np.zeros(10)
    sources = np.zeros(10)
    for index in range(100):
        for family in ("lg", "gauntlet"):
            instance = generate_instance(InstanceKey(family, "dev", index, n=50))
            scm = instance.record.scm
            first[scm.causal_order[0]] += 1
            sources += ~scm.adjacency.any(axis=0)
    assert stats.chisquare(first).pvalue > 1e-3
    assert stats.chisquare(sources).pvalue > 1e-3


def test_small_large_and_ba_instances():
    tiny = generate_instance(InstanceKey("wild", "dev", 0, d=2, n=10))
    assert tiny.X.shape == (10, 2) and tiny.record.dag.n_edges() == 1
    wide = generate_instance(InstanceKey("gauntlet", "dev", 0, d=50, n=50))
    assert wide.X.shape == (50, 50) and wide.record.dag.is_dag()
    assert np.max(np.abs(np.asarray(wide.X).var(axis=0) - 1)) < 1e-12
    ba = generate_instance(InstanceKey("hetero", "dev", 1, d=15, graph_model="ba"))
    assert ba.record.graph_model == "ba" and ba.record.dag.n_edges() == 14


# ---- the record -----------------------------------------------------------------------------------

def test_record_contents_and_round_trip():
    instance = generate_instance(InstanceKey("wild", "dev", 9))
    record = instance.record
    assert record.dag.is_dag()
    assert record.cpdag == cpdag_from_dag(record.dag)
    for name, mechanism in record.mechanisms.items():
        assert sorted(mechanism["parents"]) == sorted(record.dag.parents(name))
        assert mechanism["noise"] in ("gaussian", "t3")
        allowed = get_family("wild").kinds if mechanism["parents"] else ["root_gaussian"]
        assert mechanism["kind"] in allowed
    restored = HiddenRecord.from_dict(json.loads(json.dumps(record.to_dict())))
    assert restored.dag == record.dag and restored.cpdag == record.cpdag
    assert restored.mechanisms == record.mechanisms and restored.graph_model == "er"
    tampered = record.to_dict()
    tampered["dag"]["marks"][0], tampered["dag"]["marks"][1] = \
        tampered["dag"]["marks"][1], tampered["dag"]["marks"][0]
    with pytest.raises(HeuresisError):
        HiddenRecord.from_dict(tampered)


def test_repr_hides_the_record():
    instance = generate_instance(InstanceKey("lg", "dev", 1))
    text = repr(instance)
    assert "lg/dev/1" in text and "600, 10" in text
    for secret in ("-->", "linear", "mechanism", "weights", "dag", "record"):
        assert secret not in text
    assert "scm" not in repr(instance.record)


def test_key_helpers():
    key = InstanceKey.parse("wild/dev/3")
    assert key == InstanceKey("wild", "dev", 3)
    assert key.slug == "wild-dev-003-d10-n600-er-v1"
    assert InstanceKey.from_dict(key.to_dict()) == key
    assert InstanceKey.parse("lg/test/31", d=20).d == 20
    with pytest.raises(HeuresisError, match="family/split/index"):
        InstanceKey.parse("wild-dev-3")


# ---- bad input -----------------------------------------------------------------------------------------

def test_bad_input_names_the_valid_range():
    with pytest.raises(UnknownNameError, match="gauntlet"):
        generate_instance(InstanceKey("wilder", "dev", 0))
    with pytest.raises(UnknownNameError, match="hetero"):
        generate_split("wilder", "dev", count=1)
    with pytest.raises(HeuresisError, match=r"d must be an integer in 2\.\.1,000"):
        InstanceKey("lg", "dev", 0, d=1)
    with pytest.raises(HeuresisError, match=r"n must be an integer in 10\.\.1,000,000"):
        InstanceKey("lg", "dev", 0, n=9)
    with pytest.raises(HeuresisError, match=r"0\.\.99"):
        InstanceKey("lg", "dev", -1)
    with pytest.raises(HeuresisError, match=r"0\.\.99"):
        InstanceKey("lg", "dev", 100)
    with pytest.raises(HeuresisError, match=r"0\.\.31"):
        InstanceKey("lg", "test", 32)
    with pytest.raises(HeuresisError, match=r"0\.\.31"):
        InstanceKey("lg", "test", 1.5)
    with pytest.raises(UnknownNameError, match="dev"):
        InstanceKey("lg", "validation", 0)
    with pytest.raises(UnknownNameError, match="ba"):
        InstanceKey("lg", "dev", 0, graph_model="sf")
    with pytest.raises(HeuresisError, match=r"0\.\.32"):
        generate_split("lg", "test", count=33)
    with pytest.raises(HeuresisError, match="version"):
        generate_instance(InstanceKey("lg", "dev", 0, generator_version="0"))
    with pytest.raises(HeuresisError, match="InstanceKey"):
        generate_instance(("lg", "dev", 0))


def test_generate_split_defaults():
    instances = generate_split("lg", "test", count=3, n=60)
    assert [i.key.index for i in instances] == [0, 1, 2]
    assert all(isinstance(i, Instance) and i.key.split == "test" for i in instances)
    assert generate_split("lg", "dev", count=0) == []


# ---- the store -------------------------------------------------------------------------------------

def test_save_load_round_trip(tmp_path):
    instance = generate_instance(InstanceKey("gauntlet", "test", 4), salt=SECRET)
    stem = save_instance(instance, tmp_path / "one.npz")
    assert stem == tmp_path / "one"
    document = json.loads((tmp_path / "one.json").read_text())
    assert document["format_version"] == 1 and document["sha256"] == instance.sha256
    for path in (stem, tmp_path / "one.json", tmp_path / "one.npz"):
        loaded = load_instance(path)
        assert loaded.X.tobytes() == instance.X.tobytes()
        assert loaded.key == instance.key and loaded.sealed
        assert loaded.record.dag == instance.record.dag
        assert loaded.record.mechanisms == instance.record.mechanisms
    dotted = load_instance(save_instance(instance, tmp_path / "run.v1"))  # dots in the stem
    assert dotted.sha256 == instance.sha256 and (tmp_path / "run.v1.json").exists()
    more = loaded.record.scm.sample(30, np.random.default_rng(0))
    assert more.tobytes() == instance.record.scm.sample(30, np.random.default_rng(0)).tobytes()


@pytest.fixture
def saved(tmp_path):
    instance = generate_instance(InstanceKey("lg", "dev", 2, n=40))
    return save_instance(instance, tmp_path / "inst"), instance


def test_unknown_format_version(saved):
    stem, _ = saved
    document = json.loads(stem.with_suffix(".json").read_text())
    document["format_version"] = 99
    stem.with_suffix(".json").write_text(json.dumps(document))
    with pytest.raises(InstanceFormatError, match="format_version 99"):
        load_instance(stem)


def test_truncated_json(saved):
    stem, _ = saved
    text = stem.with_suffix(".json").read_text()
    stem.with_suffix(".json").write_text(text[: len(text) // 2])
    with pytest.raises(InstanceFormatError, match="truncated or not JSON"):
        load_instance(stem)


def test_truncated_npz(saved):
    stem, _ = saved
    data = stem.with_suffix(".npz").read_bytes()
    stem.with_suffix(".npz").write_bytes(data[: len(data) // 2])
    with pytest.raises(InstanceFormatError, match="truncated or corrupt"):
        load_instance(stem)


def test_corrupt_npz_bytes(saved):
    stem, _ = saved
    stem.with_suffix(".npz").write_bytes(b"not a zip file at all")
    with pytest.raises(InstanceFormatError, match="truncated or corrupt"):
        load_instance(stem)


def test_hash_mismatch(saved):
    stem, instance = saved
    tampered = np.array(instance.X)
    tampered[3, 1] += 1e-9
    with open(stem.with_suffix(".npz"), "wb") as handle:
        np.savez(handle, X=tampered)
    with pytest.raises(InstanceFormatError, match="does not match the record"):
        load_instance(stem)


def test_missing_files_and_wrong_shape(saved):
    stem, instance = saved
    with pytest.raises(InstanceFormatError, match="not found"):
        load_instance(stem.parent / "nothing")
    with open(stem.with_suffix(".npz"), "wb") as handle:
        np.savez(handle, X=np.asarray(instance.X)[:, :5])
    with pytest.raises(InstanceFormatError, match="shape"):
        load_instance(stem)
    with zipfile.ZipFile(stem.with_suffix(".npz"), "w") as archive:
        archive.writestr("Y.npy", b"")
    with pytest.raises(InstanceFormatError, match="truncated or corrupt"):
        load_instance(stem)
    stem.with_suffix(".npz").unlink()
    with pytest.raises(InstanceFormatError, match="not found"):
        load_instance(stem)


def test_malformed_record(saved):
    stem, _ = saved
    document = json.loads(stem.with_suffix(".json").read_text())
    del document["record"]["scm"]
    stem.with_suffix(".json").write_text(json.dumps(document))
    with pytest.raises(InstanceFormatError, match="malformed"):
        load_instance(stem)


def test_split_round_trip_and_manifest_checks(tmp_path):
    instances = generate_split("hetero", "dev", count=4, n=50)
    manifest_path = save_split(instances, tmp_path)
    loaded = load_split(tmp_path)
    assert [i.sha256 for i in loaded] == [i.sha256 for i in instances]
    manifest = json.loads(manifest_path.read_text())
    assert manifest["count"] == 4 and manifest["format_version"] == 1
    # swap two instance files: each is self-consistent, but the manifest notices
    first, second = (tmp_path / instances[0].key.slug, tmp_path / instances[1].key.slug)
    for suffix in (".json", ".npz"):
        a, b = first.with_suffix(suffix).read_bytes(), second.with_suffix(suffix).read_bytes()
        first.with_suffix(suffix).write_bytes(b)
        second.with_suffix(suffix).write_bytes(a)
    with pytest.raises(InstanceFormatError, match="manifest"):
        load_split(tmp_path)
    manifest_path.unlink()
    with pytest.raises(InstanceFormatError, match="not found"):
        load_split(tmp_path)


# ---- CLI -----------------------------------------------------------------------------------------------

def _parse(module, argv):
    parser = argparse.ArgumentParser()
    module.add_arguments(parser)
    return parser.parse_args(argv)


def test_cli_generate_and_show(tmp_path, capsys):
    from heuresis_env.cli import generate, show

    args = _parse(generate, ["--family", "all", "--split", "test", "--count", "2", "--n", "60",
                             "--out", str(tmp_path), "--no-progress"])
    assert generate.run(args) == 0
    out = capsys.readouterr().out
    for family in FAMILIES:
        assert family in out
        assert len(load_split(tmp_path / family / "test")) == 2
    assert "varsort" in out and "R2-sort" in out

    stem = tmp_path / "wild" / "test" / InstanceKey("wild", "test", 1, n=60).slug
    assert show.run(_parse(show, [str(stem) + ".json"])) == 0
    hidden = capsys.readouterr().out
    assert "sha256" in hidden and "varsortability" in hidden and "X10" in hidden
    assert "-->" not in hidden and "map_" not in hidden and "linear" not in hidden

    assert show.run(_parse(show, [str(stem), "--reveal"])) == 0
    revealed = capsys.readouterr().out
    assert "-->" in revealed and "mechanisms:" in revealed

    assert show.run(_parse(show, ["lg/dev/3", "--n", "80", "--reveal", "--json"])) == 0
    assert '"column_sds"' in capsys.readouterr().out
    assert show.run(_parse(show, [str(tmp_path / "lg" / "test")])) == 0
    assert "2 instances" in capsys.readouterr().out


def test_cli_bad_input(tmp_path):
    from heuresis_env.cli import generate, show

    with pytest.raises(UnknownNameError, match="gauntlet"):
        generate.run(_parse(generate, ["--family", "nope", "--split", "dev", "--out",
                                       str(tmp_path), "--no-progress"]))
    with pytest.raises(HeuresisError, match=r"0\.\.32"):
        generate.run(_parse(generate, ["--family", "lg", "--split", "test", "--count", "40",
                                       "--out", str(tmp_path), "--no-progress"]))
    with pytest.raises(HeuresisError, match="neither an instance file nor a key"):
        show.run(_parse(show, ["no-such-file.json"]))
    with pytest.raises(HeuresisError, match="manifest"):
        show.run(_parse(show, [str(tmp_path)]))


# ---- the disk cache of generated instances -------------------------------------------------------

@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    """A cache root of this test's own and an empty memo."""
    from heuresis_env.generation import instances

    monkeypatch.setenv("HEURESIS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("HEURESIS_NO_CACHE", raising=False)
    instances._GENERATED.clear()
    yield tmp_path / "cache"
    instances._GENERATED.clear()


def _generator_refuses(monkeypatch):
    """From here on, an instance can only come from the disk cache."""
    from heuresis_env.generation import instances

    def refuse(key, salt=None):
        raise AssertionError(f"{key.slug} was generated, not read back")

    monkeypatch.setattr(instances, "generate_instance", refuse)


def _cached_files(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "instances").rglob("*") if p.is_file())


def test_stored_instance_is_read_back_identical(own_cache, monkeypatch):
    from heuresis_env.generation.instances import cached_instance, stored_instance

    keys = [InstanceKey("gauntlet", "dev", 4, n=200), InstanceKey("hetero", "test", 1, n=200)]
    fresh = [generate_instance(key) for key in keys]
    assert [stored_instance(key).sha256 for key in keys] == [i.sha256 for i in fresh]
    assert _cached_files(own_cache) == sorted(f"{key.slug}{suffix}" for key in keys
                                              for suffix in (".json", ".npz"))
    _generator_refuses(monkeypatch)
    for key, expected in zip(keys, fresh, strict=True):
        for read in (stored_instance(key), cached_instance(key)):
            assert read.key == key and not read.sealed
            assert np.array_equal(read.X, expected.X) and read.sha256 == expected.sha256
            assert read.names == expected.names
            assert read.record.to_dict() == expected.record.to_dict()
            assert not read.X.flags.writeable


def test_sealed_instances_never_reach_the_disk(own_cache):
    from heuresis_env.generation.instances import cached_instance, stored_instance

    key = InstanceKey("wild", "test", 2, n=100)
    sealed = stored_instance(key, salt=SECRET)
    assert sealed.sealed and sealed.sha256 == generate_instance(key, salt=SECRET).sha256
    cached_instance(key, salt=SECRET)
    dev = InstanceKey("wild", "dev", 2, n=100)
    stored_instance(dev, salt=SECRET)  # the salt does not apply to dev: stored
    assert _cached_files(own_cache) == [f"{dev.slug}.json", f"{dev.slug}.npz"]


def test_damaged_or_foreign_files_are_generated_again(own_cache, monkeypatch):
    from heuresis_env.generation.instances import generator_fingerprint, stored_instance

    key, other = InstanceKey("anm", "dev", 0, n=100), InstanceKey("anm", "dev", 1, n=100)
    folder = own_cache / "instances" / generator_fingerprint()[:20]
    expected = generate_instance(key)
    # another instance's (valid) files under this key's name: not served
    save_instance(generate_instance(other), folder / key.slug)
    assert stored_instance(key).sha256 == expected.sha256
    assert load_instance(folder / key.slug).key == key  # replaced by the right one
    # a truncated array file
    npz = folder / f"{key.slug}.npz"
    npz.write_bytes(npz.read_bytes()[:100])
    assert stored_instance(key).sha256 == expected.sha256
    assert load_instance(folder / key.slug).sha256 == expected.sha256
    # the data changed behind the record's hash
    np.savez(npz, X=np.asarray(expected.X) + 1.0)
    assert stored_instance(key).sha256 == expected.sha256
    # and once whole again, it is what is read
    _generator_refuses(monkeypatch)
    assert stored_instance(key).sha256 == expected.sha256


def test_no_cache_and_a_new_generator_skip_the_stored_files(own_cache, monkeypatch):
    from heuresis_env.generation import instances

    key = InstanceKey("lg", "dev", 5, n=100)
    monkeypatch.setenv("HEURESIS_NO_CACHE", "1")
    instances.stored_instance(key)
    assert not (own_cache / "instances").exists()
    monkeypatch.delenv("HEURESIS_NO_CACHE")
    instances.stored_instance(key)
    assert len(_cached_files(own_cache)) == 2
    # an edited generator has another fingerprint: the earlier files are not read
    monkeypatch.setattr(instances, "generator_fingerprint", lambda: "0" * 64)
    calls = []
    real = instances.generate_instance
    monkeypatch.setattr(instances, "generate_instance",
                        lambda k, salt=None: calls.append(k) or real(k, salt))
    instances.stored_instance(key)
    assert calls == [key] and len(_cached_files(own_cache)) == 4


def test_the_fingerprint_covers_the_generating_modules():
    from heuresis_env.generation import instances

    package = Path(instances.__file__).resolve().parent.parent
    covered = {p.relative_to(package).as_posix() for pattern in instances._GENERATOR_SOURCES
               for p in package.glob(pattern)}
    assert {"generation/instances.py", "generation/scm.py", "generation/families.py",
            "generation/portable.py", "graphs.py"} <= covered
    assert len(instances.generator_fingerprint()) == 64


def test_only_the_package_s_own_unchanged_families_are_stored(own_cache):
    import dataclasses

    from heuresis_env.generation.families import FAMILIES, built_in_family, register_family
    from heuresis_env.generation.instances import stored_instance
    from heuresis_env.generation.mechanisms import MECHANISM_KINDS, register_mechanism_kind

    assert built_in_family("wild") and built_in_family("bnlearn-asia")
    assert not built_in_family("no-such-family")
    # a family registered by the user: its mechanisms are not the package's to fingerprint
    register_family("user_chain", {"description": "user's", "root": {"kind": "root_gaussian"},
                                   "mechanisms": [{"kind": "linear"}]})
    try:
        assert not built_in_family("user_chain")
        stored_instance(InstanceKey("user_chain", "dev", 0, n=100))
        assert _cached_files(own_cache) == []
    finally:
        FAMILIES.pop("user_chain")
    # a built-in mechanism kind replaced (the same name, another object): no family is stored
    original = MECHANISM_KINDS["linear"]
    register_mechanism_kind(dataclasses.replace(original))
    try:
        assert not built_in_family("lg")
        stored_instance(InstanceKey("lg", "dev", 0, n=100))
        assert _cached_files(own_cache) == []
    finally:
        MECHANISM_KINDS["linear"] = original
    assert built_in_family("lg")
    stored_instance(InstanceKey("lg", "dev", 0, n=100))
    assert len(_cached_files(own_cache)) == 2
