// A form for any route, generated from its JSON Schema: no route has a form of its own, so
// a route added to the catalog appears here with no UI code.
//
// Values are plain JSON, except file inputs, which hold the chosen File until the form is
// sent (`materialize` turns them into `{data, filename}`).

import { useState } from "preact/hooks";
import type { JSX } from "preact";
import { base64Of } from "./api";
import { type Schema, choices, isFileInput, labelOf, namesOrObject, optionalOf, resolve, types } from "./schema";

/** A chosen file, or a URL, with an optional password: the value of a file input. */
export type FileValue = { file?: File; url?: string; password?: string };

export function isFileValue(v: unknown): v is FileValue & { __file: true } {
  return typeof v === "object" && v !== null && (v as { __file?: boolean }).__file === true;
}

export function fileValue(file: File): FileValue {
  return Object.assign({ file }, { __file: true });
}

/** The request body: files read into base64, empty optional values left out. */
export async function materialize(value: unknown): Promise<unknown> {
  if (isFileValue(value)) {
    const out: Record<string, unknown> = {};
    if (value.file) {
      out.data = await base64Of(value.file);
      out.filename = value.file.name;
    } else if (value.url) {
      out.url = value.url;
    }
    if (value.password) out.password = value.password;
    return out;
  }
  if (Array.isArray(value)) return Promise.all(value.map(materialize));
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      if (v === undefined) continue;
      out[k] = await materialize(v);
    }
    return out;
  }
  return value;
}

type Ctx = { schemas: Record<string, Schema>; error?: { field?: string; message: string } };

type FieldProps = {
  ctx: Ctx;
  name: string;
  label: string;
  schema: Schema;
  required: boolean;
  value: unknown;
  pointer: string;
  onChange: (v: unknown) => void;
};

const idOf = (pointer: string) => `field${pointer.replace(/[^a-zA-Z0-9]+/g, "-")}`;

function Help({ id, text }: { id: string; text?: string }) {
  return text ? (
    <small class="help" id={id}>
      {text}
    </small>
  ) : null;
}

function FieldError({ ctx, pointer }: { ctx: Ctx; pointer: string }) {
  if (ctx.error?.field !== pointer) return null;
  return (
    <p class="field-error" id={`${idOf(pointer)}-error`} role="alert">
      {ctx.error.message}
    </p>
  );
}

function describedBy(ctx: Ctx, pointer: string, help?: string) {
  const ids = [help ? `${idOf(pointer)}-help` : "", ctx.error?.field === pointer ? `${idOf(pointer)}-error` : ""];
  return ids.filter(Boolean).join(" ") || undefined;
}

function FileField({ ctx, label, schema, required, value, pointer, onChange }: FieldProps) {
  const id = idOf(pointer);
  const v = (isFileValue(value) ? value : undefined) as FileValue | undefined;
  const set = (patch: Partial<FileValue>) => onChange(Object.assign({ __file: true }, v ?? {}, patch));
  return (
    <fieldset class="file-field" aria-invalid={ctx.error?.field?.startsWith(pointer) || undefined}>
      <legend>
        {label}
        {required && <span class="required"> (required)</span>}
      </legend>
      <Help id={`${id}-help`} text={schema.description} />
      <div class="file-choice">
        <label class="button">
          {v?.file ? "Choose another file" : "Choose a file"}
          <input
            id={`${id}-file`}
            class="visually-hidden"
            type="file"
            aria-describedby={describedBy(ctx, pointer, schema.description)}
            onChange={(e) => {
              const file = (e.currentTarget as HTMLInputElement).files?.[0];
              if (file) set({ file, url: undefined });
            }}
          />
        </label>
        <span class="chosen">{v?.file ? v.file.name : "no file chosen"}</span>
      </div>
      <div class="file-choice">
        <label for={`${id}-url`}>or a public URL</label>
        <input
          id={`${id}-url`}
          type="url"
          value={v?.url ?? ""}
          onInput={(e) => set({ url: (e.currentTarget as HTMLInputElement).value || undefined, file: undefined })}
        />
      </div>
      <details>
        <summary>Password</summary>
        <div class="file-choice">
          <label for={`${id}-password`}>Password of an encrypted PDF or of a certificate</label>
          <input
            id={`${id}-password`}
            type="password"
            autocomplete="off"
            value={v?.password ?? ""}
            onInput={(e) => set({ password: (e.currentTarget as HTMLInputElement).value || undefined })}
          />
        </div>
      </details>
      <FieldError ctx={ctx} pointer={pointer} />
    </fieldset>
  );
}

function ArrayField(props: FieldProps) {
  const { ctx, label, schema, required, value, pointer, onChange } = props;
  const items = Array.isArray(value) ? value : [];
  const itemSchema = schema.items ?? {};
  const max = schema.maxItems ?? Infinity;
  const min = schema.minItems ?? 0;
  const id = idOf(pointer);
  const itemLabel = label.replace(/s$/, "");
  return (
    <fieldset class="array-field">
      <legend>
        {label}
        {required && <span class="required"> (required)</span>}
      </legend>
      <Help id={`${id}-help`} text={schema.description} />
      <ol>
        {items.map((item, i) => (
          <li key={i}>
            <Field
              {...props}
              name={String(i)}
              label={`${itemLabel} ${i + 1}`}
              schema={itemSchema}
              required
              value={item}
              pointer={`${pointer}/${i}`}
              onChange={(v) => onChange(items.map((old, j) => (j === i ? v : old)))}
            />
            <div class="item-actions">
              <button type="button" disabled={i === 0} onClick={() => onChange(swap(items, i, i - 1))} aria-label={`Move ${itemLabel} ${i + 1} up`}>
                ↑
              </button>
              <button type="button" disabled={i === items.length - 1} onClick={() => onChange(swap(items, i, i + 1))} aria-label={`Move ${itemLabel} ${i + 1} down`}>
                ↓
              </button>
              <button type="button" onClick={() => onChange(items.filter((_, j) => j !== i))} aria-label={`Remove ${itemLabel} ${i + 1}`}>
                Remove
              </button>
            </div>
          </li>
        ))}
      </ol>
      <button type="button" disabled={items.length >= max} onClick={() => onChange([...items, emptyOf(itemSchema, ctx)])}>
        Add {itemLabel.toLowerCase()}
      </button>
      {min > 0 && <small class="help"> at least {min}</small>}
      <FieldError ctx={ctx} pointer={pointer} />
    </fieldset>
  );
}

/** The names of a fixed list's places when its description gives them as `[left, top, …]`. */
function placeNames(description: string | undefined, count: number): string[] | undefined {
  const list = description?.match(/`\[([a-z_ ,]+)\]`/i)?.[1].split(",").map((n) => n.trim());
  return list?.length === count && list.every(Boolean) ? list.map(labelOf) : undefined;
}

/** A fixed number of numbers (a box: left, top, right, bottom): one row of number fields,
 * left out of the request while all are empty. */
function TupleField({ ctx, label, schema, required, value, pointer, onChange }: FieldProps) {
  const id = idOf(pointer);
  const count = schema.maxItems ?? 0;
  const items = Array.isArray(value) ? value : [];
  const item = resolve(schema.items ?? {}, ctx.schemas);
  const names = placeNames(schema.description, count);
  const set = (i: number, v: number | undefined) => {
    const next = Array.from({ length: count }, (_, j) => (j === i ? v : items[j]));
    onChange(next.every((x) => x === undefined) ? undefined : next.map((x) => x ?? null));
  };
  return (
    <fieldset class="tuple-field" aria-describedby={describedBy(ctx, pointer, schema.description)}>
      <legend>
        {label}
        {required && <span class="required"> (required)</span>}
      </legend>
      <Help id={`${id}-help`} text={schema.description} />
      <div class="tuple">
        {Array.from({ length: count }, (_, i) => (
          <div class="field" key={i}>
            <label for={idOf(`${pointer}/${i}`)}>{names?.[i] ?? `${i + 1}`}</label>
            <input
              id={idOf(`${pointer}/${i}`)}
              type="number"
              step={types(item).types.includes("integer") ? 1 : "any"}
              min={item.minimum}
              max={item.maximum}
              aria-invalid={ctx.error?.field?.startsWith(pointer) || undefined}
              value={typeof items[i] === "number" ? String(items[i]) : ""}
              onInput={(e) => {
                const text = (e.currentTarget as HTMLInputElement).value;
                set(i, text === "" ? undefined : Number(text));
              }}
            />
          </div>
        ))}
      </div>
      <FieldError ctx={ctx} pointer={pointer} />
    </fieldset>
  );
}

/** Whether an array is a fixed number of numbers, shown as one row of fields. */
function isTuple(schema: Schema, schemas: Record<string, Schema>): boolean {
  const count = schema.maxItems;
  if (count === undefined || schema.minItems !== count || count < 2 || count > 6 || !schema.items) return false;
  const t = types(resolve(schema.items, schemas)).types;
  return t.length === 1 && (t[0] === "number" || t[0] === "integer");
}

function swap<T>(list: T[], a: number, b: number): T[] {
  const out = [...list];
  [out[a], out[b]] = [out[b], out[a]];
  return out;
}

/** What a new item starts as. */
function emptyOf(schema: Schema, ctx: Ctx): unknown {
  if (isFileInput(schema, ctx.schemas)) return Object.assign({ __file: true });
  const s = resolve(schema, ctx.schemas);
  if (s.properties) return {};
  if (types(s).types.includes("array")) return [];
  return undefined;
}

function ObjectField(props: FieldProps & { hide?: string[] }) {
  const { ctx, label, schema, value, pointer, onChange, hide = [] } = props;
  const s = resolve(schema, ctx.schemas);
  const v = (value && typeof value === "object" ? value : {}) as Record<string, unknown>;
  const required = new Set(s.required ?? []);
  const body = Object.entries(s.properties ?? {})
    .filter(([name]) => !hide.includes(name))
    .map(([name, prop]) => (
      <Field
        key={name}
        ctx={ctx}
        name={name}
        label={labelOf(name)}
        schema={prop}
        required={required.has(name)}
        value={v[name]}
        pointer={`${pointer}/${name}`}
        onChange={(nv) => onChange({ ...v, [name]: nv })}
      />
    ));
  if (pointer === "") return <>{body}</>;
  return (
    <fieldset class="object-field">
      <legend>{label}</legend>
      <Help id={`${idOf(pointer)}-help`} text={s.description} />
      {body}
    </fieldset>
  );
}

/** A free-form value (a map of names, any JSON) edited as JSON text. */
function JsonField({ ctx, label, schema, required, value, pointer, onChange }: FieldProps) {
  const id = idOf(pointer);
  const [text, setText] = useState(value === undefined ? "" : JSON.stringify(value, null, 2));
  const [bad, setBad] = useState<string | undefined>();
  return (
    <div class="field">
      <label for={id}>
        {label} (JSON){required && <span class="required"> (required)</span>}
      </label>
      <textarea
        id={id}
        rows={4}
        value={text}
        aria-invalid={!!bad || ctx.error?.field === pointer || undefined}
        aria-describedby={describedBy(ctx, pointer, schema.description)}
        onInput={(e) => {
          const t = (e.currentTarget as HTMLTextAreaElement).value;
          setText(t);
          if (!t.trim()) {
            setBad(undefined);
            return onChange(undefined);
          }
          try {
            onChange(JSON.parse(t));
            setBad(undefined);
          } catch (err) {
            setBad(`not JSON yet: ${(err as Error).message}`);
          }
        }}
      />
      <Help id={`${id}-help`} text={schema.description} />
      {bad && <p class="field-error">{bad}</p>}
      <FieldError ctx={ctx} pointer={pointer} />
    </div>
  );
}

export function Field(props: FieldProps): JSX.Element {
  const { ctx, label, required, value, pointer, onChange } = props;
  const raw = props.schema;
  if (isFileInput(raw, ctx.schemas)) return <FileField {...props} />;
  const optional = optionalOf(raw);
  if (optional) return <Field {...props} schema={optional} />;
  const schema = resolve(raw, ctx.schemas);
  const description = raw.description ?? schema.description;
  const id = idOf(pointer);
  const common = {
    id,
    "aria-describedby": describedBy(ctx, pointer, description),
    "aria-invalid": ctx.error?.field === pointer || undefined,
    "aria-required": required || undefined,
  };
  const labelEl = (
    <label for={id}>
      {label}
      {required && <span class="required"> (required)</span>}
    </label>
  );
  const named = namesOrObject(schema, ctx.schemas);
  if (named) {
    // A name from a list, or "Custom" and the object's own fields (a paper size).
    const custom = value !== null && typeof value === "object";
    const index = custom ? named.names.length : named.names.indexOf(value as string);
    return (
      <div class="field">
        {labelEl}
        <select
          {...common}
          value={index < 0 ? "" : String(index)}
          onChange={(e) => {
            const i = (e.currentTarget as HTMLSelectElement).value;
            if (i === "") onChange(undefined);
            else if (Number(i) === named.names.length) onChange({});
            else onChange(named.names[Number(i)]);
          }}
        >
          <option value="">{required ? "(choose)" : "(default)"}</option>
          {named.names.map((n, i) => (
            <option value={String(i)}>{n}</option>
          ))}
          <option value={String(named.names.length)}>Custom…</option>
        </select>
        <Help id={`${id}-help`} text={description} />
        <FieldError ctx={ctx} pointer={pointer} />
        {custom && <ObjectField {...props} label={`${label}, custom`} schema={named.object} />}
      </div>
    );
  }
  const options = choices(schema);
  if (options) {
    const index = options.findIndex((o) => o.value === (value ?? schema.default));
    return (
      <div class="field">
        {labelEl}
        <select
          {...common}
          value={index < 0 ? "" : String(index)}
          onChange={(e) => {
            const i = (e.currentTarget as HTMLSelectElement).value;
            onChange(i === "" ? undefined : options[Number(i)].value);
          }}
        >
          {(index < 0 || !required) && <option value="">{schema.default !== undefined ? `(default: ${String(schema.default)})` : "(choose)"}</option>}
          {options.map((o, i) => (
            <option value={String(i)} title={o.help}>
              {o.label}
            </option>
          ))}
        </select>
        <Help id={`${id}-help`} text={description} />
        <FieldError ctx={ctx} pointer={pointer} />
      </div>
    );
  }
  const t = types(schema).types;
  if (schema.properties) return <ObjectField {...props} schema={schema} />;
  if (t.includes("array") && isTuple(schema, ctx.schemas)) return <TupleField {...props} schema={{ ...schema, description }} />;
  if (t.includes("array")) return <ArrayField {...props} schema={schema} />;
  if (t.length === 1 && t[0] === "boolean") {
    return (
      <div class="field checkbox">
        <input
          {...common}
          type="checkbox"
          checked={(value ?? schema.default) === true}
          onChange={(e) => onChange((e.currentTarget as HTMLInputElement).checked)}
        />
        {labelEl}
        <Help id={`${id}-help`} text={description} />
        <FieldError ctx={ctx} pointer={pointer} />
      </div>
    );
  }
  if (t.length === 1 && (t[0] === "integer" || t[0] === "number")) {
    return (
      <div class="field">
        {labelEl}
        <input
          {...common}
          type="number"
          min={schema.minimum}
          max={schema.maximum}
          step={t[0] === "integer" ? 1 : "any"}
          value={typeof value === "number" ? String(value) : ""}
          placeholder={schema.default != null ? String(schema.default) : ""}
          onInput={(e) => {
            const text = (e.currentTarget as HTMLInputElement).value;
            onChange(text === "" ? undefined : Number(text));
          }}
        />
        <Help id={`${id}-help`} text={description} />
        <FieldError ctx={ctx} pointer={pointer} />
      </div>
    );
  }
  if (t.length === 1 && t[0] === "string") {
    const long = !!schema.contentMediaType || (schema.maxLength ?? 0) > 2000;
    const text = typeof value === "string" ? value : "";
    const set = (s: string) => onChange(s === "" ? undefined : s);
    return (
      <div class="field">
        {labelEl}
        {long ? (
          <textarea {...common} rows={6} value={text} onInput={(e) => set((e.currentTarget as HTMLTextAreaElement).value)} />
        ) : (
          <input
            {...common}
            type="text"
            value={text}
            maxLength={schema.maxLength}
            placeholder={schema.default != null ? String(schema.default) : ""}
            onInput={(e) => set((e.currentTarget as HTMLInputElement).value)}
          />
        )}
        {schema.contentMediaType && (
          <>
            <label class="secondary" for={`${id}-load`}>
              Load {label.toLowerCase()} from a file
            </label>
            <input id={`${id}-load`} type="file" onChange={async (e) => {
              const file = (e.currentTarget as HTMLInputElement).files?.[0];
              if (file) set(await file.text());
            }} />
          </>
        )}
        <Help id={`${id}-help`} text={description} />
        <FieldError ctx={ctx} pointer={pointer} />
      </div>
    );
  }
  return <JsonField {...props} schema={schema} />;
}

/** The whole form of a route: every field of its input but those in `hide`. */
export function SchemaForm(props: {
  schema: Schema;
  schemas: Record<string, Schema>;
  value: Record<string, unknown>;
  onChange: (v: Record<string, unknown>) => void;
  error?: { field?: string; message: string };
  hide?: string[];
}) {
  const ctx: Ctx = { schemas: props.schemas, error: props.error };
  return (
    <ObjectField
      ctx={ctx}
      name=""
      label=""
      schema={props.schema}
      required
      value={props.value}
      pointer=""
      hide={props.hide}
      onChange={(v) => props.onChange(v as Record<string, unknown>)}
    />
  );
}
