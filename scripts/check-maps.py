#!/usr/bin/env python3
"""Every crate's map is true: each module a crate root declares (`mod NAME;` / `pub mod NAME;`
in its `lib.rs` or `main.rs`) is named in that root's crate doc (`//!` lines) as `NAME.rs`,
`NAME/` or `` `NAME` ``. Prints each missing one and exits 1 if any is (docs/ARCHITECTURE.md
relies on these maps; a new module without its line there is how they went stale before).

Also every reference to the project's own docs leads somewhere in a clone: `DESIGN §N "label"`
names a section of docs/DESIGN.md that holds the label, `ADR-NNNN` a file docs/adr/NNNN-*.md,
`docs/NAME.md` a file."""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Every workspace member with a library (a new crate is checked without being listed here).
_members = re.search(r"^members\s*=\s*\[([^\]]*)\]", (ROOT / "Cargo.toml").read_text(), re.M)
CRATE_ROOTS = [
    f"{m}/src/lib.rs"
    for m in re.findall(r'"([^"]+)"', _members.group(1))
    if (ROOT / m / "src" / "lib.rs").exists()
]

missing = []
for rel in CRATE_ROOTS:
    text = (ROOT / rel).read_text()
    doc = "\n".join(l[3:] for l in text.splitlines() if l.startswith("//!"))
    for name in re.findall(r"^\s*(?:pub(?:\([a-z]+\))?\s+)?mod\s+([a-z_][a-z0-9_]*)\s*;", text, re.M):
        named = (f"{name}.rs" in doc) or (f"{name}/" in doc) or (f"`{name}`" in doc)
        if not named:
            missing.append(f"{rel}: module `{name}` is not in the crate doc's map")
modules_missing = len(missing)

# References that must lead somewhere in a clone: `DESIGN §N "label"` (the section exists and
# holds the label; `…` skips words), `ADR-NNNN` (docs/adr/NNNN-*.md exists) and `docs/NAME.md`.
design = (ROOT / "docs/DESIGN.md").read_text()
starts = [(m.group(1), m.start()) for m in re.finditer(r"^## (\d+)\. ", design, re.M)]
sections = {}
for i, (number, start) in enumerate(starts):
    end = starts[i + 1][1] if i + 1 < len(starts) else len(design)
    sections[number] = re.sub(r"\s+", " ", design[start:end].lower())
adrs = {p.name[:4] for p in (ROOT / "docs/adr").glob("[0-9][0-9][0-9][0-9]-*.md")}
references = 0
for path in sorted(ROOT.glob("**/*")):
    rel = path.relative_to(ROOT).as_posix()
    if path.suffix not in (".rs", ".md", ".sh", ".toml", ".ts") or not path.is_file():
        continue
    if rel.startswith(("target/", "vendor/", ".git/")) or "node_modules" in rel:
        continue
    # A label may wrap onto the next comment line.
    text = re.sub(r"\n\s*(?://[/!]?|#) ?", " ", path.read_text(errors="replace"))
    for m in re.finditer(r'DESIGN §(\d+)(?:\.\d+)?(?: ?"([^"]+)")?', text):
        references += 1
        number, label = m.group(1), m.group(2)
        if number not in sections:
            missing.append(f"{rel}: DESIGN §{number} is not a section of docs/DESIGN.md")
        elif label and not all(
            re.sub(r"\s+", " ", part.strip().lower()) in sections[number]
            for part in label.split("…")
        ):
            missing.append(f'{rel}: DESIGN §{number} has no "{label}"')
    for m in re.finditer(r"ADR-(\d{4})", text):
        references += 1
        if m.group(1) not in adrs:
            missing.append(f"{rel}: ADR-{m.group(1)} has no docs/adr/{m.group(1)}-*.md")
    for m in re.finditer(r"\bdocs/([A-Za-z0-9_./-]+\.md)", text):
        references += 1
        if not (ROOT / "docs" / m.group(1)).is_file():
            missing.append(f"{rel}: docs/{m.group(1)} does not exist")

for line in missing:
    print(line)
if missing:
    print(f"{modules_missing} module(s) missing from their crate's map (name each as NAME.rs, NAME/ or `NAME` in the crate doc); {len(missing) - modules_missing} reference(s) leading nowhere")
    sys.exit(1)
print(f"every module of {len(CRATE_ROOTS)} crates is in its crate's map; {references} references to docs/ lead somewhere")
