// The catalog as the OpenAPI document publishes it: operations, their input schemas, and
// the helpers the form generator needs to read JSON Schema.

export type Schema = {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  description?: string;
  title?: string;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  format?: string;
  contentMediaType?: string;
  additionalProperties?: boolean | Schema;
};

export type Operation = {
  operationId: string;
  path: string;
  family: "chain" | "docs";
  summary: string;
  description: string;
  accepts: string[];
  input: Schema;
  price: string;
};

export type Catalog = { operations: Operation[]; schemas: Record<string, Schema> };

let loaded: Promise<Catalog> | undefined;

/** The catalog, read once from /openapi.json. */
export function catalog(): Promise<Catalog> {
  loaded ??= fetch("/openapi.json")
    .then((r) => {
      if (!r.ok) throw new Error(`/openapi.json answered ${r.status}`);
      return r.json();
    })
    .then((doc) => {
      const operations: Operation[] = [];
      for (const [path, item] of Object.entries<any>(doc.paths ?? {})) {
        const post = item.post;
        if (!post?.requestBody) continue;
        operations.push({
          operationId: post.operationId,
          path,
          family: post.tags?.[0] === "chain" ? "chain" : "docs",
          summary: post.summary ?? "",
          description: post.description ?? "",
          accepts: post["x-accepts"] ?? [],
          input: post.requestBody.content["application/json"].schema,
          price: post["x-price"]?.base ?? "",
        });
      }
      return { operations, schemas: doc.components?.schemas ?? {} };
    });
  return loaded;
}

/** `schema` with its `$ref` followed. */
export function resolve(schema: Schema, schemas: Record<string, Schema>): Schema {
  let current = schema;
  for (let depth = 0; current.$ref && depth < 20; depth++) {
    const name = current.$ref.split("/").pop() ?? "";
    const { $ref: _, ...rest } = current;
    current = { ...schemas[name], ...rest };
  }
  return current;
}

/** The name a `$ref` points to. */
export function refName(schema: Schema): string | undefined {
  return schema.$ref?.split("/").pop();
}

/** Whether the schema is a file input (`data` or `url`, with `filename`). */
export function isFileInput(schema: Schema, schemas: Record<string, Schema>): boolean {
  if (refName(schema) === "FileInput") return true;
  const s = resolve(schema, schemas);
  return !!s.properties?.data && !!s.properties?.url && !!s.properties?.filename;
}

/** The types a schema allows (without "null"), and whether null is one. */
export function types(schema: Schema): { types: string[]; nullable: boolean } {
  const list = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
  return { types: list.filter((t) => t !== "null"), nullable: list.includes("null") };
}

/** `anyOf: [X, {type: null}]` read as an optional X. */
export function optionalOf(schema: Schema): Schema | undefined {
  const variants = schema.anyOf ?? schema.oneOf;
  if (!variants || variants.length !== 2) return undefined;
  const nonNull = variants.filter((v) => v.type !== "null");
  if (nonNull.length !== 1) return undefined;
  return { ...nonNull[0], description: schema.description ?? nonNull[0].description };
}

/** A `oneOf` of a list of names and an object (a paper name or a custom size): the
 * names, and the object's schema. */
export function namesOrObject(schema: Schema, schemas: Record<string, Schema>): { names: string[]; object: Schema } | undefined {
  const variants = (schema.oneOf ?? schema.anyOf)?.map((v) => resolve(v, schemas));
  if (!variants || variants.length !== 2) return undefined;
  const names = variants.find((v) => (v.enum?.length ?? 0) > 1 && v.enum?.every((n) => typeof n === "string"));
  const object = variants.find((v) => v.properties);
  if (!names?.enum || !object) return undefined;
  return { names: names.enum as string[], object };
}

/** The constant choices of a `oneOf` of constants or an `enum`. */
export function choices(schema: Schema): { value: unknown; label: string; help?: string }[] | undefined {
  if (schema.enum) return schema.enum.map((v) => ({ value: v, label: String(v) }));
  const variants = schema.oneOf ?? schema.anyOf;
  if (variants?.length && variants.every((v) => v.const !== undefined || v.enum?.length === 1)) {
    return variants.map((v) => {
      const value = v.const ?? v.enum?.[0];
      return { value, label: String(value), help: v.description };
    });
  }
  return undefined;
}

/** A field name as a label: `page_size` → "Page size", `box_pt` → "Box (pt)". */
export function labelOf(name: string): string {
  const words = name.replace(/_(pt|mm|px|ms)$/, " ($1)").replace(/_/g, " ");
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** The file name extension, lower case. */
export function extensionOf(name: string): string {
  const dot = name.lastIndexOf(".");
  return dot < 0 ? "" : name.slice(dot + 1).toLowerCase();
}
