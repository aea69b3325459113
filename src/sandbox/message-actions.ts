/**
 * What people and instances do to a message already on the sandbox network: react, edit, revoke (for everyone
 * or for themselves) and vote in a poll. MessageBook (messages.ts) offers them as its methods; each saves the
 * message before its events go out.
 */
import { DriverError } from '../drivers/contract.js';
import { newWebKey, userId } from './ids.js';
import type { MessageNetwork } from './books.js';
import type { NetMessage } from './types.js';
import { wireMessage } from './wire.js';

/** Message types whose text can be edited (the caption of media counts). */
const EDITABLE = new Set(['chat', 'image', 'video', 'document']);
const EDIT_WINDOW_MS = 15 * 60 * 1000;

export function react(net: MessageNetwork, reactor: string, m: NetMessage, emoji: string): void {
  const atMs = net.now();
  const key = newWebKey();
  if (emoji === '') delete m.reactions[reactor];
  else m.reactions[reactor] = { emoji, atMs, key };
  net.saveMessage(m);
  for (const p of m.audience) {
    if (p === reactor) continue;
    net.emitTo(p, () => {
      const view = wireMessage(m, p);
      return {
        name: 'message_reaction',
        args: [
          {
            id: `${false}_${view.id.remote}_${key}`,
            msgId: view.id._serialized,
            chatId: view.id.remote,
            senderId: userId(reactor),
            reaction: emoji,
            timestamp: Math.floor(atMs / 1000),
            orphan: 0,
          },
        ],
      };
    });
  }
}

/** Returns false when the message cannot be edited (not own, revoked, wrong type, older than 15 minutes). */
export function edit(net: MessageNetwork, editor: string, m: NetMessage, body: string): boolean {
  if (m.sender !== editor || m.revoked || !EDITABLE.has(m.type)) return false;
  if (net.now() - m.timestampMs > EDIT_WINDOW_MS) return false;
  const prev = m.body;
  m.edits.push({ body: prev, atMs: net.now() });
  m.body = body;
  net.saveMessage(m);
  for (const p of m.audience) net.emitTo(p, () => ({ name: 'message_edit', args: [wireMessage(m, p), body, prev] }));
  return true;
}

export function revokeForEveryone(net: MessageNetwork, actor: string, m: NetMessage): void {
  const isAdmin =
    m.chat.kind === 'group' && net.groups.require(m.chat.gid).participants.some((p) => p.phone === actor && p.admin);
  if (m.sender !== actor && !isAdmin) {
    throw new DriverError('only the sender or a group admin can delete for everyone', 'INVALID_INPUT', true);
  }
  if (m.revoked) return;
  const before = new Map(m.audience.map((p) => [p, wireMessage(m, p)] as const));
  m.revoked = true;
  net.saveMessage(m);
  for (const p of m.audience) {
    net.emitTo(p, () => ({ name: 'message_revoke_everyone', args: [wireMessage(m, p), structuredClone(before.get(p) ?? null)] }));
  }
}

export function deleteForMe(net: MessageNetwork, viewer: string, m: NetMessage): void {
  const view = wireMessage(m, viewer);
  if (!m.deletedFor.includes(viewer)) m.deletedFor.push(viewer);
  net.saveMessage(m);
  net.emitTo(viewer, () => ({ name: 'message_revoke_me', args: [structuredClone(view)] }));
}

export function vote(net: MessageNetwork, voter: string, m: NetMessage, selected: string[]): void {
  if (!m.poll) throw new DriverError('not a poll', 'INVALID_INPUT', true);
  const options = selected.map((name) => {
    const o = m.poll?.options.find((x) => x.name === name);
    if (!o) throw new DriverError(`"${name}" is not an option of this poll`, 'INVALID_INPUT', true);
    return o;
  });
  if (!m.poll.allowMultipleAnswers && options.length > 1) {
    throw new DriverError('this poll allows one answer', 'INVALID_INPUT', true);
  }
  const atMs = net.now();
  m.votes[voter] = { selected: options.map((o) => o.localId), atMs };
  net.saveMessage(m);
  for (const p of m.audience) {
    if (p === voter) continue;
    net.emitTo(p, () => ({
      name: 'vote_update',
      args: [
        {
          voter: userId(voter),
          selectedOptions: options.map((o) => ({ ...o })),
          interractedAtTs: atMs,
          parentMessageId: wireMessage(m, p).id._serialized,
        },
      ],
    }));
  }
}
