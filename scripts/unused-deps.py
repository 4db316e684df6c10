#!/usr/bin/env python3
"""Names each dependency a workspace crate declares but its code never names (what CI's
`cargo machete` did, without building a tool on every fresh machine: ~80 s of both cores).

For each package of the workspace, each entry of [dependencies], [dev-dependencies] and
[build-dependencies] (its crate name: the key, `package =` renames too, with `-` read as `_`)
must appear as a word followed by `::` or after `use `/`extern crate ` in some `.rs` file of
the package (src/, tests/, benches/, examples/, build.rs), sub-crates' own folders left out.
[package.metadata.cargo-machete] ignored = [...] lists names the code reaches another way (the
same key cargo-machete reads). Exit 1 with one line per unused dependency.
Usage: scripts/unused-deps.py [workspace root]
"""
import pathlib
import re
import sys
import tomllib

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
workspace = tomllib.loads((root / "Cargo.toml").read_text())
members = workspace.get("workspace", {}).get("members", ["."])
member_dirs = [(root / m).resolve() for m in members]
if (root / "fuzz" / "Cargo.toml").exists():  # the fuzz targets: a workspace of their own
    member_dirs.append((root / "fuzz").resolve())
unused = []
for pkg in member_dirs:
    manifest = tomllib.loads((pkg / "Cargo.toml").read_text())
    ignored = set(manifest.get("package", {}).get("metadata", {}).get("cargo-machete", {}).get("ignored", []))
    others = [d for d in member_dirs if d != pkg and pkg in d.parents]
    sources = []
    for path in pkg.rglob("*.rs"):
        rel = path.relative_to(pkg)
        if rel.parts[0] == "target" or (rel.parts[0] == "fuzz" and pkg == root) or any(
            o in path.parents for o in others
        ):
            continue
        sources.append(path.read_text(errors="replace"))
    text = "\n".join(sources)
    for section in ("dependencies", "dev-dependencies", "build-dependencies"):
        for key, spec in manifest.get(section, {}).items():
            if key in ignored:
                continue
            crate = key.replace("-", "_")  # a `package =` rename is named by its key
            used = re.search(rf"(\b{crate}::|\buse\s+{crate}\b|\bextern\s+crate\s+{crate}\b|#\[{crate}::)", text)
            if not used:
                unused.append(f"{pkg.relative_to(root) if pkg != root else '.'}/Cargo.toml: [{section}] {key} is never named in the code")
for line in unused:
    print(line)
sys.exit(1 if unused else 0)
