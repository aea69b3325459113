/**
 * Group endpoints (SPEC.md "Group endpoints"), all but creation: participants, admins, invite code, leave,
 * subject/description. They are immediate and share the interaction limiter. Every one first checks that
 * the target is a group (the id ends in @g.us and the network knows it as a group) and otherwise answers
 * 400 NOT_A_GROUP. The check and the operation are asks of the instance's port (src/actors/port.ts) in sequence,
 * each under the interaction deadline; the operation is asked only once the check confirmed a group.
 *
 * Group creation goes through the send queue (counted against the send limits) and is wired by the queue's
 * owner; this file only provides its request schema, `GroupCreateSchema`. Response bodies are described in
 * docs/api-groups.md.
 */
import Router from '@koa/router';
import { createRouter, takes } from '../router.js';
import type { Context } from 'koa';
import { array, object, optional, pattern, record, size, string, unknown, type Infer } from 'superstruct';
import { ok } from '../envelope.js';
import { DomainError, validationFailed } from '../../errors.js';
import { chars, nonBlank, parse } from '../validate.js';
import { consumeInteraction } from '../rate-limit.js';
import { DEADLINES, type InstancePort, type NetworkAsk, type ReplyOf } from '../../actors/port.js';
import { CONTACT_ID_FIELD, askNetwork, notFound, param, type RouteDeps } from './network-common.js';

export type GroupsRouteDeps = RouteDeps<'portOf' | 'limiter'>;

/** WhatsApp's own ceilings: group size 1024 members, subject 100 characters, description 2048. */
const MAX_GROUP_SIZE = 1024;

export const ParticipantsSchema = size(array(CONTACT_ID_FIELD), 1, MAX_GROUP_SIZE);
const OptionsSchema = record(string(), unknown());

/**
 * Body of `POST /api/v2/groups` (for the queue route). An `object` schema: unknown keys are refused, so the
 * queue route combines it with the common send fields, e.g. `assign(CommonSendFields, GroupCreateSchema)`.
 */
export const GroupCreateSchema = object({
  title: nonBlank(100),
  participants: ParticipantsSchema,
  /** whatsapp-web.js CreateGroupOptions (messageTimer, memberAddMode, …), passed to the driver as given */
  options: optional(OptionsSchema),
});
export type GroupCreateInput = Infer<typeof GroupCreateSchema>;

/** `options` (whatsapp-web.js AddParticipantsOptions) is accepted for compatibility; the driver contract has no use for it. */
export const AddSchema = object({ participants: ParticipantsSchema, options: optional(OptionsSchema) });
export const ParticipantsBody = object({ participants: ParticipantsSchema });
export const PatchSchema = object({ subject: optional(nonBlank(100)), description: optional(chars(0, 2048)) });

/** whatsapp-web.js addParticipants answers a status per id; 200 means added. */
const ADDED = 200;

export const inviteUrl = (code: string) => `https://chat.whatsapp.com/${code}`;

export function groupsRouter(deps: GroupsRouteDeps): Router {
  const router = createRouter();
  const G = '/api/v2/groups/:groupId';

  /** Count the call, check the id's form and hand back what the route needs. */
  const prepare = (ctx: Context): { port: InstancePort; groupId: string } => {
    const port = deps.portOf(ctx);
    consumeInteraction(ctx, deps.limiter, port.instanceId);
    const groupId = param(ctx, 'groupId');
    if (!groupId.endsWith('@g.us')) throw notAGroup(groupId);
    return { port, groupId };
  };
  /** Ask whether the network knows the id as a group: an unknown id or a non-group is 400 NOT_A_GROUP. */
  const checkGroup = async (port: InstancePort, groupId: string, label: string): Promise<void> => {
    const group = await asGroupError(
      askNetwork(port, { type: 'network', op: 'getGroup', args: [groupId], label, notFound: notFound(notAGroup(groupId)) }, DEADLINES.interaction),
      groupId,
    );
    if (!group) throw notAGroup(groupId);
  };
  /** Ask for `ask` once the network confirmed the id is a group. */
  const onGroup = async <A extends NetworkAsk>(port: InstancePort, groupId: string, ask: A): Promise<ReplyOf<A>> => {
    await checkGroup(port, groupId, ask.label ?? ask.op);
    return asGroupError(askNetwork(port, ask, DEADLINES.interaction), groupId);
  };

  router.post(`${G}/participants`, takes({ body: true }), async (ctx) => {
    const { port, groupId } = prepare(ctx);
    const ids = unique(parse(ctx.request.body, AddSchema).participants);
    const results = await onGroup(port, groupId, { type: 'network', op: 'addParticipants', args: [groupId, ids], label: 'group.participants.add' });
    const added: string[] = [];
    // keyed by the caller's ids: no prototype, so no id can reach one
    const failed: Record<string, { code: number; message: string }> = Object.create(null) as Record<string, { code: number; message: string }>;
    for (const id of ids) {
      // a driver may report only the ids that failed; an id without an entry went in
      const r = results[id];
      if (!r || r.code === ADDED) added.push(id);
      else failed[id] = { code: r.code, message: r.message };
    }
    ok(ctx, { groupId, added, failed });
  });

  router.delete(`${G}/participants`, takes({ body: true }), async (ctx) => {
    const { port, groupId } = prepare(ctx);
    const ids = unique(parse(ctx.request.body, ParticipantsBody).participants);
    await onGroup(port, groupId, { type: 'network', op: 'removeParticipants', args: [groupId, ids], label: 'group.participants.remove' });
    ok(ctx, { groupId, removed: ids });
  });

  router.post(`${G}/admins`, takes({ body: true }), async (ctx) => {
    const { port, groupId } = prepare(ctx);
    const ids = unique(parse(ctx.request.body, ParticipantsBody).participants);
    await onGroup(port, groupId, { type: 'network', op: 'promoteParticipants', args: [groupId, ids], label: 'group.admins.promote' });
    ok(ctx, { groupId, promoted: ids });
  });

  router.delete(`${G}/admins`, takes({ body: true }), async (ctx) => {
    const { port, groupId } = prepare(ctx);
    const ids = unique(parse(ctx.request.body, ParticipantsBody).participants);
    await onGroup(port, groupId, { type: 'network', op: 'demoteParticipants', args: [groupId, ids], label: 'group.admins.demote' });
    ok(ctx, { groupId, demoted: ids });
  });

  router.get(`${G}/invite`, takes(), async (ctx) => {
    const { port, groupId } = prepare(ctx);
    const code = await onGroup(port, groupId, { type: 'network', op: 'getInviteCode', args: [groupId], label: 'group.invite' });
    ok(ctx, { code, url: inviteUrl(code) });
  });

  router.post(`${G}/invite/revoke`, takes(), async (ctx) => {
    const { port, groupId } = prepare(ctx);
    const code = await onGroup(port, groupId, { type: 'network', op: 'revokeInvite', args: [groupId], label: 'group.invite.revoke' });
    ok(ctx, { code });
  });

  router.post(`${G}/leave`, takes(), async (ctx) => {
    const { port, groupId } = prepare(ctx);
    await onGroup(port, groupId, { type: 'network', op: 'leaveGroup', args: [groupId], label: 'group.leave' });
    ok(ctx, { groupId, left: true });
  });

  router.patch(G, takes({ body: true }), async (ctx) => {
    const { port, groupId } = prepare(ctx);
    const { subject, description } = parse(ctx.request.body, PatchSchema);
    if (subject === undefined && description === undefined) {
      throw validationFailed('subject', 'subject or description is required');
    }
    await checkGroup(port, groupId, 'group.update');
    if (subject !== undefined) {
      await asGroupError(askNetwork(port, { type: 'network', op: 'setSubject', args: [groupId, subject], label: 'group.update' }, DEADLINES.interaction), groupId);
    }
    if (description !== undefined) {
      await asGroupError(askNetwork(port, { type: 'network', op: 'setDescription', args: [groupId, description], label: 'group.update' }, DEADLINES.interaction), groupId);
    }
    const data: { groupId: string; subject?: string; description?: string } = { groupId };
    if (subject !== undefined) data.subject = subject;
    if (description !== undefined) data.description = description;
    ok(ctx, data);
  });

  return router;
}

export const notAGroup = (groupId: string) => new DomainError('NOT_A_GROUP', 'the target is not a group', { groupId });

/**
 * The driver saying the id is no group (the session answers the driver's NOT_A_GROUP as 400 NOT_A_GROUP
 * without data) means the caller's id is wrong, not that the network call failed: answered with the id.
 * On the group lookup an unknown id is NOT_A_GROUP too (its `notFound`).
 */
async function asGroupError<T>(p: Promise<T>, groupId: string): Promise<T> {
  try {
    return await p;
  } catch (err) {
    if (err instanceof DomainError && err.code === 'NOT_A_GROUP') throw notAGroup(groupId);
    throw err;
  }
}

const unique = (ids: string[]): string[] => [...new Set(ids)];
