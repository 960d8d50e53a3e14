// The client against a real clawmemory server: tests/clients/test_typescript.py starts one
// (keys required, keyword recall) and passes its address and keys in the environment:
//   CLAWMEM_URL        the server
//   CLAWMEM_API_KEY    a write key bound to the namespaces ts-a (its default) and ts-b
//   CLAWMEM_READ_KEY   a read key bound to ts-a only
// The package is imported by its own name, so its `exports` map is what resolves it.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { describe, test, before, after } from "node:test";

import {
  AccessDeniedError,
  AuthenticationError,
  ClawMemory,
  ClawMemoryError,
  InvalidInputError,
  NetworkError,
  NotFoundError,
  RequestTimeoutError,
  UnexpectedResponseError,
} from "clawmemory";

const url = process.env.CLAWMEM_URL;
const apiKey = process.env.CLAWMEM_API_KEY;
const readKey = process.env.CLAWMEM_READ_KEY;
if (!url || !apiKey || !readKey) {
  throw new Error("set CLAWMEM_URL, CLAWMEM_API_KEY and CLAWMEM_READ_KEY (tests/clients/test_typescript.py does)");
}

const mem = new ClawMemory({ url, apiKey, timeoutMs: 10_000 });
// Each run's own tag, so tests never see each other's memories in listings.
const run = `run-${process.pid}-${Date.now()}`;

test("health answers without a key", async () => {
  const health = await new ClawMemory({ url }).health();
  assert.equal(health.status, "ok");
  assert.match(health.version, /^\d+\.\d+/);
});

test("store, get, update and forget one memory", async () => {
  const key = `${run}-theme`;
  const id = await mem.store("User prefers dark mode in every editor",
    { kind: "preference", tags: ["ui", run], key, metadata: { app: "vscode" } });
  assert.match(id, /^[0-9a-f]{16}$/);
  const got = await mem.get(id);
  assert.deepEqual([got.id, got.namespace, got.kind, got.key, got.tags, got.metadata],
    [id, "ts-a", "preference", key, ["ui", run], { app: "vscode" }]);
  assert.deepEqual(await mem.get(key), got, "a key finds the memory as its id does");

  const updated = await mem.update(key, { content: "User prefers dark mode, except in the terminal" });
  assert.equal(updated.id, id);
  assert.equal(updated.content, "User prefers dark mode, except in the terminal");
  assert.equal((await mem.get(id)).content, updated.content);

  const forgotten = await mem.forget(key);
  assert.deepEqual(forgotten, { deleted: 1, id, key, versions: [], derived: [], reopened_sessions: [] });
  await assert.rejects(mem.get(id), NotFoundError);
});

test("add and delete are store and forget", async () => {
  const id = await mem.add("Deploys happen on Tuesdays", { kind: "event", tags: [run] });
  assert.equal((await mem.delete(id)).deleted, 1);
});

test("recall returns the stored memory with its score and explanation", async () => {
  const id = await mem.store("The staging database zebrafish is reset every Monday",
    { tags: ["ops", run] });
  await mem.store("Lunch is at noon", { tags: [run] });
  const hits = await mem.recall("zebrafish staging", { mode: "keyword", limit: 5, tags: [run] });
  assert.equal(hits.length, 1);
  const [hit] = hits;
  assert.equal(hit.memory.id, id);
  assert.ok(hit.score > 0, `score ${hit.score}`);
  assert.ok(hit.explain.matched_terms.includes("zebrafish"), String(hit.explain.matched_terms));
  assert.equal(hit.explain.lists.keyword.rank, 1);
  assert.ok(Math.abs(hit.score - hit.explain.final) < 1e-9, "the score is the explanation's final");
  assert.ok("recency" in hit.explain.factors, JSON.stringify(hit.explain.factors));

  const before = (await mem.get(id)).access_count;
  const [explained] = await mem.explain("zebrafish", { mode: "keyword", tags: [run] });
  assert.equal(explained.id, id);
  assert.equal(explained.content, "The staging database zebrafish is reset every Monday");
  assert.equal(explained.score, explained.explain.final);
  assert.equal((await mem.get(id)).access_count, before, "explain is no access");

  assert.deepEqual(await mem.recall("zebrafish", { mode: "keyword", tags: ["no-such-tag"] }), []);
});

test("reinforce, demote, correct and history", async () => {
  const id = await mem.store("HMAC excludes an empty body", { tags: [run] });
  assert.equal((await mem.reinforce(id)).score, 3);
  assert.equal((await mem.demote(id, 2)).score, 1);
  const corrected = await mem.correct(id, "HMAC covers the raw body, even when empty",
    { reason: "API v2" });
  assert.notEqual(corrected.id, id);
  assert.equal(corrected.supersedes, id);
  const chain = await mem.history(corrected.id);
  assert.deepEqual(chain.map((m) => m.id), [id, corrected.id]);
  assert.ok(chain[0].valid_until !== null, "the old version is invalidated");
});

test("list follows the cursor through every page", async () => {
  const tag = `${run}-paging`;
  const ids = await mem.storeMany(Array.from({ length: 7 }, (_, i) => (
    { content: `paging item ${i}`, tags: [tag] })));
  assert.equal(ids.length, 7);

  const first = await mem.listPage({ tags: [tag], limit: 3 });
  assert.equal(first.memories.length, 3);
  assert.equal(typeof first.next_cursor, "string");

  const pages = [];
  for await (const page of mem.pages({ tags: [tag], limit: 3 })) pages.push(page);
  assert.deepEqual(pages.map((p) => p.memories.length), [3, 3, 1]);
  assert.equal(pages.at(-1).next_cursor, null);

  const seen = [];
  for await (const m of mem.list({ tags: [tag], limit: 3, order: "oldest" })) seen.push(m.id);
  assert.deepEqual(seen, ids, "every memory once, oldest first");
  assert.equal(await mem.count({ tags: [tag] }), 7);

  // A cursor belongs to its query: another filter is refused, with the server's sentence.
  await assert.rejects(mem.listPage({ tags: [tag], limit: 3, kind: ["event"] }, first.next_cursor),
    (e) => e instanceof InvalidInputError && e.status === 422 && /cursor belongs to another query/.test(e.message));
});

test("a missing memory is a NotFoundError with the server's problem details", async () => {
  const error = await mem.get("no-such-memory").then(() => null, (e) => e);
  assert.ok(error instanceof NotFoundError, String(error));
  assert.ok(error instanceof ClawMemoryError);
  assert.equal(error.name, "NotFoundError");
  assert.equal(error.status, 404);
  assert.equal(error.error, "NotFoundError");
  assert.equal(error.problem.type, "urn:clawmemory:problem:not-found");
  assert.equal(error.message, "no memory with id or key 'no-such-memory' in namespace 'ts-a'");
  await assert.rejects(mem.forget("no-such-memory"), NotFoundError);
  await assert.rejects(mem.reinforce("a/b?c=d"), NotFoundError, "odd characters stay in the path");
});

test("invalid input is an InvalidInputError", async () => {
  await assert.rejects(mem.store("   "), InvalidInputError);
  await assert.rejects(mem.recall("x", { mode: "telepathy" }), InvalidInputError);
});

test("without a key, or with a wrong one, the server refuses: AuthenticationError", async () => {
  const anonymous = new ClawMemory({ url });
  const error = await anonymous.get("anything").then(() => null, (e) => e);
  assert.ok(error instanceof AuthenticationError, String(error));
  assert.equal(error.status, 401);
  assert.match(error.message, /needs an API key.*pass apiKey/);
  await assert.rejects(new ClawMemory({ url, apiKey: "cmk_wrong" }).store("x"),
    AuthenticationError);
});

test("a key reaches only its namespaces, and each namespace only its own memories", async () => {
  const a = mem.withNamespace("ts-a");
  const b = mem.withNamespace("ts-b");
  const key = `${run}-isolated`;
  const id = await a.store("Alice's secret: the vault code is 1234", { key, tags: [run] });
  await assert.rejects(b.get(id), NotFoundError);
  await assert.rejects(b.get(key), NotFoundError);
  assert.deepEqual(await b.recall("vault code", { mode: "keyword" }), []);
  assert.equal(await b.count({ tags: [run] }), 0);
  const idB = await b.store("Bob's note", { key });
  assert.notEqual(idB, id, "the same key in another namespace is another memory");
  assert.equal((await a.get(key)).id, id);
  assert.equal((await b.get(key)).namespace, "ts-b");

  // A namespace the key is not bound to, and a read key writing: AccessDeniedError (403).
  await assert.rejects(mem.withNamespace("ts-other").get(id),
    (e) => e instanceof AccessDeniedError && e.status === 403);
  const reader = new ClawMemory({ url, apiKey: readKey });
  assert.equal((await reader.get(id)).id, id, "a read key reads");
  await assert.rejects(reader.store("not allowed"), AccessDeniedError);
  await assert.rejects(reader.withNamespace("ts-b").get(idB), AccessDeniedError);
});

test("requests carry the key and namespace through the fetch given", async () => {
  const seen = [];
  const recording = (input, init) => {
    seen.push({ url: String(input), auth: init.headers.authorization });
    return fetch(input, init);
  };
  const client = new ClawMemory({ url: `${url}/`, apiKey, namespace: "ts-b", fetch: recording });
  await client.count();
  assert.equal(seen.length, 1);
  assert.equal(seen[0].url, `${url}/v1/count?namespace=ts-b`);
  assert.equal(seen[0].auth, `Bearer ${apiKey}`);
});

describe("when the server cannot answer", () => {
  let stalled;
  let stalledUrl;
  before(async () => {
    // A server that accepts and never answers: the client must give up on its own.
    stalled = createServer(() => {});
    await new Promise((resolve) => stalled.listen(0, "127.0.0.1", resolve));
    stalledUrl = `http://127.0.0.1:${stalled.address().port}`;
  });
  after(() => {
    stalled.closeAllConnections();
    stalled.close();
  });

  test("no answer in time is a RequestTimeoutError (a NetworkError)", async () => {
    const slow = new ClawMemory({ url: stalledUrl, apiKey, timeoutMs: 200 });
    const started = Date.now();
    const error = await slow.get("x").then(() => null, (e) => e);
    assert.ok(error instanceof RequestTimeoutError, String(error));
    assert.ok(error instanceof NetworkError);
    assert.match(error.message, /no answer from http:\/\/127\.0\.0\.1:\d+ within 200 ms/);
    assert.ok(Date.now() - started < 5_000);
  });

  test("a closed port is a NetworkError naming the reason", async () => {
    // A port that was just free: listen, note it, close.
    const probe = createServer();
    await new Promise((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const { port } = probe.address();
    await new Promise((resolve) => probe.close(resolve));
    const error = await new ClawMemory({ url: `http://127.0.0.1:${port}` }).health()
      .then(() => null, (e) => e);
    assert.ok(error instanceof NetworkError, String(error));
    assert.ok(!(error instanceof RequestTimeoutError));
    assert.match(error.message, /cannot reach http:\/\/127\.0\.0\.1:\d+: .*ECONNREFUSED/);
    assert.ok(error.cause, "the fetch error is kept as the cause");
  });

  test("an answer that is not the API's is an UnexpectedResponseError", async () => {
    const proxy = async () => new Response("<html>Bad gateway</html>", { status: 502 });
    const error = await new ClawMemory({ url, fetch: proxy }).health().then(() => null, (e) => e);
    assert.ok(error instanceof UnexpectedResponseError, String(error));
    assert.equal(error.status, 502);
    assert.match(error.message, /502: <html>Bad gateway/);
  });
});
