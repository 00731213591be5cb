import json, sys, datetime, openpyxl
from openpyxl.worksheet.worksheet import Worksheet
wb = openpyxl.load_workbook(sys.argv[1], data_only=True)
def val(v):
    if isinstance(v, datetime.datetime):
        return v.date().isoformat() if v.time() == datetime.time(0) else v.isoformat()
    if isinstance(v, (datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, str) and v == "":
        return None
    return v
out = []
for ws in wb.worksheets:
    if not isinstance(ws, Worksheet):
        continue
    cells = {}
    for row in ws.iter_rows():
        for c in row:
            v = val(c.value)
            if v is not None:
                cells[(c.row, c.column)] = v
    if cells:
        last_row = max(r for r, _ in cells)
        last_col = max(c for _, c in cells)
        for area in ws.merged_cells.ranges:
            top = cells.get((area.min_row, area.min_col))
            if top is None:
                continue
            for r in range(area.min_row, min(area.max_row, last_row) + 1):
                for c in range(area.min_col, min(area.max_col, last_col) + 1):
                    cells[(r, c)] = top
    rows = sorted({r for r, _ in cells})
    cols = [c for _, c in cells]
    left, right = (min(cols), max(cols)) if cols else (1, 0)
    out.append({"name": ws.title, "rows": [[cells.get((r, c)) for c in range(left, right + 1)] for r in rows]})
(open(sys.argv[2], "w") if len(sys.argv) > 2 else sys.stdout).write(json.dumps(out))
