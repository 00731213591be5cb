// Documents: drop files, pick an operation that fits their type, fill the form generated
// from the route's schema, run it (on one file or each in turn), preview and save results.

import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { ApiError, base64Of, callRoute, type RouteAnswer } from "./api";
import { SaveButton } from "./SaveButton";
import { SchemaForm, fileValue, materialize } from "./SchemaForm";
import { type Catalog, type Operation, type Schema, extensionOf, isFileInput, labelOf, resolve, types } from "./schema";

type Dropped = { id: number; file: File };
type Result = { source: string; answer?: RouteAnswer; error?: ApiError | Error };

let nextId = 1;

/** Page numbers as the routes read them: `1-3,5`. */
export function pageRanges(pages: number[]): string {
  const sorted = [...new Set(pages)].sort((a, b) => a - b);
  const parts: string[] = [];
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === sorted[j] + 1) j++;
    parts.push(i === j ? `${sorted[i]}` : `${sorted[i]}-${sorted[j]}`);
    i = j + 1;
  }
  return parts.join(",");
}

const THUMBNAIL_PAGES = 40;

/** Small PNGs of a PDF's first pages, rendered by the to-images route. */
function Thumbnails(props: { pdf: Blob; label: string; selected?: number[]; onToggle?: (page: number) => void }) {
  const [images, setImages] = useState<string[] | undefined>();
  const [failed, setFailed] = useState<string | undefined>();
  useEffect(() => {
    let urls: string[] = [];
    let cancelled = false;
    (async () => {
      try {
        const data = await base64Of(props.pdf);
        // The page count, which reading the metadata gives without looking at the pages.
        const inspected = await callRoute("/v1/pdf/metadata", { file: { data }, action: "read" }, undefined, true);
        const count = inspected.kind === "json" ? Number((inspected.value as { page_count?: number }).page_count ?? 1) : 1;
        const answer = await callRoute("/v1/pdf/to-images", {
          file: { data },
          dpi: 36,
          format: "png",
          pages: `1-${Math.max(1, Math.min(count, THUMBNAIL_PAGES))}`,
          output: "base64",
        }, undefined, true);
        if (cancelled || answer.kind !== "json") return;
        const files = answer.value as { data: string; media_type: string }[];
        urls = files.map((f) => URL.createObjectURL(new Blob([Uint8Array.from(atob(f.data), (c) => c.charCodeAt(0))], { type: f.media_type })));
        setImages(urls);
      } catch (e) {
        if (!cancelled) setFailed((e as Error).message);
      }
    })();
    return () => {
      cancelled = true;
      urls.forEach((u) => URL.revokeObjectURL(u));
    };
  }, [props.pdf]);
  if (failed) return <p class="muted">No page previews: {failed}</p>;
  if (!images) return <p class="muted" role="status">Rendering page previews…</p>;
  return (
    <div class="thumbnails" role="group" aria-label={props.label}>
      {images.map((src, i) => {
        const page = i + 1;
        const pressed = props.selected?.includes(page) ?? false;
        return props.onToggle ? (
          <button type="button" class="thumbnail" aria-pressed={pressed} onClick={() => props.onToggle?.(page)} aria-label={`Page ${page}`}>
            <img src={src} alt="" />
            <span>{page}</span>
          </button>
        ) : (
          <figure class="thumbnail">
            <img src={src} alt={`Page ${page}`} />
            <figcaption>{page}</figcaption>
          </figure>
        );
      })}
    </div>
  );
}

/** A field that takes files: one file, a file's text, or a list of files (or of objects
 * with a file in `itemField`). */
type FileSlot = { name: string } & ({ kind: "file" | "text" } | { kind: "files"; itemField?: string });

/** The field of an operation's input that the chosen files go in: the first that takes
 * files, in the schema's order. The fields after it take other things (a certificate, trust
 * roots, files to attach, the revised version of a document), which the user gives there. */
function fileSlot(op: Operation, schemas: Record<string, Schema>): FileSlot | undefined {
  const input = resolve(op.input, schemas);
  for (const [name, raw] of Object.entries(input.properties ?? {})) {
    const prop = resolve(raw, schemas);
    if (isFileInput(raw, schemas)) return { name, kind: "file" };
    if (types(prop).types.includes("array") && prop.items) {
      const item = prop.items;
      if (isFileInput(item, schemas)) return { name, kind: "files" };
      const fields = Object.entries(resolve(item, schemas).properties ?? {});
      const fileField = fields.find(([, s]) => isFileInput(s, schemas));
      if (fileField) return { name, kind: "files", itemField: fileField[0] };
    } else if (prop.contentMediaType) {
      return { name, kind: "text" };
    }
  }
  return undefined;
}

/** The operation's input with the chosen files placed in its file field. */
async function prefill(op: Operation, files: File[], schemas: Record<string, Schema>): Promise<Record<string, unknown>> {
  const slot = fileSlot(op, schemas);
  if (!slot || !files[0]) return {};
  switch (slot.kind) {
    case "file":
      return { [slot.name]: fileValue(files[0]) };
    case "text":
      return { [slot.name]: await files[0].text() };
    case "files": {
      const field = slot.itemField;
      return { [slot.name]: files.map((f) => (field ? { [field]: fileValue(f) } : fileValue(f))) };
    }
  }
}

/** Whether the operation takes several files in one call (merge, from-images). */
function takesMany(op: Operation, schemas: Record<string, Schema>): boolean {
  return fileSlot(op, schemas)?.kind === "files";
}

function describeError(e: unknown): string {
  if (e instanceof ApiError) return `${e.message}${e.field ? ` (${e.field})` : ""} [${e.status} ${e.code}]`;
  return (e as Error).message;
}

function ResultView({ result }: { result: Result }) {
  const { answer, error } = result;
  if (error) {
    return (
      <div class="result error" role="alert">
        <h4>{result.source}</h4>
        <p>{describeError(error)}</p>
      </div>
    );
  }
  if (!answer) return null;
  if (answer.kind === "json") {
    return (
      <div class="result">
        <h4>{result.source}</h4>
        <pre class="json" tabIndex={0} aria-label={`Answer for ${result.source}`}>
          {JSON.stringify(answer.value, null, 2)}
        </pre>
        <SaveButton blob={() => new Blob([JSON.stringify(answer.value, null, 2)], { type: "application/json" })} filename={`${result.source}.json`} label="Save JSON" />
      </div>
    );
  }
  const isPdf = answer.contentType.startsWith("application/pdf");
  const isImage = answer.contentType.startsWith("image/");
  return (
    <div class="result">
      <h4>
        {answer.filename} <span class="muted">({formatBytes(answer.blob.size)})</span>
      </h4>
      <SaveButton blob={() => answer.blob} filename={answer.filename} label={`Save ${answer.filename}`} primary />
      {answer.report && <Report report={answer.report} filename={answer.filename} />}
      {isPdf && <Thumbnails pdf={answer.blob} label={`Pages of ${answer.filename}`} />}
      {isImage && <ImagePreview blob={answer.blob} alt={answer.filename} />}
    </div>
  );
}

/** What the route says it did to the file: its plain values as a list, the whole report
 * (lists, nested parts) as JSON below when it has more. */
function Report({ report, filename }: { report: Record<string, unknown>; filename: string }) {
  const plain = Object.entries(report).filter(([, v]) => v !== null && typeof v !== "object");
  const nested = Object.values(report).some((v) => v !== null && typeof v === "object");
  const shown = (v: unknown) => (typeof v === "boolean" ? (v ? "yes" : "no") : String(v));
  return (
    <>
      {plain.length > 0 && (
        <dl class="facts report">
          {plain.map(([k, v]) => (
            <>
              <dt>{labelOf(k)}</dt>
              <dd>{shown(v)}</dd>
            </>
          ))}
        </dl>
      )}
      {nested && (
        <details>
          <summary>Whole report</summary>
          <pre class="json" tabIndex={0} aria-label={`Report on ${filename}`}>
            {JSON.stringify(report, null, 2)}
          </pre>
        </details>
      )}
    </>
  );
}

function ImagePreview({ blob, alt }: { blob: Blob; alt: string }) {
  const url = useMemo(() => URL.createObjectURL(blob), [blob]);
  useEffect(() => () => URL.revokeObjectURL(url), [url]);
  return <img class="preview" src={url} alt={alt} />;
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

export function Documents({ catalog }: { catalog: Catalog }) {
  const [files, setFiles] = useState<Dropped[]>([]);
  const [chosen, setChosen] = useState<number[]>([]);
  const [operationId, setOperationId] = useState("");
  const [value, setValue] = useState<Record<string, unknown>>({});
  const [pages, setPages] = useState<number[]>([]);
  const [running, setRunning] = useState<{ started: number; abort: AbortController; done: number; of: number } | undefined>();
  const [elapsed, setElapsed] = useState(0);
  const [results, setResults] = useState<Result[]>([]);
  const [formError, setFormError] = useState<{ field?: string; message: string } | undefined>();
  const [dragging, setDragging] = useState(false);

  const chosenFiles = files.filter((f) => chosen.includes(f.id)).map((f) => f.file);
  const extensions = [...new Set(chosenFiles.map((f) => extensionOf(f.name)))];
  const operations = catalog.operations.filter(
    (op) => op.family === "docs" && op.accepts.length > 0 && extensions.length > 0 && extensions.every((e) => op.accepts.includes(e)),
  );
  const operation = operations.find((op) => op.operationId === operationId);
  const inputSchema = operation ? resolve(operation.input, catalog.schemas) : undefined;
  const hasPages = !!inputSchema?.properties?.pages && types(resolve(inputSchema.properties.pages, catalog.schemas)).types.includes("string");
  const firstPdf = chosenFiles.length === 1 && extensionOf(chosenFiles[0].name) === "pdf" ? chosenFiles[0] : undefined;

  useEffect(() => {
    if (!running) return;
    const timer = setInterval(() => setElapsed(Math.round((Date.now() - running.started) / 1000)), 500);
    return () => clearInterval(timer);
  }, [running]);

  const add = (list: FileList | File[]) => {
    const added = Array.from(list).map((file) => ({ id: nextId++, file }));
    if (!added.length) return;
    setFiles((old) => [...old, ...added]);
    setChosen(added.map((f) => f.id));
    setResults([]);
  };

  // The operation the user chose last, read by the effect below: a choice made between a
  // render and that effect is not in the effect's own copy of the state.
  const chosenOperation = useRef("");
  const choose = async (id: string, filesNow = chosenFiles) => {
    chosenOperation.current = id;
    setOperationId(id);
    setFormError(undefined);
    setPages([]);
    const op = catalog.operations.find((o) => o.operationId === id);
    setValue(op ? await prefill(op, filesNow, catalog.schemas) : {});
  };

  useEffect(() => {
    // The operation stays when it still fits the chosen files; its files are the new ones.
    const id = chosenOperation.current;
    if (operations.some((op) => op.operationId === id)) void choose(id);
    else {
      chosenOperation.current = "";
      setOperationId("");
    }
  }, [chosen.join(",")]);

  const togglePage = (page: number) => {
    const next = pages.includes(page) ? pages.filter((p) => p !== page) : [...pages, page];
    setPages(next);
    setValue({ ...value, pages: next.length ? pageRanges(next) : undefined });
  };

  const run = async (each: boolean) => {
    if (!operation) return;
    const abort = new AbortController();
    const batches = each ? chosenFiles.map((f) => [f]) : [chosenFiles];
    setRunning({ started: Date.now(), abort, done: 0, of: batches.length });
    setElapsed(0);
    setResults([]);
    setFormError(undefined);
    const out: Result[] = [];
    for (const [i, batch] of batches.entries()) {
      const source = batch.map((f) => f.name).join(" + ");
      try {
        // Each file of a batch goes through the same form, its own file in place.
        const input = each ? { ...value, ...(await prefill(operation, batch, catalog.schemas)), pages: value.pages } : value;
        const body = { ...((await materialize(input)) as Record<string, unknown>) };
        const answer = await callRoute(operation.path, body, abort.signal);
        out.push({ source, answer });
      } catch (e) {
        if ((e as Error).name === "AbortError") {
          // The server stops the work when the request goes; nothing is kept of it.
          out.push({ source, error: new Error("Cancelled: the work was stopped, nothing was saved.") });
          setResults([...out]);
          break;
        }
        if (e instanceof ApiError && !each) setFormError({ field: e.field, message: e.message });
        out.push({ source, error: e as Error });
      }
      setResults([...out]);
      setRunning((r) => (r ? { ...r, done: i + 1 } : r));
    }
    setRunning(undefined);
  };

  const many = operation ? takesMany(operation, catalog.schemas) : false;

  return (
    <section aria-labelledby="documents-title">
      <h2 id="documents-title">Documents</h2>
      <div
        class={`dropzone${dragging ? " dragging" : ""}`}
        data-testid="dropzone"
        onDragOver={(e) => {
          e.preventDefault();
          setDragging(true);
        }}
        onDragLeave={() => setDragging(false)}
        onDrop={(e) => {
          e.preventDefault();
          setDragging(false);
          if (e.dataTransfer?.files) add(e.dataTransfer.files);
        }}
      >
        <p>Drop PDFs, images or Office files here, or</p>
        <label class="button">
          Choose files
          <input
            id="file-picker"
            class="visually-hidden"
            type="file"
            multiple
            onChange={(e) => {
              const list = (e.currentTarget as HTMLInputElement).files;
              if (list) add(list);
              (e.currentTarget as HTMLInputElement).value = "";
            }}
          />
        </label>
      </div>

      {files.length > 0 && (
        <fieldset class="file-list">
          <legend>Files ({files.length})</legend>
          {files.map((f) => (
            <div class="file-row" key={f.id}>
              <input
                type="checkbox"
                id={`pick-${f.id}`}
                checked={chosen.includes(f.id)}
                onChange={(e) =>
                  setChosen((old) => ((e.currentTarget as HTMLInputElement).checked ? [...old, f.id] : old.filter((x) => x !== f.id)))
                }
              />
              <label for={`pick-${f.id}`}>
                {f.file.name} <span class="muted">{formatBytes(f.file.size)}</span>
              </label>
              <button
                type="button"
                aria-label={`Remove ${f.file.name}`}
                onClick={() => {
                  setFiles((old) => old.filter((x) => x.id !== f.id));
                  setChosen((old) => old.filter((x) => x !== f.id));
                }}
              >
                Remove
              </button>
            </div>
          ))}
        </fieldset>
      )}

      {chosenFiles.length > 0 && (
        <div class="field">
          <label for="operation">Operation</label>
          <select id="operation" value={operationId} onChange={(e) => choose((e.currentTarget as HTMLSelectElement).value)}>
            <option value="">{operations.length ? `(${operations.length} operations fit)` : "(no operation takes these files)"}</option>
            {operations.map((op) => (
              <option value={op.operationId}>
                {op.summary} — {op.path}
              </option>
            ))}
          </select>
        </div>
      )}

      {operation && inputSchema && (
        <form
          class="route-form"
          aria-label={operation.summary}
          onSubmit={(e) => {
            e.preventDefault();
            void run(false);
          }}
        >
          <p class="description">{operation.description}</p>
          {hasPages && firstPdf && (
            <div>
              <p id="pages-help">Choose pages below, or type them in the Pages field; every page when none is chosen.</p>
              <Thumbnails pdf={firstPdf} label="Pages to choose" selected={pages} onToggle={togglePage} />
            </div>
          )}
          <SchemaForm schema={operation.input} schemas={catalog.schemas} value={value} onChange={setValue} error={formError} hide={["output"]} />
          <div class="actions">
            <button type="submit" class="primary" disabled={!!running}>
              Run
            </button>
            {!many && chosenFiles.length > 1 && (
              <button type="button" disabled={!!running} onClick={() => run(true)}>
                Run on each of the {chosenFiles.length} files
              </button>
            )}
          </div>
        </form>
      )}

      <div role="status" aria-live="polite" class="progress">
        {running && (
          <>
            Working… {elapsed} s{running.of > 1 ? `, ${running.done} of ${running.of} files done` : ""}{" "}
            <button type="button" onClick={() => running.abort.abort()}>
              Cancel
            </button>
          </>
        )}
      </div>

      {results.length > 0 && (
        <section aria-label="Results" class="results">
          <h3>Results</h3>
          {results.map((r) => (
            <ResultView result={r} />
          ))}
        </section>
      )}
    </section>
  );
}
