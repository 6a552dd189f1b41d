"""Repairs the table exports of a wasm file that binaryen's wasm-opt (Debian's version 108)
rewrote wrongly: with two tables (a funcref one for indirect calls and wasm-bindgen's externref
one, exported as `__wbindgen_externrefs`), it points the export at table 0, and the page then
fails with "WebAssembly.Table.set(): Argument 1 is invalid for table". Each exported table must
keep the element type it had before wasm-opt.

    python3 fix_table_exports.py BEFORE.wasm AFTER.wasm   (AFTER is fixed in place)
"""
import sys


def leb(data, i):
    """Reads an unsigned LEB128 at `i`: (value, next index)."""
    value = shift = 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, i


def sections(data):
    """(section id, start of its payload, end) of each section."""
    i = 8
    while i < len(data):
        sid = data[i]
        size, start = leb(data, i + 1)
        yield sid, start, start + size
        i = start + size


def table_types(data):
    """Element type byte of each table, imported ones first (as wasm numbers them)."""
    types = []
    for sid, start, _ in sections(data):
        if sid == 2:  # imports
            n, j = leb(data, start)
            for _ in range(n):
                for _ in range(2):  # module and field names
                    length, j = leb(data, j)
                    j += length
                kind = data[j]
                j += 1
                if kind == 0:
                    _, j = leb(data, j)
                elif kind == 1:
                    types.append(data[j])
                    flags = data[j + 1]
                    j += 2
                    _, j = leb(data, j)
                    if flags & 1:
                        _, j = leb(data, j)
                elif kind == 2:
                    flags, j = leb(data, j)
                    _, j = leb(data, j)
                    if flags & 1:
                        _, j = leb(data, j)
                elif kind == 3:
                    j += 2
                elif kind == 4:
                    j += 1
                    _, j = leb(data, j)
        if sid == 4:  # tables
            n, j = leb(data, start)
            for _ in range(n):
                types.append(data[j])
                flags = data[j + 1]
                j += 2
                _, j = leb(data, j)
                if flags & 1:
                    _, j = leb(data, j)
    return types


def table_exports(data):
    """{export name: (table index, byte offset of the index)}."""
    out = {}
    for sid, start, _ in sections(data):
        if sid == 7:
            n, j = leb(data, start)
            for _ in range(n):
                length, j = leb(data, j)
                name = data[j:j + length].decode()
                j += length
                kind = data[j]
                j += 1
                at = j
                index, j = leb(data, j)
                if kind == 1:
                    out[name] = (index, at)
    return out


def main():
    before = open(sys.argv[1], "rb").read()
    after = bytearray(open(sys.argv[2], "rb").read())
    types_before, types_after = table_types(before), table_types(after)
    fixed = 0
    for name, (index, _) in table_exports(before).items():
        wanted = types_before[index]
        now, at = table_exports(after)[name]
        if types_after[now] == wanted:
            continue
        candidates = [i for i, t in enumerate(types_after) if t == wanted]
        if len(candidates) != 1 or candidates[0] > 0x7F or after[at] & 0x80:
            sys.exit(f"cannot repair the export of table {name}")
        after[at] = candidates[0]
        fixed += 1
        print(f"[fix-table-exports] {name}: table {now} -> {candidates[0]}")
    open(sys.argv[2], "wb").write(after)
    if not fixed:
        print("[fix-table-exports] table exports as before")


main()
