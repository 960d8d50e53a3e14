/**
 * `clawmemory`: a client for the REST API (`/v1`) of a clawmemory server (`clawmem serve`).
 *
 * The request and response types come from `./generated/schema.ts`, which openapi-typescript
 * generates from the server's OpenAPI document (`npm run generate`); this file only names
 * them and wraps each route in a method. No runtime dependency: requests go through the
 * global `fetch` (or the one given to the constructor).
 */

import {
  AuthenticationError,
  ClawMemoryError,
  NetworkError,
  RequestTimeoutError,
  UnexpectedResponseError,
  errorFromResponse,
} from "./errors.js";
import type { components, paths } from "./generated/schema.js";

export * from "./errors.js";
export type { components, operations, paths } from "./generated/schema.js";

type Schemas = components["schemas"];

/** A memory, every field (times are epoch seconds, UTC). */
export type Memory = Schemas["MemoryOut"];
/** An archived memory: a memory and when it was archived. */
export type ArchivedMemory = Schemas["ArchivedOut"];
/** One recall result: the memory, its score and why it scored so. */
export type Hit = Schemas["HitOut"];
/** Why a memory matched: matched terms, candidate lists, fused score, factors, final score. */
export type Explanation = Schemas["Explain"];
/** What one forget removed: the memory, its other versions and what was derived from it. */
export type Forgotten = Schemas["Forgot"];
/** One page of a listing; pass `next_cursor` back for the next (null at the end). */
export type MemoryPage = Schemas["MemoryList"];
/** A memory to store: `content` and any of the optional fields. */
export type StoreInput = Schemas["StoreIn"];
/** The fields to change in place; omitted fields stay as they are. */
export type UpdateInput = Schemas["UpdateIn"];
/** A correction: the new content, and optionally new tags and the reason. */
export type CorrectInput = Schemas["CorrectIn"];
/** Recall's arguments: the query and its options (mode, limit, tags, time filters...). */
export type RecallInput = Schemas["RecallIn"];
/** Recall's options: everything `RecallInput` takes but the query. */
export type RecallOptions = Omit<RecallInput, "query">;
/** What `GET /v1/health` answers: `{status: "ok", version}`. */
export type Health = paths["/v1/health"]["get"]["responses"][200]["content"]["application/json"];

type ListQuery = NonNullable<paths["/v1/memories"]["get"]["parameters"]["query"]>;
type CountQuery = NonNullable<paths["/v1/count"]["get"]["parameters"]["query"]>;
type TimeFilter = "since" | "until" | "created_since" | "created_until" | "as_of";

/**
 * The filters of a listing, as `GET /v1/memories` takes them, with three conveniences: `tags`
 * (the query's repeatable `tag`, named as recall and store name it), `metadata` as an object
 * (the query takes its JSON text) and times as epoch seconds or text (ISO-8601, "2 weeks ago").
 * `limit` is the page size (1-1000, default 50).
 */
export type ListOptions = Omit<ListQuery, "tag" | "metadata" | "cursor" | "offset" | "namespace"
  | TimeFilter> & ListConveniences;
/** The filters of `count`: those of a listing, without order and paging. */
export type CountOptions = Omit<CountQuery, "tag" | "metadata" | "namespace" | TimeFilter>
  & ListConveniences;

interface ListConveniences {
  tags?: string[] | undefined;
  metadata?: Record<string, unknown> | undefined;
  since?: number | string | undefined;
  until?: number | string | undefined;
  created_since?: number | string | undefined;
  created_until?: number | string | undefined;
  as_of?: number | string | undefined;
}

/** A recall hit's explanation, flattened for logging: see `ClawMemory.explain`. */
export interface Explained {
  id: string;
  content: string;
  score: number;
  explain: Explanation;
}

export interface ClawMemoryOptions {
  /** The server's address, e.g. `http://127.0.0.1:8765` (a path prefix is kept). */
  url: string;
  /** An API key (`clawmem keys create`), sent as `Authorization: Bearer`. */
  apiKey?: string | undefined;
  /** The namespace to work in; by default the key's first one (no keys: the server's). */
  namespace?: string | undefined;
  /** The `fetch` to use; the global one by default. */
  fetch?: typeof globalThis.fetch | undefined;
  /** Milliseconds a request may take, answer included, before `RequestTimeoutError`;
   * default 60 000 (a maintenance run or a large import may take a while); 0: no limit. */
  timeoutMs?: number | undefined;
  /** Headers sent with every request (e.g. for a proxy in front of the server). */
  headers?: Record<string, string> | undefined;
}

type Query = Record<string, string | number | boolean | readonly string[] | null | undefined>;

interface Request {
  query?: Query | undefined;
  body?: unknown;
  /** Whether the route works in a namespace (all but health). */
  namespaced?: boolean;
}

export const DEFAULT_TIMEOUT_MS = 60_000;

/**
 * A clawmemory server's memory, over its REST API.
 *
 * ```ts
 * const mem = new ClawMemory({ url: "http://127.0.0.1:8765", apiKey: "cmk_..." });
 * const id = await mem.store("User prefers dark mode", { kind: "preference", tags: ["ui"] });
 * for (const hit of await mem.recall("dark theme", { limit: 5 })) console.log(hit.score);
 * ```
 */
export class ClawMemory {
  readonly url: string;
  readonly namespace: string | undefined;
  readonly timeoutMs: number;
  readonly #apiKey: string | undefined;
  readonly #fetch: typeof globalThis.fetch;
  readonly #headers: Record<string, string>;

  constructor(options: ClawMemoryOptions) {
    let parsed: URL;
    try {
      parsed = new URL(options.url);
    } catch {
      throw new TypeError(`url must be an absolute http(s) URL, got ${JSON.stringify(options.url)}`);
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
      throw new TypeError(`url must be an http(s) URL, got ${JSON.stringify(options.url)}`);
    }
    this.url = options.url.replace(/\/+$/, "");
    this.namespace = options.namespace || undefined;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    if (!(this.timeoutMs >= 0)) throw new TypeError("timeoutMs must be 0 or more");
    this.#apiKey = options.apiKey || undefined;
    const f = options.fetch ?? globalThis.fetch;
    if (typeof f !== "function") throw new TypeError("no fetch: use Node 20 or later, or pass one");
    this.#fetch = f;
    this.#headers = { ...options.headers };
  }

  /** The same server and key, working in another namespace. */
  withNamespace(namespace: string): ClawMemory {
    return new ClawMemory({ url: this.url, apiKey: this.#apiKey, namespace, fetch: this.#fetch,
      timeoutMs: this.timeoutMs, headers: this.#headers });
  }

  // --- service ---------------------------------------------------------------------------------
  /** Whether the server answers, and its version (no key needed). */
  async health(): Promise<Health> {
    return this.#request<Health>("GET", "/v1/health", { namespaced: false });
  }

  /** Counts by kind, links, archive and vector state of the namespace. */
  async stats(): Promise<Record<string, unknown>> {
    return this.#request("GET", "/v1/stats");
  }

  // --- memories --------------------------------------------------------------------------------
  /** Store a memory; its id. With a `key` that exists in the namespace, that memory is updated
   * in place and keeps its id. */
  async store(content: string, options: Omit<StoreInput, "content"> = {}): Promise<string> {
    const stored = await this.#request<Schemas["Stored"]>("POST", "/v1/memories",
      { body: { ...options, content } });
    return stored.id;
  }

  /** `store` under the name most memory APIs use. */
  add(content: string, options: Omit<StoreInput, "content"> = {}): Promise<string> {
    return this.store(content, options);
  }

  /** Store many memories at once (at most 10,000); their ids, in order. */
  async storeMany(items: StoreInput[]): Promise<string[]> {
    const stored = await this.#request<Schemas["StoredMany"]>("POST", "/v1/memories/batch",
      { body: { items } });
    return stored.ids;
  }

  /** One memory by id or key; `NotFoundError` when the namespace has none. */
  async get(ref: string): Promise<Memory> {
    return this.#request("GET", `/v1/memories/${segment(ref)}`);
  }

  /** Change a memory in place (only the fields given); its score is kept. */
  async update(ref: string, changes: UpdateInput): Promise<Memory> {
    return this.#request("PATCH", `/v1/memories/${segment(ref)}`, { body: changes });
  }

  /** Forget a memory for good: every version, every memory derived from it, every byte. */
  async forget(ref: string): Promise<Forgotten> {
    return this.#request("DELETE", `/v1/memories/${segment(ref)}`);
  }

  /** `forget` under the HTTP verb's name. */
  delete(ref: string): Promise<Forgotten> {
    return this.forget(ref);
  }

  /** Replace a memory with a corrected one; the old one stays, invalidated (`history`). */
  async correct(ref: string, content: string, options: Omit<CorrectInput, "content"> = {}
  ): Promise<Memory> {
    return this.#request("POST", `/v1/memories/${segment(ref)}/correct`,
      { body: { ...options, content } });
  }

  /** Protect a memory for good: it never decays and its confidence is 1. */
  async confirm(ref: string): Promise<Memory> {
    return this.#request("POST", `/v1/memories/${segment(ref)}/confirm`);
  }

  /** The memory helped: its score goes up (by `weight`, default 3). */
  async reinforce(ref: string, weight?: number): Promise<Memory> {
    return this.#request("POST", `/v1/memories/${segment(ref)}/reinforce`,
      { body: weight === undefined ? {} : { weight } });
  }

  /** The memory is wrong or stale: its score goes down (by `weight`, default 1). */
  async demote(ref: string, weight?: number): Promise<Memory> {
    return this.#request("POST", `/v1/memories/${segment(ref)}/demote`,
      { body: weight === undefined ? {} : { weight } });
  }

  /** The chain of corrections through this memory, oldest first. */
  async history(ref: string): Promise<Memory[]> {
    return this.#request("GET", `/v1/memories/${segment(ref)}/history`);
  }

  // --- listing ---------------------------------------------------------------------------------
  /** One page of memories; pass its `next_cursor` as `cursor` for the next, with the same
   * filters (the server refuses a cursor with other filters). */
  async listPage(options: ListOptions = {}, cursor?: string | null): Promise<MemoryPage> {
    return this.#request("GET", "/v1/memories",
      { query: { ...listQuery(options), cursor: cursor ?? undefined } });
  }

  /** Every page of a listing, following the cursor until the last. */
  async *pages(options: ListOptions = {}): AsyncGenerator<MemoryPage, void, undefined> {
    let cursor: string | null = null;
    do {
      const page: MemoryPage = await this.listPage(options, cursor);
      yield page;
      cursor = page.next_cursor;
    } while (cursor);
  }

  /** Every memory matching the filters, a page (`limit`) at a time:
   * `for await (const m of mem.list({ tags: ["ui"] })) ...`. */
  async *list(options: ListOptions = {}): AsyncGenerator<Memory, void, undefined> {
    for await (const page of this.pages(options)) yield* page.memories;
  }

  /** How many memories match the filters. */
  async count(options: CountOptions = {}): Promise<number> {
    const counted = await this.#request<{ count: number }>("GET", "/v1/count",
      { query: listQuery(options) });
    return counted.count;
  }

  // --- recall ----------------------------------------------------------------------------------
  /** The memories most relevant to `query`, best first, each with its score and the
   * explanation of it (`hit.explain`). */
  async recall(query: string, options: RecallOptions = {}): Promise<Hit[]> {
    const found = await this.#request<Schemas["RecallOut"]>("POST", "/v1/recall",
      { body: { ...options, query } });
    return found.hits;
  }

  /** Why each memory would be recalled for `query`: id, content, score and explanation per
   * hit. Unlike `recall`, it does not count as an access (`touch: false`) unless asked to, so
   * asking why changes no memory's recency. */
  async explain(query: string, options: RecallOptions = {}): Promise<Explained[]> {
    const hits = await this.recall(query, { touch: false, ...options });
    return hits.map((h) => ({ id: h.memory.id, content: h.memory.content, score: h.score,
      explain: h.explain }));
  }

  // --- transport -------------------------------------------------------------------------------
  async #request<T>(method: string, path: string, request: Request = {}): Promise<T> {
    const url = new URL(this.url + path);
    for (const [name, value] of Object.entries(request.query ?? {})) {
      if (value === undefined || value === null) continue;
      if (Array.isArray(value)) {
        for (const item of value) url.searchParams.append(name, item);
      } else {
        url.searchParams.set(name, String(value));
      }
    }
    if (request.namespaced !== false && this.namespace !== undefined) {
      url.searchParams.set("namespace", this.namespace);
    }
    const headers: Record<string, string> = {
      accept: "application/json, application/problem+json", ...this.#headers };
    if (this.#apiKey !== undefined) headers.authorization = `Bearer ${this.#apiKey}`;
    let body: string | undefined;
    if (request.body !== undefined) {
      body = JSON.stringify(request.body);
      headers["content-type"] = "application/json";
    }
    // One timer for the whole exchange: a server that sends headers and then stalls on the
    // body times out too.
    const controller = new AbortController();
    let timedOut = false;
    const timer = this.timeoutMs > 0 ? setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, this.timeoutMs) : undefined;
    const failed = (cause: unknown): ClawMemoryError => timedOut
      ? new RequestTimeoutError(`${method} ${url.pathname}: no answer from ${url.origin} within`
        + ` ${this.timeoutMs} ms`, { cause })
      : new NetworkError(`${method} ${url.pathname}: cannot reach ${url.origin}: ${reason(cause)}`,
        { cause });
    try {
      let response: Response;
      let text: string;
      try {
        response = await this.#fetch(url, { method, headers, body, signal: controller.signal });
        text = await response.text();
      } catch (cause) {
        throw failed(cause);
      }
      if (!response.ok) {
        const error = errorFromResponse(response.status, text);
        if (error instanceof AuthenticationError && this.#apiKey === undefined) {
          // The server's sentence says a key is needed; say how this client sends one.
          error.message += " (pass apiKey to new ClawMemory)";
        }
        throw error;
      }
      try {
        return JSON.parse(text) as T;
      } catch (cause) {
        throw new UnexpectedResponseError(`${method} ${url.pathname}: the server answered`
          + ` ${response.status} with no JSON: ${text.slice(0, 200)}`,
          { status: response.status, cause });
      }
    } finally {
      clearTimeout(timer);
    }
  }
}

/** A path segment: ids and keys may hold any character, `/` and `?` included. */
function segment(ref: string): string {
  if (typeof ref !== "string" || ref === "") throw new TypeError("a memory's id or key is needed");
  return encodeURIComponent(ref);
}

function listQuery(options: ListOptions | CountOptions): Query {
  const { tags, metadata, ...rest } = options;
  return { ...rest, tag: tags,
    metadata: metadata === undefined ? undefined : JSON.stringify(metadata) };
}

/** The deepest cause's message: Node's fetch says only "fetch failed", its cause says why
 * (ECONNREFUSED, ENOTFOUND...). */
function reason(error: unknown): string {
  let deepest = error;
  while (deepest instanceof Error && deepest.cause !== undefined) deepest = deepest.cause;
  if (deepest instanceof Error) {
    const code = (deepest as Error & { code?: unknown }).code;
    return typeof code === "string" && !deepest.message.includes(code)
      ? `${code}: ${deepest.message}` : deepest.message;
  }
  return String(deepest);
}
