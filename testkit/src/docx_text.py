# What python-docx reads from a Word file, as JSON: the body's paragraphs and tables in
# order (a merged cell's text once), each paragraph's runs with their font, size, bold and
# italic, the sections' page sizes and margins (points), and the count of pictures.
import json, sys
import docx
from docx.table import Table
from docx.text.paragraph import Paragraph

d = docx.Document(sys.argv[1])
blocks = []
for child in d.element.body.iterchildren():
    tag = child.tag.split("}")[1]
    if tag == "p":
        p = Paragraph(child, d)
        runs = [
            {"text": r.text, "font": r.font.name, "size": r.font.size.pt if r.font.size else None,
             "bold": bool(r.bold), "italic": bool(r.italic)}
            for r in p.runs
        ]
        blocks.append({"paragraph": p.text, "runs": runs, "align": str(p.alignment) if p.alignment is not None else None})
    elif tag == "tbl":
        t = Table(child, d)
        rows = []
        for row in t.rows:
            cells, seen = [], []
            for c in row.cells:
                if c._tc not in seen:
                    cells.append(c.text)
                seen.append(c._tc)
            rows.append(cells)
        blocks.append({"table": rows, "grid": [[c.text for c in row.cells] for row in t.rows]})
sections = [
    {"width": s.page_width.pt, "height": s.page_height.pt, "margins": [s.top_margin.pt, s.right_margin.pt,
     s.bottom_margin.pt, s.left_margin.pt], "orientation": str(s.orientation)}
    for s in d.sections
]
print(json.dumps({"blocks": blocks, "sections": sections, "pictures": len(d.inline_shapes)}))
