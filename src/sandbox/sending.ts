/**
 * The operations that put a message on the network (send, forward). Order matters and mirrors the real
 * network: input checks and recipient lookup first (refusals there are provably not sent), then the fault a
 * test asked for, then delivery and the ledger entry, both before the caller hears back.
 */
import { DriverError, type SendContent, type SendOptions, type SendResult } from '../drivers/contract.js';
import { draftFromContent, vCardFor, type Draft } from './content.js';
import { parseChatId } from './ids.js';
import type { SandboxNetwork } from './network.js';
import type { SandboxSession as Session } from './session.js';
import type { ChatRef, FaultKind, LedgerAction, NetMessage } from './types.js';
import { chatIdFor, wireMessage } from './wire.js';

/** a session with the whole network behind it (the driver operations reach every book) */
type SandboxSession = Session<SandboxNetwork>;

/** Where a message to `chatId` goes, or why it cannot go there. */
export function resolveTarget(net: SandboxNetwork, me: string, chatId: string): ChatRef {
  const parsed = parseChatId(chatId);
  if (!parsed) throw new DriverError('the chat id is malformed', 'INVALID_INPUT', true);
  if (parsed.kind === 'group') {
    const g = net.groups.get(parsed.gid);
    if (!g) throw new DriverError('group not found', 'NOT_FOUND', true);
    if (!net.groups.isMember(g, me)) throw new DriverError('not a participant of this group', 'INVALID_INPUT', true);
    return { kind: 'group', gid: parsed.gid };
  }
  const phone = net.resolveUser(chatId);
  if (!phone || !net.isRegistered(phone)) {
    throw new DriverError('the recipient is not registered on the network', 'NOT_REGISTERED', true);
  }
  return { kind: 'direct', to: phone };
}

export function vCardOf(net: SandboxNetwork, contactId: string): string | null {
  const phone = net.resolveUser(contactId);
  return phone && net.isRegistered(phone) ? vCardFor(phone, net.displayName(phone)) : null;
}

/** The real network takes the session down on a message to its own number; the driver refuses it earlier. */
function refuseOwnNumber(s: SandboxSession, me: string, target: ChatRef): void {
  if (target.kind === 'direct' && target.to === me) {
    s.crash('a message to the own number crashed the session');
    throw new DriverError('the session crashed: message to the own number', 'SESSION_CLOSED', false);
  }
}

function deliverAndRecord(
  s: SandboxSession,
  me: string,
  target: ChatRef,
  draft: Draft,
  options: SendOptions,
  action: LedgerAction,
  tag: FaultKind | null,
  extra: { quotedKey?: string | null; mentions?: string[]; isForwarded?: boolean; forwardOf?: string },
): SendResult {
  const { forwardOf, ...postExtra } = extra;
  const m: NetMessage = s.net.messages.post({ sender: me, chat: target, draft, origin: 'web', ...postExtra });
  const id = wireMessage(m, me).id._serialized;
  s.net.record(s.instanceId, {
    from: me,
    action,
    messageId: id,
    chatId: chatIdFor(m, me),
    type: m.type,
    body: m.body,
    media: m.media,
    location: m.location,
    vCards: m.vCards,
    poll: m.poll,
    targetMessageId: forwardOf ?? null,
    options: structuredClone(options),
    fault: tag,
  });
  s.touchOk();
  const timestamp = Math.floor(m.timestampMs / 1000);
  return tag === 'no_id' ? { timestamp } : { id, timestamp };
}

export async function sendMessage(s: SandboxSession, chatId: string, content: SendContent, options: SendOptions): Promise<SendResult> {
  const me = s.requireReady();
  const target = resolveTarget(s.net, me, chatId);
  refuseOwnNumber(s, me, target);
  const draft = draftFromContent(content, options, { vCardOf: (id) => vCardOf(s.net, id) });
  const quoted = options.quotedMessageId ? s.net.messages.find(me, options.quotedMessageId) : null;
  const mentions = (options.mentions ?? []).filter((id) => parseChatId(id)?.kind === 'user');
  const fault = s.takeFault('sendMessage', target.kind === 'direct' ? target.to : null);
  return s.withFault(fault, (tag) =>
    deliverAndRecord(s, me, target, draft, options, 'send', tag, { quotedKey: quoted?.key ?? null, mentions }),
  );
}

export async function forwardMessage(s: SandboxSession, msgId: string, toChatId: string): Promise<void> {
  const me = s.requireReady();
  const original = s.net.messages.require(me, msgId);
  if (original.revoked) throw new DriverError('a deleted message cannot be forwarded', 'INVALID_INPUT', true);
  const target = resolveTarget(s.net, me, toChatId);
  refuseOwnNumber(s, me, target);
  const draft: Draft = {
    type: original.type,
    body: original.body,
    media: original.media ? { ref: { ...original.media } } : null,
    location: original.location,
    vCards: [...original.vCards],
    poll: original.poll,
  };
  const fault = s.takeFault('forwardMessage', target.kind === 'direct' ? target.to : null);
  await s.withFault(fault, (tag) => deliverAndRecord(s, me, target, draft, {}, 'forward', tag, { isForwarded: true, forwardOf: msgId }));
}
