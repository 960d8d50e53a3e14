/**
 * The errors the client throws. The server reports the engine's errors as RFC 9457 problem
 * details whose `error` member names the engine's error type (`NotFoundError`...); the client
 * throws the class of that name, so code can branch with `instanceof` exactly as Python code
 * catches the same names from `clawmemory.errors`. The hierarchy mirrors the Python one
 * (`SchemaError` is a `StorageError`, `LLMNotConfiguredError` an `LLMError`...).
 *
 * What never reached the engine has classes of its own: `NetworkError` (no answer: refused,
 * reset, unknown host), `RequestTimeoutError` (no answer in time) and `UnexpectedResponseError`
 * (an answer that is not the API's, e.g. a proxy's HTML page).
 */

import type { components } from "./generated/schema.js";

/** A problem-details body as the server sends it. */
export type ProblemDetails = components["schemas"]["Problem"];

export interface ErrorOptions {
  /** The HTTP status, when the server answered. */
  status?: number | undefined;
  /** The problem details the server sent, when it sent some. */
  problem?: ProblemDetails | undefined;
  cause?: unknown;
}

/** The base of every error this client throws. */
export class ClawMemoryError extends Error {
  /** The HTTP status of the answer; undefined when there was none. */
  readonly status: number | undefined;
  /** The server's problem details; undefined when the server sent none. */
  readonly problem: ProblemDetails | undefined;

  constructor(message: string, options: ErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    // The class's own name, so stack traces and logs say `NotFoundError`, not `Error`.
    this.name = new.target.name;
    this.status = options.status;
    this.problem = options.problem;
  }

  /** The server's name for the error (problem details' `error`), e.g. `NotFoundError`. */
  get error(): string | undefined {
    return this.problem?.error;
  }
}

/** The server cannot do this with its configuration (409). */
export class ConfigError extends ClawMemoryError {}
/** The request was refused as invalid: the engine's own sentence says why (422, 413). */
export class InvalidInputError extends ClawMemoryError {}
/** A snapshot to import is malformed (422). */
export class ImportFormatError extends ClawMemoryError {}
/** No memory (or route) with that id or key in the namespace (404). */
export class NotFoundError extends ClawMemoryError {}
/** The server's storage failed (503). */
export class StorageError extends ClawMemoryError {}
/** The server's database schema is not what it expects (500). */
export class SchemaError extends StorageError {}
/** The server's embedder failed (503). */
export class EmbeddingError extends ClawMemoryError {}
/** No API key, or one that is unknown, malformed or revoked (401). */
export class AuthenticationError extends ClawMemoryError {}
/** The key's role or namespaces do not allow this (403). */
export class AccessDeniedError extends ClawMemoryError {}
/** The server's LLM provider failed (502). */
export class LLMError extends ClawMemoryError {}
/** The operation needs an LLM and the server has none configured (409). */
export class LLMNotConfiguredError extends LLMError {}
/** The server's LLM provider cannot be reached or timed out (502). */
export class LLMUnavailableError extends LLMError {}

/** No answer from the server: connection refused or reset, unknown host, TLS failure. */
export class NetworkError extends ClawMemoryError {}
/** No (complete) answer within `timeoutMs`. A network error, so `NetworkError` catches it. */
export class RequestTimeoutError extends NetworkError {}
/** An answer that is not the API's: not JSON, or an error without problem details. */
export class UnexpectedResponseError extends ClawMemoryError {}

type ErrorClass = new (message: string, options?: ErrorOptions) => ClawMemoryError;

/** The server's `error` names this client has a class for. */
const BY_NAME: ReadonlyMap<string, ErrorClass> = new Map<string, ErrorClass>([
  ["ClawMemoryError", ClawMemoryError],
  ["ConfigError", ConfigError],
  ["InvalidInputError", InvalidInputError],
  ["ImportFormatError", ImportFormatError],
  ["NotFoundError", NotFoundError],
  ["StorageError", StorageError],
  ["SchemaError", SchemaError],
  ["EmbeddingError", EmbeddingError],
  ["AuthenticationError", AuthenticationError],
  ["AccessDeniedError", AccessDeniedError],
  ["LLMError", LLMError],
  ["LLMNotConfiguredError", LLMNotConfiguredError],
  ["LLMUnavailableError", LLMUnavailableError],
]);

function isProblem(body: unknown): body is ProblemDetails {
  if (typeof body !== "object" || body === null) return false;
  const b = body as Record<string, unknown>;
  return typeof b.error === "string" && typeof b.detail === "string";
}

/**
 * The error for an answer that is not a success: the class the problem's `error` names; the
 * base class (with `error` still readable) for a name this client does not know, such as a
 * newer server's; `UnexpectedResponseError` when the body is no problem details.
 */
export function errorFromResponse(status: number, body: string): ClawMemoryError {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    parsed = undefined;
  }
  if (!isProblem(parsed)) {
    const excerpt = body.length > 200 ? `${body.slice(0, 200)}...` : body;
    return new UnexpectedResponseError(`the server answered ${status}: ${excerpt}`, { status });
  }
  const Kind = BY_NAME.get(parsed.error) ?? ClawMemoryError;
  return new Kind(parsed.detail, { status, problem: parsed });
}
