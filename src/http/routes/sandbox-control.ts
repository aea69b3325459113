/**
 * The sandbox control API (`/sandbox/v1`): tests and demos act as the other people on the network and as the
 * network itself — link an instance, write to it, vote, react, edit, revoke, create groups, call, flip faults,
 * register numbers, and read the ledger of what each instance sent. Authentication is the mounting app's job
 * (admin token). Documented endpoint by endpoint in docs/sandbox.md. The network (src/sandbox/) knows nothing
 * of HTTP: these routes parse, call its plain functions, and answer.
 */
import Router, { type RouterContext } from '@koa/router';
import { createRouter } from '../router.js';
import { ok } from '../envelope.js';
import { DomainError } from '../../errors.js';
import { parse, QUERY_INTEGER } from '../validate.js';
import type { SandboxNetwork } from '../../sandbox/network.js';
import * as people from '../../sandbox/people.js';
import { chatAsSeenBy, groupView, requireGroup } from '../../sandbox/control.js';
import {
  LinkBody,
  PairingBody,
  InboundBody,
  VoteBody,
  ReactionBody,
  EditBody,
  RevokeBody,
  AckBody,
  GroupBody,
  GroupMembersBody,
  GroupInfoBody,
  LeaveBody,
  CallBody,
  ContactChangeBody,
  BatteryBody,
  ArchiveBody,
  FaultBody,
  NextFaultBody,
  FailBody,
  AccountBody,
} from './sandbox-control-schemas.js';

type Ctx = RouterContext;
const param = (ctx: Ctx, name: string): string => {
  const v = ctx.params[name];
  if (!v) throw new DomainError('VALIDATION_FAILED', `${name} is missing`, { field: name });
  return v;
};
const body = (ctx: Ctx): unknown => ctx.request.body;
/**
 * An integer query parameter: `dflt` when absent, else ASCII digits only (docs/api.md: a blank, a sign, a
 * decimal point, an exponent, an empty value or the parameter given twice is 400 naming it, on every route).
 * It was read as absent: `?since=abc` answered the whole ledger as if it were new.
 */
const queryInteger = (ctx: Ctx, name: string, dflt: number): number => {
  const raw = ctx.query[name];
  if (raw === undefined) return dflt;
  if (typeof raw !== 'string' || !QUERY_INTEGER.test(raw)) throw new DomainError('VALIDATION_FAILED', `${name} must be an integer written in digits`, { field: name });
  return Number(raw);
};
const limitOf = (ctx: Ctx, dflt: number) => Math.min(Math.max(queryInteger(ctx, 'limit', dflt), 1), 1000);

export function createSandboxControlRouter(network: SandboxNetwork): Router {
  const r = createRouter('/sandbox/v1');
  const net = network;

  // ---- instances: state, linking

  r.get('/instances/:instanceId', (ctx) => {
    const id = param(ctx, 'instanceId');
    const s = net.session(id);
    ok(ctx, {
      instanceId: id,
      phase: s.phase,
      linkedPhone: s.phone,
      waitingForQr: s.currentQr() !== null,
      presence: Object.fromEntries(s.presence),
      pendingFaults: net.pendingNextCallFaults(id),
      ledgerSize: net.ledger(id).length,
    });
  });

  r.get('/instances/:instanceId/qr', (ctx) => {
    const id = param(ctx, 'instanceId');
    const qr = net.session(id).currentQr();
    if (!qr) throw new DomainError('NOT_FOUND', 'the session is not showing a QR code', { phase: net.session(id).phase });
    // a QR links a phone: kept by no cache, as the operator route's (found from the outside)
    ctx.set('Cache-Control', 'no-store');
    ok(ctx, { instanceId: id, token: qr.token, dataUrl: qr.dataUrl, expiresAt: new Date(qr.expiresAt).toISOString() });
  });

  r.post('/instances/:instanceId/link', (ctx) => {
    const id = param(ctx, 'instanceId');
    const b = parse(body(ctx), LinkBody);
    const linked = net.link(id, b);
    ok(ctx, { instanceId: id, phoneNumber: linked.phoneNumber, phase: net.session(id).phase });
  });

  r.post('/instances/:instanceId/pairing/confirm', (ctx) => {
    const id = param(ctx, 'instanceId');
    const linked = net.confirmPairing(id, parse(body(ctx), PairingBody).code);
    ok(ctx, { instanceId: id, phoneNumber: linked.phoneNumber, phase: net.session(id).phase });
  });

  r.post('/instances/:instanceId/unlink', (ctx) => {
    const id = param(ctx, 'instanceId');
    net.session(id).remoteLogout();
    ok(ctx, { instanceId: id, phase: net.session(id).phase });
  });

  // ---- the people write to the instance

  r.post('/instances/:instanceId/messages', (ctx) => {
    const b = parse(body(ctx), InboundBody);
    const { message } = people.receiveMessage(net, param(ctx, 'instanceId'), { ...b, type: b.type ?? 'text' });
    ok(ctx, { messageId: message.id._serialized, chatId: message.id.remote, timestamp: message.timestamp, message }, 201);
  });

  r.post('/instances/:instanceId/messages/:messageId/vote', (ctx) => {
    const b = parse(body(ctx), VoteBody);
    people.vote(net, param(ctx, 'instanceId'), param(ctx, 'messageId'), b.from, b.selectedOptions);
    ok(ctx, { messageId: param(ctx, 'messageId'), selectedOptions: b.selectedOptions });
  });

  r.post('/instances/:instanceId/messages/:messageId/reaction', (ctx) => {
    const b = parse(body(ctx), ReactionBody);
    people.react(net, param(ctx, 'instanceId'), param(ctx, 'messageId'), b.from, b.emoji);
    ok(ctx, { messageId: param(ctx, 'messageId'), emoji: b.emoji || null });
  });

  r.post('/instances/:instanceId/messages/:messageId/edit', (ctx) => {
    const b = parse(body(ctx), EditBody);
    const message = people.edit(net, param(ctx, 'instanceId'), param(ctx, 'messageId'), b.body);
    ok(ctx, { messageId: message.id._serialized, message });
  });

  r.post('/instances/:instanceId/messages/:messageId/revoke', (ctx) => {
    const b = parse(body(ctx), RevokeBody);
    const everyone = b.everyone ?? true;
    people.revoke(net, param(ctx, 'instanceId'), param(ctx, 'messageId'), everyone);
    ok(ctx, { messageId: param(ctx, 'messageId'), everyone });
  });

  r.post('/instances/:instanceId/messages/:messageId/ack', (ctx) => {
    const b = parse(body(ctx), AckBody);
    people.acknowledge(net, param(ctx, 'instanceId'), param(ctx, 'messageId'), b.ack);
    ok(ctx, { messageId: param(ctx, 'messageId'), ack: b.ack });
  });

  r.post('/instances/:instanceId/calls', (ctx) => {
    const b = parse(body(ctx), CallBody);
    ok(ctx, people.call(net, param(ctx, 'instanceId'), b.from, b.isVideo ?? false), 201);
  });

  r.post('/instances/:instanceId/contact-changed', (ctx) => {
    const b = parse(body(ctx), ContactChangeBody);
    const { message } = people.changeNumber(net, param(ctx, 'instanceId'), b.oldPhone, b.newPhone);
    ok(ctx, { messageId: message.id._serialized });
  });

  r.post('/instances/:instanceId/battery', (ctx) => {
    const b = parse(body(ctx), BatteryBody);
    people.battery(net, param(ctx, 'instanceId'), b.battery, b.plugged);
    ok(ctx, b);
  });

  r.post('/instances/:instanceId/chats/:chatId/archive', (ctx) => {
    const b = parse(body(ctx), ArchiveBody);
    people.archive(net, param(ctx, 'instanceId'), param(ctx, 'chatId'), b.archived);
    ok(ctx, { chatId: param(ctx, 'chatId'), archived: b.archived });
  });

  // ---- groups

  r.post('/instances/:instanceId/groups', (ctx) => {
    const id = param(ctx, 'instanceId');
    const b = parse(body(ctx), GroupBody);
    const me = people.linkedPhone(net, id);
    const creator = people.phoneOf(b.from, 'from');
    if (creator === me) throw new DomainError('VALIDATION_FAILED', 'from is the instance itself', { field: 'from' });
    const others = (b.participants ?? []).map((p) => `${people.phoneOf(p, 'participants')}@c.us`);
    const created = net.groups.create(creator, b.title, [`${me}@c.us`, ...others]);
    const g = net.groups.require(created.gid);
    if (b.instanceAdmin) net.groups.setAdmin(creator, g, [`${me}@c.us`], true);
    ok(ctx, { groupId: g.gid, inviteCode: g.inviteCode, missingParticipants: created.missingParticipants }, 201);
  });

  r.post('/groups/:groupId/participants', (ctx) => {
    const b = parse(body(ctx), GroupMembersBody);
    const g = requireGroup(net, param(ctx, 'groupId'));
    const by = people.phoneOf(b.by, 'by');
    const ids = (list?: string[]) => (list ?? []).map((p) => `${people.phoneOf(p, 'participants')}@c.us`);
    try {
      const added = b.add ? net.groups.add(by, g, ids(b.add)) : {};
      if (b.remove) net.groups.remove(by, g, ids(b.remove));
      if (b.promote) net.groups.setAdmin(by, g, ids(b.promote), true);
      if (b.demote) net.groups.setAdmin(by, g, ids(b.demote), false);
      ok(ctx, { ...groupView(g), added });
    } catch (err) {
      throw people.controlError(err);
    }
  });

  r.post('/groups/:groupId/leave', (ctx) => {
    const g = requireGroup(net, param(ctx, 'groupId'));
    try {
      net.groups.leave(people.phoneOf(parse(body(ctx), LeaveBody).phone, 'phone'), g);
    } catch (err) {
      throw people.controlError(err);
    }
    ok(ctx, groupView(g));
  });

  r.patch('/groups/:groupId', (ctx) => {
    const b = parse(body(ctx), GroupInfoBody);
    const g = requireGroup(net, param(ctx, 'groupId'));
    const by = people.phoneOf(b.by, 'by');
    try {
      if (b.subject !== undefined) net.groups.setSubject(by, g, b.subject);
      if (b.description !== undefined) net.groups.setDescription(by, g, b.description);
    } catch (err) {
      throw people.controlError(err);
    }
    ok(ctx, { groupId: g.gid, subject: g.subject, description: g.description });
  });

  r.get('/groups/:groupId', (ctx) => {
    ok(ctx, groupView(requireGroup(net, param(ctx, 'groupId'))));
  });

  // ---- faults

  r.post('/instances/:instanceId/faults', (ctx) => {
    const id = param(ctx, 'instanceId');
    const { count, ...fault } = parse(body(ctx), NextFaultBody);
    for (let i = 0; i < (count ?? 1); i++) net.addNextCallFault(id, { ...fault });
    ok(ctx, { instanceId: id, pendingFaults: net.pendingNextCallFaults(id) }, 201);
  });

  r.get('/instances/:instanceId/faults', (ctx) => {
    const id = param(ctx, 'instanceId');
    ok(ctx, { instanceId: id, pendingFaults: net.pendingNextCallFaults(id) });
  });

  r.delete('/instances/:instanceId/faults', (ctx) => {
    const id = param(ctx, 'instanceId');
    net.clearNextCallFaults(id);
    ok(ctx, { instanceId: id, pendingFaults: [] });
  });

  r.post('/instances/:instanceId/fail', (ctx) => {
    const id = param(ctx, 'instanceId');
    const b = parse(body(ctx), FailBody);
    const s = net.session(id);
    if (s.phase === 'stopped') throw new DomainError('CONFLICT', 'the session is not running');
    if (b.kind === 'session_crash') s.crash(b.reason ?? 'session crashed');
    else if (b.kind === 'browser_death') s.browserDeath(b.reason ?? 'browser disconnected');
    else s.disconnect(b.reason ?? 'NAVIGATION');
    ok(ctx, { instanceId: id, phase: s.phase });
  });

  r.put('/accounts/:phone/fault', (ctx) => {
    const phone = people.phoneOf(param(ctx, 'phone'), 'phone');
    const fault = parse(body(ctx), FaultBody);
    net.setAccountFault(phone, fault);
    ok(ctx, { phone, fault });
  });

  r.delete('/accounts/:phone/fault', (ctx) => {
    const phone = people.phoneOf(param(ctx, 'phone'), 'phone');
    net.setAccountFault(phone, null);
    ok(ctx, { phone, fault: null });
  });

  // ---- accounts

  r.get('/accounts/:phone', (ctx) => {
    const phone = people.phoneOf(param(ctx, 'phone'), 'phone');
    const a = net.account(phone);
    ok(ctx, { phone, registered: a.registered, pushname: net.pushname(phone), isBusiness: a.isBusiness === true, lid: `${a.lid}@lid`, fault: net.accountFault(phone) });
  });

  r.put('/accounts/:phone', (ctx) => {
    const phone = people.phoneOf(param(ctx, 'phone'), 'phone');
    const b = parse(body(ctx), AccountBody);
    net.setAccount(phone, b);
    ok(ctx, { phone, registered: net.isRegistered(phone), pushname: net.pushname(phone) });
  });

  /** A chat as one account sees it (the recipient's side of what an instance sent), with media hashes. */
  r.get('/accounts/:phone/chats/:chatId/messages', (ctx) => {
    const phone = people.phoneOf(param(ctx, 'phone'), 'phone');
    const items = chatAsSeenBy(net, phone, param(ctx, 'chatId'), limitOf(ctx, 50));
    ok(ctx, { phone, chatId: param(ctx, 'chatId'), items });
  });

  // ---- ledger

  r.get('/instances/:instanceId/ledger', (ctx) => {
    const id = param(ctx, 'instanceId');
    const since = queryInteger(ctx, 'since', 0);
    const items = net.ledger(id, since);
    ok(ctx, { instanceId: id, items, total: net.ledger(id).length });
  });

  return r;
}
