/**
 * The operator's routes: health and the API reference, the node-to-node ask, /admin/v1 (instances, linking,
 * nodes, webhooks and an instance's queue), metrics, the console and the actor tree.
 */
import { SettingsPatchStruct } from '../../../queue/settings.js';
import { WebhookInput } from '../../../webhooks/config.js';
import { CreateSchema, MoveSchema, PairingSchema, PatchSchema as InstancePatchSchema } from '../../routes/admin-instances.js';
import { AskBody } from '../../routes/internal.js';
import { ItemsQuery } from '../../routes/queue.js';
import { DeliveriesQuery, TestInput } from '../../routes/webhooks.js';
import { obj, ref } from '../components.js';
import { structSchema, type AnyStruct, type JsonSchema } from '../struct-schema.js';
import { ACCEPTED, ADMIN_ONE, SEND_ERRORS, anyData, data, items, type Operation } from './common.js';

/**
 * `struct`'s schema with the property `key` described by `inner`: the route checks that property again with
 * `inner` (admin-instances.ts takes `settings` as a record, then parses it with SettingsPatchStruct).
 */
function checkedWith(struct: AnyStruct, key: string, inner: AnyStruct): JsonSchema {
  const base = structSchema(struct);
  return { ...base, properties: { ...(base.properties as Record<string, JsonSchema>), [key]: structSchema(inner) } };
}

export const OPERATOR_OPERATIONS: Record<string, Operation> = {
  'GET /health': { summary: 'Health counts (no authentication)', tag: 'Health', ok: { status: 200, schema: ref('Health'), description: 'The health object itself (not enveloped).' }, example: {} },
  'GET /openapi.json': { summary: 'This OpenAPI 3.1 document', tag: 'Health', ok: { status: 200, schema: { type: 'object', required: ['openapi'] }, description: 'The document (not enveloped).' }, example: {} },
  'GET /docs': { summary: 'The API reference page (Redoc)', tag: 'Health', ok: { status: 200, schema: { type: 'string' }, description: 'An HTML page.', media: 'text/html' } },
  'GET /docs/redoc.standalone.js': { summary: 'The Redoc bundle the reference page loads', tag: 'Health', ok: { status: 200, schema: { type: 'string' }, description: 'JavaScript.', media: 'application/javascript' } },
  'POST /internal/v1/instances/:id/ask': {
    summary: 'Node to node: an ask to an instance this node runs',
    tag: 'Cluster (internal)',
    description: 'Used between the nodes of one cluster only, with CLUSTER_SECRET; not for integrators.',
    body: AskBody,
    ok: data(obj({ reply: { type: 'object' }, gates: { type: 'boolean', description: 'true: this node checks a v2 send\'s gate as it accepts it (`queue.accept` with `gate`)' } })),
    errors: ['VALIDATION_FAILED', 'INSTANCE_UNREACHABLE'],
  },

  // ---- operator
  'POST /admin/v1/instances': {
    summary: 'Create an instance',
    tag: 'Operator',
    description: 'Answers the instance and its API key, shown only here (stored as a hash). Once the instance is committed the answer is 201, whatever its start meets: `startDeferred` is null when it was placed on a node at once, else why it was not (PostgreSQL away or too slow then); it is not running yet and the next cluster round of its node starts it once PostgreSQL answers. A 503 QUEUE_STORE_UNAVAILABLE created nothing. A COMMIT whose outcome is unknown is 504 INSTANCE_TIMEOUT with `data.reason` commit_unknown and `data.name`: look for the name in GET /admin/v1/instances; if listed, rotate its key (it was never shown); if not, create it again.',
    body: checkedWith(CreateSchema, 'settings', SettingsPatchStruct),
    ok: data(obj({ instance: ref('Instance'), apiKey: { type: 'string', pattern: '^wapi_' }, startDeferred: { type: ['string', 'null'] } }), 201),
    errors: ['VALIDATION_FAILED', 'CONFLICT', 'QUEUE_STORE_UNAVAILABLE', 'INSTANCE_TIMEOUT'],
    example: { body: { name: 'shop-berlin', driver: 'sandbox', settings: { maxPerHour: 30, quietHours: null } } },
  },
  'GET /admin/v1/instances': { summary: 'List instances', tag: 'Operator', ok: data(items(ref('Instance'))), example: {} },
  'GET /admin/v1/instances/:id': { summary: 'One instance with its live status', tag: 'Operator', ok: data(ref('Instance')), errors: ADMIN_ONE },
  'PATCH /admin/v1/instances/:id': {
    summary: 'Change settings (limit changes re-plan the waiting jobs)',
    tag: 'Operator',
    body: checkedWith(InstancePatchSchema, 'settings', SettingsPatchStruct),
    ok: data(ref('Instance')),
    errors: [...ADMIN_ONE, 'VALIDATION_FAILED'],
  },
  'DELETE /admin/v1/instances/:id': { summary: 'Delete an instance and its data', tag: 'Operator', ok: data(obj({ id: { type: 'string' }, deleted: { const: true } })), errors: ADMIN_ONE },
  'POST /admin/v1/instances/:id/keys': { summary: 'Rotate the API key (the old one stops working)', tag: 'Operator', ok: data(obj({ instanceId: { type: 'string' }, apiKey: { type: 'string' } }), 201), errors: ADMIN_ONE },
  'POST /admin/v1/instances/:id/restart': { summary: 'Ordered restart (v2 answers 503 QUEUE_PAUSED meanwhile)', tag: 'Operator', ok: data(obj({ instanceId: { type: 'string' }, restarting: { const: true } }), 202), errors: ADMIN_ONE },
  'POST /admin/v1/instances/:id/logout': { summary: 'Unlink the number', tag: 'Operator', ok: data(obj({ instanceId: { type: 'string' }, loggedOut: { const: true } }), 202), errors: ADMIN_ONE },
  'GET /admin/v1/instances/:id/qr': {
    summary: 'The QR code to link (answered with Cache-Control: no-store)',
    tag: 'Operator',
    description: 'While `waiting_qr` with a QR shown, `qr` is the PNG data URL and `raw` the QR as the driver gave it; otherwise both are null. A pairing code replaces the QR.',
    ok: data(obj({ status: { type: 'string' }, qr: { type: ['string', 'null'] }, raw: { type: ['string', 'null'] } })),
    errors: [...ADMIN_ONE, 'INSTANCE_TIMEOUT', 'INSTANCE_UNREACHABLE'],
  },
  'POST /admin/v1/instances/:id/pairing-code': {
    summary: 'Link by pairing code: answers the code (also sent as webhook event `code`)',
    tag: 'Operator',
    description: 'The first code newer than the request (Cache-Control: no-store). The webjs driver restarts its session in pairing mode first, so this can take up to a minute; no code by then is 504 INSTANCE_TIMEOUT (it may still come as the webhook event). A request the network call fails is answered at once with that failure (500 WA_CALL_FAILED; 503 INSTANCE_OFFLINE when the session went away): no code will come of it. 409 CONFLICT when the instance is linked or no session waits for a link.',
    body: PairingSchema,
    ok: data(obj({ instanceId: { type: 'string' }, code: { type: 'string' }, at: { type: 'string', format: 'date-time' } })),
    errors: [...ADMIN_ONE, 'VALIDATION_FAILED', 'CONFLICT', 'INSTANCE_TIMEOUT', 'INSTANCE_UNREACHABLE', 'WA_CALL_FAILED', 'INSTANCE_OFFLINE'],
  },
  'GET /admin/v1/nodes': { summary: 'The nodes of the cluster', tag: 'Operator', ok: data(items({ type: 'object' })) },
  'POST /admin/v1/instances/:id/move': {
    summary: 'Move an instance to another node',
    tag: 'Operator',
    description: '202 with moving true while the instance is handed over; 200 with moving false when that node runs it already (it stays pinned there).',
    body: MoveSchema,
    ok: data(obj({ instanceId: { type: 'string' }, node: { type: 'string' }, moving: { type: 'boolean' } }), 202),
    errors: [...ADMIN_ONE, 'VALIDATION_FAILED'],
  },
  'PUT /admin/v1/instances/:id/webhook': { summary: 'Set the webhook receiver', tag: 'Webhooks', body: WebhookInput, ok: anyData(), errors: [...ADMIN_ONE, 'VALIDATION_FAILED'] },
  'GET /admin/v1/instances/:id/webhook': { summary: 'Show the webhook (without its secret)', tag: 'Webhooks', ok: anyData(), errors: [...ADMIN_ONE, 'NOT_FOUND'] },
  'DELETE /admin/v1/instances/:id/webhook': { summary: 'Remove the webhook', tag: 'Webhooks', ok: data(obj({ deleted: { type: 'boolean' } })), errors: [...ADMIN_ONE, 'NOT_FOUND'] },
  'POST /admin/v1/instances/:id/webhook/test': { summary: 'Send event `test`', tag: 'Webhooks', body: TestInput, ok: data(obj({ eventId: { type: 'string' } }), 202), errors: [...ADMIN_ONE, 'NOT_FOUND', 'CONFLICT'] },
  'GET /admin/v1/instances/:id/webhook/deliveries': { summary: 'Deliveries with their attempts', tag: 'Webhooks', query: DeliveriesQuery, ok: anyData(), errors: [...ADMIN_ONE, 'VALIDATION_FAILED'] },
  // ---- an instance's queue for the operator (the v2 queue routes' handlers, the instance in the path)
  'GET /admin/v1/instances/:id/queue': { summary: "An instance's queue summary (as GET /api/v2/queue)", tag: 'Queue', ok: data(ref('QueueSummary')), errors: [...ADMIN_ONE, 'QUEUE_STORE_UNAVAILABLE', 'INSTANCE_TIMEOUT'], example: {} },
  'GET /admin/v1/instances/:id/queue/items': {
    summary: "An instance's jobs, oldest first (as GET /api/v2/queue/items)",
    tag: 'Queue',
    query: ItemsQuery,
    ok: data(obj({ items: { type: 'array', items: ref('JobStatus') }, nextCursor: { type: ['string', 'null'] } })),
    errors: [...ADMIN_ONE, 'VALIDATION_FAILED'],
    example: { query: { state: 'scheduled', limit: '10' } },
  },
  'POST /admin/v1/instances/:id/queue/replan': {
    summary: "Re-plan every waiting job of the instance (as POST /api/v2/queue/replan; event queue.replanned with reason operator)",
    tag: 'Queue',
    ok: data(obj({ replanned: { const: true }, affected: { type: 'integer' }, epoch: { type: 'integer' } })),
    errors: [...ADMIN_ONE, 'QUEUE_STORE_UNAVAILABLE'],
    example: {},
  },
  'DELETE /admin/v1/instances/:id/messages/:jobId': { summary: "Cancel a waiting job of the instance (as DELETE /api/v2/messages/:id)", tag: 'Queue', ok: data(ref('JobStatus')), errors: [...ADMIN_ONE, 'JOB_NOT_FOUND', 'JOB_NOT_CANCELLABLE'] },
  'POST /admin/v1/instances/:id/messages/:jobId/requeue': {
    summary: 'Requeue a failed, expired or cancelled job of the instance as a new job (as POST /api/v2/messages/:id/requeue)',
    tag: 'Queue',
    ok: ACCEPTED,
    errors: [...ADMIN_ONE, ...SEND_ERRORS, 'JOB_NOT_FOUND', 'JOB_NOT_REQUEUEABLE'],
  },
  'POST /admin/v1/instances/:id/webhook/deliveries/:eventId/redeliver': {
    summary: 'Send a failed or delivered event again',
    tag: 'Webhooks',
    description:
      'Puts the delivery back to `pending` with its next attempt due now and a fresh budget of attempts (the configured maximum of its event); the attempts made stay in its log and the numbering continues. The receiver gets the same `X-Event-Id` again. 409 CONFLICT when the delivery is still pending or the instance has no enabled webhook; 404 NOT_FOUND when the instance has no such event.',
    ok: data(obj({ eventId: { type: 'string' }, state: { const: 'pending' } }), 202),
    errors: [...ADMIN_ONE, 'NOT_FOUND', 'CONFLICT'],
  },
  'GET /metrics': {
    summary: 'Prometheus metrics (admin token or METRICS_TOKEN)',
    tag: 'Operator',
    security: [{ adminToken: [] }, { metricsToken: [] }],
    ok: { status: 200, schema: { type: 'string' }, description: 'The Prometheus text exposition format (text/plain; version=0.0.4).', media: 'text/plain' },
  },
  'GET /console': { summary: 'The operator console (an HTML page)', tag: 'Operator', ok: { status: 200, schema: { type: 'string' }, description: 'An HTML page.', media: 'text/html' } },
  'GET /console/app.js': { summary: "The console's script", tag: 'Operator', ok: { status: 200, schema: { type: 'string' }, description: 'JavaScript.', media: 'application/javascript' } },
  'GET /console/app.css': { summary: "The console's style", tag: 'Operator', ok: { status: 200, schema: { type: 'string' }, description: 'CSS.', media: 'text/css' } },
  'GET /console/session': { summary: 'Whether this browser is signed in to the console', tag: 'Operator', ok: data(obj({ signedIn: { type: 'boolean' } })) },
  'POST /console/session': {
    summary: 'Sign in to the console with the admin token (sets an HttpOnly, SameSite=Strict session cookie)',
    tag: 'Operator',
    description: 'Needs the header `X-Console: 1`. A request authenticated by the cookie must send `X-Console: 1` on every method but GET, HEAD and OPTIONS.',
    body: { type: 'object', required: ['token'], properties: { token: { type: 'string', minLength: 1, maxLength: 512 } }, additionalProperties: false },
    ok: data(obj({ signedIn: { type: 'boolean' } })),
    errors: ['VALIDATION_FAILED', 'UNAUTHORIZED', 'FORBIDDEN'],
  },
  'DELETE /console/session': { summary: 'Sign out of the console (the session ends, its event streams close)', tag: 'Operator', ok: data(obj({ signedIn: { type: 'boolean' } })) },
  'GET /console/machines': {
    summary: 'The instance and job machines as JSON, for the state diagrams (nested and parallel states, transitions with their events and targets)',
    tag: 'Operator',
    ok: data(obj({ instance: { type: 'object' }, job: { type: 'object' } })),
  },
  'GET /console/events': { summary: 'The instances with status and queue counts, live (server-sent events, every 2 s)', tag: 'Operator', ok: { status: 200, schema: { type: 'string' }, description: 'Server-sent events.', media: 'text/event-stream' } },
  'GET /debug/actors': { summary: 'The actor tree', tag: 'Operator', ok: data(obj({ actors: {} })) },
  'GET /debug/actors/stream': { summary: 'The actor tree, live (server-sent events)', tag: 'Operator', ok: { status: 200, schema: { type: 'string' }, description: 'Server-sent events.', media: 'text/event-stream' } },
};
