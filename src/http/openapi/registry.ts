/**
 * What the document says about each route beyond the route table: summary, request body and query (the
 * superstruct structs the routes validate with, exported from their route files; hand-bodies.ts only for the
 * few requests that have no struct), the answer and its status, the error codes, and an example request. Keyed
 * by `METHOD path` exactly as the route table (src/http/router.ts) lists it; src/http/openapi/document.ts joins
 * the two, and the test fails on a mounted route missing here. The descriptions live by family under
 * operations/ (operator, send, network, sandbox); this is their union.
 */
import { SCHEMAS } from './components.js';
import type { Operation } from './operations/common.js';
import { OPERATOR_OPERATIONS } from './operations/operator.js';
import { SEND_OPERATIONS } from './operations/send.js';
import { NETWORK_OPERATIONS } from './operations/network.js';
import { SANDBOX_OPERATIONS } from './operations/sandbox.js';

export type { BodySpec, Operation } from './operations/common.js';

export const REGISTRY: Record<string, Operation> = {
  ...OPERATOR_OPERATIONS,
  ...SEND_OPERATIONS,
  ...NETWORK_OPERATIONS,
  ...SANDBOX_OPERATIONS,
};

/** Shapes used only through $ref. */
export const COMPONENT_SCHEMAS = SCHEMAS;
