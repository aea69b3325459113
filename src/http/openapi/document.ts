/**
 * The OpenAPI 3.1 document, built from the route table the server mounts (RouteInfo[], src/http/router.ts) and
 * the registry's description of each route: a path is in the document because it is mounted, and every
 * mounted route is in it. Routes whose paths differ only in a parameter's name (`/api/v2/messages/:id` for a
 * job, `:msgId` for a network message) are one OpenAPI path; their operations of one method are merged.
 */
import { Struct } from 'superstruct';
import { ERROR_STATUS, type ErrorCode } from '../../errors.js';
import type { AuthKind, RouteInfo } from '../router.js';
import { BODYLESS } from '../body.js';
import { COMPONENT_SCHEMAS, REGISTRY, type BodySpec, type Operation } from './registry.js';
import { SECURITY_SCHEMES, errorResponses, ref } from './components.js';
import { structSchema, type AnyStruct, type JsonSchema } from './struct-schema.js';

/** A schema with every superstruct struct inside it converted. */
function resolve(spec: unknown): unknown {
  if (spec instanceof Struct) return structSchema(spec as unknown as AnyStruct);
  if (Array.isArray(spec)) return spec.map(resolve);
  if (spec && typeof spec === 'object') return Object.fromEntries(Object.entries(spec).map(([k, v]) => [k, resolve(v)]));
  return spec;
}
const schemaOf = (spec: BodySpec): JsonSchema => resolve(spec) as JsonSchema;

const AUTH_ERRORS: Record<AuthKind, ErrorCode[]> = {
  none: [],
  instance: ['UNAUTHORIZED', 'INVALID_API_KEY', 'QUEUE_STORE_UNAVAILABLE'],
  admin: ['UNAUTHORIZED', 'FORBIDDEN'],
  cluster: ['UNAUTHORIZED'],
};
const SECURITY: Record<AuthKind, JsonSchema[]> = {
  none: [],
  instance: [{ instanceKey: [] }],
  admin: [{ adminToken: [] }],
  cluster: [{ clusterSecret: [] }],
};
const BODY_ERRORS: ErrorCode[] = ['VALIDATION_FAILED', 'UNSUPPORTED_MEDIA_TYPE', 'PAYLOAD_TOO_LARGE'];

/** `/a/:b/c` → `/a/{b}/c` */
export const openApiPath = (path: string): string => path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
const shapeOf = (path: string): string => path.replace(/:[A-Za-z0-9_]+/g, ':');
const paramNames = (template: string): string[] => [...template.matchAll(/\{([^}]+)\}/g)].map((m) => m[1] ?? '');

export const registryKey = (r: Pick<RouteInfo, 'method' | 'path'>): string => `${r.method} ${r.path}`;

/** What a route answers before its handler runs, whatever it reads: the rules of its family (src/http/router.ts). */
function routeErrors(r: RouteInfo): ErrorCode[] {
  const codes = [...AUTH_ERRORS[r.auth]];
  // SPEC.md: during an ordered restart every /api/v2/* route answers 503 QUEUE_PAUSED (the guard of the v2 families)
  if (r.auth === 'instance' && r.path.startsWith('/api/v2/')) codes.push('QUEUE_PAUSED');
  // the family's JSON body reader runs on these methods whether or not the route takes a body
  if (r.body === 'json' && !BODYLESS.has(r.method)) codes.push(...BODY_ERRORS);
  // `takes()`: an unknown query parameter (or body field, on a route without a body) is 400 naming it
  if (r.unknownInputs === 'refused') codes.push('VALIDATION_FAILED');
  return codes;
}

/** The binary answer of a download (`ok.bytes`): whatever media type the file has. */
const BYTES: JsonSchema = { type: 'string', format: 'binary' };

function responsesOf(routes: RouteInfo[], ops: Operation[]): JsonSchema {
  const out: Record<string, JsonSchema> = {};
  const okByStatus = new Map<number, { media: Map<string, JsonSchema[]>; descriptions: string[] }>();
  const answer = (status: number, schema: JsonSchema, description: string, media = 'application/json') => {
    const entry = okByStatus.get(status) ?? { media: new Map<string, JsonSchema[]>(), descriptions: [] };
    entry.media.set(media, [...(entry.media.get(media) ?? []), schema]);
    if (!entry.descriptions.includes(description)) entry.descriptions.push(description);
    okByStatus.set(status, entry);
  };
  for (const op of ops) {
    answer(op.ok.status, op.ok.schema, op.ok.description ?? op.summary, op.ok.media);
    // (a replayed send: found from the outside, the only real answer the document did not declare)
    if (op.ok.alsoAs) answer(op.ok.alsoAs.status, op.ok.schema, op.ok.alsoAs.description, op.ok.media);
    if (op.ok.bytes) answer(op.ok.status, BYTES, op.ok.bytes, '*/*');
    for (const a of op.also ?? []) answer(a.status, a.schema, a.description ?? op.summary, a.media);
  }
  for (const [status, { media, descriptions }] of [...okByStatus].sort(([a], [b]) => a - b)) {
    const content = Object.fromEntries([...media].map(([type, schemas]) => [type, { schema: schemas.length === 1 ? schemas[0] : { oneOf: schemas } }]));
    out[String(status)] = { description: descriptions.join(' / '), content };
  }
  const v1 = ops.some((o) => o.v1);
  const codes = new Set<ErrorCode>();
  for (const r of routes) for (const c of routeErrors(r)) codes.add(c);
  for (const op of ops) {
    for (const c of op.errors ?? []) codes.add(c);
    if (op.body) for (const c of BODY_ERRORS) codes.add(c);
  }
  if (!v1) codes.add('INTERNAL_ERROR');
  const byStatus = new Map<number, ErrorCode[]>();
  for (const c of codes) byStatus.set(ERROR_STATUS[c], [...(byStatus.get(ERROR_STATUS[c]) ?? []), c]);
  for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) {
    if (out[String(status)]) continue;
    if (list.length === 1 && !v1) {
      out[String(status)] = { $ref: `#/components/responses/E_${list[0]}` };
      continue;
    }
    out[String(status)] = {
      description: `${list.join(', ')}${v1 ? ' (v1: `{success:false, error}` without code, except QUEUE_WAIT_TIMEOUT)' : ''}`,
      content: { 'application/json': { schema: v1 ? { anyOf: [ref('Error'), ref('V1Error')] } : { allOf: [ref('Error'), { properties: { code: { enum: list } } }] } } },
    };
  }
  if (v1 && !out['500']) {
    out['500'] = { description: 'v1: not sent, failed, or outcome unknown. Do not resend automatically: the message may have been delivered.', content: { 'application/json': { schema: ref('V1Error') } } };
  }
  return out;
}

function operationOf(template: string, method: string, routes: RouteInfo[]): JsonSchema {
  const found = routes.map((r) => REGISTRY[registryKey(r)]);
  const ops = found.filter((o): o is Operation => o !== undefined);
  const undocumented = found.length !== ops.length;
  const first = ops[0];
  const withBody = ops.find((o) => o.body);
  const withQuery = ops.find((o) => o.query);
  const example = ops.find((o) => o.example)?.example;
  const parameters: JsonSchema[] = paramNames(template).map((name) => ({ name, in: 'path', required: true, schema: { type: 'string' } }));
  if (withQuery?.query) {
    const q = schemaOf(withQuery.query);
    const required = new Set((q.required as string[] | undefined) ?? []);
    for (const [name, schema] of Object.entries((q.properties ?? {}) as Record<string, JsonSchema>)) {
      parameters.push({ name, in: 'query', required: required.has(name), schema, ...(example?.query?.[name] !== undefined ? { example: example.query[name] } : {}) });
    }
  }
  const description = [
    ...ops.map((o) => o.description).filter((d): d is string => Boolean(d)),
    ...(ops.some((o) => o.v1) ? ['**v1 (frozen).** A v1 `500` does not prove that the message was not delivered: never resend after any answer; resend only when no answer arrived at all.'] : []),
    ...(routes.length > 1 ? [`Serves ${routes.map((r) => `\`${r.path}\``).join(' and ')}: ${ops.map((o) => o.summary).join('; ')}.`] : []),
  ].join('\n\n');
  const operation: JsonSchema = {
    operationId: `${method.toLowerCase()}${template.replace(/[{}]/g, '').split(/[/.-]/).map((p) => (p ? p[0]?.toUpperCase() + p.slice(1) : '')).join('')}`,
    summary: undocumented ? `${method} ${template} (undocumented)` : ops.map((o) => o.summary).join(' / '),
    ...(description ? { description } : {}),
    tags: [first?.tag ?? 'Undocumented'],
    security: first?.security ?? SECURITY[routes[0]?.auth ?? 'none'],
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(withBody?.body
      ? {
          requestBody: {
            required: false,
            content: { [withBody.multipart ? 'multipart/form-data' : 'application/json']: { schema: schemaOf(withBody.body), ...(example?.body !== undefined ? { example: example.body } : {}) } },
          },
        }
      : {}),
    responses: responsesOf(routes, ops),
    'x-routes': routes.map((r) => ({ family: r.family, auth: r.auth, method: r.method, path: r.path, body: r.body, unknownInputs: r.unknownInputs })),
    ...(example ? { 'x-example': example } : {}),
    ...(undocumented ? { 'x-undocumented': true } : {}),
  };
  return operation;
}

export function buildDocument(routes: readonly RouteInfo[], version: string): JsonSchema {
  // one template per path shape: the first route's parameter names
  const templates = new Map<string, string>();
  for (const r of routes) if (!templates.has(shapeOf(r.path))) templates.set(shapeOf(r.path), openApiPath(r.path));
  const grouped = new Map<string, Map<string, RouteInfo[]>>();
  for (const r of routes) {
    const template = templates.get(shapeOf(r.path)) ?? openApiPath(r.path);
    const methods = grouped.get(template) ?? new Map<string, RouteInfo[]>();
    methods.set(r.method, [...(methods.get(r.method) ?? []), r]);
    grouped.set(template, methods);
  }
  const paths: Record<string, JsonSchema> = {};
  for (const [template, methods] of grouped) {
    paths[template] = Object.fromEntries([...methods].map(([method, rs]) => [method.toLowerCase(), operationOf(template, method, rs)]));
  }
  const tags = [...new Set(Object.values(paths).flatMap((p) => Object.values(p).map((o) => ((o as { tags: string[] }).tags[0] ?? ''))))];
  return {
    openapi: '3.1.0',
    jsonSchemaDialect: 'https://spec.openapis.org/oas/3.1/dialect/base',
    info: {
      title: 'Messaging gateway API',
      version,
      description: [
        'Generated from the routes the server mounts and the schemas it validates with. The guide: docs/api.md.',
        'Every JSON answer is enveloped: `{success: true, data}` or `{success: false, error, code, data}` (branch on `code`). `GET /health` and this document are not enveloped.',
        'A v2 send answers `202` once the job is in PostgreSQL; read the outcome from `statusUrl` or the webhooks. Retry a send only with the same idempotency key, after no answer, `502 INSTANCE_UNREACHABLE` or `503 QUEUE_PAUSED` (after its delay).',
      ].join('\n\n'),
    },
    servers: [{ url: '/' }],
    tags: tags.map((name) => ({ name })),
    paths,
    components: { schemas: COMPONENT_SCHEMAS, responses: errorResponses(), securitySchemes: SECURITY_SCHEMES },
  };
}
